#!/usr/bin/env bash
# CPython 3.11's own regression tests (Debian's libpython3.11-testsuite)
# in `keep run` and natively with the same static interpreter (the python
# stock image's, build/stock/python), module by module through regrtest,
# printed side by side: whether the module is clean ("Tests result:
# SUCCESS") and how many of its tests pass on each side, then the totals
# and, for each module, the tests that pass natively and not in keep with
# the errors keep's log has that the native one does not. Each side's
# log is kept in $B/compat-python/ (PY_LOGS).
# docs/compat.md explains every difference.
#
# The interpreter gets the whole standard library as /lib/python311.zip
# (the stock image leaves out what a guest could not use before processes
# and threads; here nothing is left out but the tests, tkinter and idle),
# and the tests as a directory /lib/python3.11/test in the workspace,
# beside a pure-Python _contextvars (tests/compat/python/: the static
# interpreter lacks the C one, and without it most modules fail to import
# on both sides). The native side runs the same files chrooted, as the
# guest is placed (tests/compat/lib.sh) but for the pid: natively an
# ordinary pid, as pid 1 ignores signals that CPython's tests send to
# themselves and their children. PY_MODULES="test_a test_b" picks other
# modules (test_threading is left out: with no threads it waits out its
# timeout in keep, and natively on one CPU it can hang).
set -u
cd "$(dirname "$0")/../.."
B=${B:-build}; KEEP=$B/bin/keep; PY=$B/stock/python
TESTS=/usr/lib/python3.11/test
source tests/lib/platform.sh # a guest platform: kvm or trap, or a loud skip
if [ ! -d "$TESTS" ]; then echo "SKIP: no $TESTS (libpython3.11-testsuite)"; exit 77; fi
if [ ! -x "$PY" ]; then echo "SKIP: no $PY (make images)"; exit 77; fi
if [ "$(id -u)" -ne 0 ]; then
	echo "SKIP: the native side chroots: run as root"; exit 77
fi
. tests/compat/lib.sh
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
LOGS=${PY_LOGS:-$B/compat-python}; rm -rf "$LOGS"; mkdir -p "$LOGS"

MODULES=${PY_MODULES:-"test_argparse test_base64 test_binascii test_bisect
test_collections test_copy test_csv test_datetime test_difflib test_enum
test_fnmatch test_fractions test_functools test_glob test_gzip test_hashlib
test_heapq test_itertools test_json test_math test_operator test_os
test_pathlib test_random test_re test_shutil test_signal test_statistics
test_string test_struct test_subprocess test_tarfile test_tempfile
test_textwrap test_time test_zipfile test_zlib"}

# The standard library, deterministic, as stdlib_zip.py packs it.
python3 - "$tmp/python311.zip" <<'EOF' || { echo "FAIL: cannot pack the stdlib"; exit 1; }
import os, sys, zipfile
src = "/usr/lib/python3.11"
skip = {"__pycache__", "config-3.11-x86_64-linux-gnu", "dist-packages",
        "site-packages", "lib-dynload", "idlelib", "tkinter", "turtledemo",
        "test", "ensurepip", "lib2to3", "pydoc_data"}
with zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_DEFLATED) as z:
    for root, dirs, files in os.walk(src):
        dirs[:] = sorted(d for d in dirs if d not in skip)
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(root, name)
                info = zipfile.ZipInfo(os.path.relpath(path, src),
                                       date_time=(2024, 1, 1, 0, 0, 0))
                info.compress_type = zipfile.ZIP_DEFLATED
                with open(path, "rb") as f:
                    z.writestr(info, f.read())
EOF
"$KEEP" image build --name python-compat --version 3.11 --memory 1G \
    --command python --file "/lib/python311.zip=$tmp/python311.zip" "$PY" \
    -o "$tmp/python.img" >/dev/null &&
    "$KEEP" image sign --key "$B/keys/dev.secret" "$tmp/python.img" >/dev/null || {
	echo "FAIL: cannot build the python image"; exit 1; }

# One tree per side, used by every module: regrtest works in a
# directory of its own under /tmp and removes it.
mkdir -p "$tmp/k/lib/python3.11" "$tmp/k/tmp"
cp -a "$TESTS" "$tmp/k/lib/python3.11/test"
cp tests/compat/python/_contextvars.py "$tmp/k/lib/python3.11/"
find "$tmp/k" -name __pycache__ -prune -exec rm -rf {} +
cp -a "$tmp/k" "$tmp/n"
mkdir -p "$tmp/n/bin" "$tmp/n/dev"
cp "$PY" "$tmp/n/bin/python"; cp "$tmp/python311.zip" "$tmp/n/lib/"
for d in null:3 zero:5 random:8 urandom:9; do
	mknod -m 666 "$tmp/n/dev/${d%:*}" c 1 "${d#*:}"
done
chown -R 1000:1000 "$tmp/n/lib/python3.11" "$tmp/n/tmp"; chmod 1777 "$tmp/n/tmp"

# regrtest from the tests' directory, verbose (one line per test).
# SIGPIPE ignored, as an ordinary python does (the stock image's
# interpreter installs no signal handlers; natively, test_subprocess
# would die of a broken pipe).
code() {
	printf '%s' "import sys, signal; signal.signal(signal.SIGPIPE, signal.SIG_IGN); sys.path.insert(0, '/lib/python3.11'); sys.argv[1:] = ['-v', '$1']; from test.libregrtest import main; main()"
}
. tests/compat/regrtest.sh; regrtest_dir=$tmp

printf '%-26s %-26s %-26s\n' module native keep
for m in $MODULES; do
	# Not pid 1 natively (lib.sh); a module that hangs is stopped.
	NATIVE_PID1=0 timeout -k 10 600 bash -c '. tests/compat/lib.sh; native "$@"' \
	    native "$tmp/n" /bin/python -c "$(code "$m")" </dev/null >"$tmp/$m.n" 2>&1
	"$KEEP" run --timeout 600s --workspace "$tmp/k" --trust "$B/keys/dev.public" \
	    "$tmp/python.img" python -c "$(code "$m")" </dev/null >"$tmp/$m.k" 2>&1
	cp "$tmp/$m.n" "$LOGS/$m.native.log"; cp "$tmp/$m.k" "$LOGS/$m.keep.log"
	regrtest_tally "$m" "$tmp/$m.n" "$tmp/$m.k"
done
regrtest_report python
exit $?
