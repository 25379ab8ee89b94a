#!/usr/bin/env bash
# The guest's vDSO (docs/vmm.md "Time"): its clocks agree with the VMM's
# clock_gettime and never run backwards, in a process and in a forked
# child; its data page is read-only to the guest; glibc's CPython reads
# the time without a single clock_gettime exit, and the time it reads
# lies between the host's readings before and after the run.
# On either platform; on trap the guest reads the host's TSC at a rate
# the vmm measures over its first milliseconds (docs/vmm.md "Time"), so a
# `keep run` that reads its clocks before then makes those reads as calls.
# On a host whose own clocks do not run on an invariant TSC (the nested
# VM of make check-kvm with two CPUs: TSC marked unstable, hpet) the
# vDSO is off: the same clocks agree, and every read is a call. Where
# the host's are on the TSC, the same is checked again with keep run
# shown another clocksource (a bind mount over /sys's file in a mount
# namespace of its own; the machine's clocksource is not touched).
source "$(dirname "$0")/../lib/guest.sh"
K=$B/keys/dev.public; I=$B/images
CS=/sys/devices/system/clocksource/clocksource0/current_clocksource

if host_tsc_clocks; then on=1; else on=0; fi
echo "note: clocksource $(cat $CS 2>/dev/null || echo unreadable)," \
    "$(grep -qw nonstop_tsc /proc/cpuinfo && echo invariant || echo no invariant) TSC:" \
    "the vDSO is $([ $on -eq 1 ] && echo on || echo off) here"

# as CLOCKSOURCE COMMAND...: COMMAND where /sys names that clocksource
# (as - : the host's own).
as() {
	local cs=$1
	shift
	if [ "$cs" = - ]; then
		"$@"
		return
	fi
	printf '%s\n' "$cs" >"$tmp/cs"
	$unshare sh -c 'mount --bind "$0" "$1" && shift && exec "$@"' \
	    "$tmp/cs" "$CS" "$@"
}

# vdso CLOCKSOURCE ON: the vdso guest, shown CLOCKSOURCE, where the
# vDSO should be on (1) or off (0).
vdso() {
	local cs=$1 want=$2 out rc n at=
	[ "$cs" != - ] && at=" (shown clocksource $cs)"
	out=$(as "$cs" "$KEEP" run "$G/vdso" 2>&1); rc=$?
	case "$out" in
	*"vdso: ok") [ $rc -eq 0 ] && ok "vdso clocks agree with the system calls$at" ||
		bad "vdso guest$at: rc $rc";;
	*) bad "vdso guest$at ($rc): $out";;
	esac
	[ "$(printf '%s\n' "$out" | grep -c 'CLOCK_MONOTONIC: agrees')" -eq 2 ] &&
		ok "and in a forked child$at" || bad "forked child$at: $out"

	n=$(as "$cs" "$KEEP" run --trace "$G/vdso" 2>&1 | grep -c "syscall clock_gettime(0x[01],")
	if [ "$want" -eq 0 ]; then
		# Off: every read exits. 2 clocks x 2000 rounds x 3 reads (the
		# vDSO's two and syscall()'s), and syscall(), gettimeofday and
		# time, which musl reads as clock_gettime(CLOCK_REALTIME): 12,003
		# in the parent and as many in the child.
		[ "$n" -eq 24006 ] && ok "the vDSO is off: every clock read exits ($n)$at" ||
			bad "clock_gettime exits$at: $n, want 24006 (the vDSO off)"
	elif [ "$PLATFORM" = trap ]; then
		# The guest's explicit syscall() readings are its only clock
		# exits: 2 clocks x 2000 rounds + 1, in the parent and in the
		# child. The vdso guest reads its clocks from its first
		# instruction, inside keep run's first milliseconds: those reads
		# exit (as calls, about 3.5 us each, so fewer than 4,000 of its
		# 8,000 vDSO reads).
		[ "$n" -ge 8002 ] && [ "$n" -lt 12002 ] &&
			ok "syscall() readings exit, and $((n - 8002)) vDSO reads of the first milliseconds$at" ||
			bad "clock_gettime exits$at: $n, want 8002 and the first milliseconds' reads"
	else
		[ "$n" -eq 8002 ] && ok "only syscall() readings exit ($n)$at" ||
			bad "clock_gettime exits$at: $n, want 8002"
	fi
}

vdso - $on

if [ $on -eq 1 ]; then
	# The other answer, on this host: a kernel that gave its TSC up
	# (hpet, acpi_pm) turns the vDSO off; kvm-clock keeps it on.
	unshare="unshare -m"
	[ "$(id -u)" -eq 0 ] || unshare="unshare -rm"
	if [ "$(as hpet cat $CS 2>/dev/null)" = hpet ]; then
		vdso hpet 0
		vdso acpi_pm 0
		vdso kvm-clock 1
	else
		echo "note: no mount namespace here ($unshare): the vDSO off" \
		    "is checked only on a host whose clocks are not on the TSC"
	fi
fi

if [ -e "$I/python.img" ]; then
	before=$(date +%s%N)
	# On trap the vDSO starts once the TSC's rate is measured, a few ms
	# into keep run (longer on a loaded machine: "Time (the vDSO)"), so
	# there python first waits in select (no clock read of its own) and
	# only its reads after the marker count.
	wait=; [ "$PLATFORM" = trap ] && [ $on -eq 1 ] && wait='select.select([], [], [], 0.3); '
	out=$("$KEEP" run --trace --trust "$K" "$I/python.img" python -c \
		"import os, select, time; ${wait}os.write(2, b'MARK\n'); time.monotonic(); print(time.time_ns())" 2>&1); rc=$?
	after=$(date +%s%N)
	t=$(printf '%s\n' "$out" | grep -v '^keep: \|^MARK$' | tail -1)
	from=1; [ -n "$wait" ] && from='/^MARK$/'
	n=$(printf '%s\n' "$out" | sed -n "$from,\$p" | grep -c "syscall clock_gettime\|syscall gettimeofday\|syscall time(")
	if [ $on -eq 1 ]; then
		[ $rc -eq 0 ] && [ "$n" -eq 0 ] && ok "python reads the time without an exit" ||
			bad "python: rc $rc, $n clock exits"
	else
		# time.monotonic() and time.time_ns() at least.
		[ $rc -eq 0 ] && [ "$n" -ge 2 ] && ok "python reads the time through $n exits (the vDSO off)" ||
			bad "python: rc $rc, $n clock exits, want 2 or more (the vDSO off)"
	fi
	# 1 ms of slack: the vDSO's base is taken just after its TSC.
	if [ -n "$t" ] && [ "$t" -ge $((before - 1000000)) ] &&
		[ "$t" -le $((after + 1000000)) ]; then
		ok "python's time.time_ns() lies within the run"
	else
		bad "python's time '$t' outside [$before, $after]"
	fi
else
	bad "$I/python.img is missing (make images)"
fi

[ $fails -eq 0 ] || exit 1
