#!/usr/bin/env bash
# POST /v1/sandboxes/{id}/fork (issue 19): a new sandbox with the same
# image and environment and a copy of the workspace, independent from
# then on; links copied as links, FIFOs left out; another principal's
# sandbox cannot be forked; the `sandboxes` quota counts forks; a
# workspace larger than the quota is refused 507 and leaves nothing; the
# fork is audited and survives a restart; `keep api sandbox fork` drives it.
source "$(dirname "$0")/../lib/keepd.sh"

cat >"$tmp/test.policy" <<'EOP'
agent "ann" {
	allow sandbox:read, sandbox:write, exec, artifact:read, artifact:write
	exec "cat"
	sandboxes 3
	timeout 10s
}
agent "bob" {
	allow sandbox:read, sandbox:write, artifact:read
}
EOP
keepd_start "$tmp/test.policy"
ann=$(mint ann sandbox:read,sandbox:write,exec,artifact:read,artifact:write)
bob=$(mint bob sandbox:read,sandbox:write,artifact:read)
ws() { echo "$tmp/state/workspaces/$1"; }
read_file() { # SANDBOX PATH -> body
	body=$(curl -s -H "Authorization: Bearer $ann" "$url/v1/sandboxes/$1/files/read?path=$2")
}
put_file() { # SANDBOX PATH TEXT
	printf '%s' "$3" | curl -s -o /dev/null -w '%{http_code}' \
	    -H "Authorization: Bearer $ann" --data-binary @- \
	    "$url/v1/sandboxes/$1/files/write?path=$2"
}

req "$ann" POST /v1/sandboxes '{"image":"toolbox","env":{"GREETING":"hello"}}'
[ "$code" = 201 ] || bad "create: $code $body"
a=$(jget "$body" '["id"]')
[ "$(put_file "$a" a.txt alpha)" = 200 ] || bad "write a.txt"
for d in d d/e; do
	req "$ann" POST "/v1/sandboxes/$a/files/mkdir?path=$d"
	[ "$code" = 200 ] || [ "$code" = 201 ] || bad "mkdir $d: $code $body"
done
[ "$(put_file "$a" d/e/b.txt beta)" = 200 ] || bad "write d/e/b.txt"
# What only a guest (or a hostile one) leaves: a link out, a FIFO.
ln -s /etc/passwd "$(ws "$a")/link"
mkfifo "$(ws "$a")/fifo"
chown -h _keep: "$(ws "$a")/link" "$(ws "$a")/fifo"

req "$ann" POST "/v1/sandboxes/$a/fork" ''
[ "$code" = 201 ] && ok "fork: 201" || bad "fork: $code $body"
f=$(jget "$body" '["id"]')
[ -n "$f" ] && [ "$f" != "$a" ] && ok "the fork has an id of its own" || bad "fork id: $f"
[ -n "$(jget "$body" '["auth_token"]')" ] && ok "and a token scoped to it" || bad "no token: $body"
[ "$(jget "$body" '["image"]')" = toolbox ] && ok "the same image" || bad "image: $body"
read_file "$f" a.txt
[ "$body" = alpha ] && ok "the fork holds a.txt" || bad "a.txt in the fork: $body"
read_file "$f" d/e/b.txt
[ "$body" = beta ] && ok "and d/e/b.txt" || bad "d/e/b.txt in the fork: $body"
[ "$(readlink "$(ws "$f")/link")" = /etc/passwd ] && ok "a link is copied as a link, not followed" ||
    bad "link: $(ls -l "$(ws "$f")" 2>&1)"
[ ! -e "$(ws "$f")/fifo" ] && [ ! -L "$(ws "$f")/fifo" ] && ok "a FIFO is left out" || bad "the FIFO was copied"
req "$ann" GET "/v1/sandboxes/$f/env"
[[ $body == *'"GREETING"'*'"hello"'* ]] && ok "the same environment" || bad "env: $code $body"
req "$ann" POST "/v1/sandboxes/$f/commands/run" '{"cmd":"cat","args":["a.txt"]}'
[ "$code" = 200 ] && [ "$(jget "$body" '["stdout"]')" = alpha ] &&
    ok "a run in the fork reads the copy" || bad "run in fork: $code $body"

