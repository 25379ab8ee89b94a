#!/usr/bin/env bash
# Ports into a sandbox (issue 29, Deliver 4; docs/architecture.md,
# "Ports"): a guest's server on 127.0.0.1:PORT in its sandbox's network
# namespace answers /v1/sandboxes/{id}/ports/PORT/... through keepd, with
# the caller's token: a file from python's http.server, a POST body
# echoed, a WebSocket-style upgrade passed through as bytes; a port
# nothing listens on is 502; another principal's sandbox is 404. All on
# loopback.
source "$(dirname "$0")/../lib/keepd.sh"

cat >"$tmp/test.policy" <<'EOP'
agent "alice" {
	allow sandbox:read, sandbox:write, exec, artifact:read, artifact:write
	exec "python"
	expose 8000, 8001, 8002
	timeout 120s
}
agent "bob" {
	allow sandbox:read, sandbox:write, exec
	exec "python"
	expose *
}
EOP
KEEPD_YAML_EXTRA="ports:
  domain: sbx.keep.test" KEEPD_IMAGES="python" keepd_start "$tmp/test.policy"
alice=$(mint alice sandbox:read,sandbox:write,exec,artifact:read,artifact:write)
bob=$(mint bob sandbox:read,sandbox:write,exec)

req "$alice" POST /v1/sandboxes '{"image":"python"}'
[ "$code" = 201 ] || { bad "sandbox: $code $body"; keepd_finish; exit 1; }
sbx=$(jget "$body" '["id"]')

echo "hello from the workspace" >"$tmp/hello.txt"
# An echo server without a library: a POST's body back, and after an
# Upgrade a 101 and every byte back as it came.
cat >"$tmp/echo.py" <<'PY'
import socket, threading
def serve(c):
    f = c.makefile("rb")
    head = b""
    while not head.endswith(b"\r\n\r\n"):
        b = f.read(1)
        if not b:
            return
        head += b
    lines = head.decode().split("\r\n")
    if " /close " in lines[0]:  # ends the connection without an answer
        c.close()
        return
    hdr = {l.split(":", 1)[0].lower(): l.split(":", 1)[1].strip() for l in lines[1:] if ":" in l}
    if hdr.get("upgrade", "").lower() == "websocket":
        c.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
        while True:
            d = c.recv(4096)
            if not d:
                break
            c.sendall(d)
    else:
        body = f.read(int(hdr.get("content-length", "0")))
        seen = b"token seen" if "authorization" in hdr else b"no token"
        out = lines[0].encode() + b"\n" + seen + b"\n" + body
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n" % len(out) + out)
    c.close()
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 8001))
s.listen(16)
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
PY
for f in hello.txt echo.py; do
	code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $alice" \
	    --data-binary @"$tmp/$f" "$url/v1/sandboxes/$sbx/files/write?path=$f")
	[ "$code" = 200 ] || [ "$code" = 201 ] || [ "$code" = 204 ] || bad "write $f: $code"
done

req "$alice" POST "/v1/sandboxes/$sbx/commands/background" '{"cmd":"python","args":["-m","http.server","--bind","127.0.0.1","8000"]}'
[ "$code" = 202 ] || bad "background http.server: $code $body"
req "$alice" POST "/v1/sandboxes/$sbx/commands/background" '{"cmd":"python","args":["echo.py"]}'
[ "$code" = 202 ] || bad "background echo: $code $body"

