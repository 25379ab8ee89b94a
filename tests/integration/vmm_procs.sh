#!/usr/bin/env bash
# Guest processes (issue 15): fork, wait, exit statuses, kill, process
# limits and hostile trees, through `keep run` and through keepd's
# commands/run. Each guest's output is compared with the same program
# run natively.
source "$(dirname "$0")/../lib/keepd.sh"
# Absolute: "nothing is left" looks for processes by this path, and a
# relative one matches other trees' commands on a shared machine (a
# make building build/guests/orphan was counted as a leftover).
G=$(cd "$B/guests" && pwd)

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
same "epoll and eventfd: counters, level and edge, one-shot, timeouts, fork" "$G/events"
same "socketpair: both ways, shutdown, a forked child's end, datagrams, refusals" "$G/sockpair"
same "after wait4 the child's descriptors are closed: a pipe and a socketpair read their end at once" "$G/waitclose"
: | "$G/events" stdio 2>&1 | cat >"$tmp/native"
: | "$KEEP" run --timeout 20s "$G/events" stdio 2>&1 | cat >"$tmp/keep"
cmp -s "$tmp/native" "$tmp/keep" && ok "epoll on stdout and stdin pipes: same as native" ||
    bad "epoll stdio: $(diff "$tmp/native" "$tmp/keep")"
# A stdin from a file or /dev/null is a pipe to the guest (fstat says
# so), and epoll takes it as one; natively epoll would refuse the file.
: >"$tmp/empty"
for in in "$tmp/empty" /dev/null; do
	"$KEEP" run --timeout 20s "$G/events" stdio <"$in" 2>&1 | cat >"$tmp/keep"
	cmp -s "$tmp/native" "$tmp/keep" && ok "epoll on a stdin from $in: as on a pipe" ||
	    bad "epoll stdin $in: $(diff "$tmp/native" "$tmp/keep")"
done
same "signals: handlers, masks, alarm, timers, SIGCHLD, faults, altstack" "$G/signals"
same "threads: mutex, condition ping-pong, timed wait, time slices, SA_RESTART, sigsuspend and pause beside working threads" "$G/threads"
# Not `same`: the CPUID a guest sees is keep's, and where the platform
# offers no AVX (KVM on kvm-pvm) there is nothing to lose; "ymm LOST" or
# anything else fails.
out=$("$KEEP" run --timeout 20s -- "$G/threadfpu" 2>&1); rc=$?
[ $rc -eq 0 ] && { [ "$out" = "ymm kept" ] || [ "$out" = "ymm kept (no AVX here)" ]; } &&
    ok "threads keep their own AVX registers across the VMM's switches ($out)" ||
    bad "threadfpu: exit $rc: $out"
# Shared mappings need a workspace (/tmp, /dev/shm): run with one.
"$G/shmap" >"$tmp/native" 2>&1; nrc=$?
mkdir -p "$tmp/shmws"
"$KEEP" run --timeout 20s --workspace "$tmp/shmws" -- "$G/shmap" >"$tmp/keep" 2>"$tmp/keeperr"; krc=$?
[ $nrc -eq $krc ] && cmp -s "$tmp/native" "$tmp/keep" &&
    ok "shared mappings: anonymous across fork, a file and its calls, another process's mapping, POSIX semaphores and shm_open in /dev/shm (same as native)" ||
    bad "shmap: native exit $nrc, keep exit $krc: $(diff "$tmp/native" "$tmp/keep" | head -10) $(head -c 300 "$tmp/keeperr")"
# A file shortened under its mapping, its pages then handed to calls the
# VMM serves by copying (uname): the vm process must not die of SIGBUS.
"$KEEP" run --timeout 20s --workspace "$tmp/shmws" -- "$G/shmap" truncated >"$tmp/keep" 2>"$tmp/keeperr"; krc=$?
[ $krc -eq 0 ] && [ "$(grep -c answered "$tmp/keep")" = 3 ] && grep -q '^survived$' "$tmp/keep" &&
    ok "a file shortened under its shared mapping: calls on its pages answer, the guest goes on" ||
    bad "shmap truncated: exit $krc: $(cat "$tmp/keep") $(head -c 300 "$tmp/keeperr")"
