#!/usr/bin/env bash
# Paused contexts keep their memory (docs/contexts.md, "Pause, persist,
# resume"): an idle context's interpreter saves itself to a memory image
# under the state directory and ends; the next cell starts from the image,
# so nothing is run again: a random value drawn before the pause is the
# same after it, a file appended to once is not appended to again, and a
# file held open goes on where it was. The image outlives a kill -9 of the
# vmm and a restart of keepd, and a second pause saves a restored
# interpreter again. An image that was tampered with, or cut short, is not
# used: the context comes back from its journal instead, with the same
# acknowledged state. A context that cannot be saved (a thread still
# running) pauses to its journal. A read-only mapping of an image file
# comes back as it was. Deleting a context removes its image.
# run-tests: alone (an idle pause after 1000 ms, which another test's load can upset)
source "$(dirname "$0")/../lib/keepd.sh"
# A restarted vmm answers 503 while it reads its sandboxes back, and a
# run that reaches it then is refused as "no such sandbox" (400).
vmm_back() { [ "$code" != 503 ] && [[ $body != *"no such sandbox"* ]]; }

cat >"$tmp/test.policy" <<'EOP'
agent "alice" {
	allow sandbox:read, sandbox:write, exec
	exec "python"
	timeout 10s
	memory 512M
	contexts 4
	pause 1s
}
agent "bob" {
	allow sandbox:read, sandbox:write, exec
	exec "python"
	pause 1s
}
EOP
keepd_start "$tmp/test.policy"
alice=$(mint alice sandbox:read,sandbox:write,exec)
req "$alice" POST /v1/sandboxes '{"image":"python"}'
sbx=$(jget "$body" '["id"]')
req "$alice" POST "/v1/sandboxes/$sbx/contexts" '{}'
cid=$(jget "$body" '["id"]')
dir="$tmp/state/contexts/$sbx"

cell() { # cell CONTEXT CODE
	req "$alice" POST "/v1/sandboxes/$sbx/execute" "$(python3 -c 'import json, sys; print(json.dumps({"code": sys.argv[2], "context_id": sys.argv[1]}))' "$1" "$2")"
}
out() { jget "$body" '["stdout"]' 2>/dev/null; }
# The pause to wait for is the one after this cell: a context created
# on a loaded machine may pause once, with nothing to save, before it.
cell "$cid" 'import random
r = random.random()
k = 6
with open("count.txt", "a") as f: f.write("x")
held = open("held.txt", "w"); held.write("abc")
argv0 = open("/proc/self/cmdline", "rb").read()
print(r)'
m=$(mark)
r=$(out)
[ "$code" = 200 ] && [ -n "$r" ] || bad "first cell: $code $body"
paused "$cid" "$m" && [ -f "$dir/$cid.mem" ] &&
    ok "an idle context saves its memory image under the state directory" || bad "no memory image: $(ls -la "$dir")"
[ "$(stat -c %a "$dir/$cid.mem")" = 600 ] && ok "the image is readable by keepd only" || bad "mode: $(stat -c %a "$dir/$cid.mem")"
[ -z "$(pgrep -f "keepd: vm $sbx")" ] && ok "a paused context has no vm process" || bad "vm process left"
cp "$dir/$cid.mem" "$tmp/image.copy"

m=$(mark)
# (and /proc/self/cmdline reads the restored stack's argv, where the
# image says it lies)
cell "$cid" 'held.write("def"); held.close(); print(r, open("count.txt").read(), open("held.txt").read(), argv0 == open("/proc/self/cmdline", "rb").read() != b"")'
[ "$(out)" = "$r x abcdef True" ] && ok "the next cell starts from the image: nothing is run again" || bad "resume: $body (r was $r)"
grep -q "context $cid: resuming from its memory image" "$tmp/log" && ok "the log says it resumed from its image" || bad "log"
[ ! -f "$dir/$cid.mem" ] && ok "an image is used once" || bad "image left after resume"

# A restored interpreter pauses and saves again; a kill -9 of the vmm
# then loses nothing.
paused "$cid" "$m" || bad "second pause without an image"
vmm=$(pgrep -P "$pid" -f '^keepd: vmm')
[ -n "$vmm" ] && kill -KILL "$vmm"
for _ in $(seq "$(slow 100)"); do cell "$cid" 'print(r * k == 6 * r, r)'; vmm_back && break; sleep 0.1; done
[ "$(out)" = "True $r" ] && ok "after a kill -9 of the vmm the context resumes from its image with the same answer" || bad "after kill -9: $code $body"

