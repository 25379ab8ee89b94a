#!/usr/bin/env bash
# Image pages mapped copy-on-write (docs/vmm.md "Image pages"): a private
# mapping of an image file reads the file, zeroes past its end, keeps
# the guest's writes to itself (the image file is unchanged, and the
# next run reads the same), and gives way to zeroes under MAP_FIXED
# anonymous memory and after munmap, in a process and a forked child;
# a read-only mapping made before a fork reads the file in both; a run
# that maps a 4 MiB file and reads one byte of it is charged for pages
# it touched, not for the file (KVM; the trap platform counts them all).
# On the trap platform read-only image pages are read-only in the guest:
# a write to one is a SIGSEGV, as natively (KVM has no per-page rights:
# there it is the guest's own copy); made writable by mprotect they take
# the guest's writes.
source "$(dirname "$0")/../lib/guest.sh"

mkdir "$tmp/k" && "$KEEP" key generate --out "$tmp/k" >/dev/null || exit 1
# 4 MiB (enough to tell a copy from a mapping, little to hash under
# make check-kvm's TCG) and a partial page: the file's last page is
# copied, the rest mapped; the signature follows it in the image.
head -c $((4 * 1024 * 1024 + 1234)) /dev/urandom >"$tmp/data"
"$KEEP" image build --name m --version 1 --file "/data=$tmp/data" \
	"$G/mapimage" -o "$tmp/m.img" &&
	"$KEEP" image sign --key "$tmp/k/keep.secret" "$tmp/m.img" || exit 1
T="--trust $tmp/k/keep.public"
sum=$(sha256sum <"$tmp/m.img")

# The program's constant data: written over under KVM, a fault where
# pages have rights (natively, and on trap).
if [ "$KEEP_TEST_PLATFORM" = trap ]; then
	rodata="own constant data: built as 0, a write faulted: ok"
else
	rodata="own constant data: built as 0, written over: ok"
fi
for run in first second; do
	out=$("$KEEP" run $T "$tmp/m.img" mapimage /data 2>&1); rc=$?
	case "$out" in
	*"mapimage: ok") [ $rc -eq 0 ] && ok "$run run: every mapping check" ||
		bad "$run run: rc $rc";;
	*) bad "$run run ($rc): $out";;
	esac
	grep -qxF "$rodata" <<<"$out" && ok "$run run: $rodata" ||
		bad "$run run: not '$rodata'"
done
grep -qxF "parent: its read-only mapping reads the file after the child's munmap: ok" <<<"$out" &&
	ok "a read-only image mapping across fork" || bad "fork: $out"

# A write to a read-only mapping of an image file.
native=$("$G/mapimage" rowrite "$tmp/data" 2>/dev/null); nrc=$?
out=$("$KEEP" run $T "$tmp/m.img" mapimage rowrite /data 2>"$tmp/err"); rc=$?
if [ "$KEEP_TEST_PLATFORM" = trap ]; then
	[ $nrc -eq 139 ] && [ $rc -eq 139 ] && [ "$out" = "$native" ] &&
	    grep -q "keep run: fault: vector 14 (#PF" "$tmp/err" &&
	    ok "trap: a write to a read-only image page is a SIGSEGV, as natively ($nrc)" ||
	    bad "trap: rowrite ($rc, natively $nrc): '$out' / '$native': $(cat "$tmp/err")"
else
	[ $rc -eq 0 ] && [[ $out == *wrote* ]] &&
	    ok "kvm: a write to a read-only image page is the guest's own copy" ||
	    bad "kvm: rowrite ($rc): $out $(cat "$tmp/err")"
fi
# mprotect to writable, write, read back: a mapping and the program's
# own constant data; the image is unchanged.
out=$("$KEEP" run $T "$tmp/m.img" mapimage protect /data 2>&1); rc=$?
[ $rc -eq 0 ] && [[ $out == *"mapimage: ok" ]] &&
	ok "mprotect to writable, write, read back" || bad "protect ($rc): $out"
# Many read-only mappings across a fork, with few descriptors to spare:
# the child maps every one again (on trap, in its process too, with the
# image's one descriptor).
out=$(ulimit -n 64; "$KEEP" run $T "$tmp/m.img" mapimage many /data 2>&1); rc=$?
[ $rc -eq 0 ] && [[ $out == *"mapimage: ok" ]] &&
	ok "3000 read-only image mappings across a fork, 64 descriptors" || bad "many ($rc): $out"

[ "$(sha256sum <"$tmp/m.img")" = "$sum" ] && ok "the image file is unchanged" ||
	bad "the image file changed"

# Copying would charge the whole 4 MiB file. The trap platform's guest
# touches pages in its own process, whose page tables the vm process
# cannot read: every page of the mapping counts (docs/vmm.md, "Image
# pages"), as in keepd under KVM.
out=$("$KEEP" run --stats $T "$tmp/m.img" mapimage touch /data 2>&1); rc=$?
kib=$(printf '%s\n' "$out" | sed -n 's/.*peak memory \([0-9]*\) KiB.*/\1/p')
if [ "$KEEP_TEST_PLATFORM" = trap ]; then
	[ $rc -eq 0 ] && [ -n "$kib" ] && [ "$kib" -ge 4096 ] &&
	    ok "trap: a 4 MiB mapping's pages all count, charged $kib KiB" ||
	    bad "trap: touch run ($rc): '${kib}' KiB: $out"
elif [ $rc -eq 0 ] && [ -n "$kib" ] && [ "$kib" -lt 1024 ]; then
	ok "one byte read of a 4 MiB mapping is charged $kib KiB"
else
	bad "touch run ($rc): charged '${kib}' KiB: $out"
fi

# A program's read-only segments are the image's pages only when the
# program is an image file: one copied into the workspace and executed
# from there is loaded from its own bytes.
if [ -e "$B/images/shell.img" ]; then
	mkdir "$tmp/ws"
	out=$("$KEEP" run --workspace "$tmp/ws" --trust "$B/keys/dev.public" \
	    "$B/images/shell.img" bash -c 'cp /bin/cat /c && chmod +x /c && echo from the workspace | /c' 2>&1); rc=$?
	[ $rc -eq 0 ] && [ "$out" = "from the workspace" ] &&
		ok "a program executed from the workspace runs from its own bytes" ||
		bad "workspace program ($rc): $out"
fi

[ $fails -eq 0 ] || exit 1
