#!/usr/bin/env bash
# A `keepd: vm` process reaches only its own workspace: confined exactly
# as a vm process is (host/vm_confine.c, through keepd's hidden -J mode,
# after the vmm's own privilege drop on a real keepd's state directory),
# it cannot open the LMDB store, another sandbox's workspace or uploads/,
# while its own workspace works; an AF_UNIX socket it may make (a
# guest's, docs/vmm.md "Sockets"), but no internet socket without a
# network namespace of its own, no netlink or packet socket, no unshare
# (SIGSYS); and under
# Landlock it cannot signal keepd's other processes, which run as the
# same user (ABI 6: LANDLOCK_SCOPE_SIGNAL). A template's holder, which
# boots image code shared by every principal, reaches only workspaces/,
# and its clones their own workspace. A real run still reads and writes
# its workspace.
source "$(dirname "$0")/../lib/keepd.sh"

cat >"$tmp/test.policy" <<'EOP'
agent "ann" {
	allow sandbox:read, sandbox:write, exec, artifact:read, artifact:write
	exec "cp", "mkdir", "cat", "python"
	timeout 10s
}
EOP
keepd_start "$tmp/test.policy"
ann=$(mint ann sandbox:read,sandbox:write,exec,artifact:read,artifact:write)
req "$ann" POST /v1/sandboxes '{"image":"toolbox"}'
a=$(jget "$body" '["id"]')
req "$ann" POST /v1/sandboxes '{"image":"toolbox"}'
b=$(jget "$body" '["id"]')
echo b >"$tmp/secret"
code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $ann" \
    --data-binary @"$tmp/secret" "$url/v1/sandboxes/$b/files/write?path=secret")
[ "$code" = 200 ] || bad "write b's secret: $code"
mkdir -p "$tmp/state/uploads" && echo u >"$tmp/state/uploads/u"
chown -R _keep: "$tmp/state/uploads"
# keys/ is root's; owned by _keep here, only Landlock stands in the way.
mkdir -p "$tmp/state/keys" && chmod 755 "$tmp/state/keys" && echo k >"$tmp/state/keys/k"
chown _keep: "$tmp/state/keys/k"

# A real run in a confined vm process uses its workspace as before.
req "$ann" POST "/v1/sandboxes/$a/commands/run" '{"cmd":"mkdir","args":["d"]}'
[ "$code" = 200 ] || bad "mkdir: $code $body"
echo hi >"$tmp/in"
curl -s -o /dev/null -H "Authorization: Bearer $ann" --data-binary @"$tmp/in" \
    "$url/v1/sandboxes/$a/files/write?path=in"
req "$ann" POST "/v1/sandboxes/$a/commands/run" '{"cmd":"cp","args":["in","d/f"]}'
[ "$code" = 200 ] || bad "cp: $code $body"
req "$ann" POST "/v1/sandboxes/$a/commands/run" '{"cmd":"cat","args":["d/f"]}'
[ "$code" = 200 ] && [ "$(jget "$body" '["stdout"]')" = hi ] &&
    ok "a run writes and reads its own workspace" || bad "run: $code $body"