"$KEEP" run --timeout 1s "$G/threads" spin >"$tmp/out" 2>"$tmp/err"; rc=$?
[ $rc -eq 124 ] && grep -q "timeout" "$tmp/err" &&
    ok "a thread that spins past the time limit is stopped" ||
    bad "spinning thread: exit $rc, $(cat "$tmp/err")"
# The slice's kick lands in a system call's stub more often than not
# here; the run's time limit must hold all the same (it was lost: the
# one-shot timer was not armed again, and the run went on past it).
for i in 1 2 3; do
	timeout -k 5 60 "$KEEP" run --timeout 1s "$G/threads" calls >"$tmp/out" 2>"$tmp/err"; rc=$?
	[ $rc -eq 124 ] && grep -q "timeout" "$tmp/err" || break
done
[ $rc -eq 124 ] && grep -q "timeout" "$tmp/err" &&
    ok "threads making system calls without end are stopped at the time limit (3 runs)" ||
    bad "calling threads: exit $rc, no time-limit message (the run outlived its limit): $(cat "$tmp/err")"
"$KEEP" run --timeout 1s "$G/threads" wait >"$tmp/out" 2>"$tmp/err"; rc=$?
[ $rc -eq 124 ] && grep -q "timeout" "$tmp/err" &&
    ok "threads that all wait (a join, a pipe read, pause) past the time limit are stopped" ||
    bad "waiting threads: exit $rc, $(cat "$tmp/err")"
# Python (glibc, static): threading and signal.alarm, as natively.
cat >"$ws/t.py" <<'EOPY'
import threading, signal, time
r = []
def f(i): r.append(i * i)
ts = [threading.Thread(target=f, args=(i,)) for i in range(4)]
[t.start() for t in ts]; [t.join() for t in ts]
print("threads", sorted(r))
def h(s, f): print("alarm", s)
signal.signal(signal.SIGALRM, h); signal.alarm(1); signal.pause() # not sleep(2): a loaded host may be late
t0 = time.time(); time.sleep(0.2); print("slept", time.time() - t0 >= 0.2)
import subprocess, sys
exe = sys.executable or "/bin/python"  # keep's has no /proc/self/exe yet
r = subprocess.run([exe, "-c", "import sys; print('child', sys.argv[1:]); sys.exit(3)", "a"],
                   capture_output=True, text=True)
print("subprocess", r.returncode, repr(r.stdout), repr(r.stderr))
r = subprocess.run([exe, "-c", "print(input())"], input="fed\n", capture_output=True, text=True)
print("subprocess stdin", r.returncode, repr(r.stdout))
import selectors, os
sel = selectors.DefaultSelector(); rp, wp = os.pipe(); sel.register(rp, selectors.EVENT_READ, "pipe")
t0 = time.time(); print("selector", type(sel).__name__, sel.select(0.1), time.time() - t0 >= 0.1)
os.write(wp, b"x"); print("ready", [(k.data, e) for k, e in sel.select(1)])
# The stock image's interpreter installs no handlers: ignore SIGPIPE as python3 does.
signal.signal(signal.SIGPIPE, signal.SIG_IGN); os.close(rp)
try:
    os.write(wp, b"x")
except BrokenPipeError:
    print("BrokenPipeError, still alive")
