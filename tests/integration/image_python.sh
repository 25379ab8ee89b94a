#!/usr/bin/env bash
# The python image (Debian's CPython 3.11, images/python.manifest) under
# keep run: every module of sys.stdlib_module_names that exists on Linux
# imports, but for the few listed below with the reason; numpy solves a
# 100x100 system as the host does; pandas reads, groups and writes a
# workspace CSV and gives the HTML and text reprs that execute's results
# carry; matplotlib saves a PNG that decodes, to a file and to memory;
# the modules load from Debian's bytecode, none recompiled.
source "$(dirname "$0")/../lib/guest.sh"
K=$B/keys/dev.public; I=$B/images
PY=/usr/bin/python3.11
ws=$tmp/ws; mkdir "$ws"
py() { "$KEEP" run --workspace "$ws" --trust "$K" "$I/python.img" python "$@"; }

# The host's CPUs, as natively: sysconf (os.cpu_count), the affinity
# mask, /proc/cpuinfo and multiprocessing agree with the same program
# run on the host.
cpus='import os, multiprocessing
print(os.cpu_count(), len(os.sched_getaffinity(0)), multiprocessing.cpu_count(),
      open("/proc/cpuinfo").read().count("processor\t:"))'
want=$(python3.11 -I -S -c "$cpus"); got=$(py -c "$cpus")
[ -n "$want" ] && [ "$want" = "$got" ] && ok "the CPU count is the host's ($got)" ||
    bad "CPU count: native '$want' guest '$got'"

# Modules that cannot import in a keep guest, and why. Everything else
# in sys.stdlib_module_names that imports on the host must import here.
cat >"$ws/imports.py" <<'PY'
import importlib, sys
cannot = {
    # Python's GUI toolkits and IDLE need Tk (python3-tk, idle-python3.11)
    # and a display; a sandbox has neither.
    "tkinter": "no Tk in the image", "turtle": "needs tkinter",
    "turtledemo": "needs tkinter", "idlelib": "IDLE is not in the image",
    # Debian ships these apart, for developers, not programs.
    "lib2to3": "python3-lib2to3 is not in the image",
    "ensurepip": "python3.11-venv's wheels are not in the image",
}
names = sorted(n for n in sys.stdlib_module_names if not n.startswith("_") or n in ("_decimal", "_json", "_contextvars", "_ctypes", "_sqlite3", "_ssl", "_lzma", "_bz2"))
want = set(sys.argv[1:])
failed = []
for n in names:
    if n not in want or n in cannot:
        continue
    try:
        importlib.import_module(n)
    except Exception as e:
        failed.append("%s: %s: %s" % (n, type(e).__name__, e))
for n in cannot:  # the list stays honest: each of them does fail
    try:
        importlib.import_module(n)
        failed.append("%s imports, but is listed as one that cannot" % n)
    except ImportError:
        pass
