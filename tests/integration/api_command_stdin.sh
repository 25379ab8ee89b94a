#!/usr/bin/env bash
# A command's stdin stream through keep's own API (docs/api.yaml,
# commands/run's stdin_stream and commands/input): commands/run with
# stdin_stream and an event stream starts `sh -c '...; cat'`, whose
# `start` event tells its pid; commands/input sends it text and bytes,
# then eof; the program saw a pipe, not a terminal, and wrote back what
# it read, and the stream ends with its exit; another reader
# (commands/stream) gets what it writes from when it came. Refusals: another
# principal's input to the same pid (404), stdin_stream without an
# event stream (400), input after eof while it runs (409) and after its
# end (404),
# oversized input (413), a pid that is no command (404).
source "$(dirname "$0")/../lib/keepd.sh"

cat >"$tmp/test.policy" <<'EOP'
agent "dev" {
	allow sandbox:read, sandbox:write, exec, artifact:write
	exec "sh", "cat"
	timeout 60s
}
agent "other" {
	allow sandbox:read, sandbox:write, exec
	exec "sh", "cat"
}
EOP
KEEPD_IMAGES="shell" keepd_start "$tmp/test.policy"
dev=$(mint dev sandbox:read,sandbox:write,exec,artifact:write)
other=$(mint other sandbox:read,sandbox:write,exec)
req "$dev" POST /v1/sandboxes '{"image":"shell"}'
[ "$code" = 201 ] || bad "create: $code $body"
sid=$(jget "$body" '["id"]')

cat >"$tmp/stdin.py" <<'PY'
# The stream's client: start the command, report its pid, then print
# each event as it comes (one JSON line per event) until the stream ends.
import http.client, json, sys, urllib.parse
# With a fifth argument, the pid: another reader (commands/stream).
url, sid, token, out = sys.argv[1:5]
u = urllib.parse.urlparse(url)
c = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
if len(sys.argv) > 5:
    c.request("GET", "/v1/sandboxes/%s/commands/stream?pid=%s" %
        (sid, sys.argv[5]), headers={"Authorization": "Bearer " + token,
        "Accept": "text/event-stream"})
else:
    body = json.dumps({"cmd": "sh", "args": ["-c",
        "if [ -t 0 ]; then echo tty; else echo pipe; fi; cat; echo end; "
        "while [ ! -e /gate ]; do sleep 0.1; done"],
        "stdin_stream": True})
    c.request("POST", "/v1/sandboxes/%s/commands/run" % sid, body,
        {"Authorization": "Bearer " + token,
         "Content-Type": "application/json", "Accept": "text/event-stream"})
r = c.getresponse()
with open(out, "w") as f:
    f.write("status %d\n" % r.status)
    f.flush()
    event = None
    while True:
        line = r.readline()
        if not line:
            break
        line = line.decode().rstrip("\n")
        if line.startswith("event: "):
            event = line[7:]
        elif line.startswith("data: "):
            f.write(json.dumps({"event": event,
                "data": json.loads(line[6:])}) + "\n")
            f.flush()
PY
python3 "$tmp/stdin.py" "$url" "$sid" "$dev" "$tmp/events" &
client=$!
for i in $(seq 300); do
	grep -q '"event": "start"' "$tmp/events" 2>/dev/null && break
	sleep 0.1
