#!/usr/bin/env bash
# The front's unit tests on a loaded machine: the test process is stopped
# for 300 ms of every 400 ms (as a busy machine deschedules it), and every
# test must still pass. No test may depend on being scheduled in time.
set -u
cd "$(dirname "$0")/../.."
B=${B:-build}
t=$B/tests/test_http_front
[ -x "$t" ] || { echo "FAIL: $t is not built"; exit 1; }
log=$(mktemp) || exit 1
trap 'rm -f "$log"' EXIT
"$t" >"$log" 2>&1 &
p=$!
while kill -0 $p 2>/dev/null; do
	sleep 0.1
	kill -STOP $p 2>/dev/null
	sleep 0.3
	kill -CONT $p 2>/dev/null
done
wait $p
rc=$?
if [ $rc -ne 0 ]; then
	echo "FAIL: $t exited $rc while stalled:"
	sed 's/^/    /' "$log" | tail -n 30
	exit 1
fi
echo "ok: $(grep PASSED "$log") while stalled"
