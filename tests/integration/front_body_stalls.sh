#!/usr/bin/env bash
# Half-sent bodies neither lock anyone out nor hold the front's memory
# without a token (issue 31, findings 5 and 6), on loopback with a bounded
# load: keepd allows 8 connections.
# - A body still to come on a route that needs a token, without one or
#   with one that does not verify, is answered 401 right after its head:
#   the client has sent no byte of it (before, the front waited for the
#   body and answered 408 when it did not come).
# - A good token's body may arrive in pieces and is served.
# - 8 connections each holding a half-sent body (a public route, the only
#   kind whose body is read without a token) do not lock a newcomer out:
#   the oldest is closed for it, and /healthz answers 200, not 503.
KEEPD_NO_GUEST=1
source "$(dirname "$0")/../lib/keepd.sh"

cat >"$tmp/test.policy" <<'EOP'
agent "dev" { allow sandbox:read, sandbox:write }
EOP
KEEPD_IMAGES=hello KEEPD_YAML_EXTRA=$'limits:\n  max_connections: 8' keepd_start "$tmp/test.policy"
dev=$(mint dev sandbox:read,sandbox:write)
forged="${dev%?}A"; [ "$forged" = "$dev" ] && forged="${dev%?}B"
port=${url##*:}

python3 - "$port" "$dev" "$forged" <<'EOF' || fails=$((fails+1))
import socket, sys, json
port, good, forged = int(sys.argv[1]), sys.argv[2], sys.argv[3]
def conn():
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(120)   # a bound on a hang, not a measure of speed
    return s
def status(s):
    data = b""
    while b"\r\n\r\n" not in data:
        b = s.recv(4096)
        if not b:
            break
        data += b
    return data.split(b" ", 2)[1].decode() if data.startswith(b"HTTP/1.1 ") else "none"
bad = 0
for name, auth in (("no token", ""), ("a forged token", "Authorization: Bearer %s\r\n" % forged)):
    s = conn()
    s.sendall(("POST /v1/sandboxes HTTP/1.1\r\nHost: k\r\n%sContent-Type: application/json\r\n"
               "Content-Length: 8000000\r\n\r\n" % auth).encode())
    st = status(s)
    print(("ok" if st == "401" else "FAIL") + ": an 8 MB body with %s, none of it sent: %s" % (name, st))
    bad += st != "401"
    s.close()
body = json.dumps({"image": "hello"}).encode()
s = conn()
s.sendall(("POST /v1/sandboxes HTTP/1.1\r\nHost: k\r\nAuthorization: Bearer %s\r\n"
           "Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % (good, len(body))).encode()
          + body[:5])
s.sendall(body[5:])
st = status(s)
print(("ok" if st == "201" else "FAIL") + ": a good token's body in two pieces: %s" % st)
bad += st != "201"
s.close()
held = []
for i in range(8):
    h = conn()
    h.sendall(b"GET /healthz HTTP/1.1\r\nHost: k\r\nContent-Length: 100\r\n\r\nabc")
    held.append(h)
s = conn()
s.sendall(b"GET /healthz HTTP/1.1\r\nHost: k\r\nConnection: close\r\n\r\n")
st = status(s)
print(("ok" if st == "200" else "FAIL") + ": /healthz beside 8 half-sent bodies: %s" % st)
bad += st != "200"
sys.exit(1 if bad else 0)
EOF
keepd_finish
