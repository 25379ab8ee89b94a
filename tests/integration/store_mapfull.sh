#!/bin/bash
# MAP_FULL: appends into a fixed 256 KiB map until it is full. The writer
# gets a clean error (exit 1, "store map is full"), nothing acknowledged is
# lost, reads keep working (verify, tail, export), and a writer allowed to
# grow the map carries on.
set -u
cd "$(dirname "$0")/../.." || exit 1
K=${B:-build}/bin/keep
[ -x "$K" ] || { echo "FAIL: $K not built"; exit 1; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

detail=$(printf 'x%.0s' $(seq 500))
"$K" audit append --data "$T" --map-size 256K --action fill --detail "$detail" \
    --count 100000 >"$T/acked" 2>"$T/err"
rc=$?
[ $rc = 1 ] || fail "filling a 256K map: exit $rc"
grep -q "store map is full" "$T/err" || fail "error was: $(cat "$T/err")"
acked=$(tail -n 1 "$T/acked")
[ -n "$acked" ] && [ "$acked" -gt 10 ] || fail "only '$acked' entries fit"
out=$("$K" audit verify --data "$T") || fail "verify after MAP_FULL: $out"
[[ $out == *"$acked entries (1..$acked)"* ]] || fail "verify said: $out (acked $acked)"
[ "$("$K" audit tail --data "$T" -n 5 | wc -l)" = 5 ] || fail "tail after MAP_FULL"
[ "$("$K" audit export --data "$T" --since 1h | wc -l)" = "$acked" ] || fail "export after MAP_FULL"
# Still full for a fixed-size writer; a writer that may grow goes on.
"$K" audit append --data "$T" --map-size 256K --action more --detail "$detail" \
    >/dev/null 2>&1 && fail "a full fixed map took another entry"
"$K" audit append --data "$T" --action grown --count 50 >/dev/null || fail "append with growth"
"$K" audit verify --data "$T" | grep -q "$((acked + 50)) entries" || fail "verify after growth"
echo "PASS: MAP_FULL after $acked entries: clean error, reads work, growth resumes"
