#!/usr/bin/env bash
# The policy's quotas and the API's guarantees against a real keepd:
# 429 with Retry-After once a rate is spent, 403 once the operation budget
# is, 429 at the concurrency limit; 401 (with WWW-Authenticate) for
# expired, forged, unknown-key and wrong-audience tokens; the exact 403
# envelope; Idempotency-Key replays and conflicts; SSE streaming; and a
# kill -9 of the front, after which keepd serves again.
source "$(dirname "$0")/../lib/keepd.sh"

cat >"$tmp/test.policy" <<'EOP'
role runner {
	allow sandbox:read, sandbox:write, exec
	exec "python", "js", "echo", "true"
	timeout 10s
}
agent "carol" : runner { rate read 3/hour }
agent "dave" : runner { budget 4 }
agent "erin" : runner { concurrent 1 }
agent "frank" : runner
agent "gina" { allow sandbox:read }
agent "hank" : runner { budget 100; rate read 10/hour }
agent "ivy" : runner { lock writes }
agent "ops" { allow admin }
EOP
keepd_start "$tmp/test.policy"
caps=sandbox:read,sandbox:write,exec

# --- rates: carol may read three times a minute.
carol=$(mint carol $caps)
for i in 1 2 3; do req "$carol" GET /v1/sandboxes; done
[ "$code" = 200 ] && ok "three reads within the rate" || bad "rate: read 3: $code $body"
hdr=$(curl -s -D - -o "$tmp/b" -H "Authorization: Bearer $carol" "$url/v1/sandboxes")
if [[ $hdr == "HTTP/1.1 429"* ]] && grep -qi '^retry-after: [1-9]' <<<"$hdr" &&
    grep -q '"code":"RATE_LIMITED"' "$tmp/b"; then
	ok "the fourth read: 429 with $(grep -i retry-after <<<"$hdr" | tr -d '\r')"
else
	bad "rate: $hdr $(cat "$tmp/b")"
fi
req "$carol" POST /v1/sandboxes '{"image":"toolbox"}'
[ "$code" = 201 ] && ok "writes have their own bucket" || bad "rate: write: $code $body"

# --- budget: dave has four operations.
dave=$(mint dave $caps)
for i in 1 2 3 4; do req "$dave" GET /v1/sandboxes; done
[ "$code" = 200 ] || bad "budget: within: $code $body"
req "$dave" GET /v1/sandboxes
[ "$code" = 403 ] && [[ $body == *"budget exhausted"* ]] && ok "the fifth operation: 403, budget exhausted" || bad "budget: $code $body"

# --- what was spent survives a restart of keepd, and the audit log has
# every policy load with its hash.
keepd_restart
# Until the store has answered, the answer is 503 (retry), never 200.
for _ in $(seq 50); do
	req "$dave" GET /v1/sandboxes; [ "$code" = 503 ] || break; sleep 0.1
done
[ "$code" = 403 ] && [[ $body == *"budget exhausted"* ]] && ok "after a restart, dave's budget is still spent" || bad "budget after restart: $code $body"
"$KEEP" audit tail -n 1000 --action policy.load --data "$tmp/state/db" >"$tmp/pl" 2>&1
# The hash is of the loader's text: the file after its marker line.
[ "$(grep -c "blake2b $({ printf '#@file %s\n' "$tmp/policy/test.policy"; cat "$tmp/policy/test.policy"; } | b2sum -l 256 | cut -d' ' -f1)" "$tmp/pl")" = 2 ] &&
    ok "both policy loads are in the audit log with the policy's hash" || bad "policy.load audit: $(cat "$tmp/pl")"
"$KEEP" audit tail -n 1000 --action keys.load --data "$tmp/state/db" >"$tmp/kl" 2>&1
grep -q '1 token issuer key(s), 1 image key(s), blake2b' "$tmp/kl" &&
    ok "the trusted keys in force are audited" || bad "keys.load audit: $(cat "$tmp/kl")"

# --- a sandbox's usage and its owner's quotas.
hank=$(mint hank $caps)
req "$hank" POST /v1/sandboxes '{"image":"toolbox"}'
hsbx=$(jget "$body" '["id"]')
req "$hank" POST "/v1/sandboxes/$hsbx/commands/run" '{"cmd":"echo","args":["x"]}'
# (reading its own usage costs no budget: create and run spent two)
req "$hank" GET "/v1/sandboxes/$hsbx/system"
[ "$code" = 200 ] && [ "$(jget "$body" '["budget_remaining"]')" = 98 ] &&
    [ "$(jget "$body" '["rates"]["read"]')" = 9.0 ] && [ "$(jget "$body" '["rates"]["write"]')" = None ] &&
    [ "$(jget "$body" '["runs"]')" = 1 ] && ok "system: runs, budget left and rate tokens: $body" || bad "system: $code $body"

