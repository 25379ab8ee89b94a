#!/usr/bin/env bash
# Every decision is in the audit log, as the decision the client was given
# and why: 401s (no token, forged, expired, revoked), 403 for a capability
# the token lacks, POST /v1/tokens allowed and refused, a 423 for a write
# without the lock (a deny, not an allow), a rate-limit and a concurrency
# refusal (reason rate / concurrent, not the allow rule's verdict nor
# "default deny"), and a policy reload that does not compile.
source "$(dirname "$0")/../lib/keepd.sh"

cat >"$tmp/test.policy" <<'EOP'
role runner {
	allow sandbox:read, sandbox:write, exec
	exec "python", "sleep", "true"
	timeout 20s
}
agent "carol" : runner { rate read 2/min }
agent "erin" : runner { concurrent 1 }
agent "ivy" : runner { lock writes }
agent "frank" : runner
agent "gina" { allow sandbox:read }
agent "ops" { allow admin, audit:read }
EOP
keepd_start "$tmp/test.policy"
caps=sandbox:read,sandbox:write,exec

# The audit log as JSON lines; the store commits within a few ms.
audit_has() {	# PYTHON-PREDICATE-ON-e DESCRIPTION
	local i
	for i in $(seq 50); do
		"$KEEP" audit export --data "$tmp/state" --since 1h >"$tmp/audit.jsonl" 2>/dev/null
		python3 -c '
import json, sys
for line in open(sys.argv[1]):
    e = json.loads(line)
    if '"$1"':
        sys.exit(0)
sys.exit(1)' "$tmp/audit.jsonl" && { ok "audit: $2"; return 0; }
		sleep 0.1
	done
	bad "audit: $2"; tail -n 5 "$tmp/audit.jsonl"
}

# --- 401s: missing, forged, expired, revoked.
curl -s -o /dev/null -H 'X-Request-Id: noauth1' "$url/v1/sandboxes"
audit_has 'e.get("client_request_id") == "noauth1" and e["decision"] == "deny" and e["rule"] == "token" and "status=401" in e["detail"]' \
    "a request without a token is a 401 deny"
good=$(mint frank $caps)
forged="${good%?}A"; [ "$forged" = "$good" ] && forged="${good%?}B"
curl -s -o /dev/null -H 'X-Request-Id: forged1' -H "Authorization: Bearer $forged" "$url/v1/sandboxes"
audit_has 'e.get("client_request_id") == "forged1" and e["decision"] == "deny" and "status=401" in e["detail"]' \
    "a forged token is a 401 deny"
kid=$("$KEEP" key id "$tmp/issuer.public")
now=$(date -u +%s)
iso() { date -u -d "@$1" +%Y-%m-%dT%H:%M:%SZ; }
expired=$("$KEEP" token sign --secret-key "$tmp/issuer.secret" --footer "{\"kid\":\"$kid\"}" \
    "$(printf '{"iss":"keep","sub":"frank","aud":"keep","iat":"%s","exp":"%s","jti":"jexp%s","caps":["sandbox:read"]}' \
    "$(iso $((now - 600)))" "$(iso $((now - 300)))" "$RANDOM")")
code=$(curl -s -o /dev/null -w '%{http_code}' -H 'X-Request-Id: expired1' -H "Authorization: Bearer $expired" "$url/v1/sandboxes")
[ "$code" = 401 ] && ok "an expired token: 401" || bad "expired: $code"
audit_has 'e.get("client_request_id") == "expired1" and e["decision"] == "deny" and "status=401" in e["detail"] and "expire" in e["detail"].lower()' \
    "an expired token is a 401 deny naming the expiry"
ops=$(mint ops admin)
victim=$(mint frank $caps)
jti=$("$KEEP" token inspect "$victim" | sed -n 's/.*"jti":"\([^"]*\)".*/\1/p')
if [ -n "$jti" ]; then
	req "$ops" POST /v1/tokens/revoke "{\"jti\":\"$jti\"}"
	curl -s -o /dev/null -H 'X-Request-Id: revoked1' -H "Authorization: Bearer $victim" "$url/v1/sandboxes"
	audit_has 'e.get("client_request_id") == "revoked1" and e["decision"] == "deny" and "status=401" in e["detail"] and "revoked" in e["detail"].lower()' \
	    "a revoked token is a 401 deny"
else
	bad "could not read the jti of a minted token"
fi

# --- 403 from the token's capabilities.
reader=$(mint gina sandbox:read)
curl -s -o /dev/null -H 'X-Request-Id: nocap1' -H "Authorization: Bearer $reader" \
    -H 'Content-Type: application/json' -d '{"image":"toolbox"}' "$url/v1/sandboxes"
