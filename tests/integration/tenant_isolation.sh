#!/usr/bin/env bash
# One tenant cannot learn about, or take from, another: a sandbox another
# principal cannot see answers 404 on its lock whether it is locked or
# not; a request with two Authorization headers is refused with 400; a
# workspace of any depth is removed with its sandbox, or after a restart;
# revoking a token revokes the tokens derived from it; the policy's
# `sandboxes` quota is per principal.
# It boots no guest: it runs where no guest platform does.
KEEPD_NO_GUEST=1
source "$(dirname "$0")/../lib/keepd.sh"

cat >"$tmp/test.policy" <<'EOP'
role runner {
	allow sandbox:read, sandbox:write, exec
	exec "echo", "true"
	timeout 10s
}
agent "ann" : runner { lock writes }
agent "bob" : runner
agent "root" { allow admin }
agent "dora" : runner { sandboxes 2 }
EOP
keepd_start "$tmp/test.policy"
caps=sandbox:read,sandbox:write,exec
ann=$(mint ann $caps)
bob=$(mint bob $caps)

# --- a lock on a sandbox bob cannot see: 404, locked or not.
req "$ann" POST /v1/sandboxes '{"image":"toolbox"}'
sbx=$(jget "$body" '["id"]')
req "$bob" DELETE "/v1/sandboxes/$sbx/lock"
[ "$code" = 404 ] && ok "another's unlocked sandbox: 404" || bad "unlocked: $code $body"
req "$ann" POST "/v1/sandboxes/$sbx/lock" '{"ttl":60}'
[ "$code" = 201 ] || bad "lock: $code $body"
req "$bob" DELETE "/v1/sandboxes/$sbx/lock"
[ "$code" = 404 ] && ok "another's locked sandbox: 404 as well" || bad "locked: $code $body"
req "$bob" POST "/v1/sandboxes/$sbx/lock" '{}'
[ "$code" = 404 ] && ok "taking another's lock: 404" || bad "take: $code $body"

# --- two Authorization headers: 400, even when both are valid.
code=$(curl -s -o "$tmp/b" -w '%{http_code}' -H "Authorization: Bearer $ann" \
    -H "Authorization: Bearer $bob" "$url/v1/sandboxes")
[ "$code" = 400 ] && ok "two Authorization headers: 400" || bad "two Authorization: $code $(cat "$tmp/b")"

# --- dora may hold two sandboxes at once; others are not counted
# against her, and a deleted one frees its place.
dora=$(mint dora $caps)
req "$dora" POST /v1/sandboxes '{"image":"toolbox"}'
d1=$(jget "$body" '["id"]')
req "$dora" POST /v1/sandboxes '{"image":"toolbox"}'
[ "$code" = 201 ] || bad "dora's second: $code $body"
req "$dora" POST /v1/sandboxes '{"image":"toolbox"}'
[ "$code" = 403 ] && [[ $body == *"Sandbox quota"* ]] && ok "a third sandbox past 'sandboxes 2': 403" || bad "quota: $code $body"
req "$bob" POST /v1/sandboxes '{"image":"toolbox"}'
[ "$code" = 201 ] && ok "another principal still creates" || bad "bob after dora's quota: $code $body"
req "$dora" DELETE "/v1/sandboxes/$d1"
req "$dora" POST /v1/sandboxes '{"image":"toolbox"}'
[ "$code" = 201 ] && ok "a deleted sandbox frees its place" || bad "after delete: $code $body"
"$KEEP" policy explain "$tmp/policy/test.policy" dora sandbox:write | grep -q "sandboxes 2" &&
    ok "keep policy explain shows the quota" || bad "explain: $("$KEEP" policy explain "$tmp/policy/test.policy" dora sandbox:write)"

# --- revocation cascades: a token derived from a revoked one (POST
# /v1/tokens, a sandbox's auth_token, and one derived from that) is
# refused too.
carl=$(mint bob $caps)
req "$carl" POST /v1/tokens '{"caps":["sandbox:read"]}'
derived=$(jget "$body" '["token"]')
[ "$code" = 201 ] || [ "$code" = 200 ] || bad "derive: $code $body"
req "$carl" POST /v1/sandboxes '{"image":"toolbox"}'
sbxtok=$(jget "$body" '["auth_token"]')
rsbx=$(jget "$body" '["id"]')
req "$sbxtok" POST /v1/tokens '{"caps":["sandbox:read"]}'
grand=$(jget "$body" '["token"]')
for t in "$derived" "$sbxtok" "$grand"; do
	req "$t" GET "/v1/sandboxes/$rsbx"
	[ "$code" = 200 ] || bad "derived token before the revocation: $code $body"
done
jti=$("$KEEP" token inspect "$carl" | sed -n 's/.*"jti":"\([^"]*\)".*/\1/p')
root=$(mint root admin)
req "$root" POST /v1/tokens/revoke "{\"jti\":\"$jti\"}"
[ "$code" = 200 ] || bad "revoke: $code $body"
n=0
for t in "$carl" "$derived" "$sbxtok" "$grand"; do
	req "$t" GET "/v1/sandboxes/$rsbx"
	[ "$code" = 401 ] && [[ $body == *revoked* ]] && n=$((n+1))
done
[ $n = 4 ] && ok "revoking a token revokes the tokens derived from it, at any depth" || bad "cascade: $n of 4 refused ($code $body)"
req "$bob" GET "/v1/sandboxes/$rsbx"
[ "$code" = 200 ] && ok "bob's other tokens still work" || bad "unrelated token: $code $body"

# --- a workspace of any depth is removed with its sandbox, and an
# orphaned one by the sweep after a restart.
deep() { # DIR DEPTH: a chain of directories with a file at each level
	local d=$1 i
	for ((i = 0; i < $2; i++)); do d=$d/d; mkdir -p "$d"; echo x >"$d/f"; done
	chown -R _keep: "$1"
}
req "$bob" POST /v1/sandboxes '{"image":"toolbox"}'
dsbx=$(jget "$body" '["id"]')
ws=$tmp/state/workspaces/$dsbx
[ -d "$ws" ] || bad "no workspace at $ws"
deep "$ws" 200
req "$bob" DELETE "/v1/sandboxes/$dsbx"
[ "$code" = 204 ] || bad "delete: $code $body"
for _ in $(seq 50); do [ -e "$ws" ] || break; sleep 0.1; done
[ ! -e "$ws" ] && ok "a 200-deep workspace is removed with its sandbox" || bad "deep workspace left: $(find "$ws" | wc -l) entries"
mkdir -p "$tmp/state/workspaces/sbx-orphanorphanorphan1"
deep "$tmp/state/workspaces/sbx-orphanorphanorphan1" 200
keepd_restart
for _ in $(seq 50); do [ -e "$tmp/state/workspaces/sbx-orphanorphanorphan1" ] || break; sleep 0.1; done
[ ! -e "$tmp/state/workspaces/sbx-orphanorphanorphan1" ] && ok "an orphaned 200-deep workspace is swept after a restart" || bad "orphan left"

keepd_finish
