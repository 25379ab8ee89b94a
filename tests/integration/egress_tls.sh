#!/usr/bin/env bash
# A guest's connections through egress once made (docs/egress.md, "Names
# and connections", "TLS's server name" and "Bytes"): a python ssl client
# whose server_hostname is the name it resolved reaches a local TLS server
# (a test CA's leaf, the CA handed to the guest in its code) end to end;
# one that names another server, or none, is refused before a byte of its
# ClientHello leaves (PermissionError, limits: egress, egress_refused
# name:port, an egress.tls audit entry); a ClientHello sent in pieces is
# judged whole, and so is one written with write or writev; plain bytes
# on port 443 are refused (when 127.0.0.1:443 is free to listen on).
# Bytes out and in are counted across a run's processes
# (the result's egress_bytes, an egress.bytes audit entry), and a policy's
# `egress bytes` stops a download past it (ConnectionResetError, limits:
# egress); `egress budget` bounds an agent's runs together, each agent
# its own, and refills with time. Loopback only: the server is on 127.0.0.1, the name maps there
# through egress.hosts_file, and the rule says private.
set -u
source "$(dirname "$0")/../lib/keepd.sh"
[ -f "$B/images/python.img" ] || { echo "SKIP: no python image"; exit 77; }

# A test CA and a leaf for allowed.test.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout "$tmp/ca.key" -out "$tmp/ca.pem" -days 2 -subj /CN=keep-test-ca \
    >/dev/null 2>&1 &&
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout "$tmp/leaf.key" -out "$tmp/leaf.csr" -subj /CN=allowed.test \
    >/dev/null 2>&1 &&
printf 'subjectAltName=DNS:allowed.test\n' >"$tmp/leaf.ext" &&
openssl x509 -req -in "$tmp/leaf.csr" -CA "$tmp/ca.pem" -CAkey "$tmp/ca.key" \
    -CAcreateserial -out "$tmp/leaf.pem" -days 2 -extfile "$tmp/leaf.ext" \
    >/dev/null 2>&1 || { echo "FAIL: test CA"; exit 1; }

# The server: GET /x says hello, GET /big is 1 MiB, POST /up counts.
cat >"$tmp/tls_server.py" <<'EOPY'
import http.server, ssl, sys
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def reply(self, body):
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def do_GET(self):
        self.reply(b"x" * 1048576 if self.path == "/big" else b"hello over tls\n")
    def do_POST(self):
        n = int(self.headers["Content-Length"])
        got = 0
        while got < n:
            got += len(self.rfile.read(min(65536, n - got)))
        self.reply(str(got).encode())
    def log_message(self, *a):
        pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(sys.argv[1], sys.argv[2])
s.socket = ctx.wrap_socket(s.socket, server_side=True)
print("port", s.server_address[1], flush=True)
s.serve_forever()
EOPY
python3 "$tmp/tls_server.py" "$tmp/leaf.pem" "$tmp/leaf.key" >"$tmp/tls.out" 2>&1 &
spid=$!
trap 'kill $spid ${p443pid:-} 2>/dev/null; keepd_cleanup' EXIT
for _ in $(seq 50); do
	tp=$(sed -n 's/^port \([0-9]*\)$/\1/p' "$tmp/tls.out" | head -n 1)
	[ -n "$tp" ] && break
	sleep 0.1
done
[ -n "$tp" ] || { echo "FAIL: tls server: $(cat "$tmp/tls.out")"; exit 1; }
echo "127.0.0.1 allowed.test other.test" >"$tmp/hosts"
# Port 443 on loopback, when it is free (tests run as root): a plain
# TCP server that answers whatever comes, for the rule that 443 is TLS.
cat >"$tmp/plain443.py" <<'EOPY'
import socket, threading
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
try:
    s.bind(("127.0.0.1", 443))
except OSError:
    print("busy", flush=True)
    raise SystemExit
s.listen(8)
print("listening", flush=True)
def serve(c):
    try:
        if c.recv(4096):
            c.sendall(b"plain\n")
    finally:
        c.close()
while True:
    threading.Thread(target=serve, args=(s.accept()[0],), daemon=True).start()
EOPY
python3 "$tmp/plain443.py" >"$tmp/p443.out" 2>&1 &
p443pid=$!
for _ in $(seq 50); do [ -s "$tmp/p443.out" ] && break; sleep 0.1; done

cat >"$tmp/test.policy" <<EOP
role net {
	allow sandbox:read, sandbox:write, exec
	exec "python"
	egress "allowed.test":$tp private, "allowed.test":443 private
	timeout 120s
}
agent "alice" : net {
}
agent "bob" : net {
	egress bytes 256K
}
role budgeted : net {
	egress budget 1536K/day
}
agent "carol" : budgeted {
}
agent "erin" : budgeted {
}
agent "frank" : net {
	egress budget 1536K/s
}
EOP
KEEPD_IMAGES="python" KEEPD_YAML_EXTRA="egress:
  hosts_file: $tmp/hosts
  connect_timeout: 5s" keepd_start "$tmp/test.policy"
