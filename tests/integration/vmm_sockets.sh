#!/usr/bin/env bash
# Sockets in the guest (issue 29, first slice; docs/vmm.md, "Sockets"):
# TCP on 127.0.0.1 and ::1 between processes and threads, UDP, AF_UNIX on
# a workspace path and an abstract name, SCM_RIGHTS, non-blocking connect
# with poll, epoll and select, options and timeouts, a signal cutting an
# accept short: the same lines as natively, through keep run (as root and
# unprivileged) and keepd; hostile arguments get Linux's errors. Every
# destination outside loopback is refused before it leaves (EACCES,
# "limits": ["egress"]); a server one command
# starts in the background is there for the sandbox's next command and
# for no other sandbox; Python's http.server answers urllib in the same
# program; the vm process's filter lets no other socket family through.
# All traffic stays on loopback, in the runs' own network namespaces.
source "$(dirname "$0")/../lib/keepd.sh"
G=$(cd "$B/guests" && pwd)
TRUST=$PWD/$B/keys/dev.public

# ---- keep run ---------------------------------------------------------------
mkdir -p "$tmp/native" "$tmp/ws"
"$G/sockets" "$tmp/native" >"$tmp/want" 2>&1; nrc=$?
[ $nrc -eq 0 ] || bad "natively: exit $nrc $(cat "$tmp/want")"
"$KEEP" run --timeout 30s --workspace "$tmp/ws" "$G/sockets" / >"$tmp/got" 2>"$tmp/err"; krc=$?
[ $krc -eq 0 ] && cmp -s "$tmp/want" "$tmp/got" &&
    ok "keep run: TCP (v4, v6; processes, threads), UDP, AF_UNIX path and abstract, SCM_RIGHTS, non-blocking connect, poll/epoll/select, options, EINTR: same as native" ||
    bad "keep run sockets: exit $krc: $(diff "$tmp/want" "$tmp/got" | head -10) $(head -c 300 "$tmp/err")"
[ -S "$tmp/ws/s.sock" ] || [ ! -e "$tmp/ws/s.sock" ] && [ -f "$tmp/ws/plain" ] &&
    ok "the AF_UNIX path lives in the workspace" || bad "no workspace file: $(ls -la "$tmp/ws")"

cat >"$tmp/egress.want" <<'EOF'
connect 10.1.2.3:80: Permission denied
sendto 169.254.169.254:80: Permission denied
connect [2001:db8::1]:80: Permission denied
socket(AF_NETLINK): Address family not supported by protocol
socket(AF_INET, SOCK_RAW): Operation not permitted
EOF
"$KEEP" run --timeout 30s "$G/sockets" egress >"$tmp/got" 2>"$tmp/err"
cmp -s "$tmp/egress.want" "$tmp/got" && grep -q "limits: egress" "$tmp/err" &&
    ok "keep run: connects and sends outside loopback are EACCES and say limits: egress; no netlink or raw sockets" ||
    bad "keep run egress: $(diff "$tmp/egress.want" "$tmp/got") $(cat "$tmp/err")"

"$G/sockets" hostile >"$tmp/hostile.want" 2>&1
"$KEEP" run --timeout 30s "$G/sockets" hostile >"$tmp/got" 2>"$tmp/err"
[ "$(wc -l <"$tmp/got")" -ge 20 ] && cmp -s "$tmp/hostile.want" "$tmp/got" &&
    ok "keep run: bad pointers, lengths, descriptors and control messages get Linux's errors" ||
    bad "keep run hostile: $(diff "$tmp/hostile.want" "$tmp/got") $(cat "$tmp/err")"

# Unprivileged: a user namespace holds the network namespace.
if command -v setpriv >/dev/null &&
    setpriv --reuid=65534 --regid=65534 --clear-groups "$KEEP" run "$G/hello" >/dev/null 2>&1; then
	mkdir -p "$tmp/ws2" && chmod 777 "$tmp/ws2" && chmod 755 "$tmp"
	setpriv --reuid=65534 --regid=65534 --clear-groups "$KEEP" run --timeout 30s \
	    --workspace "$tmp/ws2" "$G/sockets" / >"$tmp/got" 2>"$tmp/err"; krc=$?
	[ $krc -eq 0 ] && cmp -s "$tmp/want" "$tmp/got" &&
	    ok "keep run as an unprivileged user: the same" ||
	    bad "unprivileged keep run: exit $krc: $(diff "$tmp/want" "$tmp/got" | head -5) $(head -c 300 "$tmp/err")"
