# Sourced by tests/lib/guest.sh and tests/lib/keepd.sh (bash): which
# guest platform this machine has (docs/vmm.md), and the loud skips of a
# test that needs one it lacks. KEEP_TEST_PLATFORM (kvm or trap) forces
# the answer; else kvm where /dev/kvm opens read-write, trap where
# `keep run --platform trap` runs the hello guest, none otherwise.
# A test that needs KVM itself (it asserts what only KVM does) sets
# KEEP_TEST_NEEDS=kvm before sourcing; one that boots no guest sets
# KEEPD_NO_GUEST=1. Skip lines name the cause: tests/run-tests.sh counts
# those for want of KVM apart (make check's tally).
#
# KEEP_PLATFORM (auto, kvm or trap), as for keep run and keepd, runs
# every guest on that platform: keep run reads it, keepd.sh writes it into
# keepd.yaml, and only that platform is looked for here (make check-trap
# sets it on a machine with KVM).
#
# Waits counted in wall time scale with KEEP_TEST_SLOW (a whole factor,
# 1 unless set: make check-kvm sets 50 in its nested VM, 50-100x slower
# than natively): `seq $(slow 150)` where a loop polls 150 times, and
# `$(slow 5)s` for a limit. No test asserts a time.
SLOW=${KEEP_TEST_SLOW:-1}
case $SLOW in '' | *[!0-9]* | 0) SLOW=1 ;; esac
slow() { echo $(($1 * SLOW)); }

guest_platform() {
	if [ -n "${KEEP_TEST_PLATFORM:-}" ]; then
		echo "$KEEP_TEST_PLATFORM"
	elif [ "${KEEP_PLATFORM:-auto}" != trap ] && [ -c /dev/kvm ] && [ -r /dev/kvm ] && [ -w /dev/kvm ] &&
	    { exec 9<>/dev/kvm; } 2>/dev/null; then
		exec 9>&-
		echo kvm
	elif [ "${KEEP_PLATFORM:-auto}" != kvm ] && [ -x "$B/bin/keep" ] && [ -x "$B/guests/hello" ] &&
	    [ "$("$B/bin/keep" run --platform trap "$B/guests/hello" 2>/dev/null)" = "hello from a keep guest" ]; then
		echo trap
	else
		echo none
	fi
}

if [ -z "${KEEPD_NO_GUEST:-}" ]; then
	PLATFORM=$(guest_platform)
	if [ "${KEEP_TEST_NEEDS:-}" = kvm ] && [ "$PLATFORM" != kvm ]; then
		if [ "${KEEP_PLATFORM:-auto}" = trap ]; then
			echo "SKIP: KVM-only, KEEP_PLATFORM=trap: runs in make check-kvm"
		else
			echo "SKIP: KVM-only, no /dev/kvm here: runs in make check-kvm"
		fi
		exit 77
	fi
	if [ "$PLATFORM" = none ]; then
		echo "SKIP: no guest platform: no /dev/kvm and the trap platform does not run"
		exit 77
	fi
	export KEEP_TEST_PLATFORM=$PLATFORM
fi

# host_tsc_clocks: true where keep gives its guests a vDSO (docs/vmm.md
# "Time"): the host kernel keeps its time with the TSC (its clocksource
# is tsc, or kvm-clock over it) and the CPU calls the TSC invariant
# (CPUID 0x80000007 EDX bit 8, which the kernel shows as nonstop_tsc).
# Elsewhere every guest clock read is a call to the VMM.
host_tsc_clocks() {
	local cs
	cs=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null)
	case $cs in tsc | kvm-clock) ;; *) return 1 ;; esac
	grep -qw nonstop_tsc /proc/cpuinfo
}
