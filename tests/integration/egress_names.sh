#!/usr/bin/env bash
# Out of the sandbox by name (docs/egress.md, "Names and connections"),
# through a real keepd and the python image: the guest's resolver
# (127.0.0.53, answered by the VMM) gives an allowed name an address of
# keep's own (198.18.0.0/15); a connect to it is opened by the egress
# process (hosts_file, address checks) and handed to the guest; urllib
# gets the host's server's body. A name no rule allows is gaierror; an
# allowed name on a port its rule does not list is ConnectionRefusedError
# and the run's result says limits: egress; malformed DNS packets get
# FORMERR or nothing, never a crash; the decisions are in the audit log.
# Loopback only: the server is on 127.0.0.1, names map there through
# egress.hosts_file, and the rule says private.
set -u
source "$(dirname "$0")/../lib/keepd.sh"
[ -f "$B/images/python.img" ] || { echo "SKIP: no python image"; exit 77; }

mkdir -p "$tmp/www"
echo "hello from the host" >"$tmp/www/x"
python3 -m http.server --bind 127.0.0.1 --directory "$tmp/www" 0 \
    >"$tmp/http.out" 2>&1 &
hpid=$!
trap 'kill $hpid $fpid 2>/dev/null; keepd_cleanup' EXIT
for _ in $(seq 50); do
	hp=$(sed -n 's/.*port \([0-9]*\).*/\1/p' "$tmp/http.out" | head -n 1)
	[ -n "$hp" ] && break
	sleep 0.1
done
[ -n "$hp" ] || { echo "FAIL: http server"; exit 1; }
# A port nothing listens on, which no rule lists either.
cp=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
# A server whose one-connection backlog is full: a connect to it waits
# (its SYNs dropped) until egress's connect timeout.
python3 -c '
import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(0)
c = socket.create_connection(s.getsockname())
print("port", s.getsockname()[1], flush=True)
time.sleep(300)' >"$tmp/full.out" 2>&1 &
fpid=$!
echo "127.0.0.1 allowed.test other.test rebind.test slow.test" >"$tmp/hosts"

for _ in $(seq 50); do
	sp=$(sed -n 's/^port \([0-9]*\)/\1/p' "$tmp/full.out")
	[ -n "$sp" ] && break
	sleep 0.1
done
[ -n "$sp" ] || { echo "FAIL: the full server"; exit 1; }

cat >"$tmp/test.policy" <<EOP
agent "alice" {
	allow sandbox:read, sandbox:write, exec
	exec "python", "node"
	egress "allowed.test":$hp private
	egress "rebind.test":$hp
	egress "slow.test":$sp private
	timeout 60s
}
EOP
KEEPD_IMAGES="python node" KEEPD_YAML_EXTRA="egress:
  hosts_file: $tmp/hosts
  connect_timeout: 5s" keepd_start "$tmp/test.policy"
alice=$(mint alice sandbox:read,sandbox:write,exec,egress)
noegress=$(mint alice sandbox:read,sandbox:write,exec)
req "$alice" POST /v1/sandboxes '{"image":"python"}'
[ "$code" = 201 ] || { bad "sandbox: $code $body"; keepd_finish; exit 1; }
sbx=$(jget "$body" '["id"]')

pyexec() { # pyexec TOKEN CODE: execute in sbx; sets code, body, out
	req "$1" POST "/v1/sandboxes/$sbx/execute" \
	    "$(python3 -c 'import json,sys; print(json.dumps({"code": sys.argv[1], "language": "python"}))' "$2")"
	out=$(jget "$body" '["stdout"]' 2>/dev/null || echo "HTTP $code $body")
}

pyexec "$alice" "
import socket, urllib.request
a = socket.getaddrinfo('allowed.test', $hp, socket.AF_INET, socket.SOCK_STREAM)[0][4][0]
print('addr', a.startswith('198.18.'), a == socket.gethostbyname('allowed.test'))
print('all', sorted({i[4][0].split('.')[0] for i in socket.getaddrinfo('allowed.test', $hp)}))
print('body', urllib.request.urlopen('http://allowed.test:$hp/x', timeout=30).read().decode().strip())
"
[ "$out" = $'addr True True\nall [\'198\']\nbody hello from the host' ] &&
    ok "an allowed name resolves to 198.18/15 (stable, IPv4 only) and urllib fetches the host's server through it" ||
    bad "allowed: $out $(jget "$body" '["stderr"]' 2>/dev/null)"

