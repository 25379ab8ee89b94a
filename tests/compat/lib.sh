# Shared by the compatibility suites: how the native side is run.
#
# native ROOT PROG ARGS...: PROG (a path inside ROOT) as the guest is
# placed: chrooted into ROOT, as uid and gid 1000 with groups 1000, on
# one CPU, with an empty environment, as pid 1 of its own pid namespace
# (the guest is pid 1) with a /proc of that namespace at ROOT/proc (the
# guest has a /proc). stdin, stdout and stderr are the caller's. The
# mounts live in a private mount namespace and go with it.
native() {
	local root=$1; shift
	mkdir -p "$root/proc"
	unshare --mount --pid --fork --propagation private sh -c '
		root=$1; shift
		mount -t proc proc "$root/proc" || exit 126
		exec env -i "$(command -v taskset)" -c 0 "$(command -v chroot)" \
		    --userspec=1000:1000 --groups=1000 "$root" "$@"' sh "$root" "$@"
}
