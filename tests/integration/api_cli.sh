#!/bin/bash
# keep api against keep-api-testserver (the real front over the fake
# backend): every CLI verb, exact error envelopes, and the front's
# behaviour on the wire (pipelining, malformed requests, slow clients,
# many connections). No KVM needed.
set -u
B=${B:-build}
KEEP=$B/bin/keep
SRV=$B/bin/keep-api-testserver
[ -x "$KEEP" ] && [ -x "$SRV" ] || { echo "missing $KEEP or $SRV"; exit 1; }
command -v curl >/dev/null || { echo "SKIP: no curl"; exit 77; }

tmp=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT

"$SRV" -p 0 -P "$tmp/port" -t admintok -s ro:reader:sandbox:read -e oldtok \
    -s lim:limited:sandbox:read -r limited:3 -T 1500 2>"$tmp/srv.log" &
pid=$!
for _ in $(seq 50); do [ -s "$tmp/port" ] && break; sleep 0.1; done
port=$(cat "$tmp/port")
U=http://127.0.0.1:$port
export KEEP_TOKEN=admintok
fails=0
check() { # name, condition...
	local name=$1; shift
	if "$@"; then echo "ok   $name"; else echo "FAIL $name"; fails=$((fails + 1)); fi
}
api() { "$KEEP" api --url "$U" "$@"; }

check "health" test "$(api health)" = ok
out=$(api sandbox create --image js --env A=1) ; id=$(echo "$out" | sed -n 's/^id: //p')
check "sandbox create" test -n "$id"
tok=$(echo "$out" | sed -n 's/^auth_token: //p')
check "sandbox list" grep -q "^$id " <(api sandbox list)
check "sandbox get --json" grep -q "\"id\":\"$id\"" <(api --json sandbox get "$id")
printf 'hello' > "$tmp/in.txt"
check "files put" api files put "$id" "$tmp/in.txt" dir/a.txt
check "files get" test "$(api files get "$id" dir/a.txt)" = hello
check "files ls" grep -q "a.txt" <(api files ls "$id" dir)
check "run sha256sum" test "$(api run "$id" sha256sum dir/a.txt)" = \
    "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824  dir/a.txt"
api files mkdir "$id" work >/dev/null
check "run --cwd" test "$(api run --cwd /work "$id" pwd)" = /work
check "run --cwd missing" sh -c '! "$0" api --url "$1" run --cwd /nodir "$2" pwd 2>/dev/null' "$KEEP" "$U" "$id"
check "exec javascript" test "$(api exec --language javascript "$id" '1+1')" = "javascript: 1+1"
api exec "$id" failboom 2>"$tmp/err"; rc=$?
check "exec exit status" test "$rc" = 1
check "exec stderr" grep -q boom "$tmp/err"
api run "$id" curl 2>"$tmp/err"; rc=$?
check "command outside allowlist" test "$rc" = 1
check "allowlist message" grep -q "Command not allowed: curl (FORBIDDEN, HTTP 403)" "$tmp/err"
check "env set" grep -q "^B=2$" <(api env set "$id" B=2)
check "env get" grep -q "^A=1$" <(api env get "$id")
check "files rm" api files rm "$id" dir/a.txt
check "audit" grep -q "allow" <(api audit --limit 5)
check "scoped token reads its sandbox" grep -q "^$id " <(env KEEP_TOKEN="$tok" "$KEEP" api --url "$U" sandbox get "$id")
env KEEP_TOKEN="$tok" "$KEEP" api --url "$U" sandbox get sbx-999 2>"$tmp/err"
check "scoped token: other sandbox is 404" grep -q "NOT_FOUND, HTTP 404" "$tmp/err"

