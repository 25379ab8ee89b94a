#!/usr/bin/env bash
# Egress end to end: a real keepd (as root, chroots, seccomp, KVM), a
# guest in a sandbox calling KEEP_SYS_FETCH (tests/guests/fetch.c packaged
# as a signed image, and the js image's fetch()), the policy deciding, the
# egress process checking and fetching from an HTTPS server on 127.0.0.1
# with a test CA that the config trusts (egress.ca_file). Names are given
# loopback and metadata addresses by egress.hosts_file; nothing outside
# loopback is ever contacted (169.254.169.254 is refused before connect).
# Also webhooks: execute/async POSTs the signed result, with retries.
set -u
cd "$(dirname "$0")/../.."
B=${B:-build}; KEEP=$B/bin/keep; KEEPD=$B/bin/keepd
source tests/lib/platform.sh # a guest platform: kvm or trap, or a loud skip
if [ "$(id -u)" -ne 0 ]; then echo "SKIP: needs root"; exit 77; fi
command -v openssl >/dev/null && command -v python3 >/dev/null ||
    { echo "SKIP: openssl or python3 missing"; exit 77; }
[ -x "$B/guests/fetch" ] || make --no-print-directory "$B/guests/fetch" >/dev/null || exit 1
getent passwd _keep >/dev/null || useradd --system --no-create-home \
    --home-dir /nonexistent --shell /usr/sbin/nologin _keep || exit 1
