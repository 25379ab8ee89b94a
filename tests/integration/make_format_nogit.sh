#!/usr/bin/env bash
# `make format-check` in a tree without git (a tarball, a copy): it checks
# every .c and .h file, fails on a badly formatted one, and never reads
# stdin.
set -u
cd "$(dirname "$0")/../.."
fails=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fails=$((fails+1)); }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
tar --exclude=./build --exclude=./.git -cf - . | tar -C "$tmp" -xf - || exit 1
want=$(cd "$tmp" && find . -type f \( -name '*.c' -o -name '*.h' \) | grep -vc '^\./fuzz/corpus/')
# A pipe that never closes stands for a terminal: a check that reads stdin
# would hang here, so each check runs under a bound.
mkfifo "$tmp/tty" && exec 3<>"$tmp/tty" || exit 1
out=$(timeout 120 make --no-print-directory -C "$tmp" format-check 2>&1 <&3)
rc=$?
[ $rc -eq 0 ] && [[ $out == *"format-check: $want files clean"* ]] &&
    ok "format-check without git checks all $want files" ||
    bad "format-check without git (exit $rc): $out"
printf 'int  badly_formatted (void){return 0;}\n' >"$tmp/lib/zz_badly_formatted.c"
out=$(timeout 120 make --no-print-directory -C "$tmp" format-check 2>&1 <&3)
rc=$?
[ $rc -ne 0 ] && [[ $out == *zz_badly_formatted.c* ]] &&
    ok "format-check without git fails on a badly formatted file" ||
    bad "format-check passed a badly formatted file (exit $rc): $out"
rm -f "$tmp/lib/zz_badly_formatted.c"
mkdir "$tmp/empty" && cp "$tmp/Makefile" "$tmp/empty/" && cp -r "$tmp/mk" "$tmp/empty/"
out=$(timeout 20 make --no-print-directory -C "$tmp/empty" format-check 2>&1 <&3)
rc=$?
[ $rc -ne 0 ] && [ $rc -ne 124 ] && ok "format-check with no files fails: $out" ||
    bad "format-check with no files (exit $rc): $out"
echo "make_format_nogit: $fails failures"
[ $fails -eq 0 ]
