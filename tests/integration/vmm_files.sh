#!/usr/bin/env bash
# The guest's file calls with Linux's answers (tests/guests/filecalls.c),
# the synthetic /proc and /dev (procdev.c), sleeping calls that sleep
# (sleeper.c), and the workspace quota counted per workspace across runs
# (fill.c). Expectations are what Linux gives a process of uid 1000 on an
# ordinary filesystem, written out below.
source "$(dirname "$0")/../lib/guest.sh"
# same NAME WANT_FILE -- keep run args...: stdout byte for byte
same() {
	local name=$1 want=$2; shift 3
	"$KEEP" run "$@" >"$tmp/out" 2>"$tmp/err"
	local rc=$?
	if [ $rc -eq 0 ] && cmp -s "$want" "$tmp/out"; then ok "$name"
	else bad "$name: exit $rc: $(diff "$want" "$tmp/out" | head -20) $(head -c 300 "$tmp/err")"; fi
}

cat >"$tmp/filecalls.want" <<'WANT'
umask old: 022
umask applied: 640
chmod: ok
mode after chmod: 600
fchmod: ok
fchmodat: ok
mode after fchmodat: 644
chmod missing: ENOENT
chmod /dev/null: EROFS
uid 1000 gid 1000 file uid 1000
chown self: ok
chown -1: ok
chown root: EPERM
lchown missing: ENOENT
getgroups: 1 first 1000
setgroups: EPERM
setuid self: ok
setgid self: ok
setuid root: EPERM
setresuid -1: ok
symlink: ok
symlink exists: EEXIST
readlink: f
readlink of a file: EINVAL
readlink missing: ENOENT
stat through link: ok
link: ok
nlink: 2
linkat follow: ok
symlink out: ok
open link out: ENOENT
mkdir /: EEXIST
mkdir /tmp: EEXIST
rmdir /: EBUSY
mkdir /proc: EEXIST
utimensat: ok
mtime: 1234567890
utimensat now: ok
mtime moved: yes
utimensat missing: ENOENT
futimens: ok
creat: ok
truncate: ok
size after truncate: 4
truncate dir: EISDIR
truncate missing: ENOENT
statfs: ok
statfs bsize 4096 blocks>0 1 free<=blocks 1
fstatfs: ok
statfs missing: ENOENT
statx: ok
statx size 4 mode 644
getxattr: ENOTSUP
listxattr: 0
setxattr: ENOTSUP
getxattr missing: ENOENT
sendfile: 6
copy_file_range: 5
off after: 6
copied: ello
O_PATH of a symlink: the link
lchmod of a symlink: ENOTSUP
lchmod of a file: ok
mode after lchmod: 640
dup3 cloexec: ok
cloexec after dup3: 1
FIONBIO: ok
nonblock after FIONBIO: 1
FIOCLEX: ok
cloexec after FIOCLEX: 1
pipe: ok
empty nonblocking pipe: EAGAIN
open file/: ENOTDIR
create name/: EISDIR
open dir/: ok
newname created: no
statfs used>0: 1
close_range: ok
closed: EBADF
RLIMIT_NOFILE: 1024
opened until EMFILE: 1024
WANT
mkdir "$tmp/ws1"
same "file calls" "$tmp/filecalls.want" -- --workspace "$tmp/ws1" "$G/filecalls"
[ "$(readlink "$tmp/ws1/lnk")" = f ] && [ "$(stat -c %h "$tmp/ws1/f")" = 3 ] &&
    [ "$(stat -c %a "$tmp/ws1/masked")" = 640 ] &&
    [ "$(stat -c %Y "$tmp/ws1/touched")" = 1234567890 ] &&
    ok "file calls: the workspace on the host shows them" ||
    bad "file calls: workspace $(ls -la "$tmp/ws1")"
[ "$(readlink "$tmp/ws1/out")" = /etc/passwd ] && ok "a symlink out is created as written" ||
    bad "symlink out"

