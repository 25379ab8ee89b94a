#!/usr/bin/env bash
# Upgrade (issue 16): keepd opens a store written by an earlier release's
# format (tests/fixtures/store-vN/, made by tests/fixtures/make-store-vN.sh
# with that release) and carries on: the schema is accepted (or migrated,
# docs/store.md "Format versions"), the old records are served, new audit
# entries chain onto the old ones and the whole chain verifies.
# It boots no guest: it runs where no guest platform does.
KEEPD_NO_GUEST=1
source "$(dirname "$0")/../lib/keepd.sh"

for fixture in tests/fixtures/store-v*/; do
	fixture=${fixture%/}
	v=${fixture##*/store-}
	pid=; rm -rf "$tmp/state" "$tmp/policy"
	mkdir -p "$tmp/state/db"
	cp "$fixture/data.mdb" "$tmp/state/db/data.mdb"
	chown -R _keep: "$tmp/state/db"; chmod 700 "$tmp/state/db"
	sbx=$(cat "$fixture/SANDBOX")
	rm -rf "$tmp/old" && mkdir "$tmp/old" && cp "$fixture/data.mdb" "$tmp/old/"
	out=$("$KEEP" audit verify --data "$tmp/old" 2>&1) && ok "$v: the fixture verifies: $out" ||
	    bad "$v: fixture: $out"
	cat >"$tmp/test.policy" <<'EOP'
role runner {
	allow sandbox:read, sandbox:write, exec, audit:read
	exec "hello"
}
agent "fixture" : runner
EOP
	keepd_start "$tmp/test.policy"
	grep -q "store cannot open" "$tmp/log" && bad "$v: keepd's store refused the fixture" ||
	    ok "$v: keepd's store opened the $v store"
	t=$(mint fixture sandbox:read,sandbox:write,exec,audit:read)
	req "$t" GET "/v1/audit?limit=100"
	echo "$body" | grep -q "$sbx" && ok "$v: the old audit entries are served" || bad "$v: audit: $code $body"
	req "$t" POST /v1/sandboxes '{"image":"hello"}'
	[ "$code" = 200 ] || [ "$code" = 201 ] && ok "$v: a new sandbox is stored beside the old records" ||
	    bad "$v: create: $code $body"
	kill -TERM "$pid"; wait "$pid" 2>/dev/null; pid=
	out=$("$KEEP" audit verify --data "$tmp/state" 2>&1)
	n_old=$("$KEEP" audit verify --data "$tmp/old" | sed -n 's/.*: \([0-9]*\) entries.*/\1/p')
	n_new=$(echo "$out" | sed -n 's/.*: \([0-9]*\) entries.*/\1/p')
	[ -n "$n_new" ] && [ "$n_new" -gt "$n_old" ] && ok "$v: new entries chain onto the old: $out" ||
	    bad "$v: after the upgrade: $out"
done
# keepd was stopped above (keepd_finish would call that a death).
echo "$(basename "$0" .sh): $fails failures"
[ $fails -eq 0 ]
