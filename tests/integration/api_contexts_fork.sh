#!/usr/bin/env bash
# A context's fork carries its memory (docs/contexts.md, "Fork and
# snapshots"): forking a live, idle context saves its memory image, and
# the fork starts from it, so nothing is run again (a file appended to
# once is not appended to again) and what the source computed from
# random values is the same in the fork; but the fork's PRNGs are
# reseeded, as os.fork's child's are: the two draw different numbers
# from then on. The mark that asks for the reseed outlives a restart of
# keepd. A write in one is never seen in the other. A fork of a context
# in the middle of a cell takes its acknowledged cells (the journal).
# A whole sandbox's fork takes its contexts along, with their ids, from
# their memory images: a file a context holds open is open in the fork's
# copy of the workspace. The fork's contexts count toward the
# `contexts` quota. A named snapshot of an idle context holds its memory
# image too: restored into a new context, it starts from it (reseeded),
# also after a restart; deleting the snapshot removes its image.
source "$(dirname "$0")/../lib/keepd.sh"
vmm_back() { [ "$code" != 503 ] && [[ $body != *"no such sandbox"* ]]; }

cat >"$tmp/test.policy" <<'EOP'
agent "alice" {
	allow sandbox:read, sandbox:write, exec
	exec "python"
	timeout 20s
	memory 256M
	contexts 8
}
agent "bob" {
	allow sandbox:read, sandbox:write, exec
	exec "python"
	timeout 20s
	memory 256M
	contexts 2
}
EOP
keepd_start "$tmp/test.policy"
alice=$(mint alice sandbox:read,sandbox:write,exec)
req "$alice" POST /v1/sandboxes '{"image":"python"}'
sbx=$(jget "$body" '["id"]')
req "$alice" POST "/v1/sandboxes/$sbx/contexts" '{}'
src=$(jget "$body" '["id"]')
dir="$tmp/state/contexts/$sbx"
cell() { # cell CONTEXT CODE
	req "$alice" POST "/v1/sandboxes/$sbx/execute" "$(python3 -c 'import json, sys; print(json.dumps({"code": sys.argv[2], "context_id": sys.argv[1]}))' "$1" "$2")"
}
out() { jget "$body" '["stdout"]' 2>/dev/null; }
fork() { # fork CONTEXT -> the new id in fid
	req "$alice" POST "/v1/sandboxes/$sbx/contexts/$1/fork"
	fid=$(jget "$body" '["id"]' 2>/dev/null)
}
cell "$src" 'import random
first = random.random()
state = {"v": 1}
with open("appended.txt", "a") as f: f.write("x")
print(first)'
first=$(out)
[ -n "$first" ] || bad "first cell: $code $body"

m=$(mark)
fork "$src"
[ "$code" = 201 ] && [ "$(jget "$body" '["state"]')" = paused ] &&
    [ "$(jget "$body" '["execution_count"]')" = 1 ] && ok "fork: a new context, paused, with the one acknowledged cell" || bad "fork: $code $body"
grep -q "context $fid: from a fork of $src with its memory image" <(tail -n +"$m" "$tmp/log") &&
    ok "the fork took the source's memory image" || bad "no image for the fork: $(tail -n +"$m" "$tmp/log")"

m=$(mark)
cell "$fid" 'state["v"] = 2
print(first, state["v"], open("appended.txt").read())'
[ "$(out)" = "$first 2 x" ] && ok "the fork starts from the memory: the same values, nothing run again" || bad "fork's cell: $body"
grep -q "context $fid: resuming from its memory image" <(tail -n +"$m" "$tmp/log") &&
    ! grep -q "context $fid: resuming, " <(tail -n +"$m" "$tmp/log") && ok "(from its image, not its journal)" || bad "log: $(tail -n +"$m" "$tmp/log")"
cell "$src" 'print(state["v"], open("appended.txt").read())'
[ "$(out)" = "1 x" ] && ok "a write in the fork is not seen in the source, which goes on" || bad "source after fork: $body"

# The two draw different numbers from here on (the fork was reseeded).
cell "$src" 'print(random.random())'; a=$(out)
cell "$fid" 'print(random.random())'; b=$(out)
[ -n "$a" ] && [ -n "$b" ] && [ "$a" != "$b" ] && ok "the fork's random.random() differs from the source's" || bad "same PRNG: $a $b"

# The mark that asks for the reseed is on disk: a fork adopted by a
# restarted keepd before its first cell is reseeded as well.
fork "$src"; f2=$fid
[ "$code" = 201 ] || bad "second fork: $code $body"
grep -q '~fork' "$dir/$f2" && ok "the fork's journal is marked for a reseed" || bad "no mark in $f2's journal"
keepd_restart
alice=$(mint alice sandbox:read,sandbox:write,exec)
for _ in $(seq 100); do cell "$f2" 'print(random.random())'; vmm_back && break; sleep 0.1; done
b=$(out)
cell "$src" 'print(random.random())'; a=$(out)
[ -n "$a" ] && [ -n "$b" ] && [ "$a" != "$b" ] && ok "after a restart of keepd the fork is still reseeded" || bad "after restart: $a $b"
! grep -q '~fork' "$dir/$f2" && ok "and the mark is gone once its image was used" || bad "mark left"