# Independent from now on, both ways.
[ "$(put_file "$f" only-fork.txt x)" = 200 ] || bad "write in the fork"
[ "$(put_file "$a" a.txt changed)" = 200 ] || bad "rewrite in the source"
req "$ann" GET "/v1/sandboxes/$a/files/exists?path=only-fork.txt"
[[ $body == *false* ]] && ok "a write in the fork is not in the source" || bad "exists: $body"
read_file "$f" a.txt
[ "$body" = alpha ] && ok "a write in the source is not in the fork" || bad "fork a.txt: $body"

req "$bob" POST "/v1/sandboxes/$a/fork" ''
[ "$code" = 404 ] && ok "another principal cannot fork it: 404" || bad "bob's fork: $code $body"
req "$ann" POST "/v1/sandboxes/sbx-nosuchsandboxxxxxxxxx/fork" ''
[ "$code" = 404 ] && ok "no such sandbox: 404" || bad "unknown: $code $body"
req "$ann" POST "/v1/sandboxes/$a/fork" '{"image":"python"}'
[ "$code" = 400 ] && ok "a fork takes no image: 400" || bad "fork with image: $code $body"

# sandboxes 3: a, f and one more fork; the next is refused.
req "$ann" POST "/v1/sandboxes/$f/fork" '{"ttl":600}'
[ "$code" = 201 ] && ok "a fork of a fork" || bad "second fork: $code $body"
g=$(jget "$body" '["id"]')
req "$ann" POST "/v1/sandboxes/$a/fork" ''
[ "$code" = 403 ] && [[ $body == *quota* ]] && ok "forks count against the sandboxes quota: 403" ||
    bad "past quota: $code $body"
req "$ann" DELETE "/v1/sandboxes/$g"

"$KEEP" audit export --data "$tmp/state" --since 1h >"$tmp/audit.jsonl" 2>/dev/null
grep '"sandbox.fork"' "$tmp/audit.jsonl" | grep -q "from $a" &&
    ok "audited as sandbox.fork, from its source" || bad "audit: $(grep -c fork "$tmp/audit.jsonl") fork entries"

# The fork is a sandbox like any: it survives a restart.
keepd_restart
for _ in $(seq 100); do
	read_file "$f" d/e/b.txt; [ "$body" = beta ] && break; sleep 0.1
done
[ "$body" = beta ] && ok "the fork survives a restart" || bad "after restart: $body"

# The CLI.
out=$("$KEEP" api --url "$url" --token "$ann" sandbox fork "$f" 2>&1)
h=$(sed -n 's/^id: //p' <<<"$out")
[ -n "$h" ] && read_file "$h" a.txt && [ "$body" = alpha ] &&
    ok "keep api sandbox fork" || bad "keep api sandbox fork: $out"
req "$ann" DELETE "/v1/sandboxes/$h"

# A workspace past the quota (lowered since it was written) is not copied.
head -c 3000000 /dev/zero >"$tmp/three"
curl -s -o /dev/null -H "Authorization: Bearer $ann" --data-binary @"$tmp/three" \
    "$url/v1/sandboxes/$a/files/write?path=big.bin"
printf 'limits:\n  workspace_max: 1M\n' >>"$tmp/keepd.yaml"
keepd_restart
before=$(ls "$tmp/state/workspaces" | wc -l)
for _ in $(seq 100); do
	req "$ann" POST "/v1/sandboxes/$a/fork" ''; [ "$code" != 503 ] && break; sleep 0.1
done
[ "$code" = 507 ] && [[ $body == *"too large to fork"* ]] &&
    ok "a workspace past the quota: 507" || bad "too big: $code $body"
[ "$(ls "$tmp/state/workspaces" | wc -l)" = "$before" ] &&
    ok "and no copy is left behind" || bad "workspaces: $(ls "$tmp/state/workspaces")"

keepd_finish
