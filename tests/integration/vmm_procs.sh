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
ws=$tmp/ws; mkdir -p "$ws"
same "fork, wait4, statuses, kill" "$G/forkwait"
same "pipes: poll and select timeouts, POLLHUP, dup2 across exec, SIGPIPE" "$G/pipes"
same "signals: handlers, masks, alarm, timers, SIGCHLD, faults, altstack" "$G/signals"
same "threads: mutex, condition ping-pong, timed wait, time slices" "$G/threads"
"$KEEP" run --timeout 1s "$G/threads" spin >"$tmp/out" 2>"$tmp/err"; rc=$?
[ $rc -eq 124 ] && grep -q "timeout" "$tmp/err" &&
    ok "a thread that spins past the time limit is stopped" ||
    bad "spinning thread: exit $rc, $(cat "$tmp/err")"
# Python (glibc, static): threading and signal.alarm, as natively.
cat >"$ws/t.py" <<'EOPY'
import threading, signal, time
r = []
def f(i): r.append(i * i)
ts = [threading.Thread(target=f, args=(i,)) for i in range(4)]
[t.start() for t in ts]; [t.join() for t in ts]
print("threads", sorted(r))
def h(s, f): print("alarm", s)
signal.signal(signal.SIGALRM, h); signal.alarm(1); time.sleep(2)
t0 = time.time(); time.sleep(0.2); print("slept", time.time() - t0 >= 0.2)
import subprocess, sys
exe = sys.executable or "/bin/python"  # keep's has no /proc/self/exe yet
r = subprocess.run([exe, "-c", "import sys; print('child', sys.argv[1:]); sys.exit(3)", "a"],
                   capture_output=True, text=True)
print("subprocess", r.returncode, repr(r.stdout), repr(r.stderr))
r = subprocess.run([exe, "-c", "print(input())"], input="fed\n", capture_output=True, text=True)
print("subprocess stdin", r.returncode, repr(r.stdout))
EOPY
python3 "$ws/t.py" >"$tmp/native" 2>&1
"$KEEP" run --timeout 30s --workspace "$ws" --trust "$B/keys/dev.public" \
    "$B/images/python.img" python /t.py >"$tmp/keep" 2>&1; rc=$?
[ $rc -eq 0 ] && cmp -s "$tmp/native" "$tmp/keep" &&
    ok "python threading, signal.alarm, subprocess.run: same as native" ||
    bad "python: exit $rc: $(diff "$tmp/native" "$tmp/keep")"
"$KEEP" run --timeout 20s "$G/signals" corrupt >"$tmp/out" 2>"$tmp/err"; rc=$?
[ $rc -eq 139 ] && [ "$(cat "$tmp/out")" = "wrecking my own frame" ] &&
    grep -q "fault: rt_sigreturn" "$tmp/err" &&
    ok "a handler that wrecks its own frame only ends itself" ||
    bad "corrupt frame: exit $rc, $(cat "$tmp/out") $(cat "$tmp/err")"

"$KEEP" run --timeout 2s "$G/forkbomb" >"$tmp/out" 2>"$tmp/err"; rc=$?
[ $rc -eq 124 ] && grep -q "process limit, 64, was reached" "$tmp/err" &&
    ok "a fork bomb stops at the process limit" ||
    bad "fork bomb: exit $rc, $(cat "$tmp/err")"
"$KEEP" run --processes 5 --timeout 1s "$G/forkbomb" >"$tmp/out" 2>"$tmp/err"; rc=$?
[ $rc -eq 124 ] && grep -q "process limit, 5, was reached" "$tmp/err" &&
    ok "keep run --processes sets the limit" || bad "--processes: exit $rc, $(cat "$tmp/err")"
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

# execve: /proc/self/exe, a workspace "#!" script, and the errors.
"$KEEP" run --timeout 20s --workspace "$ws" "$G/execer" >"$tmp/out" 2>"$tmp/err"; rc=$?
want='  argv[0]=/proc/self/exe
  argv[1]=child
  argv[2]=one
  argv[3]=two
  env WHO=child, fd 5 closed
/proc/self/exe: exit 4
  argv[0]=/proc/self/exe
  argv[1]=child
  argv[2]=/script
  argv[3]=arg
  env WHO=child, fd 5 closed
/script: exit 4
execve /noexec: Permission denied
/noexec: exit 127
execve /garbage: Exec format error
/garbage: exit 127
execve /missing: No such file or directory
/missing: exit 127
  empty argv: argv[0]="", env WHO=nobody
empty argv: exit 9'
[ $rc -eq 0 ] && [ "$(cat "$tmp/out")" = "$want" ] &&
    ok "execve: self, a script, EACCES, ENOEXEC, ENOENT" ||
    bad "execve: exit $rc: $(diff <(echo "$want") "$tmp/out") $(cat "$tmp/err")"

