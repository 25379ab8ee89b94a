#!/usr/bin/env bash
# The trap platform's hostile suite (issue 28, Deliver 5;
# tests/guests/traphostile.c): the guest shares its host process with the
# stub, so it attacks what that process holds: the 32-bit entries, the
# vsyscall page, calls that would confine or trace it, its signal mask,
# the stub's code, data and shared box, the mappings under it, the host's
# pids and memory. Each attack must end with a clear reason or get an
# errno; nothing of the host is read or changed; no "keepd: guest"
# process outlives its run; and the next run is served.
#
# The stub's addresses are ASLR's: this script reads them from the host
# (/proc/PID/maps of the run's stub, a process of the run's session) and
# writes them to /stub.addr in the guest's workspace, which the guest
# waits for. A line "KNOWN:" is an accepted gap (issue 28), not a failure.
source "$(dirname "$0")/../lib/guest.sh"
shopt -s extglob
H=$G/traphostile
if [ "$PLATFORM" != trap ] &&
    [ "$("$KEEP" run --platform trap "$G/hello" 2>/dev/null)" != "hello from a keep guest" ]; then
	echo "SKIP: the trap platform does not run here"
	exit 77
fi
top=$tmp/top; ws=$top/ws; mkdir -p "$ws"
echo canary >"$top/canary"
passwd_sum=$(sha256sum </etc/passwd)

