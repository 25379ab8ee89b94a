#!/usr/bin/env bash
# E2B's own SDK drives keep unchanged (docs/e2b.md): npm's
# @e2b/code-interpreter and e2b, pinned in tests/e2b/package.json and
# installed into build/e2b-sdk (once), run tests/e2b/sdk_test.cjs
# against a real keepd on loopback with only E2B_API_URL,
# E2B_SANDBOX_URL and E2B_API_KEY set: sandboxes, cells in the default
# context and in others (results, logs, errors, streaming callbacks, a
# matplotlib PNG), files (rename and watchDir too), commands (list, kill,
# stdin with sendStdin and closeStdin, connect to a running one), ptys
# (sendInput, resize, kill), setTimeout and connect's timeout, kill,
# and getHost: a python http.server started in the background, fetched
# through getHost(8000) (the name sent as the Host header to keepd's
# loopback address: it resolves nowhere) with the traffic token; a port
# the policy does not expose is 403.
# Then what the SDK cannot
# show: the policy still decides (a command outside the exec allowlist),
# E2B's error shapes, and the credentials the routes take.
source "$(dirname "$0")/../lib/keepd.sh"

command -v node >/dev/null && command -v npm >/dev/null ||
	{ echo "SKIP: no node and npm"; exit 77; }
node -e 'const [a, b] = process.versions.node.split(".").map(Number);
process.exit(a > 20 || (a === 20 && b >= 18) ? 0 : 1)' ||
	{ echo "SKIP: the SDK needs node 20.18 or later"; exit 77; }
source tests/lib/e2b_sdk.sh
e2b_sdk_install

cat >"$tmp/test.policy" <<'EOP'
role coder {
	allow sandbox:read, sandbox:write, exec, artifact:read, artifact:write
	timeout 60s
	output 8M
	memory 512M
	contexts 8
}
agent "e2b" : coder {
	exec "python", "js", "bash", "node"
	expose 8000
}
# other may reach its own port 8000: another's sandbox is then 404.
agent "other" : coder {
	exec "python"
	expose 8000
}
agent "writer" : coder { rate write 4/hour }
agent "auditor" { allow audit:read }
EOP
# ports.domain: E2B's sandbox answer names it, so getHost(port) is
# PORT-ID.sbx.keep.test, a name that resolves nowhere (the test sends it
# to keepd's loopback address as the Host header).
domain=sbx.keep.test
KEEPD_YAML_EXTRA="ports:
  domain: $domain" keepd_start "$tmp/test.policy"
caps=sandbox:read,sandbox:write,exec,artifact:read,artifact:write
key=$(mint e2b $caps 30m)
other=$(mint other $caps 30m)

sdk_run() { # sdk_run KEY MODE: the node script with E2B's variables only
	env -u E2B_DEBUG -u E2B_DOMAIN -u E2B_ACCESS_TOKEN \
	    NODE_PATH="$sdk/node_modules" E2B_API_URL="$url/e2b" \
	    E2B_SANDBOX_URL="$url/e2b" E2B_API_KEY="$1" KEEP_OTHER_KEY="$other" KEEP_PORTS_DOMAIN="$domain" \
	    timeout 600 node tests/e2b/sdk_test.cjs "$2" >"$tmp/sdk.out" 2>&1
	local rc=$?
	sed 's/^/  /' "$tmp/sdk.out"
	return $rc
}
sdk_run "$key" code && ok "the code interpreter through E2B's SDK" ||
	bad "the code interpreter through E2B's SDK"
sdk_run "$key" commands && ok "commands and files through E2B's SDK" ||
	bad "commands through E2B's SDK"
sdk_run "$key" machine &&
	ok "E2B's layout (/home/user), bash and js cells, pause and resume" ||
	bad "the machine: layout, cells, pause through E2B's SDK"
sdk_run "$key" ports &&
	ok "a server in the sandbox through getHost(8000); a port not exposed is 403" ||
	bad "getHost: a guest server through E2B's host name"

# The policy decides: "other" may not run bash, so its commands.run in
# a base sandbox is refused, PermissionDenied to the SDK.
sdk_run "$other" denied && ok "a command outside the exec allowlist is refused" ||
	bad "exec allowlist through E2B's SDK"

