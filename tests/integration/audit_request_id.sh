#!/usr/bin/env bash
# A client's X-Request-Id never becomes the server's request id (issue
# 31, finding 8): two tenants sending the same X-Request-Id get distinct
# server ids (X-Request-Id in the reply, request_id in the audit log),
# their own id kept apart (X-Client-Request-Id, client_request_id), so no
# one can join entries to another's or name another's run record.
KEEPD_NO_GUEST=1
source "$(dirname "$0")/../lib/keepd.sh"

cat >"$tmp/test.policy" <<'EOP'
agent "alice" { allow sandbox:read }
agent "bob" { allow sandbox:read }
agent "ops" { allow admin, audit:read }
EOP
KEEPD_IMAGES=hello keepd_start "$tmp/test.policy"
alice=$(mint alice sandbox:read)
bob=$(mint bob sandbox:read)
ops=$(mint ops admin,audit:read)
rid() { # rid TOKEN: GET /v1/sandboxes with X-Request-Id same1; the reply's ids
	curl -s -o /dev/null -D - -H 'X-Request-Id: same1' -H "Authorization: Bearer $1" \
	    "$url/v1/sandboxes" | tr -d '\r' | sed -n 's/^X-\(Client-\)\{0,1\}Request-Id: //Ip' | tr '\n' ' '
}
a=$(rid "$alice"); b=$(rid "$bob")
set -- $a; a_srv=$1 a_cli=${2:-}
set -- $b; b_srv=$1 b_cli=${2:-}
[ "$a_srv" != same1 ] && [ "$b_srv" != same1 ] && [ "$a_srv" != "$b_srv" ] &&
    ok "the server's ids are its own and distinct ($a_srv, $b_srv)" || bad "server ids: '$a' '$b'"
[ "$a_cli" = same1 ] && [ "$b_cli" = same1 ] && ok "X-Client-Request-Id: same1" || bad "client ids: '$a' '$b'"
for _ in $(seq 50); do
	req "$ops" GET '/v1/audit?limit=100'
	[[ $body == *"$b_srv"* ]] && break; sleep 0.1
done
python3 - "$body" "$a_srv" "$b_srv" <<'PY' && ok "the audit log: distinct request_id, client_request_id same1" || bad "audit: $body"
import json, sys
es = json.loads(sys.argv[1])["entries"]
mine = [e for e in es if e.get("client_request_id") == "same1"]
ids = {e["request_id"] for e in mine}
assert ids == {sys.argv[2], sys.argv[3]}, ids
assert not any(e["request_id"] == "same1" for e in es)
assert {e["principal"] for e in mine} == {"alice", "bob"}
PY
keepd_finish
