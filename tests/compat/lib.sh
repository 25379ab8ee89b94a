# Shared by the compatibility suites: how the native side is run.
#
# native ROOT PROG ARGS...: PROG (a path inside ROOT) as the guest is
# placed: chrooted into ROOT, as uid and gid 1000 with groups 1000, on
# the host's CPUs (the guest sees them too), with an empty environment, as pid 1 of its own pid namespace
# (the guest is pid 1) with a /proc of that namespace at ROOT/proc (the
# guest has a /proc). stdin, stdout and stderr are the caller's. The
# mounts live in a private mount namespace and go with it.
# NATIVE_PID1=0: an ordinary pid in a pid namespace of its own (as pid 1,
# signals without a handler are ignored, which some test suites trip
# over: CPython's kills its own children and waits for them).
native() {
	local root=$1 pid1=${NATIVE_PID1:-1}; shift
	mkdir -p "$root/proc"
	unshare --mount --pid --fork --propagation private sh -c '
		root=$1; pid1=$2; shift 2
		mount -t proc proc "$root/proc" || exit 126
		set -- "$(command -v chroot)" \
		    --userspec=1000:1000 --groups=1000 "$root" "$@"
		[ "$pid1" = 1 ] && exec env -i "$@"
		env -i "$@"' sh "$root" "$pid1" "$@"
}
