#!/usr/bin/env bash
# keep store backup / restore (issue 16): a compacted copy of the LMDB
# environment taken while keepd runs and writes, whose audit chain
# verifies; restore refused while keepd runs; after a stop, restore puts
# the backup back (what was written after the backup is gone, the store
# it replaced is kept aside) and keepd serves from it.
# It boots no guest: it runs where no guest platform does.
KEEPD_NO_GUEST=1
source "$(dirname "$0")/../lib/keepd.sh"

cat >"$tmp/test.policy" <<'EOP'
role runner {
	allow sandbox:read, sandbox:write, exec
	exec "hello"
}
agent "alice" : runner
EOP
keepd_start "$tmp/test.policy"
alice=$(mint alice sandbox:read,sandbox:write,exec)
req "$alice" POST /v1/sandboxes '{"image":"hello"}'
first=$(jget "$body" '["id"]' 2>/dev/null)
[ -n "$first" ] && ok "sandbox $first created" || bad "create: $code $body"

# Writers keep going while the backup is taken.
( for _ in $(seq 40); do curl -s -o /dev/null -H "Authorization: Bearer $alice" "$url/v1/sandboxes"; done ) &
writer=$!
out=$("$KEEP" store backup --data "$tmp/state" "$tmp/backup" 2>&1); rc=$?
wait $writer
echo "$out" | sed 's/^/  /'
[ $rc = 0 ] && [ -s "$tmp/backup/data.mdb" ] && ok "backup taken while keepd runs" || bad "backup: $rc $out"
out=$("$KEEP" audit verify --data "$tmp/backup" 2>&1) && ok "keep audit verify on the backup: $out" ||
    bad "audit verify on the backup: $out"
out=$("$KEEP" store backup --data "$tmp/state" "$tmp/backup" 2>&1) &&
    bad "a second backup over the first: $out" || ok "a backup never overwrites one: $out"

req "$alice" POST /v1/sandboxes '{"image":"hello"}'
second=$(jget "$body" '["id"]' 2>/dev/null)
[ -n "$second" ] && ok "sandbox $second created after the backup" || bad "create 2: $code $body"

out=$("$KEEP" store restore --data "$tmp/state" "$tmp/backup" 2>&1) &&
    bad "restore while keepd runs: $out" || ok "restore refused while keepd runs: $out"

kill -TERM "$pid"; wait "$pid" 2>/dev/null
out=$("$KEEP" store restore --data "$tmp/state" "$tmp/backup" 2>&1); rc=$?
echo "$out" | sed 's/^/  /'
[ $rc = 0 ] && ok "restore with keepd stopped" || bad "restore: $rc $out"
ls -d "$tmp"/state/db.before-restore-* >/dev/null 2>&1 && ok "the replaced store is kept aside" ||
    bad "no db.before-restore-*"
[ "$(stat -c %U:%a "$tmp/state/db")" = "_keep:700" ] && ok "restored db/ is _keep 0700" ||
    bad "db/ is $(stat -c %U:%a "$tmp/state/db")"
out=$("$KEEP" audit verify --data "$tmp/state" 2>&1) && ok "keep audit verify on the restored store: $out" ||
    bad "audit verify on the restored store: $out"

keepd_launch
# The vmm reads its sandboxes back as it starts (503 until it has).
for _ in $(seq 100); do
	req "$alice" GET "/v1/sandboxes/$first"; [ "$code" != 503 ] && break; sleep 0.1
done
[ "$code" = 200 ] && ok "the backed-up sandbox is served after restore" || bad "get first: $code $body"
req "$alice" GET "/v1/sandboxes/$second"
[ "$code" = 404 ] && ok "the sandbox made after the backup is gone" || bad "get second: $code $body"
out=$("$KEEP" audit verify --data "$tmp/state" 2>&1) && ok "audit verify after keepd appended: $out" ||
    bad "audit verify after restart: $out"
keepd_finish
