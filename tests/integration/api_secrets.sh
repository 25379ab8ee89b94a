#!/usr/bin/env bash
# Secrets (docs/secrets.md): PUT, GET (names only), DELETE; a run that
# names ${{ secrets.NAME }} in its env gets the value, and what it prints
# of it comes back as ***, also when it prints the value in two writes
# split in the middle (streamed and not); an agent the policy does not
# allow gets 403 and an audit entry; every injection is audited by name;
# a new value applies to the next run. The value appears in no API
# reply, no line of keepd's log (-v), no audit entry and not in clear in
# the store's LMDB file.
# run-tests: alone (six runs at once from the python template: another
# keepd's hard link to the image changes its ctime, and the vmm drops the
# template under them)
source "$(dirname "$0")/../lib/keepd.sh"

# Log everything there is to log: the value must not be in it.
keepd_launch() {
	"$KEEPD" -d -v -f "$tmp/keepd.yaml" >>"$tmp/log" 2>&1 &
	pid=$!
	keepd_wait_ready || { echo "keepd did not start"; cat "$tmp/log"; exit 1; }
}

cat >"$tmp/test.policy" <<'EOP'
agent "dev" {
	allow sandbox:read, sandbox:write, exec, secret:write
	exec "python"
	secret "gh-token", "gh-token2"
	timeout 60s
}
agent "other" {
	allow sandbox:read, sandbox:write, exec, secret:read
	exec "python"
}
agent "ops" { allow admin, audit:read }
EOP
# The key where keepd.yaml says (secrets_key_file), made at first start.
KEEPD_YAML_EXTRA="secrets_key_file: $tmp/secrets.hex"
KEEPD_IMAGES="python" keepd_start "$tmp/test.policy"
caps=sandbox:read,sandbox:write,exec,secret:read,secret:write
dev=$(mint dev $caps)
other=$(mint other $caps)
ops=$(mint ops admin,audit:read)
replies=$tmp/replies
: >"$replies"
# Every reply of the API is kept, to be searched for the values at the end.
rq() { req "$@"; printf '%s\n' "$body" >>"$replies"; }

val="ghp-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')-sekrit"
val2="ghp-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')-rotated"
sha() { printf '%s' "$1" | sha256sum | cut -d' ' -f1; }

# --- PUT, GET, the value never in a reply.
rq "$dev" PUT /v1/secrets/gh-token "{\"value\":\"$val\"}"
[ "$code" = 201 ] && [ "$(jget "$body" '["name"]')" = gh-token ] &&
    [ "$(jget "$body" '["set_by"]')" = dev ] &&
    ok "PUT creates (201)" || bad "PUT: $code $body"
rq "$dev" PUT /v1/secrets/other-one '{"value":"another value"}'
[ "$code" = 201 ] && ok "a second secret" || bad "second: $code $body"
rq "$dev" PUT /v1/secrets/short '{"value":"abc"}'
[ "$code" = 400 ] && ok "a value too short to redact is refused" || bad "short: $code $body"
rq "$dev" PUT '/v1/secrets/bad.name' '{"value":"abcdef"}'
[ "$code" = 400 ] && ok "a bad name is refused" || bad "bad name: $code $body"
rq "$other" PUT /v1/secrets/gh-token '{"value":"overwrite it"}'
[ "$code" = 403 ] && ok "PUT without secret:write in the policy: 403" || bad "other PUT: $code $body"
rq "$dev" GET /v1/secrets
names=$(jget "$body" '["secrets"]' 2>/dev/null)
[ "$code" = 200 ] && python3 -c '
import json, sys
s = json.loads(sys.argv[1])["secrets"]
assert sorted(x["name"] for x in s) == ["gh-token", "other-one"], s
assert all(set(x) == {"name", "created_at", "updated_at", "set_by"} for x in s), s
' "$body" && ok "GET lists names and metadata only" || bad "list: $code $body"

