#!/usr/bin/env bash
# Templates (docs/templates.md): runs of a command an image's template
# serves start as copy-on-write clones of a guest parked at its ready
# call. With tests/guests/ready (a template that reports what it sees)
# and the python image:
#  - clones run, from the template, with the run's argv and environment;
#  - two clones never share random output (getrandom; Python's random,
#    os.urandom and numpy.random);
#  - a run that writes memory does not affect the next clone, nor a clone
#    another principal gets;
#  - another memory limit is another template; a new upload of the image
#    drops its template and the next one boots the new image;
#  - python from the template prints what a cold `keep run` prints;
#  - runs that overlap, each taking a spare in turn, each answer whole
#    (a run cut short by the vmm reaping it as a spare answered exit 0
#    with no output), and each is a clone: the holder makes the next
#    spare after a run ends, or sooner when a run goes on or a request
#    waits.
# run-tests: alone (templates held and timed across runs; another keepd's
# hard link to the same image makes the vmm rebuild them)
source "$(dirname "$0")/../lib/keepd.sh"

cat >"$tmp/test.policy" <<'EOP'
agent "alice" {
	allow image:read, image:write, sandbox:read, sandbox:write, exec
	exec "ready", "python", "greet"
}
agent "bob" {
	allow image:read, sandbox:read, sandbox:write, exec
	exec "ready", "python"
}
agent "carol" {
	allow image:read, sandbox:read, sandbox:write, exec
	exec "ready"
	memory 32M
}
EOP
keepd_start "$tmp/test.policy"
alice=$(mint alice image:read,image:write,sandbox:read,sandbox:write,exec)
bob=$(mint bob image:read,sandbox:read,sandbox:write,exec)
carol=$(mint carol image:read,sandbox:read,sandbox:write,exec)

