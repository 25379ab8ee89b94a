#!/usr/bin/env bash
# Secrets injected at egress (docs/egress.md, "Secrets injected at
# egress"), through a real keepd and the python image: the policy says
# egress "api.inject.test":PORT private inject "gh-token" as
# "Authorization"; a run whose env names ${{ secrets.gh-token }} gets a
# placeholder, sends it in Authorization over HTTPS (trusting keep's
# appliance CA), and the local HTTPS server (a test CA egress trusts
# through egress.ca_file) receives the real value. The value is nowhere
# else: not in the guest's environment (/proc/self/environ, os.environ),
# the run's output, the audit log, keepd's log, or a context's memory
# image. A placeholder in another header, in the body, or sent in clear
# to another allowed name is refused and audited.
# Loopback only: names map to 127.0.0.1 through egress.hosts_file.
set -u
source "$(dirname "$0")/../lib/keepd.sh"
[ -f "$B/images/python.img" ] || { echo "SKIP: no python image"; exit 77; }

# --- A test CA and a server certificate for the two names.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout "$tmp/ca.key" -out "$tmp/ca.pem" -days 2 -subj "/CN=inject test CA" \
    2>/dev/null || { echo "FAIL: test CA"; exit 1; }
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout "$tmp/srv.key" -out "$tmp/srv.csr" -subj "/CN=api.inject.test" \
    2>/dev/null
printf 'subjectAltName=DNS:api.inject.test\n' >"$tmp/san.ext"
openssl x509 -req -in "$tmp/srv.csr" -CA "$tmp/ca.pem" -CAkey "$tmp/ca.key" \
    -CAcreateserial -out "$tmp/srv.pem" -days 2 -extfile "$tmp/san.ext" \
    2>/dev/null || { echo "FAIL: server certificate"; exit 1; }

# --- The server: records every request's Authorization header and body.
cat >"$tmp/server.py" <<'EOF'
import http.server, ssl, sys, json
log = sys.argv[1]
class H(http.server.BaseHTTPRequestHandler):
    def handle_one_request(self):
        super().handle_one_request()
    def do_any(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n).decode("latin-1") if n else ""
        with open(log, "a") as f:
            f.write(json.dumps({"path": self.path, "auth": self.headers.get("Authorization"),
                                "other": self.headers.get("X-Other"), "body": body,
                                "host": self.headers.get("Host")}) + "\n")
        out = b"seen\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)
    do_GET = do_POST = do_any
    def log_message(self, *a):
        pass
tls = sys.argv[2] == "tls"
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
if tls:
    c = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    c.load_cert_chain(sys.argv[3], sys.argv[4])
    s.socket = c.wrap_socket(s.socket, server_side=True)
print("port", s.server_address[1], flush=True)
s.serve_forever()
EOF
python3 "$tmp/server.py" "$tmp/tls.log" tls "$tmp/srv.pem" "$tmp/srv.key" >"$tmp/tls.out" 2>&1 &
spid=$!
python3 "$tmp/server.py" "$tmp/plain.log" plain >"$tmp/plain.out" 2>&1 &
ppid_=$!
trap 'kill $spid $ppid_ 2>/dev/null; keepd_cleanup' EXIT
for _ in $(seq 50); do
	sp=$(sed -n 's/^port \([0-9]*\)/\1/p' "$tmp/tls.out" | head -n 1)
	pp=$(sed -n 's/^port \([0-9]*\)/\1/p' "$tmp/plain.out" | head -n 1)
	[ -n "$sp" ] && [ -n "$pp" ] && break
	sleep 0.1
done
[ -n "$sp" ] && [ -n "$pp" ] || { echo "FAIL: servers"; exit 1; }
: >"$tmp/tls.log"
: >"$tmp/plain.log"
echo "127.0.0.1 api.inject.test other.inject.test wrong.inject.test" >"$tmp/hosts"