# --- lock writes: ivy's writes to a sandbox need its lock.
ivy=$(mint ivy $caps)
lreq() { # LOCK METHOD PATH [BODY]
	local l=$1 m=$2 p=$3 d=${4:-}
	body=$(curl -s -o - -w '\n%{http_code}' -X "$m" -H "Authorization: Bearer $ivy" \
	    ${l:+-H "Keep-Lock: $l"} ${d:+-H 'Content-Type: application/json' -d "$d"} "$url$p")
	code=${body##*$'\n'}; body=${body%$'\n'*}
}
req "$ivy" POST /v1/sandboxes '{"image":"toolbox"}'
isbx=$(jget "$body" '["id"]')
lreq "" PATCH "/v1/sandboxes/$isbx/env" '{"env":{"A":"1"}}'
[ "$code" = 423 ] && [[ $body == *LOCK_REQUIRED* ]] && ok "a write without the lock: 423" || bad "no lock: $code $body"
lreq "" POST "/v1/sandboxes/$isbx/commands/run" '{"cmd":"echo","args":["x"]}'
[ "$code" = 423 ] && ok "a run without the lock: 423" || bad "run no lock: $code $body"
lreq "" GET "/v1/sandboxes/$isbx/env"
[ "$code" = 200 ] && ok "reads need no lock" || bad "read: $code $body"
lreq "" POST "/v1/sandboxes/$isbx/lock" '{"ttl":30}'
lock=$(jget "$body" '["lock_id"]' 2>/dev/null)
[ "$code" = 201 ] && [ -n "$lock" ] && ok "POST lock: 201" || bad "lock: $code $body"
lreq "$lock" PATCH "/v1/sandboxes/$isbx/env" '{"env":{"A":"1"}}'
[ "$code" = 200 ] && ok "the write with Keep-Lock" || bad "locked write: $code $body"
lreq "$lock" POST "/v1/sandboxes/$isbx/commands/run" '{"cmd":"echo","args":["x"]}'
[ "$code" = 200 ] && ok "the run with Keep-Lock" || bad "locked run: $code $body"
lreq "wrong$lock" PATCH "/v1/sandboxes/$isbx/env" '{"env":{"A":"2"}}'
[ "$code" = 423 ] && ok "a wrong lock id: 423" || bad "wrong lock: $code $body"
lreq "" POST "/v1/sandboxes/$isbx/lock" '{}'
[ "$code" = 409 ] && ok "a held lock cannot be taken again without its id" || bad "relock: $code $body"
lreq "$lock" DELETE "/v1/sandboxes/$isbx/lock"
[ "$code" = 204 ] && ok "DELETE lock" || bad "unlock: $code $body"
lreq "$lock" PATCH "/v1/sandboxes/$isbx/env" '{"env":{"A":"3"}}'
[ "$code" = 423 ] && ok "a released lock no longer writes" || bad "after unlock: $code $body"
lreq "" POST "/v1/sandboxes/$isbx/lock"
l2=$(jget "$body" '["lock_id"]' 2>/dev/null)
[ "$code" = 201 ] && [ -n "$l2" ] && ok "POST lock without a body: 201, the defaults" || bad "bodiless lock: $code $body"
lreq "$l2" DELETE "/v1/sandboxes/$isbx/lock"

# --- /metrics (admin): requests, decisions, runs and boot times.
req "$(mint ops admin)" GET /metrics
[ "$code" = 200 ] && grep -q '^keep_boot_duration_seconds_count [1-9]' <<<"$body" &&
    grep -q '^keep_runs_total{status="exited"} [1-9]' <<<"$body" &&
    grep -q '^keep_decisions_total' <<<"$body" && grep -q '^keep_http_requests_total' <<<"$body" &&
    ok "/metrics has requests, decisions, runs and the boot histogram" || bad "metrics: $code $(head -c 600 <<<"$body")"

# --- the exact envelope for a missing capability.
gina=$(mint gina sandbox:read,sandbox:write)
req "$gina" POST /v1/sandboxes '{"image":"toolbox"}'
want='{"error":{"message":"Missing required capability: sandbox:write","code":"FORBIDDEN"}}'
[ "$code" = 403 ] && [ "$body" = "$want" ] && ok "403 body is exactly $want" || bad "403: $code $body"

# --- concurrency: erin runs one thing at a time.
erin=$(mint erin $caps)
req "$erin" POST /v1/sandboxes '{"image":"python"}'
esbx=$(jget "$body" '["id"]')
# The slow run streams (text/event-stream): once its first line is out it
# holds the slot, and a second run at once is refused.
curl -s -N -o "$tmp/slow" -H "Authorization: Bearer $erin" -H 'Content-Type: application/json' \
    -H 'Accept: text/event-stream' \
    -d '{"code":"print(\"started\", flush=True); import time; time.sleep(5)","language":"python"}' \
    "$url/v1/sandboxes/$esbx/execute" &
slow=$!
for _ in $(seq 300); do grep -q started "$tmp/slow" 2>/dev/null && break; sleep 0.05; done
hdr=$(curl -s -D - -o "$tmp/b" -H "Authorization: Bearer $erin" -H 'Content-Type: application/json' \
    -d '{"code":"print(1)","language":"python"}' "$url/v1/sandboxes/$esbx/execute")
[[ $hdr == "HTTP/1.1 429"* ]] && grep -qi '^retry-after:' <<<"$hdr" &&
    ok "a second run at once: 429 (concurrent 1)" || bad "concurrency: $hdr $(cat "$tmp/b")"
wait $slow
grep -q '"exit_code":0' "$tmp/slow" && ok "the first run finished" || bad "slow run: $(cat "$tmp/slow")"
req "$erin" POST "/v1/sandboxes/$esbx/execute" '{"code":"print(1)","language":"python"}'
[ "$code" = 200 ] && ok "after it ended, the slot is free" || bad "concurrency after: $code $body"

# A background run holds its slot until it ends, and a kill ends it.
req "$erin" POST "/v1/sandboxes/$esbx/execute/background" '{"code":"import time; time.sleep(60)","language":"python"}'
bpid=$(jget "$body" '["pid"]' 2>/dev/null)
[ "$code" = 202 ] && [ -n "$bpid" ] && ok "execute/background: 202, pid $bpid" || bad "background: $code $body"
req "$erin" POST "/v1/sandboxes/$esbx/execute" '{"code":"print(1)","language":"python"}'
[ "$code" = 429 ] && ok "a background run holds the only slot" || bad "background slot: $code $body"
req "$erin" POST "/v1/sandboxes/$esbx/execute/kill?pid=$bpid"
[ "$code" = 200 ] || [ "$code" = 204 ] && ok "execute/kill" || bad "kill: $code $body"
for _ in $(seq 50); do
	req "$erin" POST "/v1/sandboxes/$esbx/execute" '{"code":"print(1)","language":"python"}'
	[ "$code" = 200 ] && break; sleep 0.1
done
[ "$code" = 200 ] && ok "after the kill, the slot is free" || bad "after kill: $code $body"
req "$erin" GET "/v1/sandboxes/$esbx/execute/processes"
[[ $body == *"\"pid\":$bpid,"*'"status":"killed"'* ]] && ok "processes shows it killed" || bad "processes: $code $body"

# --- tokens: expired, wrong audience, unknown key, forged.
frank=$(mint frank $caps)
kid=$("$KEEP" key id "$tmp/issuer.public")
now=$(date -u +%s)
iso() { date -u -d "@$1" +%Y-%m-%dT%H:%M:%SZ; }
sign() {
	"$KEEP" token sign --secret-key "$tmp/issuer.secret" --footer "{\"kid\":\"$kid\"}" "$1"
}
claims() { # aud iat exp
	printf '{"iss":"keep","sub":"frank","aud":"%s","iat":"%s","exp":"%s","jti":"j%s","caps":["sandbox:read"]}' \
	    "$1" "$(iso "$2")" "$(iso "$3")" "$RANDOM"
}
expired=$(sign "$(claims keep $((now - 600)) $((now - 300)))")
wrongaud=$(sign "$(claims elsewhere $now $((now + 300)))")
good=$(sign "$(claims keep $now $((now + 300)))")
"$KEEP" key generate --out "$tmp" --name other >/dev/null
otherkey=$("$KEEP" token sign --secret-key "$tmp/other.secret" \
    --footer "{\"kid\":\"$("$KEEP" key id "$tmp/other.public")\"}" "$(claims keep $now $((now + 300)))")
req "$good" GET /v1/sandboxes
[ "$code" = 200 ] && ok "a hand-signed token with the issuer key works" || bad "good token: $code $body"
for t in expired wrongaud otherkey; do
	hdr=$(curl -s -D - -o "$tmp/b" -H "Authorization: Bearer ${!t}" "$url/v1/sandboxes")
	[[ $hdr == "HTTP/1.1 401"* ]] && grep -qi '^www-authenticate: bearer' <<<"$hdr" &&
	    grep -q '"code":"UNAUTHORIZED"' "$tmp/b" && ok "$t token: 401 ($(cat "$tmp/b"))" ||
	    bad "$t: $hdr $(cat "$tmp/b")"
done
forged=${frank%?}A; [ "$forged" = "$frank" ] && forged=${frank%?}B
req "$forged" GET /v1/sandboxes
[ "$code" = 401 ] && ok "a token with one character changed: 401" || bad "forged: $code $body"

# --- idempotency.
idem() { curl -s -o - -w '\n%{http_code}' -H "Authorization: Bearer $frank" \
    -H 'Content-Type: application/json' -H "Idempotency-Key: $1" -d "$2" "$url/v1/sandboxes"; }
first=$(idem k1 '{"image":"toolbox"}'); again=$(idem k1 '{"image":"toolbox"}')
[[ $first == *$'\n201' ]] && [ "$first" = "$again" ] && ok "same key, same body: the first result again" ||
    bad "idempotency replay: $first / $again"
other=$(idem k1 '{"image":"python"}')
[[ $other == *$'\n409' ]] && [[ $other == *CONFLICT* ]] && ok "same key, another body: 409" || bad "idempotency conflict: $other"
req "$frank" GET /v1/sandboxes
n=$(jget "$body" '["sandboxes"].__len__()')
[ "$n" = 1 ] && ok "only one sandbox was made" || bad "idempotency made $n: $body"
fsbx=$(jget "${first%$'\n'*}" '["id"]')
# A deferred reply (execute) is kept too: the retry gets the first run's
# output, not a second run; a retry while it runs is told so.
req "$frank" POST /v1/sandboxes '{"image":"python"}'
psbx=$(jget "$body" '["id"]')
ex() { curl -s -o - -w '\n%{http_code}' -H "Authorization: Bearer $frank" \
    -H 'Content-Type: application/json' -H "Idempotency-Key: $1" -d "$2" "$url/v1/sandboxes/$psbx/execute"; }
r1=$(ex e1 '{"code":"import random; print(random.random())","language":"python"}')
r2=$(ex e1 '{"code":"import random; print(random.random())","language":"python"}')
[[ $r1 == *$'\n200' ]] && [ "$r1" = "$r2" ] && ok "execute with the same key: the first run's output again" ||
    bad "execute idempotency: $r1 / $r2"
# Two requests with one key at once: whichever arrives second, while the
# first runs, is told it is in progress (no assumption on their order).
ex e2 '{"code":"import time; time.sleep(5)","language":"python"}' >"$tmp/slow2" &
slow2=$!
r3=$(ex e2 '{"code":"import time; time.sleep(5)","language":"python"}')
wait $slow2
r4=$(cat "$tmp/slow2")
{ [[ $r3 == *$'\n409' ]] && [[ $r3 == *"in progress"* ]] && [[ $r4 == *$'\n200' ]]; } ||
    { [[ $r4 == *$'\n409' ]] && [[ $r4 == *"in progress"* ]] && [[ $r3 == *$'\n200' ]]; } &&
    ok "a retry while the first runs: 409 in progress" || bad "in flight: $r3 / $r4"

# --- server-sent events.
curl -s -N -H "Authorization: Bearer $frank" -H 'Accept: text/event-stream' \
    -H 'Content-Type: application/json' -d '{"cmd":"echo","args":["streamed"]}' \
    "$url/v1/sandboxes/$fsbx/commands/run" >"$tmp/sse"
grep -q '^event: stdout' "$tmp/sse" && grep -q 'streamed' "$tmp/sse" && grep -q '^event: exit' "$tmp/sse" &&
    ok "commands/run streams stdout and exit events" || bad "sse: $(cat "$tmp/sse")"

# --- kill -9 of the front while requests are in flight.
front=$(pgrep -P "$pid" -f '^keepd: front' | head -n 1)
inflight=
for i in 1 2 3 4; do
	curl -s -o /dev/null -H "Authorization: Bearer $frank" "$url/v1/sandboxes" &
	inflight="$inflight $!"
done
kill -9 "$front"
wait $inflight 2>/dev/null
keepd_wait_ready && req "$frank" GET "/v1/sandboxes/$fsbx" && [ "$code" = 200 ] &&
    ok "after kill -9 of the front, keepd serves again (and the sandbox is there)" ||
    bad "front restart: $code $body"
[ "$(pgrep -P "$pid" -f '^keepd: front' | head -n 1)" != "$front" ] && ok "a new front process" || bad "front not restarted"

keepd_finish
