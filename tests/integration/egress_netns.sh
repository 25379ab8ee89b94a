#!/bin/bash
# Egress end to end in a network namespace that has nothing but loopback:
# the fetch, refusal, redirect, limit and webhook tests run against
# servers on 127.0.0.1, and the namespace proves no test can reach any
# other address (there is no other interface, no route, no DNS server).
# Also checks that every decision line names its reason.
set -u
cd "$(dirname "$0")/../.." || exit 1
B=${B:-build}
t=$B/tests/test_egress_fetch
[ -x "$t" ] || make --no-print-directory "$t" >/dev/null || exit 1
if ! unshare -n true 2>/dev/null; then
	echo "SKIP: cannot create a network namespace (needs root or userns)"
	exit 77
fi
out=$(mktemp) || exit 1
trap 'rm -f "$out"' EXIT
# timeout bounds a hung server; the suite itself takes about a second.
if ! timeout 60 unshare -n sh -c 'ip link set lo up && exec "$0"' "$t" >"$out" 2>&1; then
	cat "$out"
	echo "FAIL: egress tests in an isolated network namespace"
	exit 1
fi
if grep -q '^\[  SKIPPED \]' "$out"; then
	tail -n 5 "$out"
	echo "SKIP: egress test servers unavailable (openssl or python3 missing)"
	exit 77
fi
# The refusals the issue lists, each with its reason, must have happened.
for want in \
    'egress deny host=evil.test .*reason="host not on the allowlist"' \
    'egress deny host=evilapi.github.com.attacker .*reason="host not on the allowlist"' \
    'reason="http not allowed, https only"' \
    'egress deny host=localhost .*class=loopback .*reason="resolved address not allowed"' \
    'egress deny host=meta.test .*addr=169.254.169.254 class=metadata .*reason="resolved address not allowed"' \
    'redirects=1 reason="host not on the allowlist"' \
    'reason="response too large"' \
    'reason="timed out"' \
    'egress allow host=allowed.test .*status=200'; do
	if ! grep -q -- "$want" "$out"; then
		cat "$out"
		echo "FAIL: no decision line matching: $want"
		exit 1
	fi
done
grep -c '^egress ' "$out" | sed 's/^/decisions logged: /'
echo "PASS: egress in an isolated network namespace"