# --- A sandbox's variables keep the reference, never the value.
rq "$dev" POST /v1/sandboxes '{"image":"python","env":{"T":"${{ secrets.gh-tok }"}}'
[ "$code" = 400 ] && ok "a malformed reference in a sandbox's env: 400" || bad "sandbox env: $code $body"
rq "$dev" POST /v1/sandboxes '{"image":"python","env":{"SBX_TOK":"${{ secrets.gh-token }}"}}'
[ "$code" = 201 ] || bad "create: $code $body"
sid=$(jget "$body" '["id"]')
rq "$dev" PATCH "/v1/sandboxes/$sid/env" '{"env":{"T2":"x${{ secrets.gh-token }}y"}}'
[ "$code" = 200 ] && [ "$(jget "$body" '["env"]["T2"]')" = 'x${{ secrets.gh-token }}y' ] &&
    ok "env PATCH keeps the reference as text" || bad "env patch: $code $body"

# --- A run: the value is there, its printed occurrences are ***.
code_py='import os, sys, hashlib, time
v = os.environ["TOK"]
print(hashlib.sha256(v.encode()).hexdigest())
print("token:", v)
print("bearer", os.environ["AUTH"])
h = len(v) // 2
sys.stdout.write("split:" + v[:h]); sys.stdout.flush()
time.sleep(0.3)
sys.stdout.write(v[h:] + ":end\n"); sys.stdout.flush()
sys.stderr.write("err " + v + "\n")
print("sbx", os.environ["SBX_TOK"] == v, os.environ["T2"] == "x" + v + "y")'
exec_body() {	# CODE -> JSON body with the secret in env_vars
	python3 -c 'import json, sys; print(json.dumps({"code": sys.argv[1],
	    "env_vars": {"TOK": "${{ secrets.gh-token }}",
	                 "AUTH": "Bearer ${{secrets.gh-token}}!"}}))' "$1"
}
rq "$dev" POST "/v1/sandboxes/$sid/execute" "$(exec_body "$code_py")"
out=$(jget "$body" '["stdout"]' 2>/dev/null); err=$(jget "$body" '["stderr"]' 2>/dev/null)
[ "$code" = 200 ] && [ "$(printf '%s\n' "$out" | head -1)" = "$(sha "$val")" ] &&
    ok "the run sees the value" || bad "execute: $code $body"
printf '%s\n' "$out" | grep -qx 'token: \*\*\*' && ok "printed: ***" || bad "printed: $out"
printf '%s\n' "$out" | grep -qx 'bearer Bearer \*\*\*!' &&
    ok "a reference inside a value" || bad "inside: $out"
printf '%s\n' "$out" | grep -qx 'split:\*\*\*:end' &&
    ok "printed in two writes split in the middle: ***" || bad "split: $out"
[ "$err" = "err ***" ] && ok "stderr: ***" || bad "stderr: $err"
printf '%s\n' "$out" | grep -qx 'sbx True True' &&
    ok "the sandbox's variables get the value too" || bad "sandbox vars: $out"

# The same, streamed: the halves arrive in separate pieces of output.
python3 - "$url" "$dev" "$sid" "$(exec_body "$code_py")" >"$tmp/sse" 2>&1 <<'PY'
import http.client, json, sys, urllib.parse
u = urllib.parse.urlparse(sys.argv[1])
c = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
c.request("POST", "/v1/sandboxes/%s/execute" % sys.argv[3], sys.argv[4],
          {"Authorization": "Bearer " + sys.argv[2],
           "Content-Type": "application/json", "Accept": "text/event-stream"})
r = c.getresponse()
text = r.read().decode()
print("status", r.status)
sys.stdout.write(text)
# The stdout events joined: what the client reads as its stdout.
events, ev = [], None
for line in text.split("\n"):
    if line.startswith("event: "):
        ev = line[7:]
    elif line.startswith("data: ") and ev == "stdout":
        events.append(json.loads(line[6:])["data"])
print("stdout-events", len(events))
print("joined", json.dumps("".join(events)))
PY
cat "$tmp/sse" >>"$replies"
joined=$(sed -n 's/^joined //p' "$tmp/sse")
grep -q '^status 200' "$tmp/sse" && [[ $joined == *'token: ***\n'* ]] &&
    [[ $joined == *'split:***:end\n'* ]] &&
    ok "streamed (SSE): the value split in two writes is ***" ||
    bad "sse: $(head -c 600 "$tmp/sse")"