# A restart of keepd keeps it too.
m=$(mark)
paused "$cid" "$m" || bad "third pause without an image"
keepd_restart
alice=$(mint alice sandbox:read,sandbox:write,exec)
m=$(mark)
for _ in $(seq "$(slow 100)"); do cell "$cid" 'print(r)'; vmm_back && break; sleep 0.1; done
[ "$(out)" = "$r" ] && grep -q "context $cid: resuming from its memory image" <(tail -n +"$m" "$tmp/log") &&
    ok "a restart of keepd keeps the image" || bad "after keepd restart: $code $body"

# Tampered: a page of the image's own bookkeeping overwritten. The vm
# process refuses it; the context comes back from its journal.
m=$(mark)
paused "$cid" "$m" || bad "fourth pause without an image"
printf '\xff\xff\xff\xff\xff\xff\xff\xff' | dd of="$dir/$cid.mem" bs=1 seek=128 conv=notrunc status=none
m=$(mark)
cell "$cid" 'print(k, open("count.txt").read())'
[ "$code" = 200 ] && [ "$(out)" = "6 xx" ] && grep -q "could not be restored" <(tail -n +"$m" "$tmp/log") &&
    ok "a tampered image is refused and the context resumes from its journal" || bad "tampered: $code $body"

# Cut short: the vmm does not use it.
m=$(mark)
paused "$cid" "$m" || bad "fifth pause without an image"
truncate -s 65536 "$dir/$cid.mem"
m=$(mark)
cell "$cid" 'print(k)'
[ "$(out)" = 6 ] && grep -q "resuming from its journal" <(tail -n +"$m" "$tmp/log") &&
    ok "an image cut short is not used" || bad "cut short: $code $body"

# A thread still running: not saved, paused to its journal.
req "$alice" POST "/v1/sandboxes/$sbx/contexts" '{}'
c2=$(jget "$body" '["id"]')
m=$(mark)
cell "$c2" 'import threading, time
threading.Thread(target=time.sleep, args=(600,), daemon=True).start()
v = 41'
# (On a slow machine the new context may pause once before its cell
# comes, idle past the policy's 1 s: the pause after the cell is meant.)
if paused "$c2" "$m"; then bad "a context with a running thread was saved"; else
	for _ in $(seq "$(slow 150)"); do
		grep -q "context $c2 paused.*cannot be saved" <(tail -n +"$m" "$tmp/log") && break
		sleep 0.1
	done
	grep -q "context $c2 paused.*cannot be saved" <(tail -n +"$m" "$tmp/log") && [ ! -f "$dir/$c2.mem" ] &&
	    ok "a context with a running thread pauses to its journal" || bad "thread pause: $(tail -n +"$m" "$tmp/log" | grep "$c2")"
fi
cell "$c2" 'print(v + 1)'
[ "$(out)" = 42 ] && ok "and resumes from it" || bad "thread context: $body"