# Every process: its pid, parent, session, start time and command line.
procs() {
	local f rest
	for f in /proc/[0-9]*/stat; do
		{ read -r rest <"$f"; } 2>/dev/null || continue
		rest=${rest##*) }
		set -- $rest
		f=${f%/stat}
		echo "${f#/proc/} $2 $4 ${20} $(tr '\0' ' ' <"$f/cmdline" 2>/dev/null)"
	done
}

# The pids of the session sid's stubs ("keepd: guest"; with a second
# argument, the spares started ahead too, "keepd: spare", and the tree's
# spare maker, "keepd: maker"), the oldest first.
stubs_of() {
	procs | awk -v sid="$1" -v spares="${2:-}" '$3 == sid && $5 == "keepd:" &&
	    ($6 == "guest" || (spares != "" && ($6 == "spare" || $6 == "maker"))) { print $4, $1 }' |
	    sort -n | cut -d' ' -f2
}

# /stub.addr from the maps of the session's stub: its code, its writable
# data (its own rw-p mappings and the anonymous one right after them),
# the box and a page of guest memory the guest holds no mapping of.
write_addrs() {
	local pid=$1
	awk '
	function h(s) { return strtonum("0x" s) }
	{ split($1, r, "-") }
	$6 ~ /keep-trap-stub/ && $2 == "r-xp" { tlo = r[1]; thi = r[2] }
	$6 ~ /keep-trap-stub/ && $2 == "rw-p" { if (dlo == "") dlo = r[1]; dhi = r[2]; last = NR }
	$6 == "" && NR == last + 1 && r[1] == dhi { dhi = r[2] }
	$6 ~ /keep-trap-box/ { box = r[1] }
	$6 ~ /keep-guest/ && $2 == "---s" && h(r[1]) >= h("200000") && closed == "" { closed = r[1] }
	END { if (tlo == "" || dlo == "" || box == "" || closed == "") exit 1
	      print "0x" tlo, "0x" thi, "0x" dlo, "0x" dhi, "0x" box, "0x" closed }
	' "/proc/$pid/maps" >"$ws/.stub.addr" && mv "$ws/.stub.addr" "$ws/stub.addr"
}

# What confines the stub's process pid, as the host sees it: its
# descriptors, its root, its namespaces beside this shell's, its status.
confinement() {
	local pid=$1 ns
	echo "fds: $(ls "/proc/$pid/fd" | tr '\n' ' ')"
	echo "root: $(ls -A "/proc/$pid/root/" 2>&1 | tr '\n' ' ')"
	for ns in user pid net mnt ipc uts cgroup; do
		[ "$(readlink "/proc/$pid/ns/$ns")" != "$(readlink "/proc/$$/ns/$ns")" ] &&
		    echo "ns $ns: own" || echo "ns $ns: the host's"
	done
	grep -E '^(CapEff|CapPrm|NoNewPrivs|Seccomp):' "/proc/$pid/status" | tr -s '\t ' ' '
}

# Which namespaces the processes a and b share.
namespaces() {
	local ns
	for ns in user pid net mnt ipc uts cgroup; do
		[ "$(readlink "/proc/$1/ns/$ns")" = "$(readlink "/proc/$2/ns/$ns")" ] &&
		    echo "ns $ns: shared" || echo "ns $ns: apart"
	done
}

# The network devices of pid's namespace and their state.
netdev() {
	nsenter --net="/proc/$1/ns/net" ip -o link 2>&1 |
	    awk '{ sub(":", "", $2); s = $0; sub(/.* state /, "", s); sub(/ .*/, "", s); print $2, s }'
}

# run NAME [--addrs|--forked] -- keep run args: runs keep in a session of
# its own, hands the stub's addresses over with --addrs (with --forked,
# once both the guest's and its forked child's processes are looked
# at), and sets rc, out, err.
# Afterwards, no stub of the session may be left.
run() {
	local name=$1 addrs=0 sid i pid
	shift
	[ "$1" = --addrs ] && { addrs=1; shift; }
	[ "$1" = --forked ] && { addrs=2; shift; }
	[ "$1" = --orphan ] && { addrs=3; shift; }
	[ "$1" = --orphan-masked ] && { addrs=4; shift; }
	[ "$1" = --kill-spares ] && { addrs=5; shift; }
	[ "$1" = --kill-maker ] && { addrs=6; shift; }
	shift
	rm -f "$ws/stub.addr" "$ws/orphan.ready" "$ws/orphan.masked" \
	    "$ws/spares.killed" "$tmp/sid" "$tmp/orphan"
	setsid -w bash -c 'echo $$ >"$0"; exec "$@"' "$tmp/sid" \
	    "$KEEP" run --platform trap --timeout 60s --workspace "$ws" "$@" \
	    >"$tmp/out" 2>"$tmp/err" &
	local job=$!
	for i in $(seq 500); do [ -s "$tmp/sid" ] && break; sleep 0.01; done
	sid=$(cat "$tmp/sid")
	if [ $addrs = 1 ]; then
		for i in $(seq 1000); do
			pid=$(stubs_of "$sid" | head -1)
			# (the guest waits for the addresses: alive till then)
			[ -n "$pid" ] && confinement "$pid" >"$tmp/confine" &&
			    write_addrs "$pid" && break
			sleep 0.02
		done
		[ -s "$ws/stub.addr" ] || bad "$name: no stub found to attack"
	fi
	if [ $addrs = 2 ]; then
		# The guest's and its forked child's: each looked at while
		# both run (the child waits for the addresses).
		for i in $(seq 1000); do
			set -- $(stubs_of "$sid")
			if [ $# -ge 2 ] && confinement "$1" >"$tmp/confine.1" &&
			    confinement "$2" >"$tmp/confine.2" &&
			    namespaces "$1" "$2" >"$tmp/shared"; then
				netdev "$1" >"$tmp/netdev.1"
				netdev "$2" >"$tmp/netdev.2"
				{ readlink "/proc/$sid/ns/net"
				  readlink "/proc/$1/ns/net"
				  readlink "/proc/$2/ns/net"; } >"$tmp/netns"
				write_addrs "$2" && break
			fi
			sleep 0.02
		done
		[ -s "$ws/stub.addr" ] || bad "$name: no forked stub found"
	fi
	if [ $addrs = 5 ] || [ $addrs = 6 ]; then
		# The spares the parent started while it waits, or the maker
		# that forked them (whose end, their pid namespace's init's,
		# ends them too): killed.
		what=spare; [ $addrs = 6 ] && what=maker
		for i in $(seq 1000); do
			spares=$(procs | awk -v sid="$sid" -v what=$what '$3 == sid && $5 == "keepd:" && $6 == what { print $1 }')
			[ -n "$spares" ] && break; sleep 0.02
		done
		[ -n "$spares" ] && kill -KILL $spares || bad "$name: no $what found"
		: >"$ws/spares.killed"
	fi
	if [ $addrs = 3 ] || [ $addrs = 4 ]; then
		for i in $(seq 1000); do [ -e "$ws/orphan.ready" ] && break; sleep 0.02; done
		if [ $addrs = 4 ]; then
			# The child's process, the session's newest stub, gets
			# its addresses; it then blocks SIGIO.
			pid=$(stubs_of "$sid" | tail -1)
			[ -n "$pid" ] && write_addrs "$pid"
			for i in $(seq 1000); do [ -e "$ws/orphan.masked" ] && break; sleep 0.02; done
			[ -e "$ws/orphan.masked" ] || bad "$name: the child did not mask SIGIO"
		fi
		# The child's vm process: keep run's child that is no stub
		# (looked for again while the parent, starting its spares,
		# has a go-between or an unstarted stub beside it).
		for i in $(seq 500); do
			procs | awk -v sid="$sid" '$2 == sid && $5 != "keepd:" { print $1 }' \
			    >"$tmp/orphan"
			[ "$(wc -l <"$tmp/orphan")" = 1 ] && break
			sleep 0.02
		done
		if [ "$(wc -l <"$tmp/orphan" 2>/dev/null)" = 1 ]; then
			stubs_of "$sid" >"$tmp/orphan.stubs"
			kill -KILL "$(cat "$tmp/orphan")"
		else
			bad "$name: not one vm process of the child: $(cat "$tmp/orphan" 2>/dev/null); the session's processes (pid ppid sid start cmdline): $(procs | awk -v sid="$sid" '$3 == sid' | cut -c1-100 | tr '\n' ';')"
		fi
	fi
	wait $job; rc=$?
	out=$(cat "$tmp/out"); err=$(cat "$tmp/err")
	# PR_SET_PDEATHSIG, the life socket's hang-up (a spare's) and the vm
	# process's own kill end them: wait
	# for that, without a clock (a bounded count of looks).
	for i in $(seq 200); do
		[ -z "$(stubs_of "$sid" spares)" ] && break; sleep 0.05
	done
	left=$(stubs_of "$sid" spares | wc -l)
	[ "$left" -eq 0 ] || bad "$name: $left keepd: guest (or spare) processes left"
	# Nothing of the host's: passwd's content, the canary.
	if grep -q '^root:' "$tmp/out" "$tmp/err"; then
		bad "$name: /etc/passwd's content reached the guest"
	fi
	[ "$(cat "$top/canary")" = canary ] && [ "$(ls -A "$top")" = "$(printf 'canary\nws')" ] &&
	    [ "$(sha256sum </etc/passwd)" = "$passwd_sum" ] ||
	    bad "$name: the host changed: $(ls -la "$top")"
}

# check NAME RC OUT_GLOB ERR_GLOB: the last run's result.
check() {
	if [ "$rc" -eq "$2" ] && [[ "$out" == $3 ]] && [[ "$err" == $4 ]]; then
		ok "$1"
	else
		bad "$1: exit $rc (want $2), out '${out:0:600}', err '${err:0:300}'"
	fi
}

# The host still serves the next run.
served() {
	[ "$("$KEEP" run --platform trap "$G/hello" 2>&1)" = "hello from a keep guest" ] &&
	    ok "$1: the next run is served" || bad "$1: the next run failed"
}

ended="keep run: fault: the guest's process ended"

# 32-bit entries: the i386 ABI, which the filter kills where the kernel
# has it (else int $0x80 is #GP); sysenter is #UD on AMD in long mode.
for how in int80 sysenter; do
	run $how -- "$H" $how
	if [ "$rc" -eq 139 ] && [ -z "$out" ] &&
	    [[ "$err" == "keep run: fault: vector "@(6 \(#UD|13 \(#GP)* ||
	       "$err" == "$ended (killed by signal 31)"* ]]; then
		ok "$how open of /etc/passwd is stopped ($err)"
	else
		bad "$how: exit $rc, out '$out', err '$err'"
	fi
done
run vsyscall -- "$H" vsyscall
# (the kernel emulates the page's gettimeofday, under the filter: a
# SIGSYS the VMM serves as a call and returns to RCX, here 0)
check "a call into the vsyscall page is stopped" 139 "" "keep run: fault: vector 14 (#PF*"
served "32-bit and vsyscall"

# Calls that would confine, trace or mask the guest's process are the
# guest's own, served (or refused) by the VMM: after each, the guest
# still makes calls that are served.
run seccomp -- "$H" seccomp
check "raw seccomp is refused, not installed" 0 $'seccomp filter: *\nseccomp strict: *\nsurvived' ""
[[ "$out" != *": 0"$'\n'* ]] || bad "seccomp: a call answered 0: $out"
run prctl -- "$H" prctl
# no_new_privs (set already) and dumpable are answered as Linux would.
check "prctl seccomp, no_new_privs, dumpable: the run goes on" 0 $'prctl seccomp filter: *\nprctl seccomp strict: *\nprctl no_new_privs: 0\nprctl dumpable: 0\nsurvived' ""
! grep -qE '^prctl seccomp [a-z]+: 0$' <<<"$out" || bad "prctl seccomp answered 0: $out"
run ptrace -- "$H" ptrace
check "ptrace traceme and attach to pid 1 get an errno" 0 $'ptrace traceme: [A-Z]*\nptrace attach 1: [A-Z]*\nptrace seize 1: [A-Z]*\nsurvived' ""
run sigmask -- "$H" sigmask
check "SIGSYS blocked in the guest's mask: calls still served" 0 $'block all: 0\nmask read back: 0\nSIGSYS blocked: *\nsurvived' ""

# The stub's mappings, as the guest's calls.
run mmapstub --addrs -- "$H" mmapstub
# (the VMM answers mprotect and munmap outside guest memory with 0, and
# does nothing: the stub is there and unchanged, and serves on)
check "mmap, mprotect, munmap over the stub and the box: no effect" 0 $'mmap fixed over the stub: Out of memory\nmmap fixed over the box: Out of memory\nmprotect the stub writable: *\nmunmap the stub: *\nthe stub\'s code: unchanged\nsurvived' ""
# The stub's process as the host sees it while the guest runs.
printf '%s\n' "fds: 5 6 " "root: " "ns user: own" "ns pid: own" "ns net: own" \
    "ns mnt: own" "ns ipc: own" "ns uts: own" "ns cgroup: own" \
    "CapPrm: 0000000000000000" "CapEff: 0000000000000000" "NoNewPrivs: 1" \
    "Seccomp: 2" >"$tmp/confine.want"
if cmp -s "$tmp/confine.want" "$tmp/confine"; then
	ok "the stub's process: no descriptor but its channel (5) and its life (6), an empty root, namespaces of its own, no capabilities, filtered"
else
	# HOLE (issue 28, Deliver 2: "no descriptors but the platform's"):
	# the stub inherits the vm process's 0, 1 and 2. Its channel (5) is
	# the platform's: shared mappings' descriptors arrive on it; so is
	# its life (6), whose hang-up ends it with its vm process.
	bad "HOLE: the stub's process is not confined as issue 28 says: $(diff "$tmp/confine.want" "$tmp/confine" | grep '^[<>]' | tr '\n' ' ')"
fi
# A forked child's process: confined as the first, in the guest tree's
# user, network, IPC, UTS, cgroup and mount namespaces (the first
# process's, never the host's), with a pid namespace of its own; the
# tree's network namespace is the run's, keep run's own (docs/vmm.md,
# "The trap platform"), which holds only lo.
run forked --forked -- "$H" forked
check "a fork is served" 0 $'forked child: exit 7\nsurvived' ""
if cmp -s "$tmp/confine.want" "$tmp/confine.1" && cmp -s "$tmp/confine.want" "$tmp/confine.2"; then
	ok "a forked guest's process and its parent's: no descriptor but the channel and the life, an empty root, namespaces not the host's, no capabilities, filtered"
else
	bad "a forked guest's process is not confined as the first: $(diff "$tmp/confine.want" "$tmp/confine.2" | grep '^[<>]' | tr '\n' ' ') / $(diff "$tmp/confine.want" "$tmp/confine.1" | grep '^[<>]' | tr '\n' ' ')"
fi
# A child whose process is a spare its parent started (not a child of
# its own vm process, so no parent-death signal ends it), its vm process
# killed from the host: its process ends with it, spinning in its own
# code or waiting in a call, and the parent's wait tells the kill; the
# run then ends with nothing of it left (run's count).
for how in spin wait; do
	run "orphan $how" --orphan -- "$H" orphan "$how"
	check "a spare's process ends with its vm process ($how)" 0 $'orphan child: killed by 9\nsurvived' ""
	[ "$(wc -l <"$tmp/orphan.stubs")" -eq 2 ] ||
	    bad "orphan $how: the parent's and the child's processes, not: $(cat "$tmp/orphan.stubs")"
done
# The same child with SIGIO blocked in its process's own mask (a forged
# sigreturn from the stub's code): it outlives its vm process, but not
# the run, whose first process started it (run's count of what is left).
run "orphan masked" --orphan-masked -- "$H" orphan masked
check "a spare's process that blocks its life's signal ends with the run" 0 $'orphan child: killed by 9\nsurvived' ""
# Spares that died before they were taken: the next fork's child starts
# a stub of its own.
run "dead spares" --kill-spares -- "$H" deadspares
check "a fork after its spares were killed is served" 0 $'the first child: exit 0\nthe second child: exit 5\nsurvived' ""
# The spare maker killed, and its spares with it: the fork's child
# starts a stub of its own, and the parent its spares, as before it.
run "dead maker" --kill-maker -- "$H" deadspares
check "a fork after the spare maker was killed is served" 0 $'the first child: exit 0\nthe second child: exit 5\nsurvived' ""
# (Linux 6.11's pidfd ioctls open the first process's namespaces; before
# them, each process has its own, as the first.)
IFS=. read -r kmaj kmin _ <<<"$(uname -r)"
if [ "$kmaj" -gt 6 ] || { [ "$kmaj" -eq 6 ] && [ "${kmin%%[!0-9]*}" -ge 11 ]; }; then
	sh=shared
else
	sh=apart
fi
printf '%s\n' "ns user: $sh" "ns pid: apart" "ns net: $sh" "ns mnt: $sh" \
    "ns ipc: $sh" "ns uts: $sh" "ns cgroup: $sh" >"$tmp/shared.want"
cmp -s "$tmp/shared.want" "$tmp/shared" &&
    ok "the tree's processes share its namespaces but for pid (or, before Linux 6.11, none): $sh" ||
    bad "the tree's namespaces: $(tr '\n' ' ' <"$tmp/shared")"
[ "$(sort -u "$tmp/netns" | wc -l)" -eq 1 ] &&
    [ "$(readlink /proc/$$/ns/net)" != "$(head -1 "$tmp/netns")" ] &&
    ok "the tree's network namespace is the run's (keep run's own, not the host's)" ||
    bad "the tree's network namespace: $(tr '\n' ' ' <"$tmp/netns") (the host's: $(readlink /proc/$$/ns/net))"
[ "$(cut -d' ' -f1 "$tmp/netdev.1")" = "lo" ] && [ "$(cut -d' ' -f1 "$tmp/netdev.2")" = "lo" ] &&
    ok "the tree's network namespace: lo alone" ||
    bad "the tree's network: $(tr '\n' ' ' <"$tmp/netdev.1") / $(tr '\n' ' ' <"$tmp/netdev.2")"

run stubwrite --addrs -- "$H" stubwrite
check "a write to the stub's code, mprotected without the cookie, faults" 139 "" "keep run: fault: vector 14 (#PF*"

# The stub's own `syscall` with the guest's registers: the filter lets
# only its few calls through from there; the rest trap and are served as
# the guest's (its files, not the host's).
run stubjump --addrs -- "$H" stubjump
check "the stub's syscall with chosen registers: served as the guest's" 0 $'openat /etc/passwd: No such file or directory\nopen /proc/1/environ: *\nexecve /bin/sh: No such file or directory\nmprotect the stub without the cookie: *\nmprotect closed memory without the cookie: [A-Z]*\nmmap fixed over the stub: [A-Z]*\nmmap the box again: [A-Z]*\nrecvmsg on the channel without the cookie: [A-Z]*\nmmap the channel, shared and fixed: No such device\nmmap the life socket, shared and fixed: No such device\nclose the life socket: Bad file descriptor\nmmap a descriptor the guest names, shared and fixed: Bad file descriptor\nkill 1 0: *\nsetns: [A-Z]*\nsched_yield: 0\nsurvived' ""
run stubexit --addrs -- "$H" stubexit
check "exit_group from the stub's code ends the run, reported" 139 "" "$ended (exited 7)*"
run sigreturn --addrs -- "$H" sigreturn
check "rt_sigreturn from the stub's code blocking SIGSYS: killed" 139 "sigreturn" "$ended (killed by signal 31)*"
run stubdata --addrs -- "$H" stubdata
# (where the box is, garbage: the handler's check of its frame against
# it fails, or its first touch of it faults)
check "the stub's data overwritten: the process dies, reported" 139 "overwriting * bytes" "$ended ("@("exited 118"|"killed by signal 11")")*"
served "the stub's code and data"

# The box, rewritten by the guest while it runs.
run "box garbage" --addrs -- "$H" box garbage
check "box: every byte garbage, then calls: served" 0 $'box magic ok\nsurvived\nsurvived\nsurvived' ""
run "box nops" --addrs -- "$H" box nops
check "box: a forged reply of huge nops and a bad fpu_len: served" 0 $'box magic ok\nsurvived\nsurvived' ""
run "box call" --addrs -- "$H" box call
check "box: a forged call is served as the guest's own" 0 $'box magic ok\nforged write\nreply: yes\nforged call\'s rax: 13 rip ours\nsurvived\nsurvived' ""
run "box event" --addrs -- "$H" box event
check "box: an unknown event stops the run" 139 "box magic ok" "keep run: fault: the guest's process broke the protocol (event 119)*"
run "box boot" --addrs -- "$H" box boot
check "box: a second boot event stops the run" 139 "box magic ok" "keep run: fault: the guest's process broke the protocol (event 1)*"
run "box ops" --addrs -- "$H" box ops
check "box: an ops report nobody asked for stops the run" 139 "box magic ok" "keep run: fault: the guest's process broke the protocol (event 5)*"
run "box fault" --addrs -- "$H" box fault
check "box: a forged fault is the guest's fault" 139 "box magic ok" "keep run: fault: *vector 14 (#PF*0xdead000*"
# The stub's signal stack is the box's (the frame, the guest's FPU area
# in it, is where the vm process reads it): a call with the stack
# pointer on it is relayed if the handler still has its room, else the
# stub ends; a forged event naming an FPU area outside the box is none.
run "box sigstack" --addrs -- "$H" box sigstack
check "box: a call with the stack pointer on the stub's signal stack: served high, the stub ends low" 139 $'box magic ok\na call, stack pointer high on the signal stack: 0\nsurvived' "$ended ("@("exited 118"|"killed by signal 11")")*"
run "box fpu" --addrs -- "$H" box fpu
check "box: a forged FPU area outside the box is not read" 0 $'box magic ok\nreply: yes, to the handler: yes\nsurvived\nsurvived' ""
run "box cookie" --addrs -- "$H" box cookie
if [[ "$out" == *"KNOWN:"* ]]; then
	echo "KNOWN: a forged call made the vm process put its mprotect cookie in the box while the guest ran; the guest used it on memory it had not opened (issue 28's accepted gap)"
	echo "$out" | sed 's/^/  /'
elif [ "$rc" -eq 0 ] && [[ "$out" == *"mprotect closed memory, the cookie: "[A-Z]*survived ]]; then
	ok "box: the mprotect cookie was not to be had"
else
	bad "box cookie: exit $rc, out '$out', err '$err'"
fi
served "the box"

# Host pids and memory.
run forkbomb -- --processes 16 --timeout 3s "$G/forkbomb"
check "a fork bomb stops at the process limit" 124 "" "*process limit 16 reached*"
run hog -- --memory 32M "$G/hog"
check "allocation beyond the memory limit is ENOMEM" 0 "allocation failed after * MiB" ""
run stack -- --memory 32M "$G/crash" stack
check "a stack overflow is a reported fault" 139 "" "keep run: fault: *vector 14 (#PF*"
served "pids and memory"

echo "$fails failures"
[ "$fails" -eq 0 ]
