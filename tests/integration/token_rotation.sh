#!/usr/bin/env bash
# Issuer key rotation end to end (issue 16): keepd trusts two issuer keys
# at once, each token names its key in the footer (kid = the key's
# k4.pid), tokens of both verify; once the old key is removed and keepd
# reloaded (SIGHUP, systemctl reload), the old key's tokens are refused
# (401) and the new key's still work, with no restart.
# It boots no guest: it runs where no guest platform does.
KEEPD_NO_GUEST=1
source "$(dirname "$0")/../lib/keepd.sh"

cat >"$tmp/test.policy" <<'EOP'
role reader {
	allow sandbox:read
}
agent "alice" : reader
EOP
keepd_start "$tmp/test.policy"
old=$(mint alice sandbox:read)
"$KEEP" key generate --out "$tmp" --name issuer2 >/dev/null || exit 1

kid_of() { "$KEEP" token inspect "$1" | sed -n 's/.*"kid": *"\([^"]*\)".*/\1/p' | head -n 1; }
[ "$(kid_of "$old")" = "$("$KEEP" key id "$tmp/issuer.public")" ] &&
    ok "the token's footer names its key: $(kid_of "$old")" || bad "kid: $("$KEEP" token inspect "$old")"

# Step 1: both keys trusted.
sed -i "s|issuer_keys: \[ $tmp/issuer.public \]|issuer_keys: [ $tmp/issuer.public, $tmp/issuer2.public ]|" "$tmp/keepd.yaml"
grep -q issuer2 "$tmp/keepd.yaml" || bad "config not rewritten"
new=$("$KEEP" token mint --key "$tmp/issuer2.secret" --sub alice --caps sandbox:read --ttl 10m)
kill -HUP "$pid"
for _ in $(seq 100); do req "$new" GET /v1/sandboxes; [ "$code" = 200 ] && break; sleep 0.1; done
[ "$code" = 200 ] && ok "a token of the new key verifies once both are trusted" || bad "new key: $code $body"
req "$old" GET /v1/sandboxes
[ "$code" = 200 ] && ok "a token of the old key still verifies" || bad "old key during rotation: $code $body"

# Step 2: the old key is retired.
sed -i "s|issuer_keys: \[ $tmp/issuer.public, |issuer_keys: [ |" "$tmp/keepd.yaml"
kill -HUP "$pid"
for _ in $(seq 100); do req "$old" GET /v1/sandboxes; [ "$code" = 401 ] && break; sleep 0.1; done
[ "$code" = 401 ] && ok "the old key's token is refused after it is removed: $(jget "$body" '["error"]["message"]')" ||
    bad "old key after removal: $code $body"
req "$new" GET /v1/sandboxes
[ "$code" = 200 ] && ok "the new key's token still verifies" || bad "new key after removal: $code $body"
keepd_finish
