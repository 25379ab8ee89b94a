#!/usr/bin/env bash
# The appliance end to end: a real keepd (all six processes, as root with
# chroots and seccomp), real tokens, the real policy, real KVM guests.
# alice creates sandboxes and runs code in them; her sandbox token works
# for her sandbox only; bob may only read; a forged token is refused; a
# runaway program is stopped by its time limit; exec outside the policy's
# allowlist is refused before boot.
source "$(dirname "$0")/../lib/keepd.sh"

cat >"$tmp/test.policy" <<'EOP'
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
agent "ops" {
	allow admin
}
EOP
keepd_start "$tmp/test.policy"
alice=$(mint alice sandbox:read,sandbox:write,exec,artifact:read,artifact:write)
bob=$(mint bob sandbox:read,sandbox:write,exec)

req "$alice" POST /v1/sandboxes '{"image":"python","env":{"GREETING":"hi"},"metadata":{"owner":"tests","n":"1"}}'
[ "$code" = 201 ] && ok "alice creates a python sandbox" || bad "create: $code $body"
sbx=$(jget "$body" '["id"]'); stok=$(jget "$body" '["auth_token"]')
[ "$(jget "$body" '["metadata"]')" = "{'owner': 'tests', 'n': '1'}" ] &&
    ok "create answers the sandbox's metadata" || bad "create metadata: $body"
req "$alice" GET "/v1/sandboxes/$sbx"
[ "$code" = 200 ] && [ "$(jget "$body" '["metadata"]')" = "{'owner': 'tests', 'n': '1'}" ] &&
    ok "get answers the metadata it was made with" || bad "get metadata: $code $body"

req "$alice" POST "/v1/sandboxes/$sbx/execute" '{"code":"import os, json, hashlib\nprint(json.dumps([6*7, os.environ.get(\"GREETING\"), hashlib.sha256(b\"keep\").hexdigest()[:8]]))","language":"python"}'
want=$(python3 -c 'import hashlib,json; print(json.dumps([42, "hi", hashlib.sha256(b"keep").hexdigest()[:8]]))')
[ "$code" = 200 ] && [ "$(jget "$body" '["stdout"]')" = "$want" ] &&
    [ "$(jget "$body" '["exit_code"]')" = 0 ] && ok "python runs in the sandbox" || bad "execute: $code $body"
[ "$(jget "$body" '["platform"]')" = "$KEEP_TEST_PLATFORM" ] &&
    ok "the result names its platform ($KEEP_TEST_PLATFORM)" || bad "platform: $body"

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

# Background runs: a pid at once; the program goes on and leaves a file.
req "$alice" POST "/v1/sandboxes/$sbx/execute/background" '{"code":"import time\nopen(\"bg.txt\",\"w\").write(\"done\")\nraise SystemExit(7)","language":"python"}'
bg=$(jget "$body" '["pid"]' 2>/dev/null)
[ "$code" = 202 ] && [ -n "$bg" ] && ok "execute/background answers at once with a pid" || bad "background: $code $body"
for _ in $(seq 50); do
	req "$alice" GET "/v1/sandboxes/$sbx/processes"
	[[ $body == *'"exit_code":7'* ]] && break; sleep 0.1
done
[[ $body == *"\"pid\":$bg,"*'"status":"exited","exit_code":7'* ]] && ok "processes: it exited with 7" || bad "processes: $code $body"
req "$alice" GET "/v1/sandboxes/$sbx/files/read?path=bg.txt"
[ "$body" = done ] && ok "the background program wrote its file" || bad "bg file: $code $body"
req "$alice" GET "/v1/sandboxes/$sbx/system"
[ "$code" = 200 ] && [ "$(jget "$body" '["workspace_bytes"]')" = 4 ] && [ "$(jget "$body" '["runs"]')" -ge 4 ] &&
    ok "system: its runs and the bytes in its workspace" || bad "system: $code $body"
req "$alice" POST "/v1/sandboxes/$sbx/execute/kill?pid=$bg"
[ "$code" = 404 ] && ok "killing an ended process: 404" || bad "kill ended: $code $body"

# A command's cwd: where its guest starts (booted cold: a template's
# guest is parked at the root), in the foreground and the background.
req "$alice" POST "/v1/sandboxes/$sbx/files/mkdir?path=/sub"
req "$alice" POST "/v1/sandboxes/$sbx/commands/run" '{"cmd":"python","args":["-c","import os; print(os.getcwd()); open(\"fg.txt\", \"w\").write(\"fg\")"],"cwd":"/sub"}'
[ "$code" = 200 ] && [ "$(jget "$body" '["stdout"]')" = /sub ] && ok "commands/run starts in its cwd" || bad "cwd: $code $body"
req "$alice" GET "/v1/sandboxes/$sbx/files/read?path=/sub/fg.txt"
[ "$body" = fg ] && ok "a relative path is the cwd's" || bad "cwd file: $code $body"
req "$alice" POST "/v1/sandboxes/$sbx/commands/background" '{"cmd":"python","args":["-c","import os; open(\"bg.txt\", \"w\").write(os.getcwd())"],"cwd":"/sub/"}'
[ "$code" = 202 ] || bad "background with cwd: $code $body"
# (The file exists, empty, from its open until its write: read until
# it holds something.)
for _ in $(seq 100); do
	req "$alice" GET "/v1/sandboxes/$sbx/files/read?path=/sub/bg.txt"
	[ "$code" = 200 ] && [ -n "$body" ] && break; sleep 0.1
