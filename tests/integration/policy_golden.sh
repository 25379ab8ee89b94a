#!/bin/bash
# Golden tests for the policy language: each lang/tests/NN.policy beside
# NN.ok, the exact output and exit status of `keep policy check`; where
# NN.fmt exists, the exact output of `keep policy fmt`. Every file that
# parses must format idempotently. UPDATE=1 rewrites the .ok and .fmt
# files (make policy-golden-update).
cd "$(dirname "$0")/../.." || exit 1
keep=${B:-build}/bin/keep
[ -x "$keep" ] || { echo "no $keep: run make first"; exit 1; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
for p in lang/tests/*.policy; do
	base=${p%.policy}
	{ "$keep" policy check "$p" 2>&1; echo "exit $?"; } >"$tmp/out"
	if [ -n "$UPDATE" ]; then
		cp "$tmp/out" "$base.ok"
	elif ! diff -u "$base.ok" "$tmp/out"; then
		echo "FAIL: $p: check output differs from $base.ok"
		fail=1
	fi
	if "$keep" policy fmt "$p" >"$tmp/fmt1" 2>/dev/null; then
		if [ -n "$UPDATE" ] && [ -e "$base.fmt" ]; then
			cp "$tmp/fmt1" "$base.fmt"
		elif [ -e "$base.fmt" ] && ! diff -u "$base.fmt" "$tmp/fmt1"; then
			echo "FAIL: $p: fmt output differs from $base.fmt"
			fail=1
		fi
		"$keep" policy fmt "$tmp/fmt1" >"$tmp/fmt2" 2>&1
		if ! cmp -s "$tmp/fmt1" "$tmp/fmt2"; then
			echo "FAIL: $p: fmt is not idempotent"
			diff -u "$tmp/fmt1" "$tmp/fmt2"
			fail=1
		fi
	fi
done
[ "$fail" -eq 0 ] && echo "policy golden: all match"
exit $fail
