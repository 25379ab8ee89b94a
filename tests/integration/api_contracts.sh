#!/usr/bin/env bash
# What docs/api.yaml promises, against a real keepd: /metrics labels each
# status with its own code (202, 507 too); GET /v1/images gives the whole
# 64-digit digest; execute and commands/run on an unknown sandbox are 404
# like every other route; a sandbox-scoped token lists its own sandbox;
# code over the size limit is 413 with the whole message.
source "$(dirname "$0")/../lib/keepd.sh"

cat >"$tmp/test.policy" <<'EOP'
agent "dev" {
	allow sandbox:read, sandbox:write, exec, image:read, admin
	exec "python", "true"
	timeout 20s
}
agent "thrifty" { allow sandbox:read, sandbox:write; budget 3 }
EOP
keepd_start "$tmp/test.policy"
caps=sandbox:read,sandbox:write,exec,image:read,admin
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