[ "$(sed -n 's/^stdout-events //p' "$tmp/sse")" -ge 2 ] &&
    ok "streamed in more than one event" || bad "sse events: $(cat "$tmp/sse")"

# commands/run takes env the same way.
rq "$dev" POST "/v1/sandboxes/$sid/commands/run" "$(python3 -c 'import json; print(json.dumps({"cmd": "python", "args": ["-c", "import os; print(\"cmd\", os.environ[\"TOK\"])"], "env": {"TOK": "${{ secrets.gh-token }}"}}))')"
[ "$code" = 200 ] && [ "$(jget "$body" '["stdout"]')" = "cmd ***" ] &&
    ok "commands/run: ***" || bad "commands/run: $code $body"

# --- Refusals.
rq "$other" POST /v1/sandboxes '{"image":"python"}'
osid=$(jget "$body" '["id"]')
# Even a run that names no secret itself is refused where the sandbox's
# variables name one this agent may not use.
rq "$other" POST /v1/sandboxes '{"image":"python","env":{"X":"${{ secrets.gh-token }}"}}'
osid2=$(jget "$body" '["id"]')
rq "$other" POST "/v1/sandboxes/$osid2/execute" '{"code":"print(1)"}'
[ "$code" = 403 ] && ok "the sandbox's reference is decided at each run: 403" ||
    bad "other sandbox env: $code $body"
rq "$other" POST "/v1/sandboxes/$osid/execute" '{"code":"print(1)"}'
[ "$code" = 200 ] && ok "a run without secrets is not affected" || bad "plain run: $code $body"
curl -s -o "$tmp/o" -w '%{http_code}' -X POST -H "Authorization: Bearer $other" \
    -H 'X-Request-Id: refused-secret-1' -H 'Content-Type: application/json' \
    -d "$(exec_body 'print(1)')" "$url/v1/sandboxes/$osid/execute" >"$tmp/code"
[ "$(cat "$tmp/code")" = 403 ] && ok "a principal the policy does not allow: 403" ||
    bad "other: $(cat "$tmp/code") $(cat "$tmp/o")"
cat "$tmp/o" >>"$replies"
rq "$dev" POST "/v1/sandboxes/$sid/execute" \
    '{"code":"print(1)","env_vars":{"X":"${{ secrets.other-one }}"}}'
[ "$code" = 403 ] && ok "a secret not on the agent's list: 403" || bad "not listed: $code $body"
rq "$dev" POST "/v1/sandboxes/$sid/execute" \
    '{"code":"print(1)","env_vars":{"X":"${{ secret.gh-token }}"}}'
[ "$code" = 400 ] && ok "a malformed reference: 400" || bad "malformed: $code $body"

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
audit_has 'e.get("client_request_id") == "refused-secret-1" and e["decision"] == "deny" and e["action"] == "secret:read" and e["target"] == "gh-token"' \
    "the refusal, by name"
audit_has 'e["action"] == "secret.inject" and e["target"] == "gh-token" and e["principal"] == "dev"' \
    "the injection, by name"

# --- Rotation: the next run gets the new value.
rq "$dev" PUT /v1/secrets/gh-token "{\"value\":\"$val2\"}"
[ "$code" = 200 ] && ok "PUT again rotates (200)" || bad "rotate: $code $body"
rq "$dev" POST "/v1/sandboxes/$sid/execute" "$(exec_body "$code_py")"
out=$(jget "$body" '["stdout"]' 2>/dev/null)
[ "$(printf '%s\n' "$out" | head -1)" = "$(sha "$val2")" ] &&
    printf '%s\n' "$out" | grep -qx 'token: \*\*\*' &&
    ok "after rotation the run gets the new value" || bad "rotated run: $code $body"
audit_has 'e["action"] == "secret.rotate" and e["target"] == "gh-token"' "the rotation"

