#!/usr/bin/env bash
# Many clients at once, on keep-alive connections, while the policy
# process and then the vmm are killed with -9: every request gets a
# whole answer (200 while the peers are up, 503 while one restarts),
# none hangs or loses its connection, and the requests of different
# clients are never mixed up. Then all are served again. And a peer that
# stops answering (SIGSTOP) costs its waiting requests a 503 at their
# deadline, not the front its loop.
# It boots no guest: it runs where no guest platform does.
KEEPD_NO_GUEST=1
source "$(dirname "$0")/../lib/keepd.sh"

cat >"$tmp/test.policy" <<'EOP'
agent "alice" { allow sandbox:read, sandbox:write }
agent "bob" { allow sandbox:read, sandbox:write }
EOP
keepd_start "$tmp/test.policy"
alice=$(mint alice sandbox:read,sandbox:write 30m)
bob=$(mint bob sandbox:read,sandbox:write 30m)
req "$alice" POST /v1/sandboxes '{"image":"toolbox","metadata":{"owner":"alice"}}'
[ "$code" = 201 ] || bad "create: $code $body"
sa=$(jget "$body" '["id"]')
req "$bob" POST /v1/sandboxes '{"image":"toolbox","metadata":{"owner":"bob"}}'
sb=$(jget "$body" '["id"]')

# clients.py URL SECONDS A_TOKEN A_ID B_TOKEN B_ID STARTED: 24 threads, each on
# one keep-alive connection, alternating alice's and bob's sandbox. It
# prints "status count" lines, and "mixed" if a reply named the wrong
# sandbox, "lost" for a request without a whole reply.
cat >"$tmp/clients.py" <<'EOPY'
import http.client, json, sys, threading, time, urllib.parse
url, secs = sys.argv[1], float(sys.argv[2])
who = [(sys.argv[3], sys.argv[4]), (sys.argv[5], sys.argv[6])]
started = sys.argv[7] # created once a first request is served
u = urllib.parse.urlparse(url)
counts, lock = {}, threading.Lock()
def note(k):
    with lock:
        counts[k] = counts.get(k, 0) + 1
def client(n):
    end = time.time() + secs
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
    i = 0
    while time.time() < end:
        tok, sid = who[(n + i) % 2]
        i += 1
        try:
            c.request("GET", "/v1/sandboxes/" + sid,
                      headers={"Authorization": "Bearer " + tok})
            r = c.getresponse()
            body = r.read()
        except Exception:
            note("lost")
            c.close()
            c = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
            continue
        note(str(r.status))
        if r.status == 200 and i == 1:
            open(started, "a").close()
        if r.status == 200 and json.loads(body).get("id") != sid:
            note("mixed")
threads = [threading.Thread(target=client, args=(n,)) for n in range(24)]
for t in threads: t.start()
for t in threads: t.join()
for k, v in sorted(counts.items()): print(k, v)
EOPY

python3 "$tmp/clients.py" "$url" 6 "$alice" "$sa" "$bob" "$sb" "$tmp/started" >"$tmp/out" &
cpid=$!
# The kills come while the clients are served, however slowly they start:
# the policy process once a first request is answered, the vmm once the
# policy process is back.
for _ in $(seq 100); do [ -e "$tmp/started" ] && break; sleep 0.1; done
old=$(pgrep -P "$pid" -f '^keepd: policy' | head -n 1)
kill -9 "$old"
for _ in $(seq 100); do
	new=$(pgrep -P "$pid" -f '^keepd: policy' | head -n 1)
	[ -n "$new" ] && [ "$new" != "$old" ] && break; sleep 0.1
done
kill -9 "$(pgrep -P "$pid" -f '^keepd: vmm' | head -n 1)"
wait "$cpid"
cat "$tmp/out"
total=$(awk '{ n += $2 } END { print n + 0 }' "$tmp/out")
ok200=$(awk '$1 == 200 { print $2 }' "$tmp/out")
[ "${ok200:-0}" -gt 100 ] && ok "$ok200 of $total requests served by 24 concurrent clients" ||
    bad "too few served: $(tr '\n' ' ' <"$tmp/out")"
bogus=$(awk '$1 != 200 && $1 != 503 { printf "%s ", $0 }' "$tmp/out")
[ -z "$bogus" ] && ok "every other answer is 503 while a peer restarts" ||
    bad "unexpected outcomes: $bogus"

# Served again once both are back.
for _ in $(seq 100); do
	req "$alice" GET "/v1/sandboxes/$sa"; [ "$code" = 200 ] && break; sleep 0.1
done
[ "$code" = 200 ] && [ "$(jget "$body" '["id"]')" = "$sa" ] &&
    ok "served again after both restarts" || bad "after restarts: $code $body"
req "$bob" GET "/v1/sandboxes/$sa"
[ "$code" = 404 ] && ok "bob still cannot see alice's sandbox" || bad "bob: $code $body"

# A peer that stops answering (SIGSTOP): waiting requests fail with 503
# at their deadline, the front goes on serving what does not need it
# (healthz), and once the peer answers again so does everything else;
# its late answers to the requests that gave up are dropped.
policy=$(pgrep -P "$pid" -f '^keepd: policy' | head -n 1)
kill -STOP "$policy"
curl -s -o "$tmp/stuck" -w '%{http_code}' -H "Authorization: Bearer $alice" \
    "$url/v1/sandboxes/$sa" >"$tmp/stuck.code" &
cpid=$!
sleep 1
hz=$(curl -s -m 3 -o /dev/null -w '%{http_code}' "$url/healthz")
[ "$hz" = 200 ] && ok "healthz is served while the policy process is stopped" || bad "healthz: $hz"
wait "$cpid"
[ "$(cat "$tmp/stuck.code")" = 503 ] && grep -q "did not answer" "$tmp/stuck" &&
    ok "a request waiting on the stopped policy process: 503 at its deadline" ||
    bad "stuck: $(cat "$tmp/stuck.code") $(cat "$tmp/stuck")"
kill -CONT "$policy"
for _ in $(seq 50); do
	req "$alice" GET "/v1/sandboxes/$sa"; [ "$code" = 200 ] && break; sleep 0.1
done
[ "$code" = 200 ] && ok "served again once it answers" || bad "after SIGCONT: $code $body"
keepd_finish
