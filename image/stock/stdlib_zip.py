#!/usr/bin/env python3
"""Pack the Python standard library for the python stock image.

Usage: stdlib_zip.py STDLIB_DIR OUT.zip

Source files (.py), from Debian's libpython3.11-stdlib, without the
packages that cannot work in a keep guest (no threads, sockets,
subprocesses or terminals) or that only test and teach, each with its
bytecode (NAME.pyc beside NAME.py, which zipimport loads first) as an
unchecked hash-based .pyc (PEP 552): compiled here once, not by the
guest at every start. Run it with the interpreter the image holds (the
same bytecode magic) and PYTHONHASHSEED=0 (constant sets are written in
hash order). Deterministic: sorted entries with a fixed timestamp, so
the image hash is stable.
"""
import importlib._bootstrap_external as bootstrap
import importlib.util
import os
import sys

# Where the guest finds the zip (image/stock/python_main.c): the name
# tracebacks give each module's file.
GUEST_ZIP = "/lib/python311.zip"
import zipfile

SKIP = {
    "__pycache__", "asyncio", "concurrent", "config-3.11-x86_64-linux-gnu",
    "ctypes", "curses", "dbm", "dist-packages", "distutils", "ensurepip",
    "http", "idlelib", "lib-dynload", "lib2to3", "msilib",
    "multiprocessing", "pydoc_data", "site-packages", "sqlite3", "test",
    "tkinter", "turtledemo", "unittest", "urllib", "venv", "wsgiref",
    "xmlrpc",
}


def add(z, arc, data):
    info = zipfile.ZipInfo(arc, date_time=(2024, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_DEFLATED
    z.writestr(info, data)


def bytecode(source, arc):
    try:
        code = compile(source, GUEST_ZIP + "/" + arc, "exec",
                       dont_inherit=True)
    except SyntaxError:
        return None  # as the guest would: the error comes at import
    return bytes(bootstrap._code_to_hash_pyc(
        code, importlib.util.source_hash(source), checked=False))


def main():
    if os.environ.get("PYTHONHASHSEED") != "0":
        sys.exit("stdlib_zip.py: run with PYTHONHASHSEED=0")
    src, out = sys.argv[1], sys.argv[2]
    tmp = out + ".tmp"
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        for root, dirs, files in os.walk(src):
            dirs[:] = sorted(d for d in dirs if d not in SKIP)
            for name in sorted(files):
                if not name.endswith(".py"):
                    continue
                path = os.path.join(root, name)
                arc = os.path.relpath(path, src)
                with open(path, "rb") as f:
                    source = f.read()
                add(z, arc, source)
                pyc = bytecode(source, arc)
                if pyc is not None:
                    add(z, arc[:-3] + ".pyc", pyc)
    os.replace(tmp, out)


if __name__ == "__main__":
    main()
