#!/usr/bin/env bash
# The policy's `isolation kvm`: on a box whose guests run on the trap
# platform, that principal's runs are refused 503 with the reason, never
# downgraded; a principal that allows any platform still runs. Without
# /dev/kvm (tests/lib/platform.sh) this is the trap platform; on KVM
# the refusal cannot happen and is skipped.
source "$(dirname "$0")/../lib/keepd.sh"

cat >"$tmp/test.policy" <<'EOP'
role runner {
	allow sandbox:read, sandbox:write, exec
	exec "python"
	contexts 2
	timeout 20s
}
agent "hard" : runner { isolation kvm }
agent "soft" : runner
EOP
keepd_start "$tmp/test.policy"
caps=sandbox:read,sandbox:write,exec
hard=$(mint hard $caps)
soft=$(mint soft $caps)

run='{"code":"print(6*7)","language":"python"}'
req "$soft" POST /v1/sandboxes '{"image":"python-static"}'
ssbx=$(jget "$body" '["id"]')
req "$soft" POST "/v1/sandboxes/$ssbx/execute" "$run"
[ "$code" = 200 ] && [[ $body == *42* ]] && ok "isolation any: the run runs" || bad "soft: $code $body"

req "$hard" POST /v1/sandboxes '{"image":"python-static"}'
hsbx=$(jget "$body" '["id"]')
req "$hard" POST "/v1/sandboxes/$hsbx/execute" "$run"
if [ "$PLATFORM" = kvm ]; then
	[ "$code" = 200 ] && ok "isolation kvm with KVM: the run runs" || bad "hard with KVM: $code $body"
else
	[ "$code" = 503 ] && [[ $body == *"isolation kvm"* ]] &&
	    ok "isolation kvm on the trap platform: 503 with the reason" || bad "hard on trap: $code $body"
	req "$hard" POST "/v1/sandboxes/$hsbx/commands/run" '{"cmd":"python","args":["-c","print(1)"]}'
	[ "$code" = 503 ] && ok "and commands/run: 503" || bad "hard commands/run: $code $body"
	req "$hard" POST "/v1/sandboxes/$hsbx/contexts" '{"language":"python"}'
	[ "$code" = 503 ] && [[ $body == *"isolation kvm"* ]] &&
	    ok "and a context: 503, none started" || bad "hard context: $code $body"
	req "$hard" GET "/v1/sandboxes/$hsbx/contexts"
	[ "$code" = 200 ] && [[ $body != *ctx-* ]] && ok "no context left behind" ||
	    bad "hard contexts list: $code $body"
	req "$soft" POST "/v1/sandboxes/$ssbx/contexts" '{"language":"python"}'
	[ "$code" = 201 ] || [ "$code" = 200 ] && ok "isolation any: a context starts ($code)" ||
	    bad "soft context: $code $body"
fi
keepd_finish
