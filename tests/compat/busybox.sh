#!/usr/bin/env bash
# Debian's busybox-static, applet by applet, in `keep run` and natively:
# the same binary, the same arguments, the same files (each side gets its
# own fresh copy of a fixture workspace), stdout and the exit status
# compared byte for byte. Prints one line per case and "N of M agree".
# docs/vmm.md names every case that does not agree and why.
#
# The guest side runs an image of this busybox with every applet used as
# a command (built here, signed with the development key), as a user's
# image would be. The native side runs the same binary as the guest is
# placed: chrooted into its copy of the workspace (with /bin/busybox,
# /tmp, /dev/null, /dev/zero and /dev/stdin, as the guest has them), as
# uid and gid 1000 with groups 1000, on one CPU, with an empty
# environment, as pid 1 with a /proc (tests/compat/lib.sh).
set -u
cd "$(dirname "$0")/../.."
B=${B:-build}; KEEP=$B/bin/keep; BB=/bin/busybox
source tests/lib/platform.sh # a guest platform: kvm or trap, or a loud skip
if [ ! -x "$BB" ] || ! "$BB" --list >/dev/null 2>&1; then
	echo "SKIP: no busybox-static at $BB"; exit 77
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "SKIP: the native side chroots: run as root"; exit 77
fi
. tests/compat/lib.sh
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

# The image: one command per applet the cases below use (an image holds
# at most 256), all /bin/busybox.
img=$tmp/busybox.img
cmds=()
for a in $(awk '/^run /{print $2}' "$0" | sort -u); do
	cmds+=(--command "$a=/bin/busybox")
done
"$KEEP" image build --name busybox-compat --version 1 --memory 64M \
    "${cmds[@]}" "$BB" -o "$img" >/dev/null &&
    "$KEEP" image sign --key "$B/keys/dev.secret" "$img" >/dev/null || {
	echo "FAIL: cannot build the busybox image"; exit 1; }

# The fixture every case starts from.
fix=$tmp/fixture; mkdir -p "$fix/dir/sub"
printf 'pear 3\napple 10\nfig 7\napple 10\nbanana 1\n' >"$fix/fruit.txt"
printf 'one\ttwo\tthree\nfour\tfive\tsix\n' >"$fix/tabs.txt"
printf 'line1\r\nline2\r\n' >"$fix/dos.txt"
seq 1 2000 >"$fix/numbers.txt"
head -c 4096 /dev/zero | tr '\0' 'q' >"$fix/q.bin"
printf 'hello\n' >"$fix/dir/a"; printf 'world\n' >"$fix/dir/sub/b"
ln -s a "$fix/dir/link"
printf 'a\nb\nc\n' >"$fix/abc"; printf 'a\nB\nc\nd\n' >"$fix/abd"
printf '1 + 2 * 3\n' >"$fix/expr.bc"
printf 'x=1\n' >"$fix/script.sh"
(cd "$fix" && gzip -c fruit.txt >fruit.gz && tar cf arch.tar dir fruit.txt 2>/dev/null)

agree=0; total=0; differ=()
# run CASE: the applet and its arguments, one shell word each
run() {
	local name="$*"
	total=$((total+1))
	rm -rf "$tmp/n" "$tmp/k"; cp -a "$fix" "$tmp/n"; cp -a "$fix" "$tmp/k"
	chown -R 1000:1000 "$tmp/n"
	mkdir -p "$tmp/n/bin" "$tmp/n/dev" "$tmp/n/tmp"; chmod 1777 "$tmp/n/tmp"
	cp "$BB" "$tmp/n/bin/busybox"; mknod -m 666 "$tmp/n/dev/null" c 1 3
	mknod -m 666 "$tmp/n/dev/zero" c 1 5; ln -s /proc/self/fd/0 "$tmp/n/dev/stdin"
	native "$tmp/n" /bin/busybox "$@" </dev/null >"$tmp/n.out" 2>/dev/null
	local nrc=$?
	"$KEEP" run --timeout 20s --workspace "$tmp/k" --trust "$B/keys/dev.public" \
	    "$img" "$@" </dev/null >"$tmp/k.out" 2>/dev/null; local krc=$?
	if [ $nrc -eq $krc ] && cmp -s "$tmp/n.out" "$tmp/k.out"; then
		agree=$((agree+1)); echo "agree: $name"
	else
		differ+=("$name"); echo "DIFFER: $name (exit native $nrc, keep $krc)"
		diff "$tmp/n.out" "$tmp/k.out" | head -6 | sed 's/^/    /'
	fi
}

