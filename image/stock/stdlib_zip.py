#!/usr/bin/env python3
"""Pack the Python standard library for the python stock image.

Usage: stdlib_zip.py STDLIB_DIR OUT.zip

Source files only (.py), from Debian's libpython3.11-stdlib, without the
packages that cannot work in a keep guest (no threads, sockets,
subprocesses or terminals) or that only test and teach. Deterministic:
sorted entries with a fixed timestamp, so the image hash is stable.
"""
import os
import sys
import zipfile

SKIP = {
    "__pycache__", "asyncio", "concurrent", "config-3.11-x86_64-linux-gnu",
    "ctypes", "curses", "dbm", "dist-packages", "distutils", "ensurepip",
    "http", "idlelib", "lib-dynload", "lib2to3", "msilib",
    "multiprocessing", "pydoc_data", "site-packages", "sqlite3", "test",
    "tkinter", "turtledemo", "unittest", "urllib", "venv", "wsgiref",
    "xmlrpc",
}


def main():
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
                info = zipfile.ZipInfo(arc, date_time=(2024, 1, 1, 0, 0, 0))
                info.compress_type = zipfile.ZIP_DEFLATED
                with open(path, "rb") as f:
                    z.writestr(info, f.read())
    os.replace(tmp, out)


if __name__ == "__main__":
    main()
