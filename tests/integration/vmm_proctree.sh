#!/usr/bin/env bash
# The guest's /proc shows the run's process tree (docs/vmm.md, "/proc and
# /dev"), so the tools an agent reaches for work: ps, pgrep, pkill,
# uptime, df; /proc/self is the caller, a forked child's too; another
# process's threads, zombies, name after exec and prctl(PR_SET_NAME);
# another's private entries (environ, fd) refused, its own allowed.
# Debian's procps and coreutils in the machine image, under keep run.
source "$(dirname "$0")/../lib/guest.sh"
I=$B/images/machine.img; K=$B/keys/dev.public
[ -f "$I" ] || { bad "$I is missing (make images)"; exit 1; }
ws=$tmp/ws; mkdir "$ws"

# NAME, PATTERN (a bash glob over the whole output), then a bash script,
# in which `ready PID NAME` waits until process PID runs program NAME (no
# fixed sleeps: a loaded machine starts python slowly).
ready='ready() { until [ "$(cat /proc/$1/comm 2>/dev/null)" = "$2" ]; do sleep 0.05; done; }'
guest() {
	local name=$1 want=$2 out
	out=$("$KEEP" run --workspace "$ws" --trust "$K" "$I" bash -c "$ready
$3" 2>&1 </dev/null)
	# shellcheck disable=SC2053
	if [[ "$out" == $want ]]; then ok "$name"
	else bad "$name: got '$out'"; fi
}

# Two sleeps and a python started in the background: ps lists each with
# its parent, state, name and arguments; ps itself runs.
guest "ps lists the tree" $'  PID  PPID STAT COMMAND         COMMAND\n    1     0 Ss   bash            bash -c *\n    2     1 S    sleep           sleep 30\n    3     1 S    sleep           sleep 31\n    4     1 S    python3         python3 -c import time; time.sleep(30)\n *     1 R    ps              ps -eo pid,ppid,stat,comm,args' \
	'sleep 30 & sleep 31 & python3 -c "import time; time.sleep(30)" &
	ready 2 sleep; ready 3 sleep; ready 4 python3
	ps -eo pid,ppid,stat,comm,args; kill %1 %2 %3'

# pgrep finds by name, pkill ends them, wait sees SIGTERM.
guest "pgrep and pkill" $'2\n3\nkilled\n143 143\nleft: 0' \
	'sleep 30 & a=$!; sleep 30 & b=$!; ready $a sleep; ready $b sleep
	pgrep -x sleep; pkill -x sleep && echo killed
	wait $a; ra=$?; wait $b; echo $ra $?
	echo "left: $(pgrep -c -x sleep)"'

# /proc/self is the caller, in the first process and in forked children.
guest "/proc/self is the caller" $'self 1 1 0\nself 2 2 1\nself 3 3 2\nexit' \
	'python3 -c "
import os
def show():
    st = dict(l.split(\":\\t\", 1) for l in open(\"/proc/self/status\").read().splitlines() if \":\\t\" in l)
    print(\"self\", os.readlink(\"/proc/self\"), st[\"Pid\"], st[\"PPid\"], flush=True)
show()
if os.fork() == 0:
    show()
    if os.fork() == 0:
        show(); os._exit(0)
    os.wait(); os._exit(0)
os.wait(); print(\"exit\")
"'

# A process's threads, seen by itself and by its parent.
guest "threads: task/ and Threads:" $'inside 4 4\noutside Threads:\t4\nnlwp 4' \
	'python3 -c "
import os, threading, time
ev = threading.Event()
ts = [threading.Thread(target=ev.wait) for _ in range(3)]
[t.start() for t in ts]
n = open(\"/proc/self/status\").read().split(\"Threads:\")[1].split()[0]
print(\"inside\", len(os.listdir(\"/proc/self/task\")), n, flush=True)
open(\"started\", \"w\").close()
while not os.path.exists(\"seen\"): time.sleep(0.05)
ev.set(); [t.join() for t in ts]
" & until [ -e started ]; do sleep 0.05; done
	echo "outside $(grep Threads: /proc/$!/status)"
	echo "nlwp $(ps -o nlwp= -p $! | tr -d " ")"; touch seen; wait; rm started seen'

# A child that ended and was not reaped yet is a zombie; then it is gone.
guest "a zombie, then reaped" $'Z (sh)\nZ (zombie)\nreaped: gone' \
	'python3 -c "
import os, time
pid = os.fork()
if pid == 0:
    os.execv(\"/bin/sh\", [\"sh\", \"-c\", \"exit 3\"])
while open(\"/proc/%d/stat\" % pid).read().split()[2] != \"Z\": time.sleep(0.05)
f = open(\"/proc/%d/stat\" % pid).read().split()
print(f[2], f[1])
print(open(\"/proc/%d/status\" % pid).read().split(\"State:\\t\")[1].splitlines()[0])
os.waitpid(pid, 0)
print(\"reaped:\", \"gone\" if not os.path.exists(\"/proc/%d\" % pid) else \"still there\")
"'

# A process is named after what it executed, and prctl renames it.
guest "names: exec and PR_SET_NAME" $'sleep\nrenamed-proc\nrenamed-proc' \
	'(exec sleep 30) & ready $! sleep; cat /proc/$!/comm; kill $!
	python3 -c "
import ctypes, os, subprocess
libc = ctypes.CDLL(None)
assert libc.prctl(15, b\"renamed-proc\", 0, 0, 0) == 0
buf = ctypes.create_string_buffer(16)
assert libc.prctl(16, buf, 0, 0, 0) == 0
print(buf.value.decode(), flush=True)
subprocess.run([\"ps\", \"-o\", \"comm=\", \"-p\", str(os.getpid())])
"'

# Another process's environment, descriptors and program are its own;
# the caller's are readable, and another's public entries are.
guest "another's private entries" $'environ: Permission denied\nfd: Permission denied\nexe: refused\nown: 1\nown fd: 0 1 2 3\ncmdline: sleep 30' \
	'sleep 30 & p=$!; ready $p sleep
	cat /proc/$p/environ 2>&1 >/dev/null | sed "s/.*: /environ: /"
	ls /proc/$p/fd 2>&1 | sed "s/.*: /fd: /"
	readlink /proc/$p/exe >/dev/null 2>&1 || echo "exe: refused"
	echo "own: $(tr "\0" "\n" </proc/self/environ | grep -c "^PATH=")"
	echo "own fd: $(ls /proc/self/fd | tr "\n" " " | sed "s/ $//")"
	echo "cmdline: $(tr "\0" " " </proc/$p/cmdline | sed "s/ $//")"; kill $p'

# top: the tree's processes with their CPU (a busy python's %CPU and
# TIME+ above 0), and the tree's CPU lines; it keeps /proc/stat open and
# seeks back to read it again, which makes it anew, as Linux does.
guest "top, and a /proc file read again" $'busy: yes\nfresh: yes' \
	'python3 -c "while True: pass" & ready $! python3
	top -b -n2 -d 0.3 | awk "\$12 == \"python3\" { cpu = \$9; t = \$11 } END { print \"busy:\", (cpu > 0 && t != \"0:00.00\") ? \"yes\" : \"no: \" cpu \" \" t }"
	kill $!
	python3 -c "
import os, time
fd = os.open(\"/proc/uptime\", os.O_RDONLY)
a = float(os.read(fd, 64).split()[0]); time.sleep(0.2)
os.lseek(fd, 0, os.SEEK_SET); b = float(os.read(fd, 64).split()[0])
print(\"fresh:\", \"yes\" if b >= a + 0.1 else \"no %s %s\" % (a, b))"'

# find walks /proc with *at calls from its directories' descriptors; a
# thread's task/TID holds no task/ again; only another's private
# entries are refused.
guest "find walks /proc" $'walked: yes\nrefused: /proc/1/fd\nrefused: /proc/1/task/1/fd\nrefused: /proc/2/fd\nrefused: /proc/2/task/2/fd' \
	'sleep 30 & ready $! sleep
	find /proc >$HOME/found 2>$HOME/err
	grep -q "^/proc/sys/kernel/pid_max$" $HOME/found && grep -q "^/proc/1/task/1/status$" $HOME/found &&
	    ! grep -q "task/1/task" $HOME/found && echo "walked: yes"
	sed "s/^find: .\(.*\).: Permission denied$/refused: \1/" $HOME/err | sort
	kill $!; rm $HOME/found $HOME/err'

# nice: a command started nicer, its NI in ps, a child inheriting it;
# lowering it again refused (EPERM from nice(3)), as for a user; a
# process's own rlimits by its pid.
guest "nice" $'5\n  7\n7\nlower: 1\nrlimit: 1024' \
	'nice -n 5 nice
	nice -n 7 sleep 30 & ready $! sleep; ps -o ni= -p $!; kill $!
	python3 -c "
import os, resource
os.nice(7)
pid = os.fork()
if pid == 0:
    print(os.getpriority(os.PRIO_PROCESS, 0), flush=True); os._exit(0)
os.waitpid(pid, 0)
try: os.nice(-1)
except OSError as e: print(\"lower:\", e.errno)
print(\"rlimit:\", resource.prlimit(os.getpid(), resource.RLIMIT_NOFILE)[0])"'

# Hostile paths under /proc: a pid with a leading zero, past int32 or
# absurdly long; a thread id past int32; task/ inside task/; a file as
# a directory; a cwd that leads back into /proc. Each a clean error.
guest "hostile /proc paths" $'/proc/0 ENOENT\n/proc/01 ENOENT\n/proc/2147483648 ENOENT\n/proc/1x ENOENT\n/proc/1/task/999 ENOENT\n/proc/1/task/1/t ENOENT\n/proc/1/stat/x ENOTDIR\n/proc/1/fd/99999 ENOENT\n/proc/1111111111 ENAMETOOLONG\ncwd in /proc: ELOOP' \
	'python3 -c "
import errno, os
for p in [\"/proc/0\", \"/proc/01\", \"/proc/2147483648\", \"/proc/1x\", \"/proc/1/task/\" + \"9\" * 23,
          \"/proc/1/task/1/task\", \"/proc/1/stat/x\", \"/proc/1/fd/99999999999\", \"/proc/\" + \"1\" * 4000]:
    try:
        open(p).close(); print(p[:16], \"opened\") # the first 16 bytes
    except OSError as e:
        print(p[:16], errno.errorcode[e.errno])
os.chdir(\"/proc\")
try:
    os.stat(\"/proc/self/cwd/stat\"); print(\"cwd in /proc: found\")
except OSError as e:
    print(\"cwd in /proc:\", errno.errorcode[e.errno])
"'

# The guest's uid has a name (images/passwd): whoami, ps's USER,
# CPython's getpass.getuser(), and ssh, which refuses to start for a
# uid without one (-G reads its configuration, connecting nowhere).
guest "the user has a name" $'user user\nUSER\nuser\nuser\nuser user' \
	'echo "$(whoami) $(id -gn)"; ps -o user -p $$ | head -1
	ps -o user= -p $$; python3 -c "import getpass; print(getpass.getuser())"
	ssh -G localhost 2>/dev/null | grep "^user "'

# uptime, df, the mounts and the tree's load line.
guest "uptime, df, mounts, loadavg" $'* up 0 min,  0 user,  load average: 0.00, 0.00, 0.00\nFilesystem * Mounted on\nkeep * /\nkeep / keep rw,relatime 0 0\nproc /proc proc *\ndev /dev devtmpfs *\n0.00 0.00 0.00 1/3 *' \
	'uptime; df -h | head -2; head -3 /proc/mounts; sleep 1 & cat /proc/loadavg; wait'

[ $fails -eq 0 ] || exit 1