done
[ "$body" = /sub ] && ok "commands/background starts in its cwd" || bad "background cwd: $code $body"
refused() { req "$(mint ops admin)" GET /metrics; sed -n 's/^keep_runs_total{status="refused"} //p' <<<"$body"; }
before=$(refused)
req "$alice" POST "/v1/sandboxes/$sbx/commands/run" '{"cmd":"python","args":["-c","1"],"cwd":"/nowhere"}'
[ "$code" = 404 ] && [[ $body == *"no such directory"* ]] && ok "a cwd the workspace does not have: 404, as a spawn's ENOENT" || bad "missing cwd: $code $body"
req "$alice" POST "/v1/sandboxes/$sbx/commands/run" '{"cmd":"python","args":["-c","1"],"cwd":"/sub/fg.txt"}'
[ "$code" = 404 ] && [[ $body == *"not a directory"* ]] && ok "a cwd that is a file: 404, not a directory" || bad "file cwd: $code $body"
# /metrics counts those two refusals as refused, under one label.
req "$(mint ops admin)" GET /metrics
after=$(sed -n 's/^keep_runs_total{status="refused"} //p' <<<"$body")
[ -n "$before" ] && [ "$after" = "$((before + 2))" ] &&
    ok "/metrics counts a refused cwd as refused, once" || bad "metrics: $before -> $after: $(grep keep_runs_total <<<"$body")"
req "$alice" POST "/v1/sandboxes/$sbx/commands/run" '{"cmd":"python","args":["-c","1"],"cwd":"sub"}'
[ "$code" = 400 ] && ok "a relative cwd: 400" || bad "relative cwd: $code $body"
req "$alice" POST "/v1/sandboxes/$sbx/commands/run" '{"cmd":"python","args":["-c","1"],"cwd":"/sub/../.."}'
[ "$code" = 400 ] && ok "a cwd with ..: 400" || bad "dotdot cwd: $code $body"

# JavaScript in the js image.
req "$alice" POST /v1/sandboxes '{"image":"js"}'
jsb=$(jget "$body" '["id"]')
req "$alice" POST "/v1/sandboxes/$jsb/execute" '{"code":"var o = {a: [1, 2, 3]}; console.log(JSON.stringify(o), o.a.reduce(function (s, x) { return s + x; }, 0))","language":"javascript"}'
[ "$code" = 200 ] && [ "$(jget "$body" '["stdout"]')" = '{"a":[1,2,3]} 6' ] && ok "JavaScript runs in the js sandbox" || bad "js: $code $body"
req "$alice" DELETE "/v1/sandboxes/$jsb"

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
[ "$code" = 400 ] && ok "a .. component is refused (400), as docs/api.yaml says" || bad "dotdot: $code $body"
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
[ "$(jget "$body" '["sandboxes"]' | python3 -c 'import ast, sys; print(sorted(str(s["metadata"]) for s in ast.literal_eval(sys.stdin.read())))')" = \
    "[\"{'owner': 'tests', 'n': '1'}\", '{}']" ] &&
    ok "list answers each sandbox's metadata" || bad "list metadata: $body"
req "$alice" DELETE "/v1/sandboxes/$sbx"
[ "$code" = 204 ] || [ "$code" = 200 ] && ok "delete" || bad "delete: $code $body"
req "$alice" GET "/v1/sandboxes/$sbx"
[ "$code" = 404 ] && ok "deleted is gone" || bad "after delete: $code $body"
[ -z "$(ls -A "$tmp/state/workspaces" | grep "$sbx")" ] && ok "its workspace is removed" || bad "workspace left behind"

# The audit log: every decision and lifecycle event, chained.
"$KEEP" audit verify --data "$tmp/state/db" >"$tmp/verify" 2>&1 && ok "the audit chain verifies" || bad "audit verify: $(cat "$tmp/verify")"
"$KEEP" audit tail -n 1000 --principal bob --data "$tmp/state/db" >"$tmp/bob.audit" 2>&1
grep -q "deny" "$tmp/bob.audit" && grep -q "sandbox:write" "$tmp/bob.audit" && ok "bob's denied create is in the audit log" || bad "bob audit: $(cat "$tmp/bob.audit")"
"$KEEP" audit tail -n 1000 --principal alice --data "$tmp/state/db" >"$tmp/alice.audit" 2>&1
grep -q "exit 0, [0-9]* ms, on $KEEP_TEST_PLATFORM" "$tmp/alice.audit" &&
    ok "a run's audit entry names its platform" || bad "alice audit: $(grep run "$tmp/alice.audit" | head -3)"
"$KEEP" audit tail -n 1000 --action sandbox.delete --data "$tmp/state/db" >"$tmp/del.audit" 2>&1
grep -q "$sbx" "$tmp/del.audit" && ok "the delete is in the audit log" || bad "delete audit: $(cat "$tmp/del.audit")"
"$KEEP" audit tail -n 1000 --action run --data "$tmp/state/db" >"$tmp/run.audit" 2>&1
grep -q "timeout" "$tmp/run.audit" && ok "runs are in the audit log, with how they ended" || bad "run audit: $(cat "$tmp/run.audit")"

grep -q "keepd/front: decision" "$tmp/log" && ok "decisions are logged with their request id" || bad "no decision log"
keepd_finish