tmp=$(mktemp -d); pid=; spid=; dpid=
cleanup() {
	[ -n "${KEEP_TEST_KEEP:-}" ] && cp -r "$tmp" /tmp/egress-e2e-keep
	[ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	[ -n "$spid" ] && kill "$spid" 2>/dev/null
	[ -n "$dpid" ] && kill "$dpid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
chmod 755 "$tmp"
fails=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fails=$((fails+1)); }

# ---- a test CA and an HTTPS server on 127.0.0.1 ----------------------
(cd "$tmp" &&
 openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -days 1 -subj /CN=keep-e2e-ca -addext basicConstraints=critical,CA:TRUE \
    -addext keyUsage=critical,keyCertSign -keyout ca.key -out ca.pem &&
 printf 'subjectAltName=DNS:good.test,DNS:noprivate.test,DNS:evil.test,DNS:meta.test,DNS:api.github.com,DNS:evilapi.github.com.attacker,DNS:hooks.test,DNS:dns.test\n' >ext.cnf &&
 openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -subj /CN=good.test -keyout srv.key -out srv.csr &&
 openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
    -days 1 -extfile ext.cnf -out srv.pem) >/dev/null 2>&1 || { echo "FAIL: test CA"; exit 1; }
chmod 644 "$tmp/ca.pem"
cat >"$tmp/server.py" <<'EOPY'
import http.server, ssl, sys, threading, time, json, urllib.parse
hooks = []
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    def log_message(self, *a): pass
    def send(self, code, body, extra=()):
        self.send_response(code)
        for k, v in extra: self.send_header(k, v)
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        if self.command != 'HEAD': self.wfile.write(body)
    def any(self):
        u = urllib.parse.urlsplit(self.path)
        q = dict(urllib.parse.parse_qsl(u.query))
        n = int(self.headers.get('Content-Length') or 0)
        body = self.rfile.read(n) if n else b''
        p = u.path
        with open(sys.argv[4], 'a') as f: f.write(self.path + '\n')
        if p == '/ok': return self.send(200, b'hello from loopback')
        if p == '/big': return self.send(200, b'x' * (1 << 20))
        if p == '/slow':
            time.sleep(float(q.get('s', '4')))
            return self.send(200, b'late')
        if p == '/redirect':
            return self.send(302, b'', [('Location', q['to'])])
        if p == '/echo':
            return self.send(200, json.dumps({'method': self.command,
                'body': body.decode(), 'x': self.headers.get('X-Test', '')}).encode())
        if p == '/hook':
            hooks.append({'body': body.decode(), 'path': self.path,
                'sig': self.headers.get('X-Keep-Signature', ''),
                'id': self.headers.get('X-Keep-Delivery', '')})
            with open(sys.argv[3], 'w') as f: json.dump(hooks, f)
            tries = sum(1 for h in hooks if h['path'] == self.path)
            time.sleep(float(q.get('s', '0')))
            if tries <= int(q.get('fail', '0')): return self.send(503, b'busy')
            return self.send(200, b'ok')
        self.send(404, b'no')
    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = do_PATCH = any
s = http.server.ThreadingHTTPServer(('127.0.0.1', 0), H)
s.daemon_threads = True
c = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
c.load_cert_chain(sys.argv[1], sys.argv[2])
s.socket = c.wrap_socket(s.socket, server_side=True)
print(s.server_address[1], flush=True)
s.serve_forever()
EOPY
python3 "$tmp/server.py" "$tmp/srv.pem" "$tmp/srv.key" "$tmp/hooks.json" "$tmp/events" >"$tmp/sport" 2>"$tmp/server.log" &
spid=$!
for _ in $(seq 50); do [ -s "$tmp/sport" ] && break; sleep 0.1; done
sp=$(cat "$tmp/sport")
[ -n "$sp" ] || { echo "FAIL: test server"; exit 1; }
# A DNS server on loopback that knows one name (dns.test -> 127.0.0.1):
# names not in the hosts table are resolved through it, as through
# egress.resolv_conf's nameservers in production.
cat >"$tmp/dns.py" <<'EOPY'
import socket, struct, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(('127.0.0.1', 0))
print(s.getsockname()[1], flush=True)
while True:
    q, a = s.recvfrom(512)
    tid = struct.unpack('>H', q[:2])[0]
    i, labels = 12, []
    while q[i]:
        labels.append(q[i+1:i+1+q[i]].decode().lower()); i += q[i] + 1
    qtype = struct.unpack('>H', q[i+1:i+3])[0]
    question = q[12:i+5]
    name = '.'.join(labels)
    if name != 'dns.test':
        s.sendto(struct.pack('>HHHHHH', tid, 0x8183, 1, 0, 0, 0) + question, a)
    elif qtype == 1:
        ans = b'\xc0\x0c' + struct.pack('>HHIH', 1, 1, 5, 4) + socket.inet_aton('127.0.0.1')
        s.sendto(struct.pack('>HHHHHH', tid, 0x8180, 1, 1, 0, 0) + question + ans, a)
    else:
        s.sendto(struct.pack('>HHHHHH', tid, 0x8180, 1, 0, 0, 0) + question, a)
EOPY
python3 "$tmp/dns.py" >"$tmp/dport" 2>"$tmp/dns.log" &
dpid=$!
for _ in $(seq 50); do [ -s "$tmp/dport" ] && break; sleep 0.1; done
dp=$(cat "$tmp/dport")
[ -n "$dp" ] || { echo "FAIL: test DNS server"; exit 1; }
echo "nameserver 127.0.0.1" >"$tmp/resolv.conf"
cat >"$tmp/hosts" <<EOH
127.0.0.1 good.test noprivate.test evil.test api.github.com evilapi.github.com.attacker hooks.test
169.254.169.254 meta.test
EOH
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$tmp/webhook.key"
chmod 600 "$tmp/webhook.key"

# ---- keepd with a policy that names these destinations --------------
mkdir -p "$tmp/state/images" "$tmp/policy"
cp "$B"/images/*.img "$tmp/state/images/"
"$KEEP" image build --name fetch --version 1 --memory 32M --command fetch \
    "$B/guests/fetch" -o "$tmp/fetch.img.tmp" >/dev/null &&
"$KEEP" image sign --key "$B/keys/dev.secret" "$tmp/fetch.img.tmp" >/dev/null &&
mv "$tmp/fetch.img.tmp" "$tmp/state/images/fetch.img" || { echo "FAIL: fetch image"; exit 1; }
"$KEEP" key generate --out "$tmp" --name issuer >/dev/null
cat >"$tmp/policy/test.policy" <<EOP
role fetcher {
	allow sandbox:read, sandbox:write, exec
	exec "fetch", "js"
	egress "good.test":$sp private, "*.github.com":$sp private
	egress "noprivate.test":$sp, "meta.test":$sp
	egress "hooks.test":$sp private, "dns.test":$sp private
	timeout 30s
	memory 256M
}
agent "alice" : fetcher
agent "ops" { allow admin }
EOP
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat >"$tmp/keepd.yaml" <<EOC
listen:
  address: 127.0.0.1
  port: $port
state_dir: $tmp/state
policy_dir: $tmp/policy
user: _keep
tokens:
  issuer_keys: [ $tmp/issuer.public ]
  max_ttl: 1h
images:
  trusted_keys: [ $PWD/$B/keys/dev.public ]
egress:
  ca_file: $tmp/ca.pem
  hosts_file: $tmp/hosts
  webhook_key_file: $tmp/webhook.key
  resolv_conf: $tmp/resolv.conf
  dns_port: $dp
  timeout: 2s
  connect_timeout: 2s
  max_response: 64K
  webhook_attempts: 3
  webhook_backoff: 100ms
EOC
"$KEEPD" -d -f "$tmp/keepd.yaml" >"$tmp/log" 2>&1 &
pid=$!
url=http://127.0.0.1:$port
# The front answers once every process is up.
for _ in $(seq 150); do
	[ "$(curl -s -o /dev/null -w '%{http_code}' "$url/healthz")" = 200 ] && break
	sleep 0.1
done
mint() { "$KEEP" token mint --key "$tmp/issuer.secret" --sub "$1" --caps "$2" --ttl 10m; }
alice=$(mint alice sandbox:read,sandbox:write,exec,egress)
noegress=$(mint alice sandbox:read,sandbox:write,exec)
req() {
	local t=$1 m=$2 p=$3 d=${4:-}
	body=$(curl -s -o - -w '\n%{http_code}' -X "$m" -H "Authorization: Bearer $t" \
	    ${d:+-H 'Content-Type: application/json' -d "$d"} "$url$p")
	code=${body##*$'\n'}; body=${body%$'\n'*}
}
jget() { python3 -c 'import json,sys; print(json.loads(sys.argv[1])'"$2"')' "$1"; }
jargs() { python3 -c 'import json,sys; print(json.dumps({"cmd":"fetch","args":sys.argv[1:]}))' "$@"; }
# fetch TOKEN ARGS... -> out (the guest's stdout)
fetch() {
	local t=$1; shift
	req "$t" POST "/v1/sandboxes/$sbx/commands/run" "$(jargs "$@")"
	out=$(jget "$body" '["stdout"]' 2>/dev/null || echo "HTTP $code $body")
}

req "$alice" POST /v1/sandboxes '{"image":"fetch"}'
[ "$code" = 201 ] && ok "a sandbox of the fetch image" || { bad "create: $code $body"; tail -20 "$tmp/log"; exit 1; }
sbx=$(jget "$body" '["id"]')

G=https://good.test:$sp
fetch "$alice" GET "$G/ok"
[[ $out == *"ret=0 status=200"* && $out == *"body=hello from loopback"* ]] &&
    ok "an allowed request succeeds end to end from a guest" || bad "allowed: $out"
fetch "$alice" POST "$G/echo" '{"n":1}' 'X-Test: yes'
[[ $out == *'"method": "POST"'* && $out == *'\"n\": 1'* || $out == *'"body": "{\"n\":1}"'* ]] && [[ $out == *'"x": "yes"'* ]] &&
    ok "method, body and headers reach the server" || bad "echo: $out"
fetch "$noegress" GET "$G/ok"
[[ $out == *"ret=-13 "* && $out == *"policy: denied"* ]] &&
    ok "a token without egress: EACCES, reason readable ($out)" || bad "no egress cap: $out"
fetch "$alice" GET "https://evil.test:$sp/ok"
[[ $out == *"ret=-13 "* && $out == *"policy: denied"* ]] &&
    ok "a host not on the list: refused" || bad "evil.test: $out"
fetch "$alice" GET "https://evilapi.github.com.attacker:$sp/ok"
[[ $out == *"ret=-13 "* && $out == *"policy: denied"* ]] &&
    ok "evilapi.github.com.attacker does not match *.github.com" || bad "wildcard: $out"
fetch "$alice" GET "https://dns.test:$sp/ok"
[[ $out == *"ret=0 status=200"* ]] && ok "a name resolved through DNS (egress.resolv_conf) is fetched" || bad "dns: $out"
fetch "$alice" GET "https://api.github.com:$sp/ok"
[[ $out == *"ret=0 status=200"* ]] && ok "api.github.com matches *.github.com" || bad "wildcard match: $out"
fetch "$alice" GET "http://good.test:$sp/ok"
[[ $out == *"ret=-13 "* && $out == *"http not allowed"* ]] &&
    ok "http when only https is allowed: refused" || bad "http: $out"
fetch "$alice" GET "https://noprivate.test:$sp/ok"
[[ $out == *"ret=-13 "* && $out == *"resolved address not allowed"* ]] &&
    ok "a name resolving to 127.0.0.1 without 'private': refused" || bad "loopback: $out"
fetch "$alice" GET "https://meta.test:$sp/ok"
[[ $out == *"ret=-13 "* && $out == *"resolved address not allowed"* ]] &&
    ok "a name resolving to 169.254.169.254: refused before connect" || bad "metadata: $out"
fetch "$alice" GET "$G/redirect?to=https://evil.test:$sp/ok"
[[ $out == *"ret=-13 "* && $out == *"host not on the allowlist"* ]] &&
    ok "a redirect to a refused host: refused" || bad "redirect: $out"
fetch "$alice" GET "$G/big"
[[ $out == *"ret=-90 "* && $out == *"response too large"* ]] &&
    ok "an oversized response: EMSGSIZE" || bad "big: $out"
fetch "$alice" GET "$G/slow"
[[ $out == *"ret=-110 "* && $out == *"timed out"* ]] &&
    ok "a slow server past the timeout: ETIMEDOUT" || bad "slow: $out"

# The run's own time limit ends a guest waiting on a slower fetch.
req "$alice" POST "/v1/sandboxes/$sbx/commands/run" '{"cmd":"fetch","args":["GET","'"$G"'/slow?s=3"],"timeout":1000}'
[ "$code" = 200 ] && [ "$(jget "$body" '["reason"]')" = timeout ] &&
    ok "a run's time limit stops a guest waiting on a fetch" || bad "run timeout during fetch: $code $body"

# ---- js: fetch() in the stock js image ---------------------------------
req "$alice" POST /v1/sandboxes '{"image":"js"}'
jsx=$(jget "$body" '["id"]')
jsecret=$(jget "$body" '["webhook_secret"]' 2>/dev/null)
code_js="var r = fetch('$G/echo', {method: 'PUT', headers: {'X-Test': 'js'}, body: 'abc'}); print(r.status, JSON.parse(r.body).method, JSON.parse(r.body).x); try { fetch('https://evil.test:$sp/ok'); } catch (e) { print('refused', e.message); }"
req "$alice" POST "/v1/sandboxes/$jsx/execute" "$(python3 -c 'import json,sys; print(json.dumps({"code":sys.argv[1],"language":"javascript"}))' "$code_js")"
jo=$(jget "$body" '["stdout"]' 2>/dev/null)
[[ $jo == *"200 PUT js"* && $jo == *"refused"*"policy: denied"* ]] &&
    ok "js fetch(): allowed and refused ($(echo "$jo" | tail -1))" || bad "js fetch: $code $body"

# ---- webhooks ----------------------------------------------------------
req "$alice" POST "/v1/sandboxes/$jsx/execute/async" "{\"code\":\"print(6*7)\",\"language\":\"javascript\",\"webhook_url\":\"https://hooks.test:$sp/hook?fail=2\"}"
if [ "$code" = 202 ]; then
	rid=$(jget "$body" '["run_id"]')
	ok "execute/async: 202, run $rid"
	for _ in $(seq 100); do
		[ -s "$tmp/hooks.json" ] && python3 -c 'import json,sys; h=json.load(open(sys.argv[1])); sys.exit(0 if len(h)>=3 else 1)' "$tmp/hooks.json" && break
		sleep 0.1
	done
	python3 - "$tmp/hooks.json" "$tmp/webhook.key" "$jsx" "$rid" "$jsecret" <<'EOPY' && ok "webhook delivered after 2 failures, signed with the secret its sandbox's creator was given" || bad "webhook: $(cat "$tmp/hooks.json" 2>/dev/null)"
import hmac, hashlib, json, sys
hooks = json.load(open(sys.argv[1]))
master = bytes.fromhex(open(sys.argv[2]).read().strip())
secret = hmac.new(master, b'keep webhook secret v1\0' + sys.argv[3].encode(), 'sha256').digest()
# The client has it from POST /v1/sandboxes.
assert bytes.fromhex(sys.argv[5]) == secret, (sys.argv[5], secret.hex())
assert len(hooks) == 3, hooks
h = hooks[-1]
t, v1 = [kv.split('=', 1)[1] for kv in h['sig'].split(',')]
want = hmac.new(secret, (t + '.' + h['body']).encode(), 'sha256').hexdigest()
assert hmac.compare_digest(want, v1), (want, v1)
b = json.loads(h['body'])
assert b['run_id'] == sys.argv[4] and '42' in b['stdout'], b
EOPY
	# A slow receiver (1 s per attempt, two failures) does not hold up
	# a guest's fetch: it is served while the delivery is retrying.
	req "$alice" POST "/v1/sandboxes/$jsx/execute/async" "{\"code\":\"1\",\"language\":\"javascript\",\"webhook_url\":\"https://hooks.test:$sp/hook?fail=2&s=1\"}"
	for _ in $(seq 100); do grep -q 'hook?fail=2&s=1' "$tmp/events" 2>/dev/null && break; sleep 0.1; done
	fetch "$alice" GET "$G/ok?during=webhook"
	for _ in $(seq 100); do [ "$(grep -c 'hook?fail=2&s=1' "$tmp/events")" -ge 3 ] && break; sleep 0.1; done
	order=$(grep -n 'during=webhook\|hook?fail=2&s=1' "$tmp/events" | tr '\n' ' ')
	[[ $out == *"ret=0 status=200"* ]] && python3 -c 'import sys; e=[l for l in open(sys.argv[1]).read().split() if "during=webhook" in l or "s=1" in l]; i=[n for n,l in enumerate(e) if "during" in l]; sys.exit(0 if i and i[0] < 3 and len(e) == 4 else 1)' "$tmp/events" &&
	    ok "a guest fetch is served while a slow webhook retries ($order)" || bad "webhook blocks egress: $out; $order"
	req "$alice" POST "/v1/sandboxes/$jsx/execute/async" "{\"code\":\"1\",\"language\":\"javascript\",\"webhook_url\":\"https://evil.test:$sp/hook\"}"
	[ "$code" = 403 ] && ok "a webhook to a host not on the list: 403" || bad "webhook evil: $code $body"
else
	bad "execute/async: $code $body"
fi

# ---- /metrics ------------------------------------------------------------
req "$(mint ops admin)" GET /metrics
ea=$(sed -n 's/^keep_egress_decisions_total{result="allow"} \([0-9]*\)$/\1/p' <<<"$body")
ed=$(sed -n 's/^keep_egress_decisions_total{result="deny"} \([0-9]*\)$/\1/p' <<<"$body")
[ "$code" = 200 ] && [ "${ea:-0}" -ge 1 ] && [ "${ed:-0}" -ge 3 ] &&
    ok "egress decisions are in /metrics (allow $ea, deny $ed)" ||
    bad "metrics: $code $(grep egress <<<"$body")"

# ---- the audit log ----------------------------------------------------
# The entries are committed by the store process: poll for the last kind.
for _ in $(seq 50); do
	"$KEEP" audit tail -n 1000 --action egress --data "$tmp/state/db" >"$tmp/egress.audit" 2>&1
	grep -q "evil.test:$sp.*deny" "$tmp/egress.audit" && break
	sleep 0.1
done
grep -q "allow" "$tmp/egress.audit" && grep -q "good.test" "$tmp/egress.audit" &&
    grep -q "deny" "$tmp/egress.audit" && grep -q "policy: denied" "$tmp/egress.audit" &&
    grep -q "resolved address not allowed" "$tmp/egress.audit" &&
    grep -q "evil.test:$sp.*deny" "$tmp/egress.audit" &&
    ok "egress decisions are in the audit log ($(grep -c . "$tmp/egress.audit") entries)" ||
    bad "egress audit: $(cat "$tmp/egress.audit")"
# A refusal says why: the token, or a destination no rule names.
grep -q "policy: denied (token caps)" "$tmp/egress.audit" &&
    grep -q "evil.test:$sp.*policy: denied (target not allowed)" "$tmp/egress.audit" &&
    ok "egress refusals name their reason (token caps, target not allowed)" ||
    bad "egress refusal reasons: $(grep 'policy: denied' "$tmp/egress.audit")"
"$KEEP" audit tail -n 1000 --action egress.webhook --data "$tmp/state/db" >"$tmp/hook.audit" 2>&1
grep -q "allow rule=attempts 3 .*status=200" "$tmp/hook.audit" &&
    ok "the webhook delivery is in the audit log, with its attempts" || bad "webhook audit: $(cat "$tmp/hook.audit")"
"$KEEP" audit verify --data "$tmp/state/db" >/dev/null 2>&1 && ok "the audit chain verifies" || bad "audit verify"
grep -q "keepd/egress: .*egress .*allow host=good.test" "$tmp/log" && ok "decisions are logged" || bad "no egress log line"
kill -0 "$pid" 2>/dev/null && ok "keepd still running" || bad "keepd died"
[ $fails -eq 0 ] || { echo "--- keepd log"; tail -n 40 "$tmp/log"; }
echo "egress_e2e: $fails failures"
[ $fails -eq 0 ]
