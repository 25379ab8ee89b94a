#!/usr/bin/env bash
# Keep-alive through a port (docs/architecture.md, "Ports"): requests on
# one client connection reach the guest's server on one connection, each
# decided and audited; the response's framing (length, chunked, none for
# HEAD and 204, to the close) ends each; Connection: close is honoured
# both ways; a server that closes a kept connection between requests
# costs the client no 502 (a POST, never sent twice, goes on a new
# connection); pipelined requests are answered in order,
# each through the api. All on loopback.
source "$(dirname "$0")/../lib/keepd.sh"

cat >"$tmp/test.policy" <<'EOP'
agent "alice" {
	allow sandbox:read, sandbox:write, exec, artifact:write
	exec "python"
	expose 8001
	timeout 300s
}
EOP
KEEPD_IMAGES="python" keepd_start "$tmp/test.policy"
alice=$(mint alice sandbox:read,sandbox:write,exec,artifact:write)

req "$alice" POST /v1/sandboxes '{"image":"python"}'
[ "$code" = 201 ] || { bad "sandbox: $code $body"; keepd_finish; exit 1; }
sbx=$(jget "$body" '["id"]')

# A server that numbers its connections and their requests; by path:
# /n the numbers (length), /chunked the same chunked, /close with
# Connection: close, /drop answered then the connection closed without
# a word, /raw without any length (to the close), /nocontent a 204,
# /once answered as a connection's first request only (a later one on
# it is met with the close: a keep-alive timeout that struck as the
# request came), /bad something that is no HTTP response, /cut half a
# head and the close.
cat >"$tmp/ka.py" <<'PY'
import socket, threading
conns = [0]
lock = threading.Lock()
def serve(c, n):
    f = c.makefile("rb")
    k = 0
    while True:
        head = b""
        while not head.endswith(b"\r\n\r\n"):
            b = f.read(1)
            if not b:
                return
            head += b
        k += 1
        lines = head.decode().split("\r\n")
        method, path = lines[0].split(" ")[:2]
        hdr = {l.split(":", 1)[0].lower(): l.split(":", 1)[1].strip() for l in lines[1:] if ":" in l}
        f.read(int(hdr.get("content-length", "0")))
        out = b"conn %d req %d %s" % (n, k, hdr.get("connection", "-").encode())
        body = b"" if method == "HEAD" else out
        if path == "/once" and k > 1:
            c.close()
            return
        if path == "/bad":
            c.sendall(b"SSH-2.0-OpenSSH\r\n\r\n")
            c.close()
            return
        if path == "/cut":
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Le")
            c.close()
            return
        if path == "/chunked":
            c.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" +
                      b"%x\r\n%s\r\n0\r\nX-Trailer: t\r\n\r\n" % (len(out), out))
        elif path == "/close":
            c.sendall(b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s" % (len(out), out))
            c.close()
            return
        elif path == "/drop":
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(out), out))
            c.close()
            return
        elif path == "/raw":
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n" + out)
            c.close()
            return
        elif path == "/nocontent":
            c.sendall(b"HTTP/1.1 204 No Content\r\n\r\n")
        else:
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(out), body))
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 8001))
s.listen(64)
while True:
    c, _ = s.accept()
    with lock:
        conns[0] += 1
        n = conns[0]
    threading.Thread(target=serve, args=(c, n), daemon=True).start()
PY
code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $alice" \
    --data-binary @"$tmp/ka.py" "$url/v1/sandboxes/$sbx/files/write?path=ka.py")
[ "$code" = 200 ] || [ "$code" = 201 ] || [ "$code" = 204 ] || bad "write ka.py: $code"
req "$alice" POST "/v1/sandboxes/$sbx/commands/background" '{"cmd":"python","args":["ka.py"]}'
[ "$code" = 202 ] || bad "background ka.py: $code $body"
for _ in $(seq "$(slow 100)"); do
	code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 20 \
	    -H "Authorization: Bearer $alice" "$url/v1/sandboxes/$sbx/ports/8001/n")
	[ "$code" = 200 ] && break
	sleep 0.2
done
[ "$code" = 200 ] || bad "the guest's server never answered: $code"

# Each step prints "ok: ..." or "FAIL: ..." itself.
python3 - "$url" "$alice" "$sbx" >"$tmp/steps" 2>&1 <<'PY'
import http.client, socket, sys, urllib.parse
url, tok, sbx = sys.argv[1:]
u = urllib.parse.urlparse(url)
H = {"Authorization": "Bearer " + tok}
P = "/v1/sandboxes/%s/ports/8001" % sbx

def check(cond, what, detail=""):
    print(("ok: " if cond else "FAIL: ") + what + ("" if cond else ": %r" % (detail,)), flush=True)

def get(c, path, method="GET", hdr=None):
    h = dict(H)
    h.update(hdr or {})
    c.request(method, P + path, None, h)
    r = c.getresponse()
    return r, r.read().decode()

def n(body):  # "conn N req K ..." -> (N, K)
    f = body.split()
    return int(f[1]), int(f[3])

c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
r1, b1 = get(c, "/n")
s1 = c.sock
r2, b2 = get(c, "/n")
check(r1.status == 200 and r2.status == 200 and c.sock is s1 and s1 is not None,
      "two requests on one client connection: both 200, the client's connection kept",
      (r1.status, r2.status, b1, b2))
