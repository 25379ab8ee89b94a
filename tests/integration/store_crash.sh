#!/bin/bash
# Durability: a writer appends audit entries as fast as it can, printing
# each seq only after its commit returned; kill -9 hits it (and a reader
# following the log) at a random moment, many times. After every kill the
# log verifies, and every acknowledged entry is there. A write that was
# acknowledged is committed.
set -u
cd "$(dirname "$0")/../.." || exit 1
K=${B:-build}/bin/keep
ROUNDS=${STORE_CRASH_ROUNDS:-20}
[ -x "$K" ] || { echo "FAIL: $K not built"; exit 1; }

T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
total=0

for r in $(seq "$ROUNDS"); do
	"$K" audit tail -f -n 0 --data "$T" >/dev/null 2>&1 &
	reader=$!
	"$K" audit append --data "$T" --action crash.test --target "round-$r" \
	    --count 10000000 >"$T/acked" 2>"$T/err" &
	writer=$!
	# 20..400 ms: sometimes before the first commit, mostly mid-stream.
	sleep "0.$(printf '%03d' $((20 + RANDOM % 380)))"
	kill -9 "$writer" "$reader" 2>/dev/null
	wait "$writer" 2>/dev/null
	wait "$reader" 2>/dev/null
	acked=$(tail -n 1 "$T/acked")
	out=$("$K" audit verify --data "$T") || fail "round $r: $out"
	if [ -n "$acked" ]; then
		last=$(sed -n 's/.*entries (1\.\.\([0-9]*\)).*/\1/p' <<<"$out")
		[ -n "$last" ] && [ "$last" -ge "$acked" ] \
			|| fail "round $r: acknowledged $acked, log ends at '$last' ($out)"
		total=$acked
	fi
done
[ "$total" -gt 0 ] || fail "no entry was ever acknowledged"
# The log is still writable after all the kills.
"$K" audit append --data "$T" --action crash.done >/dev/null || fail "append after crashes"
"$K" audit verify --data "$T" || fail "final verify"
echo "PASS: $ROUNDS kill -9 rounds, $total acknowledged entries, all present"
