#!/usr/bin/env bash
# Run a command where /dev/kvm opens, on a machine where it does not
# (docs/development.md, "Working on the VMM without /dev/kvm").
#
#   tests/nested-kvm.sh [--mem MIB] [--timeout SECONDS] -- COMMAND...
#
# Boots Debian's own kernel (linux-image-amd64) under QEMU's software
# emulation, TCG, with AMD's SVM and nested paging emulated, so kvm_amd
# loads inside and /dev/kvm is a real hardware-style KVM. The host's /
# is shared read-write over 9p, so COMMAND sees this checkout, its build
# and every installed package; it runs from the current directory, as
# root, with /tmp and /run fresh tmpfs and only loopback for a network. Its
# output comes back on stdout, line by line, and its exit status is this
# script's (124 when it did not finish: the timeout, or a VM that did
# not come up; the VM's console says why; 123 when the VM stalled: its
# kernel not at /init after KEEP_NESTED_BOOT seconds, 180 unless set, or
# its CPUs KEEP_NESTED_STALL seconds in a soft lockup, 120 unless set,
# or the command silent for KEEP_NESTED_QUIET seconds, 600 unless set:
# make check-kvm's tests each print as they end, within minutes).
# KEEP_NESTED_CPUS sets the VM's CPUs (this machine's count unless set).
#
# The variables KEEP_*, CI, B and VERBOSE travel inside; give others as
# `-- env NAME=VALUE COMMAND`. Inside, KEEP_TEST_NESTED=tcg. The first line printed names the kernel
# booted. Everything inside runs 50-100x slower than natively: it checks
# behaviour, never speed. KEEP_NESTED_QEMU_ARGS adds options to QEMU's
# command line (to see what the emulated CPU did: "-d int -D FILE" logs
# every exception with the registers). mk/kvm.mk installs the packages it needs
# (qemu-system-x86, linux-image-amd64, busybox-static).
set -euo pipefail
mem=6144 limit=1800
while [ $# -gt 0 ]; do
	case $1 in
	--mem) mem=$2; shift 2 ;;
	--timeout) limit=$2; shift 2 ;;
	--) shift; break ;;
	*) break ;;
	esac
