#!/usr/bin/env bash
# More than one box (issue 16, docs/scaling.md): two keepd, nodes "a" and
# "b", behind HAProxy running the shipped etc/haproxy-keep.cfg (loopback
# ports put in). One issuer key, one delegation key and one policy
# directory for both. Creates are spread over both nodes, each sandbox id
# names its node and every request for it reaches that node (also on one
# keep-alive connection); a token derived on one node works on the other;
# `keep api revoke --fleet` revokes on every node, audited on each; a
# draining node takes no new sandboxes but serves its own; a dead node's
# creates go to the other.
source "$(dirname "$0")/../lib/keepd.sh"
command -v haproxy >/dev/null ||
    { echo "FAIL: haproxy is missing (make deps installs it, mk/fleet.mk)"; exit 1; }
KEEPAPI=$B/bin/keep-api
declare -A npid nurl
hpid=
fleet_cleanup() {
	[ -n "$hpid" ] && kill -TERM "$hpid" 2>/dev/null && wait "$hpid" 2>/dev/null
	for n in "${!npid[@]}"; do
		kill -TERM "${npid[$n]}" 2>/dev/null && wait "${npid[$n]}" 2>/dev/null
	done
	keepd_cleanup
}
trap fleet_cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
http_code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }

mkdir -p "$tmp/policy" "$tmp/keys"
cat >"$tmp/policy/fleet.policy" <<'EOP'
role runner {
	allow sandbox:read, sandbox:write, exec
	exec "python"
	timeout 20s
	memory 256M
}
agent "alice" : runner
agent "ops" { allow admin, sandbox:read }
EOP
"$KEEP" key generate --out "$tmp" --name issuer >/dev/null || exit 1
"$KEEP" key generate --out "$tmp/keys" --name delegation >/dev/null || exit 1

# node NAME: its own state and port; the shared keys and policy.
node() {
	local n=$1 port
	port=$(free_port)
	mkdir -p "$tmp/$n/state/images" && chmod 0755 "$tmp/$n"
	install -d -m 0700 "$tmp/$n/state/keys"
	install -m 0600 "$tmp/keys/delegation.secret" "$tmp/$n/state/keys/"
	cp "$B"/images/python.img "$tmp/$n/state/images/"
	cat >"$tmp/$n/keepd.yaml" <<EOC
listen:
  address: 127.0.0.1
  port: $port
node: $n
state_dir: $tmp/$n/state
policy_dir: $tmp/policy
user: _keep
tokens:
  issuer_keys: [ $tmp/issuer.public ]
  max_ttl: 1h
images:
  trusted_keys: [ $PWD/$B/keys/dev.public ]
EOC
	"$KEEPD" -d -f "$tmp/$n/keepd.yaml" >>"$tmp/$n/log" 2>&1 &
	npid[$n]=$!
	nurl[$n]=http://127.0.0.1:$port
}
node a
node b
for n in a b; do
	url=${nurl[$n]}
	keepd_wait_ready || { echo "keepd $n did not start"; cat "$tmp/$n/log"; exit 1; }
done

# HAProxy: the shipped file, with this test's ports and socket.
hport=$(free_port)
hurl=http://127.0.0.1:$hport
sed -e "s|192.0.2.10:8421|${nurl[a]#http://}|; s|192.0.2.11:8421|${nurl[b]#http://}|" \
    -e "s|bind 127.0.0.1:8420|bind 127.0.0.1:$hport|" \
    -e "s|/run/haproxy/keep.sock|$tmp/haproxy.sock|" \
    etc/haproxy-keep.cfg >"$tmp/haproxy.cfg"