"$KEEP" policy explain "$tmp/test.policy" bob exec python >"$tmp/explain" 2>&1
grep -q "limits: .*egress bytes 256K" "$tmp/explain" &&
    ok "keep policy explain shows egress bytes" ||
    bad "explain: $(cat "$tmp/explain")"

alice=$(mint alice sandbox:read,sandbox:write,exec,egress)
bob=$(mint bob sandbox:read,sandbox:write,exec,egress)
req "$alice" POST /v1/sandboxes '{"image":"python"}'
[ "$code" = 201 ] || { bad "sandbox: $code $body"; keepd_finish; exit 1; }
sbx=$(jget "$body" '["id"]')
req "$bob" POST /v1/sandboxes '{"image":"python"}'
bsbx=$(jget "$body" '["id"]')

# The guest trusts the test CA from a file of its workspace.
ca=$(cat "$tmp/ca.pem")
prelude="
import os, socket, ssl, urllib.request
open('ca.pem', 'w').write('''$ca
''')
ctx = ssl.create_default_context(cafile='ca.pem')
"
pyexec() { # pyexec TOKEN SANDBOX CODE: sets code, body, out
	req "$1" POST "/v1/sandboxes/$2/execute" \
	    "$(python3 -c 'import json,sys; print(json.dumps({"code": sys.argv[1], "language": "python"}))' "$prelude$3")"
	out=$(jget "$body" '["stdout"]' 2>/dev/null || echo "HTTP $code $body")
}

pyexec "$alice" "$sbx" "
r = urllib.request.urlopen('https://allowed.test:$tp/x', context=ctx, timeout=30)
print(r.read().decode().strip())
"
[ "$out" = "hello over tls" ] && [ "$(jget "$body" '.get("limits")')" = None ] &&
    python3 -c 'import json,sys; b=json.loads(sys.argv[1])["egress_bytes"]; sys.exit(0 if b["out"] > 0 and b["in"] > 0 else 1)' "$body" &&
    ok "TLS with the resolved name as server_hostname, verified against the test CA: the body arrives, egress_bytes counted" ||
    bad "tls: $out $body"

# The same counts in the SSE stream's exit event.
sse=$(curl -s -N -H "Authorization: Bearer $alice" -H 'Accept: text/event-stream' \
    -H 'Content-Type: application/json' -X POST "$url/v1/sandboxes/$sbx/execute" \
    -d "$(python3 -c 'import json,sys; print(json.dumps({"code": sys.argv[1], "language": "python"}))' "$prelude
print(urllib.request.urlopen('https://allowed.test:$tp/x', context=ctx, timeout=30).read().decode().strip())
")")
echo "$sse" | grep -A1 '^event: exit' | grep -q '"egress_bytes": *{"out": *[1-9][0-9]*, *"in": *[1-9][0-9]*}' &&
    ok "the SSE exit event carries egress_bytes" ||
    bad "sse: $sse"

pyexec "$alice" "$sbx" "
s = socket.create_connection(('allowed.test', $tp), timeout=30)
c = ssl.create_default_context(cafile='ca.pem')
c.check_hostname = False
try:
    c.wrap_socket(s, server_hostname='other.test')
    print('handshake')
except OSError as e:
    print(type(e).__name__, e.errno)
"
[ "$out" = "PermissionError 13" ] && [ "$(jget "$body" '["limits"]')" = "['egress']" ] &&
    [ "$(jget "$body" '["egress_refused"]')" = "allowed.test:$tp" ] &&
    ok "a ClientHello naming another server: PermissionError, limits: egress, egress_refused allowed.test:$tp" ||
    bad "mismatched SNI: $out $body"

pyexec "$alice" "$sbx" "
s = socket.create_connection(('allowed.test', $tp), timeout=30)
c = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
c.check_hostname = False
c.verify_mode = ssl.CERT_NONE
try:
    c.wrap_socket(s)
    print('handshake')
except OSError as e:
    print(type(e).__name__, e.errno)
"
[ "$out" = "PermissionError 13" ] && [ "$(jget "$body" '["limits"]')" = "['egress']" ] &&
    ok "a ClientHello without a server name: refused" ||
    bad "no SNI: $out $body"

# In pieces: the hello of an ssl object over memory, sent 7 bytes at a
# time on a plain socket; the server's answer is a TLS record.
pyexec "$alice" "$sbx" "
def hello(name):
    i, o = ssl.MemoryBIO(), ssl.MemoryBIO()
    t = ctx.wrap_bio(i, o, server_hostname=name)
    try:
        t.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return o.read()
