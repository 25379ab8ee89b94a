#!/usr/bin/env bash
# Out of the sandbox by address (docs/egress.md, "Names and
# connections"): a guest's connect to an address keep gave no name asks
# the policy for an address rule (`egress "10.77.0.0/16":PORT private`),
# and egress connects to exactly that address after its class checks.
# The whole test (its servers, keepd, the guests' namespaces under it)
# runs in a network namespace this script makes, with 10.77.0.1 and
# fd77::1 on its own loopback: nothing can leave it.
# Asserts: an allowed range and port connects and reads the server's
# bytes (IPv4, IPv6, IPv4-mapped); a wrong port, an address outside the
# range, a range without `private` for a private address, and
# 169.254.169.254 (under a range, and under an exact rule) are EACCES
# with limits: egress and egress_refused; 198.18/15 without a name is
# still refused; each decision is in the audit log.
# UDP: only where a rule says `udp`, by address or by name (a UDP echo
# server on 10.77.0.1; hosts_file maps udp.test there, inside this
# namespace): the datagram's answer comes from the address the guest
# sent to; a port or a rule without udp is EACCES. A socket egress made
# cannot be re-aimed (a second connect, AF_UNSPEC, a send elsewhere, at
# "loopback" which is the host's there), bound, listened on or passed.
set -u
if [ -z "${KEEP_ADDR_NETNS:-}" ]; then
	if ! unshare -n true 2>/dev/null; then
		echo "SKIP: cannot create a network namespace"
		exit 77
	fi
	KEEP_ADDR_NETNS=1 exec unshare -n bash "$0" "$@"
fi
ip link set lo up && ip addr add 10.77.0.1/32 dev lo &&
    ip -6 addr add fd77::1/128 dev lo nodad || {
	echo "FAIL: the test's namespace"
	exit 1
}
source "$(dirname "$0")/../lib/keepd.sh"
[ -f "$B/images/python.img" ] || { echo "SKIP: no python image"; exit 77; }

# A server that says who it is on 10.77.0.1 and fd77::1, one port each.
cat >"$tmp/srv.py" <<'EOPY'
import os, socket, sys, threading
def serve(fam, addr):
    s = socket.socket(fam)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, 0))
    s.listen(16)
    os.write(1, ('%s %d\n' % (addr, s.getsockname()[1])).encode())  # one write: threads print at once
    while True:
        c, _ = s.accept()
        c.sendall(b'hello from ' + addr.encode() + b'\n')
        c.close()
def echo():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(('10.77.0.1', 0))
    os.write(1, ('udp %d\n' % s.getsockname()[1]).encode())
    while True:
        d, a = s.recvfrom(2048)
        s.sendto(b'echo ' + d, a)
threading.Thread(target=serve, args=(socket.AF_INET, '10.77.0.1'), daemon=True).start()
threading.Thread(target=echo, daemon=True).start()
serve(socket.AF_INET6, 'fd77::1')
EOPY
python3 "$tmp/srv.py" >"$tmp/srv.out" 2>&1 &
spid=$!
trap 'kill $spid 2>/dev/null; keepd_cleanup' EXIT
for _ in $(seq 50); do
	p4=$(sed -n 's/^10.77.0.1 \([0-9]*\)$/\1/p' "$tmp/srv.out")
	p6=$(sed -n 's/^fd77::1 \([0-9]*\)$/\1/p' "$tmp/srv.out")
	u4=$(sed -n 's/^udp \([0-9]*\)$/\1/p' "$tmp/srv.out")
	[ -n "$p4" ] && [ -n "$p6" ] && [ -n "$u4" ] && break
	sleep 0.1
done
[ -n "$p4" ] && [ -n "$p6" ] && [ -n "$u4" ] ||
    { echo "FAIL: servers: $(cat "$tmp/srv.out")"; exit 1; }
wrong=$((p4 == 65535 ? p4 - 1 : p4 + 1))
uwrong=$((u4 == 65535 ? u4 - 1 : u4 + 1))
echo "10.77.0.1 udp.test tcponly.test" >"$tmp/hosts"

