#!/usr/bin/env bash
# The workspace quota (limits.workspace_max) counts what a sandbox's
# workspace holds, across uploads and runs: under an 8M quota a 6 MB
# upload fits, a second one is refused (507), and a guest run that then
# writes 6 MB more gets EDQUOT. (issue 20: six runs of 6 MB once filled a
# 48 MiB filesystem under an 8M limit.)
source "$(dirname "$0")/../lib/keepd.sh"

cat >"$tmp/test.policy" <<'EOP'
role runner {
	allow sandbox:read, sandbox:write, exec, artifact:read, artifact:write
	exec "cp", "rm"
	timeout 10s
	output 1M
	memory 64M
}
agent "alice" : runner
EOP
keepd_start "$tmp/test.policy"
printf 'limits:\n  workspace_max: 8M\n' >>"$tmp/keepd.yaml"
keepd_restart
alice=$(mint alice sandbox:read,sandbox:write,exec,artifact:read,artifact:write)

# The vmm reads its sandboxes back as it starts (503 until it has).
for _ in $(seq 100); do
	req "$alice" POST /v1/sandboxes '{"image":"toolbox"}'; [ "$code" != 503 ] && break; sleep 0.1
done
tb=$(jget "$body" '["id"]')
head -c 6000000 /dev/zero >"$tmp/six"
up() {
	curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $alice" \
	    --data-binary @"$tmp/six" "$url/v1/sandboxes/$tb/files/write?path=$1"
}
code=$(up a.bin)
[ "$code" = 200 ] && ok "a 6 MB upload fits 8M" || bad "first upload: $code"
code=$(up b.bin)
[ "$code" = 507 ] && ok "a second 6 MB upload is refused: 507" || bad "second upload: $code"
code=$(up a.bin)
[ "$code" = 200 ] && ok "replacing a file counts the old one out" || bad "replace: $code"
req "$alice" POST "/v1/sandboxes/$tb/commands/run" \
    '{"cmd":"cp","args":["a.bin","c.bin"]}'
[[ "$(jget "$body" '["stderr"]')" == *"Disk quota exceeded"* ]] &&
    ok "a run that writes past the quota gets EDQUOT" || bad "run past quota: $code $body"
req "$alice" POST "/v1/sandboxes/$tb/commands/run" '{"cmd":"rm","args":["a.bin","c.bin"]}'
code=$(up b.bin)
[ "$code" = 200 ] && ok "after the guest removes files, an upload fits again" || bad "after rm: $code"

keepd_finish