for name in ('allowed.test', 'other.test'):
    h = hello(name)
    s = socket.create_connection(('allowed.test', $tp), timeout=30)
    sent = 0
    try:
        for k in range(0, len(h), 7):
            sent += s.send(h[k:k + 7])
        r = s.recv(5)
        print(name, sent == len(h), r[:1] == b'\x16')
    except OSError as e:
        print(name, 'refused after', sent == len(h) - len(h[k:k + 7]), e.errno)
        for f in (lambda: s.send(b'x'), lambda: s.recv(1)):
            try:
                f()
            except OSError as e:
                print('then', e.errno)
"
[ "$out" = $'allowed.test True True\nother.test refused after True 13\nthen 13\nthen 13' ] &&
    ok "a ClientHello sent in 7-byte pieces is held until whole, then sent or refused (and the connection stays shut)" ||
    bad "split hello: $out $(jget "$body" '["stderr"]' 2>/dev/null)"

# On 443 the first bytes must be TLS; elsewhere anything else goes (the
# HTTP of egress_names.sh).
if grep -q listening "$tmp/p443.out"; then
	pyexec "$alice" "$sbx" "
s = socket.create_connection(('allowed.test', 443), timeout=30)
try:
    s.sendall(b'GET / HTTP/1.1\\r\\nHost: allowed.test\\r\\n\\r\\n')
    print('sent', s.recv(10))
except OSError as e:
    print(type(e).__name__, e.errno)
"
	[ "$out" = "PermissionError 13" ] && [ "$(jget "$body" '["egress_refused"]')" = "allowed.test:443" ] &&
	    ok "plain HTTP on port 443: refused (EACCES), egress_refused allowed.test:443" ||
	    bad "not TLS on 443: $out $body"
	not443=1
else
	echo "note: 127.0.0.1:443 is taken; the not-TLS-on-443 case is not run"
	not443=0
fi

# write and writev are judged as send is.
pyexec "$alice" "$sbx" "
i, o = ssl.MemoryBIO(), ssl.MemoryBIO()
t = ctx.wrap_bio(i, o, server_hostname='other.test')
try:
    t.do_handshake()
except ssl.SSLWantReadError:
    pass
h = o.read()
for how in ('write', 'writev'):
    s = socket.create_connection(('allowed.test', $tp), timeout=30)
    try:
        if how == 'write':
            print(how, os.write(s.fileno(), h[:10]) == 10, end=' ')
            os.write(s.fileno(), h[10:])
        else:
            os.writev(s.fileno(), [h[:10], h[10:]])
        print(how, 'sent')
    except OSError as e:
        print(how, e.errno)
"
[ "$out" = $'write True write 13\nwritev 13' ] &&
    ok "write and writev of a ClientHello naming another server: EACCES" ||
    bad "write/writev: $out $(jget "$body" '["stderr"]' 2>/dev/null)"

# Counts: 1 MiB in and 300000 bytes out, in two processes of one run.
pyexec "$alice" "$sbx" "
pid = os.fork()
if pid == 0:
    b = urllib.request.urlopen('https://allowed.test:$tp/big', context=ctx, timeout=60).read()
    os._exit(0 if len(b) == 1048576 else 1)
r = urllib.request.urlopen(urllib.request.Request('https://allowed.test:$tp/up',
    data=b'y' * 300000, method='POST'), context=ctx, timeout=60).read()
print(r.decode(), os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
"
counts=$(python3 -c 'import json,sys; b=json.loads(sys.argv[1]).get("egress_bytes", {}); print(b.get("out", 0) >= 300000, b.get("in", 0) >= 1048576, b.get("out", 0) < 400000, b.get("in", 0) < 1200000)' "$body" 2>/dev/null)
[ "$out" = "300000 0" ] && [ "$counts" = "True True True True" ] &&
    ok "a run's processes' bytes add up: out >= 300000, in >= 1 MiB (and not much more)" ||
    bad "counts: $out $counts $body"

# bob's runs may move 256K: a 1 MiB download stops.
pyexec "$bob" "$bsbx" "
try:
    b = urllib.request.urlopen('https://allowed.test:$tp/big', context=ctx, timeout=60).read()
    print('read', len(b))
except Exception as e:
    print(type(e).__name__)
try:
    s = socket.create_connection(('allowed.test', $tp), timeout=30)
    s.send(b'x')
except Exception as e:
    print(type(e).__name__)
"
counts=$(python3 -c 'import json,sys; b=json.loads(sys.argv[1]).get("egress_bytes", {}); print(0 < b.get("in", 0) + b.get("out", 0) <= 262144)' "$body" 2>/dev/null)
case "$out" in ConnectionResetError$'\n'ConnectionResetError|IncompleteRead$'\n'ConnectionResetError) true ;; *) false ;; esac &&
    [ "$(jget "$body" '["limits"]')" = "['egress']" ] &&
    [ "$(jget "$body" '["egress_refused"]')" = "allowed.test:$tp" ] &&
    [ "$counts" = True ] &&
    ok "egress bytes 256K stops a 1 MiB download ($out), limits: egress, counts within the limit" ||
    bad "limit: $out $counts $body"

