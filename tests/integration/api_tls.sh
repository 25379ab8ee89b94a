#!/bin/bash
# The front over TLS (libtls, certificate and key handed over as bytes):
# keep api and curl against keep-api-testserver with a throwaway
# self-signed certificate; a large body crosses many TLS records.
set -u
B=${B:-build}
KEEP=$B/bin/keep
SRV=$B/bin/keep-api-testserver
command -v openssl >/dev/null || { echo "SKIP: no openssl"; exit 77; }
tmp=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "$tmp/key.pem" -out "$tmp/cert.pem" -days 1 -subj /CN=localhost \
    -addext subjectAltName=IP:127.0.0.1 2>/dev/null || { echo "openssl failed"; exit 1; }
"$SRV" -p 0 -P "$tmp/port" -t tlstok -c "$tmp/cert.pem" -k "$tmp/key.pem" 2>"$tmp/log" &
pid=$!
for _ in $(seq 50); do [ -s "$tmp/port" ] && break; sleep 0.1; done
U=https://127.0.0.1:$(cat "$tmp/port")
api() { "$KEEP" api --url "$U" --cacert "$tmp/cert.pem" --token tlstok "$@"; }
fails=0
check() { local n=$1; shift; if "$@"; then echo "ok   $n"; else echo "FAIL $n"; fails=$((fails + 1)); fi; }
check "health over TLS" test "$(api health)" = ok
id=$(api sandbox create --image js | sed -n 's/^id: //p')
check "create over TLS" test -n "$id"
head -c 500000 /dev/urandom > "$tmp/big"
check "put 500 KB" api files put "$id" "$tmp/big" big
api files get "$id" big "$tmp/back"
check "get 500 KB back" cmp -s "$tmp/big" "$tmp/back"
check "untrusted certificate refused" bash -c "! '$KEEP' api --url '$U' health 2>/dev/null"
curl -s -m 3 "http://${U#https://}/healthz" >/dev/null
check "plain HTTP on the TLS port does not kill it" test "$(api health)" = ok
[ "$fails" -eq 0 ]