done
if [ $# -eq 0 ]; then
	echo "usage: $0 [--mem MIB] [--timeout SECONDS] -- COMMAND..." >&2
	exit 2
fi
die() { echo "nested-kvm: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "needs root (the 9p share passes the host's owners through)"
command -v qemu-system-x86_64 >/dev/null || die "no qemu-system-x86_64 (apt-get install qemu-system-x86)"
busybox=$(command -v busybox || true)
[ -n "$busybox" ] && file -L "$busybox" | grep -q 'statically linked' ||
    die "no static busybox (apt-get install busybox-static)"

# The newest Debian kernel that has kvm_amd among its modules (the
# machine's own kernel may be a custom one without them).
kernel=
for k in $(ls /boot/vmlinuz-* 2>/dev/null | sort -rV); do
	v=${k#/boot/vmlinuz-}
	if ls /lib/modules/"$v"/kernel/arch/x86/kvm/kvm-amd.ko* >/dev/null 2>&1; then
		kernel=$k
		break
	fi
done
[ -n "$kernel" ] || die "no kernel in /boot with kvm_amd (apt-get install linux-image-amd64)"
kver=${kernel#/boot/vmlinuz-}
mods=/lib/modules/$kver/kernel

# Not under /tmp: inside, /tmp is a fresh tmpfs and this must be seen.
work=$(mktemp -d /var/tmp/keep-nested.XXXXXX)
qemu=
cleanup() {
	[ -n "$qemu" ] && kill "$qemu" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The initramfs: busybox and the modules, in dependency order (the
# kernel has no modprobe to resolve it here): KVM, then virtio and 9p.
mkdir -p "$work/root"/{bin,proc,sys,dev,mods,mnt}
cp "$busybox" "$work/root/bin/busybox"
loaded=
for m in virt/lib/irqbypass drivers/crypto/ccp/ccp arch/x86/kvm/kvm \
    arch/x86/kvm/kvm-amd drivers/virtio/virtio_ring drivers/virtio/virtio \
    drivers/virtio/virtio_pci_modern_dev drivers/virtio/virtio_pci_legacy_dev \
    drivers/virtio/virtio_pci drivers/char/virtio_console net/9p/9pnet net/9p/9pnet_virtio \
    fs/netfs/netfs fs/fscache/fscache fs/9p/9p; do
	f=$(ls "$mods/$m".ko* 2>/dev/null | head -n 1) || true
	[ -n "$f" ] || continue # built in, or absent from this version
	b=$(basename "$f")
	case $b in
	*.ko.xz) xz -dc "$f" >"$work/root/mods/${b%.xz}"; b=${b%.xz} ;;
	*.ko.zst) zstd -qdc "$f" >"$work/root/mods/${b%.zst}"; b=${b%.zst} ;;
	*) cp "$f" "$work/root/mods/$b" ;;
	esac
	loaded="$loaded $b"
done

# What travels: the command (quoted once more for the inner bash), the
# directory, and the environment named above.
printf '%q ' "$@" >"$work/cmd"
pwd >"$work/cwd"
export -p | grep -E '^declare -x (KEEP_[A-Za-z0-9_]*|CI|B|VERBOSE)=' >"$work/env" || true
# Tests that meet one of TCG's own mistakes say so (docs/vmm.md).
echo 'export KEEP_TEST_NESTED=tcg' >>"$work/env"

# /init inside. Output goes to a virtio console, /dev/hvc0 (a serial
# port's transmit interrupt was seen lost under TCG, its output stopped
# mid-line), the exit status to a file on the shared /.
cat >"$work/root/init" <<INIT
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
for m in $loaded; do insmod /mods/\$m 2>/dev/null; done
if ! mount -t 9p -o trans=virtio,version=9p2000.L,msize=1048576,cache=loose host /mnt; then
	echo "nested-kvm: the 9p mount failed" >/dev/hvc0; poweroff -f
fi
: >/mnt$work/booted
mount -t proc proc /mnt/proc; mount -t sysfs sys /mnt/sys; mount -t devtmpfs dev /mnt/dev
mkdir -p /mnt/dev/pts /mnt/dev/shm
mount -t devpts devpts /mnt/dev/pts; mount -t tmpfs shm /mnt/dev/shm
ln -sf /proc/self/fd /mnt/dev/fd
ln -sf /proc/self/fd/0 /mnt/dev/stdin
ln -sf /proc/self/fd/1 /mnt/dev/stdout
ln -sf /proc/self/fd/2 /mnt/dev/stderr
mount -t tmpfs tmp /mnt/tmp -o mode=1777
# /run is the VM's own too: the host's sockets there (keep's template
# holders) are not this kernel's, and a socket cannot be bound on 9p.
mount -t tmpfs run /mnt/run -o mode=0755
[ -c /mnt/dev/kvm ] || echo "nested-kvm: no /dev/kvm inside (kvm_amd did not load)" >/dev/hvc0
chroot /mnt /bin/sh -c 'ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up'
chroot /mnt /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    HOME=/root TERM=dumb /bin/bash -c '. $work/env; cd "\$(cat $work/cwd)" && eval "\$(cat $work/cmd)"' \
    </dev/null >/dev/hvc0 2>&1
echo \$? >/mnt$work/rc
sync
poweroff -f
INIT
chmod +x "$work/root/init"
(cd "$work/root" && find . | cpio -o -H newc 2>/dev/null | gzip -1) >"$work/initrd.gz"

cpus=${KEEP_NESTED_CPUS:-$(nproc)}
echo "nested-kvm: Debian kernel $kver under QEMU TCG (EPYC-v3,+svm,+npt), $cpus CPUs, $mem MiB"
: >"$work/out"
timeout "$limit" qemu-system-x86_64 -accel tcg,thread=multi -smp "$cpus" -m "$mem" \
    -cpu EPYC-v3,+svm,+npt -kernel "$kernel" -initrd "$work/initrd.gz" \
    -append "console=ttyS0 quiet loglevel=4 panic=-1" \
    -virtfs local,path=/,mount_tag=host,security_model=passthrough,multidevs=remap,id=host \
    -nic none -nographic -no-reboot -monitor none -display none ${KEEP_NESTED_QEMU_ARGS:-} \
    -serial file:"$work/console" -device virtio-serial-pci \
    -chardev file,id=out,path="$work/out" -device virtconsole,chardev=out \
    </dev/null >"$work/qemu.log" 2>&1 &
qemu=$!
# A VM whose emulated CPUs stopped: TCG itself wedged, seen in CI
# (both CPUs in a soft lockup from two minutes after boot until the
# timeout, half an hour later) and here (a kernel that never reached
# /init, QEMU spinning both host CPUs for twenty minutes). The kernel's
# watchdog says the first on the console, a missing mark on the shared
# / the second (a boot takes ten seconds here); neither is a test's
# doing (a slow test still schedules), so the VM is stopped there and
# the caller told (exit 123) rather than kept waiting for the limit. A
# VM wedged so that even the watchdog is silent shows as a command that
# prints nothing for ten minutes.
stall_after=${KEEP_NESTED_STALL:-120} boot_limit=${KEEP_NESTED_BOOT:-180}
quiet_limit=${KEEP_NESTED_QUIET:-600}
booted_by=$(($(date +%s) + boot_limit))
(
	while kill -0 "$qemu" 2>/dev/null; do
		sleep 10
		now=$(date +%s)
		if [ ! -e "$work/booted" ] && [ "$now" -ge "$booted_by" ]; then
			echo "the kernel did not reach /init in ${boot_limit}s" >"$work/stalled"
			kill "$qemu" 2>/dev/null
			break
		fi
		if [ -e "$work/booted" ] &&
		    [ $((now - $(stat -c %Y "$work/out"))) -ge "$quiet_limit" ]; then
			echo "the command printed nothing for ${quiet_limit}s" >"$work/stalled"
			kill "$qemu" 2>/dev/null
			break
		fi
		if grep -Eo 'soft lockup - CPU#[0-9]+ stuck for [0-9]+s' "$work/console" 2>/dev/null |
		    awk -v m="$stall_after" '{ s = $NF; sub(/s$/, "", s); if (s + 0 >= m) f = 1 } END { exit !f }'; then
			echo "its CPUs in a soft lockup for ${stall_after}s" >"$work/stalled"
			kill "$qemu" 2>/dev/null
			break
		fi
	done
) &
watcher=$!
# The command's output as it comes, line by line (tr would hold it back
# in its buffer: what was printed must survive a timeout).
tail -n +1 --pid="$qemu" -f "$work/out" | sed -u 's/\r$//'
wait "$qemu" || true
qemu=
kill "$watcher" 2>/dev/null || true
wait "$watcher" 2>/dev/null || true
if [ ! -s "$work/rc" ]; then
	if [ -e "$work/stalled" ]; then
		echo "nested-kvm: the VM stalled ($(cat "$work/stalled")) and was" \
		    "stopped; the console said:" >&2
		tail -n 6 "$work/console" >&2 || true
		exit 123
	fi
	echo "nested-kvm: the command did not finish (timeout ${limit}s, or the VM failed);" \
	    "QEMU and the console said:" >&2
	grep -v "TCG doesn't support" "$work/qemu.log" | tail -n 5 >&2
	tail -n 15 "$work/console" >&2 || true
	exit 124
fi
exit "$(cat "$work/rc")"
