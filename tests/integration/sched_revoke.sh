#!/usr/bin/env bash
# Revoking a token stops the schedules it wrote (issue 31, finding 4): a
# schedule keeps the jtis of the token that wrote it and of that token's
# ancestors, and each fire checks them. After the parent of the writing
# token is revoked, the next fire is refused (its record says so, and the
# audit log has the refusal), also after a restart (the jtis are in the
# store). An admin token lists and deletes every principal's schedules.
# No guest runs: the refused fire never reaches the vmm.
KEEPD_NO_GUEST=1
source "$(dirname "$0")/../lib/keepd.sh"

cat >"$tmp/test.policy" <<'EOP'
agent "alice" {
	allow sandbox:read, sandbox:write, exec, schedule:read, schedule:write
	exec "echo"
}
agent "ops" { allow admin, schedule:read, schedule:write }
EOP
echo "$(date -u -d 2026-01-01T12:00:30Z +%s)" >"$tmp/clock"
KEEPD_ARGS="-T $tmp/clock"
KEEPD_IMAGES=hello keepd_start "$tmp/test.policy"
clock() {
	date -u -d "2026-01-01T$1Z" +%s >"$tmp/clock"
	kill -HUP "$pid"
}
runs() { sched_runs "$@" 300; } # runs TOKEN ID N (tests/lib/keepd.sh)

caps=sandbox:read,sandbox:write,exec,schedule:read,schedule:write
alice=$(mint alice $caps 30m)
ops=$(mint ops admin,schedule:read,schedule:write 30m)
req "$alice" POST /v1/sandboxes '{"image":"hello"}'
[ "$code" = 201 ] || bad "sandbox: $code $body"
sbx=$(jget "$body" '["id"]')
# The schedule is written by a token derived from alice's.
req "$alice" POST /v1/tokens '{"caps":["sandbox:read","exec","schedule:read","schedule:write"]}'
child=$(jget "$body" '["token"]')
req "$child" POST /v1/schedules '{"cron":"* * * * *","sandbox_id":"'$sbx'","command":{"cmd":"echo","args":["tick"]}}'
[ "$code" = 201 ] || bad "create: $code $body"
s1=$(jget "$body" '["id"]')

# admin sees and may delete every schedule.
req "$ops" GET /v1/schedules
[[ $body == *"$s1"* ]] && ok "admin lists alice's schedule" || bad "admin list: $code $body"
req "$alice" POST /v1/schedules '{"cron":"0 9 * * *","sandbox_id":"'$sbx'","command":{"cmd":"echo"}}'
s2=$(jget "$body" '["id"]')
req "$ops" DELETE "/v1/schedules/$s2"
[ "$code" = 204 ] || [ "$code" = 200 ] && ok "admin deletes alice's schedule ($code)" || bad "admin delete: $code $body"
req "$alice" GET "/v1/schedules/$s2"
[ "$code" = 404 ] && ok "it is gone for alice" || bad "after admin delete: $code $body"

# Revoke alice's token, the writing token's parent.
jti=$("$KEEP" token inspect "$alice" | sed -n 's/.*"jti":"\([^"]*\)".*/\1/p')
req "$ops" POST /v1/tokens/revoke "{\"jti\":\"$jti\"}"
[ "$code" = 200 ] || [ "$code" = 204 ] || bad "revoke: $code $body"
keepd_restart
sched_loaded "$ops" || bad "the schedules did not load after the restart: $code $body"
clock 12:01:00
runs "$ops" "$s1" 1 || bad "no fire recorded at 12:01: $body"
st=$(jget "$body" '["runs"][0]["status"]')
detail=$(jget "$body" '["runs"][0]' 2>/dev/null)
[ "$st" = refused ] && [[ $detail == *revoked* ]] &&
    ok "the fire after the revocation is refused: $(jget "$body" '["runs"][0]["detail"]' 2>/dev/null)" ||
    bad "fire after revocation: $st $detail"
"$KEEP" audit export --data "$tmp/state" --since 1h >"$tmp/audit.jsonl"
grep '"action":"schedule.fire"' "$tmp/audit.jsonl" | grep '"decision":"deny"' | grep -q "reason=revoked" &&
    ok "the refused fire is a deny in the audit log" || bad "no deny entry for the fire"
keepd_finish
