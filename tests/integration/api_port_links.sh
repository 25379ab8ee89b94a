#!/usr/bin/env bash
# Links to a guest's port (issue 29, Deliver 4; docs/architecture.md,
# "Ports"): the sandbox's owner asks POST /v1/sandboxes/{id}/links for a
# signed, expiring link to a port whose expose rule says `link`, and
# whoever holds it reaches that port without a token: by the path form
# and by host name (a browser's GET is sent back without the link, which
# a cookie then carries), in E2B's traffic token header, through a
# WebSocket-style upgrade. A link opens no other port nor sandbox, nor
# any other route; a tampered, expired, revoked link, one whose rule no
# longer says `link`, or one to a deleted sandbox is refused; every
# request is audited with the issuer as principal and "by link", and the
# link never appears in the audit log nor keepd's log. All on loopback.
source "$(dirname "$0")/../lib/keepd.sh"

cat >"$tmp/test.policy" <<'EOP'
agent "alice" {
	allow sandbox:read, sandbox:write, exec, artifact:read, artifact:write
	exec "python"
	expose 8000 link 2h, 8001 link, 8002
	timeout 120s
}
agent "root" { allow admin }
EOP
KEEPD_YAML_EXTRA="ports:
  domain: sbx.keep.test" KEEPD_IMAGES="python" keepd_start "$tmp/test.policy"