grep -q '192\.0\.2\.[0-9]*:' "$tmp/haproxy.cfg" && bad "an address of the example is left in $tmp/haproxy.cfg"
haproxy -f "$tmp/haproxy.cfg" -db >"$tmp/haproxy.log" 2>&1 &
hpid=$!
url=$hurl
keepd_wait_ready || { echo "haproxy did not start"; cat "$tmp/haproxy.log"; exit 1; }
ok "haproxy runs etc/haproxy-keep.cfg in front of nodes a and b"
hactl() { python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall((sys.argv[2]+"\n").encode()); print(s.recv(65536).decode())' "$tmp/haproxy.sock" "$1"; }

alice=$(mint alice sandbox:read,sandbox:write,exec 30m)
ops=$(mint ops admin,sandbox:read 30m)

# Creates are spread; each id names its node.
ids=()
for _ in 1 2 3 4; do
	req "$alice" POST /v1/sandboxes '{"image":"python"}'
	[ "$code" = 201 ] || bad "create through haproxy: $code $body"
	ids+=("$(jget "$body" '["id"]')")
done
na=0; nb=0
for id in "${ids[@]}"; do
	[[ $id =~ ^sbx-([ab])-[a-z2-7]{20}$ ]] || { bad "id $id does not name a node"; continue; }
	[ "${BASH_REMATCH[1]}" = a ] && na=$((na+1)) || nb=$((nb+1))
done
[ $na -ge 1 ] && [ $nb -ge 1 ] && ok "4 creates through haproxy: $na on node a, $nb on node b (${ids[*]})" ||
    bad "creates not spread: ${ids[*]}"

# The node in the id holds the sandbox, the other does not know it.
for id in "${ids[@]}"; do
	n=${id:4:1}; o=$([ "$n" = a ] && echo b || echo a)
	[ "$(http_code -H "Authorization: Bearer $alice" "${nurl[$n]}/v1/sandboxes/$id")" = 200 ] &&
	    [ "$(http_code -H "Authorization: Bearer $alice" "${nurl[$o]}/v1/sandboxes/$id")" = 404 ] ||
	    bad "$id: not on node $n alone"
done
ok "each sandbox is on the node its id names, and only there"

# Every request for a sandbox reaches its node: runs through haproxy.
for id in "${ids[@]}"; do
	req "$alice" POST "/v1/sandboxes/$id/execute" \
	    '{"code":"import sys\nprint(6*7, sys.version_info[:2])","language":"python"}'
	[ "$code" = 200 ] && [ "$(jget "$body" '["stdout"]')" = "42 (3, 11)" ] ||
	    bad "execute in $id through haproxy: $code $body"
done
ok "python runs in each sandbox through haproxy"
# One keep-alive connection, requests alternating between the nodes'
# sandboxes: each is routed by its own path, not by the connection.
args=()
for _ in 1 2 3; do for id in "${ids[@]}"; do args+=(-o /dev/null "$hurl/v1/sandboxes/$id"); done; done
codes=$(curl -s -w '%{http_code} %{num_connects}\n' -H "Authorization: Bearer $alice" "${args[@]}")
[ "$(echo "$codes" | awk '$1 == 200' | wc -l)" = 12 ] &&
    [ "$(echo "$codes" | awk '{ c += $2 } END { print c }')" = 1 ] &&
    ok "12 requests on one keep-alive connection, each routed to its sandbox's node" ||
    bad "keep-alive routing: $(echo $codes)"

# A token derived through haproxy (on either node) works on both.
req "$alice" POST /v1/tokens '{"caps":["sandbox:read"],"ttl":600}'
derived=$(jget "$body" '["token"]' 2>/dev/null)
[ "$code" = 201 ] || [ "$code" = 200 ] || bad "attenuate: $code $body"
[ "$(http_code -H "Authorization: Bearer $derived" "${nurl[a]}/v1/sandboxes")" = 200 ] &&
    [ "$(http_code -H "Authorization: Bearer $derived" "${nurl[b]}/v1/sandboxes")" = 200 ] &&
    ok "a derived token verifies on both nodes (one delegation key)" || bad "derived token: not on both nodes"

# audited NODE JTI: the node's audit log has the jti's revocation. The
# record follows the reply by a moment; a jti may begin with '-'.
audited() {
	for _ in $(seq 50); do
		"$KEEP" audit tail -n 1000 --action token.revoke --data "$tmp/$1/state/db" 2>&1 |
		    grep -q -e " $2 " && return 0
		sleep 0.1
	done
	return 1
}

# Revocation fans out to every node of the fleet file, audited on each.
victim=$(mint alice sandbox:read 30m)
jti=$("$KEEP" token inspect "$victim" | sed -n 's/.*"jti":"\([^"]*\)".*/\1/p')
for n in a b; do
	[ "$(http_code -H "Authorization: Bearer $victim" "${nurl[$n]}/v1/sandboxes")" = 200 ] ||
	    bad "victim token before revocation on $n"
done
printf '# the fleet\na %s\nb %s  # second box\n\n' "${nurl[a]}" "${nurl[b]}" >"$tmp/fleet"
out=$("$KEEPAPI" --url "$hurl" --token "$ops" revoke --fleet "$tmp/fleet" -- "$jti" 2>&1)
rc=$?
echo "$out" | sed 's/^/  /'
[ $rc = 0 ] && echo "$out" | grep -q "revoked on 2 of 2 nodes" && ok "keep api revoke --fleet: both nodes" ||
    bad "revoke --fleet: rc $rc"
for n in a b; do
	[ "$(http_code -H "Authorization: Bearer $victim" "${nurl[$n]}/v1/sandboxes")" = 401 ] &&
	    ok "the revoked token is refused by node $n" || bad "node $n still takes the revoked token"
	audited "$n" "$jti" &&
	    ok "node $n audited the revocation" || bad "node $n: no token.revoke $jti in its audit log"
done
# A jti is base64url, so one in 64 begins with '-' (this test failed
# that often when it did): such a jti is no option, and "--" ends them.
for j in -AAAAAAAAAAAAAAAAAAAAA --AAAAAAAAAAAAAAAAAAAA; do
	sep=; [ "${j#--}" != "$j" ] && sep=--
	out=$("$KEEPAPI" --url "${nurl[a]}" --token "$ops" revoke $sep "$j" 2>&1); rc=$?
	seen=0; audited a "$j" && seen=1
	[ $rc = 0 ] && [ $seen = 1 ] &&
	    ok "keep api revoke $sep $j: a jti that begins with '-'" || bad "revoke $sep $j: rc $rc, audited $seen: $out"
done
# A node that does not answer: reported, and the exit status says so.
printf 'a %s\nc http://127.0.0.1:%s\n' "${nurl[a]}" "$(free_port)" >"$tmp/fleet2"
out=$("$KEEPAPI" --token "$ops" revoke --fleet "$tmp/fleet2" -- "$jti" 2>&1)
rc=$?
[ $rc = 1 ] && echo "$out" | grep -q "^c .*FAILED" && echo "$out" | grep -q "revoked on 1 of 2 nodes" &&
    ok "a node that does not answer fails the fan-out (exit 1)" || bad "fan-out with a dead node: rc $rc: $out"
printf 'a %s\nz ftp://127.0.0.1/\n' "${nurl[a]}" >"$tmp/fleet3"
out=$("$KEEPAPI" --token "$ops" revoke --fleet "$tmp/fleet3" -- "$jti" 2>&1)
rc=$?
[ $rc = 1 ] && echo "$out" | grep -q "^z .*not an http" && echo "$out" | grep -q "revoked on 1 of 2 nodes" &&
    ok "a node that is not an http(s) URL fails the fan-out" || bad "fan-out with an ftp node: rc $rc: $out"

# Draining b: no new sandboxes there, its own still served.
hactl "set server fleet/b state drain" >/dev/null
new=()
for _ in 1 2 3 4; do
	req "$alice" POST /v1/sandboxes '{"image":"python"}'
	new+=("$(jget "$body" '["id"]' 2>/dev/null)")
done
[[ "${new[*]}" != *sbx-b-* && "${new[*]}" == *sbx-a-* ]] && ok "node b drains: 4 creates all on a" ||
    bad "drain: ${new[*]}"
for id in "${ids[@]}"; do
	[[ $id == sbx-b-* ]] || continue
	req "$alice" GET "/v1/sandboxes/$id"
	[ "$code" = 200 ] || bad "draining b's sandbox $id: $code"
done
ok "a draining node still serves its own sandboxes"
hactl "set server fleet/b state ready" >/dev/null

# Node b goes away (stopped; every process of it ends): creates go to a
# at once (redispatch), b's sandboxes are gone with it (503), a's stay.
kill -TERM "${npid[b]}"; wait "${npid[b]}" 2>/dev/null; unset 'npid[b]'
created=0
for _ in 1 2 3 4; do
	req "$alice" POST /v1/sandboxes '{"image":"python"}'
	[ "$code" = 201 ] && [[ $(jget "$body" '["id"]') == sbx-a-* ]] && created=$((created+1))
done
[ $created = 4 ] && ok "with node b dead, 4 of 4 creates succeed on a" || bad "creates with b dead: $created of 4"
for id in "${ids[@]}"; do
	req "$alice" GET "/v1/sandboxes/$id"
	case $id in
	sbx-a-*) [ "$code" = 200 ] || bad "a's sandbox $id with b dead: $code" ;;
	sbx-b-*) [ "$code" = 503 ] || bad "b's sandbox $id with b dead: $code (want 503)" ;;
	esac
done
ok "with b dead, a's sandboxes answer and b's are 503"

pid=${npid[a]}
for n in a b; do
	"$KEEP" audit verify --data "$tmp/$n/state/db" >/dev/null 2>&1 && ok "node $n's audit chain verifies" ||
	    bad "node $n: audit verify"
done
[ $fails -eq 0 ] || { echo "--- node b log"; tail -n 20 "$tmp/b/log"; echo "--- haproxy"; cat "$tmp/haproxy.log"; }
keepd_finish
