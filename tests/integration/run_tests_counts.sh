#!/usr/bin/env bash
# tests/run-tests.sh and tests/summary.sh count what they run: cmocka's
# passed, failed and skipped tests, scripts' exit 0 / 77 / other, and the
# closing line of make check adds them up.
set -u
cd "$(dirname "$0")/../.."
fails=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fails=$((fails+1)); }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
# A cmocka program's closing lines: 3 passed, 2 skipped.
cat >"$tmp/cmocka_skips" <<'EOT'
#!/bin/sh
echo '[==========] 5 test(s) run.'
echo '[  PASSED  ] 3 test(s).'
echo '[  SKIPPED ] 2 test(s), listed below:'
echo '[  SKIPPED ] test_a'
echo '[  SKIPPED ] test_b'
EOT
cat >"$tmp/cmocka_fails" <<'EOT'
#!/bin/sh
echo '[  PASSED  ] 1 test(s).'
echo '[  FAILED  ] 1 test(s), listed below:'
echo '[  FAILED  ] test_c'
exit 1
EOT
printf 'echo "SKIP: no reason"; exit 77\n' >"$tmp/skips.sh"
printf 'exit 0\n' >"$tmp/passes.sh"
chmod +x "$tmp/cmocka_skips" "$tmp/cmocka_fails"
out=$(RESULTS=$tmp/results bash tests/run-tests.sh suite "$tmp/cmocka_skips" \
    "$tmp/cmocka_fails" "$tmp/skips.sh" "$tmp/passes.sh" 2>&1)
[[ $out == *"suite: 5 passed, 1 failed, 3 skipped"* ]] &&
    ok "run-tests.sh counts cmocka's skips" || bad "run-tests.sh: $out"
# A CI excerpt shows the lines around "N failed": the failing test's own
# output is repeated just above it.
before=$(printf '%s\n' "$out" | grep -B 4 '^suite: ' | head -n 4)
[[ $before == *"--- $tmp/cmocka_fails (exit 1)"*"[  FAILED  ] test_c"* ]] &&
    ok "a failing test's output is repeated above the summary" ||
    bad "above the summary: $before"
echo "other 2 0 1" >>"$tmp/results"
out=$(sh tests/summary.sh "$tmp/results")
[[ $out == *"7 passed, 1 failed, 4 skipped" ]] &&
    ok "summary.sh adds up the skips" || bad "summary.sh: $out"
# Skips for want of /dev/kvm are counted apart, and the tally says so.
printf 'echo "SKIP: KVM-only, no /dev/kvm here: runs in make check-kvm"; exit 77\n' >"$tmp/kvmonly.sh"
printf 'echo "SKIP: no /dev/kvm"; exit 77\n' >"$tmp/nokvm.sh"
out=$(RESULTS=$tmp/kresults bash tests/run-tests.sh ksuite "$tmp/kvmonly.sh" \
    "$tmp/nokvm.sh" "$tmp/skips.sh" "$tmp/passes.sh" 2>&1)
[[ $out == *"ksuite: 1 passed, 0 failed, 3 skipped"*"ksuite: 2 of the skipped need /dev/kvm"* ]] &&
    ok "run-tests.sh counts the skips for want of KVM" || bad "kvm skips: $out"
out=$(sh tests/summary.sh "$tmp/kresults")
[[ $out == *$'2 of the skipped did not run for want of /dev/kvm (make check-kvm runs them)\n1 passed, 0 failed, 3 skipped' ]] &&
    ok "summary.sh names them on a line of their own, before the closing one" ||
    bad "summary.sh, kvm: $out"
out=$(sh tests/summary.sh "$tmp/none")
[[ $out == "0 passed, 1 failed, 0 skipped" ]] &&
    ok "summary.sh without results fails" || bad "summary.sh, no results: $out"
# Two at a time (JOBS=2): lines and counts in the order given, though
# the first finishes last; a test marked alone runs with none beside it
# (each test holds a file while it runs; the alone one finds none).
cat >"$tmp/slow.sh" <<EOT
touch "$tmp/running.slow"; sleep 1; rm -f "$tmp/running.slow"; exit 0
EOT
cat >"$tmp/quick.sh" <<EOT
touch "$tmp/running.quick"; sleep 0.2; rm -f "$tmp/running.quick"; exit 77
EOT
mark="# run-tests: alone" # in a variable: this file itself is not alone
cat >"$tmp/alone.sh" <<EOT
$mark
ls "$tmp"/running.* 2>/dev/null && { echo "FAIL: not alone"; exit 1; }
exit 0
EOT
cat >"$tmp/both.sh" <<EOT
touch "$tmp/both.start"; exit 0
EOT
out=$(JOBS=2 bash tests/run-tests.sh psuite "$tmp/slow.sh" "$tmp/quick.sh" \
    "$tmp/alone.sh" "$tmp/both.sh" "$tmp/passes.sh" 2>&1)
order=$(printf '%s\n' "$out" | sed -n 's|^\([A-Z]*\): '"$tmp"'/\([a-z]*\)\.sh.*|\1 \2|p' | paste -sd ,)
[[ $order == "PASS slow,SKIP quick,PASS alone,PASS both,PASS passes" ]] &&
    ok "JOBS=2: each test's line in the order given" || bad "JOBS=2 order: $order / $out"
[[ $out == *"psuite: 4 passed, 0 failed, 1 skipped"* ]] &&
    ok "JOBS=2: the counts add up, and the alone test ran alone" || bad "JOBS=2: $out"
# Two at a time really: the first waits for a file only the second makes.
cat >"$tmp/waits.sh" <<EOT
for i in \$(seq 300); do [ -e "$tmp/go" ] && exit 0; sleep 0.1; done; exit 1
EOT
printf 'touch "%s/go"\n' "$tmp" >"$tmp/makes.sh"
out=$(JOBS=2 bash tests/run-tests.sh wsuite "$tmp/waits.sh" "$tmp/makes.sh" 2>&1)
[[ $out == *"wsuite: 2 passed, 0 failed, 0 skipped"* ]] &&
    ok "JOBS=2 runs the second test while the first still runs" || bad "JOBS=2: $out"
echo "run_tests_counts: $fails failures"
[ $fails -eq 0 ]
