#!/usr/bin/env bash
# Accept: text/event-stream streams: what a run prints arrives as its own
# event while the run goes on. The guest prints "ready", then waits until
# a file appears in its workspace; the test writes that file only once it
# has read the "ready" event. Without streaming the event would come at
# the end, the file never, and the run would end with "no go" instead.
# Output printed 1 s apart arrives as separate events, and the final
# result does not repeat what was streamed.
source "$(dirname "$0")/../lib/keepd.sh"

cat >"$tmp/test.policy" <<'EOP'
agent "dev" {
	allow sandbox:read, sandbox:write, exec, artifact:read, artifact:write
	exec "python"
	timeout 60s
}
EOP
keepd_start "$tmp/test.policy"
dev=$(mint dev sandbox:read,sandbox:write,exec,artifact:read,artifact:write)
req "$dev" POST /v1/sandboxes '{"image":"python"}'
[ "$code" = 201 ] || bad "create: $code $body"
sid=$(jget "$body" '["id"]')

python3 - "$url" "$dev" "$sid" >"$tmp/out" 2>&1 <<'PY'
import http.client, json, sys, time, urllib.parse
u = urllib.parse.urlparse(sys.argv[1]); tok, sid = sys.argv[2], sys.argv[3]
code = r'''
import os, sys, time
print("ready", flush=True)
deadline = time.monotonic() + 30
while not os.path.exists("go") and time.monotonic() < deadline:
    time.sleep(0.1)
print("go" if os.path.exists("go") else "no go", flush=True)
time.sleep(1)
print("later", flush=True)
'''
c = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
c.request("POST", "/v1/sandboxes/%s/execute" % sid,
          json.dumps({"code": code, "language": "python"}),
          {"Authorization": "Bearer " + tok, "Content-Type": "application/json",
           "Accept": "text/event-stream"})
t0 = time.monotonic()
r = c.getresponse()
print("status", r.status, r.getheader("Content-Type"))
event, stdout_events, wrote = None, [], False
while True:
    line = r.fp.readline()
    if not line:
        break
    line = line.decode().rstrip("\r\n")
    if line.startswith("event: "):
        event = line[7:]
    elif line.startswith("data: ") and event == "stdout":
        stdout_events.append(json.loads(line[6:])["data"])
        print("stdout event", repr(stdout_events[-1]),
              "at +%.2f s" % (time.monotonic() - t0))
        if "ready" in stdout_events[-1] and not wrote:
            w = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
            w.request("POST", "/v1/sandboxes/%s/files/write?path=go" % sid, b"1",
                      {"Authorization": "Bearer " + tok})
            print("write go", w.getresponse().status); wrote = True
    elif line.startswith("data: "):
        print("event", event, line[6:])
        if event == "exit":
            break
print("all stdout", repr("".join(stdout_events)))
print("stdout events", len(stdout_events))
PY
cat "$tmp/out"
grep -q '^status 200 text/event-stream' "$tmp/out" && ok "an event stream" || bad "not an event stream"
grep -q "^write go 200" "$tmp/out" && ok "the 'ready' event came while the run went on" || bad "no 'ready' event during the run"
grep -q "^all stdout 'ready\\\\ngo\\\\nlater\\\\n'" "$tmp/out" && ok "the guest saw the file: the output, once, in order" ||
    bad "output: $(grep '^all stdout' "$tmp/out")"
n=$(sed -n 's/^stdout events //p' "$tmp/out")
[ "${n:-0}" -ge 2 ] && ok "lines printed apart: $n separate events" || bad "stdout events: $n"
keepd_finish
