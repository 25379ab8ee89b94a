#!/usr/bin/env bash
# make check-kvm: the tests that exercise the KVM platform itself
# (tests/kvm.list, or the list KVM_LIST names, or the tests named on the
# command line), run against a
# real /dev/kvm: natively where it opens here, else inside a nested VM
# (tests/nested-kvm.sh: Debian's kernel under QEMU's TCG with emulated
# SVM). docs/development.md, "Working on the VMM without /dev/kvm".
#
#   tests/check-kvm.sh [TEST...]
#
# Prints which way it ran and ends with "N passed, N failed, N skipped".
# Writes "native", "nested" or "none" to $B/check-kvm.way, for .ci/run.
# Where the tests could run neither way it fails, unless
# KEEP_ALLOW_NO_KVM=1 says that is meant (then it says so loudly).
# Environment: KEEP_TEST_SLOW (nested: 50 unless set), KEEP_NESTED_TIMEOUT
# (seconds for the whole nested run, 1800), KEEP_NESTED_MEM (MiB, 6144).
# KEEP_NESTED_CPUS (the VM's CPUs, 1). A nested VM that stalls
# (tests/nested-kvm.sh's exit 123: QEMU's CPUs wedged, not a test) is
# booted again once, in the time left.
set -u
cd "$(dirname "$0")/.." || exit 1
B=${B:-build}
export B

# A character device that opens read-write (never `<>` alone: it would
# create a regular file named /dev/kvm where there is none).
kvm_opens() { [ -c /dev/kvm ] && { exec 9<>/dev/kvm; } 2>/dev/null && exec 9>&-; }

# Inside the nested VM (or natively): the tests, counted by run-tests.sh.
if [ "${1:-}" = --inside ]; then
	shift
	if ! kvm_opens; then
		echo "check-kvm: /dev/kvm does not open here"
		exit 125
	fi
	# The lines also go to $B/check-kvm.out, which outlives a nested run
	# cut off by its limit: what finished by then is still told.
	RESULTS=$PWD/$B/check-kvm.results KEEP_TEST_PLATFORM=kvm \
	    bash tests/run-tests.sh check-kvm "$@" | tee "$B/check-kvm.out"
	exit "${PIPESTATUS[0]}"
fi

if [ $# -eq 0 ]; then
	set -- $(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "${KVM_LIST:-tests/kvm.list}")
fi
for t in "$@"; do
	[ -f "$t" ] || { echo "check-kvm: no such test: $t" >&2; exit 2; }
done
mkdir -p "$B"
rm -f "$B/check-kvm.results" "$B/check-kvm.way" "$B/check-kvm.out"
start=$(date +%s)
if kvm_opens; then
	way=native
	echo "check-kvm: native (/dev/kvm opens here), $# tests"
	bash "$0" --inside "$@"
	rc=$?
else
	way=nested
	echo "check-kvm: nested (no /dev/kvm here), $# tests, KEEP_TEST_SLOW=${KEEP_TEST_SLOW:-50}"
	limit=${KEEP_NESTED_TIMEOUT:-1800}
	# One CPU unless told: QEMU's single-threaded TCG ran the list in
	# 70-78 s here where two CPUs (multi-threaded TCG) took 82-250 s,
	# and the stalls seen were both with two.
	export KEEP_NESTED_CPUS=${KEEP_NESTED_CPUS:-1}
	KEEP_TEST_SLOW=${KEEP_TEST_SLOW:-50} bash tests/nested-kvm.sh \
	    --timeout "$limit" --mem "${KEEP_NESTED_MEM:-6144}" \
	    -- bash tests/check-kvm.sh --inside "$@"
	rc=$?
	# A VM that stalled (123: its CPUs wedged, seen in CI, which says
	# nothing of keep) is booted afresh, once, in what is left of the
	# limit. A test that hangs by itself hangs again and fails. The
	# tally below counts only the second run.
	left=$((limit - ($(date +%s) - start)))
	if [ "$rc" -eq 123 ] && [ "$left" -gt 300 ]; then
		echo "check-kvm: the nested VM stalled (above): once more, in a fresh VM," \
		    "${left}s left"
		rm -f "$B/check-kvm.results" "$B/check-kvm.out"
		KEEP_TEST_SLOW=${KEEP_TEST_SLOW:-50} bash tests/nested-kvm.sh \
		    --timeout "$left" --mem "${KEEP_NESTED_MEM:-6144}" \
		    -- bash tests/check-kvm.sh --inside "$@"
		rc=$?
	fi
fi
secs=$(($(date +%s) - start))

if [ ! -s "$B/check-kvm.results" ]; then
	# Nothing was counted: no KVM inside, a VM that did not boot, or a
	# run cut off by the timeout (124).
	echo "none" >"$B/check-kvm.way"
	echo "check-kvm: the KVM tests did not run ($way, exit $rc, ${secs}s)"
	if [ -s "$B/check-kvm.out" ]; then
		# Cut off: say which finished and which did not.
		done_=$(grep -c '^\(PASS\|FAIL\|SKIP\): tests/' "$B/check-kvm.out")
		echo "check-kvm: $done_ of $# tests finished before the run was cut off:"
		grep '^\(PASS\|FAIL\|SKIP\): tests/' "$B/check-kvm.out" | sed 's/^/    /'
		[ "$done_" -lt $# ] && eval "echo \"check-kvm: unfinished: \${$((done_ + 1))}\""
	fi
	if [ "${KEEP_ALLOW_NO_KVM:-}" = 1 ]; then
		echo "check-kvm: *** KEEP_ALLOW_NO_KVM=1: THE KVM PLATFORM WAS NOT TESTED ***"
		echo "0 passed, 0 failed, $# skipped"
		exit 0
	fi
	echo "check-kvm: set KEEP_ALLOW_NO_KVM=1 to let a run without them pass"
	echo "0 passed, 1 failed, $# skipped"
	exit 1
fi
echo "$way" >"$B/check-kvm.way"
read -r _ p f s _ <"$B/check-kvm.results"
echo "check-kvm: ran $way in ${secs}s"
echo "$p passed, $f failed, $s skipped"
[ "$rc" -eq 0 ] && [ "$f" -eq 0 ]
