#!/usr/bin/env bash
# Reservations (docs/vmm.md, "Reservations"): with an image's reserve
# (/etc/keep/reserve) a guest may reserve address space far past its
# memory limit with PROT_NONE mappings, which cost no charge; mprotect
# charges what it opens, against the tree's limit; a page the guest does
# not hold (reserved, unmapped, past the break) stops it when touched, or
# raises SIGSEGV in a handler, and a system call cannot reach it. Without
# the reserve the address space is the limit, as before.
source "$(dirname "$0")/../lib/guest.sh"

mkdir "$tmp/k" && "$KEEP" key generate --out "$tmp/k" >/dev/null || exit 1
image() { # out reserve-text|""
	local out=$1 text=$2 extra=()
	if [ -n "$text" ]; then
		printf '%s' "$text" >"$tmp/reserve.txt"
		extra=(--file "/etc/keep/reserve=$tmp/reserve.txt")
	fi
	"$KEEP" image build --name reserve --version 1 --memory 64M \
	    --command reserve "${extra[@]}" "$G/reserve" -o "$out" >/dev/null &&
	"$KEEP" image sign --key "$tmp/k/keep.secret" "$out"
}
image "$tmp/r.img" $'# address space for reservations\n1G\n' || exit 1
image "$tmp/plain.img" "" || exit 1
image "$tmp/bad.img" "lots" || exit 1
T="--trust $tmp/k/keep.public"

cat >"$tmp/want" <<'EOF'
reserve 8x the limit: ok
mprotect half the limit: ok
mprotect the limit more: ENOMEM
contents across PROT_NONE: 7
read into a reserved page: EFAULT
decommit: ok
mprotect 3/4 of the limit: ok
reads zeroes: yes
fork, child mprotects past the tree's limit: ENOMEM
mprotect of 2^64-1 bytes: ENOMEM
mremap to 2^64-1 bytes: Invalid argument
after munmap, map 3/4 of the limit: ok
EOF
"$KEEP" run --stats $T "$tmp/r.img" reserve 64 >"$tmp/out" 2>"$tmp/err"; rc=$?
diff -u "$tmp/want" "$tmp/out" >"$tmp/diff" && [ $rc -eq 0 ] &&
	ok "reservations: not charged, opened by mprotect within the tree's limit" ||
	bad "reservations: exit $rc: $(cat "$tmp/diff" "$tmp/err")"
# 512 MiB reserved; the peak charge is what it opened (3/4 of the limit
# at most), under the 64 MiB limit.
peak=$(sed -n 's/.*peak memory \([0-9]*\) KiB.*/\1/p' "$tmp/err")
[ -n "$peak" ] && [ "$peak" -ge 32768 ] && [ "$peak" -le 65536 ] &&
	ok "peak memory $peak KiB with 512 MiB reserved" ||
	bad "peak memory: '$peak' $(cat "$tmp/err")"

for how in touch heap unmapped; do
	"$KEEP" run $T "$tmp/r.img" reserve 64 $how >"$tmp/out" 2>"$tmp/err"; rc=$?
	grep -q "touched memory it does not hold" "$tmp/err" && [ $rc -eq 139 ] &&
		! grep -q touched "$tmp/out" &&
		ok "$how: a page it does not hold stops it" ||
		bad "$how: exit $rc: $(cat "$tmp/out" "$tmp/err")"
done

out=$("$KEEP" run $T "$tmp/r.img" reserve 64 caught 2>&1); rc=$?
want=$("$G/reserve" 64 caught 2>&1)
[ "$out" = "$want" ] && [ $rc -eq 0 ] &&
	ok "a SIGSEGV handler sees the touch, as natively" ||
	bad "caught: '$out' ($rc), native '$want'"

# The limit is what the guest is told it may hold; the address space is
# the limit and the reserve.
out=$("$KEEP" run $T "$tmp/r.img" reserve 64 limits 2>&1); rc=$?
want=$'MemTotal:          65536 kB\nRLIMIT_DATA 64 MiB\nRLIMIT_AS 1088 MiB'
[ "$out" = "$want" ] && [ $rc -eq 0 ] &&
	ok "MemTotal and RLIMIT_DATA are the limit, RLIMIT_AS the address space" ||
	bad "limits: '$out' ($rc)"

out=$("$KEEP" run $T "$tmp/plain.img" reserve 64 2>&1); rc=$?
[ "$out" = "reserve 8x the limit: failed" ] && [ $rc -eq 1 ] &&
	ok "without a reserve, the address space is the limit" ||
	bad "no reserve: '$out' ($rc)"

out=$("$KEEP" run $T "$tmp/bad.img" reserve 64 2>&1); rc=$?
case "$out" in
*"malformed or tampered /etc/keep/reserve"*) [ $rc -ne 0 ] &&
	ok "a malformed reserve refuses the boot" || bad "bad reserve: rc $rc";;
*) bad "bad reserve: '$out' ($rc)";;
esac

[ $fails -eq 0 ] && echo "vmm_reserve: all passed" ||
	echo "vmm_reserve: $fails failures"
[ $fails -eq 0 ]