p = subprocess.Popen([exe, "-c", "import time; time.sleep(30)"])
p.send_signal(signal.SIGTERM); print("child terminated", p.wait())
p = subprocess.Popen([exe, "-c", "import sys; print(sys.stdin.read())"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
print("communicate", p.communicate(b"hello", timeout=10))
try:
    subprocess.run([exe, "-c", "import time; time.sleep(30)"], timeout=0.5)
except subprocess.TimeoutExpired:
    print("timeout expired")
# CPython's test_signal stress test, in short: a thread raises a signal
# without end, the main thread swaps its handler until 100 came. Its
# system calls without end once held its thread on the vCPU for good.
# A signal that comes as its handler changes is reported as unraisable
# ("ignored due to race condition"), natively as well, at random.
sys.unraisablehook = lambda u: None
sent, stop = 0, False
def raiser():
    global sent
    while not stop:
        signal.raise_signal(signal.SIGUSR1); sent += 1
signal.signal(signal.SIGUSR1, lambda s, f: None)
th = threading.Thread(target=raiser); th.start()
while sent < 100:
    for i in range(2000):
        for hd in (lambda s, f: None, signal.SIG_IGN):
            signal.signal(signal.SIGUSR1, hd)
stop = True; th.join(); print("signals raised by a thread while handlers change:", sent >= 100)
EOPY
python3 "$ws/t.py" >"$tmp/native" 2>&1
"$KEEP" run --timeout 30s --workspace "$ws" --trust "$B/keys/dev.public" \
    "$B/images/python.img" python /t.py >"$tmp/keep" 2>&1; rc=$?
[ $rc -eq 0 ] && cmp -s "$tmp/native" "$tmp/keep" &&
    ok "python threading, signal.alarm, subprocess, selectors (epoll), EPIPE: same as native" ||
    bad "python: exit $rc: $(diff "$tmp/native" "$tmp/keep")"
# Python threads that sleep, queue, read a pipe another thread writes,
# run a subprocess, wait on an Event set by a Timer.
cat >"$ws/t2.py" <<'EOPY'
import threading, time, queue, subprocess, sys, os
exe = sys.executable or "/bin/python"
res = {}
def slow(n):
    time.sleep(0.05); res[n] = n * n
ts = [threading.Thread(target=slow, args=(i,)) for i in range(4)]
[t.start() for t in ts]; [t.join() for t in ts]
print("sleepers", sorted(res.items()))
q = queue.Queue()
def producer():
    for i in range(3): q.put(i)
    q.put(None)
threading.Thread(target=producer).start()
got = []
while (x := q.get()) is not None: got.append(x)
print("queue", got)
r, w = os.pipe()
def reader(out): out.append(os.read(r, 10))
out = []; th = threading.Thread(target=reader, args=(out,)); th.start()
time.sleep(0.05); os.write(w, b"hi"); th.join(); print("pipe between threads", out)
out = []
def sub(): out.append(subprocess.run([exe, "-c", "print('from a thread')"], capture_output=True, text=True).stdout.strip())
th = threading.Thread(target=sub); th.start(); th.join(); print("subprocess in a thread", out)
ev = threading.Event()
threading.Timer(0.05, ev.set).start()
print("event", ev.wait(5))
EOPY
python3 "$ws/t2.py" >"$tmp/native" 2>&1
"$KEEP" run --timeout 30s --workspace "$ws" --trust "$B/keys/dev.public" \
    "$B/images/python.img" python /t2.py >"$tmp/keep" 2>&1; rc=$?
[ $rc -eq 0 ] && cmp -s "$tmp/native" "$tmp/keep" &&
    ok "python threads: sleeps, a queue, a pipe between threads, subprocess in a thread, Timer: same as native" ||
    bad "python threads: exit $rc: $(diff "$tmp/native" "$tmp/keep")"
"$KEEP" run --timeout 20s "$G/signals" corrupt >"$tmp/out" 2>"$tmp/err"; rc=$?
[ $rc -eq 139 ] && [ "$(cat "$tmp/out")" = "wrecking my own frame" ] &&
    grep -q "fault: rt_sigreturn" "$tmp/err" &&
    ok "a handler that wrecks its own frame only ends itself" ||
    bad "corrupt frame: exit $rc, $(cat "$tmp/out") $(cat "$tmp/err")"

"$KEEP" run --timeout 2s "$G/forkbomb" >"$tmp/out" 2>"$tmp/err"; rc=$?
[ $rc -eq 124 ] && grep -q "process limit 64 reached" "$tmp/err" &&
    ok "a fork bomb stops at the process limit" ||
    bad "fork bomb: exit $rc, $(cat "$tmp/err")"
"$KEEP" run --processes 5 --timeout 1s "$G/forkbomb" >"$tmp/out" 2>"$tmp/err"; rc=$?
[ $rc -eq 124 ] && grep -q "process limit 5 reached" "$tmp/err" &&
    ok "keep run --processes sets the limit" || bad "--processes: exit $rc, $(cat "$tmp/err")"
# Nothing of it is left once keep returns.
for _ in $(seq 50); do
	left=$(pgrep -f "$G/forkbomb" | wc -l); [ "$left" -eq 0 ] && break; sleep 0.1
done
[ "$left" -eq 0 ] && ok "no process of the fork bomb is left" ||
    bad "fork bomb: $left processes left"

# The memory limit holds for the tree (docs/vmm.md, "Memory across a
# process tree"): natively, with no memory cgroup, every line says yes.
"$KEEP" run --memory 128M --timeout 20s "$G/memtree" 128 >"$tmp/out" 2>"$tmp/err"; rc=$?
printf '%s\n' "fork while holding 60%: ENOMEM" "posix_spawn while holding 60%: ran" \
    "child 1 holding 40%: y" "child 2 holding 40%: y" "child 3 holding 40%: n" \
    "after they ended, a child holding 40%: y" >"$tmp/want"
[ $rc -eq 0 ] && cmp -s "$tmp/want" "$tmp/out" &&
    ok "the memory limit is the tree's: a fork is charged, siblings share it, an ended child gives it back" ||
    bad "memtree: exit $rc: $(diff "$tmp/want" "$tmp/out") $(cat "$tmp/err")"
"$KEEP" run --memory 128M --timeout 20s "$G/memtree" 128 fail >"$tmp/out" 2>"$tmp/err"; rc=$?
[ $rc -eq 1 ] && grep -q "refused memory at its limit (128 MiB" "$tmp/err" &&
    ok "keep run says the tree was refused memory when its program fails" ||
    bad "memtree fail: exit $rc: $(cat "$tmp/err")"

# A vfork child and its parent's memory (docs/vmm.md, "Fork"). Natively
# the child writes in its parent's memory and may map more there; on the
# trap platform it writes there too but may not change the map (ENOMEM:
# the parent's table of it is its own); under KVM it has a copy. On every
# one the parent's memory is intact and its next mapping reads as zeroes.
"$G/vforkmem" >"$tmp/native" 2>&1
"$KEEP" run --timeout 20s "$G/vforkmem" >"$tmp/out" 2>"$tmp/err"; rc=$?
case $KEEP_TEST_PLATFORM in
trap) vw=("the child's write: shared" "the child's mmap: Out of memory") ;;
*) vw=("the child's write: a copy's" "the child's mmap: a copy's") ;;
esac
printf '%s\n' "${vw[@]}" "the parent's memory: intact" "a new mapping: zeroes" >"$tmp/want"
[ "$(head -2 "$tmp/native")" = $'the child\'s write: shared\nthe child\'s mmap: ok' ] &&
    [ $rc -eq 0 ] && cmp -s "$tmp/want" "$tmp/out" &&
    ok "a vfork child on $KEEP_TEST_PLATFORM: ${vw[0]#*: } memory, its mmap ${vw[1]#*: }, the parent's intact" ||
    bad "vforkmem on $KEEP_TEST_PLATFORM: exit $rc: $(diff "$tmp/want" "$tmp/out" | tr '\n' ' ') native: $(tr '\n' ' ' <"$tmp/native") $(cat "$tmp/err")"