done
cpid=$(python3 -c 'import json,sys
for l in open(sys.argv[1]):
    if l.startswith("{") and json.loads(l)["event"] == "start":
        print(json.loads(l)["data"]["pid"])' "$tmp/events")
[ -n "$cpid" ] && ok "the stream's start event tells the command's pid" ||
	bad "no start event: $(cat "$tmp/events" 2>/dev/null)"

# Another reader of its stream, from now on (commands/stream).
python3 "$tmp/stdin.py" "$url" "$sid" "$dev" "$tmp/reader" "$cpid" &
reader=$!
for i in $(seq 300); do
	grep -q '"event": "start"' "$tmp/reader" 2>/dev/null && break
	sleep 0.1
done
grep -q '"event": "start", "data": {"pid": '"$cpid"'}' "$tmp/reader" &&
	ok "commands/stream: another reader's stream starts with the same pid" ||
	bad "reader: $(cat "$tmp/reader" 2>/dev/null)"
code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $other" \
    -H 'Accept: text/event-stream' "$url/v1/sandboxes/$sid/commands/stream?pid=$cpid")
[ "$code" = 404 ] && ok "another principal's reader of the command: 404" ||
	bad "other's reader: $code"
req "$dev" GET "/v1/sandboxes/$sid/commands/stream?pid=$cpid"
[ "$code" = 400 ] && ok "commands/stream without an event stream: 400" ||
	bad "reader without sse: $code $body"

req "$dev" POST "/v1/sandboxes/$sid/commands/input" '{"pid":'"$cpid"',"data":"hello "}'
[ "$code" = 204 ] && ok "commands/input: 204" || bad "input: $code $body"
req "$other" POST "/v1/sandboxes/$sid/commands/input" '{"pid":'"$cpid"',"data":"intruder\n"}'
[ "$code" = 404 ] && ok "another principal's input to the same pid: 404" ||
	bad "other's input: $code $body"
big=$(python3 -c 'import base64; print(base64.b64encode(b"x" * 65537).decode())')
req "$dev" POST "/v1/sandboxes/$sid/commands/input" '{"pid":'"$cpid"',"data_base64":"'"$big"'"}'
[ "$code" = 413 ] && ok "more than 64 KiB of input a request: 413" ||
	bad "oversized: $code $body"
req "$dev" POST "/v1/sandboxes/$sid/commands/input" '{"pid":999999,"data":"x"}'
[ "$code" = 404 ] && ok "a pid that is no command: 404" || bad "no such pid: $code $body"
req "$dev" POST "/v1/sandboxes/$sid/commands/input" '{"pid":'"$cpid"',"data_base64":"!!"}'
[ "$code" = 400 ] && ok "bad base64: 400" || bad "bad base64: $code $body"
# "world\n" as bytes, then the end.
req "$dev" POST "/v1/sandboxes/$sid/commands/input" '{"pid":'"$cpid"',"data_base64":"d29ybGQK","eof":true}'
[ "$code" = 204 ] && ok "data_base64 and eof: 204" || bad "eof: $code $body"
# The command still runs (it waits for /gate): its stdin is closed.
req "$dev" POST "/v1/sandboxes/$sid/commands/input" '{"pid":'"$cpid"',"data":"late"}'
[ "$code" = 409 ] && ok "input after eof, the command running: 409" ||
	bad "after eof: $code $body"
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer $dev" \
    --data-binary go "$url/v1/sandboxes/$sid/files/write?path=/gate")
[ "$code" = 200 ] || [ "$code" = 201 ] || [ "$code" = 204 ] || bad "gate: $code"
for i in $(seq 300); do
	kill -0 $client 2>/dev/null || break
	sleep 0.1
done
wait $client
out=$(python3 -c 'import json,sys
s = ""
for l in open(sys.argv[1]):
    if l.startswith("{") and json.loads(l)["event"] == "stdout":
        s += json.loads(l)["data"]["data"]
print(repr(s))' "$tmp/events")
[ "$out" = "'pipe\\nhello world\\nend\\n'" ] &&
	ok "the command read a pipe, not a terminal, then the input, then EOF" ||
	bad "stdout: $out; $(cat "$tmp/events")"
grep -q '"event": "exit".*"exit_code": 0' "$tmp/events" &&
	ok "the stream ends with the command's exit" || bad "no exit: $(cat "$tmp/events")"
wait $reader
rout=$(python3 -c 'import json,sys
s = ""
for l in open(sys.argv[1]):
    if l.startswith("{") and json.loads(l)["event"] == "stdout":
        s += json.loads(l)["data"]["data"]
print(repr(s))' "$tmp/reader")
case "$rout" in
"'hello world\nend\n'" | "'pipe\nhello world\nend\n'") ok "the reader got the output from when it came, and the exit" ;;
*) bad "reader's stdout: $rout" ;;
esac
grep -q '"event": "exit".*"exit_code": 0' "$tmp/reader" ||
	bad "the reader got no exit: $(cat "$tmp/reader")"
req "$dev" POST "/v1/sandboxes/$sid/commands/input" '{"pid":'"$cpid"',"data":"x"}'
[ "$code" = 404 ] && ok "input after the command ended: 404" || bad "after end: $code $body"

# stdin_stream needs an event stream, and is not with stdin nor in the
# background.
req "$dev" POST "/v1/sandboxes/$sid/commands/run" '{"cmd":"cat","stdin_stream":true}'
[ "$code" = 400 ] && ok "stdin_stream without an event stream: 400" ||
	bad "no stream: $code $body"
req "$dev" POST "/v1/sandboxes/$sid/commands/background" '{"cmd":"cat","stdin_stream":true}'
[ "$code" = 400 ] && ok "stdin_stream in the background: 400" ||
	bad "background: $code $body"
# Without stdin_stream a command's stdin is what stdin says, whole.
req "$dev" POST "/v1/sandboxes/$sid/commands/run" '{"cmd":"cat","stdin":"whole"}'
[ "$code" = 200 ] && [ "$(jget "$body" '["stdout"]')" = whole ] &&
	ok "stdin whole at start, as before" || bad "stdin: $code $body"

keepd_finish