audit_has 'e.get("client_request_id") == "nocap1" and e["decision"] == "deny" and e["rule"] == "token caps" and "status=403" in e["detail"]' \
    "a capability the token lacks is a 403 deny citing the token"

# --- POST /v1/tokens, allowed and refused.
curl -s -o /dev/null -H 'X-Request-Id: tok-ok' -H "Authorization: Bearer $good" \
    -H 'Content-Type: application/json' -d '{"caps":["sandbox:read"],"ttl":60}' "$url/v1/tokens"
audit_has 'e.get("client_request_id") == "tok-ok" and e["action"] == "token.attenuate" and e["detail"].startswith("allowed")' \
    "a token minted by POST /v1/tokens"
curl -s -o /dev/null -H 'X-Request-Id: tok-no' -H "Authorization: Bearer $reader" \
    -H 'Content-Type: application/json' -d '{"caps":["admin"]}' "$url/v1/tokens"
audit_has 'e.get("client_request_id") == "tok-no" and e["action"] == "token.attenuate" and e["decision"] == "deny"' \
    "a token refused by POST /v1/tokens"

# --- 423: ivy writes without her lock.
ivy=$(mint ivy $caps)
req "$ivy" POST /v1/sandboxes '{"image":"toolbox"}'
sid=$(jget "$body" '["id"]')
code=$(curl -s -o /dev/null -w '%{http_code}' -X PUT -H 'X-Request-Id: nolock1' -H "Authorization: Bearer $ivy" \
    -H 'Content-Type: application/json' -d '{"A":"1"}' "$url/v1/sandboxes/$sid/env")
[ "$code" = 423 ] && ok "a write without the lock: 423" || bad "lock: $code"
audit_has 'e.get("client_request_id") == "nolock1" and e["decision"] == "deny" and "reason=lock" in e["detail"] and "status=423" in e["detail"]' \
    "the 423 is a deny with reason lock"

# --- rate: carol's third read in a minute.
carol=$(mint carol $caps)
for i in 1 2 3; do
	code=$(curl -s -o /dev/null -w '%{http_code}' -H "X-Request-Id: rate$i" -H "Authorization: Bearer $carol" "$url/v1/sandboxes")
done
[ "$code" = 429 ] && ok "the third read: 429" || bad "rate: $code"
audit_has 'e.get("client_request_id") == "rate3" and e["decision"] == "deny" and "reason=rate" in e["detail"] and "status=429" in e["detail"]' \
    "the rate-limit refusal says rate, 429"

# --- concurrency: erin runs one long program; the second is refused.
erin=$(mint erin $caps)
req "$erin" POST /v1/sandboxes '{"image":"python"}'
esid=$(jget "$body" '["id"]')
curl -s -o /dev/null -H "Authorization: Bearer $erin" -H 'Content-Type: application/json' \
    -d '{"code":"import time\ntime.sleep(5)","language":"python"}' "$url/v1/sandboxes/$esid/execute" &
slow=$!
# Once it runs (processes lists foreground runs too), a second is refused.
for _ in $(seq 100); do
	req "$erin" GET "/v1/sandboxes/$esid/processes"
	[[ $body == *'"status":"running"'* ]] && break; sleep 0.1
done
code=$(curl -s -o /dev/null -w '%{http_code}' -H 'X-Request-Id: busy1' -H "Authorization: Bearer $erin" \
    -H 'Content-Type: application/json' -d '{"code":"1","language":"python"}' "$url/v1/sandboxes/$esid/execute")
[ "$code" = 429 ] && ok "a second run at once: 429" || bad "concurrent: $code"
audit_has 'e.get("client_request_id") == "busy1" and e["decision"] == "deny" and "reason=concurrent" in e["detail"] and e["rule"] != "default deny"' \
    "the concurrency refusal says concurrent, not default deny"
wait "$slow"

# --- a reload whose policy does not compile.
echo 'agent "broken" { allow nonsense:cap }' >"$tmp/policy/zz-broken.policy"
kill -HUP "$pid"
audit_has 'e["action"] == "policy.load" and e["decision"] == "deny"' \
    "a refused policy reload"
req "$good" GET /v1/sandboxes
[ "$code" = 200 ] && ok "the old policy stays in force" || bad "after a refused reload: $code $body"

# --- GET /v1/audit shows the reason too.
opsa=$(mint ops admin,audit:read)
req "$opsa" GET "/v1/audit?limit=100"
[[ $body == *'"detail":'* ]] && ok "GET /v1/audit has detail" || bad "GET /v1/audit: $code ${body:0:200}"
keepd_finish
