#!/usr/bin/env bash
# docs/e2b.md's example works as printed: its js block, read from the
# doc, runs with E2B's SDK against a keepd with make run's development
# policy (etc/policy/default.policy) and make run's admin token's caps,
# and prints exactly the output block the doc shows after it. The SDK
# is the one tests/integration/e2b_sdk.sh installs (build/e2b-sdk).
source "$(dirname "$0")/../lib/keepd.sh"

command -v node >/dev/null && command -v npm >/dev/null ||
	{ echo "SKIP: no node and npm"; exit 77; }
node -e 'const [a, b] = process.versions.node.split(".").map(Number);
process.exit(a > 20 || (a === 20 && b >= 18) ? 0 : 1)' ||
	{ echo "SKIP: the SDK needs node 20.18 or later"; exit 77; }
[ -f "$B/images/machine.img" ] ||
	{ echo "SKIP: no machine image (NO_MACHINE_IMAGE)"; exit 77; }
source tests/lib/e2b_sdk.sh
e2b_sdk_install

# The doc's js block and the output block after "prints".
python3 - docs/e2b.md "$tmp/example.mjs" "$tmp/expected" <<'PY' ||
import re, sys
doc = open(sys.argv[1]).read()
m = re.search(r"```js\n(.*?)```\n\nprints\n\n```\n(.*?)```", doc, re.S)
if m is None:
    sys.exit("docs/e2b.md: no js block followed by what it prints")
open(sys.argv[2], "w").write(m.group(1))
open(sys.argv[3], "w").write(m.group(2))
PY
	{ echo "FAIL: the example is not in docs/e2b.md"; exit 1; }
# An ES module finds its imports from where it is: beside node_modules.
cp "$tmp/example.mjs" "$sdk/example-$$.mjs"
trap 'rm -f "$sdk/example-$$.mjs"; keepd_cleanup' EXIT

keepd_start etc/policy/default.policy
# make run's token (mk/run.sh): the same principal and caps.
key=$(mint admin sandbox:read,sandbox:write,exec,artifact:read,artifact:write,policy:read,audit:read,image:read,admin,secret:read,secret:write 30m)
env -u E2B_DEBUG -u E2B_DOMAIN -u E2B_ACCESS_TOKEN E2B_API_URL="$url/e2b" \
    E2B_SANDBOX_URL="$url/e2b" E2B_API_KEY="$key" \
    timeout 300 node "$sdk/example-$$.mjs" >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc = 0 ] && cmp -s "$tmp/expected" "$tmp/out"; then
	ok "docs/e2b.md's example prints what the doc says, with the development policy"
else
	bad "docs/e2b.md's example (exit $rc)"
	diff "$tmp/expected" "$tmp/out" | sed 's/^/  /'
	sed 's/^/  stderr: /' "$tmp/err"
fi
keepd_finish
