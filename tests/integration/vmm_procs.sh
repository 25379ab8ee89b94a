#!/usr/bin/env bash
# Guest processes (issue 15): fork, wait, exit statuses, kill, process
# limits and hostile trees, through `keep run` and through keepd's
# commands/run. Each guest's output is compared with the same program
# run natively.
source "$(dirname "$0")/../lib/keepd.sh"
G=$B/guests

# same NAME ARGS...: keep run's stdout and exit status equal native's.
same() {
	local name=$1; shift
	"$@" >"$tmp/native" 2>&1; local nrc=$?
	"$KEEP" run --timeout 20s -- "$@" >"$tmp/keep" 2>"$tmp/keeperr"; local krc=$?
	if [ $nrc -eq $krc ] && cmp -s "$tmp/native" "$tmp/keep"; then
		ok "$name (same as native, exit $krc)"
	else
		bad "$name: native exit $nrc, keep exit $krc: $(diff "$tmp/native" "$tmp/keep" | head -10) $(head -c 300 "$tmp/keeperr")"
	fi
}

# ---- keep run -------------------------------------------------------------
same "fork, wait4, statuses, kill" "$G/forkwait"

"$KEEP" run --timeout 2s "$G/forkbomb" >"$tmp/out" 2>"$tmp/err"; rc=$?
[ $rc -eq 124 ] && grep -q "process limit, 64, was reached" "$tmp/err" &&
    ok "a fork bomb stops at the process limit" ||
    bad "fork bomb: exit $rc, $(cat "$tmp/err")"
# Nothing of it is left once keep returns.
left=$(pgrep -f "$G/forkbomb" | wc -l)
[ "$left" -eq 0 ] && ok "no process of the fork bomb is left" ||
    bad "fork bomb: $left processes left"

"$KEEP" run --timeout 20s "$G/orphan" 4 >"$tmp/out" 2>"$tmp/err"; rc=$?
[ $rc -eq 4 ] && [ "$(cat "$tmp/out")" = $'orphan\'s ppid: 1\nfirst process exits' ] &&
    ok "a zombie and an orphan: the run ends with its first process" ||
    bad "orphan: exit $rc, $(cat "$tmp/out") $(cat "$tmp/err")"
for _ in $(seq 50); do
	left=$(pgrep -f "$G/orphan" | wc -l); [ "$left" -eq 0 ] && break; sleep 0.1
done
[ "$left" -eq 0 ] && ok "the spinning orphan was stopped" ||
    bad "orphan: $left processes left"

# ---- keepd: the same programs in an image, through commands/run ----------
"$KEEP" image build --name procs --version 1 --memory 64M \
    --file /bin/forkbomb="$G/forkbomb" --file /bin/orphan="$G/orphan" \
    --command forkwait --command forkbomb=/bin/forkbomb \
    --command orphan=/bin/orphan "$G/forkwait" -o "$tmp/procs.img.tmp" >/dev/null &&
"$KEEP" image sign --key "$B/keys/dev.secret" "$tmp/procs.img.tmp" >/dev/null ||
    { echo "FAIL: procs image"; exit 1; }
cat >"$tmp/test.policy" <<'EOP'
role runner {
	allow sandbox:read, sandbox:write, exec
	exec "forkwait", "forkbomb", "orphan"
	timeout 20s
}
agent "alice" : runner
EOP
mkdir -p "$tmp/state/images"
mv "$tmp/procs.img.tmp" "$tmp/state/images/procs.img"
keepd_start "$tmp/test.policy"
alice=$(mint alice sandbox:read,sandbox:write,exec)
req "$alice" POST /v1/sandboxes '{"image":"procs"}'
[ "$code" = 201 ] || { bad "sandbox: $code $body"; keepd_finish; exit 1; }
sbx=$(jget "$body" '["id"]')

req "$alice" POST "/v1/sandboxes/$sbx/commands/run" '{"cmd":"forkwait"}'
"$G/forkwait" >"$tmp/native" 2>&1
[ "$code" = 200 ] && [ "$(jget "$body" '["stdout"]')" = "$(cat "$tmp/native")" ] &&
    [ "$(jget "$body" '["exit_code"]')" = 3 ] &&
    ok "commands/run: fork and wait, same as native" || bad "commands/run forkwait: $code $body"

req "$alice" POST "/v1/sandboxes/$sbx/commands/run" '{"cmd":"forkbomb","timeout":2000}'
[ "$code" = 200 ] && [ "$(jget "$body" '["reason"]')" = timeout ] &&
    ok "commands/run: a fork bomb ends at the run's time limit" || bad "commands/run forkbomb: $code $body"
for _ in $(seq 50); do
	left=$(pgrep -f "vm $sbx" | wc -l); [ "$left" -eq 0 ] && break; sleep 0.1
done
[ "$left" -eq 0 ] && ok "commands/run: no vm process of the fork bomb is left" ||
    bad "commands/run forkbomb: $left vm processes left"

req "$alice" POST "/v1/sandboxes/$sbx/commands/run" '{"cmd":"orphan","args":["5"]}'
[ "$code" = 200 ] && [ "$(jget "$body" '["exit_code"]')" = 5 ] &&
    ok "commands/run: a zombie and an orphan" || bad "commands/run orphan: $code $body"

keepd_finish
