#!/usr/bin/env bash
# The appliance end to end: a real keepd (all six processes, as root with
# chroots and seccomp), real tokens, the real policy, real KVM guests.
# alice creates sandboxes and runs code in them; her sandbox token works
# for her sandbox only; bob may only read; a forged token is refused; a
# runaway program is stopped by its time limit; exec outside the policy's
# allowlist is refused before boot.
set -u
cd "$(dirname "$0")/../.."
B=${B:-build}; KEEP=$B/bin/keep; KEEPD=$B/bin/keepd
if [ ! -e /dev/kvm ]; then echo "SKIP: no /dev/kvm"; exit 77; fi
if [ "$(id -u)" -ne 0 ]; then echo "SKIP: needs root"; exit 77; fi
getent passwd _keep >/dev/null || useradd --system --no-create-home \
    --home-dir /nonexistent --shell /usr/sbin/nologin _keep || exit 1
tmp=$(mktemp -d); pid=
cleanup() {
	[ -n "${KEEP_TEST_KEEP:-}" ] && cp -r "$tmp" /tmp/e2e-keep
	[ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
fails=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fails=$((fails+1)); }

mkdir -p "$tmp/state/images" "$tmp/policy"
cp "$B"/images/*.img "$tmp/state/images/"
"$KEEP" key generate --out "$tmp" --name issuer >/dev/null
cat >"$tmp/policy/test.policy" <<'EOP'
role runner {
	allow sandbox:read, sandbox:write, exec, artifact:read, artifact:write
	exec "python", "js", "wc", "sha256sum"
	timeout 5s
	output 1M
	memory 256M
}
role viewer {
	allow sandbox:read
}
agent "alice" : runner
agent "bob" : viewer
EOP
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat >"$tmp/keepd.yaml" <<EOC
listen:
  address: 127.0.0.1
  port: $port
state_dir: $tmp/state
policy_dir: $tmp/policy
user: _keep
tokens:
  issuer_keys: [ $tmp/issuer.public ]
  max_ttl: 1h
images:
  trusted_keys: [ $PWD/$B/keys/dev.public ]
EOC
"$KEEPD" -d -f "$tmp/keepd.yaml" >"$tmp/log" 2>&1 &
pid=$!
for _ in $(seq 100); do grep -q "running: listening" "$tmp/log" && break; sleep 0.1; done
sleep 0.3
url=http://127.0.0.1:$port
mint() { "$KEEP" token mint --key "$tmp/issuer.secret" --sub "$1" --caps "$2" --ttl 10m; }
alice=$(mint alice sandbox:read,sandbox:write,exec,artifact:read,artifact:write)
bob=$(mint bob sandbox:read,sandbox:write,exec)
# req TOKEN METHOD PATH [BODY] -> sets code and body
req() {
	local t=$1 m=$2 p=$3 d=${4:-}
	body=$(curl -s -o - -w '\n%{http_code}' -X "$m" -H "Authorization: Bearer $t" \
	    ${d:+-H 'Content-Type: application/json' -d "$d"} "$url$p")
	code=${body##*$'\n'}; body=${body%$'\n'*}
}
jget() { python3 -c 'import json,sys; print(json.loads(sys.argv[1])'"$2"')' "$1"; }

req "$alice" POST /v1/sandboxes '{"image":"python","env":{"GREETING":"hi"}}'
[ "$code" = 201 ] && ok "alice creates a python sandbox" || bad "create: $code $body"
sbx=$(jget "$body" '["id"]'); stok=$(jget "$body" '["auth_token"]')

req "$alice" POST "/v1/sandboxes/$sbx/execute" '{"code":"import os, json, hashlib\nprint(json.dumps([6*7, os.environ.get(\"GREETING\"), hashlib.sha256(b\"keep\").hexdigest()[:8]]))","language":"python"}'
want=$(python3 -c 'import hashlib,json; print(json.dumps([42, "hi", hashlib.sha256(b"keep").hexdigest()[:8]]))')
[ "$code" = 200 ] && [ "$(jget "$body" '["stdout"]')" = "$want" ] &&
    [ "$(jget "$body" '["exit_code"]')" = 0 ] && ok "python runs in the sandbox" || bad "execute: $code $body"

# The sandbox's environment: merged, replaced, deleted; runs see it.
req "$alice" PATCH "/v1/sandboxes/$sbx/env" '{"env":{"COLOR":"blue","GREETING":"hello"}}'
req "$alice" GET "/v1/sandboxes/$sbx/env"
[ "$code" = 200 ] && [ "$(jget "$body" '["env"]["GREETING"]')" = hello ] && [ "$(jget "$body" '["env"]["COLOR"]')" = blue ] && ok "env: PATCH merges" || bad "env patch: $code $body"
req "$alice" DELETE "/v1/sandboxes/$sbx/env?key=COLOR"
req "$alice" POST "/v1/sandboxes/$sbx/execute" '{"code":"import os; print(os.environ.get(\"GREETING\"), os.environ.get(\"COLOR\"))","language":"python"}'
[ "$(jget "$body" '["stdout"]')" = "hello None" ] && ok "env: runs see the sandbox's variables" || bad "env in run: $body"

req "$stok" POST "/v1/sandboxes/$sbx/execute" '{"code":"import sys; sys.exit(3)","language":"python"}'
[ "$code" = 200 ] && [ "$(jget "$body" '["exit_code"]')" = 3 ] && ok "the sandbox token runs code there; exit code carried" || bad "sandbox token: $code $body"

req "$alice" POST "/v1/sandboxes/$sbx/execute" '{"code":"while True: pass","language":"python","timeout":500}'
[ "$code" = 200 ] && [ "$(jget "$body" '["reason"]')" = timeout ] && ok "a runaway run is stopped at its time limit" || bad "timeout: $code $body"

req "$alice" POST /v1/sandboxes '{"image":"toolbox"}'
tb=$(jget "$body" '["id"]')
req "$alice" POST "/v1/sandboxes/$tb/commands/run" '{"cmd":"wc","args":["-c"],"stdin":"twelve bytes"}'
[ "$code" = 200 ] && [ "$(jget "$body" '["stdout"]' | tr -d ' ')" = 12 ] && ok "commands/run with stdin" || bad "commands/run: $code $body"
req "$alice" POST "/v1/sandboxes/$tb/commands/run" '{"cmd":"cat","args":["/etc/passwd"]}'
[ "$code" = 403 ] && ok "exec outside the allowlist refused: $(jget "$body" '["error"]["message"]')" || bad "exec allowlist: $code $body"

# Files: write into the toolbox sandbox's workspace, run on it, read back.
printf 'b\na\nc\n' >"$tmp/upload"
code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $alice" \
    --data-binary @"$tmp/upload" "$url/v1/sandboxes/$tb/files/write?path=/data/in.txt")
[ "$code" = 404 ] && ok "write into a missing directory: 404" || bad "write no dir: $code"
req "$alice" POST "/v1/sandboxes/$tb/files/mkdir?path=/data"
[ "$code" = 200 ] || [ "$code" = 201 ] || [ "$code" = 204 ] && ok "mkdir" || bad "mkdir: $code $body"
code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $alice" \
    --data-binary @"$tmp/upload" "$url/v1/sandboxes/$tb/files/write?path=/data/in.txt")
[ "$code" = 200 ] && ok "files/write" || bad "files/write: $code"
req "$alice" POST "/v1/sandboxes/$tb/commands/run" '{"cmd":"sha256sum","args":["data/in.txt"]}'
want=$(cd "$tmp" && sha256sum upload | cut -d' ' -f1)
[[ "$(jget "$body" '["stdout"]')" == "$want  data/in.txt" ]] && ok "the guest sees the uploaded file" || bad "sha256sum: $body"
req "$alice" GET "/v1/sandboxes/$tb/files/read?path=data/in.txt"
[ "$code" = 200 ] && [ "$body" = "$(cat "$tmp/upload")"$'\n' ] && ok "files/read" || bad "files/read: $code $body"
req "$alice" GET "/v1/sandboxes/$tb/files/list?path=/data"
[ "$code" = 200 ] && [[ $body == *in.txt* ]] && ok "files/list" || bad "files/list: $code $body"
req "$alice" GET "/v1/sandboxes/$tb/files/read?path=../../../../etc/passwd"
[ "$code" = 404 ] && ok "../ stays in the workspace" || bad "dotdot: $code $body"
req "$alice" DELETE "/v1/sandboxes/$tb/files/remove?path=/data/in.txt"
req "$alice" GET "/v1/sandboxes/$tb/files/exists?path=/data/in.txt"
[ "$code" = 200 ] && [[ $body == *false* ]] && ok "files/remove, files/exists" || bad "exists: $code $body"

req "$stok" GET "/v1/sandboxes/$tb"
[ "$code" = 404 ] && ok "a sandbox token does not reach another sandbox" || bad "scope: $code $body"
req "$bob" GET "/v1/sandboxes/$sbx"
[ "$code" = 404 ] && ok "bob cannot see alice's sandbox" || bad "bob get: $code $body"
req "$bob" POST /v1/sandboxes '{"image":"python"}'
[ "$code" = 403 ] && ok "bob may not create (policy): $(jget "$body" '["error"]["message"]')" || bad "bob create: $code $body"
req "$bob" POST "/v1/sandboxes/$sbx/execute" '{"code":"print(1)","language":"python"}'
[ "$code" = 403 ] && ok "bob may not exec (policy)" || bad "bob exec: $code $body"
req "x$alice" GET /v1/sandboxes
[ "$code" = 401 ] && ok "a forged token is refused" || bad "forged: $code $body"

req "$alice" GET /v1/sandboxes
[ "$code" = 200 ] && [ "$(jget "$body" '["sandboxes"].__len__()' 2>/dev/null || jget "$body" '["items"].__len__()')" = 2 ] && ok "alice lists her two sandboxes" || bad "list: $code $body"
req "$alice" DELETE "/v1/sandboxes/$sbx"
[ "$code" = 204 ] || [ "$code" = 200 ] && ok "delete" || bad "delete: $code $body"
req "$alice" GET "/v1/sandboxes/$sbx"
[ "$code" = 404 ] && ok "deleted is gone" || bad "after delete: $code $body"
[ -z "$(ls -A "$tmp/state/workspaces" | grep "$sbx")" ] && ok "its workspace is removed" || bad "workspace left behind"

# The audit log: every decision and lifecycle event, chained.
"$KEEP" audit verify --data "$tmp/state/db" >"$tmp/verify" 2>&1 && ok "the audit chain verifies" || bad "audit verify: $(cat "$tmp/verify")"
"$KEEP" audit tail -n 1000 --principal bob --data "$tmp/state/db" >"$tmp/bob.audit" 2>&1
grep -q "deny" "$tmp/bob.audit" && grep -q "sandbox:write" "$tmp/bob.audit" && ok "bob's denied create is in the audit log" || bad "bob audit: $(cat "$tmp/bob.audit")"
"$KEEP" audit tail -n 1000 --action sandbox.delete --data "$tmp/state/db" >"$tmp/del.audit" 2>&1
grep -q "$sbx" "$tmp/del.audit" && ok "the delete is in the audit log" || bad "delete audit: $(cat "$tmp/del.audit")"
"$KEEP" audit tail -n 1000 --action run --data "$tmp/state/db" >"$tmp/run.audit" 2>&1
grep -q "timeout" "$tmp/run.audit" && ok "runs are in the audit log, with how they ended" || bad "run audit: $(cat "$tmp/run.audit")"

grep -q "keepd/front: decision" "$tmp/log" && ok "decisions are logged with their request id" || bad "no decision log"
kill -0 "$pid" 2>/dev/null && ok "keepd still running" || bad "keepd died"
[ $fails -eq 0 ] || { echo "--- keepd log"; tail -n 30 "$tmp/log"; }
echo "api_e2e: $fails failures"
[ $fails -eq 0 ]
