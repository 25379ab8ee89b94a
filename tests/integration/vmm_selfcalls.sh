#!/usr/bin/env bash
# Calls a process makes about itself, which keep answered ENOSYS before
# (docs/vmm.md, "Calls about the process itself"): mlock, munlock,
# mlock2, mlockall and munlockall with Linux's checks; personality kept
# and inherited by a fork; sched_setaffinity read back by
# sched_getaffinity, in a forked child too; tests/guests/selfcalls.c's
# output natively and in keep must be the same bytes. Then what a test
# run as root cannot compare: capget and capset as Linux answers a
# process without capabilities, and membarrier's private commands. Last
# the user's view: Python's os.sched_setaffinity read back.
source "$(dirname "$0")/../lib/guest.sh"
K=$B/keys/dev.public; I=$B/images

"$G/selfcalls" >"$tmp/native.out" 2>&1
"$KEEP" run "$G/selfcalls" >"$tmp/keep.out" 2>&1
like_native "mlock, personality and affinity" "$tmp/native.out" "$tmp/keep.out"

out=$("$KEEP" run "$G/selfcalls" keep 2>&1)
want="capget probe: 0
preferred version 0x20080522
capget v3: 0
caps 0 0 0 0 0 0
capget of no process: No such process
capset of nothing: 0
capset of CAP_CHOWN: Operation not permitted
membarrier query: 120
membarrier register private expedited: 0
membarrier private expedited: 0
membarrier global: Invalid argument
membarrier with a flag: Invalid argument"
[ "$out" = "$want" ] && ok "no capabilities, as uid 1000 holds; membarrier's private commands" ||
	bad "capabilities and membarrier: $out"

if [ -e "$I/python.img" ]; then
	out=$("$KEEP" run --trust "$K" "$I/python.img" python -c "
import os
n = len(os.sched_getaffinity(0))
os.sched_setaffinity(0, {0})
print(n == os.cpu_count(), os.sched_getaffinity(0))
try:
    os.sched_setaffinity(-1, {0})
except OSError as e:
    print(e.errno == 3)" 2>&1)
	[ "$out" = $'True {0}\nTrue' ] && ok "python's sched_setaffinity reads back" ||
		bad "python affinity: $out"
else
	bad "$I/python.img is missing (make images)"
fi

[ $fails -eq 0 ] || exit 1
