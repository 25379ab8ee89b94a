#!/usr/bin/env bash
# Each process's seccomp filter, loaded into a test process (keepd's hidden
# -S flag), allows a call on its list and kills the process (SIGSYS) on a
# call outside it.
set -u
cd "$(dirname "$0")/../.."
KEEPD=${B:-build}/bin/keepd
[ -x "$KEEPD" ] || { echo "FAIL: no $KEEPD (run make)"; exit 1; }
fail=0

expect_alive() { # name syscall
	out=$(timeout 10 "$KEEPD" -S "$1" -X "$2" 2>&1); rc=$?
	if [ "$rc" -ne 0 ] || ! grep -q survived <<<"$out"; then
		echo "FAIL: $1: $2 should be allowed (exit $rc): $out"; fail=1
	else
		echo "ok: $1: $2 allowed"
	fi
}

expect_killed() { # name syscall
	out=$(timeout 10 "$KEEPD" -S "$1" -X "$2" 2>&1); rc=$?
	# 159 = 128 + SIGSYS: SECCOMP_RET_KILL_PROCESS.
	if [ "$rc" -ne 159 ] || grep -q survived <<<"$out" ||
	    ! grep -q "filter installed" <<<"$out"; then
		echo "FAIL: $1: $2 should kill with SIGSYS (exit $rc): $out"; fail=1
	else
		echo "ok: $1: $2 killed"
	fi
}

for p in front policy vmm store egress; do
	expect_alive "$p" getpid
	for sc in ptrace execve fork clone mount setuid chroot socket \
	    bpf init_module kexec_load process_vm_readv; do
		# The trap platform's stub, started by the vmm's vm processes
		# under their filters, mounts its empty root and chroots
		# there (docs/vmm.md): allowed, and refused by the kernel to a
		# process without capabilities.
		case $p:$sc in vmm:mount | vmm:chroot) continue ;; esac
		expect_killed "$p" "$sc"
	done
done
# Calls only some processes keep.
for p in front policy egress; do expect_killed "$p" ioctl; done
for p in front policy; do expect_killed "$p" openat; done
for p in policy store; do expect_killed "$p" accept4; done
# The vmm's filter holds its vm processes' rows (filters stack): a
# guest's accept, connect and sendto (docs/vmm.md, "Sockets").
expect_alive vmm accept4
expect_alive front accept4
# egress: listen and accept4 for an injecting relay's loopback pair
# (docs/egress.md, "Secrets injected at egress"); plain accept is not.
expect_alive egress accept4
expect_killed egress accept
expect_alive store fdatasync
expect_killed front fdatasync
# A `keepd: vm` process: KVM and its workspace, nothing else; not even
# fork or opening a path outside openat2's RESOLVE_BENEATH.
expect_alive vm getpid
expect_alive vm openat2
# mount, chroot and memfd_create are the trap platform's (above).
for sc in ptrace execve fork clone setuid socket bpf \
    openat kill process_vm_readv unshare setns; do
	expect_killed vm "$sc"
done
# A guest's sockets are its vm process's (docs/vmm.md, "Sockets"); which
# families socket() may make tests/integration/vmm_sockets.sh checks.
for sc in accept4 connect sendto bind listen; do expect_alive vm "$sc"; done
# The vmm's namespace maker (host/vm_confine.h): namespaces for sandboxes,
# nothing else (connect and sendto are the common syslog rows').
expect_alive netns getpid
for sc in ptrace execve clone mount setuid socket bind accept4 \
    setns chroot bpf kill process_vm_readv; do
	expect_killed netns "$sc"
done
# A sandbox's port connector (host/vmmproc/vmm_port.c): an internet
# stream socket connected and passed back, nothing else: no file, no
# fork, no AF_UNIX socket (2 is AF_INET, 10 AF_INET6, 1 AF_UNIX), no
# bind, listen or accept, no namespace, no signal.
expect_alive port-connector getpid
for sc in connect recvfrom socket:2 socket:10; do
	expect_alive port-connector "$sc"
done
for sc in socket:1 socket:16 openat open openat2 execve fork clone clone3 \
    bind listen accept4 sendto setns unshare kill ptrace mount chroot \
    ioctl setsockopt process_vm_readv; do
	expect_killed port-connector "$sc"
done
# The vmm forks vm processes, with glibc fork's flags only.
expect_killed vmm clone
# An unknown process name is a usage error, not a silent pass.
timeout 10 "$KEEPD" -S nosuch -X getpid >/dev/null 2>&1
[ $? -eq 2 ] || { echo "FAIL: -S nosuch should exit 2"; fail=1; }
exit $fail