else
	echo "note: no unprivileged keep run here (setpriv, or nobody cannot read $B)"
fi

# Python: a server thread and urllib in one program; localhost resolves
# from the image's /etc/hosts, without DNS.
cat >"$tmp/ws/serve_fetch.py" <<'PY'
import http.server, socket, threading, urllib.request
print(sorted({a[4][0] for a in socket.getaddrinfo("localhost", 80, type=socket.SOCK_STREAM)}))
srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
threading.Thread(target=srv.serve_forever, daemon=True).start()
for host in ("127.0.0.1", "localhost"):
    with urllib.request.urlopen("http://%s:%d/hello.txt" % (host, srv.server_address[1]), timeout=10) as r:
        print(host, r.status, r.read().decode().strip())
srv.shutdown()
try:
    socket.create_connection(("192.0.2.1", 443), timeout=5)
except OSError as e:
    print("outside:", e.errno, e.strerror)
PY
echo "hello from the workspace" >"$tmp/ws/hello.txt"
cat >"$tmp/py.want" <<'EOF'
['127.0.0.1', '::1']
127.0.0.1 200 hello from the workspace
localhost 200 hello from the workspace
outside: 13 Permission denied
EOF
if [ -f "$B/images/python.img" ]; then
	"$KEEP" run --trust "$TRUST" --timeout 60s --memory 512M --workspace "$tmp/ws" \
	    "$B/images/python.img" python3 serve_fetch.py >"$tmp/got" 2>"$tmp/err"
	cmp -s "$tmp/py.want" "$tmp/got" &&
	    ok "keep run python: http.server in a thread answers urllib (127.0.0.1 and localhost); outside is EACCES" ||
	    bad "python http.server: $(diff "$tmp/py.want" "$tmp/got") $(tail -5 "$tmp/err")"
fi

# ---- the filter ---------------------------------------------------------------
# keepd -S vm[-net] -X CALL:ARG0: the vm process's filter, with the internet
# families (vm-net, a network namespace of its own) or without.
seccomp() { timeout 10 "$KEEPD" -S "$1" -X "$2" 2>&1 | tail -1; }
for want in "vm socket:1 survived" "vm-net socket:2 survived" \
    "vm-net socket:10 survived" "vm socket:2 killed" "vm socket:10 killed" \
    "vm-net socket:16 killed" "vm-net socket:17 killed" "vm-net socket:0 killed" \
    "vm-net unshare killed" "vm-net setns killed" "vm-net ioctl killed"; do
	set -- $want
	got=$(seccomp "$1" "$2")
	case $3:$got in
	survived:survived | killed:"filter installed") ok "filter $1: $2 $3" ;;
	*) bad "filter $1: $2: want $3, got '$got'" ;;
	esac
done

# ---- keepd ------------------------------------------------------------------
"$KEEP" image build --name net --version 1 --memory 64M \
    --command sockets=/bin/sockets "$G/sockets" -o "$tmp/net.img.tmp" >/dev/null &&
    "$KEEP" image sign --key "$B/keys/dev.secret" "$tmp/net.img.tmp" >/dev/null ||
    { echo "FAIL: net image"; exit 1; }

# keepd started unprivileged (as _keep: no chroot; its namespace maker
# makes the sandbox's namespaces all the same).
nr=$tmp/nonroot
mkdir -p "$nr/state/images" "$nr/policy"
cp "$KEEPD" "$KEEP" "$TRUST" "$nr/"
cp "$tmp/net.img.tmp" "$nr/state/images/net.img"
"$KEEP" key generate --out "$nr" --name issuer >/dev/null
printf 'agent "alice" {\n\tallow sandbox:read, sandbox:write, exec\n\texec "sockets"\n\ttimeout 30s\n}\n' >"$nr/policy/t.policy"
nport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
printf 'listen:\n  address: 127.0.0.1\n  port: %s\nstate_dir: %s/state\npolicy_dir: %s/policy\ntokens:\n  issuer_keys: [ %s/issuer.public ]\n  max_ttl: 1h\nimages:\n  trusted_keys: [ %s/dev.public ]\n' \
    "$nport" "$nr" "$nr" "$nr" "$nr" >"$nr/keepd.yaml"
chmod 755 "$tmp" "$nr"; chown -R _keep "$nr"
runuser -u _keep -- "$nr/keepd" -d -f "$nr/keepd.yaml" >"$nr/log" 2>&1 &
nrpid=$!
for _ in $(seq "$(slow 100)"); do
	[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$nport/healthz")" = 200 ] && break
	sleep 0.1
