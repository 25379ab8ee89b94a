#!/usr/bin/env bash
# keep status (issue 16): with keepd running it names every process of
# this instance (and none of another keepd on the box), the policy hash
# keepd loaded, the store's size and the limits in force, and exits 0;
# once keepd stops it says so and exits 1.
# It boots no guest: it runs where no guest platform does.
KEEPD_NO_GUEST=1
source "$(dirname "$0")/../lib/keepd.sh"
cat >"$tmp/test.policy" <<'EOP'
role runner {
	allow sandbox:read
	rate read 100/min
	memory 64M
}
agent "alice" : runner
EOP
keepd_start "$tmp/test.policy"
for _ in $(seq 50); do grep -q "policy generation 1 in force" "$tmp/log" && break; sleep 0.1; done
# The children start in parallel with the policy's load: on a loaded
# box egress or the vmm's namespace maker may not have its title yet.
for _ in $(seq 50); do
	out=$("$KEEP" status -f "$tmp/keepd.yaml" 2>&1); rc=$?
	[[ $out == *"keepd: egress"* && $out == *"keepd: netns"* ]] && break
	sleep 0.1
done
echo "$out" | sed 's/^/  /'
[ $rc = 0 ] && echo "$out" | grep -q "healthy" && ok "status: healthy, exit 0" || bad "status rc $rc"
# netns: the vmm's namespace maker (host/vm_confine.h), forked before the
# vmm's chroot.
for p in parent front policy vmm store egress netns; do
	echo "$out" | grep -q "keepd: $p" || bad "process keepd: $p not listed"
done
# The namespace maker keeps a child of its own ready for the next
# sandbox (a second "keepd: netns" line) but for a moment after each.
n=$(echo "$out" | grep -cE '^  [0-9]+ +keepd: ')
nns=$(echo "$out" | grep -cE '^  [0-9]+ +keepd: netns')
[ "$nns" -ge 1 ] && [ "$nns" -le 2 ] && [ "$n" = $((6 + nns)) ] &&
    ok "the seven processes of this instance (and the namespace maker's child made ahead), no others" ||
    bad "processes of another instance listed ($n, $nns netns)"
loaded=$(sed -n 's/.*policy generation 1 in force, blake2b \([0-9a-f]*\).*/\1/p' "$tmp/log" | head -n 1)
[ -n "$loaded" ] && echo "$out" | grep -q "blake2b $loaded" && ok "the policy hash is the one keepd loaded" ||
    bad "policy hash: keepd loaded '$loaded'"
echo "$out" | grep -q "^  alice .*100/60s .*64M" && ok "the principal's quotas are shown" || bad "quotas"
echo "$out" | grep -q "bytes (file)" && ok "the store size is shown" || bad "store size"
echo "$out" | grep -q "memory_max" && ok "the configured limits are shown" || bad "limits"
kill -TERM "$pid"; wait "$pid" 2>/dev/null; pid=
out=$("$KEEP" status -f "$tmp/keepd.yaml" 2>&1); rc=$?
[ $rc = 1 ] && echo "$out" | grep -q "not answering" && echo "$out" | grep -q "no keepd process" &&
    ok "keepd stopped: status says so and exits 1" || bad "stopped: rc $rc $out"
echo "$(basename "$0" .sh): $fails failures"
[ $fails -eq 0 ]