get() { # get TOKEN PATH: sets code, body
	body=$(curl -s --max-time 20 -w '\n%{http_code}' -H "Authorization: Bearer $1" "$url$2")
	code=${body##*$'\n'}; body=${body%$'\n'*}
}
for _ in $(seq "$(slow 100)"); do
	get "$alice" "/v1/sandboxes/$sbx/ports/8000/hello.txt"
	[ "$code" = 200 ] && break
	sleep 0.2
done
[ "$code" = 200 ] && [ "$(printf '%s' "$body")" = "hello from the workspace" ] &&
    ok "GET through /ports/8000/: the guest's http.server serves the workspace's file" ||
    bad "GET through the port: $code $body"
get "$alice" "/v1/sandboxes/$sbx/ports/8000/"
[ "$code" = 200 ] && printf '%s' "$body" | grep -q "hello.txt" &&
    ok "GET /ports/8000/ (the directory listing)" || bad "listing: $code $body"

# By host name, as E2B's SDK builds it (getHost): the name is only a
# Host header here, sent to keepd's loopback address.
hp=${url#http://127.0.0.1:}
body=$(curl -s --max-time 20 -w '\n%{http_code}' -H "Authorization: Bearer $alice" \
    -H "Host: 8000-$sbx.sbx.keep.test:$hp" "$url/hello.txt")
code=${body##*$'\n'}; body=${body%$'\n'*}
[ "$code" = 200 ] && [ "$(printf '%s' "$body")" = "hello from the workspace" ] &&
    ok "Host: 8000-{id}.{ports.domain}: the same file" ||
    bad "host form: $code $body"
body=$(curl -s --max-time 20 -w '\n%{http_code}' -H "Authorization: Bearer $bob" \
    -H "Host: 8000-$sbx.sbx.keep.test" "$url/hello.txt")
code=${body##*$'\n'}
[ "$code" = 404 ] && ok "host form, another principal's sandbox: 404" ||
    bad "host form bob: $code"
code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $alice" \
    -H "Host: 8000-$sbx.other.test" "$url/hello.txt")
[ "$code" = 404 ] && ok "a host under another domain is keepd's own API (404 for /hello.txt)" ||
    bad "other domain: $code"
req "$alice" POST /e2b/v2/sandboxes '{"templateID":"python"}'
[ "$code" = 201 ] && [ "$(jget "$body" '["domain"]')" = sbx.keep.test ] &&
    ok "E2B's sandbox answer names ports.domain (getHost)" ||
    bad "e2b domain: $code $body"

for _ in $(seq "$(slow 100)"); do
	body=$(curl -s --max-time 20 -w '\n%{http_code}' -H "Authorization: Bearer $alice" \
	    --data-binary 'a body to echo' "$url/v1/sandboxes/$sbx/ports/8001/echo/x?q=1")
	code=${body##*$'\n'}; body=${body%$'\n'*}
	[ "$code" = 200 ] && break
	sleep 0.2
done
[ "$code" = 200 ] && [ "$body" = $'POST /echo/x?q=1 HTTP/1.1\nno token\na body to echo' ] &&
    ok "POST through /ports/8001/: path, query and body reach the guest's server; keep's token does not" ||
    bad "POST echo: $code $body"

# An upgrade: the 101 and then bytes both ways, unread by keepd.
ws=$(python3 - "$url" "$alice" "$sbx" <<'PY'
import socket, sys, urllib.parse
u = urllib.parse.urlparse(sys.argv[1])
s = socket.create_connection((u.hostname, u.port), timeout=20)
s.sendall(("GET /v1/sandboxes/%s/ports/8001/ws HTTP/1.1\r\nHost: x\r\n"
           "Authorization: Bearer %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
           "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
           % (sys.argv[3], sys.argv[2])).encode())
buf = b""
while b"\r\n\r\n" not in buf:
    d = s.recv(4096)
    if not d:
        break
    buf += d
head, _, rest = buf.partition(b"\r\n\r\n")
s.sendall(b"ping through the pipe")
while len(rest) < 21:
    d = s.recv(4096)
    if not d:
        break
    rest += d
print(head.split(b"\r\n")[0].decode(), rest.decode())
PY
)
[ "$ws" = "HTTP/1.1 101 Switching Protocols ping through the pipe" ] &&
    ok "an upgrade through the port: 101, then bytes both ways" ||
    bad "upgrade: '$ws'"

# Many requests in a row, each a pipe the port's side ends: the front
# once freed a pipe's connection on its port's event and then read it
# for its client's event in the same pass (a double free, the front
# killed and restarted: bench/net.sh saw 13 in 200).
bad_pipes=0
for i in $(seq 150); do
	get "$alice" "/v1/sandboxes/$sbx/ports/8000/hello.txt"
	[ "$code" = 200 ] || bad_pipes=$((bad_pipes + 1))
done
restarts=$(grep -c "front (pid [0-9]*) \(killed\|exited\)\|double free\|restarting front" "$tmp/log")
[ "$bad_pipes" = 0 ] && [ "$restarts" = 0 ] &&
    ok "150 requests through the port in a row: all 200, the front never restarted" ||
    bad "150 in a row: $bad_pipes not 200, $restarts front restarts: $(grep -m 3 'front' "$tmp/log")"

# One connector per sandbox makes those connections (host/vmmproc/
# vmm_port.c, `keepd: port ID`); one that died is made again by the
# next request, which is answered all the same.
conn=$(pgrep -f "^keepd: port $sbx\$")
[ "$(wc -w <<<"$conn")" = 1 ] && ok "one port connector for the sandbox" ||
    bad "port connectors for $sbx: '$conn'"
[ -n "$conn" ] && kill -9 $conn
sleep 0.2
get "$alice" "/v1/sandboxes/$sbx/ports/8000/hello.txt"
conn2=$(pgrep -f "^keepd: port $sbx\$")
[ "$code" = 200 ] && [ -n "$conn2" ] && [ "$conn2" != "$conn" ] &&
    ok "a killed port connector: the next request makes another and is answered" ||
    bad "after the connector was killed: $code, connector '$conn2' (was '$conn')"

# A server that ends the connection without a byte of an answer (as
# one killed with the request in flight): 502, not a connection closed
# on the client with nothing (E2B's SDK saw "socket hang up").
get "$alice" "/v1/sandboxes/$sbx/ports/8001/close"
[ "$code" = 502 ] && [ "$(jget "$body" '["error"]["code"]')" = BAD_GATEWAY ] &&
    ok "a port whose server closes without answering: 502 BAD_GATEWAY" ||
    bad "closed without an answer: $code $body"

get "$alice" "/v1/sandboxes/$sbx/ports/8002/"
[ "$code" = 502 ] && [ "$(jget "$body" '["error"]["code"]')" = BAD_GATEWAY ] &&
    jget "$body" '["error"]["message"]' | grep -q "port 8002" &&
    ok "a port nothing listens on: 502 BAD_GATEWAY naming it" ||
    bad "nothing listening: $code $body"
# 8003 is not among alice's expose rules: refused before the vmm is
# asked, whether or not anything listens there.
get "$alice" "/v1/sandboxes/$sbx/ports/8003/"
[ "$code" = 403 ] && jget "$body" '["error"]["message"]' | grep -q "Port 8003 is not exposed" &&
    ok "a port the policy does not expose: 403 naming it" ||
    bad "not exposed: $code $body"
get "$alice" "/v1/sandboxes/$sbx/ports/0/"
[ "$code" = 400 ] && ok "port 0: 400" || bad "port 0: $code $body"
get "$alice" "/v1/sandboxes/$sbx/ports/65536/"
[ "$code" = 400 ] && ok "port 65536: 400" || bad "port 65536: $code $body"
get "$bob" "/v1/sandboxes/$sbx/ports/8000/hello.txt"
[ "$code" = 404 ] && ok "another principal's sandbox: 404" || bad "bob: $code $body"
code=$(curl -s -o /dev/null -w '%{http_code}' "$url/v1/sandboxes/$sbx/ports/8000/hello.txt")
[ "$code" = 401 ] && ok "no token: 401" || bad "no token: $code"

# Each request is decided and its outcome audited, as any API request.
# The front hands its entries to the store in batches, after the reply:
# under load the last may land a moment after the request's answer.
audited() {
	"$KEEP" audit tail -n 1000 --principal alice --data "$tmp/state/db" >"$tmp/alice.audit" 2>&1
	[ "$(grep -c "alice sandbox:read $sbx allow" "$tmp/alice.audit")" -ge 5 ] &&
	    grep -q "alice sandbox:read $sbx deny .*reason=BAD_GATEWAY status=502" "$tmp/alice.audit" &&
	    grep -q "alice sandbox:read 8003 deny" "$tmp/alice.audit"
}
for _ in $(seq 50); do audited && break; sleep 0.1; done
audited &&
    ok "requests through a port are audited (decisions; the 502 as its outcome; the port not exposed)" ||
    bad "audit: $(grep -c "alice sandbox:read $sbx allow" "$tmp/alice.audit") allowed; $(grep "deny" "$tmp/alice.audit" | tail -3)"

# A pause ends the sandbox's commands, its server among them, and its
# port connector; a request through the port then makes another, which
# finds nothing listening.
req "$alice" POST "/v1/sandboxes/$sbx/pause" '{}'
pcode=$code
sleep 0.2
pgrep -f "^keepd: port $sbx\$" >/dev/null && paused_conn=yes || paused_conn=no
get "$alice" "/v1/sandboxes/$sbx/ports/8000/hello.txt"
[ "$pcode" = 200 ] && [ "$paused_conn" = no ] && [ "$code" = 502 ] &&
    pgrep -f "^keepd: port $sbx\$" >/dev/null &&
    ok "paused: its port connector ended; the next request makes another (502: its server ended)" ||
    bad "pause: $pcode, a connector after it: $paused_conn, then $code"

req "$alice" DELETE "/v1/sandboxes/$sbx"
sleep 0.2
pgrep -f "^keepd: port $sbx\$" >/dev/null &&
    bad "the port connector outlived its sandbox" ||
    ok "the sandbox deleted, its port connector ended"
keepd_finish
