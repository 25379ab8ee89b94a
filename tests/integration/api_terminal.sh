#!/usr/bin/env bash
# The terminal (docs/terminal.md): GET /v1/sandboxes/{id}/terminal is a
# WebSocket bound to `sh -i` in the sandbox's shell image. A client made
# of the standard library types `echo hi` and reads `hi`; the shell sees
# a terminal (test -t, stty size after a resize message); pings are
# answered; `exit` ends the run and the server closes with 1000; the run
# is in the audit log. Refusals: no upgrade (400), an agent the policy
# does not let run sh (403), an unmasked frame (close 1002).
source "$(dirname "$0")/../lib/keepd.sh"

cat >"$tmp/test.policy" <<'EOP'
agent "dev" {
	allow sandbox:read, sandbox:write, exec
	exec "sh"
	timeout 60s
}
agent "nosh" {
	allow sandbox:read, sandbox:write, exec
	exec "ls"
}
EOP
KEEPD_IMAGES="shell" keepd_start "$tmp/test.policy"
dev=$(mint dev sandbox:read,sandbox:write,exec)
nosh=$(mint nosh sandbox:read,sandbox:write,exec)
req "$dev" POST /v1/sandboxes '{"image":"shell"}'
[ "$code" = 201 ] || bad "create: $code $body"
sid=$(jget "$body" '["id"]')

cat >"$tmp/ws.py" <<'PY'
# A WebSocket client of the standard library only (RFC 6455).
import base64, hashlib, json, os, socket, struct, sys, time, urllib.parse

