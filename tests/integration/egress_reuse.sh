#!/usr/bin/env bash
# A connect's decision reused (docs/egress.md, "Decisions reused"),
# through a real keepd and the python image: a run's second connect to
# the same name and port takes the policy's first decision (the policy
# makes one decision for the two, every connect is still audited); a
# policy reload that removes the rule refuses the run's next connect at
# once, with its reason; an agent whose budget counts egress is asked
# each time; the reused connect goes to egress on the run's direct
# link, and a reload drops it there too. Loopback only: the server is
# on 127.0.0.1, the names map there through egress.hosts_file, and the
# rules say private.
set -u
source "$(dirname "$0")/../lib/keepd.sh"
[ -f "$B/images/python.img" ] || { echo "SKIP: no python image"; exit 77; }

# The host's server: each connection gets "hi" and is closed, but the
# second of each run, which waits for $tmp/go first (so that the test
# reloads the policy while the guest's run waits between connects).
# $tmp/count holds the connections so far.
cat >"$tmp/server.py" <<'EOPY'
import os, socket, sys, time
d = sys.argv[1]
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0))
s.listen(16)
print("port %d" % s.getsockname()[1], flush=True)
n = 0
while True:
    c, _ = s.accept()
    n += 1
    with open(os.path.join(d, "count.tmp"), "w") as f:
        f.write("%d\n" % n)
    os.rename(os.path.join(d, "count.tmp"), os.path.join(d, "count"))
    if n == 2:
        while not os.path.exists(os.path.join(d, "go")):
            time.sleep(0.02)
    c.sendall(b"hi\n")
    c.close()
EOPY
python3 "$tmp/server.py" "$tmp" >"$tmp/server.out" 2>&1 &
spid=$!
trap 'kill $spid 2>/dev/null; keepd_cleanup' EXIT
for _ in $(seq 50); do
	sp=$(sed -n 's/^port \([0-9]*\).*/\1/p' "$tmp/server.out" | head -n 1)
	[ -n "$sp" ] && break
	sleep 0.1
done
[ -n "$sp" ] || { echo "FAIL: server"; exit 1; }
echo "127.0.0.1 reuse.test other.test" >"$tmp/hosts"

policy() { # policy NAME: the test policy, egress to NAME:$sp
	cat <<EOP
agent "alice" {
	allow sandbox:read, sandbox:write, exec
	exec "python"
	egress "$1":$sp private
	timeout 60s
}
agent "bob" {
	allow sandbox:read, sandbox:write, exec
	exec "python"
	egress "reuse.test":$sp private
	budget 1000
	timeout 60s
}
agent "ops" { allow admin }
EOP
}
policy reuse.test >"$tmp/test.policy"
KEEPD_IMAGES="python" KEEPD_YAML_EXTRA="egress:
  hosts_file: $tmp/hosts
  connect_timeout: 5s" keepd_start "$tmp/test.policy"
alice=$(mint alice sandbox:read,sandbox:write,exec,egress)
bob=$(mint bob sandbox:read,sandbox:write,exec,egress)
ops=$(mint ops admin)

decisions() { # the policy's egress decisions so far: "ALLOW DENY"
	req "$ops" GET /metrics
	echo "$(sed -n 's/^keep_egress_decisions_total{result="allow"} \([0-9]*\)$/\1/p' <<<"$body")" \
	    "$(sed -n 's/^keep_egress_decisions_total{result="deny"} \([0-9]*\)$/\1/p' <<<"$body")"
}
count() { cat "$tmp/count" 2>/dev/null || echo 0; }
execute_body() { # execute_body CODE: the JSON of an execute request
	python3 -c 'import json,sys; print(json.dumps({"code": sys.argv[1], "language": "python"}))' "$1"
}
# Three connects to reuse.test: the first two with what each read, the
# third with what it read or its errno; seconds from the second connect
# to the end of the third.
guest="
import socket, time
def one():
    s = socket.create_connection(('reuse.test', $sp), timeout=30)
    try:
        return s.recv(10).decode().strip()
    finally:
        s.close()
print('1', one())
t = time.monotonic()
print('2', one())
try:
    print('3', one())
