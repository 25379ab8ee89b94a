#!/usr/bin/env bash
# A few programs this project did not write, in keep run and natively,
# stdout and exit status compared byte for byte: busybox applets from the
# toolbox stock image and bash-static scripts from tests/compat/bash/.
# The short subset of `make check-compat` (tests/compat/, docs/compat.md)
# that make check runs: cases that need no program but the one run
# (bash's subshells, here-documents and $(...) fork bash itself and
# talk through pipes), so each one must agree. The native side runs in
# a copy of the same files with an empty environment.
source "$(dirname "$0")/../lib/guest.sh"
BB=/bin/busybox; BASH_BIN=/bin/bash-static
for b in "$BB" "$BASH_BIN"; do
	[ -x "$b" ] || { echo "FAIL: no $b (make deps installs it)"; exit 1; }
done

fix=$tmp/fixture; mkdir -p "$fix/dir/sub"
printf 'pear 3\napple 10\nfig 7\napple 10\nbanana 1\n' >"$fix/fruit.txt"
seq 1 2000 >"$fix/numbers.txt"
printf 'hello\n' >"$fix/dir/a"; printf 'world\n' >"$fix/dir/sub/b"

# same NAME NATIVE_CMD... -- KEEP_RUN_ARGS...
same() {
	local name=$1 nat=() ; shift
	while [ "$1" != -- ]; do nat+=("$1"); shift; done; shift
	rm -rf "$tmp/n" "$tmp/k"; cp -a "$fix" "$tmp/n"; cp -a "$fix" "$tmp/k"
	(cd "$tmp/n" && env -i "${nat[@]}") </dev/null >"$tmp/n.out" 2>/dev/null
	local nrc=$?
	"$KEEP" run --timeout 20s --workspace "$tmp/k" "$@" </dev/null >"$tmp/k.out" 2>"$tmp/k.err"
	local krc=$?
	if [ $nrc -eq $krc ] && cmp -s "$tmp/n.out" "$tmp/k.out"; then
		ok "$name"
	else
		bad "$name: exit native $nrc, keep $krc: $(diff "$tmp/n.out" "$tmp/k.out" | head -8) $(head -c 300 "$tmp/k.err")"
	fi
}
toolbox=(--trust "$B/keys/dev.public" "$B/images/toolbox.img")
applet() { same "busybox $*" "$BB" "$@" -- "${toolbox[@]}" "$@"; }

applet sort -u fruit.txt
applet awk '{s+=$2} END {print s}' fruit.txt
applet sha256sum fruit.txt numbers.txt
applet sed -n 's/apple/APPLE/p' fruit.txt
applet grep -c apple fruit.txt
applet grep nothing fruit.txt
applet wc -l numbers.txt
applet find dir -type f
applet stat -c '%n %s %F %a' fruit.txt dir
for s in arith strings status files heredoc subst; do
	cp "tests/compat/bash/$s.sh" "$fix/script.sh"
	same "bash $s.sh" "$BASH_BIN" script.sh -- "$BASH_BIN" /script.sh
done

echo "vmm_compat: $fails failures"
[ $fails -eq 0 ]