alice=$(mint alice sandbox:read,sandbox:write,exec,artifact:read,artifact:write 1h)
root=$(mint root admin)
hp=${url#http://127.0.0.1:}

req "$alice" POST /v1/sandboxes '{"image":"python"}'
[ "$code" = 201 ] || { bad "sandbox: $code $body"; keepd_finish; exit 1; }
sbx=$(jget "$body" '["id"]')
req "$alice" POST /v1/sandboxes '{"image":"python"}'
sbx2=$(jget "$body" '["id"]')

echo "hello from the workspace" >"$tmp/hello.txt"
# The request as the guest's server got it: its line, its Cookie and
# whether a credential header reached it; after an Upgrade, a 101 and
# every byte back.
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
    hdr = {l.split(":", 1)[0].lower(): l.split(":", 1)[1].strip() for l in lines[1:] if ":" in l}
    if hdr.get("upgrade", "").lower() == "websocket":
        c.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
        while True:
            d = c.recv(4096)
            if not d:
                break
            c.sendall(d)
    else:
        f.read(int(hdr.get("content-length", "0")))
        cred = [h for h in ("authorization", "e2b-traffic-access-token") if h in hdr]
        out = "%s\ncookie=%s\ncred=%s" % (lines[0], hdr.get("cookie", "-"), ",".join(cred) or "-")
        out = out.encode()
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
for _ in $(seq "$(slow 100)"); do
	code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $alice" \
	    "$url/v1/sandboxes/$sbx/ports/8000/hello.txt")
	[ "$code" = 200 ] && break
	sleep 0.2
done

# --- asking for links: the policy decides ---------------------------------
req "$alice" POST "/v1/sandboxes/$sbx/links" '{"port":8002}'
[ "$code" = 403 ] && jget "$body" '["error"]["message"]' | grep -q "Port 8002 may not be reached by link" &&
    ok "a port whose rule gives no links: no link (403)" || bad "8002 link: $code $body"
req "$alice" POST "/v1/sandboxes/$sbx/links" '{"port":8000,"ttl":"3h"}'
[ "$code" = 403 ] && jget "$body" '["error"]["message"]' | grep -q "lasts at most 2h" &&
    ok "a link longer than its rule allows: 403 naming the bound" || bad "3h link: $code $body"
req "$alice" POST "/v1/sandboxes/$sbx/links" '{"port":8000,"ttl":0}'
[ "$code" = 400 ] && ok "ttl 0: 400" || bad "ttl 0: $code $body"
req "$alice" POST "/v1/sandboxes/$sbx/links" '{"port":8000,"ttl":"30m"}'
[ "$code" = 201 ] || { bad "link: $code $body"; keepd_finish; exit 1; }
link=$(jget "$body" '["token"]')
link_id=$(jget "$body" '["id"]')
lurl=$(jget "$body" '["url"]')
hurl=$(jget "$body" '["host_url"]')
[ "$lurl" = "$url/v1/sandboxes/$sbx/ports/8000/?keep_link=$link" ] &&
    [ "$hurl" = "http://8000-$sbx.sbx.keep.test:$hp/?keep_link=$link" ] &&
    ok "POST .../links: url (path form) and host_url (getHost's form), the link in keep_link" ||
    bad "link urls: $lurl $hurl"
req "$alice" POST "/v1/sandboxes/$sbx/links" '{"port":8001}'
link1=$(jget "$body" '["token"]')

# --- reaching the port by link, without a token ---------------------------
# A browser's GET with the link in the URL: sent back to the URL without
# it, with a cookie that holds it for this port alone.
hdrs=$(curl -s -D - -o /dev/null "$url/v1/sandboxes/$sbx/ports/8000/hello.txt?a=1&keep_link=$link")
printf '%s' "$hdrs" | grep -q '^HTTP/1.1 303' &&
    printf '%s' "$hdrs" | grep -qi "^Location: /v1/sandboxes/$sbx/ports/8000/hello.txt?a=1"$'\r'"$" &&
    printf '%s' "$hdrs" | grep -qi "^Set-Cookie: keep_link=$link; Path=/v1/sandboxes/$sbx/ports/8000; Max-Age=[0-9]*; HttpOnly; SameSite=Lax" &&
    ok "path form, link in the URL: 303 to the URL without it, the link in a cookie for the port's path" ||
    bad "redirect: $hdrs"
body=$(curl -s -L -c "$tmp/jar" -b "$tmp/jar" -w '\n%{http_code}' "$lurl")
code=${body##*$'\n'}; body=${body%$'\n'*}
[ "$code" = 200 ] && printf '%s' "$body" | grep -q "hello.txt" &&
    ok "the link's URL followed as a browser does (cookie jar): the guest's http.server answers" ||
    bad "link url: $code $body"
body=$(curl -s -b "$tmp/jar" -w '\n%{http_code}' "$url/v1/sandboxes/$sbx/ports/8000/hello.txt")
code=${body##*$'\n'}; body=${body%$'\n'*}
[ "$code" = 200 ] && [ "$(printf '%s' "$body")" = "hello from the workspace" ] &&
    ok "a later request carries the cookie alone: 200" || bad "cookie: $code $body"
body=$(curl -s -w '\n%{http_code}' -H "E2B-Traffic-Access-Token: $link" \
    "$url/v1/sandboxes/$sbx/ports/8000/hello.txt")
code=${body##*$'\n'}; body=${body%$'\n'*}
[ "$code" = 200 ] && [ "$(printf '%s' "$body")" = "hello from the workspace" ] &&
    ok "the link in E2B's E2B-Traffic-Access-Token header: 200" || bad "header: $code $body"
# E2B's traffic token (the sandbox's own token, a bearer token) in that
# header reaches the port too, as E2B's SDK sends it to getHost's name.
body=$(curl -s -w '\n%{http_code}' -H "E2B-Traffic-Access-Token: $alice" \
    -H "Host: 8000-$sbx.sbx.keep.test:$hp" "$url/hello.txt")
code=${body##*$'\n'}; body=${body%$'\n'*}
[ "$code" = 200 ] && [ "$(printf '%s' "$body")" = "hello from the workspace" ] &&
    ok "a bearer token as E2B-Traffic-Access-Token (E2B's trafficAccessToken) on the host form: 200" ||
    bad "e2b traffic token: $code $body"
req "$alice" POST /e2b/v2/sandboxes '{"templateID":"python","network":{"allowPublicTraffic":false}}'
[ "$code" = 201 ] && ok "E2B's network.allowPublicTraffic false: accepted (keep's ports are never public)" ||
    bad "allowPublicTraffic false: $code $body"
[ "$code" = 201 ] && req "$alice" DELETE "/v1/sandboxes/$(jget "$body" '["sandboxID"]')"
req "$alice" POST /e2b/v2/sandboxes '{"templateID":"python","network":{"allowPublicTraffic":true}}'
[ "$code" = 400 ] && ok "allowPublicTraffic true: 400, not served" || bad "allowPublicTraffic true: $code $body"
# By host name (getHost), the name only a Host header sent to loopback.
hdrs=$(curl -s -D - -o /dev/null -H "Host: 8000-$sbx.sbx.keep.test:$hp" "$url/hello.txt?keep_link=$link")
printf '%s' "$hdrs" | grep -q '^HTTP/1.1 303' &&
    printf '%s' "$hdrs" | grep -qi "^Location: /hello.txt"$'\r'"$" &&
    printf '%s' "$hdrs" | grep -qi "^Set-Cookie: keep_link=$link; Path=/;" &&
    ok "host form, link in the URL: 303 to / without it, a host-only cookie" ||
    bad "host redirect: $hdrs"
hdrs=$(curl -s -D - -o /dev/null --path-as-is -H "Host: 8000-$sbx.sbx.keep.test:$hp" "$url//evil.test/?keep_link=$link")
printf '%s' "$hdrs" | grep -qi "^Location: /.//evil.test/"$'\r'"$" &&
    ok "a path of //host is sent back as a path on the same host, not another site" ||
    bad "open redirect: $hdrs"
body=$(curl -s -w '\n%{http_code}' -H "Host: 8000-$sbx.sbx.keep.test:$hp" \
    -H "Cookie: keep_link=$link" "$url/hello.txt")
code=${body##*$'\n'}; body=${body%$'\n'*}
[ "$code" = 200 ] && [ "$(printf '%s' "$body")" = "hello from the workspace" ] &&
    ok "host form with the link's cookie: the guest's file" || bad "host cookie: $code $body"
# A POST keeps its link in the URL (no redirect); the guest sees neither
# it nor the link cookie, its own cookies yes.
for _ in $(seq "$(slow 100)"); do
	body=$(curl -s -w '\n%{http_code}' -H "Cookie: theme=dark; keep_link=$link1; b=2" \
	    --data-binary 'x' "$url/v1/sandboxes/$sbx/ports/8001/echo?q=1&keep_link=$link1")
	code=${body##*$'\n'}; body=${body%$'\n'*}
	[ "$code" = 200 ] && break
	sleep 0.2
done
[ "$code" = 200 ] && [ "$body" = $'POST /echo?q=1 HTTP/1.1\ncookie=theme=dark; b=2\ncred=-' ] &&
    ok "POST by link: the guest's server gets its path, query and cookies, never the link" ||
    bad "POST echo: $code $body"
body=$(curl -s -w '\n%{http_code}' -H "E2B-Traffic-Access-Token: $link1" "$url/v1/sandboxes/$sbx/ports/8001/h")
code=${body##*$'\n'}; body=${body%$'\n'*}
[ "$code" = 200 ] && [ "$body" = $'GET /h HTTP/1.1\ncookie=-\ncred=-' ] &&
    ok "E2B's header is not passed to the guest either" || bad "header to guest: $code $body"
ws=$(python3 - "$url" "$link1" "$sbx" <<'PY'
import socket, sys, urllib.parse
u = urllib.parse.urlparse(sys.argv[1])
s = socket.create_connection((u.hostname, u.port), timeout=20)
s.sendall(("GET /v1/sandboxes/%s/ports/8001/ws?keep_link=%s HTTP/1.1\r\nHost: x\r\n"
           "Upgrade: websocket\r\nConnection: Upgrade\r\n"
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
    ok "a WebSocket-style upgrade by link: 101, then bytes both ways" || bad "upgrade: '$ws'"

# --- what a link does not open ---------------------------------------------
get_code() { curl -s -o "$tmp/out" -w '%{http_code}' "$@"; }
code=$(get_code -H "E2B-Traffic-Access-Token: $link" "$url/v1/sandboxes/$sbx/ports/8001/h")
[ "$code" = 403 ] && grep -q "another sandbox or port" "$tmp/out" &&
    ok "a link for 8000 does not open 8001 (403)" || bad "other port: $code $(cat "$tmp/out")"
code=$(get_code -H "E2B-Traffic-Access-Token: $link" "$url/v1/sandboxes/$sbx2/ports/8000/")
[ "$code" = 403 ] && ok "nor the same port of another sandbox (403)" || bad "other sandbox: $code"
code=$(get_code -H "Host: 8000-$sbx2.sbx.keep.test" -H "Cookie: keep_link=$link" "$url/")
[ "$code" = 403 ] && ok "nor another sandbox's host name with the cookie (403)" || bad "other host: $code"
code=$(get_code -H "Authorization: Bearer $link" "$url/v1/sandboxes/$sbx")
[ "$code" = 401 ] && ok "a link is no bearer token for the API (401)" || bad "link as bearer: $code"
code=$(get_code -H "Authorization: Bearer $link" -H 'Content-Type: application/json' \
    -d '{"port":8000}' "$url/v1/sandboxes/$sbx/links")
[ "$code" = 401 ] && ok "a link makes no links (401)" || bad "link makes link: $code"
tampered=$(python3 -c 'import sys; t=sys.argv[1]; i=len(t)//2; print(t[:i]+("A" if t[i]!="A" else "B")+t[i+1:])' "$link")
code=$(get_code -H "E2B-Traffic-Access-Token: $tampered" "$url/v1/sandboxes/$sbx/ports/8000/hello.txt")
[ "$code" = 401 ] && ok "a tampered link: 401" || bad "tampered (header): $code"
code=$(get_code "$url/v1/sandboxes/$sbx/ports/8000/hello.txt?keep_link=$tampered")
[ "$code" = 401 ] && ok "a tampered link in the URL: 401, no cookie set" || bad "tampered (query): $code"
code=$(get_code "$url/v1/sandboxes/$sbx/ports/8000/hello.txt?keep_link=a%20b")
[ "$code" = 401 ] && ok "a malformed link: 401" || bad "malformed: $code"
code=$(get_code "$url/v1/sandboxes/$sbx/ports/8000/hello.txt?keep_link=$link&keep_link=$link")
[ "$code" = 401 ] && ok "a link twice in the URL: 401" || bad "twice: $code"
# 2 s, not 1: the front and the policy process read the clock in whole
# seconds, and a 1 s link asked across a second's turn can be born
# expired.
req "$alice" POST "/v1/sandboxes/$sbx/links" '{"port":8000,"ttl":"2s"}'
short=$(jget "$body" '["token"]')
[ -n "$short" ] || bad "a 2 s link: $code $body"
sleep 4
code=$(get_code -H "E2B-Traffic-Access-Token: $short" "$url/v1/sandboxes/$sbx/ports/8000/hello.txt")
[ "$code" = 401 ] && grep -q -i "expired" "$tmp/out" && ok "an expired link: 401" ||
    bad "expired: $code $(cat "$tmp/out")"
code=$(get_code "$url/v1/sandboxes/$sbx/ports/8000/hello.txt")
[ "$code" = 401 ] && ok "no token and no link: 401" || bad "nothing: $code"

# Revoked by its id, as any token (an admin's POST /v1/tokens/revoke).
req "$alice" POST "/v1/sandboxes/$sbx/links" '{"port":8000}'
rlink=$(jget "$body" '["token"]')
rid=$(jget "$body" '["id"]')
rexp=$(python3 -c 'import sys,datetime; print(int(datetime.datetime.strptime(sys.argv[1],"%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc).timestamp()))' "$(jget "$body" '["expires_at"]')")
code=$(get_code -H "E2B-Traffic-Access-Token: $rlink" "$url/v1/sandboxes/$sbx/ports/8000/hello.txt")
[ "$code" = 200 ] || bad "before revocation: $code"
req "$root" POST /v1/tokens/revoke "{\"jti\":\"$rid\",\"expires_at\":$rexp}"
[ "$code" = 200 ] || bad "revoke: $code $body"
code=$(get_code -H "E2B-Traffic-Access-Token: $rlink" "$url/v1/sandboxes/$sbx/ports/8000/hello.txt")
[ "$code" = 401 ] && ok "a revoked link (by its id): 401" || bad "revoked: $code"

# --- audit: by link, under the issuer, and never the link itself -----------
# The front's audit entries reach the store a moment after the replies:
# read until they are there (a loaded machine once read too soon).
audit_links() {
	"$KEEP" audit tail -n 2000 --data "$tmp/state/db" >"$tmp/all.audit" 2>&1
	grep -q "alice port.link $sbx allow" "$tmp/all.audit" &&
	    grep -q "alice port.link $sbx deny" "$tmp/all.audit" &&
	    [ "$(grep -c "alice sandbox:read $sbx allow.*by link" "$tmp/all.audit")" -ge 5 ] &&
	    grep -q "$link_id" "$tmp/all.audit" &&
	    grep -q "alice .*deny.*by link" "$tmp/all.audit"
}
for _ in $(seq "$(slow 50)"); do audit_links && break; sleep 0.1; done
audit_links &&
    ok "links minted and refused, and requests by link (issuer alice, 'by link', the link's id) are audited" ||
    bad "audit: $(grep -i link "$tmp/all.audit" | tail -5)"
sig=${link##*.}; sig=${link#v4.public.}; sig=${sig:0:40}
sig1=${link1#v4.public.}; sig1=${sig1:0:40}
if grep -q -F -e "$sig" -e "$sig1" "$tmp/all.audit" "$tmp/log"; then
	bad "a link's text is in the audit log or keepd's log"
else
	ok "no link's text in the audit log nor keepd's log"
fi

# keep api sandbox link: the same, from the command line.
out=$("$KEEP" api --url "$url" --token "$alice" sandbox link "$sbx" 8000 --ttl 10m 2>&1)
curl_url=$(printf '%s\n' "$out" | sed -n 's/^url: //p')
code=$(get_code -L -c "$tmp/jar2" -b "$tmp/jar2" "$curl_url")
[ "$code" = 200 ] && printf '%s' "$out" | grep -q '^host_url: http://8000-' &&
    ok "keep api sandbox link prints a URL that opens the port" || bad "cli link: $code $out"

# --- the policy closes links already given --------------------------------
# 8000's rule loses `link`: its links stop at the next request; 8001's
# still work; a token still reaches 8000.
sed -i 's/expose 8000 link 2h, 8001 link, 8002/expose 8000, 8001 link, 8002/' "$tmp/policy/test.policy"
kill -HUP "$pid"
for _ in $(seq "$(slow 100)"); do
	code=$(get_code -H "E2B-Traffic-Access-Token: $link" "$url/v1/sandboxes/$sbx/ports/8000/hello.txt")
	[ "$code" = 403 ] && break
	sleep 0.1
done
[ "$code" = 403 ] && grep -q "may not be reached by link" "$tmp/out" &&
    ok "the rule no longer says link: the link given before is refused (403)" ||
    bad "after reload: $code $(cat "$tmp/out")"
code=$(get_code -H "E2B-Traffic-Access-Token: $link1" "$url/v1/sandboxes/$sbx/ports/8001/h")
[ "$code" = 200 ] && ok "another port's link, still allowed, still works" || bad "8001 after reload: $code"
code=$(get_code -H "Authorization: Bearer $alice" "$url/v1/sandboxes/$sbx/ports/8000/hello.txt")
[ "$code" = 200 ] && ok "and the owner's token still reaches 8000" || bad "token after reload: $code"

# --- a deleted sandbox's link ---------------------------------------------
req "$alice" DELETE "/v1/sandboxes/$sbx"
code=$(get_code -H "E2B-Traffic-Access-Token: $link1" "$url/v1/sandboxes/$sbx/ports/8001/h")
[ "$code" = 404 ] && ok "a deleted sandbox's link: 404" || bad "deleted: $code $(cat "$tmp/out")"
req "$alice" DELETE "/v1/sandboxes/$sbx2"
keepd_finish