except OSError as e:
    print('3 errno', e.errno)
print('gap %.1f' % (time.monotonic() - t))
"

req "$alice" POST /v1/sandboxes '{"image":"python"}'
[ "$code" = 201 ] || { bad "sandbox: $code $body"; keepd_finish; exit 1; }
sbx=$(jget "$body" '["id"]')

# ---- a reused decision; a reload refuses the next connect ---------------
read -r a0 d0 <<<"$(decisions)"
curl -s -o "$tmp/run.out" -X POST -H "Authorization: Bearer $alice" \
    -H 'Content-Type: application/json' -d "$(execute_body "$guest")" \
    "$url/v1/sandboxes/$sbx/execute" &
cpid=$!
for _ in $(seq "$(slow 300)"); do [ "$(count)" -ge 2 ] && break; sleep 0.05; done
read -r a1 d1 <<<"$(decisions)"
# The name's query and the first connect: two decisions for three
# requests; the second connect reused the first's.
[ "$(count)" = 2 ] && [ $((a1 - a0)) = 2 ] && [ "$d1" = "$d0" ] &&
    ok "two connects to the same name and port: one policy decision (allow +$((a1 - a0)) with the name's query)" ||
    bad "reuse: count $(count), allow $a0 -> $a1, deny $d0 -> $d1"

# The rule goes: reuse.test is no longer allowed. Once the parent says
# the new policy is in force, the run's next connect is refused.
m=$(grep -c 'policy generation [0-9]* in force' "$tmp/log")
policy other.test >"$tmp/policy/test.policy"
kill -HUP "$pid"
for _ in $(seq "$(slow 100)"); do
	[ "$(grep -c 'policy generation [0-9]* in force' "$tmp/log")" -gt "$m" ] && break
	sleep 0.05
done
[ "$(grep -c 'policy generation [0-9]* in force' "$tmp/log")" -gt "$m" ] ||
    bad "the new policy was not loaded"
touch "$tmp/go"
wait "$cpid"
body=$(cat "$tmp/run.out")
out=$(jget "$body" '["stdout"]' 2>/dev/null || echo "no run: $body")
read -r a2 d2 <<<"$(decisions)"
gap=$(sed -n 's/^gap //p' <<<"$out")
[[ $out == *$'1 hi\n2 hi\n3 errno 111'* || $out == *$'1 hi\n2 hi\n3 errno 13'* ]] &&
    [ "$(count)" = 2 ] && [ $((d2 - d1)) = 1 ] &&
    ok "after a reload that removes the rule the run's next connect is refused ($(sed -n 's/^3 //p' <<<"$out"), asked of the policy again; ${gap}s from the reused connect)" ||
    bad "after reload: $out (count $(count), deny $d1 -> $d2)"
python3 - "$body" "reuse.test:$sp" <<'EOPY' &&
import json, sys
b = json.loads(sys.argv[1])
sys.exit(0 if "egress" in b.get("limits", []) and b.get("egress_refused") == sys.argv[2] else 1)
EOPY
    ok "the run's result says limits egress and names reuse.test:$sp" ||
    bad "result: $body"
[ -n "$gap" ] && python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) < 10 else 1)' "$gap" ||
    echo "note: the reload took ${gap}s, past the 10 s a decision is reused: the refusal above proves less"

# Every connect is audited, the reused one too; the refusal with its
# reason.
for _ in $(seq 50); do
	"$KEEP" audit tail -n 1000 --action egress.connect --data "$tmp/state/db" >"$tmp/audit" 2>&1
	grep -q "deny" "$tmp/audit" && break
	sleep 0.1
done
[ "$(grep -c "TCP reuse.test:$sp allow rule=" "$tmp/audit")" = 2 ] &&
    [ "$(grep -c "TCP reuse.test:$sp deny rule=" "$tmp/audit")" = 1 ] &&
    grep "TCP reuse.test:$sp deny rule=" "$tmp/audit" | grep -q "policy: denied" &&
    ok "both allowed connects and the refusal are in the audit log, the refusal with the policy's reason" ||
    bad "audit: $(cat "$tmp/audit")"
