#!/usr/bin/env bash
# E2B's routes (issue 31, findings 10 and 11):
# - two different credentials in one request are a 401 on every route:
#   X-API-KEY beside another X-Access-Token on the control plane, the
#   reverse on a sandbox's route, another X-API-KEY beside keep's own
#   Authorization (each header alone with a good token is served);
# - a bad E2b-Sandbox-Id is refused after the token is checked, and its
#   400 is in the audit log with who sent it;
# - a multi-file upload refused for a later part has written none.
KEEPD_NO_GUEST=1
source "$(dirname "$0")/../lib/keepd.sh"

cat >"$tmp/test.policy" <<'EOP'
agent "dev" { allow sandbox:read, sandbox:write, artifact:read, artifact:write }
agent "ops" { allow admin, audit:read }
EOP
KEEPD_IMAGES=hello keepd_start "$tmp/test.policy"
caps=sandbox:read,sandbox:write,artifact:read,artifact:write
a=$(mint dev $caps)
b=$(mint dev $caps)
ops=$(mint ops admin,audit:read)
st() { curl -s -o "$tmp/b" -w '%{http_code}' "$@"; }

code=$(st -H "X-API-KEY: $a" -H 'Content-Type: application/json' -d '{"templateID":"hello"}' "$url/e2b/v2/sandboxes")
[ "$code" = 201 ] || bad "create: $code $(cat "$tmp/b")"
sid=$(jget "$(cat "$tmp/b")" '["sandboxID"]')
sbx=$(jget "$(cat "$tmp/b")" '["envdAccessToken"]')

code=$(st -H "X-API-KEY: $a" -H "X-Access-Token: $b" "$url/e2b/sandboxes/$sid")
[ "$code" = 401 ] && ok "control plane: X-API-KEY and another X-Access-Token: 401" || bad "control plane two tokens: $code"
code=$(st -H "X-API-KEY: $a" -H "X-Access-Token: $a" "$url/e2b/sandboxes/$sid")
[ "$code" = 200 ] && ok "control plane: the same token twice: 200" || bad "control plane same: $code"
code=$(st -H "X-Access-Token: $sbx" -H "X-API-KEY: $b" -H "E2b-Sandbox-Id: $sid" "$url/e2b/health")
[ "$code" = 401 ] && ok "sandbox route: X-Access-Token and another X-API-KEY: 401" || bad "sandbox two tokens: $code"
code=$(st -H "X-Access-Token: $sbx" -H "E2b-Sandbox-Id: $sid" "$url/e2b/health")
[ "$code" = 200 ] || [ "$code" = 204 ] && ok "sandbox route with its token: $code" || bad "sandbox route: $code $(cat "$tmp/b")"
code=$(st -H "Authorization: Bearer $a" -H "X-API-KEY: $b" "$url/v1/sandboxes")
[ "$code" = 401 ] && ok "keep's route: Authorization and another X-API-KEY: 401" || bad "v1 two tokens: $code"

# A bad E2b-Sandbox-Id: 400, audited with who.
code=$(curl -s -o /dev/null -D "$tmp/h" -w '%{http_code}' -H "X-Access-Token: $sbx" -H 'E2b-Sandbox-Id: bad/id' "$url/e2b/health")
rid=$(sed -n 's/^X-Request-Id: \([^[:space:]]*\).*/\1/Ip' "$tmp/h")
[ "$code" = 400 ] && ok "a bad E2b-Sandbox-Id: 400" || bad "bad sandbox id: $code"

# Upload: the second part's path is refused, so the first is not written.
printf 'one' >"$tmp/one"; printf 'two' >"$tmp/two"
code=$(st -H "X-Access-Token: $sbx" -H "E2b-Sandbox-Id: $sid" \
    -F "file=@$tmp/one;filename=/home/user/one.txt" -F "file=@$tmp/two;filename=/home/user/../../etc/x" \
    "$url/e2b/files")
[ "$code" = 400 ] && ok "an upload with a bad second part: 400" || bad "upload: $code $(cat "$tmp/b")"
code=$(st -H "X-Access-Token: $sbx" -H "E2b-Sandbox-Id: $sid" "$url/e2b/files?path=/home/user/one.txt")
[ "$code" = 404 ] && ok "its first part was not written" || bad "first part: $code $(cat "$tmp/b")"
code=$(st -H "X-Access-Token: $sbx" -H "E2b-Sandbox-Id: $sid" -F "file=@$tmp/one;filename=/home/user/one.txt" "$url/e2b/files")
[ "$code" = 200 ] && ok "a good upload: 200" || bad "good upload: $code $(cat "$tmp/b")"

for _ in $(seq 50); do
	req "$ops" GET '/v1/audit?limit=100'
	[[ $body == *"$rid"* ]] && break; sleep 0.1
done
python3 - "$body" "$rid" <<'PY' && ok "the 400 is audited: deny by dev" || bad "no audit entry for the bad E2b-Sandbox-Id: $body"
import json, sys
es = [e for e in json.loads(sys.argv[1])["entries"] if e["request_id"] == sys.argv[2]]
sys.exit(0 if any(e["decision"] == "deny" and e["principal"] == "dev" and "status=400" in e["detail"] for e in es) else 1)
PY
keepd_finish