cat >"$tmp/test.policy" <<EOP
agent "alice" {
	allow sandbox:read, sandbox:write, exec
	exec "python"
	egress "10.77.0.0/16":$p4 private, "fd77::/16":$p6 private
	egress "10.79.0.0/16":$p4
	egress "169.254.0.0/16":* private, "169.254.169.254":80 private
	egress "10.77.0.0/24":$u4 udp private, "udp.test":$u4 udp private
	egress "tcponly.test":$u4 private
	timeout 60s
}
EOP
KEEPD_IMAGES="python" KEEPD_YAML_EXTRA="egress:
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
# try FAMILY ADDR PORT: the guest's connect, and what it read or why not
try() {
	pyexec "${tok:-$alice}" "
import socket
s = socket.socket(socket.$1)
s.settimeout(30)
try:
    s.connect(('$2', $3))
    print('ok', s.recv(100).decode().strip())
except PermissionError:
    print('eacces')
except OSError as e:
    print('error', e.errno)
"
}
# refused WHAT: the result says limits: egress and names WHAT
refused() {
	[ "$out" = eacces ] && [ "$(jget "$body" '["limits"]')" = "['egress']" ] &&
	    [ "$(jget "$body" '["egress_refused"]')" = "$1" ]
}

try AF_INET 10.77.0.1 "$p4"
[ "$out" = "ok hello from 10.77.0.1" ] &&
    ok "an address in an allowed range, on its port: connected, the server's bytes read" ||
    bad "allowed v4: $out $(jget "$body" '["stderr"]' 2>/dev/null)"

try AF_INET6 fd77::1 "$p6"
[ "$out" = "ok hello from fd77::1" ] &&
    ok "an IPv6 address in an allowed range: connected" ||
    bad "allowed v6: $out $(jget "$body" '["stderr"]' 2>/dev/null)"

try AF_INET6 ::ffff:10.77.0.1 "$p4"
[ "$out" = "ok hello from 10.77.0.1" ] &&
    ok "an IPv4-mapped address on an IPv6 socket: asked and connected as IPv4" ||
    bad "mapped: $out $(jget "$body" '["stderr"]' 2>/dev/null)"

try AF_INET 10.77.0.1 "$wrong"
refused "10.77.0.1:$wrong" &&
    ok "the range's address on another port: EACCES, limits: egress, egress_refused: 10.77.0.1:$wrong" ||
    bad "wrong port: $out $body"

try AF_INET 10.78.0.1 "$p4"
refused "10.78.0.1:$p4" &&
    ok "an address outside every range: EACCES, egress_refused: 10.78.0.1:$p4" ||
    bad "outside: $out $body"

try AF_INET 10.79.0.1 "$p4"
refused "10.79.0.1:$p4" &&
    ok "a private address under a range without private: EACCES (egress's class check)" ||
    bad "no private: $out $body"

try AF_INET 169.254.169.254 80
refused "169.254.169.254:80" &&
    ok "169.254.169.254 under an exact rule with private: EACCES (never by address)" ||
    bad "metadata exact: $out $body"

try AF_INET 169.254.169.254 8080
refused "169.254.169.254:8080" &&
    ok "169.254.169.254 under a range with private: EACCES (a range never covers it)" ||
    bad "metadata range: $out $body"

try AF_INET 198.18.3.4 "$p4"
refused "198.18.3.4:$p4" &&
    ok "an address of keep's range for names that names nothing: EACCES" ||
    bad "198.18: $out $body"

tok=$noegress try AF_INET 10.77.0.1 "$p4"
[ "$out" = eacces ] && ok "a token without egress: EACCES" ||
    bad "token without egress: $out $body"

