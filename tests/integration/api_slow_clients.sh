#!/usr/bin/env bash
# No client can starve the others of the front: hundreds of idle
# connections from one address, then from many, while another client's
# authenticated request and /healthz still succeed; and clients that do
# not read their (large) replies are closed once the replies waiting pass
# limits.max_replies_pending, the front's memory staying bounded; every
# child's heap is limited (limits.process_memory, RLIMIT_DATA), and a
# front at its limit refuses the one reply it cannot build and goes on.
source "$(dirname "$0")/../lib/keepd.sh"

cat >"$tmp/test.policy" <<'EOP'
agent "alice" {
	allow sandbox:read, sandbox:write, exec
	exec "python"
	timeout 60s
	output 8M
}
EOP
mkdir -p "$tmp/state/images" "$tmp/policy"
cp -l "$B"/images/*.img "$tmp/state/images/" 2>/dev/null ||
	cp "$B"/images/*.img "$tmp/state/images/"
cp "$tmp/test.policy" "$tmp/policy/"
"$KEEP" key generate --out "$tmp" --name issuer >/dev/null || exit 1
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
limits:
  max_connections: 256
  max_connections_per_client: 16
  unauthenticated_timeout: 30s
  max_replies_pending: 16M
  output_max: 8M
  process_memory: 512M
EOC
url=http://127.0.0.1:$port
keepd_launch
alice=$(mint alice sandbox:read,sandbox:write,exec)

# hold N SRC...: open N idle connections spread over the source addresses
# and keep them open until $tmp/release exists; prints how many stayed.
cat >"$tmp/hold.py" <<'EOPY'
import os, socket, sys, time
port, n, srcs = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
held = []
for i in range(n):
    s = socket.socket()
    s.bind((srcs[i % len(srcs)], 0))
    try:
        s.connect(('127.0.0.1', port))
    except OSError:
        continue
    held.append(s)
time.sleep(0.5)
alive = 0
for s in held:
    s.setblocking(False)
    try:
        s.recv(1)  # closed, or a 503 waiting: not held
    except BlockingIOError:
        alive += 1
    except OSError:
        pass
print(alive, flush=True)
while not os.path.exists(sys.argv[0] + '.release'):
    time.sleep(0.1)
EOPY
served() {
	req "$alice" GET /v1/sandboxes
	[ "$code" = 200 ] || { echo "auth $code $body"; return 1; }
	[ "$(curl -s -o /dev/null -w '%{http_code}' "$url/healthz")" = 200 ] || { echo healthz; return 1; }
}

# --- 1,024 idle connections from one address: it keeps 16.
python3 "$tmp/hold.py" "$port" 1024 127.0.0.2 >"$tmp/held1" &
hpid=$!
for _ in $(seq 100); do [ -s "$tmp/held1" ] && break; sleep 0.1; done
[ "$(cat "$tmp/held1")" = 16 ] && ok "one address holds 16 connections of 1,024 tried" || bad "held from one address: $(cat "$tmp/held1")"
why=$(served) && ok "meanwhile another client's authenticated request and /healthz succeed" || bad "starved by one address: $why"
touch "$tmp/hold.py.release"; wait "$hpid"; rm -f "$tmp/hold.py.release"

# --- from 40 addresses (640 connections for 256 slots): newcomers still
# get in, the oldest idle unauthenticated connections make room.
srcs=$(for i in $(seq 40); do echo 127.0.1.$i; done)
python3 "$tmp/hold.py" "$port" 640 $srcs >"$tmp/held2" &
hpid=$!
for _ in $(seq 100); do [ -s "$tmp/held2" ] && break; sleep 0.1; done
why=$(served) && ok "with every slot taken by idle clients, a new client is served" || bad "starved by many addresses: $why"
touch "$tmp/hold.py.release"; wait "$hpid"; rm -f "$tmp/hold.py.release"

# --- clients that do not read: a 4 MiB output of control bytes is a
# JSON reply of about 25 MB; six such clients would hold 150 MB.
req "$alice" POST /v1/sandboxes '{"image":"python"}'
sbx=$(jget "$body" '["id"]')
cat >"$tmp/slow.py" <<'EOPY'
import socket, sys, time, json
port, tok, sbx, n = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
body = json.dumps({'code': "import sys; sys.stdout.write('\\x01' * (4 << 20))",
                   'language': 'python'}).encode()
req = (b'POST /v1/sandboxes/%s/execute HTTP/1.1\r\nHost: a\r\n'
       b'Authorization: Bearer %s\r\nContent-Type: application/json\r\n'
       b'Content-Length: %d\r\n\r\n' % (sbx.encode(), tok.encode(), len(body))) + body
socks = []
for i in range(n):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(('127.0.0.1', port))
    s.sendall(req)
    socks.append(s)
time.sleep(float(sys.argv[5]))
# Now read: a closed connection ends before its whole reply.
closed = 0
for s in socks:
    got = 0
    s.settimeout(30)
    try:
        while True:
            d = s.recv(1 << 20)
            if not d:
                break
            got += len(d)
            if got > 20 << 20:
                break
    except OSError:
        pass
    if got < 20 << 20:
        closed += 1
print(closed, flush=True)
EOPY
front=$(ps --ppid "$pid" -o pid=,args= | awk '/keepd: front/ { print $1; exit }')
# The front's peak with one such reply, read at once: the yardstick.
python3 "$tmp/slow.py" "$port" "$alice" "$sbx" 1 0 >"$tmp/one.out" 2>&1
[ "$(cat "$tmp/one.out")" = 0 ] && ok "one client that reads gets its whole 25 MB reply" || bad "one reader: $(cat "$tmp/one.out")"
one=$(awk '/VmHWM/ { print $2 }' "/proc/$front/status")
n=${SLOW_N:-6}
python3 "$tmp/slow.py" "$port" "$alice" "$sbx" "$n" 1 >"$tmp/slow.out" 2>&1 &
spid=$!
# Wait until the runs are done and their replies wait (bounded poll).
for _ in $(seq 300); do
	grep -q "replies wait for clients that do not read" "$tmp/log" && break
	sleep 0.2
done
wait "$spid"
rss=$(awk '/VmHWM/ { print $2 }' "/proc/$front/status")
grep -q "replies wait for clients that do not read" "$tmp/log" &&
    ok "the slowest readers are closed past max_replies_pending ($(cat "$tmp/slow.out") of $n)" || bad "no slow reader closed: $(cat "$tmp/slow.out")"
# N slow readers may cost the front, beyond what one reader cost: the
# bound, a reply waiting while the next is built (one 25 MB reply alone
# is never cut) with room for the allocator's slack, and the runs' raw
# outputs (4 MiB each) held until their replies are built. Without the
# bound, six cost 284 MB: all six replies at once.
limit=$((one + 16 * 1024 + 2 * 25 * 1024 + n * 4 * 1024))
[ "$rss" -lt "$limit" ] && ok "the front's peak memory stays bounded: ${rss} kB (one reader: ${one} kB)" || bad "front peak memory ${rss} kB, over ${limit} kB (one reader: ${one} kB)"
why=$(served) && ok "and the others are served" || bad "after slow readers: $why"

# Each process's heap is bounded: RLIMIT_DATA from limits.process_memory
# (the vmm's plus memory_max, 1G by default: it holds guest memory).
for p in front policy store egress vmm; do
	ppid=$(ps --ppid "$pid" -o pid=,args= | awk -v p="keepd: $p" '$0 ~ p { print $1; exit }')
	want=$((512 << 20)); [ "$p" = vmm ] && want=$(((512 << 20) + (1 << 30)))
	have=$(awk '/^Max data size/ { print $4 }' "/proc/$ppid/limits")
	[ "$have" = "$want" ] && ok "$p: RLIMIT_DATA $have" || bad "$p: RLIMIT_DATA $have, want $want"
done

# A front held to 48M cannot build a 25 MB reply: that request fails
# with an error, the front stays up (same pid) and serves the next.
sed -i 's/process_memory: 512M/process_memory: 48M/' "$tmp/keepd.yaml"
keepd_restart
front=$(ps --ppid "$pid" -o pid=,args= | awk '/keepd: front/ { print $1; exit }')
req "$alice" POST /v1/sandboxes '{"image":"python"}'
sbx=$(jget "$body" '["id"]')
req "$alice" POST "/v1/sandboxes/$sbx/execute" \
    '{"code":"import sys; sys.stdout.write(\"\\x01\" * (4 << 20))","language":"python"}'
[ "$code" = 500 ] && [[ $body == *"Out of memory"* ]] &&
    ok "under a 48M heap limit a 25 MB reply is refused: $code" || bad "48M front: $code ${body:0:200}"
req "$alice" POST "/v1/sandboxes/$sbx/execute" '{"code":"print(1)","language":"python"}'
[ "$code" = 200 ] && kill -0 "$front" && [ "$(ps --ppid "$pid" -o pid=,args= | awk '/keepd: front/ { print $1; exit }')" = "$front" ] &&
    ok "and the same front serves the next run" || bad "after the refused reply: $code $body"

keepd_finish
