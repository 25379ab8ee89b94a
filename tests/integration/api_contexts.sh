#!/usr/bin/env bash
# Live contexts (docs/contexts.md) through a real keepd and real KVM
# guests: state kept between cells and lost on restart; results, errors
# and the ndjson stream in E2B's shapes; env_vars for one cell; a cell
# that times out or kills its interpreter leaves the context usable
# (back at its last acknowledged cell, said in the reply); a context
# dies with its sandbox; contexts are the caller's own.
source "$(dirname "$0")/../lib/keepd.sh"
# A restarted vmm answers 503 while it reads its sandboxes back, and a
# run that reaches it then is refused as "no such sandbox" (400): both
# mean "not yet".
vmm_back() { [ "$code" != 503 ] && [[ $body != *"no such sandbox"* ]]; }

cat >"$tmp/test.policy" <<'EOP'
role runner {
	allow sandbox:read, sandbox:write, exec
	exec "python", "js"
	timeout 60s
	output 1M
	memory 256M
	contexts 2
}
agent "alice" : runner
agent "bob" : runner
agent "carol" {
	allow sandbox:read, sandbox:write, exec
	exec "python"
	memory 256M
	contexts 64
}
EOP
keepd_start "$tmp/test.policy"
alice=$(mint alice sandbox:read,sandbox:write,exec)
bob=$(mint bob sandbox:read,sandbox:write,exec)

req "$alice" POST /v1/sandboxes '{"image":"python"}'
sbx=$(jget "$body" '["id"]')

req "$alice" POST "/v1/sandboxes/$sbx/contexts" '{"language":"python","cwd":"/work"}'
[ "$code" = 201 ] && [ "$(jget "$body" '["language"]')" = python ] &&
    [ "$(jget "$body" '["cwd"]')" = /work ] && ok "a python context is created" || bad "create: $code $body"
cid=$(jget "$body" '["id"]')

