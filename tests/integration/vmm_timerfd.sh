#!/usr/bin/env bash
# timerfd (docs/vmm.md, "Pipes and waiting"): a guest timerfd is a host
# one on the host's clocks, which are the guest's. tests/guests/timerfd.c
# arms relative and absolute timers, counts an interval's expirations,
# reads timerfd_gettime and the old value settime gives back, waits in
# poll and epoll and in a forked child's blocking read, and makes
# Linux's errors: its output natively and in keep must be the same
# bytes. The alarm clocks need CAP_WAKE_ALARM, which a test run as root
# holds natively and a guest never does: EPERM, checked in keep alone.
# Before, every timerfd call was ENOSYS.
source "$(dirname "$0")/../lib/guest.sh"

"$G/timerfd" >"$tmp/native.out" 2>&1
"$KEEP" run "$G/timerfd" >"$tmp/keep.out" 2>&1
like_native "timerfd in keep" "$tmp/native.out" "$tmp/keep.out"
out=$("$KEEP" run "$G/timerfd" keep 2>&1)
[ "$out" = $'CLOCK_REALTIME_ALARM: Operation not permitted\nCLOCK_BOOTTIME_ALARM: Operation not permitted' ] &&
	ok "the alarm clocks are EPERM, as without CAP_WAKE_ALARM" || bad "alarm clocks: $out"

[ $fails -eq 0 ] || exit 1
