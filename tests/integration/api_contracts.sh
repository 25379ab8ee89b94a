#!/usr/bin/env bash
# What docs/api.yaml promises, against a real keepd: /metrics labels each
# status with its own code (202, 507 too); GET /v1/images gives the whole
# 64-digit digest; execute and commands/run on an unknown sandbox are 404
# like every other route; a sandbox-scoped token lists its own sandbox;
# code over the size limit is 413 with the whole message.
source "$(dirname "$0")/../lib/keepd.sh"

cat >"$tmp/test.policy" <<'EOP'
agent "dev" {
	allow sandbox:read, sandbox:write, exec, image:read, admin, artifact:read, artifact:write
	exec "python", "true"
	timeout 20s
}
agent "thrifty" { allow sandbox:read, sandbox:write; budget 3 }
EOP
keepd_start "$tmp/test.policy"
caps=sandbox:read,sandbox:write,exec,image:read,admin,artifact:read,artifact:write
dev=$(mint dev $caps)

# --- images: the digest is blake2b: and 64 hex digits.
req "$dev" GET /v1/images
digest=$(jget "$body" '["images"][0]["digest"]' 2>/dev/null)
[[ $digest =~ ^blake2b:[0-9a-f]{64}$ ]] && ok "image digest: $digest" || bad "image digest: '$digest' ($code)"

# --- unknown sandbox: 404 on every route.
for r in execute commands/run; do
	case $r in
	execute) d='{"code":"1","language":"python"}' ;;
	*) d='{"cmd":"true"}' ;;
	esac
	req "$dev" POST "/v1/sandboxes/sbx-nosuchsandbox0000000/$r" "$d"
	[ "$code" = 404 ] && [[ $body == *'"code":"NOT_FOUND"'* ]] && ok "$r on an unknown sandbox: 404" ||
	    bad "$r on an unknown sandbox: $code $body"
done
req "$dev" GET "/v1/sandboxes/sbx-nosuchsandbox0000000/env"
[ "$code" = 404 ] && ok "env on an unknown sandbox: 404" || bad "env: $code $body"

# --- a sandbox-scoped token sees its own sandbox in the list.
req "$dev" POST /v1/sandboxes '{"image":"python"}'
[ "$code" = 201 ] || bad "create: $code $body"
sid=$(jget "$body" '["id"]'); stok=$(jget "$body" '["auth_token"]')
req "$dev" POST /v1/sandboxes '{"image":"python"}'
other=$(jget "$body" '["id"]')
req "$stok" GET /v1/sandboxes
if [ "$code" = 200 ] && [[ $body == *"\"$sid\""* ]] && [[ $body != *"\"$other\""* ]]; then
	ok "a scoped token lists its own sandbox, and only it"
else
	bad "scoped list: $code $body"
fi

# --- code over the limit: 413 and the whole message.
python3 -c 'import json; print(json.dumps({"code": "#" * (2 << 20), "language": "python"}))' >"$tmp/big.json"
body=$(curl -s -w '\n%{http_code}' -H "Authorization: Bearer $dev" -H 'Content-Type: application/json' \
    --data-binary @"$tmp/big.json" "$url/v1/sandboxes/$sid/execute")
code=${body##*$'\n'}; body=${body%$'\n'*}
msg=$(jget "$body" '["error"]["message"]' 2>/dev/null)
if [ "$code" = 413 ] && [[ $msg == *. || $msg == *[0-9a-zA-Z\)] ]] && python3 -c 'import json,sys; json.loads(sys.argv[1])' "$body"; then
	ok "code over the limit: 413 ($msg)"
else
	bad "big code: $code $body"
fi

# --- /metrics: 202 and 404 under their own code.
req "$dev" POST "/v1/sandboxes/$sid/execute/background" '{"code":"1","language":"python"}'
[ "$code" = 202 ] || bad "background: $code $body"
req "$dev" GET /metrics
grep -q 'keep_http_requests_total{route="execute_background",code="202"} 1' <<<"$body" &&
    ok "/metrics counts the 202 as 202" || bad "metrics 202: $(grep execute_background <<<"$body")"
grep -q 'keep_http_requests_total{route="execute",code="413"} 1' <<<"$body" &&
    ok "/metrics counts the 413 as 413" || bad "metrics 413: $(grep 'route="execute"' <<<"$body")"
# --- paths: a ".." component is 400, as documented, not clamped.
for pth in ../etc/passwd a/../b /.. ..; do
	req "$dev" GET "/v1/sandboxes/$sid/files/read?path=$pth"
	[ "$code" = 400 ] && ok "files/read ?path=$pth: 400" || bad "files/read ?path=$pth: $code $body"