# busybox sh: pipelines, $(...), redirections, && and ||, subshells, a
# writer whose reader is gone (yes | head), byte-identical to native.
# Paths are relative: the workspace is the guest's / and its cwd.
script='echo a b c | tr a-z A-Z | cat; x=$(echo sub | tr s S); echo "got $x"
true && echo and; false || echo or; (exit 3); echo "status $?"
for i in 1 2 3; do echo $i; done | wc -l; yes | head -2
echo redir > f.txt; cat < f.txt; echo err 1>&2; echo more >> f.txt
sort -r f.txt | head -1; busybox true; echo "applet $?"; exit 7'
mkdir -p "$tmp/native_ws"; rm -rf "$ws"/*
(cd "$tmp/native_ws" && /bin/busybox sh -c "$script") >"$tmp/native" 2>&1; nrc=$?
"$KEEP" run --timeout 20s --workspace "$ws" /bin/busybox sh -c "$script" >"$tmp/keep" 2>&1; krc=$?
[ $nrc -eq $krc ] && cmp -s "$tmp/native" "$tmp/keep" &&
    ok "busybox sh pipelines and redirections: same as native (exit $krc)" ||
    bad "busybox sh: native $nrc keep $krc: $(diff "$tmp/native" "$tmp/keep")"

# busybox sh: wait (rt_sigsuspend until SIGCHLD) and trap.
script2='echo fg; (exit 4); echo "sub $?"; wait; echo "waited $?"
trap "echo trapped" USR1; kill -USR1 $$; echo after; kill -TERM $$; echo not'
(cd "$tmp/native_ws" && /bin/busybox sh -c "$script2") >"$tmp/native" 2>&1; nrc=$?
"$KEEP" run --timeout 20s --workspace "$ws" /bin/busybox sh -c "$script2" >"$tmp/keep" 2>&1; krc=$?
[ $nrc -eq $krc ] && cmp -s "$tmp/native" "$tmp/keep" &&
    ok "busybox sh wait, trap and kill \$\$: same as native (exit $krc)" ||
    bad "busybox sh signals: native $nrc keep $krc: $(diff "$tmp/native" "$tmp/keep")"

# ---- keepd: the same programs in an image, through commands/run ----------
"$KEEP" image build --name procs --version 1 --memory 64M \
    --file /bin/forkbomb="$G/forkbomb" --file /bin/orphan="$G/orphan" \
    --file /bin/busybox=/bin/busybox --command sh=/bin/busybox \
    --command forkwait --command forkbomb=/bin/forkbomb \
    --command orphan=/bin/orphan --file /bin/signals="$G/signals" \
    --command signals=/bin/signals --file /bin/threads="$G/threads" \
    --command threads=/bin/threads "$G/forkwait" -o "$tmp/procs.img.tmp" >/dev/null &&
"$KEEP" image sign --key "$B/keys/dev.secret" "$tmp/procs.img.tmp" >/dev/null ||
    { echo "FAIL: procs image"; exit 1; }
cat >"$tmp/test.policy" <<'EOP'
role runner {
	allow sandbox:read, sandbox:write, exec
	exec "forkwait", "forkbomb", "orphan", "sh", "signals", "threads"
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

req "$alice" POST "/v1/sandboxes/$sbx/commands/run" "$(python3 -c 'import json,sys; print(json.dumps({"cmd":"sh","args":["-c",sys.argv[1]]}))' "$script")"
(cd "$tmp/native_ws" && rm -f f.txt && /bin/busybox sh -c "$script") >"$tmp/nout" 2>"$tmp/nerr"
[ "$code" = 200 ] && [ "$(jget "$body" '["stdout"]')" = "$(cat "$tmp/nout")" ] &&
    [ "$(jget "$body" '["stderr"]')" = "$(cat "$tmp/nerr")" ] &&
    [ "$(jget "$body" '["exit_code"]')" = 7 ] &&
    ok "commands/run: busybox sh pipelines, same as native" || bad "commands/run sh: $code $body"

req "$alice" POST "/v1/sandboxes/$sbx/commands/run" '{"cmd":"signals"}'
"$G/signals" >"$tmp/native" 2>&1
[ "$code" = 200 ] && [ "$(jget "$body" '["stdout"]')" = "$(cat "$tmp/native")" ] &&
    ok "commands/run: signals, same as native" || bad "commands/run signals: $code $body"

req "$alice" POST "/v1/sandboxes/$sbx/commands/run" '{"cmd":"threads"}'
"$G/threads" >"$tmp/native" 2>&1
[ "$code" = 200 ] && [ "$(jget "$body" '["stdout"]')" = "$(cat "$tmp/native")" ] &&
    ok "commands/run: threads, same as native" || bad "commands/run threads: $code $body"

keepd_finish