cat >"$tmp/test.policy" <<EOP
agent "dev" {
	allow sandbox:read, sandbox:write, exec, secret:write
	exec "python", "js", "bash"
	secret "gh-token"
	egress "api.inject.test":$sp private inject "gh-token" as "Authorization"
	egress "other.inject.test":$pp http private
	egress "wrong.inject.test":$sp private inject "gh-token" as "Authorization"
	timeout 60s
}
agent "ops" { allow admin, audit:read }
EOP
# The machine image (curl, requests), when it was built.
imgs="python js"
[ -f "$B/images/machine.img" ] && imgs="$imgs machine"
KEEPD_IMAGES="$imgs" KEEPD_YAML_EXTRA="egress:
  ca_file: $tmp/ca.pem
  hosts_file: $tmp/hosts
  connect_timeout: 5s" keepd_start "$tmp/test.policy"
dev=$(mint dev sandbox:read,sandbox:write,exec,egress,secret:read,secret:write)
ops=$(mint ops admin,audit:read)
replies=$tmp/replies
: >"$replies"
rq() { req "$@"; printf '%s\n' "$body" >>"$replies"; }

# The appliance CA: made at the first start, key 0600, certificate 0644.
appca=$tmp/state/keys/appliance-ca.pem
[ -f "$appca" ] && [ "$(stat -c %a "$tmp/state/keys/appliance-ca.key")" = 600 ] &&
    [ "$(stat -c %a "$appca")" = 644 ] &&
    openssl x509 -in "$appca" -noout -text | grep -q 'CA:TRUE' &&
    ok "the appliance CA is made at the first start (key 0600, CA:TRUE)" ||
    bad "appliance CA: $(ls -l "$tmp/state/keys")"

val="ghp-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')-injected"
rq "$dev" PUT /v1/secrets/gh-token "{\"value\":\"$val\"}"
[ "$code" = 201 ] || bad "secret set: $code $body"
rq "$dev" POST /v1/sandboxes '{"image":"python"}'
[ "$code" = 201 ] || { bad "sandbox: $code $body"; keepd_finish; exit 1; }
sbx=$(jget "$body" '["id"]')

# pyexec CODE: execute in sbx with TOK=${{ secrets.gh-token }} and CA
# (the appliance CA's PEM) in the environment; sets code, body, out.
pyexec() {
	rq "$dev" POST "/v1/sandboxes/$sbx/execute" \
	    "$(python3 -c 'import json,sys; print(json.dumps({"code": sys.argv[1], "language": "python", "env_vars": {"TOK": "${{ secrets.gh-token }}", "CA": open(sys.argv[2]).read()}}))' "$1" "$appca")"
	out=$(jget "$body" '["stdout"]' 2>/dev/null || echo "HTTP $code $body")
}
prelude="
import os, ssl, http.client, socket
ctx = ssl.create_default_context(cadata=os.environ['CA'])
tok = os.environ['TOK']
def get(headers, body=None, method='GET', path='/x'):
    c = http.client.HTTPSConnection('api.inject.test', $sp, context=ctx, timeout=30)
    try:
        c.request(method, path, body=body, headers=headers)
        r = c.getresponse()
        return '%d %s' % (r.status, r.read().decode().strip())
    except (OSError, http.client.HTTPException) as e:
        return 'cut %s' % type(e).__name__
"

pyexec "$prelude
print('placeholder', tok.startswith('keep-placeholder-gh-token-'), len(tok))
# /proc/self/environ where the VMM serves it; os.environ always.
try:
    print('environ', open('/proc/self/environ', 'rb').read().decode('latin-1').replace(chr(0), ' '))
except OSError:
    print('environ', ' '.join('%s=%s' % kv for kv in os.environ.items()))
print('env', dict(os.environ))
print('get', get({'Authorization': 'Bearer ' + tok}))
"
first=$(printf '%s\n' "$out" | grep '^get ' || true)
printf '%s\n' "$out" | grep -q '^placeholder True 58$' &&
    ok "the guest's variable holds a placeholder (keep-placeholder-gh-token-<32 hex>)" ||
    bad "placeholder: $out $(jget "$body" '["stderr"]' 2>/dev/null)"
