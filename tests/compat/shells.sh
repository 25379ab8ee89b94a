#!/usr/bin/env bash
# Debian's bash-static and sash running scripts (tests/compat/bash/*.sh,
# tests/compat/sash/*.sash) in `keep run` and natively: the same binaries,
# the same script, the same files, stdout and the exit status compared
# byte for byte. Prints one line per script and "N of M agree" per shell.
# docs/compat.md names every script that does not agree and why.
#
# The guest runs an image of each shell that also holds Debian's
# busybox-static as /bin/busybox and as the few commands the scripts run
# (sort, head, tr, wc, cat, sh, sleep), as a user's image would. The
# native side runs the same binaries chrooted into its copy of the
# workspace holding the same files at the same paths, as uid and gid
# 1000, on one CPU, with an empty environment, as pid 1 with a /proc
# (tests/compat/lib.sh).
set -u
cd "$(dirname "$0")/../.."
B=${B:-build}; KEEP=$B/bin/keep; BB=/bin/busybox
BASH_BIN=/bin/bash-static; SASH_BIN=/bin/sash
source tests/lib/platform.sh # a guest platform: kvm or trap, or a loud skip
for b in "$BB" "$BASH_BIN" "$SASH_BIN"; do
	if [ ! -x "$b" ]; then echo "SKIP: no $b (make check-compat installs it)"; exit 77; fi
done
if [ "$(id -u)" -ne 0 ]; then
	echo "SKIP: the native side chroots: run as root"; exit 77
fi
. tests/compat/lib.sh
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
APPLETS="sort head tr wc cat sh sleep"

# The images: the shell, busybox, and busybox as each command.
image() {
	local name=$1 prog=$2 files=(--file "/bin/busybox=$BB") a
	for a in $APPLETS; do files+=(--file "/bin/$a=$BB"); done
	"$KEEP" image build --name "$name-compat" --version 1 --memory 64M \
	    --command "$name=$prog" "${files[@]}" "$prog" -o "$tmp/$name.img" >/dev/null &&
	    "$KEEP" image sign --key "$B/keys/dev.secret" "$tmp/$name.img" >/dev/null || {
		echo "FAIL: cannot build the $name image"; exit 1; }
}
image bash "$BASH_BIN"
image sash "$SASH_BIN"

# The files every script starts from.
fix=$tmp/fixture; mkdir -p "$fix/dir"
printf 'pear 3\napple 10\nfig 7\n' >"$fix/fruit.txt"
printf 'hello\n' >"$fix/dir/a"

# run SHELL SCRIPT ARGS...: one script in both places.
agree=0; total=0; differ=()
run() {
	local shell=$1 script=$2 prog name; shift 2
	case $shell in bash) prog=$BASH_BIN ;; sash) prog=$SASH_BIN ;; esac
	name="$shell $(basename "$script")"
	total=$((total+1))
	rm -rf "$tmp/n" "$tmp/k"; cp -a "$fix" "$tmp/n"; cp -a "$fix" "$tmp/k"
	cp "$script" "$tmp/n/script"; cp "$script" "$tmp/k/script"
	chown -R 1000:1000 "$tmp/n"
	mkdir -p "$tmp/n/bin" "$tmp/n/dev" "$tmp/n/tmp"; chmod 1777 "$tmp/n/tmp"
	cp "$prog" "$tmp/n$prog"; cp "$BB" "$tmp/n/bin/busybox"
	for a in $APPLETS; do ln -s busybox "$tmp/n/bin/$a"; done
	mknod -m 666 "$tmp/n/dev/null" c 1 3
	native "$tmp/n" "$prog" "$@" </dev/null >"$tmp/n.out" 2>/dev/null
	local nrc=$?
	"$KEEP" run --timeout 20s --workspace "$tmp/k" --trust "$B/keys/dev.public" \
	    "$tmp/$shell.img" "$shell" "$@" </dev/null >"$tmp/k.out" 2>/dev/null; local krc=$?
	if [ $nrc -eq $krc ] && cmp -s "$tmp/n.out" "$tmp/k.out"; then
		agree=$((agree+1)); echo "agree: $name"
	else
		differ+=("$name"); echo "DIFFER: $name (exit native $nrc, keep $krc)"
		diff "$tmp/n.out" "$tmp/k.out" | head -6 | sed 's/^/    /'
	fi
}

status=0
for s in tests/compat/bash/*.sh; do run bash "$s" /script; done
echo "bash: $agree of $total agree"
[ $agree -eq $total ] || status=1
bash_agree=$agree bash_total=$total agree=0 total=0
for s in tests/compat/sash/*.sash; do run sash "$s" -f /script; done
echo "sash: $agree of $total agree"
[ $agree -eq $total ] || status=1
if [ ${#differ[@]} -gt 0 ]; then
	echo "shells: differ:"
	printf '  %s\n' "${differ[@]}"
fi
echo "shells: bash $bash_agree of $bash_total, sash $agree of $total agree"
exit $status
