#!/usr/bin/env bash
# Dynamic executables under keep run: a hello world built with plain gcc
# and a program that dlopen()s a library, loaded by the image's
# ld-linux-x86-64.so.2 from the image's files; a program whose interpreter
# the image lacks is refused before boot.
source "$(dirname "$0")/../lib/guest.sh"
G=$B/guests/dynamic

mkdir "$tmp/k" && "$KEEP" key generate --out "$tmp/k" >/dev/null || exit 1
LD=/lib64/ld-linux-x86-64.so.2; LIBC=/lib/x86_64-linux-gnu/libc.so.6
image() { # out program [--file ...]
	local out=$1 prog=$2; shift 2
	"$KEEP" image build --name dyn --version 1 "$@" "$prog" -o "$out" &&
	"$KEEP" image sign --key "$tmp/k/keep.secret" "$out"
}
image "$tmp/hello.img" "$G/hello" --file "$LD=$LD" --file "$LIBC=$LIBC" || exit 1
image "$tmp/dlopen.img" "$G/dlopen" --file "$LD=$LD" --file "$LIBC=$LIBC" \
	--file "/usr/lib/x86_64-linux-gnu/libsquare.so=$G/libsquare.so" || exit 1
image "$tmp/noloader.img" "$G/hello" --file "$LIBC=$LIBC" || exit 1
image "$tmp/nolib.img" "$G/dlopen" --file "$LD=$LD" --file "$LIBC=$LIBC" || exit 1
T="--trust $tmp/k/keep.public"

out=$("$KEEP" run $T "$tmp/hello.img" hello a b 2>&1); rc=$?
want=$(cd "$G" && exec -a hello ./hello a b); wrc=$?
[ "$out" = "$want" ] && [ $rc -eq $wrc ] && ok "gcc hello: '$out' ($rc)" ||
	bad "gcc hello: '$out' ($rc), native '$want' ($wrc)"

out=$("$KEEP" run $T "$tmp/dlopen.img" dlopen 2>&1); rc=$?
[ "$out" = "square(7) = 49" ] && [ $rc -eq 0 ] && ok "dlopen: $out" ||
	bad "dlopen: '$out' ($rc)"

out=$("$KEEP" run $T "$tmp/nolib.img" dlopen 2>&1); rc=$?
case "$out" in
"dlopen: libsquare.so: cannot open shared object file"*) [ $rc -eq 1 ] &&
	ok "dlopen of a library the image lacks fails in the guest" ||
	bad "missing library: rc $rc";;
*) bad "missing library: '$out' ($rc)";;
esac

out=$("$KEEP" run $T "$tmp/noloader.img" hello 2>&1); rc=$?
case "$out" in
*"interpreter /lib64/ld-linux-x86-64.so.2 is not in the image"*)
	[ $rc -eq 126 ] && ok "no loader in the image: refused before boot" ||
	bad "no loader: rc $rc";;
*) bad "no loader: '$out' ($rc)";;
esac

# ld.so and CPython find files by listing the image's directories: the
# names must come back whole (they were written 5 bytes late, past
# d_name's offset, so every name read as empty).
"$KEEP" image build --name ls --version 1 --command ls \
	--file "/lib/a/one=$G/hello" --file "/lib/a/two=$G/hello" \
	--file "/lib/b/x=$G/hello" /bin/busybox -o "$tmp/ls.img" &&
	"$KEEP" image sign --key "$tmp/k/keep.secret" "$tmp/ls.img" || exit 1
out=$("$KEEP" run $T "$tmp/ls.img" ls /lib /lib/a 2>&1 | tr '\n' ' ')
[ "$out" = "/lib: a b  /lib/a: one two " ] && ok "image directories list" ||
	bad "image directories: '$out'"

[ $fails -eq 0 ] && echo "vmm_dynamic: all passed" || echo "vmm_dynamic: $fails failed"
[ $fails -eq 0 ]
