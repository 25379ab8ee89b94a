#!/usr/bin/env bash
# The audit log holds the answer the client was given (issue 31, finding
# 7): a request the policy allowed and that was then refused (another
# tenant's sandbox: 404; a bad secret body: 400) has, after its allow
# entry, a deny entry of the same request id with rule "outcome" and the
# status. A request that succeeded has none.
KEEPD_NO_GUEST=1
source "$(dirname "$0")/../lib/keepd.sh"

cat >"$tmp/test.policy" <<'EOP'
agent "alice" { allow sandbox:read, sandbox:write }
agent "bob" { allow sandbox:read, sandbox:write }
agent "ops" { allow admin, secret:write, secret:read }
EOP
KEEPD_IMAGES=hello keepd_start "$tmp/test.policy"
alice=$(mint alice sandbox:read,sandbox:write)
bob=$(mint bob sandbox:read,sandbox:write)
ops=$(mint ops admin,secret:write,secret:read)

# hreq TOKEN METHOD PATH [BODY]: code, and rid (the reply's X-Request-Id).
hreq() {
	code=$(curl -s -o "$tmp/b" -D "$tmp/h" -w '%{http_code}' -X "$2" \
	    -H "Authorization: Bearer $1" ${4:+-H 'Content-Type: application/json' -d "$4"} "$url$3")
	rid=$(sed -n 's/^X-Request-Id: \([^[:space:]]*\).*/\1/Ip' "$tmp/h")
}
hreq "$alice" POST /v1/sandboxes '{"image":"hello"}'
[ "$code" = 201 ] || bad "create: $code $(cat "$tmp/b")"
ok_rid=$rid
sid=$(jget "$(cat "$tmp/b")" '["id"]')
hreq "$bob" DELETE "/v1/sandboxes/$sid"
[ "$code" = 404 ] && ok "another tenant's delete: 404" || bad "bob delete: $code"
del_rid=$rid
hreq "$ops" PUT /v1/secrets/API_KEY '{"value":5}'
[ "$code" = 400 ] && ok "a bad secret body: 400" || bad "secret: $code $(cat "$tmp/b")"
sec_rid=$rid

kill -TERM "$pid"; wait "$pid" 2>/dev/null; pid=
"$KEEP" audit export --data "$tmp/state" --since 1h >"$tmp/audit.jsonl"
decisions() { # the decisions and details of request id $1
	python3 -c 'import json,sys
for l in open(sys.argv[1]):
    e = json.loads(l)
    if e["request_id"] == sys.argv[2] and e["decision"] != "info":
        print(e["decision"], e["rule"], e["detail"])' "$tmp/audit.jsonl" "$1"
}
got=$(decisions "$del_rid")
[[ $got == *"deny outcome reason=NOT_FOUND status=404"* ]] &&
    ok "the 404 delete: $(tr '\n' ';' <<<"$got")" || bad "404 delete entries: $got"
got=$(decisions "$sec_rid")
[[ $got == *"deny outcome reason=BAD_REQUEST status=400"* ]] &&
    ok "the 400 secret: $(tr '\n' ';' <<<"$got")" || bad "400 secret entries: $got"
got=$(decisions "$ok_rid")
[[ $got != *deny* ]] && ok "the 201 create has no deny" || bad "create entries: $got"
[ $fails -eq 0 ] || { echo "--- keepd log"; tail -n 40 "$tmp/log"; }
echo "audit_outcome: $fails failures"
[ $fails -eq 0 ]