# UDP out, by address and by name.
pyexec "$alice" "
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(30)
s.sendto(b'one', ('10.77.0.1', $u4))
d, a = s.recvfrom(100)
print(d.decode(), a == ('10.77.0.1', $u4))
s.sendto(b'two', ('10.77.0.1', $u4))
print(s.recv(100).decode(), s.getpeername() == ('10.77.0.1', $u4))
n = socket.gethostbyname('udp.test')
c = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
c.settimeout(30)
c.connect((n, $u4))
c.send(b'three')
d, a = c.recvfrom(100)
print(d.decode(), a == (n, $u4), n.startswith('198.18.'))
"
[ "$out" = $'echo one True
echo two True
echo three True True' ] &&
    ok "UDP by an address range and by name under udp rules: datagrams out and back, from the address the guest named" ||
    bad "udp: $out $(jget "$body" '["stderr"]' 2>/dev/null)"

# udp CODE: a UDP send that must be refused; prints eacces
udp() {
	pyexec "$alice" "
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
try:
    $1
    print('sent')
except PermissionError:
    print('eacces')
"
}
udp "s.sendto(b'x', ('10.77.0.1', $uwrong))"
refused "10.77.0.1:$uwrong/udp" &&
    ok "UDP to a port no udp rule lists: EACCES, egress_refused: 10.77.0.1:$uwrong/udp" ||
    bad "udp port: $out $body"
udp "s.sendto(b'x', ('10.77.0.1', $p4))"
refused "10.77.0.1:$p4/udp" &&
    ok "UDP under a rule without udp (a TCP range): EACCES" ||
    bad "udp tcp-only range: $out $body"
udp "s.connect((socket.gethostbyname('tcponly.test'), $u4))"
[ "$out" = eacces ] && [ "$(jget "$body" '["egress_refused"]')" = "tcponly.test:$u4/udp" ] &&
    ok "UDP connect to a name whose rule lacks udp: EACCES, egress_refused: tcponly.test:$u4/udp" ||
    bad "udp tcp-only name: $out $body"

# A socket egress made is not the guest's to re-aim.
kport=${url##*:}
pyexec "$alice" "
import ctypes, socket, struct
libc = ctypes.CDLL(None, use_errno=True)
def err(f):
    try:
        f()
        return 'done'
    except OSError as e:
        return e.errno
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.settimeout(30)
u.sendto(b'a', ('10.77.0.1', $u4))
u.recv(100)
r = [err(lambda: u.sendto(b'b', ('127.0.0.1', $kport))),
    err(lambda: u.sendto(b'b', ('10.77.0.2', $u4))),
    err(lambda: u.connect(('127.0.0.1', $kport))),
    err(lambda: u.connect(('10.77.0.1', $u4))),
    err(lambda: u.bind(('127.0.0.1', 0)))]
t = socket.socket()
t.settimeout(30)
t.connect(('10.77.0.1', $p4))
unspec = struct.pack('=H14x', 0)
rc = libc.connect(t.fileno(), unspec, len(unspec))
r += [(rc, ctypes.get_errno()), err(lambda: t.connect(('127.0.0.1', $kport))),
    err(lambda: t.listen()), err(lambda: t.bind(('127.0.0.1', 0)))]
a, b = socket.socketpair()
r += [err(lambda: socket.send_fds(a, [b'x'], [t.fileno()])),
    err(lambda: socket.send_fds(a, [b'x'], [u.fileno()]))]
print(r)
"
[ "$out" = "[13, 13, 13, 'done', 22, (-1, 106), 106, 22, 22, 95, 95]" ] &&
    ok "egress's sockets: no send or connect elsewhere (host loopback included), no AF_UNSPEC, bind, listen or SCM_RIGHTS" ||
    bad "re-aim: $out $(jget "$body" '["stderr"]' 2>/dev/null)"

# keep run has no relay: every address outside is refused, as before.
mkdir -p "$tmp/ws"
printf 'import socket\ntry:\n    socket.create_connection(("10.77.0.1", %s), timeout=30)\n    print("connected")\nexcept PermissionError:\n    print("eacces")\n' \
    "$p4" >"$tmp/ws/c.py"
out=$("$KEEP" run --trust "$B/keys/dev.public" --timeout 60s --workspace "$tmp/ws" \
    "$B/images/python.img" python3 c.py 2>&1)
[ "$out" = "eacces
keep run: a connection outside the sandbox was refused (limits: egress: 10.77.0.1:$p4; the guest's network is its loopback)" ] &&
    ok "keep run (no policy, no relay): EACCES, and keep run says which" ||
    bad "keep run: $out"

for _ in $(seq "$(slow 50)"); do
	"$KEEP" audit tail -n 1000 --data "$tmp/state/db" >"$tmp/audit" 2>&1
	grep -q "egress.connect.*169.254.169.254:8080.*deny" "$tmp/audit" && break
	sleep 0.1
done
grep -q "egress.connect.*10.77.0.1:$p4.*allow" "$tmp/audit" &&
    grep -q "egress.connect.*\[fd77::1\]:$p6.*allow" "$tmp/audit" &&
    grep -q "egress.connect.*10.77.0.1:$wrong.*deny" "$tmp/audit" &&
    grep -q "egress.connect.*10.78.0.1:$p4.*deny" "$tmp/audit" &&
    grep -q "egress.connect.*10.79.0.1:$p4.*deny.*class=private" "$tmp/audit" &&
    grep -q "egress.connect.*169.254.169.254:80 .*deny.*class=metadata" "$tmp/audit" &&
    grep -q "egress.connect.*169.254.169.254:8080.*deny" "$tmp/audit" &&
    grep -q "egress.connect.*UDP 10.77.0.1:$u4/udp.*allow" "$tmp/audit" &&
    grep -q "egress.connect.*UDP udp.test:$u4/udp.*allow" "$tmp/audit" &&
    grep -q "egress.connect.*UDP 10.77.0.1:$uwrong/udp.*deny" "$tmp/audit" &&
    grep -q "egress.connect.*UDP tcponly.test:$u4/udp.*deny" "$tmp/audit" &&
    ok "the audit log has every address connect, allowed and refused, with the address's class" ||
    bad "audit: $(grep egress.connect "$tmp/audit")"

keepd_finish