# E2B's error shapes and credentials, below the SDK.
e2b() { # e2b METHOD PATH [CURL ARGS...] -> code, body
	local m=$1 p=$2; shift 2
	body=$(curl -s -o - -w '\n%{http_code}' -X "$m" "$@" "$url/e2b$p")
	code=${body##*$'\n'}; body=${body%$'\n'*}
}
e2b POST /v2/sandboxes -H 'Content-Type: application/json' -d '{"templateID":"base"}'
[ "$code" = 401 ] && [ "$(jget "$body" '["code"]')" = 401 ] &&
	[ "$(jget "$body" '["error"]["code"]')" = UNAUTHORIZED ] &&
	ok "no X-API-KEY: 401 in E2B's shape and keep's" || bad "no key: $code $body"
e2b POST /v2/sandboxes -H "X-API-KEY: $key" -H "Authorization: Bearer $other" \
    -H 'Content-Type: application/json' -d '{"templateID":"base"}'
[ "$code" = 401 ] && ok "two different tokens: 401" || bad "two tokens: $code $body"
e2b POST /v2/sandboxes -H "X-API-KEY: $key" -H 'Content-Type: application/json' \
    -d '{"templateID":"base","allow_internet_access":false}'
[ "$code" = 400 ] && [[ $body == *allow_internet_access* ]] &&
	ok "what keep cannot honour is refused, not ignored" || bad "no internet: $code $body"
e2b POST /v2/sandboxes -H "X-API-KEY: $key" -H 'Content-Type: application/json' \
    -d '{"templateID":"base","timeout":300}'
sb=$(jget "$body" '["sandboxID"]'); tok=$(jget "$body" '["envdAccessToken"]')
[ "$code" = 201 ] && [ "$(jget "$body" '["envdVersion"]')" = 0.5.2 ] &&
	[ "$tok" = "$(jget "$body" '["trafficAccessToken"]')" ] &&
	ok "a sandbox: its token is envd's and the traffic token" || bad "create: $code $body"
e2b GET /health -H "E2b-Sandbox-Id: $sb" -H "X-Access-Token: $tok"
[ "$code" = 204 ] && ok "health: 204" || bad "health: $code $body"
e2b GET /health -H "E2b-Sandbox-Id: $sb" -H "X-Access-Token: $tok" -H "X-Access-Token: $tok"
[ "$code" = 400 ] && ok "a credential header twice: 400" || bad "two X-Access-Token: $code"
e2b GET /health -H "X-Access-Token: $tok"
[ "$code" = 400 ] && ok "no E2b-Sandbox-Id: 400" || bad "no sandbox header: $code $body"
e2b POST /filesystem.Filesystem/ListDir -H "E2b-Sandbox-Id: $sb" \
    -H "X-Access-Token: $tok" -H 'Content-Type: application/proto' --data-binary 'x'
[ "$code" = 415 ] && [ "$(jget "$body" '["code"]')" = invalid_argument ] &&
	ok "Connect's binary codec: 415" || bad "proto: $code $body"
e2b POST /filesystem.Filesystem/ListDir -H "E2b-Sandbox-Id: $sb" \
    -H "X-Access-Token: $tok" -H 'Content-Type: application/json' -d '{"path":"/nowhere"}'
[ "$code" = 404 ] && [ "$(jget "$body" '["code"]')" = not_found ] &&
	ok "a Connect error: the code and message" || bad "ListDir: $code $body"
e2b POST /filesystem.Filesystem/Move -H "E2b-Sandbox-Id: $sb" \
    -H "X-Access-Token: $tok" -H 'Content-Type: application/json' \
    -d '{"source":"/a","destination":"/b","depth":1}'
[ "$code" = 400 ] && [ "$(jget "$body" '["code"]')" = invalid_argument ] &&
	ok "Move with a field envd does not know: invalid_argument" || bad "Move: $code $body"
e2b POST /filesystem.Filesystem/Rename -H "E2b-Sandbox-Id: $sb" \
    -H "X-Access-Token: $tok" -H 'Content-Type: application/json' -d '{}'
[ "$code" = 404 ] && ok "a method keep does not serve: 404" || bad "Rename: $code $body"
# The sandbox's token is scoped to it: another sandbox is not found.
req "$key" POST /v1/sandboxes '{"image":"shell"}'
sb2=$(jget "$body" '["id"]')
e2b GET /health -H "E2b-Sandbox-Id: $sb2" -H "X-Access-Token: $tok"
[ "$code" = 404 ] && ok "a sandbox's token reaches no other sandbox" || bad "scope: $code $body"
e2b DELETE "/sandboxes/$sb" -H "X-API-KEY: $other"
[ "$code" = 404 ] && [ "$(jget "$body" '["code"]')" = 404 ] &&
	ok "another principal cannot kill it: 404 (E2B's SDK then says false)" ||
	bad "other's kill: $code $body"
e2b DELETE "/sandboxes/$sb" -H "X-API-KEY: $key"
[ "$code" = 204 ] && ok "kill: 204" || bad "kill: $code $body"
e2b GET /health -H "E2b-Sandbox-Id: $sb" -H "X-Access-Token: $tok"
[ "$code" = 502 ] && ok "health of a killed sandbox: 502, as E2B's proxy" || bad "health after kill: $code $body"

# A write into a fresh tree is decided once per directory it makes, as
# keep's own files/mkdir would be: writer's four writes are the create,
# the write that finds /a missing, /a and /a/b; /a/b/c is refused.
writer=$(mint writer $caps 30m)
e2b POST /v2/sandboxes -H "X-API-KEY: $writer" -H 'Content-Type: application/json' \
    -d '{"templateID":"base"}'
wsb=$(jget "$body" '["sandboxID"]'); wtok=$(jget "$body" '["envdAccessToken"]')
printf 'deep' >"$tmp/deep"
e2b POST '/files?path=/a/b/c/f' -H "E2b-Sandbox-Id: $wsb" -H "X-Access-Token: $wtok" \
    -F "file=@$tmp/deep;filename=/a/b/c/f"
[ "$code" = 429 ] && [ "$(jget "$body" '["code"]')" = 429 ] &&
	ok "each directory a write makes is a decision: the fourth write is over the rate" ||
	bad "mkdir decisions: $code $body"

# Every E2B request was decided and audited as keep's own route's.
auditor=$(mint auditor audit:read)
n=$(python3 - "$url" "$auditor" <<'PY'
import json, sys, urllib.request
url, tok, cursor, n = sys.argv[1], sys.argv[2], None, 0
while True:
    q = "/v1/audit?limit=100" + ("&cursor=" + cursor if cursor else "")
    r = urllib.request.Request(url + q, headers={"Authorization": "Bearer " + tok})
    page = json.load(urllib.request.urlopen(r))
    n += sum(1 for e in page["entries"] if e["principal"] == "other"
             and e["decision"] == "deny" and "bash" in e["target"])
    cursor = page["next_cursor"]
    if not cursor:
        break
print(n)
PY
)
[ "${n:-0}" -ge 1 ] && ok "the refused bash is in the audit log, as keep's own route's" ||
	bad "audit: ${n:-none}"
keepd_finish