# The reused connect went to egress on the run's direct link, not
# through the vmm (docs/egress.md, "Direct links"); the refusal after
# the reload did not: egress had dropped what the old policy let it keep
# (were it not so, the third connect above would have read "hi").
lines=$(grep "egress.connect [0-9]*.*: alice TCP in $sbx" "$tmp/log")
[ "$(grep -c ' (direct link): alice TCP .* egress allow host=reuse.test' <<<"$lines")" = 1 ] &&
    [ "$(grep -c 'egress allow host=reuse.test' <<<"$lines")" = 2 ] &&
    ! grep -q '(direct link).*egress deny' <<<"$lines" &&
    ok "the reused connect was served on the run's direct link to egress, the refusal after the reload by the vmm's path" ||
    bad "direct link: $lines"

# ---- a budget that counts egress: asked each time -----------------------
rm -f "$tmp/go"
printf '0\n' >"$tmp/count"
kill "$spid" 2>/dev/null
python3 "$tmp/server.py" "$tmp" >"$tmp/server2.out" 2>&1 &
spid=$!
for _ in $(seq 50); do
	sp2=$(sed -n 's/^port \([0-9]*\).*/\1/p' "$tmp/server2.out" | head -n 1)
	[ -n "$sp2" ] && break
	sleep 0.1
done
sed -i "s/:$sp private/:$sp2 private/" "$tmp/policy/test.policy"
m=$(grep -c 'policy generation [0-9]* in force' "$tmp/log")
kill -HUP "$pid"
for _ in $(seq "$(slow 100)"); do
	[ "$(grep -c 'policy generation [0-9]* in force' "$tmp/log")" -gt "$m" ] && break
	sleep 0.05
done
touch "$tmp/go"
req "$bob" POST /v1/sandboxes '{"image":"python"}'
bsbx=$(jget "$body" '["id"]')
read -r b0 _ <<<"$(decisions)"
req "$bob" POST "/v1/sandboxes/$bsbx/execute" "$(execute_body "${guest//$sp/$sp2}")"
out=$(jget "$body" '["stdout"]' 2>/dev/null || echo "HTTP $code $body")
read -r b1 _ <<<"$(decisions)"
[[ $out == *$'1 hi\n2 hi\n3 hi'* ]] && [ $((b1 - b0)) = 4 ] &&
    ! grep -q "(direct link): bob" "$tmp/log" &&
    ok "an agent whose budget counts egress: each of three connects decided (allow +$((b1 - b0)) with the query)" ||
    bad "budget: $out, allow $b0 -> $b1"

# ---- a template's clone has the run's direct link too -----------------
# alice's rule is now other.test:$sp2. A new sandbox's execute is a
# clone of the python template once it is built (keepd's log says
# which); its second connect is served on the link the clone was given.
twice="
import socket
for i in (1, 2):
    s = socket.create_connection(('other.test', $sp2), timeout=30)
    print(i, s.recv(10).decode().strip())
    s.close()
"
cloned=
for _ in $(seq 60); do
	req "$alice" POST /v1/sandboxes '{"image":"python"}'
	csbx=$(jget "$body" '["id"]')
	req "$alice" POST "/v1/sandboxes/$csbx/execute" "$(execute_body "$twice")"
	cout=$(jget "$body" '["stdout"]' 2>/dev/null || echo "HTTP $code $body")
	if grep -q "in sandbox $csbx, .*from its template" "$tmp/log"; then
		cloned=1
		break
	fi
	req "$alice" DELETE "/v1/sandboxes/$csbx"
	sleep 1
done
if [ -z "$cloned" ]; then
	bad "no new sandbox's execute was a template's clone in a minute"
else
	[[ $cout == *$'1 hi\n2 hi'* ]] &&
	    [ "$(grep -c "egress.connect [0-9]* (direct link): alice TCP in $csbx: egress allow host=other.test" "$tmp/log")" = 1 ] &&
	    ok "a template's clone: its reused connect served on the run's direct link" ||
	    bad "clone: $cout; $(grep "alice TCP in $csbx" "$tmp/log")"
fi

keepd_finish
