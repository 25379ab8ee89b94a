#!/usr/bin/env bash
# Run test programs and count them. Usage: run-tests.sh SUITE PROGRAM...
# A cmocka binary contributes its own counts (passed, failed, skipped); any other program counts as one
# test: exit 0 passes, 77 is a skip (it must say why), anything else fails.
# Appends "SUITE passed failed skipped kvm" to $RESULTS when set, kvm
# being the skips for want of /dev/kvm (their line says "KVM-only" or
# names /dev/kvm). Each test's line gives the seconds it took (what a list with
# a budget, tests/kvm.list nested, is cut by).
#
# JOBS (default 1) tests run at once; their lines and counts still come
# in the order given. A test whose text holds the line
# "# run-tests: alone" runs with no other beside it: it looks at the
# whole machine (processes by name, fixed ports, pids or memory spent on
# purpose) or at timings another test's load would spoil.
suite=$1; shift
jobs=${JOBS:-1}
pass=0; fail=0; skip=0; kvmskip=0
work=$(mktemp -d) || exit 1
trap 'rm -rf "$work"' EXIT
# Failing tests' output again just before the suite's summary line: a CI
# excerpt around "N failed" then shows why, not only which.
fails_log=$work/fails

# run_one I T: test T's output in $work/I.log; its status and seconds in
# $work/I.rc, written last, so that its presence means the test is over.
run_one() {
	local i=$1 t=$2 t0 rc
	t0=$(date +%s)
	# RESULTS is this script's: a test that runs make (make_order.sh,
	# make_format_nogit.sh) must not add its inner suites' lines to it,
	# nor get it through the outer make's MAKEFLAGS.
	case "$t" in
	*.sh) env -u RESULTS -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u JOBS \
	    bash "$t" >"$work/$i.log" 2>&1 </dev/null ;;
	*) env -u RESULTS -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u JOBS \
	    "$t" >"$work/$i.log" 2>&1 </dev/null ;;
	esac
	rc=$?
	echo "$rc $(($(date +%s) - t0))" >"$work/$i.rc.tmp"
	mv "$work/$i.rc.tmp" "$work/$i.rc"
}

# report I T: count test I and print its line (and a failure's output).
report() {
	local i=$1 t=$2 log=$work/$1.log rc secs p f s
	read -r rc secs <"$work/$i.rc"
	p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -n 1)
	f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -n 1)
	s=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' "$log" | tail -n 1)
	if [ -n "$p$f$s" ]; then
		pass=$((pass + ${p:-0})); fail=$((fail + ${f:-0})); skip=$((skip + ${s:-0}))
		if [ "$rc" -ne 0 ] && [ -z "$f" ]; then fail=$((fail + 1)); fi
	elif [ "$rc" -eq 0 ]; then pass=$((pass + 1))
	elif [ "$rc" -eq 77 ]; then skip=$((skip + 1))
	else fail=$((fail + 1))
	fi
	if [ "$rc" -eq 0 ]; then
		echo "PASS: $t (${secs}s)"
	elif [ "$rc" -eq 77 ]; then
		echo "SKIP: $t: $(tail -n 1 "$log")"
		case $(tail -n 1 "$log") in *KVM-only* | */dev/kvm*) kvmskip=$((kvmskip + 1)) ;; esac
	else
		echo "FAIL: $t (exit $rc, ${secs}s)"; sed 's/^/    /' "$log" | tail -n 60
		{ echo "--- $t (exit $rc): its failures, then its last lines"
		  grep -m 8 '^FAIL' "$log" | sed 's/^/    /'
		  sed 's/^/    /' "$log" | tail -n 25; } >>"$fails_log"
	fi
	[ -n "${VERBOSE:-}" ] && cat "$log"
	rm -f "$log"
}

tests=()
for t in "$@"; do [ -e "$t" ] && tests+=("$t"); done
shown=0
# flush: report the finished tests that come next in order.
flush() {
	while [ "$shown" -lt "${#tests[@]}" ] && [ -e "$work/$shown.rc" ]; do
		report "$shown" "${tests[$shown]}"
		shown=$((shown + 1))
	done
}
alone() { case "$1" in *.sh) grep -q '^# run-tests: alone' "$1" ;; *) false ;; esac; }

for i in "${!tests[@]}"; do
	t=${tests[$i]}
	if alone "$t"; then
		wait; flush
		run_one "$i" "$t"; flush
		continue
	fi
	while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; flush; done
	run_one "$i" "$t" &
	flush
done
wait; flush

[ -s "$fails_log" ] && cat "$fails_log"
# Kept beside the results: .ci/run prints them again as its last lines,
# where a CI excerpt (the run's tail) is sure to hold them.
[ -n "${RESULTS:-}" ] && [ -s "$fails_log" ] && cat "$fails_log" >>"$RESULTS.failed"
echo "$suite: $pass passed, $fail failed, $skip skipped"
[ "$kvmskip" -gt 0 ] && echo "$suite: $kvmskip of the skipped need /dev/kvm (make check-kvm)"
[ -n "${RESULTS:-}" ] && echo "$suite $pass $fail $skip $kvmskip" >>"$RESULTS"
[ "$fail" -eq 0 ]
