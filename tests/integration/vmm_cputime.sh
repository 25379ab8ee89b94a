#!/usr/bin/env bash
# A guest process's CPU time (docs/vmm.md, "CPU time"): what
# time.process_time, os.times, resource.getrusage, wait4's rusage and
# /proc/PID/stat say of a loop of known work, against the same loop's
# CPU time natively (Debian's python3.11, the image's own); a child's
# time is its parent's children's once reaped. Before, on trap the loop
# counted nothing (the vm process's time, not the guest's), times(2)
# returned garbage and getrusage ENOSYS.
source "$(dirname "$0")/../lib/guest.sh"
I=$B/images/python.img; K=$B/keys/dev.public
[ -f "$I" ] || { bad "$I is missing (make images)"; exit 1; }
PY=/usr/bin/python3.11
[ -x $PY ] || { bad "$PY is missing (it is the image's python)"; exit 1; }

# The work: a loop whose CPU time, natively, is the yardstick.
loop='sum(i * i for i in range(3000000))'
native=$($PY -c "import time; t = time.process_time(); $loop; print(time.process_time() - t)")

out=$("$KEEP" run --trust "$K" "$I" python -c "
import ctypes, os, resource, signal, threading, time
def busy():
    t, w = time.process_time(), time.monotonic()
    $loop
    return time.process_time() - t, time.monotonic() - w
cpu, wall = busy()
print('loop', cpu, wall)
t = os.times()
print('times', t.user + t.system, t.elapsed)
r = resource.getrusage(resource.RUSAGE_SELF)
print('rusage', r.ru_utime + r.ru_stime, r.ru_maxrss)
st = open('/proc/self/stat').read().split()
print('stat', (int(st[13]) + int(st[14])) / os.sysconf('SC_CLK_TCK'))
print('thread', time.clock_gettime(time.pthread_getcpuclockid(threading.get_ident())))
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    busy()
    os.write(w, b'x'); time.sleep(30); os._exit(0)
os.read(r, 1)
cid = ctypes.c_int()
assert ctypes.CDLL(None).clock_getcpuclockid(pid, ctypes.byref(cid)) == 0
print('other', time.clock_gettime(cid.value))
os.kill(pid, signal.SIGTERM)
_, status, ru = os.wait4(pid, 0)
print('child', ru.ru_utime + ru.ru_stime, status & 0x7f)
c = resource.getrusage(resource.RUSAGE_CHILDREN)
print('children', c.ru_utime + c.ru_stime, os.times().children_user + os.times().children_system)
# The CPU-time interval timers: every 20 ms of the loop's CPU time a
# SIGPROF, every 20 ms of its user time a SIGVTALRM; a forked child
# inherits neither (fork(2)); disarmed, they read 0.
n = {signal.SIGPROF: 0, signal.SIGVTALRM: 0}
def tick(s, f): n[s] += 1
signal.signal(signal.SIGPROF, tick); signal.signal(signal.SIGVTALRM, tick)
signal.setitimer(signal.ITIMER_PROF, 0.02, 0.02)
signal.setitimer(signal.ITIMER_VIRTUAL, 0.02, 0.02)
pid = os.fork()
if pid == 0:
    os._exit(int(signal.getitimer(signal.ITIMER_PROF) != (0.0, 0.0)))
child_timer = os.waitpid(pid, 0)[1]
cpu, wall = busy()
signal.setitimer(signal.ITIMER_PROF, 0); signal.setitimer(signal.ITIMER_VIRTUAL, 0)
print('itimer', n[signal.SIGPROF], n[signal.SIGVTALRM], cpu, child_timer, signal.getitimer(signal.ITIMER_PROF) == (0.0, 0.0))
" 2>&1); rc=$?
[ $rc -eq 0 ] || { bad "guest: rc $rc: $out"; exit 1; }
val() { printf '%s\n' "$out" | awk -v k="$1" -v f="$2" '$1 == k { print $f }'; }
# At least a quarter of the native loop's CPU (the same work; a loop's
# CPU time moves with the host's load and caches, but the bug counted
# nothing), at most the guest loop's wall time and a tick.
ge() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a >= b) }'; }

cpu=$(val loop 2); wall=$(val loop 3)
ge "$cpu" "$(awk -v n="$native" 'BEGIN { print n / 4 }')" &&
	ge "$(awk -v w="$wall" 'BEGIN { print w + 0.011 }')" "$cpu" &&
	ok "process_time of the loop: $cpu s (native $native s, wall $wall s)" ||
	bad "process_time of the loop: $cpu s, native $native s, wall $wall s"
for k in times rusage stat; do
	v=$(val $k 2)
	ge "$v" "$cpu" && ok "$k counts the loop: $v s" ||
		bad "$k: $v s, less than the loop's $cpu s"
done
e=$(val times 3)
ge "$e" "$wall" && ok "times' elapsed runs on: $e s" || bad "times' elapsed $e s, less than the loop's wall $wall s"
ge "$(val rusage 3)" 1024 && ok "ru_maxrss: $(val rusage 3) KiB" ||
	bad "ru_maxrss: $(val rusage 3) KiB"
ge "$(val thread 2)" "$cpu" && ok "pthread_getcpuclockid's clock counts the loop: $(val thread 2) s" ||
	bad "the thread's clock: $(val thread 2) s, less than the loop's $cpu s"
quarter=$(awk -v n="$native" 'BEGIN { print n / 4 }')
ge "$(val other 2)" "$quarter" && ok "clock_getcpuclockid of another process: its loop, $(val other 2) s" ||
	bad "another process's clock: $(val other 2) s, the native loop $native s"
child=$(val child 2)
ge "$child" "$quarter" && [ "$(val child 3)" = 15 ] &&
	ok "wait4's rusage: the child's $child s" || bad "wait4: $(val child 2) s, status $(val child 3)"
# os.times() cuts user and system time to a tick each: two ticks' slack.
ge "$(val children 2)" "$child" && ge "$(val children 3)" "$(awk -v c="$child" 'BEGIN { print c - 0.021 }')" &&
	ok "the reaped child's time is the children's: $(val children 2) s, $(val children 3) s" ||
	bad "children: $(val children 2) and $(val children 3) s, the child's $child s"

# At least half the 20 ms ticks the loop's CPU time holds (the timers
# are looked at every 4 ms of wall time), at most three more: the fork,
# the wait and the handlers run on the timers' time, outside the loop's.
read -r _ prof virt icpu ichild off <<<"$(printf '%s\n' "$out" | grep '^itimer ')"
lo=$(awk -v c="$icpu" 'BEGIN { print int(c / 0.02 / 2) }')
hi=$(awk -v c="$icpu" 'BEGIN { print int(c / 0.02) + 3 }')
[ -n "$prof" ] && [ "$prof" -ge "$lo" ] && [ "$prof" -le "$hi" ] && [ "$virt" -ge 1 ] &&
	[ "$virt" -le "$hi" ] && [ "$ichild" = 0 ] && [ "$off" = True ] &&
	ok "ITIMER_PROF $prof and ITIMER_VIRTUAL $virt ticks in the loop's $icpu s (want $lo..$hi); a child inherits none" ||
	bad "CPU-time timers: $(printf '%s\n' "$out" | grep '^itimer '), want $lo..$hi"

[ $fails -eq 0 ] || exit 1