[ "$first" = "get 200 seen" ] &&
    ok "an HTTPS request with the placeholder in Authorization is answered by the real server" ||
    bad "injected request: $out $(jget "$body" '["stderr"]' 2>/dev/null)"
auth=$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["auth"])' "$tmp/tls.log" 2>/dev/null)
[ "$auth" = "Bearer $val" ] &&
    ok "the server received the secret's value in Authorization" ||
    bad "server saw: $auth ($(cat "$tmp/tls.log"))"
printf '%s\n' "$out" | grep -qF -- "$val" && bad "the value in the guest's environment or output"
printf '%s\n' "$out" | grep -q '^environ .*TOK=keep-placeholder-gh-token-' &&
    ok "the guest's environment (os.environ, /proc/self/environ where served) holds the placeholder, not the value" ||
    bad "environ: $out"

# The tools programs use, unchanged: curl (which offers h2 and http/1.1)
# and requests (urllib3 sets TCP_NODELAY on its socket).
if [ -f "$B/images/machine.img" ]; then
	rq "$dev" POST /v1/sandboxes '{"image":"machine"}'
	msb=$(jget "$body" '["id"]' 2>/dev/null)
	n2=$(wc -l <"$tmp/tls.log")
	# The machine image has no resolv.conf of keep's yet (the python,
	# node and shell images do): the name's address is asked of the
	# VMM's resolver (127.0.0.53) directly, and given to curl and
	# requests as a resolver would.
	cat >"$tmp/machine.sh" <<EOS