# Exact envelopes on the wire.
body=$(curl -s -H 'Authorization: Bearer ro' -d '{"image":"js"}' "$U/v1/sandboxes")
check "403 body" test "$body" = '{"error":{"message":"Missing required capability: sandbox:write","code":"FORBIDDEN"}}'
hdr=$(curl -si "$U/v1/sandboxes" | tr -d '\r')
check "401 WWW-Authenticate" grep -q "^WWW-Authenticate: Bearer$" <<<"$hdr"
check "401 expired" grep -q "Token expired" <(curl -s -H 'Authorization: Bearer oldtok' "$U/v1/sandboxes")
for _ in 1 2 3; do curl -s -o /dev/null -H 'Authorization: Bearer lim' "$U/v1/sandboxes"; done
hdr=$(curl -si -H 'Authorization: Bearer lim' "$U/v1/sandboxes" | tr -d '\r')
check "429 status" grep -q "^HTTP/1.1 429" <<<"$hdr"
check "429 Retry-After" grep -q "^Retry-After: 7$" <<<"$hdr"
check "X-Request-Id" grep -q "^X-Request-Id: " <<<"$hdr"
a=$(curl -s -H 'Idempotency-Key: k' -H "Authorization: Bearer admintok" -d '{"image":"js"}' "$U/v1/sandboxes")
b=$(curl -s -H 'Idempotency-Key: k' -H "Authorization: Bearer admintok" -d '{"image":"js"}' "$U/v1/sandboxes")
check "idempotent replay" test "$a" = "$b"
check "idempotent conflict" grep -q CONFLICT <(curl -s -H 'Idempotency-Key: k' -H "Authorization: Bearer admintok" -d '{"image":"hello"}' "$U/v1/sandboxes")
sse=$(curl -s -H 'Accept: text/event-stream' -H "Authorization: Bearer admintok" -d '{"cmd":"echo","args":["hi"]}' "$U/v1/sandboxes/$id/commands/run")
check "SSE events" test "$sse" = "$(printf 'event: stdout\ndata: {"data":"hi\\n"}\n\nevent: exit\ndata: {"exit_code":0,"duration_ms":1,"reason":null}')"
sse=$(curl -sN -H 'Accept: text/event-stream' -H "Authorization: Bearer admintok" -d '{"code":"defer-me"}' "$U/v1/sandboxes/$id/execute")
check "SSE streamed (deferred run, chunked)" test "$sse" = "$(printf 'event: stdout\ndata: {"data":"defer-me"}\n\nevent: stderr\ndata: {"data":"done"}\n\nevent: exit\ndata: {"exit_code":0,"duration_ms":5,"reason":null}')"
check "deferred run, plain JSON" grep -q '"stdout":"defer-me2","stderr":"done"' <(curl -s -H "Authorization: Bearer admintok" -d '{"code":"defer-me2"}' "$U/v1/sandboxes/$id/execute")
check "openapi.json" python3 -c "import json,sys; d=json.load(sys.stdin); assert d['openapi'].startswith('3.1')" < <(curl -s "$U/v1/openapi.json")
check "chunked body" grep -q '"id"' <(curl -s -H 'Transfer-Encoding: chunked' -H "Authorization: Bearer admintok" -d '{"image":"js"}' "$U/v1/sandboxes")

# Raw wire behaviour, through python's socket module.
wire() { python3 - "$port" "$@" <<'PY'
import select, socket, sys, time
port = int(sys.argv[1]); mode = sys.argv[2]
s = socket.create_connection(("127.0.0.1", port)); s.settimeout(5)
def recv_all():
    out = b""
    try:
        while True:
            d = s.recv(65536)
            if not d: break
            out += d
    except socket.timeout:
        pass
    return out
if mode == "pipeline":
    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n" * 3 + b"GET /healthz HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
    print(recv_all().count(b"HTTP/1.1 200 OK"))
elif mode == "smuggle":
    s.sendall(b"POST /healthz HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /healthz HTTP/1.1\r\nHost: a\r\n\r\n")
    r = recv_all(); print(r.count(b"HTTP/1.1 "), r.split(b"\r\n")[0].decode())
elif mode == "garbage":
    s.sendall(b"\x00\xff\x16\x03\x01 hello\r\n\r\n")
    print(recv_all().split(b"\r\n")[0].decode())
elif mode == "slowloris":
    # Cut off (1) when the answer comes before the 40th header, which
    # takes the client at least 4 s to send: not a clock in the test.
    s.sendall(b"GET /healthz HTTP/1.1\r\n")
    cut = 0
    try:
        for i in range(40):
            s.sendall(b"X-%d: y\r\n" % i); time.sleep(0.1)
            if select.select([s], [], [], 0)[0]:
                cut = 1; break
    except OSError:
        cut = 1
    r = recv_all(); print(r.split(b"\r\n")[0].decode() or "closed", cut)
elif mode == "bigbody":
    s.sendall(b"POST /v1/sandboxes HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999\r\n\r\n")
    print(recv_all().split(b"\r\n")[0].decode())
PY
}
check "pipelining" test "$(wire pipeline)" = 4
check "CL+TE refused and closed" test "$(wire smuggle)" = "1 HTTP/1.1 400 Bad Request"
check "garbage gets 400" test "$(wire garbage)" = "HTTP/1.1 400 Bad Request"
check "slowloris cut off" test "$(wire slowloris)" = "HTTP/1.1 408 Request Timeout 1"
check "oversized body 413" test "$(wire bigbody)" = "HTTP/1.1 413 Content Too Large"
check "still serving" test "$(api health)" = ok
check "metrics" grep -q 'keep_http_requests_total{route="sandbox_create",code="201"}' <(curl -s -H "Authorization: Bearer admintok" "$U/metrics")
kill -0 "$pid" 2>/dev/null; check "server alive" test $? = 0
[ "$fails" -eq 0 ]