"$KEEP" run --timeout 20s "$G/orphan" 4 >"$tmp/out" 2>"$tmp/err"; rc=$?
[ $rc -eq 4 ] && [ "$(cat "$tmp/out")" = $'orphan\'s ppid: 1\nfirst process exits' ] &&
    ok "a zombie and an orphan: the run ends with its first process" ||
    bad "orphan: exit $rc, $(cat "$tmp/out") $(cat "$tmp/err")"
for _ in $(seq 50); do
	left=$(pgrep -f "$G/orphan" | wc -l); [ "$left" -eq 0 ] && break; sleep 0.1
done
[ "$left" -eq 0 ] && ok "the spinning orphan was stopped" ||
    bad "orphan: $left processes left"

# A guest signals host processes by host pid (its own vm process, the
# shell that started keep, a bystander) and by every "all" form: each is
# refused and every one of them lives on. (Never run hostkill natively.)
sleep 300 & victim=$!
bash -c 'exec "$0" run --timeout 20s "$1" $$ $PPID "$2"' "$KEEP" "$G/hostkill" \
    "$victim" >"$tmp/out" 2>"$tmp/err"; rc=$?
[ $rc -eq 0 ] && grep -q "^all refused$" "$tmp/out" && ! grep -q REACHED "$tmp/out" &&
    [ "$(grep -c ESRCH "$tmp/out")" -ge 24 ] && kill -0 "$victim" &&
    ok "keep run: a guest's kill and tgkill never reach a host process" ||
    bad "hostkill: exit $rc: $(cat "$tmp/out" "$tmp/err")"