printf '%s' "\$CA" >appca.pem
addr=\$(python3 -c '
import socket, struct
q = struct.pack(">HHHHHH", 0x1234, 0x0100, 1, 0, 0, 0) + b"".join(bytes([len(l)]) + l.encode() for l in "api.inject.test".split(".")) + b"\\0" + struct.pack(">HH", 1, 1)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(5)
s.sendto(q, ("127.0.0.53", 53))
print(socket.inet_ntoa(s.recv(512)[-4:]))')
curl -sS --cacert appca.pem --resolve api.inject.test:$sp:\$addr -H "Authorization: Bearer \$TOK" https://api.inject.test:$sp/curl
ADDR=\$addr python3 -c '
import os, socket, requests
real = socket.getaddrinfo
socket.getaddrinfo = lambda h, *a, **k: real(os.environ["ADDR"] if h == "api.inject.test" else h, *a, **k)
r = requests.get("https://api.inject.test:$sp/requests", headers={"Authorization": "Bearer " + os.environ["TOK"]}, verify="appca.pem", timeout=30)
print("requests", r.text.strip())'
EOS
	script=$(cat "$tmp/machine.sh")
	rq "$dev" POST "/v1/sandboxes/$msb/commands/run" \
	    "$(python3 -c 'import json,sys; print(json.dumps({"cmd": "bash", "args": ["-c", sys.argv[1]], "env": {"TOK": "${{ secrets.gh-token }}", "CA": open(sys.argv[2]).read()}}))' "$script" "$appca")"
	mout=$(jget "$body" '["stdout"]' 2>/dev/null)
	auths=$(tail -n +$((n2+1)) "$tmp/tls.log" | python3 -c 'import json,sys; print(" ".join(json.loads(l)["path"] + "=" + str(json.loads(l)["auth"] == "Bearer " + sys.argv[1]) for l in sys.stdin))' "$val")
	[ "$mout" = $'seen\nrequests seen' ] && [ "$auths" = "/curl=True /requests=True" ] &&
	    ok "curl and requests in the machine image: the server receives the value" ||
	    bad "machine: $mout ($auths) $(jget "$body" '["stderr"]' 2>/dev/null)"
else
	echo "skip: no machine image (curl, requests)"
fi

# --- Refusals: the placeholder anywhere but Authorization.
n0=$(wc -l <"$tmp/tls.log")
pyexec "$prelude
print('other', get({'Authorization': 'Bearer x', 'X-Other': tok}))
print('body', get({'Content-Type': 'text/plain'}, body=('t=' + tok).encode(), method='POST'))
print('path', get({}, path='/?t=' + tok))
c2 = ssl.create_default_context(cadata=os.environ['CA'])
c2.set_alpn_protocols(['h2', 'http/1.1'])
s = c2.wrap_socket(socket.create_connection(('api.inject.test', $sp), timeout=30), server_hostname='api.inject.test')
print('alpn', s.selected_alpn_protocol(), s.getpeercert()['issuer'][-1][0][1].startswith('keep appliance CA'))
s.close()
"
printf '%s\n' "$out" | grep -q '^other 403 keep egress: refused: a placeholder where it may not be$' &&
    ok "the placeholder in another header: 403 from keep, the server never asked" ||
    bad "other header: $out $(jget "$body" '["stderr"]' 2>/dev/null)"
printf '%s\n' "$out" | grep -q '^body 403 keep egress: refused: a placeholder in the body$' &&
    ok "the placeholder in a body (held whole, Content-Length): 403" || bad "body: $out"
printf '%s\n' "$out" | grep -q '^path 403 keep egress: refused: a placeholder where it may not be$' &&
    ok "the placeholder in the request line: refused" || bad "path: $out"
printf '%s\n' "$out" | grep -q '^alpn http/1.1 True$' &&
    ok "the guest's side: a leaf from the appliance CA, ALPN http/1.1 when h2 is offered too" ||
    bad "alpn: $out"
[ "$(wc -l <"$tmp/tls.log")" = "$n0" ] &&
    ok "no refused request reached the server" || bad "server got: $(tail -n +$((n0+1)) "$tmp/tls.log" | cut -c 1-300)"
# Deep in a body that streams: the head went on, the connection is cut
# when the placeholder appears, before it is sent.
pyexec "$prelude
print('big', get({'Content-Type': 'text/plain'}, body=b'a' * 100000 + tok.encode(), method='POST'))
"
printf '%s\n' "$out" | grep -Eq '^big (403 |cut )' &&
    ok "the placeholder deep in a streamed body: the connection is cut" || bad "big body: $out"
grep -qF -- "keep-placeholder" "$tmp/tls.log" &&
    bad "a placeholder reached the server: $(grep -F keep-placeholder "$tmp/tls.log" | cut -c 1-300)"

# The real server's certificate is verified: the server behind
# wrong.inject.test has one for api.inject.test only, so the request
# never leaves egress (502, and the server sees no request).
n1=$(wc -l <"$tmp/tls.log")
pyexec "$prelude
c = http.client.HTTPSConnection('wrong.inject.test', $sp, context=ctx, timeout=30)
c.request('GET', '/w', headers={'Authorization': 'Bearer ' + tok})
r = c.getresponse()
print('wrong', r.status, r.read().decode().strip())
"
printf '%s\n' "$out" | grep -q '^wrong 502 keep egress: server TLS: .*' &&
    [ "$(wc -l <"$tmp/tls.log")" = "$n1" ] &&
    ok "a server whose certificate is not for the name: 502 from keep, nothing sent" ||
    bad "wrong name: $out $(jget "$body" '["stderr"]' 2>/dev/null)"

# The placeholder in clear to another allowed name: refused.
pyexec "$prelude
c = http.client.HTTPConnection('other.inject.test', $pp, timeout=30)
try:
    c.request('GET', '/?t=' + tok)
    r = c.getresponse()
    print('plain', r.status)
except (OSError, http.client.HTTPException) as e:
    print('plain cut', type(e).__name__)
c = http.client.HTTPConnection('other.inject.test', $pp, timeout=30)
c.request('GET', '/clean')
print('clean', c.getresponse().status)
"
printf '%s\n' "$out" | grep -q '^plain cut ' && ! grep -q 'keep-placeholder' "$tmp/plain.log" &&
    ok "the placeholder sent in clear to another allowed name: cut, never delivered" ||
    bad "plain other: $out ($(cat "$tmp/plain.log"))"
printf '%s\n' "$out" | grep -q '^clean 200$' &&
    ok "a request without a placeholder to that name goes through" || bad "clean: $out"

# KEEP_SYS_FETCH (the js image's fetch) does not inject: a placeholder in
# one is refused, and a fetch without one still reaches the name.
rq "$dev" POST /v1/sandboxes '{"image":"js"}'
jsx=$(jget "$body" '["id"]' 2>/dev/null)
code_js="try { fetch('https://api.inject.test:$sp/js', {headers: {'Authorization': 'Bearer keep-placeholder-gh-token-00000000000000000000000000000000'}}); print('sent'); } catch (e) { print('refused', e.message); } var r = fetch('https://api.inject.test:$sp/js2'); print('plain', r.status);"
rq "$dev" POST "/v1/sandboxes/$jsx/execute" "$(python3 -c 'import json,sys; print(json.dumps({"code":sys.argv[1],"language":"javascript"}))' "$code_js")"
jo=$(jget "$body" '["stdout"]' 2>/dev/null)
[[ $jo == *"refused"*"placeholder"* && $jo == *"plain 200"* ]] &&
    ok "KEEP_SYS_FETCH: a placeholder is refused; a fetch without one goes through" ||
    bad "js fetch: $code $body"

# --- A context's memory image: a context never holds a secret (cells
# may not name one); its image after a cell that read the sandbox's
# variables holds no value either.
rq "$dev" PUT "/v1/sandboxes/$sbx/env" '{"env":{"SBX_TOK":"${{ secrets.gh-token }}"}}'
rq "$dev" POST "/v1/sandboxes/$sbx/contexts" '{"language":"python"}'
ctxid=$(jget "$body" '["id"]' 2>/dev/null)
if [ -n "$ctxid" ]; then
	rq "$dev" POST "/v1/sandboxes/$sbx/execute" "{\"code\":\"import os; x = os.environ.get('SBX_TOK')\\nprint(x)\",\"context_id\":\"$ctxid\"}"
	# A pause saves each idle context's memory image to disk.
	from=$(mark)
	rq "$dev" POST "/v1/sandboxes/$sbx/pause" '{}'
	[ "$code" = 200 ] || [ "$code" = 204 ] || bad "pause: $code $body"
	paused "$ctxid" "$from" || bad "the context saved no memory image"
	nimg=$(find "$tmp/state" -type f -size +1M | wc -l)
	[ "$nimg" -gt 0 ] || bad "no memory image on disk after the pause"
	found=0
	while IFS= read -r f; do
		grep -qaF -- "$val" "$f" 2>/dev/null && found=1
	done < <(find "$tmp/state" -type f -size +1k 2>/dev/null)
	[ $found = 0 ] && ok "no file under the state directory (memory images included) holds the value" ||
	    bad "the value in a file under the state directory"
else
	bad "context: $code $body"
fi

# --- The audit log: every decision, never the value.
"$KEEP" audit export --data "$tmp/state" --since 1h >"$tmp/audit.jsonl" 2>/dev/null
audit_has() { # PREDICATE DESCRIPTION
	python3 -c '
import json, sys
for l in open(sys.argv[1]):
    e = json.loads(l)
    if '"$1"':
        sys.exit(0)
sys.exit(1)' "$tmp/audit.jsonl" && ok "audit: $2" || bad "audit: $2"
}
audit_has 'e["action"] == "egress.inject" and e["decision"] == "allow" and "secret gh-token as Authorization, GET, replaced 1" in e.get("rule", "")' \
    "the injection, by secret and header name"
audit_has 'e["action"] == "egress.inject" and e["decision"] == "deny" and "placeholder" in e.get("rule", "")' \
    "a refused placeholder"
audit_has 'e["action"] == "egress.scan" and e["decision"] == "deny" and e["target"] == "TCP other.inject.test:'"$pp"'"' \
    "the placeholder cut on its way in clear to another name"
rq "$ops" GET '/v1/audit?limit=200'
grep -qF -- "$val" "$tmp/audit.jsonl" && bad "the value in the audit log"
grep -qF -- "$val" "$replies" && bad "the value in an API reply"
grep -qF -- "$val" "$tmp/log" && bad "the value in keepd's log"
ok "searched the audit log, the API's replies and keepd's log for the value"

keepd_finish