# --- Runs with secrets at once: each gets its values.
rq "$dev" PUT /v1/secrets/gh-token2 '{"value":"second-secret-value"}'
conc_body=$(python3 -c 'import json; print(json.dumps({"code": "import os; print(os.environ[\"A\"] == os.environ[\"B\"][:0] + os.environ[\"A\"], len(os.environ[\"B\"]))", "env_vars": {"A": "${{ secrets.gh-token }}", "B": "${{ secrets.gh-token2 }}"}}))')
cpids=
for i in 1 2 3 4 5 6; do
	curl -s -m 120 -X POST -H "Authorization: Bearer $dev" -H 'Content-Type: application/json' \
	    -d "$conc_body" "$url/v1/sandboxes/$sid/execute" >"$tmp/conc.$i" &
	cpids="$cpids $!"
done
wait $cpids
nconc=0
for i in 1 2 3 4 5 6; do
	cat "$tmp/conc.$i" >>"$replies"
	[ "$(jget "$(cat "$tmp/conc.$i")" '["stdout"]' 2>/dev/null)" = "True 19" ] && nconc=$((nconc+1))
done
[ $nconc = 6 ] && ok "six runs with two secrets each at once" ||
    bad "concurrent: $nconc of 6: $(for i in 1 2 3 4 5 6; do head -c 300 "$tmp/conc.$i"; echo; done)"

# --- A restart: the key is read back from its file, the value opens.
keepd_restart
rq "$dev" POST "/v1/sandboxes/$sid/execute" "$(exec_body "$code_py")"
out=$(jget "$body" '["stdout"]' 2>/dev/null)
[ "$code" = 200 ] && [ "$(printf '%s\n' "$out" | head -1)" = "$(sha "$val2")" ] &&
    ok "after a restart the stored value still opens" || bad "after restart: $code $body"

# --- DELETE.
rq "$dev" DELETE /v1/secrets/other-one
[ "$code" = 204 ] && ok "DELETE: 204" || bad "delete: $code $body"
rq "$dev" DELETE /v1/secrets/other-one
[ "$code" = 404 ] && ok "DELETE again: 404" || bad "delete again: $code $body"

# --- The CLI.
printf '%s\n' "cli-value-1234" | "$KEEP" api --url "$url" --token "$dev" \
    secrets set cli-one >/dev/null && ok "keep api secrets set (stdin)" || bad "cli set"
"$KEEP" api --url "$url" --token "$dev" secrets list >"$tmp/cli" &&
    grep -q '^cli-one ' "$tmp/cli" && grep -q '^gh-token ' "$tmp/cli" &&
    ok "keep api secrets list" || bad "cli list: $(cat "$tmp/cli")"
cat "$tmp/cli" >>"$replies"
"$KEEP" api --url "$url" --token "$dev" secrets delete cli-one &&
    ok "keep api secrets delete" || bad "cli delete"

# --- The values, nowhere: replies, metrics, keepd's log, audit, the store.
rq "$ops" GET /metrics
rq "$ops" GET '/v1/audit?limit=100'
"$KEEP" audit export --data "$tmp/state" --since 1h >"$tmp/audit.jsonl" 2>/dev/null
for v in "$val" "$val2"; do
	grep -qF -- "$v" "$replies" && bad "a value in an API reply"
	grep -qF -- "$v" "$tmp/log" && bad "a value in keepd's log"
	grep -qF -- "$v" "$tmp/audit.jsonl" && bad "a value in the audit log"
	grep -qaF -- "$v" "$tmp/state/db/data.mdb" && bad "a value in clear in the store"
done
grep -qaF -- 'token: ***' "$tmp/state/db/data.mdb" &&
    ok "the run records hold the redacted output" || bad "no redacted run record"
ok "searched replies, metrics, log, audit and store"
[ "$(stat -c %a "$tmp/secrets.hex")" = 600 ] &&
    [ ! -e "$tmp/state/keys/secrets.key" ] &&
    ok "the secrets key is where keepd.yaml says, mode 0600" || bad "key file"
grep -qaF -- "$(cat "$tmp/secrets.hex")" "$tmp/log" "$replies" && bad "the key in a log or reply"

keepd_finish
