#!/usr/bin/env bash
# kill -9 of each child of keepd in turn (front, policy, vmm, store,
# egress) while clients write sandboxes' variables, several at once on
# the same sandbox: every write that was acknowledged (200) must be
# there afterwards, through the API and, after a restart of keepd, from
# the store. Writes that failed (the child was down) may or may not be.
# It boots no guest: it runs where no guest platform does.
KEEPD_NO_GUEST=1
source "$(dirname "$0")/../lib/keepd.sh"

cat >"$tmp/test.policy" <<'EOP'
agent "alice" {
	allow sandbox:read, sandbox:write
}
EOP
keepd_start "$tmp/test.policy"
alice=$(mint alice sandbox:read,sandbox:write 30m)
sbxs=()
for i in 1 2; do
	req "$alice" POST /v1/sandboxes '{"image":"toolbox"}'
	[ "$code" = 201 ] || { bad "create: $code $body"; keepd_finish; exit 1; }
	sbxs+=("$(jget "$body" '["id"]')")
done

# The load: 6 threads, each writing its own keys to both sandboxes in
# turn (so two syncs of one sandbox are often in flight at once), until
# told to stop; each acknowledged key=value is logged.
cat >"$tmp/load.py" <<'EOPY'
import http.client, json, os, sys, threading, time
host, port = sys.argv[1], int(sys.argv[2])
tok, stop, out = sys.argv[3], sys.argv[4], sys.argv[5]
sbxs = sys.argv[6:]
lock = threading.Lock()
acked = open(out, 'w')
statuses = {}
def worker(n):
    i = 0
    c = None
    # Until told to stop (or a bound far past it), not a number of
    # tries: on a loaded machine the children take longer to come back,
    # and tries spent on a refused connection left too few writes.
    end = time.time() + 300
    while not os.path.exists(stop) and time.time() < end:
        i += 1
        sbx = sbxs[i % len(sbxs)]
        key, val = 'K%d_%d' % (n, i), 'v%d' % i
        try:
            if c is None:
                c = http.client.HTTPConnection(host, port, timeout=10)
            c.request('PATCH', '/v1/sandboxes/%s/env' % sbx,
                      json.dumps({'env': {key: val}}),
                      {'Authorization': 'Bearer ' + tok,
                       'Content-Type': 'application/json'})
            r = c.getresponse()
            body = r.read()
            with lock:
                statuses[r.status] = statuses.get(r.status, 0) + 1
                if r.status != 200 and statuses[r.status] < 4:
                    print(r.status, body[:200], file=sys.stderr)
            if r.status == 200:
                with lock:
                    acked.write('%s %s %s\n' % (sbx, key, val))
                    acked.flush()
            elif r.getheader('Connection', '').lower() == 'close':
                c.close(); c = None
        except Exception:
            if c is not None:
                c.close()
            c = None
            time.sleep(0.05)
ts = [threading.Thread(target=worker, args=(n,)) for n in range(6)]
for t in ts: t.start()
for t in ts: t.join()
print('statuses:', sorted(statuses.items()), file=sys.stderr)
EOPY
port=${url##*:}
python3 "$tmp/load.py" 127.0.0.1 "$port" "$alice" "$tmp/stop" "$tmp/acked" "${sbxs[@]}" 2>"$tmp/load.log" &
lpid=$!
child_pid() { ps --ppid "$pid" -o pid=,args= | awk -v t="keepd: $1" 'index($0, t) { print $1; exit }'; }
for name in vmm store front policy egress vmm; do
	# Some writes acknowledged before each kill.
	n0=$(wc -l <"$tmp/acked")
	for _ in $(seq 200); do [ "$(wc -l <"$tmp/acked")" -gt $((n0 + 10)) ] && break; sleep 0.05; done
	c=$(child_pid "$name")
	[ -n "$c" ] || { bad "no $name process"; continue; }
	kill -9 "$c"
	for _ in $(seq 100); do
		c2=$(child_pid "$name")
		[ -n "$c2" ] && [ "$c2" != "$c" ] && break
		sleep 0.05
	done
	keepd_wait_ready || bad "not ready after the $name was killed"
	# Back when a sandbox answers again (the vmm restores them).
	for _ in $(seq 200); do
		req "$alice" GET "/v1/sandboxes/${sbxs[0]}/env"
		[ "$code" = 200 ] && break
		sleep 0.05
	done
	[ "$code" = 200 ] || bad "the sandboxes did not come back after the $name: $code $body"
done
touch "$tmp/stop"
wait "$lpid"
nacked=$(wc -l <"$tmp/acked")
[ "$nacked" -gt 60 ] && ok "$nacked writes acknowledged under the kills ($(tail -n 1 "$tmp/load.log"))" ||
    bad "only $nacked writes acknowledged: $(tail -n 5 "$tmp/load.log")"

# Every acknowledged key=value is in its sandbox.
check() {
	local missing=0 s env
	for s in "${sbxs[@]}"; do
		for _ in $(seq 100); do
			req "$alice" GET "/v1/sandboxes/$s/env"
			[ "$code" = 503 ] || break
			sleep 0.1
		done
		[ "$code" = 200 ] || { bad "$1: GET env: $code $body"; return; }
		echo "$body" >"$tmp/env.$s"
	done
	missing=$(python3 - "$tmp" <<'EOPY'
import json, sys
tmp = sys.argv[1]
envs = {}
missing = 0
for line in open(tmp + '/acked'):
    sbx, key, val = line.split()
    if sbx not in envs:
        envs[sbx] = json.load(open('%s/env.%s' % (tmp, sbx)))['env']
    if envs[sbx].get(key) != val:
        missing += 1
        print('missing %s %s=%s' % (sbx, key, val), file=sys.stderr)
print(missing)
EOPY
)
	[ "$missing" = 0 ] && ok "$1: every acknowledged write is there" || bad "$1: $missing acknowledged writes missing"
}
check "after the kills"
keepd_restart
check "after a restart (from the store)"

keepd_finish
