#!/usr/bin/env bash
# KVM's memory slots (docs/vmm.md, "Guest memory"): guest memory is
# registered with KVM only where the guest has held memory, and grows as
# it opens more. What a user sees must not change: a touch of memory the
# guest does not hold, where KVM has no slot, stops it or raises a
# SIGSEGV its handler takes, as natively (reads, writes and instruction
# fetches); a handler that makes the page accessible and returns has the
# store made again; a program that grows its heap and mmap area far
# uses all of it, and so does its forked child. The guest runs with a
# 1 GiB limit and a 1 GiB reserve, the python image's 2 GiB.
# KVM's own mechanism: make check-kvm runs it (tests/kvm.list).
KEEP_TEST_NEEDS=kvm
source "$(dirname "$0")/../lib/guest.sh"

mkdir "$tmp/k" && "$KEEP" key generate --out "$tmp/k" >/dev/null || exit 1
printf '1G\n' >"$tmp/reserve.txt"
"$KEEP" image build --name memslots --version 1 --memory 1024M \
    --command memslots --file "/etc/keep/reserve=$tmp/reserve.txt" \
    "$G/memslots" -o "$tmp/m.img" >/dev/null &&
	"$KEEP" image sign --key "$tmp/k/keep.secret" "$tmp/m.img" || exit 1
T="--trust $tmp/k/keep.public"

# The reservation's middle is hundreds of MiB from anything the guest
# held: no slot covers it, and the stop names the address (a closed page
# inside a slot fails in KVM_RUN, which names none).
for how in read write exec; do
	"$KEEP" run $T "$tmp/m.img" memslots $how >"$tmp/out" 2>"$tmp/err"; rc=$?
	grep -q "touched memory it does not hold.*address 0x" "$tmp/err" &&
		[ $rc -eq 139 ] && ! grep -q touched "$tmp/out" &&
		ok "$how: memory with no slot stops it" ||
		bad "$how: exit $rc: $(cat "$tmp/out" "$tmp/err")"
done

for how in caught-read caught-write caught-exec fixed; do
	out=$("$KEEP" run $T "$tmp/m.img" memslots $how 2>&1); rc=$?
	want=$("$G/memslots" $how 2>&1)
	[ "$out" = "$want" ] && [ $rc -eq 0 ] &&
		ok "$how: as natively ($want)" ||
		bad "$how: '$out' ($rc), native '$want'"
done

"$KEEP" run --stats $T "$tmp/m.img" memslots grow 150 >"$tmp/out" 2>"$tmp/err"; rc=$?
want=$("$G/memslots" grow 150 2>&1)
[ "$(cat "$tmp/out")" = "$want" ] && [ $rc -eq 0 ] &&
	ok "300 MiB grown and a child's 64 MiB more, as natively" ||
	bad "grow: exit $rc: $(cat "$tmp/out" "$tmp/err"), native '$want'"
# Each slot added at least doubles its end of memory: a count, not a
# time, so the calls stay few as the guest grows.
n=$(sed -n 's/.*, \([0-9]*\) memory slots.*/\1/p' "$tmp/err")
[ $rc -eq 0 ] && [ -n "$n" ] && [ "$n" -ge 3 ] && [ "$n" -le 16 ] &&
	ok "$n memory slots for 300 MiB grown" ||
	bad "memory slots: '$n' $(cat "$tmp/err")"

[ $fails -eq 0 ] && echo "vmm_memslots: all passed" ||
	echo "vmm_memslots: $fails failures"
[ $fails -eq 0 ]
