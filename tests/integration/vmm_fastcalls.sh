#!/usr/bin/env bash
# The calls the guest answers itself (docs/vmm.md "Calls answered in the
# guest"): tests/guests/fastcalls.c makes every case of them, and the cases
# around them, printing each raw result; run with the answers in the guest
# and with every call exiting (--trace turns them off), its output must be
# the same byte for byte, with and without a workspace, in a forked child,
# while a second thread exists, and after a vfork child that opened
# files in its parent's memory. The answers' page is read-only; what
# the program writes into the changed descriptors' page opens and closes
# no more than open(2) and close(2) would. Signals come while the guest
# opens and closes files itself, and their handlers open and close too.
# On both platforms: kvm-pvm answers in the guest's ring, the trap
# platform in the stub's SIGSYS handler; on hardware virtualization every
# call exits and the outputs must agree all the same.
# run-tests: alone (calls under a 200 us timer for seconds: both cores)
source "$(dirname "$0")/../lib/guest.sh"

# Where the answers are made without the VMM.
answered_here=0
[ "$KEEP_TEST_PLATFORM" = trap ] || [ -d /sys/module/kvm_pvm ] && answered_here=1

mkdir "$tmp/k" && "$KEEP" key generate --out "$tmp/k" >/dev/null || exit 1
printf 'hello world\n' >"$tmp/a"
head -c 5000 /dev/urandom >"$tmp/b"
printf 'PK' >"$tmp/zip"
"$KEEP" image build --name f --version 1 --defer-hashes --file "/d/a.txt=$tmp/a" \
	--file "/d/sub/b.txt=$tmp/b" --file "/x.zip=$tmp/zip" \
	"$G/fastcalls" -o "$tmp/f.img" &&
	"$KEEP" image sign --key "$tmp/k/keep.secret" "$tmp/f.img" || exit 1
run() { "$KEEP" run --trust "$tmp/k/keep.public" "$@"; }

# A fresh copy of the workspace for each run: the program's opens with
# O_CREAT make files there.
mkdir -p "$tmp/ws0/wsdir" && echo ws >"$tmp/ws0/ws.txt"
for ws in "" "--workspace $tmp/ws"; do
	name=${ws:+with a workspace}; name=${name:-without a workspace}
	rm -rf "$tmp/ws" && cp -a "$tmp/ws0" "$tmp/ws"
	# shellcheck disable=SC2086
	run $ws "$tmp/f.img" fastcalls >"$tmp/fast" 2>"$tmp/fast.err"; rc1=$?
	rm -rf "$tmp/ws" && cp -a "$tmp/ws0" "$tmp/ws"
	# shellcheck disable=SC2086
	run $ws --trace "$tmp/f.img" fastcalls >"$tmp/slow" 2>/dev/null; rc2=$?
	if [ $rc1 -eq 0 ] && [ $rc2 -eq 0 ] && cmp -s "$tmp/fast" "$tmp/slow" &&
	    [ "$(grep -c ': ' "$tmp/fast")" -gt 500 ]; then
		ok "$name: the same answers in the guest as from the VMM ($(wc -l <"$tmp/fast") lines)"
	else
		bad "$name: rc $rc1/$rc2: $(diff "$tmp/slow" "$tmp/fast" | head -5) $(head -3 "$tmp/fast.err")"
	fi
done

# They were answered in the guest: far fewer exits.
exits() { sed -n 's/.* \([0-9]*\) exits.*/\1/p'; }
fast=$(run --stats "$tmp/f.img" fastcalls 50 2>&1 >/dev/null | exits)
slow=$(run --stats --trace "$tmp/f.img" fastcalls 50 2>&1 >/dev/null | exits)
if [ -n "$fast" ] && [ -n "$slow" ] && [ "$fast" -lt $((slow * 2 / 3)) ]; then
	ok "answered in the guest: $fast exits against $slow"
elif [ $answered_here -eq 1 ]; then
	bad "exits: $fast in the guest against $slow"
else
	echo "ok: (KVM, not kvm-pvm: every call exits, $fast against $slow)"
fi

# A hundred thousand calls under tens of thousands of signals (each
# alarm a kick and an exit: 15 s here with both cores loaded, 2 s
# quiet); a slow machine (KEEP_TEST_SLOW) makes fewer, as many times
# fewer as it is slower, where every call exits. The limit only ends a
# run that stopped making progress.
rounds=20000
[ $answered_here -eq 1 ] || rounds=$((rounds / SLOW))
out=$(run --timeout "$(slow 300)s" "$tmp/f.img" fastcalls alarms $rounds 2>&1); rc=$?
[ $rc -eq 0 ] && [[ $out == "alarms: ok"* ]] &&
	ok "signals taken while the guest answers: $out" || bad "alarms ($rc): $out"

# The one page the guest writes: requests to open and close, honoured
# only as open(2) and close(2) would be for an image file (stdout
# stays, a file the image does not have is not opened).
out=$(run "$tmp/f.img" fastcalls changepage 2>&1); rc=$?
if [ $answered_here -eq 1 ]; then
	[ $rc -eq 0 ] && [ "$out" = "changepage: image fd -9, other fd at 7, fd 20 -9, stdout kept" ] &&
		ok "the changed descriptors' page: $out" || bad "changepage ($rc): $out"
else
	echo "ok: (KVM, not kvm-pvm: no fast calls, changepage $rc)"
fi

out=$(run "$tmp/f.img" fastcalls poke 2>&1); rc=$?
[ $rc -eq 139 ] && [[ $out != *"wrote the VMM"* ]] &&
	ok "the answers' page is read-only" || bad "poke ($rc): $out"

echo "vmm_fastcalls: $fails failures"
[ $fails -eq 0 ]
