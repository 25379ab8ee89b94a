# Sourced by the fresh-machine tests (tests/deb_install.sh,
# tests/fresh_build.sh), bash: a fresh Debian 12 root made with
# `debootstrap --variant=minbase` from the mirror apt uses here, in
# $root, with /proc and /dev mounted; in_root runs a command in it
# (bounded by T seconds, 300 unless set). The first root made is kept as
# $B/deb-root-base.tar and later ones are unpacked from it. Needs root and
# debootstrap: without them the test says so and exits 77. Cleans up at
# exit; a test with its own EXIT trap calls debroot_cleanup from it.
if [ "$(id -u)" -ne 0 ]; then echo "SKIP: needs root (chroot, mount)"; exit 77; fi
if ! command -v debootstrap >/dev/null; then
	echo "SKIP: needs debootstrap (apt-get install debootstrap)"
	exit 77
fi
mirror=$(sed -n 's/^URIs: *\([^ ]*debian\)$/\1/p' /etc/apt/sources.list.d/*.sources \
    2>/dev/null | head -n 1)
[ -n "$mirror" ] || mirror=$(sed -n 's/^deb \(\[[^]]*\] \)\{0,1\}\(http[^ ]*\) bookworm .*/\2/p' \
    /etc/apt/sources.list 2>/dev/null | head -n 1)
[ -n "$mirror" ] || { echo "FAIL: no Debian mirror in /etc/apt/sources.list*"; exit 1; }

base=$B/deb-root-base.tar
root=$(mktemp -d /var/tmp/keep-deb-root.XXXXXX) && chmod 0755 "$root" || exit 1
debroot_cleanup() {
	local m
	for m in "$root/dev" "$root/proc"; do
		mountpoint -q "$m" && umount -R "$m"
	done
	rm -rf --one-file-system "$root"
}
trap debroot_cleanup EXIT
in_root() { timeout "${T:-300}" chroot "$root" /usr/bin/env -i \
    PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root DEBIAN_FRONTEND=noninteractive "$@"; }

if [ ! -s "$base" ]; then
	echo "debootstrap --variant=minbase bookworm from $mirror"
	mkdir -p "$(dirname "$base")"
	timeout 900 debootstrap --variant=minbase bookworm "$root" "$mirror" \
	    >"$root.debootstrap.log" 2>&1 ||
	    { tail -n 20 "$root.debootstrap.log"; echo "FAIL: debootstrap"; exit 1; }
	rm -f "$root.debootstrap.log"
	tar -C "$root" -cf "$base.tmp" . && mv "$base.tmp" "$base"
else
	tar -C "$root" -xf "$base"
fi
mount -t proc proc "$root/proc"
mount --rbind /dev "$root/dev"
cp /etc/resolv.conf "$root/etc/resolv.conf"
