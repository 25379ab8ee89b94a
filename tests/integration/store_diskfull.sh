#!/bin/bash
# A full disk (a 256 KiB tmpfs, so root is needed): the writer gets a clean
# "no space left on device" (exit 1), every acknowledged entry is there,
# and reads keep working.
set -u
cd "$(dirname "$0")/../.." || exit 1
K=${B:-build}/bin/keep
[ -x "$K" ] || { echo "FAIL: $K not built"; exit 1; }
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root to mount a small tmpfs"; exit 77; }
T=$(mktemp -d)
if ! mount -t tmpfs -o size=256k,mode=0700 keep-store-test "$T" 2>/dev/null; then
	rmdir "$T"
	echo "SKIP: cannot mount a tmpfs here"
	exit 77
fi
W=$(mktemp -d)
trap 'umount "$T"; rmdir "$T"; rm -rf "$W"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

detail=$(printf 'x%.0s' $(seq 500))
"$K" audit append --data "$T" --action fill --detail "$detail" --count 100000 \
    >"$W/acked" 2>"$W/err"
rc=$?
acked=$(tail -n 1 "$W/acked")
err=$(cat "$W/err")
[ $rc = 1 ] || fail "filling the disk: exit $rc"
[[ $err == *"no space left on device"* ]] || fail "error was: $err"
[ -n "$acked" ] || fail "nothing was acknowledged"
out=$("$K" audit verify --data "$T") || fail "verify on a full disk: $out"
[[ $out == *"$acked entries (1..$acked)"* ]] || fail "verify said: $out (acked $acked)"
[ "$("$K" audit tail --data "$T" -n 3 | wc -l)" = 3 ] || fail "tail on a full disk"
echo "PASS: disk full after $acked entries: clean error, reads work"
