#!/usr/bin/env bash
# The KVM platform end to end, once each, for make check-kvm's nested
# budget (tests/kvm.list: 20 minutes under QEMU's TCG on two cores, where
# the whole tests of each part, tests/kvm-full.list, take over an hour):
#  - fork, exec, pipes, signals and wait in one guest tree (busybox sh
#    running the workspace's applets), and threads: same as native;
#  - the calls the guest answers itself: the same answers as with every
#    call exiting (--trace);
#  - one API run through keepd, from the python image's template;
#  - a context that pauses to its memory image and resumes from it.
# Each is also tested at length on its own (vmm_procs, vmm_fastcalls,
# vmm_templates, api_e2e, api_contexts_memimage), natively in make check.
source "$(dirname "$0")/../lib/keepd.sh"
G=$(cd "$B/guests" && pwd)

# ---- keep run: one guest tree ---------------------------------------------
ws=$tmp/ws; nws=$tmp/native_ws
mkdir -p "$ws/bin" "$nws" "$tmp/bb"
cp /bin/busybox "$ws/bin/"
for a in tr seq sort head wc cat sleep; do
	ln -s busybox "$ws/bin/$a"; ln -s /bin/busybox "$tmp/bb/$a"
done
script='echo a | tr a b; seq 1 200 | sort -r | head -2; x=$(echo sub | tr s S); echo "got $x"
echo redir > f.txt; cat < f.txt; wc -l < f.txt
trap "echo trapped" USR1; kill -USR1 $$; echo after
(exit 3) & sleep 0.1 & wait; echo "both $?"; exit 4'
(cd "$nws" && PATH=$tmp/bb exec /bin/busybox sh -c "$script") >"$tmp/native" 2>&1; nrc=$?
"$KEEP" run --timeout "$(slow 20)s" --workspace "$ws" --env PATH=/bin \
    /bin/busybox sh -c "$script" >"$tmp/keep" 2>&1; krc=$?
[ "$nrc" -eq "$krc" ] && cmp -s "$tmp/native" "$tmp/keep" &&
    ok "fork, exec, pipes, a trapped signal and wait in one tree: same as native (exit $krc)" ||
    bad "one tree: native $nrc keep $krc: $(diff "$tmp/native" "$tmp/keep")"

"$G/threads" >"$tmp/native" 2>&1; nrc=$?
"$KEEP" run --timeout "$(slow 20)s" "$G/threads" >"$tmp/keep" 2>&1; krc=$?
[ "$nrc" -eq "$krc" ] && cmp -s "$tmp/native" "$tmp/keep" &&
    ok "threads: same as native" || bad "threads: native $nrc keep $krc: $(diff "$tmp/native" "$tmp/keep")"

# ---- keep run: the calls the guest answers ---------------------------------
mkdir "$tmp/k" && "$KEEP" key generate --out "$tmp/k" >/dev/null || exit 1
printf 'hello world\n' >"$tmp/a"
"$KEEP" image build --name f --version 1 --defer-hashes --file "/d/a.txt=$tmp/a" \
    "$G/fastcalls" -o "$tmp/f.img" &&
    "$KEEP" image sign --key "$tmp/k/keep.secret" "$tmp/f.img" >/dev/null || exit 1
frun() { "$KEEP" run --timeout "$(slow 20)s" --trust "$tmp/k/keep.public" "$@"; }
frun "$tmp/f.img" fastcalls >"$tmp/fast" 2>"$tmp/fast.err"; rc1=$?
frun --trace "$tmp/f.img" fastcalls >"$tmp/slow" 2>/dev/null; rc2=$?
[ $rc1 -eq 0 ] && [ $rc2 -eq 0 ] && cmp -s "$tmp/fast" "$tmp/slow" &&
    [ "$(grep -c ': ' "$tmp/fast")" -gt 500 ] &&
    ok "the calls answered in the guest: the same answers as from the VMM ($(wc -l <"$tmp/fast") lines)" ||
    bad "fast calls: rc $rc1/$rc2: $(diff "$tmp/slow" "$tmp/fast" | head -5) $(head -3 "$tmp/fast.err")"

# ---- keepd: a run from the template, a context's memory image --------------
# A context pauses after 1 s idle natively; nested, a cell takes seconds.
cat >"$tmp/test.policy" <<EOP
agent "alice" {
	allow sandbox:read, sandbox:write, exec
	exec "python"
	timeout $(slow 10)s
	memory 512M
	contexts 2
	pause $(((SLOW + 9) / 10))s
}
EOP
KEEPD_IMAGES=python keepd_start "$tmp/test.policy"
alice=$(mint alice sandbox:read,sandbox:write,exec)
req "$alice" POST /v1/sandboxes '{"image":"python"}'
sbx=$(jget "$body" '["id"]')
[ "$code" = 201 ] || { bad "sandbox: $code $body"; keepd_finish; exit 1; }

# The first run boots the image and starts its template beside it.
req "$alice" POST "/v1/sandboxes/$sbx/execute" '{"code":"print(6)"}'
for _ in $(seq "$(slow 300)"); do
	grep -q "template python python .*: ready" "$tmp/log" && break; sleep 0.1
done
m=$(mark)
req "$alice" POST "/v1/sandboxes/$sbx/execute" '{"code":"print(6*7)"}'
[ "$code" = 200 ] && [ "$(jget "$body" '["stdout"]')" = 42 ] &&
    [ "$(jget "$body" '["platform"]')" = "$KEEP_TEST_PLATFORM" ] &&
    ok "an API run through keepd, on $KEEP_TEST_PLATFORM" || bad "execute: $code $body"
grep -q "run [0-9]*: python in sandbox .*from its template" <(tail -n +"$m" "$tmp/log") &&
    ok "it ran as a clone of the python template" || bad "not from the template: $(grep -i template "$tmp/log" | tail -3)"

req "$alice" POST "/v1/sandboxes/$sbx/contexts" '{}'
cid=$(jget "$body" '["id"]')
cell() {
	req "$alice" POST "/v1/sandboxes/$sbx/execute" \
	    "$(python3 -c 'import json, sys; print(json.dumps({"code": sys.argv[2], "context_id": sys.argv[1]}))' "$cid" "$1")"
}
# The pause to look for is the one after this cell: the context may have
# paused once, with nothing to save, before the cell came.
cell 'import random
r = random.random()
print(r)'
m=$(mark)
r=$(jget "$body" '["stdout"]' 2>/dev/null)
[ "$code" = 200 ] && [ -n "$r" ] || bad "first cell: $code $body"
paused "$cid" "$m" && ok "an idle context pauses to its memory image" || bad "no memory image"
m=$(mark)
cell 'print(r)'
[ "$(jget "$body" '["stdout"]' 2>/dev/null)" = "$r" ] &&
    grep -q "context $cid: resuming from its memory image" <(tail -n +"$m" "$tmp/log") &&
    ok "the next cell resumes from the image with the same value" || bad "resume: $code $body (r was $r)"

keepd_finish
