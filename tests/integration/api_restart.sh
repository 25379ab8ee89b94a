#!/usr/bin/env bash
# What outlives a restart: sandboxes with their environment and
# workspace files survive a restart of keepd and a kill -9 of the vmm;
# a deleted sandbox stays deleted; runs are recorded.
source "$(dirname "$0")/../lib/keepd.sh"

cat >"$tmp/test.policy" <<'EOP'
agent "alice" {
	allow sandbox:read, sandbox:write, exec, artifact:read, artifact:write
	exec "cat", "echo"
}
agent "root" { allow admin, sandbox:read }
EOP
keepd_start "$tmp/test.policy"
alice=$(mint alice sandbox:read,sandbox:write,exec,artifact:read,artifact:write 30m)

req "$alice" POST /v1/sandboxes '{"image":"toolbox","env":{"COLOR":"blue"},"metadata":{"team":"red"}}'
[ "$code" = 201 ] || bad "create: $code $body"
sbx=$(jget "$body" '["id"]'); stok=$(jget "$body" '["auth_token"]')
req "$alice" POST /v1/sandboxes '{"image":"toolbox"}'
gone=$(jget "$body" '["id"]')
req "$alice" PATCH "/v1/sandboxes/$sbx/env" '{"env":{"SHAPE":"round","GONE":"soon"}}'
[ "$code" = 200 ] || [ "$code" = 204 ] || bad "env patch: $code $body"
req "$alice" DELETE "/v1/sandboxes/$sbx/env?key=GONE"
req "$alice" GET "/v1/sandboxes/$sbx/env"
[[ $body != *GONE* ]] || bad "env delete: $code $body"
printf 'kept\n' >"$tmp/f"
curl -s -o /dev/null -H "Authorization: Bearer $alice" --data-binary @"$tmp/f" \
    "$url/v1/sandboxes/$sbx/files/write?path=/notes.txt"
req "$alice" DELETE "/v1/sandboxes/$gone"
[ "$code" = 204 ] || [ "$code" = 200 ] || bad "delete: $code $body"

check() { # what: the sandbox, its env and its file are all there
	req "$alice" GET "/v1/sandboxes/$sbx"
	[ "$code" = 200 ] && ok "$1: the sandbox is there" || bad "$1: get: $code $body"
	req "$alice" POST "/v1/sandboxes/$sbx/commands/run" '{"cmd":"cat","args":["notes.txt"]}'
	[ "$(jget "$body" '["stdout"]' 2>/dev/null)" = kept ] && ok "$1: its workspace file is there" ||
	    bad "$1: file: $code $body"
	req "$alice" GET "/v1/sandboxes/$sbx/env"
	[[ $body == *'"COLOR":"blue"'* && $body == *'"SHAPE":"round"'* && $body != *GONE* ]] &&
	    ok "$1: its environment is there" || bad "$1: env: $code $body"
	req "$alice" GET "/v1/sandboxes/$gone"
	[ "$code" = 404 ] && ok "$1: the deleted one stays deleted" || bad "$1: deleted: $code $body"
}

# Revocation: the admin revokes one of alice's tokens by its jti.
victim=$(mint alice sandbox:read 30m)
jti=$("$KEEP" token inspect "$victim" | sed -n 's/.*"jti":"\([^"]*\)".*/\1/p')
root=$(mint root admin,sandbox:read 30m)
req "$victim" GET /v1/sandboxes
[ "$code" = 200 ] || bad "victim before: $code $body"
req "$alice" POST /v1/tokens/revoke "{\"jti\":\"$jti\"}"
[ "$code" = 403 ] && ok "only admin revokes" || bad "revoke by alice: $code $body"
req "$root" POST /v1/tokens/revoke "{\"jti\":\"$jti\"}"
[ "$code" = 200 ] && ok "admin revokes $jti" || bad "revoke: $code $body"
req "$victim" GET /v1/sandboxes
[ "$code" = 401 ] && [[ $body == *revoked* ]] && ok "the revoked token: 401 ($body)" || bad "revoked: $code $body"

# Idempotency keys outlive a restart: a create answered at once, and an
# execute answered later (a deferred reply).
ikey() { curl -s -o - -w '\n%{http_code}' -H "Authorization: Bearer $alice" \
    -H 'Content-Type: application/json' -H "Idempotency-Key: $1" -d "$3" "$url$2"; }
c1=$(ikey create-1 /v1/sandboxes '{"image":"toolbox","metadata":{"k":"1"}}')
[[ $c1 == *$'\n201' ]] || bad "idempotent create: $c1"
e1=$(ikey exec-1 "/v1/sandboxes/$sbx/commands/run" '{"cmd":"echo","args":["once"]}')
[[ $e1 == *$'\n200' ]] || bad "idempotent run: $e1"
# No pause before the restart: what the front sent the store before the
# stop is written (proc_drain), however slow the machine.