# wait_log PATTERN: a bounded poll of keepd's log.
wait_log() {
	for _ in $(seq 600); do
		grep -q "$1" "$tmp/log" && return 0
		sleep 0.1
	done
	return 1
}
count_log() { grep -c "$1" "$tmp/log"; }
upload() { # TOKEN FILE
	body=$(curl -s -o - -w '\n%{http_code}' -H "Authorization: Bearer $1" \
	    --data-binary @"$2" "$url/v1/images")
	code=${body##*$'\n'}; body=${body%$'\n'*}
}
build_ready() { # VERSION BOOT-ARG
	printf '# test template\ncommand ready\narg %s\n' "$2" >"$tmp/tpl"
	"$KEEP" image build --name rdy --version "$1" --memory 64M \
	    --command ready --file /etc/keep/template="$tmp/tpl" \
	    "$B/guests/ready" -o "$tmp/rdy.img" >/dev/null &&
	    "$KEEP" image sign --key "$B/keys/dev.secret" "$tmp/rdy.img" >/dev/null
}
run_ready() { # TOKEN SANDBOX MARK
	req "$1" POST "/v1/sandboxes/$2/commands/run" \
	    "{\"cmd\":\"ready\",\"args\":[\"a b\",\"exit=7\"],\"env\":{\"MARK\":\"$3\"}}"
	out=$(jget "$body" '["stdout"]' 2>/dev/null)
}

build_ready 1 v1 || bad "build the ready image"
upload "$alice" "$tmp/rdy.img"
[ "$code" = 201 ] || bad "upload: $code $body"
req "$alice" POST /v1/sandboxes '{"image":"rdy"}'
sa=$(jget "$body" '["id"]')
req "$bob" POST /v1/sandboxes '{"image":"rdy"}'
sb=$(jget "$body" '["id"]')
req "$carol" POST /v1/sandboxes '{"image":"rdy"}'
sc=$(jget "$body" '["id"]')

# The first run boots cold (the program is not a template there) and
# starts the template's boot.
run_ready "$alice" "$sa" first
[[ $out == "cold: ready answered"* ]] && ok "the first run boots cold while the template boots" ||
    bad "first run: $body"
wait_log "template rdy ready (64 MiB guest memory): ready" &&
    ok "the template reaches its ready call and is held" || bad "no template: $(grep template "$tmp/log")"

run_ready "$alice" "$sa" one
a1=$out; c1=$(jget "$body" '["exit_code"]')
[[ $a1 == *"boot=v1"*"argv[0]=ready"*"argv[1]=a b"*"argv[2]=exit=7"*"MARK=one"*"pid=1"*"clones_seen=1"*"table_intact=yes"* ]] &&
    [ "$c1" = 7 ] && ok "a clone runs the request: its argv, environment and exit status" ||
    bad "clone: $c1 $body"
[ "$(count_log 'from its template')" = 1 ] && ok "and the vmm started it from the template" ||
    bad "not from the template: $(grep 'run [0-9]*:' "$tmp/log")"

# That clone zeroed the template's table: neither the next clone nor
# another principal's sees it.
run_ready "$alice" "$sa" two
a2=$out
[[ $a2 == *"clones_seen=1"*"table_intact=yes"* ]] &&
    ok "a run that writes memory does not affect the next clone" || bad "second clone: $a2"
run_ready "$bob" "$sb" three
b1=$out
[[ $b1 == *"boot=v1"*"MARK=three"*"clones_seen=1"*"table_intact=yes"* ]] &&
    ok "another principal's clone holds only what the image put there" || bad "bob's clone: $b1"
[ "$(count_log 'from its template')" = 3 ] && [ "$(count_log 'template rdy ready (64 MiB guest memory): booting')" = 1 ] &&
    ok "the three clones share one template" || bad "templates: $(grep template "$tmp/log")"
r1=$(grep -o 'random=.*' <<<"$a1"); r2=$(grep -o 'random=.*' <<<"$a2"); r3=$(grep -o 'random=.*' <<<"$b1")
[ -n "$r1" ] && [ "$r1" != "$r2" ] && [ "$r2" != "$r3" ] && [ "$r1" != "$r3" ] &&
    ok "clones never share random output ($r1, $r2, $r3)" || bad "random: $r1 $r2 $r3"

# Another guest memory size is another template.
run_ready "$carol" "$sc" four
wait_log "template rdy ready (32 MiB guest memory): ready" &&
    ok "another memory limit boots a template of its own" || bad "32M template: $(grep template "$tmp/log")"
run_ready "$carol" "$sc" five
[[ $out == *"boot=v1"*"MARK=five"*"table_intact=yes"* ]] && ok "and runs from it" || bad "32M clone: $out"

# A new upload of the image drops its templates; the next boots the new
# image.
build_ready 2 v2 || bad "build v2"
upload "$alice" "$tmp/rdy.img"
[ "$code" = 201 ] || bad "upload v2: $code $body"
wait_log "template rdy ready: dropped with its image" && ok "a new upload drops the image's template" ||
    bad "not dropped: $(grep template "$tmp/log")"
run_ready "$alice" "$sa" six
for _ in $(seq 600); do
	[ "$(count_log 'template rdy ready (64 MiB guest memory): ready')" = 2 ] && break
	sleep 0.1
done
run_ready "$alice" "$sa" seven
[[ $out == *"boot=v2"*"MARK=seven"* ]] && ok "the template is rebuilt from the new image" || bad "after v2: $out"

# A template that ends before its ready call fails, is logged with the
# reason, and its image's runs go on booting cold.
printf 'command greet\n' >"$tmp/badtpl"
"$KEEP" image build --name badtpl --version 1 --memory 32M --command greet \
    --file /etc/keep/template="$tmp/badtpl" "$B/guests/args" -o "$tmp/badtpl.img" >/dev/null &&
    "$KEEP" image sign --key "$B/keys/dev.secret" "$tmp/badtpl.img" >/dev/null || bad "build badtpl"
upload "$alice" "$tmp/badtpl.img"
req "$alice" POST /v1/sandboxes '{"image":"badtpl"}'
sbad=$(jget "$body" '["id"]')
req "$alice" POST "/v1/sandboxes/$sbad/commands/run" '{"cmd":"greet","args":["one"]}'
wait_log "template badtpl greet failed: the template ended before its ready call" &&
    ok "a template that never reaches its ready call is reported" || bad "badtpl: $(grep badtpl "$tmp/log")"
req "$alice" POST "/v1/sandboxes/$sbad/commands/run" '{"cmd":"greet","args":["two"]}'
[[ $(jget "$body" '["stdout"]') == *"argv[1]=two"* ]] && ok "and its image's runs boot cold" || bad "badtpl run: $body"

# keep run --template: the first run boots cold and starts this user's
# template holder for the image; once it listens, runs are its clones.
before=$(ls /run/keep-template-* 2>/dev/null)
krt() { "$KEEP" run --template --env MARK="$1" --trust "$B/keys/dev.public" "$tmp/rdy.img" ready "exit=7"; }
out=$(krt k0)
[[ $out == "cold: ready answered"* ]] && ok "keep run --template boots cold without a holder" || bad "krt cold: $out"
sock=
for _ in $(seq 600); do
	sock=$(comm -13 <(echo "$before") <(ls /run/keep-template-* 2>/dev/null) | grep -v '\.lock$' | head -n 1)
	[ -n "$sock" ] && break
	sleep 0.1
done
holder=$(ss -xlpn 2>/dev/null | grep -F "$sock " | sed -n 's/.*pid=\([0-9]*\).*/\1/p' | head -n 1)
k1=$(krt k1); r1=$?
k2=$(krt k2)
[ -n "$sock" ] && [ "$r1" = 7 ] && [[ $k1 == *"boot=v2"*"argv[1]=exit=7"*"MARK=k1"*"table_intact=yes"* ]] &&
    [[ $k2 == *"MARK=k2"*"table_intact=yes"* ]] &&
    [ "$(grep -o 'random=.*' <<<"$k1")" != "$(grep -o 'random=.*' <<<"$k2")" ] &&
    ok "keep run --template runs clones of the held template ($sock)" || bad "krt: $sock $r1 $k1 / $k2"
[ -n "$holder" ] && kill "$holder" 2>/dev/null
[ -n "$sock" ] && rm -f "$sock" "$sock.lock"

# The same with the python image, whose shared libraries are image files
# the loader maps and writes: its clones print as a cold start does.
# new_holder MARK: the socket of a holder made (or a stale one replaced)
# since MARK was touched, once it listens; holder_pid SOCKET: its pid.
new_holder() {
	local s=
	for _ in $(seq 600); do
		s=$(find /run -maxdepth 1 -type s -name 'keep-template-*' -newer "$1" | head -n 1)
		[ -n "$s" ] && break
		sleep 0.1
	done
	echo "$s"
}
holder_pid() { ss -xlpn 2>/dev/null | grep -F "$1 " | sed -n 's/.*pid=\([0-9]*\).*/\1/p' | head -n 1; }
touch "$tmp/kpy.mark"
kpy() { "$1" run --template --trust "$B/keys/dev.public" "$B/images/python.img" python -c 'import sys, json; print(sys.version_info[:2], json.dumps([1]))'; }
cold=$(kpy "$KEEP" 2>&1)
sock=$(new_holder "$tmp/kpy.mark")
holder=$(holder_pid "$sock")
p1=$(kpy "$KEEP" 2>&1); r1=$?
p2=$(kpy "$KEEP" 2>&1); r2=$?
[ -n "$sock" ] && [ "$cold" = "(3, 11) [1]" ] && [ "$r1" = 0 ] && [ "$p1" = "$cold" ] &&
    [ "$r2" = 0 ] && [ "$p2" = "$cold" ] &&
    ok "keep run --template: the python image's clones run as its cold start" ||
    bad "python clones: sock '$sock', cold '$cold', $r1 '$p1', $r2 '$p2'"
# Another build of keep (here a copy: another inode) never talks to
# this holder, whose messages may be laid out otherwise.
cp "$KEEP" "$tmp/keep-other"
touch "$tmp/other.mark"
p3=$(kpy "$tmp/keep-other" 2>&1); r3=$?
other=$(new_holder "$tmp/other.mark")
[ "$r3" = 0 ] && [ "$p3" = "$cold" ] && [ -n "$other" ] && [ "$other" != "$sock" ] &&
    ok "another build of keep starts a holder of its own" ||
    bad "another build: $r3 '$p3', socket '$other' (this build's '$sock')"
oholder=$(holder_pid "$other")
[ -n "$oholder" ] && kill "$oholder" 2>/dev/null
[ -n "$other" ] && rm -f "$other" "$other.lock"
[ -n "$holder" ] && kill "$holder" 2>/dev/null
[ -n "$sock" ] && rm -f "$sock" "$sock.lock"

# Python: the stock image's template (numpy imported). The first execute
# boots it; later ones are clones.
req "$alice" POST /v1/sandboxes '{"image":"python"}'
py=$(jget "$body" '["id"]')
code_rand='import random, os, numpy; print(random.random(), os.urandom(8).hex(), numpy.random.rand())'
req "$alice" POST "/v1/sandboxes/$py/execute" "$(python3 -c 'import json,sys; print(json.dumps({"code":sys.argv[1],"language":"python"}))' "$code_rand")"
wait_log "template python python (1024 MiB guest memory): ready" && ok "the python template boots" ||
    bad "no python template: $(grep 'template python' "$tmp/log")"
# Its probe ran under the holder's filters and found the pages a clone
# of an execute writes (docs/templates.md); on the trap platform, which
# has no dirty log, there is none and the log says so.
if grep -q "platform: trap" "$tmp/log"; then
	grep -q "template python: no probe: spares copy nothing ahead" "$tmp/log" &&
	    ok "no probe on the trap platform, and the log says so" ||
	    bad "trap: $(grep 'template python:' "$tmp/log")"
else grep -q "template python: a clone writes [1-9][0-9]* pages at least" "$tmp/log" &&
    ok "the template's probe: $(grep -o 'a clone writes [0-9]* pages' "$tmp/log" | tail -n 1)" ||
    bad "no probe: $(grep 'template python:' "$tmp/log")"
fi
exec_py() { # CODE -> body
	req "$alice" POST "/v1/sandboxes/$py/execute" \
	    "$(python3 -c 'import json,sys; print(json.dumps({"code":sys.argv[1],"language":"python"}))' "$1")"
}
exec_py "$code_rand"; p1=$(jget "$body" '["stdout"]')
exec_py "$code_rand"; p2=$(jget "$body" '["stdout"]')
[ -n "$p1" ] && [ -n "$p2" ] && [ "$p1" != "$p2" ] &&
    ! [ "$(cut -d' ' -f1 <<<"$p1")" = "$(cut -d' ' -f1 <<<"$p2")" ] &&
    ! [ "$(cut -d' ' -f2 <<<"$p1")" = "$(cut -d' ' -f2 <<<"$p2")" ] &&
    ! [ "$(cut -d' ' -f3 <<<"$p1")" = "$(cut -d' ' -f3 <<<"$p2")" ] &&
    ok "two python clones draw different random.random, os.urandom and numpy.random values" ||
    bad "python random: '$p1' '$p2'"
# A clone's forked child writes the code of libraries the template
# mapped (libc, numpy's extension): a SIGSEGV where pages have rights
# (natively, and on trap, whose clones map the image's read-only pages
# again: docs/vmm.md "Image pages"); under KVM the child's own copy.
code_ro='import ctypes, os, numpy.core._multiarray_umath as m
def child_writes(addr):
    pid = os.fork()
    if pid == 0:
        ctypes.memset(addr, 0xcc, 1)
        os._exit(0)
    st = os.waitpid(pid, 0)[1]
    return os.WIFSIGNALED(st) and os.WTERMSIG(st)
libc = ctypes.CDLL(None)
ext = ctypes.CDLL(m.__file__)
print(child_writes(ctypes.cast(libc.printf, ctypes.c_void_p).value), child_writes(ctypes.cast(ext.PyInit__multiarray_umath, ctypes.c_void_p).value), numpy.arange(4).sum() if "numpy" in dir() else __import__("numpy").arange(4).sum())'
exec_py "$code_ro"; pro=$(jget "$body" '["stdout"]')
if grep -q "platform: trap" "$tmp/log"; then want_ro="11 11 6"; else want_ro="False False 6"; fi
[ "$pro" = "$want_ro" ] && [ "$want_ro" = "11 11 6" ] &&
    ok "trap: a clone's child writing a library's code is a SIGSEGV, as natively" ||
    { [ "$pro" = "$want_ro" ] && ok "kvm: a clone's child writing a library's code writes its own copy"; } ||
    bad "library code write from a clone: '$pro' (want '$want_ro') $body"

# The same programs cold (keep run) and from the template (execute):
# the same stdout, stderr and exit status, byte for byte.
n=0
while IFS= read -r prog; do
	n=$((n + 1))
	"$KEEP" run --trust "$B/keys/dev.public" "$B/images/python.img" python -c "$prog" \
	    >"$tmp/cold.out" 2>"$tmp/cold.err"
	echo $? >"$tmp/cold.rc"
	exec_py "$prog"
	python3 -c 'import json, sys
r = json.loads(sys.argv[1])
open(sys.argv[2] + ".out", "w").write(r["stdout"])
open(sys.argv[2] + ".err", "w").write(r["stderr"])
open(sys.argv[2] + ".rc", "w").write("%d\n" % r["exit_code"])' "$body" "$tmp/warm"
	cmp -s "$tmp/cold.out" "$tmp/warm.out" && cmp -s "$tmp/cold.err" "$tmp/warm.err" &&
	    cmp -s "$tmp/cold.rc" "$tmp/warm.rc" &&
	    ok "program $n: the clone prints what a cold start prints" ||
	    bad "program $n: cold $(cat "$tmp/cold.out" "$tmp/cold.err" "$tmp/cold.rc") vs template $body"
done <<'EOF'
import sys; print(sum(range(100)), sys.argv, __name__, sys.path[0] == '')
import os; print(sorted(k for k in os.environ if k.startswith(('MPL', 'HOME', 'OMP'))))
import sys; print('to stderr', file=sys.stderr); sys.exit(3)
print(undefined_name)
import atexit; atexit.register(print, 'at exit'); print('main')
raise SystemExit('a message')
print(len(open('/etc/keep/environment').read()) > 0, __builtins__.__name__)
D = type('D', (), {'__del__': lambda self: print('released')}); d = D(); print('main')
import threading, time; threading.Thread(target=lambda: (time.sleep(0.2), print('joined'))).start(); print('main')
1 + 1
import sys; OUT = sys.stdout; sys.stdout = type('W', (), {'write': lambda self, s: OUT.write(s.upper()), 'flush': lambda self: OUT.flush()})(); print('through a stream of its own')
EOF
[ "$(count_log 'run [0-9]*: python in sandbox .*from its template')" -ge 9 ] &&
    ok "the python executes ran from the template" || bad "python runs: $(grep 'run [0-9]*: python' "$tmp/log")"
# A file the program never closed is flushed at its exit, as the
# interpreter's teardown does.
exec_py "f = open('unclosed.txt', 'w'); f.write('kept')"
exec_py "print(open('unclosed.txt').read())"
[ "$(jget "$body" '["stdout"]')" = kept ] && ok "a file left open is flushed when the clone exits" ||
    bad "unclosed file: $body"
# Runs at once, each long enough to be running when the next spares are
# announced: every one answers whole, and nothing is reaped as a spare
# that is a run's (docs/templates.md).
before=$(count_log 'python in sandbox .* from its template')
body_sleep=$(python3 -c 'import json; print(json.dumps({"code": "import time, os; time.sleep(1); print(\"whole\", os.getpid() > 0)", "language": "python"}))')
for round in 1 2; do
	spids=
	for i in 1 2 3 4 5; do
		curl -s -m 120 -X POST -H "Authorization: Bearer $alice" -H 'Content-Type: application/json' \
		    -d "$body_sleep" "$url/v1/sandboxes/$py/execute" >"$tmp/overlap.$round.$i" &
		spids="$spids $!"
		sleep 0.1
	done
	wait $spids
done
nwhole=0
for f in "$tmp"/overlap.*; do
	[ "$(jget "$(cat "$f")" '["stdout"]' 2>/dev/null)" = "whole True" ] && nwhole=$((nwhole + 1))
done
[ $nwhole = 10 ] && ! grep -q "announced after its run began" "$tmp/log" &&
    [ $(($(count_log 'python in sandbox .* from its template') - before)) = 10 ] &&
    ok "ten overlapping runs from the template each answer whole" ||
    bad "overlapping runs: $nwhole of 10 whole, $(($(count_log 'python in sandbox .* from its template') - before)) of 10 from the template: $(head -c 300 "$tmp"/overlap.*)"
exec_py 'x = 42'
exec_py 'print(x)'
[[ $(jget "$body" '["stderr"]') == *"NameError"* ]] && ok "an execute does not see the last one's variables" ||
    bad "state leaked: $body"
keepd_finish
