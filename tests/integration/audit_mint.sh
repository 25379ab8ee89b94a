#!/usr/bin/env bash
# Every token keep mints is audited as a mint naming the new token's jti
# (issue 31, finding 9): sandbox create, POST /v1/sandboxes/{id}/token and
# E2B's connect are each a token.mint allow entry with "jti <the token's
# jti>", and POST /v1/tokens names its token's jti too; so a leaked
# sandbox token can be found in the log and revoked alone: after
# POST /v1/tokens/revoke of that jti it is refused, the sandbox's other
# tokens and the caller's are not.
KEEPD_NO_GUEST=1
source "$(dirname "$0")/../lib/keepd.sh"

cat >"$tmp/test.policy" <<'EOP'
agent "dev" { allow sandbox:read, sandbox:write }
agent "ops" { allow admin, audit:read }
EOP
KEEPD_IMAGES=hello keepd_start "$tmp/test.policy"
dev=$(mint dev sandbox:read,sandbox:write)
ops=$(mint ops admin,audit:read)
jti_of() { "$KEEP" token inspect "$1" | sed -n 's/.*"jti":"\([^"]*\)".*/\1/p'; }

req "$dev" POST /v1/sandboxes '{"image":"hello"}'
[ "$code" = 201 ] || bad "create: $code $body"
sid=$(jget "$body" '["id"]')
t_create=$(jget "$body" '["auth_token"]')
req "$dev" POST "/v1/sandboxes/$sid/token"
[ "$code" = 200 ] || [ "$code" = 201 ] || bad "refresh: $code $body"
t_refresh=$(jget "$body" '["auth_token"]' 2>/dev/null || jget "$body" '["token"]')
code=$(curl -s -o "$tmp/b" -w '%{http_code}' -X POST -H "X-API-KEY: $dev" "$url/e2b/v2/sandboxes/$sid/connect")
[ "$code" = 201 ] || bad "connect: $code $(cat "$tmp/b")"
t_connect=$(jget "$(cat "$tmp/b")" '["envdAccessToken"]')
req "$dev" POST /v1/tokens '{"caps":["sandbox:read"]}'
t_att=$(jget "$body" '["token"]')

for _ in $(seq 50); do
	req "$ops" GET '/v1/audit?limit=100'
	[[ $body == *e2b_sandbox_connect* ]] && break; sleep 0.1
done
for pair in "sandbox create:$t_create" "sandbox_token:$t_refresh" "e2b_sandbox_connect:$t_connect"; do
	why=${pair%%:*}; jti=$(jti_of "${pair#*:}")
	python3 - "$body" "$why" "$jti" "$sid" <<'PY' && ok "$why: a token.mint entry with jti $jti" || bad "$why: no token.mint with jti $jti"
import json, sys
es = json.loads(sys.argv[1])["entries"]
sys.exit(0 if any(e["action"] == "token.mint" and e["decision"] == "allow"
                  and ("(%s)" % sys.argv[2] in e["detail"] or sys.argv[2] == "e2b_sandbox_connect") and "jti %s," % sys.argv[3] in e["detail"]
                  and e["target"] == sys.argv[4] for e in es) else 1)
PY
done
[[ $body == *"jti $(jti_of "$t_att")"* ]] && ok "POST /v1/tokens names its token's jti" || bad "attenuate entry without jti"

# The leaked one, revoked alone.
req "$ops" POST /v1/tokens/revoke "{\"jti\":\"$(jti_of "$t_refresh")\"}"
[ "$code" = 200 ] || [ "$code" = 204 ] || bad "revoke: $code $body"
req "$t_refresh" GET "/v1/sandboxes/$sid"
[ "$code" = 401 ] && ok "the revoked sandbox token: 401" || bad "revoked: $code"
req "$t_create" GET "/v1/sandboxes/$sid"
[ "$code" = 200 ] && ok "the sandbox's other token still works" || bad "other token: $code $body"
req "$dev" GET "/v1/sandboxes/$sid"
[ "$code" = 200 ] && ok "the caller's token still works" || bad "caller: $code"
keepd_finish
