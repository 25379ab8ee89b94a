#!/bin/bash
# keep policy end to end: the shipped examples check clean (no output at
# all), their tests pass, they are in canonical form; every verb answers
# with the documented exit status.
cd "$(dirname "$0")/../.." || exit 1
keep=${B:-build}/bin/keep
[ -x "$keep" ] || { echo "no $keep: run make first"; exit 1; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
die() { echo "FAIL: $*"; fail=1; }

for p in policy/examples/*.policy; do
	out=$("$keep" policy check "$p" 2>&1) || die "$p: check exit $?"
	[ -z "$out" ] || die "$p: check printed: $out"
	"$keep" policy test "$p" >"$tmp/t" 2>&1 || die "$p: test failed: $(cat "$tmp/t")"
	grep -q '^[1-9][0-9]* passed, 0 failed$' "$tmp/t" || die "$p: no tests ran"
	"$keep" policy fmt "$p" | cmp -s - "$p" || die "$p: not in canonical form"
done

ex=policy/examples/two-agents-budgets.policy
"$keep" policy explain $ex agent-b artifact:write >"$tmp/e" || die "explain allow exit"
grep -q "^allow: " "$tmp/e" || die "explain: no allow line"
grep -q "two-agents-budgets.policy:10:" "$tmp/e" || die "explain: no file:line"
"$keep" policy explain $ex agent-a artifact:write >/dev/null && die "explain deny exit 0"
"$keep" policy explain $ex agent-a bogus:cap >/dev/null 2>&1; [ $? -eq 2 ] || die "explain unknown cap not usage"

[ "$("$keep" policy who-can $ex artifact:write | cut -f1)" = "agent-b" ] || die "who-can artifact:write"
"$keep" policy who-can $ex admin >/dev/null && die "who-can admin exit 0"
"$keep" policy who-can policy/examples/exec-node-pnpm.policy exec pnpm >/dev/null || die "who-can exec pnpm"
"$keep" policy who-can policy/examples/exec-node-pnpm.policy exec sh >/dev/null && die "who-can exec sh"

"$keep" policy table $ex | grep -q '^agent-b ' || die "table"

"$keep" policy diff $ex $ex >"$tmp/d" || die "diff of a file with itself: exit 1"
[ -s "$tmp/d" ] && die "diff of a file with itself printed $(cat "$tmp/d")"
sed 's/budget 50000/budget 60000/' $ex >"$tmp/new.policy"
"$keep" policy diff $ex "$tmp/new.policy" >"$tmp/d" && die "diff with a change: exit 0"
grep -q 'agent "agent-b": budget: 50000 -> 60000' "$tmp/d" || die "diff: $(cat "$tmp/d")"
# An egress entry's injection (where a secret's value goes) is part of it.
printf 'agent "a" {\n\tsecret "t"\n\tegress "x.test":443 inject "t" as "Authorization"\n}\n' >"$tmp/i1.policy"
sed 's/"Authorization"/"X-Token"/' "$tmp/i1.policy" >"$tmp/i2.policy"
"$keep" policy diff "$tmp/i1.policy" "$tmp/i2.policy" >"$tmp/d" && die "diff of an injection: exit 0"
grep -q 'agent "a": egress "x.test":443 inject "t" as "X-Token" added' "$tmp/d" ||
    die "diff of an injection: $(cat "$tmp/d")"
"$keep" policy table "$tmp/i1.policy" | grep -q 'egress "x.test":443 inject "t" as "Authorization"' ||
    die "table: the injection"

# Links to ports: explain says which rule gives them and for how long,
# who-can lists who may give them, diff shows a bound that changes.
printf 'agent "w" {\n\tallow sandbox:read\n\texpose 8000 link 2h, 9000\n}\n' >"$tmp/links.policy"
"$keep" policy explain "$tmp/links.policy" w sandbox:read link:8000 >"$tmp/e" &&
    grep -q "a link to port 8000 lasts at most 2h" "$tmp/e" || die "explain link: $(cat "$tmp/e")"
"$keep" policy explain "$tmp/links.policy" w sandbox:read link:9000 >/dev/null &&
    die "explain link:9000 allowed (its rule gives no links)"
"$keep" policy explain "$tmp/links.policy" w sandbox:read port:9000 >/dev/null ||
    die "explain port:9000 refused"
"$keep" policy explain "$tmp/links.policy" w sandbox:read link:0 >/dev/null 2>&1; [ $? -eq 2 ] ||
    die "explain link:0 not usage"
[ "$("$keep" policy who-can "$tmp/links.policy" sandbox:read link:8000 | cut -f1)" = w ] ||
    die "who-can link:8000"
sed 's/link 2h/link 1h/' "$tmp/links.policy" >"$tmp/links2.policy"
"$keep" policy diff "$tmp/links.policy" "$tmp/links2.policy" >"$tmp/d"
grep -q 'agent "w": expose 8000 link 2h removed' "$tmp/d" &&
    grep -q 'agent "w": expose 8000 link 1h added' "$tmp/d" || die "diff links: $(cat "$tmp/d")"

# fmt -w rewrites in place; an already canonical file is untouched.
printf 'role r{allow artifact:read}\nagent "a":r\n' >"$tmp/w.policy"
"$keep" policy fmt -w "$tmp/w.policy" || die "fmt -w"
"$keep" policy fmt "$tmp/w.policy" | cmp -s - "$tmp/w.policy" || die "fmt -w not canonical"

# A failing test block: exit 1 and the counts.
printf 'agent "a" { allow artifact:read }\ntest "x" { expect allow agent "a" admin }\n' >"$tmp/f.policy"
"$keep" policy test "$tmp/f.policy" >"$tmp/t" 2>&1 && die "failing test exit 0"
grep -q '^0 passed, 1 failed$' "$tmp/t" || die "failing test counts: $(cat "$tmp/t")"
grep -q 'f.policy:2:12: test "x": expected allow, got deny' "$tmp/t" || die "failing test line: $(cat "$tmp/t")"

"$keep" policy check "$tmp/missing.policy" 2>/dev/null && die "check of a missing file"
"$keep" policy >/dev/null 2>&1; [ $? -eq 2 ] || die "no verb: not usage"
"$keep" policy frob x >/dev/null 2>&1; [ $? -eq 2 ] || die "bad verb: not usage"

[ "$fail" -eq 0 ] && echo "policy cli: ok"
exit $fail