cat >"$tmp/procdev.want" <<'WANT'
exe link: /procdev
through /dev/stdout
exe bytes: ELF, size matches: yes
fd for /dev/null: 3
/proc/self/fd/3 -> /dev/null
fds: 0 1 2 3 4
read /dev/null: 0
write /dev/null: 3
read /dev/zero: 100, nonzero 0
read /dev/urandom: 64
read /dev/random: 64
/dev/null is a char device: yes
write /proc/cpuinfo: EACCES
create in /dev: Permission denied
unlink /dev/null: Read-only file system
/dev/stdin -> /proc/self/fd/0
/proc/self/status has Pid:	1: yes
/proc/self/status has Uid:	1000: yes
/proc/self/maps has [stack]: yes
/proc/meminfo has MemTotal:: yes
/proc/cpuinfo has processor	: 0: yes
cmdline: argv[0], then one, NUL-terminated: yes
/dev/tty is a char device: yes
open /dev/tty: ENXIO
/tmp writable: yes
/tmp mode: 1777
WANT
mkdir "$tmp/ws2"
same "/proc and /dev" "$tmp/procdev.want" -- --workspace "$tmp/ws2" "$G/procdev" one
[ -f "$tmp/ws2/tmp/scratch" ] && ok "/tmp is in the workspace" || bad "/tmp not in the workspace"
# Nothing of the host: the guest's cpuinfo and meminfo are its own.
"$KEEP" run --trust "$B/keys/dev.public" "$B/images/toolbox.img" cat /proc/meminfo >"$tmp/mem" 2>&1
grep -q "^MemTotal: *65536 kB" "$tmp/mem" && ok "meminfo is the guest's 64 MiB" || bad "meminfo: $(head -3 "$tmp/mem")"
"$KEEP" run --memory 32M --trust "$B/keys/dev.public" "$B/images/toolbox.img" cat /proc/meminfo >"$tmp/mem" 2>&1
grep -q "^MemTotal: *32768 kB" "$tmp/mem" && ok "meminfo follows --memory" || bad "meminfo 32M: $(head -3 "$tmp/mem")"
"$KEEP" run --trust "$B/keys/dev.public" "$B/images/toolbox.img" cat /proc/self/status >"$tmp/st" 2>&1
grep -q "^Name:	cat$" "$tmp/st" && grep -q "^Pid:	1$" "$tmp/st" && ok "status names the program" || bad "status: $(head -3 "$tmp/st")"
# A path through an image file is ENOTDIR, as through any file.
"$KEEP" run --trust "$B/keys/dev.public" "$B/images/toolbox.img" cat /bin/busybox/x >"$tmp/ls" 2>&1
grep -q "Not a directory" "$tmp/ls" && ok "a path through an image file is ENOTDIR" || bad "image file/x: $(cat "$tmp/ls")"
# "/" lists what is there: the workspace's names, then /dev, /proc and
# the image's directories, each once (the workspace's own bin too).
mkdir -p "$tmp/ws3/bin" "$tmp/ws3/x"
"$KEEP" run --workspace "$tmp/ws3" --trust "$B/keys/dev.public" "$B/images/toolbox.img" ls -a / >"$tmp/ls" 2>&1
[ "$(tr '\n' ' ' <"$tmp/ls")" = ". .. bin dev proc tmp x " ] && ok "ls / with a workspace" || bad "ls /: $(cat "$tmp/ls")"
"$KEEP" run --trust "$B/keys/dev.public" "$B/images/toolbox.img" ls -a / >"$tmp/ls" 2>&1
[ "$(tr '\n' ' ' <"$tmp/ls")" = ". .. bin dev proc " ] && ok "ls / without a workspace" || bad "ls / (no workspace): $(cat "$tmp/ls")"
"$KEEP" run --workspace "$tmp/ws3" --trust "$B/keys/dev.public" "$B/images/toolbox.img" find / -maxdepth 1 -type d >"$tmp/ls" 2>&1
[ "$(sort "$tmp/ls" | tr '\n' ' ')" = "/ /bin /dev /proc /tmp /x " ] && ok "find / with a workspace" || bad "find /: $(cat "$tmp/ls")"

# Sleeping calls sleep; a sleep is cut short by the run's time limit.
cat >"$tmp/sleep.want" <<'WANT'
nanosleep: rc 0, slept
clock_nanosleep: rc 0, slept
clock_nanosleep abstime: rc 0, slept
poll: rc 0, slept
ppoll: rc 0, slept
select: rc 0, slept
pselect6: rc 0, slept
poll stdout: rc 1 revents 4
WANT
same "sleeping calls sleep" "$tmp/sleep.want" -- "$G/sleeper"
# A stdin that stays open and silent however long the run takes to
# start: a FIFO this shell holds open for writing until the run is over.
mkfifo "$tmp/idle"
exec 3<>"$tmp/idle"
"$KEEP" run "$G/sleeper" stdin <"$tmp/idle" >"$tmp/out" 2>&1
exec 3>&-
[ "$(cat "$tmp/out")" = $'poll stdin: rc 0, slept\nrevents: 0' ] && ok "poll on an idle stdin waits its timeout" ||
    bad "poll idle stdin: $(cat "$tmp/out")"
echo hi | "$KEEP" run "$G/sleeper" stdin >"$tmp/out" 2>&1
[ "$(head -1 "$tmp/out")" = "poll stdin: rc 1, returned early" ] && ok "poll on stdin with data returns at once" ||
    bad "poll stdin data: $(cat "$tmp/out")"
"$KEEP" run --timeout 300ms "$G/sleeper" forever >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -eq 124 ] && grep -q "timeout" "$tmp/err" && [ ! -s "$tmp/out" ] &&
    ok "a day's sleep stops at the run's time limit" || bad "sleep timeout: exit $rc $(cat "$tmp/err")"

# The quota counts what the workspace holds, across runs.
mkdir "$tmp/ws3"
q() { "$KEEP" run --workspace "$tmp/ws3" --workspace-max 8M "$G/fill" "$@" 2>&1; }
[ "$(q a 6)" = "wrote 6 MiB" ] && ok "quota: 6 MiB of 8 fit" || bad "quota: first run: $(q a 6)"
out=$(q b 6)
[ "$out" = "refused after 1 MiB: Quota exceeded" ] && ok "quota: a second run's 6 MiB is refused" ||
    bad "quota: second run: $out"
[ "$(q a 3)" = "wrote 3 MiB" ] && ok "quota: truncating a file gives its blocks back" || bad "quota: rewrite"
out=$(q s sparse)
[ "$out" = $'ftruncate 1 GiB: size 1073741824, 0 KiB held\nwrite 1 MiB into it: ok' ] &&
    ok "quota: a sparse 1 GiB file counts its blocks, not its size" || bad "quota: sparse: $out"
out=$(q c 8)
[ "$out" = "refused after 2 MiB: Quota exceeded" ] || [ "$out" = "refused after 3 MiB: Quota exceeded" ] &&
    ok "quota: the sparse file's written blocks count" || bad "quota: after sparse: $out"
[ "$(du -sk "$tmp/ws3" | cut -f1)" -le 8300 ] && ok "quota: the workspace holds at most its quota" ||
    bad "quota: the workspace holds $(du -sk "$tmp/ws3")"

echo "vmm_files: $fails failures"
[ $fails -eq 0 ]
