#!/usr/bin/env bash
# A new user's first minutes (issue 31, finding 13): the checkout, with
# no build directory, in a fresh Debian 12 root (debootstrap minbase,
# tests/lib/debroot.sh) where only make has been installed; the README's
# first command, run in parallel as people do (`make -j2 run`), must
# install what is missing, build and start keepd the first time, and the
# README's first execute must answer. make run installs what is missing
# from the network, so keepd runs on loopback in the host's network
# namespace, on a free port (KEEP_RUN_CONFIG, as tests/integration/
# host_make_run.sh), and in a pid namespace of its own (nothing it started
# outlives it); the guest runs on
# whatever platform the machine has (trap without /dev/kvm).
#
# Run by `make check-fresh` (not by make check: it downloads a Debian
# root and every build dependency, and builds from nothing: about 10
# minutes on two cores). Every step that can hang is bounded by timeout.
set -u
cd "$(dirname "$0")/.." || exit 1
B=${B:-build}
source tests/lib/debroot.sh
fails=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fails=$((fails+1)); }

mkdir -p "$root/src/keep"
# The tree as a fresh clone has it: what git tracks, nothing built.
git ls-files -z | tar --null -T - -cf - | tar -C "$root/src/keep" -xf - ||
    { echo "FAIL: copying the checkout"; exit 1; }
T=900 in_root apt-get update -qq >/dev/null || { echo "FAIL: apt-get update in the root"; exit 1; }
T=900 in_root apt-get install -y -qq --no-install-recommends make >/dev/null 2>&1 ||
    { echo "FAIL: apt-get install make"; exit 1; }

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
sed "s/^  port: 8421\$/  port: $port/" etc/keepd.dev.yaml >"$root/tmp/keepd.yaml"
grep -q "port: $port" "$root/tmp/keepd.yaml" || { echo "FAIL: no port in etc/keepd.dev.yaml"; exit 1; }
cat >"$root/tmp/first.sh" <<'EOS'
#!/bin/sh
# Inside the namespace: make -j2 run in the root, wait for keepd, then
# the README's first execute with the admin token make run wrote.
# pid 1 of a pid namespace: everything make run started ends with it.
mount -t proc proc "$ROOT/proc"
chroot "$ROOT" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
    DEBIAN_FRONTEND=noninteractive KEEP_RUN_CONFIG=/tmp/keepd.yaml \
    sh -c 'cd /src/keep && exec make -j2 run' \
    >"$ROOT/tmp/make-run.log" 2>&1 &
pid=$!
url=http://127.0.0.1:$PORT
i=0
until [ "$(curl -s -o /dev/null -w '%{http_code}' $url/healthz 2>/dev/null)" = 200 ]; do
	kill -0 $pid 2>/dev/null || { echo "make run ended"; exit 1; }
	i=$((i+1)); [ $i -gt 9000 ] && { echo "keepd did not start"; kill $pid; exit 1; }
	sleep 0.2
done
echo "healthz: $(curl -s $url/healthz)"
h="Authorization: Bearer $(cat "$ROOT/src/keep/build/run/admin.token")"
id=$(curl -s -H "$h" -d '{"image":"js"}' $url/v1/sandboxes |
    sed -n 's/.*"id":"\([^"]*\)".*/\1/p')
echo "sandbox=$id"
curl -s -H "$h" -H 'Content-Type: application/json' \
    -d '{"code":"console.log(6*7)","language":"javascript"}' "$url/v1/sandboxes/$id/execute"
echo
EOS
# The host's curl drives it: minbase has none until make deps installs it.
out=$(ROOT=$root PORT=$port timeout 1800 unshare -p -f --mount-proc sh "$root/tmp/first.sh" 2>&1)
echo "$out" | sed 's/^/  /'
log=$root/tmp/make-run.log
if grep -q "No rule to make target" "$log"; then
	bad "make -j2 run: $(grep -m1 'No rule' "$log")"
fi
echo "$out" | grep -q '^healthz: ' && ok "make -j2 run, the first command in a fresh root, starts keepd" ||
    { bad "make -j2 run did not start keepd"; tail -n 40 "$log"; }
echo "$out" | grep -q '^sandbox=..*' && ok "the README's sandbox is created" || bad "create"
echo "$out" | grep -q '"stdout":"42' && ok "the README's first execute answers 42" ||
    { bad "execute"; tail -n 20 "$log"; }

echo "fresh-build: $fails failures"
[ $fails -eq 0 ]