done
req "$dev" GET "/v1/sandboxes/$sid/files/exists?path=..a/b..c"
[ "$code" = 200 ] && ok "names that merely contain dots are fine" || bad "files/exists ..a/b..c: $code $body"

# --- bodies: up to limits.max_request_body (16M by default), as documented.
head -c $((2 << 20)) /dev/zero >"$tmp/2m"
code=$(curl -s -o "$tmp/b" -w '%{http_code}' -H "Authorization: Bearer $dev" --data-binary @"$tmp/2m" \
    "$url/v1/sandboxes/$sid/files/write?path=two-mib")
[ "$code" = 200 ] && ok "a 2 MiB file write: 200" || bad "2 MiB write: $code $(cat "$tmp/b")"
head -c $((17 << 20)) /dev/zero >"$tmp/17m"
code=$(curl -s -o "$tmp/b" -w '%{http_code}' -H "Authorization: Bearer $dev" --data-binary @"$tmp/17m" \
    "$url/v1/sandboxes/$sid/files/write?path=too-big")
[ "$code" = 413 ] && ok "a 17 MiB body: 413" || bad "17 MiB write: $code $(cat "$tmp/b")"
python3 - docs/api.yaml <<'PY' && ok "docs: the body limit, 507 on create, the run statuses" || bad "docs disagree"
import sys, yaml
d = yaml.safe_load(open(sys.argv[1]))
assert "16 MiB by default" in " ".join(d["info"]["description"].split()), "body limit"
assert "507" in d["paths"]["/v1/sandboxes"]["post"]["responses"], "507 on create"
st = d["components"]["schemas"]["Process"]["properties"]["status"]["enum"]
assert {"running", "exited", "killed"} <= set(st), st
PY

# --- processes: execute/processes has the background runs only,
# processes every run; a killed run says so, as documented.
req "$dev" POST "/v1/sandboxes/$sid/execute" '{"code":"print(1)","language":"python"}'
[ "$code" = 200 ] || bad "foreground run: $code $body"
req "$dev" POST "/v1/sandboxes/$sid/execute/background" '{"code":"import time\ntime.sleep(30)","language":"python"}'
bpid=$(jget "$body" '["pid"]')
req "$dev" POST "/v1/sandboxes/$sid/execute/kill?pid=$bpid"
[ "$code" = 204 ] || bad "kill: $code $body"
for _ in $(seq 100); do
	req "$dev" GET "/v1/sandboxes/$sid/execute/processes"
	[[ $body == *'"killed"'* ]] && break; sleep 0.1
done
python3 - "$body" "$bpid" <<'PY' && ok "execute/processes: background runs only, the killed one killed" || bad "execute/processes: $body"
import json, sys
ps = json.loads(sys.argv[1])["processes"]
assert ps and all(p["background"] for p in ps), ps
assert any(p["pid"] == int(sys.argv[2]) and p["status"] == "killed" for p in ps), ps
PY
req "$dev" GET "/v1/sandboxes/$sid/processes"
python3 - "$body" <<'PY' && ok "processes: foreground runs too" || bad "processes: $body"
import json, sys
ps = json.loads(sys.argv[1])["processes"]
assert any(not p["background"] for p in ps) and any(p["background"] for p in ps), ps
PY

# --- a spent budget: the agent still reads its usage and deletes its own
# sandbox; everything else is refused.
thrifty=$(mint thrifty sandbox:read,sandbox:write)
req "$thrifty" POST /v1/sandboxes '{"image":"toolbox"}'
tsid=$(jget "$body" '["id"]')
req "$thrifty" GET /v1/sandboxes
req "$thrifty" GET "/v1/sandboxes/$tsid"
req "$thrifty" GET /v1/sandboxes
[ "$code" = 403 ] && [[ $body == *budget* ]] && ok "the budget is spent" || bad "budget: $code $body"
req "$thrifty" GET "/v1/sandboxes/$tsid/system"
[ "$code" = 200 ] && [[ $(jget "$body" '["budget_remaining"]') == 0 ]] &&
    ok "with the budget spent, its usage: 200, budget_remaining 0" || bad "usage after the budget: $code $body"
req "$thrifty" DELETE "/v1/sandboxes/$tsid"
[ "$code" = 204 ] && ok "with the budget spent, it deletes its own sandbox" || bad "delete after the budget: $code $body"
req "$thrifty" DELETE "/v1/sandboxes/$sid"
[ "$code" = 404 ] && ok "but not another's" || bad "delete of another's sandbox: $code $body"
keepd_finish
