#!/usr/bin/env bash
# keepd started by an unprivileged user: it warns, skips chroot and the
# user change, and every child still has NoNewPrivs 1 and Seccomp 2.
# run-tests: alone (it finds its keepd among the _keep user's processes)
set -u
cd "$(dirname "$0")/../.."
KEEPD=${B:-build}/bin/keepd
[ -x "$KEEPD" ] || { echo "FAIL: no $KEEPD (run make)"; exit 1; }
if [ "$(id -u)" -ne 0 ]; then echo "SKIP: needs root to switch to an unprivileged user"; exit 77; fi
command -v runuser >/dev/null || { echo "SKIP: no runuser"; exit 77; }
getent passwd _keep >/dev/null ||
	useradd --system --no-create-home --home-dir /nonexistent \
	    --shell /usr/sbin/nologin _keep || { echo "FAIL: useradd _keep"; exit 1; }

tmp=$(mktemp -d) || exit 1
pid=
cleanup() {
	[ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null
	for _ in $(seq 50); do [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	[ -n "$pid" ] && pkill -KILL -P "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
die() { echo "FAIL: $*"; tail -n 30 "$tmp/log"; exit 1; }

# The worktree may not be readable by _keep: run a copy.
mkdir -p "$tmp/policy"
cp "$KEEPD" "$tmp/keepd"
cp etc/policy/*.policy "$tmp/policy/"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
printf 'listen:\n  port: %s\nstate_dir: %s/state\npolicy_dir: %s/policy\n' \
    "$port" "$tmp" "$tmp" >"$tmp/keepd.yaml"
chmod 755 "$tmp"
chown -R _keep "$tmp"

runuser -u _keep -- "$tmp/keepd" -d -f "$tmp/keepd.yaml" >"$tmp/log" 2>&1 &
pid=$!
# runuser stays as the parent of keepd; find keepd itself.
kp=
for _ in $(seq 100); do
	kp=$(pgrep -u _keep -f '^keepd: parent' | head -n 1)
	[ -n "$kp" ] && [ "$(pgrep -P "$kp" | wc -l)" -ge 5 ] && break
	sleep 0.1
done
[ -n "$kp" ] || die "keepd did not start"
for _ in $(seq 100); do grep -q "running: listening" "$tmp/log" && break; sleep 0.1; done
grep -q "running: listening" "$tmp/log" || die "children not ready"
grep -q "not started as root" "$tmp/log" || die "no warning about running without root"
for c in $(pgrep -P "$kp"); do
	st=/proc/$c/status
	grep -q '^NoNewPrivs:[[:space:]]*1' "$st" || die "pid $c: NoNewPrivs"
	grep -q '^Seccomp:[[:space:]]*2' "$st" || die "pid $c: Seccomp"
	echo "ok: $(tr '\0' ' ' <"/proc/$c/cmdline" | sed 's/ *$//'): NoNewPrivs 1, Seccomp 2 as $(stat -c %U "/proc/$c")"
done
kill -TERM "$kp"
for _ in $(seq 50); do kill -0 "$kp" 2>/dev/null || break; sleep 0.1; done
kill -0 "$kp" 2>/dev/null && die "keepd did not stop on SIGTERM"
wait "$pid"; rc=$?
[ "$rc" = 0 ] || die "exit status $rc"
pid=
echo "ok: stopped with exit 0"