# execve: /proc/self/exe, a workspace "#!" script, and the errors; last,
# a dynamic program whose interpreter is missing (the host's true with
# its PT_INTERP renamed), which fails in the calling process itself.
python3 - "$ws/badinterp" <<'PY'
import os, sys
data = open("/bin/true", "rb").read()
bad = data.replace(b"ld-linux-x86-64.so.2", b"ld-linux-x86-64.so.9")
assert bad != data
with open(sys.argv[1], "wb") as f:
    f.write(bad)
os.chmod(sys.argv[1], 0o755)
PY
"$KEEP" run --timeout 20s --workspace "$ws" "$G/execer" >"$tmp/out" 2>"$tmp/err"; rc=$?
rm -f "$ws/badinterp"
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
empty argv: exit 9
execve /badinterp: No such file or directory
fork after it: same memory'
[ $rc -eq 0 ] && [ "$(cat "$tmp/out")" = "$want" ] &&
    ok "execve: self, a script, EACCES, ENOEXEC, ENOENT, a missing interpreter" ||
    bad "execve: exit $rc: $(diff <(echo "$want") "$tmp/out") $(cat "$tmp/err")"

# Thirty execve in one process: on the trap platform each leaves its old
# stub to end while the new one starts (docs/vmm.md, "The trap
# platform: Fork"), and each is reaped; no zombie piles up behind the
# run (at most the last, reaped at the next execve or the end). While the
# chain's last program waits, the run's host processes are counted, and
# the guest memories they hold open: the last program's, no other (on
# trap each execve used to keep the old memfd open to the end).
"$KEEP" run --timeout 30s "$G/execer" chain 30 3 >"$tmp/out" 2>"$tmp/err" &
runner=$!
for _ in $(seq 200); do grep -q "chain done" "$tmp/out" && break; sleep 0.05; done
# Every descendant of the run's keep process, with its state.
tree=$(ps -e -o pid=,ppid=,stat= | awk -v root="$runner" '
	{ parent[$1] = $2; state[$1] = $3 }
	END { for (p in parent) { q = p; while (q in parent && q != root) q = parent[q]
		if (q == root && p != root) print p, state[p] } }')
zombies=$(awk '$2 ~ /^Z/' <<<"$tree" | wc -l)
memories=0
for p in "$runner" $(awk '{ print $1 }' <<<"$tree"); do
	n=$(ls -l "/proc/$p/fd" 2>/dev/null | grep -c 'memfd:keep-guest')
	memories=$((memories + n))
done
wait "$runner"; rc=$?
[ $rc -eq 0 ] && [ "$(cat "$tmp/out")" = "chain done" ] && [ "$zombies" -le 1 ] &&
    [ "$memories" -le 1 ] &&
    ok "thirty execve in a row: $zombies zombie left behind the run ($(wc -l <<<"$tree") host processes), $memories guest memory open" ||
    bad "execve chain: exit $rc, $zombies zombies, $memories guest memories open: $tree $(cat "$tmp/out" "$tmp/err")"

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

# bash-static and busybox sh running external commands (busybox applets
# by their names, found on PATH, in keep from the workspace) in pipelines,
# $(...), functions, redirections, trap: byte-identical to native.
rm -rf "$ws"/* "$tmp/native_ws"/*; mkdir -p "$ws/bin" "$tmp/bb"; cp /bin/busybox "$ws/bin/"
for a in tr seq sort head wc cat sleep; do
	ln -s busybox "$ws/bin/$a"; ln -s /bin/busybox "$tmp/bb/$a"
done
script3='echo a | tr a b; seq 1 1000 | sort -r | head -3; x=$(echo sub | tr s S); echo "got $x"
f() { echo "in f $1"; return 3; }; f one || echo "f failed $?"
for i in 1 2 3; do echo $i; done | wc -l
echo redir > f.txt; cat < f.txt; echo more >> f.txt; wc -l < f.txt
trap "echo trapped" USR1; kill -USR1 $$; echo after
true && echo and; false || echo or; exit 4'
for sh in "/bin/bash-static" "/bin/busybox sh"; do
	rm -f "$ws/f.txt" "$tmp/native_ws/f.txt"
	# shellcheck disable=SC2086 # the shell and its applet name
	(cd "$tmp/native_ws" && PATH=$tmp/bb exec $sh -c "$script3") >"$tmp/native" 2>&1; nrc=$?
	# shellcheck disable=SC2086
	"$KEEP" run --timeout 20s --workspace "$ws" --env PATH=/bin $sh -c "$script3" >"$tmp/keep" 2>&1; krc=$?
	[ "$nrc" -eq "$krc" ] && cmp -s "$tmp/native" "$tmp/keep" &&
	    ok "$sh: external commands in pipelines, \$(...), redirections: same as native (exit $krc)" ||
	    bad "$sh externals: native $nrc keep $krc: $(diff "$tmp/native" "$tmp/keep")"
done

# busybox sh: wait (rt_sigsuspend until SIGCHLD) and trap.
script2='echo fg; (exit 4); echo "sub $?"; wait; echo "waited $?"
trap "echo trapped" USR1; kill -USR1 $$; echo after; kill -TERM $$; echo not'
(cd "$tmp/native_ws" && /bin/busybox sh -c "$script2") >"$tmp/native" 2>&1; nrc=$?
"$KEEP" run --timeout 20s --workspace "$ws" /bin/busybox sh -c "$script2" >"$tmp/keep" 2>&1; krc=$?
[ $nrc -eq $krc ] && cmp -s "$tmp/native" "$tmp/keep" &&
    ok "busybox sh wait, trap and kill \$\$: same as native (exit $krc)" ||
    bad "busybox sh signals: native $nrc keep $krc: $(diff "$tmp/native" "$tmp/keep")"
# Background jobs and wait: the shell wakes on SIGCHLD and asks wait4
# with WNOHANG while the child's host process may still be ending; it
# must be found then (it was not, and the shell waited for ever).
script4='echo a & wait; echo "waited $?"; (exit 3) & sleep 0.1 & wait; echo "both $?"
for i in 1 2 3; do echo "$i" & done; wait; echo done'
(cd "$tmp/native_ws" && /bin/busybox sh -c "$script4") 2>&1 | sort >"$tmp/native"; nrc=${PIPESTATUS[0]}
"$KEEP" run --timeout 20s --workspace "$ws" /bin/busybox sh -c "$script4" 2>&1 | sort >"$tmp/keep"; krc=${PIPESTATUS[0]}
[ $nrc -eq $krc ] && cmp -s "$tmp/native" "$tmp/keep" &&
    ok "busybox sh background jobs and wait: same as native (exit $krc, lines sorted)" ||
    bad "busybox sh background jobs: native $nrc keep $krc: $(diff "$tmp/native" "$tmp/keep")"

# SIGTERM and SIGINT to keep run reach its guest, which may trap them,
# as the same script natively.
term='trap "echo got TERM; exit 5" TERM; trap "echo got INT; exit 6" INT
echo ready; while :; do sleep 0.1; done'
for sig in TERM INT; do
	# A background job of a shell without job control starts with
	# SIGINT ignored, and a shell cannot trap what it started ignoring:
	# the native side starts from the default, as keep run's guest does.
	(cd "$tmp/native_ws" && exec env --default-signal=INT,TERM \
	    /bin/busybox sh -c "$term") >"$tmp/native" 2>&1 & np=$!
	"$KEEP" run --timeout 20s --workspace "$ws" /bin/busybox sh -c "$term" >"$tmp/keep" 2>&1 & kp=$!
	for _ in $(seq 100); do
		grep -q ready "$tmp/native" && grep -q ready "$tmp/keep" && break; sleep 0.1
	done
	kill -"$sig" "$np" "$kp"; wait "$np"; nrc=$?; wait "$kp"; krc=$?
	[ $nrc -eq $krc ] && cmp -s "$tmp/native" "$tmp/keep" &&
	    ok "SIG$sig to keep run: the guest's trap runs, as natively (exit $krc)" ||
	    bad "SIG$sig: native $nrc keep $krc: $(diff "$tmp/native" "$tmp/keep")"
done

# ---- keepd: the same programs in an image, through commands/run ----------
"$KEEP" image build --name procs --version 1 --memory 64M \
    --file /bin/forkbomb="$G/forkbomb" --file /bin/orphan="$G/orphan" \
    --file /bin/busybox=/bin/busybox --command sh=/bin/busybox \
    --command forkwait --command forkbomb=/bin/forkbomb \
    --command orphan=/bin/orphan --file /bin/signals="$G/signals" \
    --command signals=/bin/signals --file /bin/threads="$G/threads" \
    --command threads=/bin/threads --file /bin/hostkill="$G/hostkill" \
    --command hostkill=/bin/hostkill --file /bin/events="$G/events" \
    --command events=/bin/events --file /bin/memtree="$G/memtree" \
    --command memtree=/bin/memtree "$G/forkwait" -o "$tmp/procs.img.tmp" >/dev/null &&
"$KEEP" image sign --key "$B/keys/dev.secret" "$tmp/procs.img.tmp" >/dev/null ||
    { echo "FAIL: procs image"; exit 1; }
cat >"$tmp/test.policy" <<'EOP'
role runner {
	allow sandbox:read, sandbox:write, exec, artifact:read
	exec "forkwait", "forkbomb", "orphan", "sh", "signals", "threads", "hostkill",
	    "events", "memtree"
	timeout 20s
	processes 8
}
agent "alice" : runner
EOP
mkdir -p "$tmp/state/images"
mv "$tmp/procs.img.tmp" "$tmp/state/images/procs.img"
keepd_start "$tmp/test.policy"
alice=$(mint alice sandbox:read,sandbox:write,exec,artifact:read)
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
    [ "$(jget "$body" '["limits"]')" = "['processes']" ] &&
    grep -q "done: .*process limit 8 reached" "$tmp/log" &&
    ok "commands/run: a fork bomb stops at the policy's process limit (8), ends at the time limit, and says limits: processes" ||
    bad "commands/run forkbomb: $code $body $(grep 'process limit' "$tmp/log")"
for _ in $(seq 50); do
	left=$(pgrep -f "vm $sbx" | wc -l); [ "$left" -eq 0 ] && break; sleep 0.1
done
[ "$left" -eq 0 ] && ok "commands/run: no vm process of the fork bomb is left" ||
    bad "commands/run forkbomb: $left vm processes left"

# The image's 64M is the tree's: a process holding 60% cannot fork.
req "$alice" POST "/v1/sandboxes/$sbx/commands/run" '{"cmd":"memtree","args":["64","fail"]}'
[ "$code" = 200 ] && [ "$(jget "$body" '["exit_code"]')" = 1 ] &&
    [ "$(jget "$body" '["limits"]')" = "['memory']" ] &&
    [ "$(jget "$body" '["stdout"]')" = "fork while holding 60%: ENOMEM" ] &&
    ok "commands/run: the memory limit is the tree's, and the result says limits: memory" ||
    bad "commands/run memtree: $code $body"
req "$alice" POST "/v1/sandboxes/$sbx/commands/run" '{"cmd":"forkwait"}'
[ "$code" = 200 ] && [ "$(jget "$body" '.get("limits")')" = None ] &&
    ok "commands/run: no limits field when the tree met none" || bad "commands/run limits: $code $body"

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

req "$alice" POST "/v1/sandboxes/$sbx/commands/run" '{"cmd":"events"}'
"$G/events" >"$tmp/native" 2>&1
[ "$code" = 200 ] && [ "$(jget "$body" '["stdout"]')" = "$(cat "$tmp/native")" ] &&
    ok "commands/run: epoll and eventfd, same as native" || bad "commands/run events: $code $body"

# execute/kill with a signal: TERM reaches the whole tree, which may
# trap it; one that ignores it is killed after the grace period.
req "$alice" POST "/v1/sandboxes/$sbx/commands/background" "$(python3 -c 'import json,sys; print(json.dumps({"cmd":"sh","args":["-c",sys.argv[1]]}))' \
    'trap "echo got TERM >term.txt; exit 5" TERM; sleep 100 & echo ready >ready.txt; while :; do sleep 0.1; done')"
bgp=$(jget "$body" '["pid"]' 2>/dev/null)
for _ in $(seq 100); do
	req "$alice" GET "/v1/sandboxes/$sbx/files/read?path=ready.txt"; [ "$code" = 200 ] && break; sleep 0.1
done
req "$alice" POST "/v1/sandboxes/$sbx/execute/kill?pid=$bgp&signal=BOGUS"
[ "$code" = 400 ] && ok "execute/kill: an unknown signal is 400" || bad "kill BOGUS: $code $body"
req "$alice" POST "/v1/sandboxes/$sbx/execute/kill?pid=$bgp&signal=TERM"
[ "$code" = 204 ] || bad "kill TERM: $code $body"
for _ in $(seq 100); do
	req "$alice" GET "/v1/sandboxes/$sbx/processes"
	[[ $body == *"\"pid\":$bgp,"*'"status":"killed","exit_code":5'* ]] && break; sleep 0.1
done
[[ $body == *"\"pid\":$bgp,"*'"status":"killed","exit_code":5'* ]] &&
    req "$alice" GET "/v1/sandboxes/$sbx/files/read?path=term.txt" && [ "$body" = $'got TERM\n' ] &&
    ok "execute/kill?signal=TERM: the guest's trap ran, exit 5" || bad "kill TERM: $code $body"
req "$alice" POST "/v1/sandboxes/$sbx/commands/background" '{"cmd":"sh","args":["-c","trap \"\" TERM; echo ready >ready2.txt; while :; do sleep 0.1; done"]}'
bgp=$(jget "$body" '["pid"]' 2>/dev/null)
for _ in $(seq 100); do
	req "$alice" GET "/v1/sandboxes/$sbx/files/read?path=ready2.txt"; [ "$code" = 200 ] && break; sleep 0.1
done
req "$alice" POST "/v1/sandboxes/$sbx/execute/kill?pid=$bgp&signal=TERM"
for _ in $(seq 150); do
	req "$alice" GET "/v1/sandboxes/$sbx/processes"
	[[ $body == *"\"pid\":$bgp,"*'"status":"killed"'* ]] && break; sleep 0.1
done
[[ $body == *"\"pid\":$bgp,"*'"status":"killed"'* ]] &&
    ok "execute/kill?signal=TERM: a tree that ignores it is killed after the grace" ||
    bad "kill TERM ignored: $code $body"
for _ in $(seq 50); do
	left=$(pgrep -f "vm $sbx" | wc -l); [ "$left" -eq 0 ] && break; sleep 0.1
done
[ "$left" -eq 0 ] && ok "execute/kill: no vm process of the tree is left" ||
    bad "execute/kill: $left vm processes left"

# No process outlives its sandbox: deleting it kills the tree of a
# background run still going in it.
req "$alice" POST /v1/sandboxes '{"image":"procs"}'
sbx2=$(jget "$body" '["id"]')
req "$alice" POST "/v1/sandboxes/$sbx2/commands/background" '{"cmd":"sh","args":["-c","while :; do :; done | cat"]}'
[ "$code" = 202 ] || bad "background in a second sandbox: $code $body"
for _ in $(seq 100); do
	[ "$(pgrep -f "vm $sbx2" | wc -l)" -ge 2 ] && break; sleep 0.1
done
started=$(pgrep -f "vm $sbx2" | wc -l)
req "$alice" DELETE "/v1/sandboxes/$sbx2"
for _ in $(seq 50); do
	left=$(pgrep -f "vm $sbx2" | wc -l); [ "$left" -eq 0 ] && break; sleep 0.1
done
[ "$started" -ge 2 ] && [ "$left" -eq 0 ] &&
    ok "deleting a sandbox kills the process trees of its runs" ||
    bad "sandbox delete: $started vm processes at first, $left left"

# Through keepd: the vm process's parent is the vmm process, then
# keepd's parent; none of them, nor the bystander, can be reached.
vmm_pid=$(pgrep -P "$pid" -f "vmm" | head -1); keepd_pid=$pid
req "$alice" POST "/v1/sandboxes/$sbx/commands/run" "{\"cmd\":\"hostkill\",\"args\":[\"$vmm_pid\",\"$keepd_pid\",\"$victim\"]}"
[ "$code" = 200 ] && [ "$(jget "$body" '["exit_code"]')" = 0 ] &&
    jget "$body" '["stdout"]' | grep -q "^all refused$" && [ -n "$vmm_pid" ] &&
    kill -0 "$vmm_pid" && kill -0 "$keepd_pid" && kill -0 "$victim" &&
    ok "commands/run: a guest's kill and tgkill never reach the vmm, keepd or a bystander" ||
    bad "commands/run hostkill: vmm $vmm_pid: $code $body"
kill "$victim"

keepd_finish