done
ntok=$("$KEEP" token mint --key "$nr/issuer.secret" --sub alice --caps sandbox:read,sandbox:write,exec --ttl 10m)
nreq() { # nreq PATH BODY
	body=$(curl -s -w '\n%{http_code}' -H "Authorization: Bearer $ntok" \
	    -H 'Content-Type: application/json' -d "$2" "http://127.0.0.1:$nport$1")
	code=${body##*$'\n'}; body=${body%$'\n'*}
}
nreq /v1/sandboxes '{"image":"net"}'
nsb=$(jget "$body" '["id"]' 2>/dev/null)
nreq "/v1/sandboxes/$nsb/commands/run" '{"cmd":"sockets","args":["/"]}'
[ "$code" = 200 ] && [ "$(jget "$body" '["stdout"]')" = "$(cat "$tmp/want")" ] &&
    ok "keepd as an unprivileged user: the same as native" ||
    bad "unprivileged keepd: $code $body $(tail -5 "$nr/log")"
nreq "/v1/sandboxes/$nsb/commands/run" '{"cmd":"sockets","args":["egress"]}'
[ "$code" = 200 ] && [ "$(jget "$body" '["limits"]')" = "['egress']" ] &&
    ok "keepd as an unprivileged user: outside refused, limits: egress" ||
    bad "unprivileged keepd egress: $code $body"
kp=$(pgrep -P "$nrpid" | head -n 1)
[ -n "$kp" ] && kill -TERM "$kp"
wait "$nrpid" 2>/dev/null

cat >"$tmp/test.policy" <<'EOP'
agent "alice" {
	allow sandbox:read, sandbox:write, exec, artifact:read, artifact:write
	exec "sockets", "python"
	timeout 60s
	contexts 2
}
EOP
mkdir -p "$tmp/state/images"
mv "$tmp/net.img.tmp" "$tmp/state/images/net.img"
KEEPD_IMAGES="python" keepd_start "$tmp/test.policy"
alice=$(mint alice sandbox:read,sandbox:write,exec,artifact:read,artifact:write)
req "$alice" POST /v1/sandboxes '{"image":"net"}'
[ "$code" = 201 ] || { bad "sandbox: $code $body"; keepd_finish; exit 1; }
sbx=$(jget "$body" '["id"]')

req "$alice" POST "/v1/sandboxes/$sbx/commands/run" '{"cmd":"sockets","args":["/"]}'
[ "$code" = 200 ] && [ "$(jget "$body" '["stdout"]')" = "$(cat "$tmp/want")" ] &&
    ok "keepd commands/run: the same as native" ||
    bad "keepd sockets: $code $body"
req "$alice" POST "/v1/sandboxes/$sbx/commands/run" '{"cmd":"sockets","args":["egress"]}'
[ "$code" = 200 ] && [ "$(jget "$body" '["stdout"]')" = "$(cat "$tmp/egress.want")" ] &&
    [ "$(jget "$body" '["limits"]')" = "['egress']" ] &&
    [ "$(jget "$body" '["egress_refused"]')" = "10.1.2.3:80" ] &&
    ok "keepd: outside loopback is EACCES, and the result says limits: egress, egress_refused: the first one (10.1.2.3:80)" ||
    bad "keepd egress: $code $body"

# A server in the background, reached by the next command; not by
# another sandbox's.
req "$alice" POST "/v1/sandboxes/$sbx/commands/background" '{"cmd":"sockets","args":["serve","8123"]}'
[ "$code" = 202 ] || bad "background server: $code $body"
for _ in $(seq "$(slow 50)"); do
	req "$alice" POST "/v1/sandboxes/$sbx/commands/run" '{"cmd":"sockets","args":["dial","8123"]}'
	[ "$(jget "$body" '["exit_code"]' 2>/dev/null)" = 0 ] && break
	sleep 0.1
done
[ "$code" = 200 ] && [ "$(jget "$body" '["stdout"]')" = $'127.0.0.1:8123: pong\n@keep-serve: pong' ] &&
    ok "keepd: a server started by a background command answers the sandbox's next command (TCP and an abstract name)" ||
    bad "keepd across runs: $code $body"
# The server's vm process has its workspace for its root: a path the
# host resolves for it (an AF_UNIX name swapped for a symlink after the
# VMM looked) cannot lead into another sandbox's workspace.
vmp=$(pgrep -f "vm $sbx" | head -n 1)
root=$(readlink "/proc/$vmp/root" 2>/dev/null)
[ -n "$vmp" ] && [ "${root##*/}" = "$sbx" ] &&
    ok "keepd: a vm process's root is its workspace" ||
    bad "vm process root: pid '$vmp' root '$root'"
req "$alice" POST /v1/sandboxes '{"image":"net"}'
sbx2=$(jget "$body" '["id"]')
req "$alice" POST "/v1/sandboxes/$sbx2/commands/run" '{"cmd":"sockets","args":["dial","8123"]}'
[ "$code" = 200 ] && [ "$(jget "$body" '["exit_code"]')" = 1 ] &&
    jget "$body" '["stdout"]' | grep -q "Connection refused" &&
    ok "keepd: another sandbox does not reach it (its own loopback)" ||
    bad "keepd other sandbox: $code $body"

# Python through execute (a template's clone), its server in a thread.
req "$alice" POST /v1/sandboxes '{"image":"python"}'
sbp=$(jget "$body" '["id"]')
code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $alice" \
    --data-binary @"$tmp/ws/hello.txt" "$url/v1/sandboxes/$sbp/files/write?path=hello.txt")
req "$alice" POST "/v1/sandboxes/$sbp/execute" \
    "$(python3 -c 'import json,sys; print(json.dumps({"code": open(sys.argv[1]).read(), "language": "python"}))' "$tmp/ws/serve_fetch.py")"
[ "$code" = 200 ] && [ "$(jget "$body" '["stdout"]')" = "$(cat "$tmp/py.want")" ] &&
    [ "$(jget "$body" '["limits"]')" = "['egress']" ] &&
    ok "keepd execute python: http.server and urllib in one program; outside refused, limits: egress" ||
    bad "keepd python: $code $body"

# A context's server, in a thread that runs on between its cells, answers
# a plain execute of the same sandbox; a background command's server
# answers the context's next cell.
pyexec() { # pyexec CODE [CONTEXT]: execute in sandbox sbp
	python3 -c '
import json, sys
d = {"code": sys.argv[1], "language": "python"}
if sys.argv[2]: d["context_id"] = sys.argv[2]
print(json.dumps(d))' "$1" "${2:-}" >"$tmp/cell.json"
	body=$(curl -s -w '\n%{http_code}' -H "Authorization: Bearer $alice" \
	    -H 'Content-Type: application/json' --data-binary @"$tmp/cell.json" \
	    "$url/v1/sandboxes/$sbp/execute")
	code=${body##*$'\n'}; body=${body%$'\n'*}
}
req "$alice" POST "/v1/sandboxes/$sbp/contexts" '{"language":"python"}'
cid=$(jget "$body" '["id"]')
pyexec 'import http.server, threading, logging
srv = http.server.ThreadingHTTPServer(("127.0.0.1", 8125), http.server.SimpleHTTPRequestHandler)
threading.Thread(target=srv.serve_forever, daemon=True).start()
print("up")' "$cid"
[ "$code" = 200 ] && [ "$(jget "$body" '["stdout"]')" = up ] || bad "context server: $code $body"
pyexec 'import urllib.request
print(urllib.request.urlopen("http://localhost:8125/hello.txt", timeout=10).read().decode().strip())'
[ "$code" = 200 ] && [ "$(jget "$body" '["stdout"]')" = "hello from the workspace" ] &&
    ok "keepd: a context's server thread, between cells, answers the sandbox's next execute" ||
    bad "context server from execute: $code $body"
req "$alice" POST "/v1/sandboxes/$sbp/commands/background" '{"cmd":"python","args":["-m","http.server","--bind","127.0.0.1","8126"]}'
[ "$code" = 202 ] || bad "background http.server: $code $body"
for _ in $(seq "$(slow 50)"); do
	pyexec 'import urllib.request
print(urllib.request.urlopen("http://127.0.0.1:8126/hello.txt", timeout=10).status)' "$cid"
	[ "$(jget "$body" '["stdout"]' 2>/dev/null)" = 200 ] && break
	sleep 0.2
done
[ "$code" = 200 ] && [ "$(jget "$body" '["stdout"]')" = 200 ] &&
    ok "keepd: python -m http.server in the background answers a context's cell" ||
    bad "background server from a cell: $code $body"
req "$alice" DELETE "/v1/sandboxes/$sbx"
req "$alice" DELETE "/v1/sandboxes/$sbp"
keepd_finish