run cat fruit.txt
run cat -n fruit.txt
run tac fruit.txt
run rev fruit.txt
run nl fruit.txt
run wc fruit.txt numbers.txt
run wc -l numbers.txt
run head -n 3 numbers.txt
run tail -n 3 numbers.txt
run tail -c 20 numbers.txt
run sort fruit.txt
run sort -r -k2 -n fruit.txt
run sort -u fruit.txt
run uniq -c fruit.txt
run cut -f2 tabs.txt
run cut -c1-3 fruit.txt
run paste abc abd
run expand tabs.txt
run fold -w 4 fruit.txt
run tr a-z A-Z
run grep -n apple fruit.txt
run grep -c a fruit.txt
run grep -r world dir
run grep nothing fruit.txt
run egrep 'app|fig' fruit.txt
run sed -n 2,3p fruit.txt
run sed s/apple/APPLE/g fruit.txt
run awk '{s+=$2} END {print s}' fruit.txt
run comm abc abd
run cmp abc abd
run diff abc abd
run od -c abc
run hexdump -C abc
run xxd abc
run strings q.bin
run md5sum fruit.txt numbers.txt
run sha1sum fruit.txt
run sha256sum fruit.txt
run sha512sum fruit.txt
run sha3sum fruit.txt
run crc32 fruit.txt
run base64 fruit.txt
run uuencode fruit.txt fruit.txt
run dos2unix -u dos.txt
run seq 5 2 15
run factor 360 1001
run expr 6 '*' 7
run bc expr.bc
run dc -e '2 3 + p'
run printf '%s-%d\n' x 5
run echo hello world
run basename /a/b/c.txt .txt
run dirname /a/b/c.txt
run true
run false
run test -f fruit.txt
run test -d fruit.txt
run ls dir
run ls -a dir
run ls -R dir
run find dir -name '*'
run find dir -type f
run du -s q.bin
run stat -c '%n %s %F' fruit.txt dir
run readlink dir/link
run realpath dir/link
run mkdir -p x/y/z
run mkdir dir
run rmdir dir
run touch newfile
run cp fruit.txt copy.txt
run cp -r dir dir2
run mv fruit.txt moved.txt
run rm fruit.txt
run rm nothing
run ln -s fruit.txt lnk
run ln fruit.txt hard
run chmod 600 fruit.txt
run chmod 600 nothing
run truncate -s 100 fruit.txt
run fallocate -l 8192 fa.bin
run dd if=numbers.txt of=out.bin bs=512 count=2
run split -l 500 numbers.txt
run gzip -c fruit.txt
run gzip -d -c fruit.gz
run tar tf arch.tar
run cpio --help
run whoami
run id
run groups
run logname
run nproc
run uname -s -m
run arch
run tty
run pwd
run ls /
run ls -a /
run env
run printenv
run getopt ab: -a -b x
run sh -c 'echo $((6*7)); x=hi; echo $x'
run sh -c 'read a; echo got $a'
run sh -c 'test -e /dev/null && echo null exists'
run sh -c 'cd dir && pwd'
run sh -c 'echo one > made.txt; read x < made.txt; echo $x'
run sh -c 'for i in 1 2 3; do echo $i; done; exit 3'
run sleep 0.1
run usleep 1000
run touch -d '2009-02-13 23:31:30' fruit.txt
run stat -c '%a %s' dir/a
run mkdir -m 700 private
run cat /dev/null
run head -c 16 /dev/zero
run ls /dev/null
run readlink /dev/stdin
run xargs echo

echo "busybox: $agree of $total agree"
if [ ${#differ[@]} -gt 0 ]; then
	echo "busybox: differ:"
	printf '  %s\n' "${differ[@]}"
fi
[ $agree -eq $total ]