# `egress budget 1536K/day`: carol's first 1 MiB download fits, her
# second run's does not; erin, under the same rule, has her own.
big="
try:
    b = urllib.request.urlopen('https://allowed.test:$tp/big', context=ctx, timeout=60).read()
    print('read', len(b))
except Exception as e:
    print(type(e).__name__)
"
carol=$(mint carol sandbox:read,sandbox:write,exec,egress)
erin=$(mint erin sandbox:read,sandbox:write,exec,egress)
frank=$(mint frank sandbox:read,sandbox:write,exec,egress)
"$KEEP" policy explain "$tmp/test.policy" carol exec python >"$tmp/explain" 2>&1
grep -q "limits: .*egress budget 1536K/day" "$tmp/explain" &&
    ok "keep policy explain shows egress budget" ||
    bad "explain: $(cat "$tmp/explain")"
req "$carol" POST /v1/sandboxes '{"image":"python"}'
csbx=$(jget "$body" '["id"]')
pyexec "$carol" "$csbx" "$big"
[ "$out" = "read 1048576" ] && [ "$(jget "$body" '.get("limits")')" = None ] &&
    ok "egress budget: a first 1 MiB download fits in 1536K" || bad "budget first: $out $body"
req "$carol" POST /v1/sandboxes '{"image":"python"}'
csbx2=$(jget "$body" '["id"]')
pyexec "$carol" "$csbx2" "$big"
case "$out" in ConnectionResetError | IncompleteRead) true ;; *) false ;; esac &&
    [ "$(jget "$body" '["limits"]')" = "['egress']" ] &&
    [ "$(jget "$body" '["egress_refused"]')" = "allowed.test:$tp" ] &&
    ok "egress budget: the agent's next run, in another sandbox, is stopped past it ($out)" ||
    bad "budget spent: $out $body"
req "$erin" POST /v1/sandboxes '{"image":"python"}'
esbx=$(jget "$body" '["id"]')
pyexec "$erin" "$esbx" "$big"
[ "$out" = "read 1048576" ] && ok "egress budget: another agent under the same rule has its own" ||
    bad "budget erin: $out $body"
# `egress budget 1536K/s`: spent, then back a second and more later.
req "$frank" POST /v1/sandboxes '{"image":"python"}'
fsbx=$(jget "$body" '["id"]')
pyexec "$frank" "$fsbx" "${big}
try:
    b = urllib.request.urlopen('https://allowed.test:$tp/big', context=ctx, timeout=60).read()
    print('read', len(b))
except Exception as e:
    print(type(e).__name__)
import time; time.sleep(1.5)
b = urllib.request.urlopen('https://allowed.test:$tp/big', context=ctx, timeout=60).read()
print('later', len(b))
"
[ "$(printf '%s\n' "$out" | head -1)" = "read 1048576" ] &&
    [ "$(printf '%s\n' "$out" | tail -1)" = "later 1048576" ] &&
    ok "egress budget 1536K/s: refilled after a second ($(printf '%s' "$out" | tr '\n' ' '))" ||
    bad "budget refill: $out $body"

# The audit log: the refusals with why, and each run's counts.
for _ in $(seq "$(slow 300)"); do
	"$KEEP" audit tail -n 1000 --data "$tmp/state/db" >"$tmp/audit" 2>&1
	grep -q "egress.tls.*without a server name" "$tmp/audit" &&
	    grep -q "egress.bytes.*deny" "$tmp/audit" &&
	    grep -q "egress.budget.*deny" "$tmp/audit" &&
	    [ "$(grep -c "egress.bytes.*allow" "$tmp/audit")" -ge 6 ] && break
	sleep 0.1
done
grep -q "egress.tls.*allowed.test:$tp.*deny.*other.test" "$tmp/audit" &&
    grep -q "egress.tls.*deny.*without a server name" "$tmp/audit" &&
    grep -q "egress.bytes.*allowed.test:$tp.*deny" "$tmp/audit" &&
    grep -q "carol egress.budget .*allowed.test:$tp.*deny.*egress budget is spent" "$tmp/audit" &&
    { [ "$not443" = 0 ] || grep -q "egress.tls.*allowed.test:443.*deny.*not TLS on port 443" "$tmp/audit"; } &&
    grep -q "egress.bytes.*allow.*out [0-9]* in [0-9]*" "$tmp/audit" &&
    ok "the audit log says why each was refused, and each run's bytes" ||
    bad "audit: $(grep -E 'egress.(tls|bytes|budget)' "$tmp/audit")"

keepd_finish