check(n(b1)[0] == n(b2)[0] and n(b2)[1] == n(b1)[1] + 1,
      "the two reach the guest's server on one connection", (b1, b2))
check(b1.split()[4] == "-", "the front asks the guest's server for no close", b1)
# A POST is never sent twice, so never on a kept connection.
r, b = get(c, "/n", "POST")
check(r.status == 200 and n(b)[1] == 1 and n(b)[0] != n(b2)[0] and c.sock is s1,
      "a POST goes on a new connection to the server, never a kept one", b)

r, b = get(c, "/chunked")
r2, b2 = get(c, "/n")
check(r.status == 200 and n(b)[0] == n(b2)[0] and r2.status == 200,
      "a chunked response ends where its last chunk and trailer do; the connection goes on",
      (r.status, b, b2))
r, b = get(c, "/n", "HEAD")
r2, b2 = get(c, "/nocontent")
r3, b3 = get(c, "/n")
check(r.status == 200 and b == "" and r2.status == 204 and r3.status == 200 and
      n(b3)[0] == n(b2 and b2 or b3)[0] and c.sock is not None,
      "HEAD and 204: no body, the connection goes on", (r.status, r2.status, b3))

# The server's Connection: close: the client's connection ends with it,
# and the next request finds a new connection to the server.
before = n(b3)[0]
r, b = get(c, "/close")
check(r.status == 200 and r.getheader("Connection") == "close" and c.sock is None,
      "the server's Connection: close reaches the client, whose connection ends", (r.status, r.headers))
r, b = get(c, "/n")
check(r.status == 200 and n(b)[0] != before, "then a new connection to the server", b)

# The client's Connection: close: answered, then its connection ends; the
# server's connection is kept for the next request.
r, b = get(c, "/n", hdr={"Connection": "close"})
kept = n(b)[0]
eof = c.sock.recv(1) == b""
c.close()
check(r.status == 200 and eof, "the client's Connection: close: answered, then the front ends its connection",
      (r.status, eof))
c2 = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
r, b = get(c2, "/n")
check(r.status == 200 and n(b)[0] == kept,
      "the server's connection outlives the client's (kept for the next client)", (b, kept))

# A server that closes a kept connection between requests: no 502, ever.
codes = []
for i in range(20):
    r, b = get(c2, "/drop")
    codes.append(r.status)
    r, b = get(c2, "/n")
    codes.append(r.status)
check(set(codes) == {200}, "a kept connection the server closed: 40 requests, all 200, none 502", codes)

# A kept connection that the server closes as the request comes, without
# a byte of an answer: the request goes once more on a new connection.
r1, b1 = get(c2, "/once")
r2, b2 = get(c2, "/once")
check(r1.status == 200 and r2.status == 200 and n(b2)[1] == 1 and n(b2)[0] != n(b1)[0],
      "a kept connection closed on its request unanswered: sent again on a new one, 200 not 502",
      (r1.status, b1, r2.status, b2))

# What is no response, or half a head: 502 BAD_GATEWAY, not a silent end.
for path in ("/bad", "/cut"):
    c3 = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    r, b = get(c3, path)
    check(r.status == 502 and "BAD_GATEWAY" in b, "a server's answer to %s: 502 BAD_GATEWAY" % path,
          (r.status, b))
    c3.close()

# A response delimited by the close: all of it, then the client's
# connection ends too.
r, b = get(c2, "/raw")
check(r.status == 200 and b.startswith("conn ") and c2.sock is None,
      "a response without a length: all of it, then the connection ends", (r.status, b))

# Pipelined: two requests in one write, two answers in order.
s = socket.create_connection((u.hostname, u.port), timeout=30)
one = "GET %s/n HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n" % (P, tok)
s.sendall((one + one.replace("/n ", "/chunked ")).encode())
got = b""
while got.count(b"HTTP/1.1 ") < 2 or not got.endswith(b"\r\n\r\n"):
    d = s.recv(65536)
    if not d:
        break
    got += d
s.close()
parts = got.split(b"HTTP/1.1 ")
check(len(parts) == 3 and parts[1].startswith(b"200") and parts[2].startswith(b"200") and
      b"req 1" in parts[1] and b"req 2" in parts[2] and b"Transfer-Encoding: chunked" in parts[2],
      "two pipelined requests: two answers, in order, on one server connection", got[:600])
PY
cat "$tmp/steps"
fails=$((fails + $(grep -c '^FAIL' "$tmp/steps")))
grep -q '^ok' "$tmp/steps" || bad "the client script did not run: $(tail -3 "$tmp/steps")"

# Every request through the port was decided and audited: 1 + 2 + 1 + 2 +
# 3 + 2 + 2 + 40 + 2 + 2 + 1 + 2 = 60 from the script, and the readiness
# probes.
# The front's audit entries reach the store a moment after the replies
# (they go in batches): read until they are all there.
for _ in $(seq "$(slow 50)"); do
	"$KEEP" audit tail -n 2000 --principal alice --data "$tmp/state/db" >"$tmp/alice.audit" 2>&1
	na=$(grep -c "alice sandbox:read $sbx allow" "$tmp/alice.audit")
	[ "$na" -ge 60 ] && break
	sleep 0.1
done
[ "$na" -ge 60 ] && ok "every request through the port is audited ($na entries)" ||
    bad "audit: $na entries: $(tail -3 "$tmp/alice.audit")"
keepd_finish