# A new end (POST .../timeout) is the store's too: the restarted vmm
# keeps it, metadata and all.
req "$alice" POST "/v1/sandboxes/$sbx/timeout" '{"ttl_s":86400}'
end1=$(jget "$body" '["expires_at"]')
[ "$code" = 200 ] && [ "$(jget "$body" '["metadata"]')" = "{'team': 'red'}" ] &&
    python3 -c "import datetime,sys; e=datetime.datetime.fromisoformat(sys.argv[1].replace('Z','+00:00')); d=(e-datetime.datetime.now(datetime.timezone.utc)).total_seconds(); sys.exit(0 if 86000<d<=86400 else 1)" "$end1" &&
    ok "POST .../timeout moves the sandbox's end to a day from now ($end1)" ||
    bad "timeout: $code $body"
req "$alice" POST "/v1/sandboxes/$sbx/timeout" '{"ttl_s":0}'
[ "$code" = 400 ] && ok "ttl_s 0: 400" || bad "ttl_s 0: $code $body"
req "$alice" POST "/v1/sandboxes/$gone/timeout" '{"ttl_s":60}'
[ "$code" = 404 ] && ok "the timeout of a deleted sandbox: 404" || bad "timeout gone: $code $body"

wk=$(cat "$tmp/state/keys/webhook.key" 2>/dev/null)
keepd_restart
[ -n "$wk" ] && [ "$(stat -c %a "$tmp/state/keys/webhook.key")" = 600 ] &&
    [ "$(cat "$tmp/state/keys/webhook.key")" = "$wk" ] &&
    ok "the webhook master key is kept (0600) across restarts" || bad "webhook key: $wk"
req "$victim" GET /v1/sandboxes
[ "$code" = 401 ] && ok "still revoked after a restart" || bad "revoked after restart: $code $body"
# The vmm reads the store back as it starts; give it a moment.
for _ in $(seq 50); do
	req "$alice" GET "/v1/sandboxes/$sbx"; [ "$code" = 200 ] && break; sleep 0.1
done
check "after a restart of keepd"
req "$alice" GET "/v1/sandboxes/$sbx"
[ "$(jget "$body" '["expires_at"]')" = "$end1" ] &&
    ok "after a restart, the sandbox ends when its timeout said" ||
    bad "end after restart: $(jget "$body" '["expires_at"]') vs $end1"
req "$stok" GET "/v1/sandboxes/$sbx"
[ "$code" = 200 ] && ok "the sandbox token still works" || bad "sandbox token: $code $body"
c2=$(ikey create-1 /v1/sandboxes '{"image":"toolbox","metadata":{"k":"1"}}')
[ "$c2" = "$c1" ] && ok "after a restart, the same Idempotency-Key and body: the first sandbox again" ||
    bad "idempotent create after restart: $c1 / $c2"
isbx=$(jget "${c1%$'\n'*}" '["id"]')
req "$alice" GET "/v1/sandboxes/$isbx"
[ "$code" = 200 ] && [ "$(jget "$body" '["metadata"]')" = "{'k': '1'}" ] &&
    ok "after a restart, a sandbox's metadata is answered (from its store record)" || bad "metadata after restart: $code $body"
c3=$(ikey create-1 /v1/sandboxes '{"image":"toolbox","metadata":{"k":"2"}}')
[[ $c3 == *$'\n409' ]] && ok "after a restart, the same key with another body: 409" || bad "idem conflict: $c3"
req "$alice" GET "/v1/sandboxes/$sbx/system"; runs0=$(jget "$body" '["runs"]' 2>/dev/null)
e2=$(ikey exec-1 "/v1/sandboxes/$sbx/commands/run" '{"cmd":"echo","args":["once"]}')
req "$alice" GET "/v1/sandboxes/$sbx/system"; runs1=$(jget "$body" '["runs"]' 2>/dev/null)
[ "$e2" = "$e1" ] && [ -n "$runs0" ] && [ "$runs0" = "$runs1" ] && ok "after a restart, a deferred reply's key: the first run's result" ||
    bad "idempotent run after restart: $e1 / $e2 (runs $runs0 -> $runs1)"

vmm=$(pgrep -P "$pid" -f '^keepd: vmm' | head -n 1)
kill -9 "$vmm"
for _ in $(seq 100); do
	req "$alice" GET "/v1/sandboxes/$sbx"; [ "$code" = 200 ] && break; sleep 0.1
done
check "after kill -9 of the vmm"
[ -z "$(ls "$tmp/state/workspaces" | grep -x "$gone")" ] && ok "the deleted sandbox's workspace is gone" ||
    bad "workspace of the deleted sandbox left"

"$KEEP" audit tail -n 1000 --action run --data "$tmp/state/db" | grep -q "$sbx cat" &&
    ok "runs are in the audit log" || bad "run audit"
keepd_finish