class WS:
    def __init__(self, url, path, token, extra=b""):
        u = urllib.parse.urlparse(url)
        self.s = socket.create_connection((u.hostname, u.port), timeout=30)
        self.key = base64.b64encode(os.urandom(16)).decode()
        self.s.sendall(("GET %s HTTP/1.1\r\nHost: %s:%d\r\n"
            "Authorization: Bearer %s\r\nUpgrade: websocket\r\n"
            "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
            "Sec-WebSocket-Version: 13\r\n\r\n" % (path, u.hostname, u.port,
            token, self.key)).encode() + extra)
        self.buf = b""
        while b"\r\n\r\n" not in self.buf:
            d = self.s.recv(4096)
            if not d:
                break
            self.buf += d
        head, _, self.buf = self.buf.partition(b"\r\n\r\n")
        self.head = head.decode("latin-1")
        self.status = int(self.head.split(" ")[1]) if self.head else 0

    def accept_ok(self):
        want = base64.b64encode(hashlib.sha1((self.key +
            "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest()).decode()
        return ("sec-websocket-accept: " + want).lower() in self.head.lower()

    def send(self, op, data, mask=True):
        b = bytes([0x80 | op])
        n = len(data)
        m = 0x80 if mask else 0
        if n < 126:
            b += bytes([m | n])
        elif n < 65536:
            b += bytes([m | 126]) + struct.pack(">H", n)
        else:
            b += bytes([m | 127]) + struct.pack(">Q", n)
        if mask:
            k = os.urandom(4)
            b += k + bytes(c ^ k[i % 4] for i, c in enumerate(data))
        else:
            b += data
        self.s.sendall(b)

    def _need(self, n, deadline):
        while len(self.buf) < n:
            self.s.settimeout(max(0.1, deadline - time.time()))
            d = self.s.recv(65536)
            if not d:
                raise EOFError
            self.buf += d

    def frame(self, deadline):
        self._need(2, deadline)
        op, n = self.buf[0] & 0x0f, self.buf[1] & 0x7f
        if self.buf[1] & 0x80:
            raise ValueError("a server frame is masked")
        h = 2
        if n == 126:
            self._need(4, deadline); n = struct.unpack(">H", self.buf[2:4])[0]; h = 4
        elif n == 127:
            self._need(10, deadline); n = struct.unpack(">Q", self.buf[2:10])[0]; h = 10
        self._need(h + n, deadline)
        data, self.buf = self.buf[h:h + n], self.buf[h + n:]
        return op, data

    def read_until(self, pred, seconds=30):
        """Output until pred(text) holds; returns the text."""
        deadline, text = time.time() + seconds, ""
        while time.time() < deadline:
            try:
                op, data = self.frame(deadline)
            except socket.timeout:
                break
            if op == 2:
                text += data.decode("utf-8", "replace")
                if pred(text):
                    return text
            elif op == 8:
                raise EOFError("closed: %r after %r" % (data, text))
        raise TimeoutError(text)

def lines(t):
    return [l.strip("\r") for l in t.split("\n")]

url, sid, tok, mode = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
path = "/v1/sandboxes/%s/terminal?cols=100&rows=30&term=dumb" % sid
if mode == "session":
    w = WS(url, path, tok)
    print("status", w.status, "accept", w.accept_ok())
    w.read_until(lambda t: len(t) > 0)            # the prompt
    w.send(2, b"echo hi\n")
    t = w.read_until(lambda t: "hi" in lines(t).__getitem__(slice(1, None)))
    print("echo", "hi" in lines(t)[1:])
    w.send(1, json.dumps({"type": "input",
        "data": "test -t 0 && test -t 1 && echo tty-yes\r"}).encode())
    t = w.read_until(lambda t: "tty-yes" in lines(t))
    print("isatty", "tty-yes" in lines(t))
    w.send(1, json.dumps({"type": "resize", "cols": 120, "rows": 40}).encode())
    w.send(2, b"stty size\n")
    t = w.read_until(lambda t: "40 120" in lines(t))
    print("winsize", "40 120" in lines(t))
    w.send(9, b"are you there")
    deadline = time.time() + 30
    while True:
        op, data = w.frame(deadline)
        if op == 10:
            print("pong", data == b"are you there")
            break
    w.send(2, b"exit\n")
    deadline, code = time.time() + 30, None
    try:
        while True:
            op, data = w.frame(deadline)
            if op == 8:
                code = struct.unpack(">H", data[:2])[0]
                break
    except EOFError:
        pass
    print("close", code)
elif mode == "unmasked":
    w = WS(url, path, tok)
    w.read_until(lambda t: len(t) > 0)
    w.send(2, b"echo x\n", mask=False)
    deadline, code = time.time() + 30, None
    while True:
        op, data = w.frame(deadline)
        if op == 8:
            code = struct.unpack(">H", data[:2])[0]
            break
    print("close", code)
elif mode == "hangup":
    u = urllib.parse.urlparse(url)
    s = socket.create_connection((u.hostname, u.port), timeout=30)
    s.sendall(("GET %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
        "Upgrade: websocket\r\nConnection: Upgrade\r\n"
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
        "Sec-WebSocket-Version: 13\r\n\r\n" % (path, tok)).encode())
    s.close()
    print("hung up")
elif mode == "refused":
    w = WS(url, path, tok)
    print("status", w.status)
PY

python3 "$tmp/ws.py" "$url" "$sid" "$dev" session >"$tmp/out" 2>&1
cat "$tmp/out"
grep -qx 'status 101 accept True' "$tmp/out" && ok "101 Switching Protocols, the right accept" || bad "upgrade"
grep -qx 'echo True' "$tmp/out" && ok "typed echo hi, read hi" || bad "echo hi"
grep -qx 'isatty True' "$tmp/out" && ok "the shell's stdin and stdout are a terminal" || bad "isatty"
grep -qx 'winsize True' "$tmp/out" && ok "a resize message: stty size says 40 120" || bad "resize"
grep -qx 'pong True' "$tmp/out" && ok "a ping is answered" || bad "ping"
grep -qx 'close 1000' "$tmp/out" && ok "exit: the server closes with 1000" || bad "close"

python3 "$tmp/ws.py" "$url" "$sid" "$dev" unmasked >"$tmp/out2" 2>&1
grep -qx 'close 1002' "$tmp/out2" && ok "an unmasked frame: close 1002" || bad "unmasked: $(cat "$tmp/out2")"
python3 "$tmp/ws.py" "$url" "$sid" "$nosh" refused >"$tmp/out3" 2>&1
req "$nosh" POST /v1/sandboxes '{"image":"shell"}'
nsid=$(jget "$body" '["id"]')
python3 "$tmp/ws.py" "$url" "$nsid" "$nosh" refused >"$tmp/out3" 2>&1
grep -qx 'status 403' "$tmp/out3" && ok "an agent that may not run sh: 403" || bad "nosh: $(cat "$tmp/out3")"
req "$dev" GET "/v1/sandboxes/$sid/terminal"
[ "$code" = 400 ] && ok "no upgrade: 400" || bad "no upgrade: $code $body"

# keep api terminal, its input a pipe: its end is ^D to the shell.
printf 'echo hi-from-cli\n' | timeout 60 "$KEEP" api --url "$url" --token "$dev" \
    terminal "$sid" >"$tmp/cli" 2>&1
rc=$?
# bash's readline brackets each line for pasting (ESC [?2004h ... l) on
# an xterm whose description the image holds, as it does natively.
tr -d '\r' <"$tmp/cli" | sed 's/\x1b\[[0-9;?]*[a-zA-Z]//g' | grep -qx 'hi-from-cli' && [ $rc = 0 ] &&
    ok "keep api terminal: typed, read, ended by the end of input" ||
    bad "keep api terminal: rc $rc: $(cat -v "$tmp/cli" | head -c 400)"

# A client that goes before its 101: the shell's input ends, and the run
# with it, long before its 60 s limit.
req "$dev" POST /v1/sandboxes '{"image":"shell"}'
hsid=$(jget "$body" '["id"]')
python3 "$tmp/ws.py" "$url" "$hsid" "$dev" hangup >/dev/null 2>&1
for i in $(seq 200); do
	"$KEEP" audit export --data "$tmp/state" --since 1h >"$tmp/audit.jsonl" 2>/dev/null
	grep -q '"action":"run".*"target":"'"$hsid"' sh".*"detail":"exit' "$tmp/audit.jsonl" && break
	sleep 0.1
done
grep -q '"action":"run".*"target":"'"$hsid"' sh".*"detail":"exit' "$tmp/audit.jsonl" &&
    ok "a client gone before the 101: the shell ends at once" ||
    bad "hangup: $(grep "$hsid" "$tmp/audit.jsonl" | tail -n 2)"

for i in $(seq 50); do
	"$KEEP" audit export --data "$tmp/state" --since 1h >"$tmp/audit.jsonl" 2>/dev/null
	grep -q '"action":"run".*"target":"'"$sid"' sh"' "$tmp/audit.jsonl" && break
	sleep 0.1
done
grep -q '"action":"run".*"target":"'"$sid"' sh"' "$tmp/audit.jsonl" &&
    ok "the session is audited as a run" || bad "audit: $(tail -n 3 "$tmp/audit.jsonl")"

keepd_finish
