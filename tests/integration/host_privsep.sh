#!/usr/bin/env bash
# keepd's privilege separation, checked from /proc: each child has its title,
# a non-root uid, CapEff 0, NoNewPrivs 1, Seccomp 2 and a root other than /;
# kill -9 of each child brings it back while the others keep their pids;
# SIGHUP reloads the policy; SIGTERM stops everything with exit 0.
set -u
cd "$(dirname "$0")/../.."
KEEPD=${B:-build}/bin/keepd
[ -x "$KEEPD" ] || { echo "FAIL: no $KEEPD (run make)"; exit 1; }
if [ "$(id -u)" -ne 0 ]; then echo "SKIP: needs root"; exit 77; fi
getent passwd _keep >/dev/null ||
	useradd --system --no-create-home --home-dir /nonexistent \
	    --shell /usr/sbin/nologin _keep || { echo "FAIL: useradd _keep"; exit 1; }

CHILDREN="front policy vmm store egress"
tmp=$(mktemp -d) || exit 1
pid=
cleanup() {
	if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
		kill -TERM "$pid" 2>/dev/null
		for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$pid" 2>/dev/null
	fi
	# Children of a killed parent would still hold the port.
	pkill -KILL -P "$pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
die() { echo "FAIL: $*"; echo "--- keepd log"; tail -n 40 "$tmp/log"; exit 1; }

# TLS material and keys the parent reads and hands to the front and vmm.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -subj /CN=localhost -days 1 -keyout "$tmp/key.pem" -out "$tmp/cert.pem" \
    >/dev/null 2>&1 || die "openssl"
echo "k4.public.Hd5PTnp2GX0rBvZQ0xFGvEHdEwnnRwlDE-7YDg4cDLk" >"$tmp/issuer.pub"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat >"$tmp/keepd.yaml" <<EOF2
listen:
  address: 127.0.0.1
  port: $port
state_dir: $tmp/state
policy_dir: $PWD/etc/policy
user: _keep
tls:
  cert: $tmp/cert.pem
  key: $tmp/key.pem
tokens:
  issuer_keys:
    - k4.public.Hd5PTnp2GX0rBvZQ0xFGvEHdEwnnRwlDE-7YDg4cDLk
    - $tmp/issuer.pub
images:
  trusted_keys: [ $tmp/issuer.pub ]
limits:
  restart_backoff_max: 1s
EOF2
"$KEEPD" -n -f "$tmp/keepd.yaml" >/dev/null || die "keepd -n refused the test config"

"$KEEPD" -d -f "$tmp/keepd.yaml" >"$tmp/log" 2>&1 &
pid=$!

# pid of the child titled "keepd: NAME", empty if none.
child_pid() {
	local p
	for p in $(pgrep -P "$pid" 2>/dev/null); do
		if [ "$(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | sed 's/ *$//')" = "keepd: $1" ]; then
			echo "$p"; return
		fi
	done
}

# Wait (bounded) until every child is up with its filter installed.
wait_all() {
	local n ok c p
	for n in $(seq 100); do
		ok=1
		for c in $CHILDREN; do
			p=$(child_pid "$c")
			if [ -z "$p" ] || ! grep -q '^Seccomp:[[:space:]]*2' "/proc/$p/status" 2>/dev/null; then
				ok=0; break
			fi
		done
		[ "$ok" = 1 ] && return 0
		kill -0 "$pid" 2>/dev/null || die "keepd exited"
		sleep 0.1
	done
	return 1
}
wait_all || die "children did not all start"

field() { awk -v k="$2:" '$1 == k { print $2, $3, $4, $5 }' "/proc/$1/status"; }
for c in $CHILDREN; do
	p=$(child_pid "$c")
	uid=$(field "$p" Uid)
	for u in $uid; do [ "$u" != 0 ] || die "$c: uid $uid"; done
	gid=$(field "$p" Gid)
	for g in $gid; do [ "$g" != 0 ] || die "$c: gid $gid"; done
	[ "$(field "$p" CapEff | tr -d ' ')" = 0000000000000000 ] || die "$c: CapEff $(field "$p" CapEff)"
	[ "$(field "$p" CapPrm | tr -d ' ')" = 0000000000000000 ] || die "$c: CapPrm"
	[ "$(field "$p" CapBnd | tr -d ' ')" = 0000000000000000 ] || die "$c: CapBnd"
	[ "$(field "$p" NoNewPrivs | tr -d ' ')" = 1 ] || die "$c: NoNewPrivs"
	[ "$(field "$p" Seccomp | tr -d ' ')" = 2 ] || die "$c: Seccomp"
	root=$(readlink "/proc/$p/root")
	[ "$root" != / ] || die "$c: root is /"
	# Only the framework's descriptors survive (0-2, links, kvm, listener).
	for fd in $(ls "/proc/$p/fd"); do
		[ "$fd" -le 12 ] || die "$c: unexpected descriptor $fd"
	done
	echo "ok: keepd: $c pid $p uid $uid root $root CapEff 0 NoNewPrivs 1 Seccomp 2"
done
for _ in $(seq 100); do grep -q "running: listening" "$tmp/log" && break; sleep 0.1; done
grep -q "keepd/front: .*TLS certificate ([0-9]* bytes) and key received" "$tmp/log" || die "front got no TLS material"
# The two configured issuer keys plus the delegation key keepd made itself.
grep -q "keepd/front: .*3 token issuer key(s)" "$tmp/log" || die "front got no issuer keys"
grep -q "keepd/vmm: .*1 image signing key(s)" "$tmp/log" || die "vmm got no image keys"
grep -q "keepd/policy: .*policy generation 1 loaded" "$tmp/log" || die "policy not loaded"
echo "ok: front has the TLS material and issuer keys, vmm the image keys, policy its text"
[ "$(readlink "/proc/$(child_pid vmm)/root")" = "$tmp/state" ] || die "vmm root"
[ "$(readlink "/proc/$(child_pid store)/root")" = "$tmp/state/db" ] || die "store root"
# The vmm's filter lets its guests' internet sockets through (filters
# stack), so it lives where there is no network: a namespace of its own
# with no interface up (docs/threat-model.md, "Guest sockets").
vp=$(child_pid vmm)
[ "$(readlink "/proc/$vp/ns/net")" != "$(readlink /proc/self/ns/net)" ] || die "vmm in the host's network namespace"
[ "$(awk 'NR > 2 { print $1 }' "/proc/$vp/net/dev")" = lo: ] || die "vmm's namespace has interfaces: $(cat "/proc/$vp/net/dev")"
# lo down: no ::1 on it (lo up has one).
[ ! -s "/proc/$vp/net/if_inet6" ] || die "vmm's lo is up: $(cat "/proc/$vp/net/if_inet6")"
echo "ok: the vmm's network namespace is its own: lo alone, down"
[ "$(readlink "/proc/$(child_pid front)/root")" = "$tmp/state/empty" ] || die "front root"

# Stopped and continued (kill -STOP/-CONT, the cgroup freezer, a
# debugger attaching), a child waiting in poll with a timeout resumes
# through restart_syscall: its filter must allow it, or the child dies
# of SIGSYS and its in-flight work with it.
declare -A before=()
for c in $CHILDREN; do before[$c]=$(child_pid "$c"); done
for c in $CHILDREN; do kill -STOP "${before[$c]}"; done
sleep 0.3
for c in $CHILDREN; do kill -CONT "${before[$c]}"; done
sleep 1
for c in $CHILDREN; do
	[ "$(child_pid "$c")" = "${before[$c]}" ] || die "$c died when stopped and continued"
done
grep -q "(seccomp)" "$tmp/log" && die "a child was killed by its seccomp filter"
echo "ok: every child survives kill -STOP and -CONT"

# kill -9 each child in turn: it comes back, the others keep their pids.
for victim in $CHILDREN; do
	declare -A before=()
	for c in $CHILDREN; do before[$c]=$(child_pid "$c"); done
	kill -KILL "${before[$victim]}"
	back=
	for _ in $(seq 100); do
		np=$(child_pid "$victim")
		if [ -n "$np" ] && [ "$np" != "${before[$victim]}" ] &&
		    grep -q '^Seccomp:[[:space:]]*2' "/proc/$np/status" 2>/dev/null; then
			back=$np; break
		fi
		sleep 0.1
	done
	[ -n "$back" ] || die "$victim did not come back after kill -9"
	for c in $CHILDREN; do
		[ "$c" = "$victim" ] && continue
		[ "$(child_pid "$c")" = "${before[$c]}" ] || die "$c changed pid when $victim died"
	done
	echo "ok: $victim restarted (${before[$victim]} -> $back), others kept their pids"
done
kill -0 "$pid" || die "parent died"

# SIGHUP: the configuration is re-read, the policy sent again and
# acknowledged (one more "in force" line than before).
loads() { grep -c 'policy generation [0-9]* in force' "$tmp/log"; }
n0=$(loads)
kill -HUP "$pid"
for _ in $(seq 100); do
	[ "$(loads)" -gt "$n0" ] && break
	sleep 0.1
done
[ "$(loads)" -gt "$n0" ] || die "SIGHUP did not reload the policy"
grep -q "SIGHUP: reloading" "$tmp/log" || die "SIGHUP not logged"
echo "ok: SIGHUP reloaded the policy"

# A hung child (stopped, so it answers no ping) is killed and restarted.
hung=$(child_pid store)
kill -STOP "$hung"
back=
for _ in $(seq 400); do
	np=$(child_pid store)
	if [ -n "$np" ] && [ "$np" != "$hung" ]; then back=$np; break; fi
	sleep 0.1
done
kill -KILL "$hung" 2>/dev/null
[ -n "$back" ] || die "a hung store was not replaced"
grep -q "store (pid $hung) has not answered" "$tmp/log" || die "hang not logged"
echo "ok: hung store $hung killed and replaced by $back"
wait_all || die "children did not all come back"

# SIGTERM: everything stops, exit 0.
kids=$(pgrep -P "$pid")
kill -TERM "$pid"
rc=
for _ in $(seq 100); do
	if ! kill -0 "$pid" 2>/dev/null; then wait "$pid"; rc=$?; break; fi
	sleep 0.1
done
[ "$rc" = 0 ] || die "keepd did not exit 0 on SIGTERM (rc ${rc:-timeout})"
for k in $kids; do
	kill -0 "$k" 2>/dev/null && die "child $k survived the parent"
done
pid=
echo "ok: SIGTERM stopped keepd and its children, exit 0"

# keepd -n names file:line:column.
printf 'listen:\n  port: 0\n' >"$tmp/bad.yaml"
out=$("$KEEPD" -n -f "$tmp/bad.yaml" 2>&1); rc=$?
[ "$rc" = 1 ] && grep -q "bad.yaml:2:9: error: port" <<<"$out" || die "keepd -n: $out"
echo "ok: keepd -n reports $out"
exit 0
