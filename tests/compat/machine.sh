#!/usr/bin/env bash
# CPython 3.11's own regression tests (Debian's libpython3.11-testsuite)
# for what the machine image adds to a guest: processes, shared memory,
# multiprocessing, file mappings and locks, subprocess, shutil, venv. In
# `keep run` with the machine image's python3 (Debian's 3.11) and natively
# with the host's /usr/bin/python3.11 (the same Debian build), module by
# module through regrtest, side by side as tests/compat/python.sh prints
# them. The tests lie in the workspace at /pt/test (PYTHONPATH=/pt) on
# both sides; natively they run as uid 1000 with HOME unset, as the guest
# does. The guest's tree may hold 256 processes and 6 GiB (keep run's
# defaults, 64 and the image's 2 GiB, are a sandbox's, and
# test_multiprocessing_fork starts a hundred pythons at once). Each side's log is kept in $B/compat-machine/ (MACHINE_LOGS).
# docs/compat.md ("The machine image") explains every difference.
# MACHINE_MODULES="test_a test_b" picks other modules.
set -u
cd "$(dirname "$0")/../.."
B=${B:-build}; KEEP=$B/bin/keep; IMG=$B/images/machine.img
TESTS=/usr/lib/python3.11/test NATIVE=/usr/bin/python3.11
source tests/lib/platform.sh # a guest platform: kvm or trap, or a loud skip
if [ ! -d "$TESTS" ]; then echo "SKIP: no $TESTS (libpython3.11-testsuite)"; exit 77; fi
if [ ! -f "$IMG" ]; then echo "SKIP: no $IMG (make images)"; exit 77; fi
if [ ! -x "$NATIVE" ]; then echo "SKIP: no $NATIVE"; exit 77; fi
if [ "$(id -u)" -ne 0 ]; then
	echo "SKIP: the native side runs as uid 1000: run as root"; exit 77
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp"
LOGS=${MACHINE_LOGS:-$B/compat-machine}; rm -rf "$LOGS"; mkdir -p "$LOGS"

MODULES=${MACHINE_MODULES:-"test_mmap test_fcntl test_subprocess test_shutil
test_tempfile test_multiprocessing_fork test_concurrent_futures test_venv"}

# One tree per side, used by every module.
mkdir -p "$tmp/k/pt" "$tmp/n/pt"
cp -a "$TESTS" "$tmp/k/pt/test"
find "$tmp/k" -name __pycache__ -prune -exec rm -rf {} +
cp -a "$tmp/k/pt/test" "$tmp/n/pt/test"
chown -R 1000:1000 "$tmp/n"

args() { printf '%s\n' -m test -v "$1"; }
. tests/compat/regrtest.sh; regrtest_dir=$tmp

printf '%-26s %-26s %-26s\n' module native keep
for m in $MODULES; do
	(cd "$tmp/n" && timeout -k 10 900 setpriv --reuid 1000 --regid 1000 \
	    --clear-groups env -i PATH=/usr/bin:/bin LANG=C.UTF-8 \
	    PYTHONPATH="$tmp/n/pt" "$NATIVE" $(args "$m")) </dev/null \
	    >"$tmp/$m.n" 2>&1
	timeout -k 10 960 "$KEEP" run --timeout 900s --workspace "$tmp/k" \
	    --processes 256 --memory 6G \
	    --env PYTHONPATH=/pt --env LANG=C.UTF-8 --trust "$B/keys/dev.public" \
	    "$IMG" python3 $(args "$m") </dev/null >"$tmp/$m.k" 2>&1
	cp "$tmp/$m.n" "$LOGS/$m.native.log"; cp "$tmp/$m.k" "$LOGS/$m.keep.log"
	regrtest_tally "$m" "$tmp/$m.n" "$tmp/$m.k"
done
regrtest_report machine
exit $?