print("checked %d" % len([n for n in names if n in want and n not in cannot]))
print("\n".join(failed) if failed else "all imported")
PY
# What imports on the host (Linux) is what exists on Linux.
host_ok=$($PY - <<'PY'
import importlib, sys, io, contextlib
ok = []
for n in sorted(sys.stdlib_module_names):
    if n.startswith("_") and n not in ("_decimal", "_json", "_contextvars", "_ctypes", "_sqlite3", "_ssl", "_lzma", "_bz2"):
        continue
    if n in ("antigravity", "this"):  # a browser; a poem on stdout
        continue
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            importlib.import_module(n)
        ok.append(n)
    except Exception:
        pass
print(" ".join(ok))
PY
)
out=$(py imports.py $host_ok 2>&1)
case "$out" in
*"all imported"*) ok "stdlib: $(echo "$out" | head -n 1), all imported";;
*) bad "stdlib imports: $out";;
esac
out=$(py -c 'import decimal, fractions, statistics, pathlib, zipfile, json, sqlite3, ssl, bz2, lzma, ctypes, zoneinfo, asyncio, unittest, urllib.request, http.client
print(decimal.Decimal(1) / 7, fractions.Fraction(3, 9), statistics.mean([1, 2, 4]), zoneinfo.ZoneInfo("Europe/Paris"))' 2>&1)
want=$($PY -c 'import decimal, fractions, statistics, zoneinfo
print(decimal.Decimal(1) / 7, fractions.Fraction(3, 9), statistics.mean([1, 2, 4]), zoneinfo.ZoneInfo("Europe/Paris"))')
[ "$out" = "$want" ] && ok "the modules the static image lacked: $out" || bad "modules: '$out' want '$want'"

# Debian's bytecode is used as it is: the image keeps no source times,
# so the builder stores it hash-based; a stale .pyc would make every run
# compile each module it imports again.
out=$(py -v -c 'import json, decimal, numpy' 2>&1)
stale=$(grep -c "bytecode is stale" <<<"$out"); used=$(grep -c "^# code object from .*\.pyc" <<<"$out")
[ "$stale" = 0 ] && [ "$used" -gt 100 ] && ok "bytecode: $used modules loaded from .pyc, none stale" ||
	bad "bytecode: $stale stale, $used loaded: $(grep -m3 "bytecode is stale" <<<"$out")"

solve='import numpy as np
rng = np.random.default_rng(18)
a = rng.standard_normal((100, 100)) + 100 * np.eye(100)
b = rng.standard_normal(100)
x = np.linalg.solve(a, b)
print(np.__version__, np.allclose(a @ x, b), " ".join("%.12e" % v for v in x[:5]))'
out=$(py -c "$solve" 2>&1); want=$($PY -c "$solve")
[ "$out" = "$want" ] && ok "numpy solve matches the host: ${out:0:60}" || bad "numpy: '$out' want '$want'"

# One array of 700 MiB under the image's 1 GiB: past the half of guest
# memory mmap had before the image's reserve, within the limit; and one
# of 1.1 GiB, past the limit, is refused as natively under that limit.
out=$(py -c 'import numpy as np; a = np.ones(700 << 17); a[-1] = 2; print(a.nbytes >> 20, a.sum() - a.size)' 2>&1)
[ "$out" = "700 1.0" ] && ok "numpy: one array of 700 MiB under a 1 GiB limit" || bad "700 MiB array: $out"
out=$(py -c 'import numpy as np; np.ones(1100 << 17)' 2>&1)
[[ $out == *"Unable to allocate"*"refused memory at its limit"* ]] && ok "one of 1.1 GiB: MemoryError, and keep run names the limit" || bad "1.1 GiB array: $out"

printf 'city,temp\nParis,12\nOslo,3\nParis,14\nLima,19\nOslo,5\n' >"$ws/in.csv"
# What execute's results take from a DataFrame (text/html, text/plain).
out=$(py -c 'import pandas as pd
d = pd.read_csv("in.csv")
g = d.groupby("city").mean()
g.to_csv("out.csv")
print(g._repr_html_().split("\n")[0], "<table" in g._repr_html_(), repr(g).split("\n")[-1])
print("done", pd.__version__)' 2>&1)
[[ $out == "<div> True Paris  13.0"$'\n'"done "* ]] && [ "$(cat "$ws/out.csv")" = "$(printf 'city,temp\nLima,19.0\nOslo,4.0\nParis,13.0')" ] &&
	ok "pandas: read_csv, groupby, to_csv, HTML and text reprs" || bad "pandas: '$out' $(cat "$ws/out.csv" 2>&1)"

out=$(py -c 'import matplotlib
import matplotlib.pyplot as plt
fig, ax = plt.subplots()
ax.plot([1, 2, 3], [3, 1, 2]); ax.set_title("keep")
fig.savefig("plot.png")
import io
buf = io.BytesIO(); fig.savefig(buf, format="png")  # as the results of execute do
print(matplotlib.get_backend(), buf.getvalue()[:8] == open("plot.png", "rb").read(8) == b"\x89PNG\r\n\x1a\n")' 2>&1)
dims=$($PY -c 'from PIL import Image; im = Image.open("'"$ws"'/plot.png"); im.load(); print(im.format, im.size)' 2>&1)
[ "$out" = "agg True" ] && [ "$dims" = "PNG (640, 480)" ] && ok "matplotlib (Agg) saved a PNG that decodes: $dims" ||
	bad "matplotlib: '$out' '$dims'"

# python-static: its standard library comes from the zip's bytecode,
# compiled at build time, not by the guest at each start.
out=$("$KEEP" run --workspace "$ws" --trust "$K" "$I/python-static.img" python -c 'import json, collections
print(json.__spec__.origin, collections.__spec__.origin, json.dumps(collections.Counter("keep")))' 2>&1)
[ "$out" = '/lib/python311.zip/json/__init__.pyc /lib/python311.zip/collections/__init__.pyc {"k": 1, "e": 2, "p": 1}' ] &&
	ok "python-static loads its standard library from bytecode" || bad "python-static: '$out'"
# It knows its own path (/proc/self/exe), so it can run itself again:
# subprocess and multiprocessing need sys.executable.
out=$("$KEEP" run --workspace "$ws" --trust "$K" "$I/python-static.img" python -c 'import sys, subprocess
print(sys.executable, subprocess.run([sys.executable, "-c", "print(6 * 7)"], capture_output=True, text=True).stdout.strip())' 2>&1)
[ "$out" = "/bin/python 42" ] &&
	ok "python-static's sys.executable is /bin/python, and it runs itself in a subprocess" ||
	bad "python-static sys.executable: '$out'"
# Its signal handlers are python3's: SIGPIPE ignored, so a write to a
# pipe nobody reads is BrokenPipeError, not the end of the process.
code='import os, signal
r, w = os.pipe(); os.close(r)
try:
    os.write(w, b"x"); print("written")
except BrokenPipeError:
    print("BrokenPipeError", signal.getsignal(signal.SIGINT) is signal.default_int_handler)'
# Natively from the default dispositions, as a guest starts: a shell's
# background job may have SIGINT ignored, and python then leaves it so.
want=$(env --default-signal=INT,PIPE $PY -c "$code" 2>&1; echo "exit $?")
out=$("$KEEP" run --workspace "$ws" --trust "$K" "$I/python-static.img" python -c "$code" 2>&1; echo "exit $?")
[ "$out" = "$want" ] && ok "python-static ignores SIGPIPE and handles SIGINT as python3 does: $(head -1 <<<"$out")" ||
	bad "python-static signals: native '$want', keep '$out'"

# A signal the guest handles arrives during time.sleep: the handler runs
# and the sleep goes on for what is left (PEP 475: EINTR, then the
# rest); a child's end, whose SIGCHLD the guest ignores, does not cut
# the sleep short either. The same as Debian's python natively.
cat >"$ws/sleepsig.py" <<'PY'
import os, signal, time
got = []
signal.signal(signal.SIGUSR1, lambda s, f: got.append(s))
pid = os.fork()
if pid == 0:
    time.sleep(0.2)
    os.kill(os.getppid(), signal.SIGUSR1)
    os._exit(0)
t0 = time.monotonic()
time.sleep(1.0)
slept = time.monotonic() - t0
os.waitpid(pid, 0)
pid = os.fork()
if pid == 0:
    os._exit(0)
t0 = time.monotonic()
time.sleep(0.5)
slept2 = time.monotonic() - t0
os.waitpid(pid, 0)
print("handler ran:", got == [signal.SIGUSR1], "slept 1 s:", slept >= 1.0,
      "slept 0.5 s past a child's end:", slept2 >= 0.5)
PY
want=$(cd "$ws" && $PY sleepsig.py 2>&1)
got=$(py sleepsig.py 2>&1)
[ "$got" = "$want" ] && [[ $want == *"True"*"True"*"True" ]] &&
	ok "a handled signal or a child's end does not cut time.sleep short: $got" ||
	bad "sleep and signals: native '$want', keep '$got'"

# Waiting for a blocked signal (rt_sigtimedwait): sigwait for one a
# child sends, sigtimedwait's timeout, sigwaitinfo's siginfo, one taken
# while its handler would have run had it not been blocked, and sigwait
# in a thread while the main thread works. The same as natively.
cat >"$ws/sigwait.py" <<'PY'
import os, signal, threading, time
signal.signal(signal.SIGUSR1, lambda s, f: print("handler ran: wrong"))
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1, signal.SIGUSR2})
pid = os.fork()
if pid == 0:
    time.sleep(0.2); os.kill(os.getppid(), signal.SIGUSR1); os._exit(0)
print("sigwait:", signal.sigwait({signal.SIGUSR1, signal.SIGUSR2}) == signal.SIGUSR1)
os.waitpid(pid, 0)
t0 = time.monotonic()
print("timeout:", signal.sigtimedwait({signal.SIGUSR2}, 0.3), time.monotonic() - t0 >= 0.3)
os.kill(os.getpid(), signal.SIGUSR2)
info = signal.sigwaitinfo({signal.SIGUSR2})
print("sigwaitinfo:", info.si_signo == signal.SIGUSR2)
got = []
t = threading.Thread(target=lambda: got.append(signal.sigwait({signal.SIGUSR2})))
t.start(); n = sum(range(10 ** 6)); time.sleep(0.2)
os.kill(os.getpid(), signal.SIGUSR2); t.join(5)
print("in a thread:", got == [signal.SIGUSR2], not t.is_alive())
PY
want=$(cd "$ws" && $PY sigwait.py 2>&1)
got=$(py sigwait.py 2>&1)
[ "$got" = "$want" ] && [[ $want == *"True"*"None True"*"True"*"True True" ]] &&
	ok "sigwait, sigtimedwait and sigwaitinfo take blocked signals: $(tr '\n' ' ' <<<"$got")" ||
	bad "sigwait: native '$want', keep '$got'"

# signal.pause() in the main thread while another thread works and then
# signals the process: the main thread wakes (its C handler only sets a
# flag, so the handler must run on the thread that paused) and the other
# thread got its work done meanwhile. The signal is sent again until the
# pause is over, should the first come before it.
cat >"$ws/pausesig.py" <<'PY'
import os, signal, threading, time
got = []
signal.signal(signal.SIGUSR1, lambda s, f: got.append(threading.current_thread() is threading.main_thread()))
steps = []
over = threading.Event()
def work():
    for i in range(5):
        time.sleep(0.01); steps.append(i)
    while not over.wait(0.05):
        os.kill(os.getpid(), signal.SIGUSR1)
t = threading.Thread(target=work); t.start()
signal.pause()
over.set(); t.join()
print("pause woke:", len(steps), "steps done by the other thread, handled:", bool(got) and all(got))
PY
want=$(cd "$ws" && env --default-signal=INT,TERM,USR1 $PY pausesig.py 2>&1)
got=$("$KEEP" run --timeout 20s --workspace "$ws" --trust "$K" "$I/python.img" python pausesig.py 2>&1)
[ "$got" = "$want" ] && [[ $want == *"5 steps"*"True" ]] &&
	ok "signal.pause() in the main thread while another works and signals: $got" ||
	bad "pause and threads: native '$want', keep '$got'"

[ $fails -eq 0 ] && echo "image_python: all passed" || echo "image_python: $fails failed"
[ $fails -eq 0 ]