cell() { # cell TOKEN CONTEXT CODE [EXTRA-JSON]
	python3 -c '
import json, sys
d = {"code": sys.argv[2], "language": "python", "context_id": sys.argv[1]}
d.update(json.loads(sys.argv[3] or "{}"))
print(json.dumps(d))' "$2" "$3" "${4:-}" >"$tmp/cell.json"
	body=$(curl -s -w '\n%{http_code}' -H "Authorization: Bearer $1" \
	    -H 'Content-Type: application/json' --data-binary @"$tmp/cell.json" \
	    "$url/v1/sandboxes/$sbx/execute")
	code=${body##*$'\n'}; body=${body%$'\n'*}
}


cell "$alice" "$cid" 'x = 42'
[ "$code" = 200 ] && [ "$(jget "$body" '["execution_count"]')" = 1 ] &&
    [ "$(jget "$body" '["error"]')" = None ] && ok "x = 42" || bad "first cell: $code $body"
cell "$alice" "$cid" 'print(x)'
[ "$code" = 200 ] && [ "$(jget "$body" '["stdout"]')" = 42 ] &&
    [ "$(jget "$body" '["execution_count"]')" = 2 ] && ok "print(x) gives 42: state kept" || bad "second cell: $code $body"

cell "$alice" "$cid" 'import os
f = open("kept.txt", "w"); f.write("a")
os.getcwd()'
[ "$(jget "$body" '["results"][0]["text"]')" = "'/work'" ] &&
    [ "$(jget "$body" '["results"][0]["is_main_result"]')" = True ] &&
    ok "the last expression is the main result; cwd is /work" || bad "result: $body"
cell "$alice" "$cid" 'f.write("b"); f.close(); open("kept.txt").read()'
[ "$(jget "$body" '["results"][0]["text"]')" = "'ab'" ] && ok "open files survive between cells" || bad "file: $body"

cell "$alice" "$cid" 'import os; print(os.environ.get("ONLY_HERE"))' '{"env_vars":{"ONLY_HERE":"yes"}}'
[ "$(jget "$body" '["stdout"]')" = yes ] && ok "env_vars reach the cell" || bad "env_vars: $body"
cell "$alice" "$cid" 'import os; print(os.environ.get("ONLY_HERE"))'
[ "$(jget "$body" '["stdout"]')" = None ] && ok "env_vars hold for that cell only" || bad "env_vars after: $body"

cell "$alice" "$cid" '1/0'
[ "$code" = 200 ] && [ "$(jget "$body" '["error"]["name"]')" = ZeroDivisionError ] &&
    [[ "$(jget "$body" '["error"]["traceback"]')" == *'<cell>'* ]] && ok "an exception is the cell's error" || bad "error: $body"
cell "$alice" "$cid" 'print(x + 1)'
[ "$(jget "$body" '["stdout"]')" = 43 ] && ok "the context goes on after an error" || bad "after error: $body"

# The ndjson stream.
req_nd() {
	body=$(curl -s -w '\n%{http_code}' -H "Authorization: Bearer $alice" \
	    -H 'Accept: application/x-ndjson' -H 'Content-Type: application/json' \
	    -d "$1" "$url/v1/sandboxes/$sbx/execute")
	code=${body##*$'\n'}; body=${body%$'\n'*}
}
req_nd "{\"code\":\"print('hi')\\nimport sys; print('oops', file=sys.stderr)\\nx\\nraise KeyError('k')\",\"context_id\":\"$cid\"}"
shape=$(python3 -c '
import json, sys
out = []
for l in sys.argv[1].splitlines():
    o = json.loads(l)
    out.append(o["type"] + ":" + str(o.get("text", o.get("name", o.get("execution_count", "")))).strip())
print(" ".join(out))' "$body" 2>&1)
[ "$code" = 200 ] && [ "$shape" = "stdout:hi stderr:oops error:KeyError number_of_executions:9" ] &&
    ok "ndjson: stdout, stderr, error and number_of_executions lines" || bad "ndjson: $code $shape / $body"
req_nd "{\"code\":\"x * 2\",\"context_id\":\"$cid\"}"
[[ $body == *'{"type":"result"'*'"is_main_result":true'*'"text":"84"'* ]] ||
[[ $body == *'"text":"84"'*'"type":"result"'* ]] && ok "ndjson: the result line" || bad "ndjson result: $body"

# The ndjson lines stream as the cell makes them: the first line reaches
# the client before the cell prints its second (the guest's clock, the
# host's, stamps the second; the client's stamps the first's arrival).
# The count comes last, once the cell is acknowledged; a cell that is
# not (it timed out) has none; a resumed context's replayed cells
# stream nothing.
req "$alice" POST "/v1/sandboxes/$sbx/contexts" '{}'
scid=$(jget "$body" '["id"]')
cell "$alice" "$scid" 'print("from the journal")'
python3 - "$url" "$alice" "$sbx" "$scid" >"$tmp/nd.out" 2>&1 <<'PY'
import http.client, json, sys, time, urllib.parse
u = urllib.parse.urlparse(sys.argv[1]); tok, sbx, cid = sys.argv[2:5]
def cell(code, extra=None):
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
    d = {"code": code, "context_id": cid}
    d.update(extra or {})
    c.request("POST", "/v1/sandboxes/%s/execute" % sbx, json.dumps(d),
              {"Authorization": "Bearer " + tok, "Content-Type": "application/json",
               "Accept": "application/x-ndjson"})
    r = c.getresponse()
    print("status", r.status, r.getheader("Content-Type"), r.getheader("Transfer-Encoding"))
    got = []
    while True:
        l = r.readline()
        if not l:
            break
        got.append((time.time(), json.loads(l)))
    print("lines", " ".join(o["type"] + ":" + str(o.get("text", o.get("name", o.get("execution_count", "")))).split()[0] for _, o in got))
    return got
got = cell('import time\nprint("first", flush=True)\ntime.sleep(2)\nprint("second", time.time())')
first = [t for t, o in got if o["type"] == "stdout" and o["text"] == "first\n"]
second = [float(o["text"].split()[1]) for _, o in got if o["type"] == "stdout" and o["text"].startswith("second")]
print("first arrived before the second was printed", bool(first and second and first[0] < second[0]),
      first and second and "%.3f < %.3f" % (first[0], second[0]))
cell('print("a", flush=True)\nwhile True: pass', {"timeout": 1500})
cell('print("fresh")')
PY
cat "$tmp/nd.out"
grep -q '^status 200 application/x-ndjson chunked$' "$tmp/nd.out" && ok "ndjson cells are a chunked stream" || bad "ndjson head"
grep -q '^first arrived before the second was printed True' "$tmp/nd.out" &&
    ok "ndjson: a cell's first line reaches the client before it prints its second" || bad "not streamed"
ndl() { grep '^lines' "$tmp/nd.out" | sed -n "$1p"; }
[ "$(ndl 1)" = 'lines stdout:first stdout:second number_of_executions:2' ] &&
    ok "ndjson: the lines in order, the count last" || bad "streamed lines: $(ndl 1)"
[ "$(ndl 2)" = 'lines stdout:a error:TimeoutError' ] &&
    ok "ndjson: a cell past its time limit streams what it printed, then its error, and no count (not acknowledged)" ||
    bad "streamed timeout: $(ndl 2)"
[ "$(ndl 3)" = 'lines stdout:fresh number_of_executions:3' ] &&
    ok "ndjson: the replayed cells of a resumed context stream nothing" || bad "streamed replay: $(ndl 3)"
req "$alice" DELETE "/v1/sandboxes/$sbx/contexts/$scid"

# Large cells go through whole; one past the pipe's room is refused.
python3 -c 'import json, sys; print(json.dumps({"code": "s = \"" + "x" * 300000 + "\"\nlen(s)", "context_id": sys.argv[1]}))' "$cid" >"$tmp/big.json"
body=$(curl -s -w '\n%{http_code}' -H "Authorization: Bearer $alice" -H 'Content-Type: application/json' \
    --data-binary @"$tmp/big.json" "$url/v1/sandboxes/$sbx/execute"); code=${body##*$'\n'}; body=${body%$'\n'*}
[ "$(jget "$body" '["results"][0]["text"]')" = 300000 ] && ok "a 300 KB cell" || bad "big cell: $code ${body:0:200}"
python3 -c 'import json, sys; print(json.dumps({"code": "s = \"" + "x" * 2000000 + "\"", "context_id": sys.argv[1]}))' "$cid" >"$tmp/big.json"
body=$(curl -s -w '\n%{http_code}' -H "Authorization: Bearer $alice" -H 'Content-Type: application/json' \
    --data-binary @"$tmp/big.json" "$url/v1/sandboxes/$sbx/execute"); code=${body##*$'\n'}; body=${body%$'\n'*}
[ "$code" = 413 ] && [[ $body == *"limited to"* ]] && ok "a 2 MB cell is refused (413, as any execute past the argument limit)" || bad "huge cell: $code ${body:0:200}"
cell "$alice" "$cid" 'print(x)'
[ "$(jget "$body" '["stdout"]')" = 42 ] && ok "the context is intact after the refusal" || bad "after huge: $body"
req "$alice" POST "/v1/sandboxes/$sbx/contexts" '{"language":"js"}'
[ "$code" = 400 ] && [[ $body == *"cannot run this language"* ]] && ok "a js context in a python sandbox: 400" || bad "js in python: $code $body"
req "$alice" POST "/v1/sandboxes/$sbx/execute" "{\"code\":\"1\",\"language\":\"javascript\",\"context_id\":\"$cid\"}"
[ "$code" = 400 ] && ok "a js cell for a python context: 400" || bad "lang mismatch: $code $body"

# Rich results where the image has the modules; today's static image
# has neither pandas nor matplotlib, so this checks the guard.
cell "$alice" "$cid" 'import importlib.util as u
bool(u.find_spec("pandas")) and bool(u.find_spec("matplotlib"))'
if [ "$(jget "$body" '["results"][0]["text"]')" = True ]; then
	cell "$alice" "$cid" 'import pandas as pd, matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
plt.plot([1, 2, 3])
pd.DataFrame({"a": [1, 2]})'
	python3 -c '
import json, sys, base64
r = json.loads(sys.argv[1])["results"]
fig = [x for x in r if "png" in x][0]
assert base64.b64decode(fig["png"])[:8] == b"\x89PNG\r\n\x1a\n"
main = [x for x in r if x["is_main_result"]][0]
assert "<table" in main["html"] and "a" in main["text"]' "$body" &&
	    ok "a DataFrame as html and text, a figure as png" || bad "rich: $body"
else
	echo "note: no pandas/matplotlib in the python image: rich results not exercised"
fi

# JavaScript (Duktape) in the js image.
req "$alice" POST /v1/sandboxes '{"image":"js"}'
jsbx=$(jget "$body" '["id"]')
req "$alice" POST "/v1/sandboxes/$jsbx/contexts" '{"language":"js"}'
[ "$code" = 201 ] && [ "$(jget "$body" '["language"]')" = js ] && ok "a js context" || bad "js context: $code $body"
jcid=$(jget "$body" '["id"]')
jcell() {
	req "$alice" POST "/v1/sandboxes/$jsbx/execute" "$(python3 -c 'import json, sys; print(json.dumps({"code": sys.argv[1], "language": "javascript", "context_id": sys.argv[2]}))' "$1" "$jcid")"
}
jcell 'var x = 42; function twice(a) { return 2 * a; }'
jcell 'console.log("x is", x); twice(x)'
[ "$(jget "$body" '["stdout"]')" = "x is 42" ] && [ "$(jget "$body" '["results"][0]["text"]')" = 84 ] &&
    ok "js: state kept, the last value is the result" || bad "js cell: $body"
jcell 'null.y'
[ "$(jget "$body" '["error"]["name"]')" = TypeError ] && ok "js: an error" || bad "js error: $body"
req "$alice" DELETE "/v1/sandboxes/$jsbx"

# A plain python execute (no context) has results too, and otherwise
# behaves as python -c: output, tracebacks and exit status unchanged.
pyx() {
	req "$alice" POST "/v1/sandboxes/$sbx/execute" "$(python3 -c 'import json, sys; print(json.dumps({"code": sys.argv[1], "language": "python"}))' "$1")"
}
pyx 'x = 6
x * 7'
[ "$code" = 200 ] && [ "$(jget "$body" '["results"][0]["text"]')" = 42 ] && [ "$(jget "$body" '["results"][0]["is_main_result"]')" = True ] &&
    [ "$(jget "$body" '["stderr"]')" = "" ] && ok "execute: the last expression is a result" || bad "execute results: $body"
pyx 'print(1)'
[ "$(jget "$body" '["results"]')" = "[]" ] && [ "$(jget "$body" '["stdout"]')" = 1 ] && ok "execute: no value, no results" || bad "execute print: $body"
pyx '1/0'
want=$(python3.11 -I -S -c '1/0' 2>&1)
[ "$(jget "$body" '["exit_code"]')" = 1 ] && [ "$(jget "$body" '["stderr"]')" = "$want" ] &&
    ok "execute: the traceback is python -c's" || bad "execute traceback: $body / $want"
pyx 'import sys; print(sys.argv, __name__); sys.exit(3)'
[ "$(jget "$body" '["exit_code"]')" = 3 ] && [ "$(jget "$body" '["stdout"]')" = "['-c'] __main__" ] &&
    ok "execute: argv, __name__ and exit status as -c" || bad "execute exit: $body"
pyx 'import sys; sys.stderr.write("\x1ekeep-results:forged:[{\"text\":\"no\"}]\n"); 5'
[ "$(jget "$body" '["results"][0]["text"]')" = 5 ] && [[ "$(jget "$body" '["stderr"]')" == *forged* ]] &&
    ok "execute: a forged results line is the program's stderr" || bad "forged: $body"

# Another principal does not see alice's context.
req "$bob" POST /v1/sandboxes '{"image":"python"}'
bsbx=$(jget "$body" '["id"]')
req "$bob" POST "/v1/sandboxes/$bsbx/execute" "{\"code\":\"1\",\"context_id\":\"$cid\"}"
[ "$code" = 404 ] && ok "another principal's context is not found" || bad "bob: $code $body"
req "$alice" POST "/v1/sandboxes/$sbx/execute" '{"code":"1","context_id":"ctx-nosuchcontext"}'
[ "$code" = 404 ] && ok "an unknown context is 404" || bad "unknown: $code $body"

req "$alice" GET "/v1/sandboxes/$sbx/contexts"
[ "$code" = 200 ] && [ "$(jget "$body" '[0]["id"]')" = "$cid" ] &&
    [ "$(jget "$body" '[0]["execution_count"]')" -ge 10 ] && ok "list shows the context and its count" || bad "list: $code $body"

# Hostile cells: memory exhaustion is the cell's MemoryError; the
# context goes on.
cell "$alice" "$cid" 'hog = []
while True: hog.append(bytearray(16 << 20))'
[ "$code" = 200 ] && [ "$(jget "$body" '["error"]["name"]')" = MemoryError ] && ok "a cell that exhausts memory gets MemoryError" || bad "memory: $code ${body:0:300}"
cell "$alice" "$cid" 'del hog; print(x)'
[ "$(jget "$body" '["stdout"]')" = 42 ] && ok "and the context keeps its state" || bad "after memory: $body"

# Two contexts are two interpreters, each booted with its own AT_RANDOM
# and seeded from getrandom: they never share PRNG state.
req "$alice" POST "/v1/sandboxes/$sbx/contexts" '{}'
rc2=$(jget "$body" '["id"]')
cell "$alice" "$cid" 'import random, os; print(random.random(), os.urandom(8).hex(), hash("keep"))'
r1=$(jget "$body" '["stdout"]')
cell "$alice" "$rc2" 'import random, os; print(random.random(), os.urandom(8).hex(), hash("keep"))'
r2=$(jget "$body" '["stdout"]')
python3 -c 'import sys; a, b = sys.argv[1].split(), sys.argv[2].split(); sys.exit(not (len(a) == len(b) == 3 and all(x != y for x, y in zip(a, b))))' "$r1" "$r2" &&
    ok "two contexts draw different random(), urandom and hash secret" || bad "randomness: $r1 / $r2"
req "$alice" DELETE "/v1/sandboxes/$sbx/contexts/$rc2"

# Past the policy's output limit (1M): stopped, said, restarted.
cell "$alice" "$cid" 'for _ in range(3000): print("y" * 1000)'
printf '%s' "$body" >"$tmp/big.out"
verdict=$(python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(d["reason"], d["error"]["name"], len(d["stdout"]) <= 1 << 20)' "$tmp/big.out")
[ "$code" = 200 ] && [ "$verdict" = "output-limit OutputLimit True" ] && ok "a cell past its output limit is stopped" || bad "output limit: $code $verdict"
cell "$alice" "$cid" 'x = 42'

# A cell past its time limit: the reply says so; the context is back at
# its last acknowledged cell (its journal run again in a new interpreter).
cell "$alice" "$cid" 'x = 43'
cell "$alice" "$cid" 'x = 44
while True: pass' '{"timeout":300}'
[ "$code" = 200 ] && [ "$(jget "$body" '["reason"]')" = timeout ] &&
    [ "$(jget "$body" '["error"]["name"]')" = TimeoutError ] &&
    [[ "$(jget "$body" '["error"]["value"]')" == *"back at its last acknowledged cell"* ]] &&
    ok "a runaway cell stops at its time limit, and the reply says where the context is" || bad "timeout: $code $body"
req "$alice" GET "/v1/sandboxes/$sbx/contexts"
[ "$(jget "$body" '[0]["state"]')" = paused ] && ok "the context lists as paused" || bad "state after timeout: $body"
cell "$alice" "$cid" 'print(x)'
[ "$(jget "$body" '["stdout"]')" = 43 ] && ok "after a timeout the context has its last acknowledged state" || bad "after timeout: $body"

# A cell that ends its interpreter.
cell "$alice" "$cid" 'y = 1'
cell "$alice" "$cid" 'import os; print("bye", flush=True); os._exit(3)'
[ "$code" = 200 ] && [ "$(jget "$body" '["error"]["name"]')" = ContextDied ] &&
    [ "$(jget "$body" '["stdout"]')" = bye ] && ok "a cell that exits the interpreter is reported, its output kept" || bad "exit: $code $body"
cell "$alice" "$cid" 'print(y, x)'
[ "$(jget "$body" '["stdout"]')" = "1 43" ] && ok "then the context runs again from its last acknowledged cell" || bad "after exit: $body"

# Restart: state lost.
cell "$alice" "$cid" 'z = 5'
req "$alice" POST "/v1/sandboxes/$sbx/contexts/$cid/restart"
[ "$code" = 200 ] && [ "$(jget "$body" '["execution_count"]')" = 0 ] && ok "restart" || bad "restart: $code $body"
cell "$alice" "$cid" 'z'
[ "$(jget "$body" '["error"]["name"]')" = NameError ] && ok "state is lost on restart" || bad "after restart: $body"

# The same through `keep api`.
kapi() { "$KEEP" api --url "$url" --token "$alice" "$@"; }
kc=$(kapi contexts create "$sbx" --cwd /cli)
# alice holds two live contexts: her policy's quota.
req "$alice" POST "/v1/sandboxes/$sbx/contexts" '{}'
[ "$code" = 403 ] && [[ $body == *"Context limit"* ]] && ok "a third context is refused: contexts 2" || bad "quota: $code $body"
req "$bob" POST "/v1/sandboxes/$bsbx/contexts" '{}'
[ "$code" = 201 ] && ok "another principal's quota is their own" || bad "bob's quota: $code $body"
kapi exec --context "$kc" "$sbx" 'n = 6' >/dev/null
out=$(kapi exec --context "$kc" "$sbx" 'print("n is", n); n * 7')
[ "$out" = "n is 6
42" ] && ok "keep api exec --context keeps state and shows the main result" || bad "keep api exec: $out"
kapi exec --context "$kc" "$sbx" 'undefined_name' >/dev/null 2>"$tmp/err"; rc=$?
[ $rc = 1 ] && grep -q NameError "$tmp/err" && ok "keep api: a cell's error on stderr, exit 1" || bad "keep api error: $rc $(cat "$tmp/err")"
kapi contexts list "$sbx" | grep -q "^$kc .* /cli$" && ok "keep api contexts list" || bad "list: $(kapi contexts list "$sbx")"
kapi contexts restart "$sbx" "$kc" >/dev/null && kapi contexts delete "$sbx" "$kc" &&
    ! kapi contexts list "$sbx" | grep -q "$kc" && ok "keep api contexts restart and delete" || bad "cli restart/delete"

for _ in $(seq 200); do
	"$KEEP" audit tail -n 1000 --action context.refused --data "$tmp/state/db" >"$tmp/refused.audit" 2>&1
	grep -q alice "$tmp/refused.audit" && break; sleep 0.1
done
grep -q alice "$tmp/refused.audit" && ok "the refusal is in the audit log" || bad "audit: $(cat "$tmp/refused.audit")"
# Delete one; the other dies with its sandbox.
req "$alice" POST "/v1/sandboxes/$sbx/contexts" '{}'
c2=$(jget "$body" '["id"]')
req "$alice" DELETE "/v1/sandboxes/$sbx/contexts/$cid"
[ "$code" = 204 ] && ok "delete" || bad "delete: $code $body"
cell "$alice" "$cid" '1'
[ "$code" = 404 ] && ok "a deleted context is gone" || bad "deleted: $code $body"
cell "$alice" "$c2" 'w = 1'
vmpids() { pgrep -f "keepd: vm $sbx" || true; }
[ -n "$(vmpids)" ] && ok "the context's vm process is up" || bad "no vm process for $sbx"
# Its vm process leads its own process group, which holds every guest
# process it forks: killing the context kills the group (the tree).
vp=$(vmpids | head -n 1)
[ -n "$vp" ] && [ "$(ps -o pgid= -p "$vp" | tr -d ' ')" = "$vp" ] &&
    ok "a context's vm process leads its own process group" || bad "pgid of $vp: $(ps -o pid,pgid,args -p "$vp")"
req "$alice" DELETE "/v1/sandboxes/$sbx"
for _ in $(seq 50); do [ -z "$(vmpids)" ] && break; sleep 0.1; done
[ -z "$(vmpids)" ] && ok "a context dies with its sandbox" || bad "vm processes left: $(vmpids)"
# Its members are reaped by whoever inherits them: wait, bounded.
for _ in $(seq 100); do [ -z "$(pgrep -g "$vp" || true)" ] && break; sleep 0.1; done
[ -z "$(pgrep -g "$vp" || true)" ] && ok "and nothing of its process group is left" || bad "group $vp left: $(pgrep -g "$vp")"

# A vmm killed with -9 takes its interpreters along: they see the end of
# their cell pipe and exit; none is left behind. The restarted vmm adopts
# the context from its journal, paused, and the next cell resumes it.
req "$alice" POST /v1/sandboxes '{"image":"python"}'
ksbx=$(jget "$body" '["id"]')
req "$alice" POST "/v1/sandboxes/$ksbx/contexts" '{}'
kcid=$(jget "$body" '["id"]')
sbx=$ksbx cell "$alice" "$kcid" 'k = 1'
kpids() { pgrep -f "keepd: vm $ksbx" || true; }
[ -n "$(kpids)" ] && ok "a context before the vmm is killed" || bad "no context vm process"
vmm=$(pgrep -P "$pid" -f '^keepd: vmm') # this keepd's vmm only
[ -n "$vmm" ] && kill -KILL "$vmm"
for _ in $(seq 100); do [ -z "$(kpids)" ] && break; sleep 0.1; done
[ -z "$(kpids)" ] && ok "its interpreter ends with the vmm" || bad "left behind: $(kpids)"
for _ in $(seq 100); do
	sbx=$ksbx cell "$alice" "$kcid" 'k'
	vmm_back && break; sleep 0.1
done
[ "$code" = 200 ] && [ "$(jget "$body" '["results"][0]["text"]')" = 1 ] &&
    ok "the restarted vmm resumes the context: k is 1" || bad "after vmm restart: $code $body"

# 32 contexts in a sandbox (what one page of its list holds), and more
# in another: the vmm's own limit is far above a sandbox's.
carol=$(mint carol sandbox:read,sandbox:write,exec)
req "$carol" POST /v1/sandboxes '{"image":"python"}'
csbx=$(jget "$body" '["id"]')
made=0
for _ in $(seq 32); do
	req "$carol" POST "/v1/sandboxes/$csbx/contexts" '{}'
	[ "$code" = 201 ] && made=$((made + 1))
done
[ "$made" = 32 ] && ok "a sandbox holds 32 contexts" || bad "32 contexts: $made made, last $code $body"
req "$carol" POST "/v1/sandboxes/$csbx/contexts" '{}'
[ "$code" = 403 ] && [[ $body == *"Context limit"* ]] && ok "the 33rd in that sandbox is refused" || bad "33rd: $code $body"
req "$carol" GET "/v1/sandboxes/$csbx/contexts"
[ "$(python3 -c 'import json,sys; print(len(json.loads(sys.argv[1])))' "$body")" = 32 ] &&
    ok "and its list holds all 32" || bad "list of 32: $body"
req "$carol" POST /v1/sandboxes '{"image":"python"}'
csbx2=$(jget "$body" '["id"]')
req "$carol" POST "/v1/sandboxes/$csbx2/contexts" '{}'
c33=$(jget "$body" '["id"]')
[ "$code" = 201 ] && ok "another sandbox's context is made: 33 live contexts of one principal" || bad "in another sandbox: $code $body"
sbx=$csbx2 cell "$carol" "$c33" '6 * 7'
[ "$(jget "$body" '["results"][0]["text"]')" = 42 ] && ok "and it answers" || bad "33rd context's cell: $body"

keepd_finish