# The options a guest set before its connect go with it onto egress's
# socket, and only those: a send buffer it did not set stays the
# kernel's to tune (written back, it was locked small and a stream ran
# at one 32 KiB window a round trip). Compared with the same code
# natively, against the same server.
sockopts='
import socket, sys
host = sys.argv[1] if len(sys.argv) > 1 else "allowed.test"
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
s.connect((host, PORT))
t = socket.socket(); t.connect((host, PORT))
print("set", s.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF),
      "unset", t.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF))
'
sockopts=${sockopts//PORT/$hp}
pyexec "$alice" "$sockopts"
native=$(python3 -c "$sockopts" 127.0.0.1)
[ "$out" = "$native" ] && [[ $out == "set 131072 unset "* ]] &&
    ok "socket options set before a connect by name carry over, unset ones stay the kernel's ($out)" ||
    bad "sockopts: keep '$out', native '$native' $(jget "$body" '["stderr"]' 2>/dev/null)"

# Processes of one run resolve and connect at once: they take turns
# through the relay, and share the run's table of names.
pyexec "$alice" "
import os, socket, urllib.request
pids = []
for i in range(4):
    pid = os.fork()
    if pid == 0:
        try:
            for j in range(20): # refused names are asked every time
                try:
                    socket.gethostbyname('p%d-%d.test' % (i, j))
                    os._exit(3)
                except socket.gaierror:
                    pass
            b = urllib.request.urlopen('http://allowed.test:$hp/x', timeout=30).read()
            os._exit(0 if b.strip() == b'hello from the host' else 1)
        except Exception:
            os._exit(2)
    pids.append(pid)
print(sorted(os.waitstatus_to_exitcode(os.waitpid(p, 0)[1]) for p in pids))
"
[ "$out" = "[0, 0, 0, 0]" ] &&
    ok "four processes of a run resolve and fetch at once" ||
    bad "processes at once: $out $(jget "$body" '["stderr"]' 2>/dev/null)"

pyexec "$alice" "
import socket
try:
    socket.getaddrinfo('other.test', $hp)
    print('resolved')
except socket.gaierror as e:
    print('gaierror', e.errno == socket.EAI_NONAME)
"
[ "$out" = "gaierror True" ] && [ "$(jget "$body" '["limits"]')" = "['egress']" ] &&
    [ "$(jget "$body" '["egress_refused"]')" = other.test ] &&
    ok "a name no rule allows is socket.gaierror (NXDOMAIN), though hosts_file knows it; the result says limits: egress, egress_refused: other.test" ||
    bad "denied name: $out $body"

pyexec "$alice" "
import socket
try:
    socket.create_connection(('allowed.test', $cp), timeout=30)
    print('connected')
except ConnectionRefusedError:
    print('refused')
"
[ "$out" = refused ] && [ "$(jget "$body" '["limits"]')" = "['egress']" ] &&
    [ "$(jget "$body" '["egress_refused"]')" = "allowed.test:$cp" ] &&
    ok "an allowed name on a port its rule does not list: ConnectionRefusedError, limits: egress, egress_refused: allowed.test:$cp" ||
    bad "refused port: $out $body"

# A rebinding answer: a name the rules allow without `private` whose
# real answer is a loopback address (as a hostile DNS would give, here
# hosts_file) resolves for the guest, and the connect is refused by
# egress's address check, with its reason in the audit log.
pyexec "$alice" "
import socket
print(socket.gethostbyname('rebind.test').startswith('198.18.'))
try:
    socket.create_connection(('rebind.test', $hp), timeout=30)
    print('connected')
except PermissionError:
    print('refused')
"
[ "$out" = $'True\nrefused' ] && [ "$(jget "$body" '["limits"]')" = "['egress']" ] &&
    [ "$(jget "$body" '["egress_refused"]')" = "rebind.test:$hp" ] &&
    ok "a name whose answer is a loopback address, under a rule without private: PermissionError, limits: egress, egress_refused: rebind.test:$hp" ||
    bad "rebinding: $out $body"

pyexec "$alice" "
import socket
a = socket.gethostbyname('allowed.test')
s = socket.socket()
try:
    s.connect(('198.18.200.1', $hp))
    print('connected')
except PermissionError:
    print('eacces')
"
[ "$out" = eacces ] && ok "an address of the range keep gave no name: EACCES" ||
    bad "unknown synthetic: $out"

pyexec "$noegress" "
import socket
try:
    socket.getaddrinfo('allowed.test', $hp)
    print('resolved')
except socket.gaierror:
    print('gaierror')
"
[ "$out" = gaierror ] && ok "a token without egress resolves nothing" ||
    bad "token without egress: $out"

# A hostile guest's packets: each answered FORMERR, NOTIMP or not at all
# (the answer is there when sendto returns), then a query still works.
pyexec "$alice" "
import os, socket, struct
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setblocking(False)
hdr = lambda f, qd, an=0: struct.pack('>HHHHHH', 0x1234, f, qd, an, 0, 0)
q = b'\x07allowed\x04test\x00' + struct.pack('>HH', 1, 1)
pkts = [b'', b'\x00', b'\xff' * 12, hdr(0x0100, 2) + q + q,
    hdr(0x0100, 1) + b'\xc0\x0c' + struct.pack('>HH', 1, 1),
    hdr(0x0100, 1) + b'\x40' + b'a' * 64 + b'\x00' + struct.pack('>HH', 1, 1),
    hdr(0x0100, 1) + b'\x07allowed', hdr(0x8100, 1) + q, hdr(0x1100, 1) + q,
    hdr(0x0100, 1, 1) + q, hdr(0x0100, 1) + b'\x03a\x00b\x00' + struct.pack('>HH', 1, 1),
    b'\x00' * 600, hdr(0x0100, 1) + q]
res = []
for p in pkts:
    s.sendto(p, ('127.0.0.53', 53))
    try:
        r = s.recv(1024)
        res.append(str(r[3] & 15) + ('+' + str(struct.unpack('>H', r[6:8])[0]) if len(r) > 8 else ''))
    except BlockingIOError:
        res.append('-')
print(' '.join(res))
c = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
c.connect(('127.0.0.53', 53))
c.setblocking(False)
os.write(c.fileno(), hdr(0x0100, 1) + q)
r = c.recv(512)
print('write', r[3] & 15, struct.unpack('>H', r[6:8])[0])
print(socket.gethostbyname('allowed.test').startswith('198.18.'))
"
[ "$out" = $'- - - 1+0 1+0 1+0 1+0 - 4+0 1+0 3+0 - 0+1\nwrite 0 1\nTrue' ] &&
    ok "malformed DNS packets: FORMERR, NOTIMP, NXDOMAIN or dropped; the resolver answers on (write on a connected socket too)" ||
    bad "hostile DNS: $out $(jget "$body" '["stderr"]' 2>/dev/null)"

# DNS over TCP: the same answers, framed with a 2-byte length; two
# queries in one write, one split over three; a length over 512 ends
# the connection; glibc's resolver with use-vc (writev) resolves.
pyexec "$alice" "
import os, socket, struct, subprocess
def q(name):
    m = struct.pack('>HHHHHH', 0x4242, 0x0100, 1, 0, 0, 0)
    m += b''.join(bytes([len(l)]) + l.encode() for l in name.split('.'))
    m += b'\x00' + struct.pack('>HH', 1, 1)
    return struct.pack('>H', len(m)) + m
def exactly(s, n):
    b = b''
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c:
            return None
        b += c
    return b
def answer(s):
    b = exactly(s, struct.unpack('>H', exactly(s, 2))[0])
    an = struct.unpack('>H', b[6:8])[0]
    return b[3] & 15, an, socket.inet_ntoa(b[-4:]) if an else None
want = socket.gethostbyname('allowed.test')
s = socket.create_connection(('127.0.0.53', 53), timeout=30)
print('peer', s.getpeername())
s.sendall(q('allowed.test') + q('other.test'))
a, b = answer(s), answer(s)
print(a[0], a[1], a[2] == want, b[0], b[1])
m = q('allowed.test')
s.send(m[:1]); s.send(m[1:7]); s.send(m[7:])
print(answer(s)[2] == want)
s.send(struct.pack('>H', 600) + b'x')
print('closed', s.recv(10) == b'')
r = subprocess.run(['python3', '-c', 'import socket; print(socket.gethostbyname(\"allowed.test\"))'],
    env=dict(os.environ, RES_OPTIONS='use-vc'), capture_output=True, text=True)
print('use-vc', r.stdout.strip() == want, r.stderr.strip())
"
[ "$out" = $'peer (\'127.0.0.53\', 53)\n0 1 True 3 0\nTrue\nclosed True\nuse-vc True ' ] &&
    ok "DNS over TCP: framed answers as UDP's (two in a write, one split), an oversized frame closes, glibc's use-vc resolves" ||
    bad "dns over tcp: $out $(jget "$body" '["stderr"]' 2>/dev/null)"

# node: dns.lookup and a non-blocking connect through libuv's epoll.
if [ -f "$B/images/node.img" ]; then
	req "$alice" POST /v1/sandboxes '{"image":"node"}'
	nsb=$(jget "$body" '["id"]')
	req "$alice" POST "/v1/sandboxes/$nsb/commands/run" "$(python3 -c '
import json, sys
print(json.dumps({"cmd": "node", "args": ["-e", sys.argv[1]]}))' "
require('http').get('http://allowed.test:$hp/x', r => {
  let b = ''; r.on('data', d => b += d);
  r.on('end', () => console.log(r.statusCode, b.trim()));
}).on('error', e => console.log('error', e.code));
require('dns').lookup('other.test', e => console.log('other', e && e.code));
")"
	out=$(jget "$body" '["stdout"]' 2>/dev/null || echo "HTTP $code $body")
	[ "$(echo "$out" | sort)" = $'200 hello from the host\nother ENOTFOUND' ] &&
	    ok "node: http.get through an allowed name; another name ENOTFOUND" ||
	    bad "node: $out $(jget "$body" '["stderr"]' 2>/dev/null)"
fi

# keep run has no policy to allow a name: NXDOMAIN at once, localhost
# still /etc/hosts'.
mkdir -p "$tmp/ws"
cat >"$tmp/ws/names.py" <<'EOPY'
import socket
try:
    socket.getaddrinfo('allowed.test', 80)
    print('resolved')
except socket.gaierror as e:
    print('gaierror', e.errno == socket.EAI_NONAME)
print(socket.getaddrinfo('localhost', 80, socket.AF_INET)[0][4][0])
EOPY
out=$("$KEEP" run --trust "$B/keys/dev.public" --timeout 60s --workspace "$tmp/ws" \
    "$B/images/python.img" python3 names.py 2>&1)
[ "$out" = $'gaierror True\n127.0.0.1' ] &&
    ok "keep run: every name NXDOMAIN (no relay), localhost from /etc/hosts" ||
    bad "keep run names: $out"

# A signal while the connect waits on egress (here the guest's own
# timer) does not cut it short: the guest's connect ends as egress's
# does, timed out; before, it answered EINTR, and CPython, polling the
# socket as Linux's interrupted connect asks, took the socket that never
# connected for a connected one.
pyexec "$alice" "
import signal, socket
ticks = []
signal.signal(signal.SIGALRM, lambda *a: ticks.append(1))
signal.setitimer(signal.ITIMER_REAL, 0.2, 0.2)
try:
    s = socket.create_connection(('slow.test', $sp), timeout=30)
    print('connected', s.getpeername())
except OSError as e:
    print('refused', type(e).__name__)
signal.setitimer(signal.ITIMER_REAL, 0)
print('ticks', len(ticks) > 0)
"
[ "$out" = $'refused TimeoutError\nticks True' ] &&
    ok "a connect a signal interrupts waits for egress's answer (timed out), never a socket that never connected" ||
    bad "interrupted connect: $out $(jget "$body" '["stderr"]' 2>/dev/null)"

# The audit log: the queries and the connects, allowed and refused.
for _ in $(seq "$(slow 50)"); do
	"$KEEP" audit tail -n 1000 --data "$tmp/state/db" >"$tmp/audit" 2>&1
	grep -q "egress.connect.*allowed.test:$cp.*deny" "$tmp/audit" && break
	sleep 0.1
done
grep -q "egress.dns.*allowed.test.*allow" "$tmp/audit" &&
    grep -q "egress.dns.*other.test.*deny" "$tmp/audit" &&
    grep -q "egress.connect.*allowed.test:$hp.*allow" "$tmp/audit" &&
    grep -q "egress.connect.*allowed.test:$cp.*deny" "$tmp/audit" &&
    grep -q "egress.connect.*rebind.test:$hp.*deny" "$tmp/audit" &&
    ok "the audit log has the queries and the connects, allowed and refused" ||
    bad "audit: $(grep egress "$tmp/audit")"

keepd_finish