# A cell that comes while the interpreter saves itself waits for the
# save, and the vmm serves other requests meanwhile. The saving vm
# process is held stopped (SIGSTOP) until another sandbox's request was
# answered: a vmm that waited for the save would answer it only after
# giving up on the process, which it would have killed by then.
req "$alice" POST /v1/sandboxes '{"image":"python"}'
other=$(jget "$body" '["id"]')
req "$alice" POST "/v1/sandboxes/$sbx/contexts" '{}'
c3=$(jget "$body" '["id"]')
cell "$c3" 'import os, hashlib
big = os.urandom(160 << 20)
h = hashlib.sha256(big).hexdigest()
print(h)'
h=$(out)
[ ${#h} = 64 ] || bad "big cell: $code $body"
vpid=$(grep "context $c3: interpreter started" "$tmp/log" | tail -n 1 | sed 's/.*vm pid //')
m=$(mark)
for _ in $(seq "$(slow 300)"); do tail -n +"$m" "$tmp/log" | grep -q "context $c3 idle.*saves" && break; sleep 0.01; done
kill -STOP "$vpid"
(cell "$c3" 'print(hashlib.sha256(big).hexdigest())'; printf '%s\n%s' "$code" "$body" >"$tmp/c3.out") &
cpid=$!
for _ in $(seq "$(slow 100)"); do tail -n +"$m" "$tmp/log" | grep -q "for context $c3 waits for it to pause" && break; sleep 0.05; done
tail -n +"$m" "$tmp/log" | grep -q "for context $c3 waits for it to pause" &&
    ok "a cell sent during the save waits for it" || bad "the cell did not wait: $(tail -n +"$m" "$tmp/log")"
req "$alice" GET "/v1/sandboxes/$other"
[ "$code" = 200 ] && kill -0 "$vpid" 2>/dev/null && [ ! -s "$tmp/c3.out" ] &&
    ok "the vmm answers another sandbox while a context saves itself" || bad "GET during save: $code"
kill -CONT "$vpid"
wait "$cpid"
code=$(head -n 1 "$tmp/c3.out"); body=$(tail -n +2 "$tmp/c3.out")
[ -n "$h" ] && [ "$(out)" = "$h" ] && grep -q "context $c3: resuming from its memory image" <(tail -n +"$m" "$tmp/log") &&
    ok "and then starts from the saved image" || bad "cell during save: $code $body"

# The image's own memory (1 GiB) and its reserve of address space (1
# GiB more): the save and the restore open only what the program holds,
# within the vm process's RLIMIT_DATA (opening the whole guest to read
# it was refused, and the context could only pause to its journal).
bob=$(mint bob sandbox:read,sandbox:write,exec)
req "$bob" POST /v1/sandboxes '{"image":"python"}'
bsbx=$(jget "$body" '["id"]')
req "$bob" POST "/v1/sandboxes/$bsbx/contexts" '{}'
bcid=$(jget "$body" '["id"]')
m=$(mark)
req "$bob" POST "/v1/sandboxes/$bsbx/execute" "{\"code\":\"w = 7\",\"context_id\":\"$bcid\"}"
paused "$bcid" "$m" && ok "a context with the image's whole memory saves its image" ||
    bad "no image with 1 GiB and a reserve: $(tail -n +"$m" "$tmp/log" | grep -i "$bcid\|not saved")"
m=$(mark)
req "$bob" POST "/v1/sandboxes/$bsbx/execute" "{\"code\":\"print(w)\",\"context_id\":\"$bcid\"}"
[ "$(out)" = 7 ] && grep -q "context $bcid: resuming from its memory image" <(tail -n +"$m" "$tmp/log") &&
    ! grep -q "could not be restored" <(tail -n +"$m" "$tmp/log") &&
    ok "and resumes from it" || bad "resume with 1 GiB: $body $(tail -n +"$m" "$tmp/log" | grep "$bcid")"

# A read-only mapping of an image file survives the image: after the
# restore it reads the file, and a forked child's write to it is a
# SIGSEGV where pages have rights (natively, and on the trap platform,
# which maps it read-only from the image again: docs/vmm.md "Image
# pages"); under KVM the child's own copy takes the write.
req "$alice" POST "/v1/sandboxes/$sbx/contexts" '{}'
c4=$(jget "$body" '["id"]')
cell "$c4" 'import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
img = open("/usr/lib/python3.11/os.py", "rb")
p = libc.mmap(None, 8192, 1, 2, img.fileno(), 0)
head = ctypes.string_at(p, 64)
print(head == img.read(64))'
# Marked after the cell: a new context on a loaded machine may pause
# once before its first cell comes, with nothing to save.
m=$(mark)
[ "$(out)" = True ] || bad "mapping cell: $code $body"
paused "$c4" "$m" && ok "a context holding a read-only image mapping saves its image" ||
    bad "no image with an image mapping: $(tail -n +"$m" "$tmp/log" | grep "$c4")"
m=$(mark)
cell "$c4" 'pid = os.fork()
if pid == 0:
    ctypes.memset(p, 0, 1)
    os._exit(0)
st = os.waitpid(pid, 0)[1]
print(ctypes.string_at(p, 64) == head, ctypes.string_at(p + 4096, 64) == open("/usr/lib/python3.11/os.py", "rb").read(8192)[4096:4160], os.WIFSIGNALED(st) and os.WTERMSIG(st))'
if [ "$KEEP_TEST_PLATFORM" = trap ]; then want="True True 11"; else want="True True False"; fi
[ "$(out)" = "$want" ] && grep -q "context $c4: resuming from its memory image" <(tail -n +"$m" "$tmp/log") &&
    ok "restored, the mapping reads the image and a child's write to it is $([ "$want" = "True True 11" ] && echo a SIGSEGV || echo its own)" ||
    bad "image mapping after restore: $code $body (want $want)"

# Deleting a context removes its image (paused again meanwhile).
for _ in $(seq "$(slow 150)"); do [ -f "$dir/$cid.mem" ] && break; sleep 0.1; done
[ -f "$dir/$cid.mem" ] || bad "sixth pause without an image"
req "$alice" DELETE "/v1/sandboxes/$sbx/contexts/$cid"
[ ! -e "$dir/$cid.mem" ] && [ ! -e "$dir/$cid" ] && ok "deleting a context removes its image" || bad "left: $(ls "$dir")"

keepd_finish
