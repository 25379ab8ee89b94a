#!/usr/bin/env bash
# An Idempotency-Key's first reply goes only to the token that got it
# (issue 31, finding 3): a narrower token of the same principal replaying
# the key is told 409, not handed the new sandbox's auth_token and webhook
# secret; the token that made the request replays it, before and after a
# restart (from the store); and the store never holds the reply in clear.
KEEPD_NO_GUEST=1
source "$(dirname "$0")/../lib/keepd.sh"

cat >"$tmp/test.policy" <<'EOP'
agent "dev" { allow sandbox:read, sandbox:write, exec }
EOP
KEEPD_IMAGES=hello keepd_start "$tmp/test.policy"
wide=$(mint dev sandbox:read,sandbox:write,exec)

# ireq TOKEN KEY: POST /v1/sandboxes with that Idempotency-Key.
ireq() {
	body=$(curl -s -o - -w '\n%{http_code}' -H "Authorization: Bearer $1" \
	    -H "Idempotency-Key: $2" -H 'Content-Type: application/json' \
	    -d '{"image":"hello"}' "$url/v1/sandboxes")
	code=${body##*$'\n'}; body=${body%$'\n'*}
}
ireq "$wide" k1
[ "$code" = 201 ] || { bad "create: $code $body"; keepd_finish; exit 1; }
first=$body
sid=$(jget "$first" '["id"]')
sbxtok=$(jget "$first" '["auth_token"]')
req "$wide" POST /v1/tokens '{"caps":["sandbox:read","sandbox:write"]}'
narrow=$(jget "$body" '["token"]')

ireq "$narrow" k1
[ "$code" = 409 ] && ok "a narrower token replaying the key: 409 ($(jget "$body" '["error"]["message"]'))" ||
    bad "a narrower token's replay: $code $body"
[[ $body == *"$sbxtok"* ]] && bad "the narrower token was handed the first auth_token"
ireq "$wide" k1
[ "$code" = 201 ] && [ "$(jget "$body" '["id"]')" = "$sid" ] &&
    ok "the same token replays the first reply" || bad "replay: $code $body"

# The store's copy is sealed: neither the token nor the sandbox id in it.
dump=$(mdb_dump -p -s idempotency "$tmp/state/db" 2>&1)
[ -n "$dump" ] || bad "no idempotency database"
if [[ $dump == *"$sid"* ]] || [[ $dump == *auth_token* ]] || [[ $dump == *"${sbxtok:20:40}"* ]]; then
	bad "the store holds the first reply in clear"
else
	ok "the store's copy of the reply is not in clear"
fi

keepd_restart
ireq "$narrow" k1
[ "$code" = 409 ] && ok "after a restart, the narrower token: 409" || bad "after restart, narrow: $code $body"
ireq "$wide" k1
[ "$code" = 201 ] && [ "$(jget "$body" '["id"]')" = "$sid" ] &&
    ok "after a restart, the same token replays from the store" || bad "after restart: $code $body"
req "$wide" GET /v1/sandboxes
n=$(python3 -c 'import json,sys; print(len(json.loads(sys.argv[1])["sandboxes"]))' "$body")
[ "$n" = 1 ] && ok "one sandbox made in all" || bad "$n sandboxes"
keepd_finish
