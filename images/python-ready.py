"""The python image's ready loop (docs/templates.md).

keep boots this once per vmm process as the image's template: the
interpreter starts, imports the modules named on its command line, and
parks in KEEP_SYS_READY (guest/include/keep.h). Every run is a
copy-on-write clone of that parked interpreter, in which the call returns
with the run's argv and environment; this file then does what a cold
`python3.11 -c CODE ARG...` would have done. Any other command line, or a
PYTHON* variable (read by the interpreter at start-up), starts the
interpreter afresh with execve instead, so every run behaves as a cold
one would.
"""
import atexit
import builtins
import ctypes
import gc
import mmap
import os
import struct
import sys
import types

KEEP_SYS_READY = 0x4B51
BUFFER = 9 << 20  # a run's request is at most 8 MiB of code and args

for _name in sys.argv[1:]:
    __import__(_name)
import random  # noqa: E402  (after the image's modules, as they would)


def _wait():
    buf = mmap.mmap(-1, BUFFER, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    addr = ctypes.addressof(ctypes.c_char.from_buffer(buf))
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    n = libc.syscall(ctypes.c_long(KEEP_SYS_READY), ctypes.c_void_p(addr),
                     ctypes.c_size_t(BUFFER))
    if n < 0:
        sys.exit("python-ready: not started as a template (errno %d)"
                 % ctypes.get_errno())
    data = bytes(buf[:n])
    argc, envc = struct.unpack_from("<II", data)
    parts = data[8:].split(b"\0")
    return parts[:argc], parts[argc:argc + envc]


def _numpy_state():
    """The address of numpy's global MT19937 key and position, or None.

    Reseeding through numpy.random.seed() would run numpy's seeding code,
    and each page of it a clone touches costs a fault; writing a fresh
    key from getrandom straight into the generator's state costs none.
    """
    nprandom = sys.modules.get("numpy.random")
    if nprandom is None:
        return None
    bitgen = nprandom.mtrand._rand._bit_generator
    if type(bitgen).__name__ != "MT19937":
        return None
    return bitgen.ctypes.state_address


_NUMPY_STATE = _numpy_state()
_MT_KEY = 624 * 4  # uint32_t key[624]; int pos (numpy's mt19937_state)


def _known_runner():
    """keep's runner for a plain execute (keep_once.py), compiled once
    here: the front sends its text as the -c code of every execute, and
    a clone that compiled it again would pay for each page the compiler
    writes. Its text, and its code as `python -c TEXT` compiles it."""
    try:
        with open("/usr/lib/keep/keep_once.py", "rb") as f:
            text = f.read()
    except OSError:
        return None, None
    return text, compile(os.fsdecode(text), "<string>", "exec")


_RUNNER_TEXT, _RUNNER_CODE = _known_runner()


def _python_vars(env):
    """The PYTHON* variables, which the interpreter reads as it starts."""
    return sorted(e for e in env if e.startswith(b"PYTHON"))


# The template started with the image's environment (PYTHONEXECUTABLE,
# say); a run whose PYTHON* variables differ needs a fresh interpreter.
_TEMPLATE_PYTHON_VARS = _python_vars(
    b"%s=%s" % kv for kv in os.environb.items())
# That environment as one string, so a clone compares one object with
# the run's rather than each variable (each object a clone reads through
# its reference count is a page written).
_TEMPLATE_ENV = b"\0".join(
    sorted(b"%s=%s" % kv for kv in os.environb.items()))


def _refresh():
    """Clones share the template's memory: reseed its generators."""
    random.seed()
    if _NUMPY_STATE is not None:
        ctypes.memmove(_NUMPY_STATE, os.urandom(_MT_KEY), _MT_KEY)
        # pos = 624: the next draw regenerates the whole key.
        ctypes.c_int.from_address(_NUMPY_STATE + _MT_KEY).value = 624


def _probe():
    """keep's probe (docs/templates.md, "The pages a clone writes"): a
    request with no strings, which no run sends. It takes the path of a
    plain execute (keep's runner), on code that does nothing but, when
    the template imported numpy, make and sum a small array: what most
    cells of this image do first, so that keep learns the pages numpy's
    array and ufunc paths write as well."""
    code = _RUNNER_TEXT if _RUNNER_TEXT is not None else b"pass"
    cell = (b"import numpy; numpy.ones(3).sum()"
            if "numpy" in sys.modules else b"pass")
    argv = [b"python3", b"-c", code, b"probe", cell]
    return argv, [b"%s=%s" % kv for kv in os.environb.items()]


def _main():
    argv, env = _wait()
    if not argv:
        argv, env = _probe()
    _refresh()
    if (len(argv) < 3 or argv[1] != b"-c"
            or _python_vars(env) != _TEMPLATE_PYTHON_VARS):
        os.execve("/proc/self/exe", argv, dict(
            e.split(b"=", 1) for e in env if b"=" in e))
    # Most runs bring the environment the template started with (the
    # image's); only a different one is set, as a cold start would have.
    if b"\0".join(sorted(env)) != _TEMPLATE_ENV:
        os.environ.clear()
        for e in env:
            key, sep, value = e.partition(b"=")
            if sep:
                os.environ[os.fsdecode(key)] = os.fsdecode(value)
    code = _RUNNER_CODE if argv[2] == _RUNNER_TEXT else os.fsdecode(argv[2])
    sys.argv = ["-c"] + [os.fsdecode(a) for a in argv[3:]]
    sys.orig_argv = [os.fsdecode(a) for a in argv]
    sys.path[0] = ""
    main = types.ModuleType("__main__")
    main.__builtins__ = builtins
    sys.modules["__main__"] = main
    status = 0
    try:
        if isinstance(code, str):
            code = compile(code, "<string>", "exec")
        exec(code, main.__dict__)
    except SystemExit as e:
        status = _exit_status(e)
    except BaseException as e:
        # As the interpreter reports it, without this file's frame.
        tb = e.__traceback__.tb_next if e.__traceback__ else None
        sys.excepthook(type(e), e.with_traceback(tb), tb)
        status = 1
    _finish(status)


def _exit_status(e):
    """What the interpreter makes of an uncaught SystemExit."""
    if e.code is None:
        return 0
    if isinstance(e.code, int):
        return e.code & 0xFF
    print(e.code, file=sys.stderr)
    return 1


def _finish(status):
    """The interpreter's exit, less the teardown of every object: that
    would write to each page the template holds, and a clone pays for
    each page it writes. What a program can see of an exit is kept:
    non-daemon threads are joined, atexit functions run (and may
    raise SystemExit), the program's own objects are released (a file
    it never closed is flushed and closed, a __del__ runs), the
    standard streams are flushed."""
    threading = sys.modules.get("threading")
    # Its shutdown joins the non-daemon threads and runs what was
    # registered to run before (concurrent.futures); without either it
    # has nothing a program could see.
    if threading is not None and (
            threading._shutdown_locks or threading._threading_atexits):
        threading._shutdown()
    try:
        atexit._run_exitfuncs()
    except SystemExit as e:
        status = _exit_status(e)
    # As the interpreter's teardown: the standard streams are flushed
    # before the program's objects go (a stream the program replaced
    # with its own object still works), and the original ones after
    # (what a __del__ printed).
    status = _flush_std(status, sys.stdout, sys.stderr)
    _release_program()
    os._exit(_flush_std(status, sys.__stdout__, sys.__stderr__))


def _flush_std(status, *streams):
    for stream in streams:
        try:
            stream.flush()
        except Exception:
            status = status or 120
    return status


def _release_program():
    """What the interpreter's teardown does to the program's objects:
    __main__'s namespace, then each module the run imported, is cleared
    and the cycles among what they held collected. The template's own
    modules are left as they are; the frozen collector never visits
    them."""
    main = sys.modules.get("__main__")
    spaces = [main.__dict__] if main is not None else []
    # Only a run that imported modules walks them: the walk writes to
    # each module object's page (its reference count).
    if len(sys.modules) != len(_TEMPLATE_MODULES):
        for name, module in list(sys.modules.items()):
            if name not in _TEMPLATE_MODULES and name != "__main__":
                spaces.append(getattr(module, "__dict__", {}))
    for space in spaces:
        try:
            space.clear()
        except Exception:
            pass
    gc.collect()


# Everything imported so far is the template's: the collector leaves it
# alone in the clones (a collection writes to every object it visits).
_TEMPLATE_MODULES = frozenset(sys.modules)
gc.collect()
gc.freeze()
_main()
