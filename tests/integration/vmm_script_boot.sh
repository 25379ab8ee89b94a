#!/usr/bin/env bash
# A "#!" script as the run's own program (docs/vmm.md, "Scripts"): the
# boot starts its interpreter from the image as execve does, with argv
# "interp [arg] script args..." (the caller's argv[0] gives way to the
# script's path, as in Linux); a script whose interpreter the image
# lacks, or whose interpreter is a script itself, or relative, is
# refused before boot with the reason; a tampered interpreter too (an
# image with deferred hashes).
source "$(dirname "$0")/../lib/guest.sh"

mkdir "$tmp/k" && "$KEEP" key generate --out "$tmp/k" >/dev/null || exit 1
T="--trust $tmp/k/keep.public"
printf '#!/bin/args  -x  \necho not run\n' >"$tmp/witharg"
printf '#!/bin/args\n' >"$tmp/plain"
printf '#!/bin/none\n' >"$tmp/missing"
printf '#!/bin/plain\n' >"$tmp/nested"
printf '#!args\n' >"$tmp/relative"
chmod 755 "$tmp"/witharg "$tmp"/plain "$tmp"/missing "$tmp"/nested "$tmp"/relative
"$KEEP" image build --name scripts --version 1 \
	--command witharg=/usr/bin/witharg --file "/usr/bin/witharg=$tmp/witharg" \
	--command plain=/bin/plain --file "/bin/plain=$tmp/plain" \
	--command missing=/bin/missing --file "/bin/missing=$tmp/missing" \
	--command nested=/bin/nested --file "/bin/nested=$tmp/nested" \
	--command relative=/bin/relative --file "/bin/relative=$tmp/relative" \
	"$G/args" -o "$tmp/s.img" &&
	"$KEEP" image sign --key "$tmp/k/keep.secret" "$tmp/s.img" || exit 1

# What Linux gives the same script: the host runs it with the same
# interpreter at a path of its own.
mkdir -p "$tmp/n/bin"; cp "$G/args" "$tmp/n/bin/args"
sed "s|/bin/args|$tmp/n/bin/args|" "$tmp/witharg" >"$tmp/n/witharg"
chmod 755 "$tmp/n/witharg"
want=$(cd "$tmp/n" && ./witharg a 'b c' | grep '^argv' |
	sed "s|$tmp/n||g; s|=\./witharg|=/usr/bin/witharg|")
got=$("$KEEP" run $T "$tmp/s.img" witharg a 'b c' 2>&1 | grep '^argv')
[ -n "$want" ] && [ "$got" = "$want" ] &&
	ok "a script with an argument: $(echo $got)" ||
	bad "script argv: '$got', native '$want'"

got=$("$KEEP" run $T "$tmp/s.img" plain 2>&1 | grep '^argv' | tr '\n' ' ')
[ "$got" = "argv[0]=/bin/args argv[1]=/bin/plain " ] &&
	ok "a script without arguments: $got" || bad "plain: '$got'"

refused() { # NAME COMMAND REASON
	local out rc
	out=$("$KEEP" run $T "$tmp/s.img" "$2" 2>&1); rc=$?
	case "$out" in
	*"$3"*) [ $rc -eq 126 ] && ok "$1: refused ($out)" ||
		bad "$1: rc $rc ($out)";;
	*) bad "$1: '$out' ($rc)";;
	esac
}
refused "an interpreter the image lacks" missing \
	"/bin/missing: its interpreter /bin/none is not in the image"
refused "a script as interpreter (one level, as execve)" nested \
	"/bin/nested: its interpreter /bin/plain is not an executable ELF"
refused "a relative interpreter" relative \
	"/bin/relative: its interpreter args is not in the image"

# An image with deferred hashes (docs/image-format.md): the interpreter
# is checked before it boots; one byte of it flipped refuses the run.
"$KEEP" image build --name scripts --version 1 --defer-hashes \
	--command witharg=/usr/bin/witharg --file "/usr/bin/witharg=$tmp/witharg" \
	"$G/args" -o "$tmp/d.img" &&
	"$KEEP" image sign --key "$tmp/k/keep.secret" "$tmp/d.img" &&
	cp "$tmp/d.img" "$tmp/bad.img" || exit 1
got=$("$KEEP" run $T "$tmp/d.img" witharg 2>&1 | grep -c '^argv')
[ "$got" = 3 ] && ok "deferred hashes: the script runs" || bad "deferred: '$got'"
# A copy never run, so no record of checked files (docs/image-format.md)
# speaks for it.
python3 tests/lib/image_flip.py "$tmp/bad.img" /bin/args || exit 1
out=$("$KEEP" run $T "$tmp/bad.img" witharg 2>&1); rc=$?
case "$out" in
*"/bin/args does not match its hash"*) [ $rc -ne 0 ] &&
	ok "a tampered interpreter: refused ($out)" || bad "tampered: rc $rc";;
*) bad "tampered interpreter: '$out' ($rc)";;
esac

[ $fails -eq 0 ] && echo "vmm_script_boot: all passed" || echo "vmm_script_boot: $fails failed"
[ $fails -eq 0 ]