db=$(cd "$tmp/state" && ls db/*.mdb | head -1)
[ -n "$db" ] || bad "no LMDB file under $tmp/state/db"
store=$(ps --ppid "$pid" -o pid=,args= | awk '/keepd: store/ { print $1; exit }')
out=$("$KEEPD" -J "$tmp/state" "workspaces/$a" "open:$db" "open:/$db" \
    "open:workspaces/$b/secret" "open:workspaces/$b" "open:uploads/u" \
    "open:images" "create:mine" "open:workspaces/$a/mine" "socket" \
    "inet" "inet6" "netlink" "packet" "unshare" \
    "kill:$store" "llkill:$store" \
    "holder:open:$db" "holder:open:uploads/u" "holder:open:images" \
    "holder:open:keys/k" "holder:llkill:$store" "clone:create:cloned" \
    "clone:open:workspaces/$b/secret" 2>&1)
echo "$out" | sed 's/^/  /'
expect() { # probe outcome-pattern what
	grep -q "^$1: $2" <<<"$out" && ok "$3" || bad "$3: $(grep "^$1:" <<<"$out")"
}
abi=$(awk '/^landlock abi/ { print $3 }' <<<"$out")
[ "${abi:-0}" -ge 6 ] || bad "this kernel should have Landlock ABI >= 6 (has ${abi:-none})"
expect "open:$db" denied "the LMDB store cannot be opened"
expect "open:/$db" denied "the LMDB store cannot be opened by an absolute path"
expect "open:workspaces/$b/secret" denied "another sandbox's file cannot be opened"
expect "open:workspaces/$b" denied "another sandbox's workspace cannot be listed"
expect "open:uploads/u" denied "uploads/ cannot be opened"
expect "open:images" denied "the image directory cannot be listed"
expect "create:mine" allowed "its own workspace can be written"
expect "open:workspaces/$a/mine" allowed "and read"
expect socket allowed "an AF_UNIX socket can be made (the guest's own)"
expect inet "killed by signal 31" "an AF_INET socket kills it without a network namespace of its own (SIGSYS)"
expect inet6 "killed by signal 31" "an AF_INET6 socket too"
expect netlink "killed by signal 31" "a netlink socket kills it"
expect packet "killed by signal 31" "a packet socket kills it"
expect unshare "killed by signal 31" "unshare kills it"
# kill is outside this branch's vm filter (SIGSYS); where a filter
# allows it, Landlock's signal scope refuses it.
expect "kill:$store" "killed by signal 31\|denied" "kill() of keepd's store process fails"
expect "llkill:$store" denied "under Landlock alone, kill() of keepd's store process is refused"
# A template's holder runs image code for every principal: the store,
# uploads, images and keys are out of its reach; its clone, confined on
# top of it, still writes its own workspace and nobody else's.
expect "holder:open:$db" "denied (Permission denied)" "a template's holder cannot open the LMDB store"
expect "holder:open:uploads/u" "denied (Permission denied)" "a template's holder cannot open uploads/"
expect "holder:open:images" "denied (Permission denied)" "a template's holder cannot list images/"
expect "holder:open:keys/k" "denied (Permission denied)" "a template's holder cannot open keys/"
expect "holder:llkill:$store" denied "a template's holder cannot signal the store process"
expect "clone:create:cloned" allowed "a clone writes its own workspace under the holder's layer"
expect "clone:open:workspaces/$b/secret" "denied (Permission denied)" "a clone cannot open another sandbox's file"
kill -0 "$store" && ok "the store still runs" || bad "the store was killed"

# A vm process holds its own image and no other: the vmm keeps every
# image it verified mapped and open (uploads are a principal's own), and
# a run's process drops all but its own before the guest starts. The
# toolbox image is the vmm's since the runs above; a python run, cold
# or a template's clone, must reach none of it.
req "$ann" POST /v1/sandboxes '{"image":"python"}'
py=$(jget "$body" '["id"]')
n0=$(grep -c "python in sandbox $py" "$tmp/log")
req "$ann" POST "/v1/sandboxes/$py/execute/background" \
    '{"code":"import time; time.sleep(3)","language":"python"}'
vp=
for _ in $(seq 100); do
	[ "$(grep -c "python in sandbox $py" "$tmp/log")" -gt "$n0" ] &&
	    vp=$(grep "python in sandbox $py" "$tmp/log" | tail -n 1 |
	        sed -n 's/.*vm pid \([0-9]*\).*/\1/p') && break
	sleep 0.1
done
maps=$(cat "/proc/$vp/maps" 2>/dev/null | grep -o '[^/ ]*\.img' | sort -u | tr '\n' ' ')
fds=$(ls -l "/proc/$vp/fd" 2>/dev/null | grep -o '[^/ ]*\.img' | sort -u | tr '\n' ' ')
[ -n "$vp" ] && [ "$maps" = "python.img " ] && [ -z "${fds/python.img /}" ] &&
    ok "a python run's vm process maps only python.img (fds: ${fds:-none})" ||
    bad "vm pid '$vp' maps '$maps', fds '$fds'"

keepd_finish
