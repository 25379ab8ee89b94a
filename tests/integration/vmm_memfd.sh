#!/usr/bin/env bash
# memfd_create (docs/vmm.md, "Files"): an anonymous file, here one with
# no name in the workspace's /dev/shm. Python's os.memfd_create, written
# through, truncated, mapped shared and written by a forked child, sized
# by fstat, leaving no name behind, with Linux's EINVAL for a name too
# long: the same lines from Debian's python3.11 natively and in the
# python image. Before, ENOSYS (CPython's test_os counted it).
source "$(dirname "$0")/../lib/guest.sh"
K=$B/keys/dev.public; I=$B/images/python.img
PY=/usr/bin/python3.11
[ -f "$I" ] || { bad "$I is missing (make images)"; exit 1; }
[ -x $PY ] || { bad "$PY is missing (it is the image's python)"; exit 1; }

mkdir -p "$tmp/ws/dev/shm" "$tmp/native"
cat >"$tmp/ws/memfd.py" <<'PY'
import mmap, os, sys
shm = sys.argv[1]
before = sorted(os.listdir(shm))
fd = os.memfd_create("Hi", os.MFD_CLOEXEC)
print("inheritable", os.get_inheritable(fd))
with open(fd, "wb", closefd=False) as f:
    f.write(b"memfd_create")
    print("tell", f.tell())
os.ftruncate(fd, 4096)
m = mmap.mmap(fd, 4096)
pid = os.fork()
if pid == 0:
    m[0:5] = b"child"
    os._exit(0)
os.waitpid(pid, 0)
print("shared with a child", bytes(m[0:12]))
print("size", os.fstat(fd).st_size)
print("no name left", sorted(os.listdir(shm)) == before)
try:
    os.memfd_create("x" * 300)
except OSError as e:
    print("a long name", e.errno)
PY
native=$(cd "$tmp/native" && $PY "$tmp/ws/memfd.py" /dev/shm 2>&1)
out=$("$KEEP" run --workspace "$tmp/ws" --trust "$K" "$I" python /memfd.py /dev/shm 2>&1)
[ "$out" = "$native" ] && [[ $out == *"shared with a child b'child_create'"* ]] &&
	ok "memfd_create as natively ($(printf '%s\n' "$out" | wc -l) lines)" ||
	bad "memfd: keep: $out / native: $native"

[ $fails -eq 0 ] || exit 1
