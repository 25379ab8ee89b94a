#!/usr/bin/env bash
# A token that cannot derive the new sandbox's token is refused before
# anything is made (issue 31, finding 2): a sandbox-scoped token (the
# auth_token a sandbox hands its code) gets 403 from POST /v1/sandboxes,
# POST /v1/sandboxes/{id}/fork and POST /e2b/v2/sandboxes, and a token at
# the derivation depth limit 400; each leaves no sandbox in the list, in
# the store, and no sandbox.create or sandbox.fork entry in the audit log.
KEEPD_NO_GUEST=1
source "$(dirname "$0")/../lib/keepd.sh"

cat >"$tmp/test.policy" <<'EOP'
agent "dev" { allow sandbox:read, sandbox:write }
EOP
KEEPD_IMAGES=hello keepd_start "$tmp/test.policy"
dev=$(mint dev sandbox:read,sandbox:write)
req "$dev" POST /v1/sandboxes '{"image":"hello"}'
[ "$code" = 201 ] || { bad "create: $code $body"; keepd_finish; exit 1; }
sid=$(jget "$body" '["id"]')
scoped=$(jget "$body" '["auth_token"]')

req "$scoped" POST /v1/sandboxes '{"image":"hello"}'
[ "$code" = 403 ] && ok "a scoped token's create: 403" || bad "scoped create: $code $body"
req "$scoped" POST "/v1/sandboxes/$sid/fork" '{}'
[ "$code" = 403 ] && ok "a scoped token's fork: 403" || bad "scoped fork: $code $body"
code=$(curl -s -o "$tmp/b" -w '%{http_code}' -H "X-API-KEY: $scoped" \
    -H 'Content-Type: application/json' -d '{"templateID":"hello"}' "$url/e2b/v2/sandboxes")
[ "$code" = 403 ] && ok "a scoped token's E2B create: 403" || bad "scoped E2B create: $code $(cat "$tmp/b")"

# Attenuate until the chain is full: that token derives nothing.
deep=$dev
for i in $(seq 12); do
	req "$deep" POST /v1/tokens '{"caps":["sandbox:read","sandbox:write"]}'
	[ "$code" = 201 ] || [ "$code" = 200 ] || break
	deep=$(jget "$body" '["token"]')
done
[ "$code" = 400 ] && ok "attenuation stops at the depth limit after $((i - 1))" || bad "attenuate: $code $body"
req "$deep" POST /v1/sandboxes '{"image":"hello"}'
[ "$code" = 400 ] && ok "a token at the depth limit: create 400" || bad "deep create: $code $body"

req "$dev" GET /v1/sandboxes
n=$(python3 -c 'import json,sys; d=json.loads(sys.argv[1]); s=d["sandboxes"] if isinstance(d,dict) else d; print(len(s))' "$body")
[ "$n" = 1 ] && ok "one sandbox listed: the refused calls made none" || bad "$n sandboxes listed: $body"
kill -TERM "$pid"; wait "$pid" 2>/dev/null; pid=
"$KEEP" audit export --data "$tmp/state" --since 1h >"$tmp/audit.jsonl"
n=$(grep -cE '"action":"sandbox\.(create|fork)"' "$tmp/audit.jsonl")
[ "$n" = 1 ] && ok "one sandbox.create in the audit log" || bad "$n sandbox.create/fork entries"
n=$(python3 - "$tmp/state" <<'EOF'
import subprocess, sys
out = subprocess.run(["mdb_dump", "-s", "sandboxes", sys.argv[1] + "/db"],
                     capture_output=True, text=True).stdout
# data lines after HEADER=END alternate key, value
lines = out.split("HEADER=END\n", 1)[-1].splitlines()
print(sum(1 for l in lines if l.startswith(" ")) // 2)
EOF
)
[ "$n" = 1 ] && ok "one sandbox in the store" || bad "$n sandboxes in the store"
[ $fails -eq 0 ] || { echo "--- keepd log"; tail -n 40 "$tmp/log"; }
echo "api_scoped_create: $fails failures"
[ $fails -eq 0 ]
