#!/usr/bin/env bash
# HTTPS egress with the default CA setting (no egress.ca_file): the parent
# reads the system bundle and hands the bytes to the chrooted egress
# process. The "system" bundle here is a test CA named by SSL_CERT_FILE
# (OpenSSL's convention, which keepd follows); the server is on 127.0.0.1
# and reached through egress.hosts_file, nothing else is contacted.
source "$(dirname "$0")/../lib/keepd.sh"
command -v openssl >/dev/null || { echo "SKIP: no openssl"; exit 77; }
[ -x "$B/guests/fetch" ] || make --no-print-directory "$B/guests/fetch" >/dev/null || exit 1
spid=
trap 'keepd_cleanup; [ -n "$spid" ] && kill "$spid" 2>/dev/null' EXIT
chmod 755 "$tmp"

(cd "$tmp" &&
 openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -days 1 -subj /CN=keep-default-ca -addext basicConstraints=critical,CA:TRUE \
    -addext keyUsage=critical,keyCertSign -keyout ca.key -out ca.pem &&
 printf 'subjectAltName=DNS:good.test\n' >ext.cnf &&
 openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -subj /CN=good.test -keyout srv.key -out srv.csr &&
 openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
    -days 1 -extfile ext.cnf -out srv.pem) >/dev/null 2>&1 || { echo "FAIL: test CA"; exit 1; }
cat >"$tmp/server.py" <<'EOPY'
import http.server, ssl, sys
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    def log_message(self, *a): pass
    def do_GET(self):
        b = b'hello over tls'
        self.send_response(200)
        self.send_header('Content-Length', str(len(b)))
        self.end_headers()
        self.wfile.write(b)
s = http.server.ThreadingHTTPServer(('127.0.0.1', 0), H)
s.daemon_threads = True
c = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
c.load_cert_chain(sys.argv[1], sys.argv[2])
s.socket = c.wrap_socket(s.socket, server_side=True)
print(s.server_address[1], flush=True)
s.serve_forever()
EOPY
python3 "$tmp/server.py" "$tmp/srv.pem" "$tmp/srv.key" >"$tmp/sport" 2>"$tmp/server.log" &
spid=$!
for _ in $(seq 50); do [ -s "$tmp/sport" ] && break; sleep 0.1; done
sp=$(cat "$tmp/sport")
[ -n "$sp" ] || { echo "FAIL: test server"; exit 1; }
echo "127.0.0.1 good.test" >"$tmp/hosts"

mkdir -p "$tmp/state/images" "$tmp/policy"
cp -l "$B"/images/*.img "$tmp/state/images/" 2>/dev/null ||
	cp "$B"/images/*.img "$tmp/state/images/"
"$KEEP" image build --name fetch --version 1 --memory 32M --command fetch \
    "$B/guests/fetch" -o "$tmp/fetch.img.tmp" >/dev/null &&
"$KEEP" image sign --key "$B/keys/dev.secret" "$tmp/fetch.img.tmp" >/dev/null &&
mv "$tmp/fetch.img.tmp" "$tmp/state/images/fetch.img" || { echo "FAIL: fetch image"; exit 1; }
"$KEEP" key generate --out "$tmp" --name issuer >/dev/null || exit 1
cat >"$tmp/policy/test.policy" <<EOP
agent "alice" {
	allow sandbox:read, sandbox:write, exec, egress
	exec "fetch"
	egress "good.test":$sp private
	timeout 30s
}
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
  hosts_file: $tmp/hosts
  timeout: 5s
  connect_timeout: 5s
EOC
url=http://127.0.0.1:$port
SSL_CERT_FILE=$tmp/ca.pem keepd_launch

alice=$(mint alice sandbox:read,sandbox:write,exec,egress)
req "$alice" POST /v1/sandboxes '{"image":"fetch"}'
[ "$code" = 201 ] || { bad "create: $code $body"; keepd_finish; exit 1; }
sbx=$(jget "$body" '["id"]')
req "$alice" POST "/v1/sandboxes/$sbx/commands/run" \
    "{\"cmd\":\"fetch\",\"args\":[\"GET\",\"https://good.test:$sp/ok\"]}"
out=$(jget "$body" '["stdout"]' 2>/dev/null || echo "HTTP $code $body")
[[ $out == *"ret=0 status=200"* && $out == *"body=hello over tls"* ]] &&
    ok "HTTPS with the default CA setting: the system bundle is trusted" || bad "fetch: $out"
grep -q "CA bundle received" "$tmp/log" && ok "egress got the bundle as bytes" || bad "no CA bundle in the log"

keepd_finish
