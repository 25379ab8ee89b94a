#!/usr/bin/env bash
# The fresh-machine proof (issue 16): install build/keep_<version>_amd64.deb
# into a fresh Debian 12 root made with `debootstrap --variant=minbase`,
# check what postinst set up, start keepd from the installed files with the
# installed configuration (in a network namespace of its own, so the
# installed port is nobody else's), edit the one policy file, create a
# sandbox and run Python through the API; then reinstall (the operator's
# policy and keys survive) and purge (the state goes).
#
# Run by `make deb-install-check` (called from .ci/run, not by make check).
# Needs root and debootstrap; without them it says so and exits 77
# (tests/lib/debroot.sh). The packages come from the mirror apt is
# configured with on this machine.
# Every step that can hang is bounded by timeout(1).
set -u
cd "$(dirname "$0")/.." || exit 1
B=${B:-build}
deb=$(ls "$B"/keep_*_amd64.deb 2>/dev/null | tail -n 1)
[ -n "$deb" ] || { echo "FAIL: no $B/keep_*_amd64.deb (make deb)"; exit 1; }
# A box without /dev/kvm runs the guest on the trap platform (platform:
# auto in the installed keepd.yaml).
source tests/lib/debroot.sh
fails=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fails=$((fails+1)); }
cp "$deb" "$root/tmp/keep.deb"

T=900 in_root apt-get update -qq >/dev/null || { echo "FAIL: apt-get update in the root"; exit 1; }
T=900 in_root apt-get install -y -qq --no-install-recommends /tmp/keep.deb >"$root.apt.log" 2>&1 &&
    ok "the package installs in a fresh minbase root, with its dependencies" ||
    { cat "$root.apt.log"; bad "apt-get install ./keep.deb"; exit 1; }
rm -f "$root.apt.log"

# What postinst made, and the modes it gave.
in_root getent passwd _keep >/dev/null && ok "postinst made the user _keep" || bad "no user _keep"
mode() { stat -c '%a %U' "$root$1" 2>/dev/null; }
[ "$(mode /etc/keep/keys)" = "700 root" ] && ok "/etc/keep/keys is 0700 root" || bad "keys dir: $(mode /etc/keep/keys)"
[ "$(mode /etc/keep/keys/issuer.secret)" = "600 root" ] && ok "issuer.secret is 0600 root" ||
    bad "issuer.secret: $(mode /etc/keep/keys/issuer.secret)"
[ "$(mode /var/lib/keep)" = "755 root" ] && ok "/var/lib/keep is 0755 root" || bad "state dir: $(mode /var/lib/keep)"
n=$(ls "$root"/var/lib/keep/images/*.img 2>/dev/null | wc -l)
[ "$n" -ge 1 ] && [ "$n" = "$(ls "$root"/usr/share/keep/images/*.img | wc -l)" ] &&
    ok "the $n stock images are in /var/lib/keep/images" || bad "stock images: $n"
for m in keepd.8 keepd.yaml.5 keep.1 keep-policy.5; do
	ls "$root"/usr/share/man/man?/$m.gz >/dev/null 2>&1 || bad "man page $m missing"
done
grep -q '^/etc/keep/keepd.yaml$' "$root/var/lib/dpkg/info/keep.conffiles" &&
    grep -q '^/etc/keep/policy/default.policy$' "$root/var/lib/dpkg/info/keep.conffiles" &&
    ok "keepd.yaml and default.policy are conffiles" || bad "conffiles"

# The installed configuration checks clean: keys in place, no admin.
out=$(in_root keepd -n 2>&1)
[ "$out" = "configuration OK" ] && ok "keepd -n on the installed files: $out" || bad "keepd -n: $out"

# The operator edits the one policy file.
cat >>"$root/etc/keep/policy/default.policy" <<'EOP'
role runner {
	allow sandbox:read, sandbox:write, exec
	exec "python"
	memory 256M
	timeout 30s
}
agent "ci-bot" : runner
EOP
sum_before=$(cat "$root"/etc/keep/keys/issuer.* "$root/etc/keep/policy/default.policy" | sha256sum)

# keepd as installed: the unit's command line, in a network namespace
# (the installed port 8421 is then this test's alone).
token=$(in_root keep token mint --key /etc/keep/keys/issuer.secret --sub ci-bot \
    --caps sandbox:read,sandbox:write,exec --ttl 10m) || bad "token mint"
cat >"$root/tmp/api.sh" <<'EOS'
#!/bin/sh
# Inside the namespace: start keepd, wait for it, create, execute, stop.
ip link set lo up
chroot "$ROOT" /usr/sbin/keepd -d -f /etc/keep/keepd.yaml >"$ROOT/tmp/keepd.log" 2>&1 &
pid=$!
url=http://127.0.0.1:8421
i=0
until [ "$(curl -s -o /dev/null -w '%{http_code}' $url/healthz)" = 200 ]; do
	i=$((i+1)); [ $i -gt 300 ] && { echo "keepd did not start"; kill $pid; exit 1; }
	sleep 0.1
done
h="Authorization: Bearer $TOKEN"
id=$(curl -s -H "$h" -d '{"image":"python"}' $url/v1/sandboxes |
    sed -n 's/.*"id":"\([^"]*\)".*/\1/p')
echo "sandbox=$id"
curl -s -H "$h" -H 'Content-Type: application/json' \
    -d '{"code":"import sys\nprint(6*7, sys.version_info[:2])","language":"python"}' \
    "$url/v1/sandboxes/$id/execute"
echo
kill -TERM $pid; wait $pid
EOS
out=$(ROOT=$root TOKEN=$token timeout 300 unshare -n sh "$root/tmp/api.sh" 2>&1)
echo "$out" | sed 's/^/  /'
echo "$out" | grep -q '^sandbox=..*' && ok "a sandbox is created through the API" || bad "create"
echo "$out" | grep -q '42 (3, 11)' && ok "Python runs in it through the API" ||
    { bad "execute"; tail -n 30 "$root/tmp/keepd.log"; }

# Reinstall (an upgrade takes the same path): nothing of the operator's moves.
T=600 in_root dpkg -i --force-confold /tmp/keep.deb >/dev/null 2>&1 && ok "reinstall" || bad "reinstall"
[ "$(cat "$root"/etc/keep/keys/issuer.* "$root/etc/keep/policy/default.policy" | sha256sum)" = "$sum_before" ] &&
    ok "reinstall keeps the operator's keys and policy" || bad "reinstall changed keys or policy"

# remove keeps the state; purge removes it.
T=600 in_root apt-get remove -y -qq keep >/dev/null 2>&1
[ -d "$root/var/lib/keep/db" ] && [ -e "$root/etc/keep/keys/issuer.secret" ] &&
    ok "remove keeps the state and keys" || bad "remove lost state"
T=600 in_root apt-get purge -y -qq keep >/dev/null 2>&1
[ ! -e "$root/var/lib/keep" ] && [ ! -e "$root/etc/keep/keys" ] &&
    ok "purge removes the state and the generated keys" || bad "purge left state"

echo "deb-install: $fails failures"
[ $fails -eq 0 ]