# A fork of a context in the middle of a cell takes its acknowledged
# cells: it comes back from the journal, without the cell in flight.
(cell "$src" 'import time
time.sleep(3)
late = 1'; echo "$code" >"$tmp/late.code") &
lpid=$!
sleep 1
m=$(mark)
fork "$src"; f3=$fid
[ "$code" = 201 ] && ! grep -q "context $f3: from a fork of .* memory image" <(tail -n +"$m" "$tmp/log") &&
    ok "a fork during a cell is made from the journal" || bad "busy fork: $code $body"
wait "$lpid"
cell "$f3" 'print(state["v"], "late" in globals())'
[ "$(out)" = "1 False" ] && ok "and holds the acknowledged cells only" || bad "busy fork's state: $body"

# A sandbox's fork takes its contexts along.
req "$alice" POST /v1/sandboxes '{"image":"python"}'
s1=$(jget "$body" '["id"]')
req "$alice" POST "/v1/sandboxes/$s1/contexts" '{}'
k1=$(jget "$body" '["id"]')
sbx=$s1 cell "$k1" 'import random
held = open("held.txt", "w"); held.write("abc"); held.flush()
n = 7
print("ok")'
[ "$(out)" = ok ] || bad "s1 cell: $body"
m=$(mark)
req "$alice" POST "/v1/sandboxes/$s1/fork"
[ "$code" = 201 ] && ok "a sandbox with a context forks" || bad "sandbox fork: $code $body"
s2=$(jget "$body" '["id"]')
req "$alice" GET "/v1/sandboxes/$s2/contexts"
[ "$(jget "$body" '[0]["id"]' 2>/dev/null)" = "$k1" ] && [ "$(jget "$body" '[0]["state"]')" = paused ] &&
    ok "the fork has the context, with its id, paused" || bad "fork's contexts: $body"
grep -q "context $k1 of sandbox $s2: from a fork of $k1 with its memory image" <(tail -n +"$m" "$tmp/log") &&
    ok "from the context's memory image" || bad "no image: $(tail -n +"$m" "$tmp/log")"
sbx=$s2 cell "$k1" 'held.write("def"); held.close(); print(n, open("held.txt").read())'
[ "$(out)" = "7 abcdef" ] && ok "the fork's context has the state and the open file, in its own workspace" || bad "fork's context: $body"
sbx=$s1 cell "$k1" 'held.close(); print(n, open("held.txt").read())'
[ "$(out)" = "7 abc" ] && ok "the source's context and workspace are untouched" || bad "source after sandbox fork: $body"
sbx=$s1 cell "$k1" 'print(random.random())'; a=$(out)
sbx=$s2 cell "$k1" 'print(random.random())'; b=$(out)
[ -n "$a" ] && [ "$a" != "$b" ] && ok "and the two draw different numbers" || bad "sandbox fork PRNG: $a $b"

# Named snapshots hold the memory image of an idle context.
m=$(mark)
req "$alice" POST "/v1/sandboxes/$s1/contexts/$k1/snapshots" '{"name":"v1"}'
[ "$code" = 201 ] && grep -q "context $k1: snapshot v1 (.*its memory image)" <(tail -n +"$m" "$tmp/log") &&
    [ -f "$tmp/state/contexts/$s1/snap-v1.mem" ] && ok "a snapshot of an idle context holds its memory image" ||
    bad "snapshot: $code $body $(tail -n +"$m" "$tmp/log")"
req "$alice" GET "/v1/sandboxes/$s1/contexts/$k1/snapshots"
[ "$(jget "$body" '[0]["bytes"]')" -gt "$(stat -c %s "$tmp/state/contexts/$s1/snap-v1")" ] &&
    ok "its bytes count the image" || bad "snapshot bytes: $body"
keepd_restart
alice=$(mint alice sandbox:read,sandbox:write,exec)
for _ in $(seq 100); do req "$alice" POST "/v1/sandboxes/$s1/contexts" '{"snapshot":"v1"}'; vmm_back && break; sleep 0.1; done
[ "$code" = 201 ] || bad "restore: $code $body"
k2=$(jget "$body" '["id"]')
m=$(mark)
sbx=$s1 cell "$k2" 'print(n, held.closed)'
[ "$(out)" = "7 True" ] && grep -q "context $k2: resuming from its memory image" <(tail -n +"$m" "$tmp/log") &&
    ok "a snapshot restored after a restart starts from its memory image" || bad "restore from image: $body $(tail -n +"$m" "$tmp/log")"
sbx=$s1 cell "$k1" 'print(random.random())'; a=$(out)
sbx=$s1 cell "$k2" 'print(random.random())'; b=$(out)
[ -n "$a" ] && [ "$a" != "$b" ] && ok "and is reseeded" || bad "restored PRNG: $a $b"
req "$alice" DELETE "/v1/sandboxes/$s1/contexts/$k1/snapshots?name=v1"
[ ! -e "$tmp/state/contexts/$s1/snap-v1.mem" ] && [ ! -e "$tmp/state/contexts/$s1/snap-v1" ] &&
    ok "deleting the snapshot removes its image" || bad "snapshot delete: $code $(ls "$tmp/state/contexts/$s1")"

bob=$(mint bob sandbox:read,sandbox:write,exec)
req "$bob" POST /v1/sandboxes '{"image":"python"}'
s3=$(jget "$body" '["id"]')
req "$bob" POST "/v1/sandboxes/$s3/contexts" '{}'
req "$bob" POST "/v1/sandboxes/$s3/contexts" '{}'
req "$bob" POST "/v1/sandboxes/$s3/fork"
[ "$code" = 403 ] && [[ $body == *"Context limit"* ]] && ok "a fork whose contexts pass the quota is refused (403)" || bad "quota: $code $body"

keepd_finish
