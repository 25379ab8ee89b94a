#!/usr/bin/env bash
# Schedules fire at the right minutes of a test clock (keepd -T), skip
# or catch up once after a restart as each is configured, stop when the
# owner's budget is spent (the fire refused and audited), and need
# schedule:write. Time moves only when the test writes the clock file
# and sends SIGHUP; every wait is a bounded poll.
source "$(dirname "$0")/../lib/keepd.sh"

cat >"$tmp/test.policy" <<'EOP'
agent "alice" {
	allow sandbox:read, sandbox:write, exec, schedule:read, schedule:write
	exec "echo", "python"
}
agent "bob" {
	allow sandbox:read, sandbox:write, exec, schedule:read, schedule:write
	exec "echo"
	budget 250
	cost exec 100
	cost schedule:read 0
}
agent "carol" { allow sandbox:read, schedule:read }
agent "root" { allow audit:read }
EOP

t0=$(date -u -d 2026-01-01T12:00:30Z +%s)
echo "$t0" >"$tmp/clock"
KEEPD_ARGS="-T $tmp/clock"
keepd_start "$tmp/test.policy"

clock() { # clock HH:MM:SS on 2026-01-01: move the schedules' time
	date -u -d "2026-01-01T$1Z" +%s >"$tmp/clock"
	kill -HUP "$pid"
}
# runs TOKEN ID N: wait until schedule ID has N runs (bounded); body holds
# them, newest first.
runs() { sched_runs "$@" 300; } # runs TOKEN ID N (tests/lib/keepd.sh)
fires() { jget "$body" '["runs"]' | python3 -c '
import ast,sys; print(" ".join(r["fire_at"][11:16] for r in ast.literal_eval(sys.stdin.read())))'; }

alice=$(mint alice sandbox:read,sandbox:write,exec,schedule:read,schedule:write 30m)
bob=$(mint bob sandbox:read,sandbox:write,exec,schedule:read,schedule:write 30m)
carol=$(mint carol sandbox:read,schedule:read,schedule:write 30m)
carol_ro=$(mint carol sandbox:read,schedule:read 30m)
root=$(mint root audit:read 30m)

req "$alice" POST /v1/sandboxes '{"image":"toolbox"}'
[ "$code" = 201 ] || bad "sandbox: $code $body"
sbx=$(jget "$body" '["id"]')
every='{"cron":"* * * * *","sandbox_id":"'$sbx'","command":{"cmd":"echo","args":["tick"]}}'

# schedule:write: the token's and the policy's.
req "$carol_ro" POST /v1/schedules "$every"
[ "$code" = 403 ] && ok "no schedule:write in the token: 403" || bad "token: $code $body"
req "$carol" POST /v1/schedules "$every"
[ "$code" = 403 ] && ok "no schedule:write in the policy: 403" || bad "policy: $code $body"
req "$alice" POST /v1/schedules '{"cron":"* * * *","sandbox_id":"'$sbx'","command":{"cmd":"echo"}}'
[ "$code" = 400 ] && [[ $body == *cron* ]] && ok "a bad cron: 400 ($body)" || bad "bad cron: $code $body"
req "$alice" POST /v1/schedules '{"cron":"* * * * *","sandbox_id":"'$sbx'","command":{"cmd":"echo"},"colour":1}'
[ "$code" = 400 ] && ok "an unknown field: 400" || bad "unknown field: $code $body"

# Zones by name (the parent's table from tzdata) or as POSIX rules.
req "$alice" POST /v1/schedules '{"cron":"0 9 * * *","timezone":"Europe/Berlin","sandbox_id":"'$sbx'","command":{"cmd":"echo"},"enabled":true}'
[ "$code" = 201 ] && [ "$(jget "$body" '["next_fire_at"][0]')" = 2026-01-02T08:00:00Z ] &&
    ok "9:00 in Europe/Berlin is 08:00 UTC in winter" || bad "zone: $code $body"
req "$alice" DELETE "/v1/schedules/$(jget "$body" '["id"]')"
req "$alice" POST /v1/schedules '{"cron":"0 9 * * *","timezone":"Mars/Olympus","sandbox_id":"'$sbx'","command":{"cmd":"echo"}}'
[ "$code" = 400 ] && [[ $body == *timezone* ]] && ok "an unknown zone: 400" || bad "bad zone: $code $body"

req "$alice" POST /v1/schedules "$every"
[ "$code" = 201 ] || bad "create: $code $body"
s1=$(jget "$body" '["id"]')
[ "$(jget "$body" '["next_fire_at"][:2]')" = "['2026-01-01T12:01:00Z', '2026-01-01T12:02:00Z']" ] &&
    ok "next fire times" || bad "next: $body"
[ "$(jget "$body" '["missed"]')" = skip ] && ok "missed defaults to skip" || bad "missed: $body"

clock 12:01:00
runs "$alice" "$s1" 1 && ok "fired at 12:01" || bad "no fire at 12:01: $body"
[ "$(jget "$body" '["runs"][0]["status"]')" = completed ] &&
    [ "$(jget "$body" '["runs"][0]["stdout"]')" = tick ] &&
    [ "$(jget "$body" '["runs"][0]["exit_code"]')" = 0 ] &&
    ok "its run: completed, exit 0, stdout tick" || bad "run: $body"
clock 12:01:40
clock 12:02:00
runs "$alice" "$s1" 2 || bad "no fire at 12:02: $body"
clock 12:03:00
runs "$alice" "$s1" 3 || bad "no fire at 12:03: $body"
[ "$(fires)" = "12:03 12:02 12:01" ] && ok "fired at 12:01, 12:02, 12:03 and no other time" ||
    bad "fires: $(fires)"

# Restarted at 12:07:30: 12:04 to 12:07 were missed.
req "$alice" POST /v1/schedules "${every%\}},\"missed\":\"once\"}"
[ "$code" = 201 ] || bad "create once: $code $body"
s2=$(jget "$body" '["id"]')
kill -TERM "$pid"; wait "$pid" 2>/dev/null
date -u -d 2026-01-01T12:07:30Z +%s >"$tmp/clock"
keepd_launch
runs "$alice" "$s2" 1 && ok "missed once: one catch-up run" || bad "no catch-up: $body"
[ "$(jget "$body" '["runs"][0]["catch_up"]')" = True ] &&
    [ "$(jget "$body" '["runs"][0]["status"]')" = completed ] &&
    [ "$(jget "$body" '["runs"][0]["fire_at"]')" = 2026-01-01T12:07:00Z ] &&
    ok "the catch-up ran, is marked and names 12:07" || bad "catch-up: $body"
req "$alice" GET "/v1/schedules/$s1/runs"
[ "$(fires)" = "12:03 12:02 12:01" ] && ok "missed skip: nothing ran for 12:04-12:07" ||
    bad "skip: $(fires)"
clock 12:08:00
runs "$alice" "$s1" 4 && [ "$(fires)" = "12:08 12:03 12:02 12:01" ] &&
    ok "both go on at 12:08" || bad "after restart: $(fires)"
runs "$alice" "$s2" 2 || bad "once after restart: $body"

# One time, in a fresh sandbox that is deleted after: a Python execute.
[ -e "$B/images/python.img" ] || bad "no python image (make images)"
req "$alice" POST /v1/schedules '{"at":"2026-01-01T12:08:30Z","image":"python","execute":{"language":"python","code":"print(6*7)"}}'
[ "$code" = 201 ] || bad "create at: $code $body"
s4=$(jget "$body" '["id"]')
clock 12:08:30
runs "$alice" "$s4" 1 && [ "$(jget "$body" '["runs"][0]["stdout"]')" = 42 ] &&
    ok "a one-time Python execute in a fresh sandbox" || bad "at: $body"
fresh=$(jget "$body" '["runs"][0]["sandbox_id"]')
req "$alice" GET "/v1/sandboxes/$fresh"
[ "$code" = 404 ] && ok "its sandbox is deleted after" || bad "fresh sandbox: $code $body"
req "$alice" GET "/v1/schedules/$s4"
[ "$(jget "$body" '["next_fire_at"]')" = "[]" ] && ok "a one-time schedule has no next fire" ||
    bad "at next: $body"
req "$alice" DELETE "/v1/schedules/$s4"

# Disabled: no fire; deleted: gone.
req "$alice" PATCH "/v1/schedules/$s2" '{"enabled":false}'
[ "$code" = 200 ] && [ "$(jget "$body" '["next_fire_at"]')" = "[]" ] &&
    ok "disabled: no next fire times" || bad "disable: $code $body"
req "$carol_ro" GET "/v1/schedules/$s1"
[ "$code" = 404 ] && ok "another principal's schedule is absent" || bad "carol get: $code $body"

# Bob's budget (250, exec costs 100) pays for two fires.
req "$bob" POST /v1/sandboxes '{"image":"toolbox"}'
bsbx=$(jget "$body" '["id"]')
req "$bob" POST /v1/schedules '{"cron":"* * * * *","sandbox_id":"'$bsbx'","command":{"cmd":"echo","args":["b"]}}'
[ "$code" = 201 ] || bad "bob create: $code $body"
s3=$(jget "$body" '["id"]')
clock 12:09:00
runs "$bob" "$s3" 1 || bad "bob 12:09: $body"
clock 12:10:00
runs "$bob" "$s3" 2 || bad "bob 12:10: $body"
clock 12:11:00
runs "$bob" "$s3" 3 || bad "bob 12:11: $body"
st=$(python3 -c 'import json,sys; print(" ".join(r["status"] for r in json.loads(sys.argv[1])["runs"]))' "$body")
[ "$st" = "refused completed completed" ] && ok "the budget spent: the third fire refused" ||
    bad "budget: $st $body"
[[ $(jget "$body" '["runs"][0]["detail"]') == *budget* ]] && ok "it says why: $(jget "$body" '["runs"][0]["detail"]')" ||
    bad "detail: $body"
python3 - "$url" "$root" <<'EOPY' && ok "the refusal is in the audit log" || bad "audit"
import json, sys, urllib.request
url, tok, cur, e = sys.argv[1], sys.argv[2], "", []
while True:
    rq = urllib.request.Request(url + "/v1/audit?limit=100" + cur,
        headers={"Authorization": "Bearer " + tok})
    page = json.load(urllib.request.urlopen(rq))
    e += page["entries"]
    if not page["next_cursor"]:
        break
    cur = "&cursor=" + page["next_cursor"]
bob = [x for x in e if x["principal"] == "bob"]
assert any(x["action"] == "exec" and x["decision"] == "deny" for x in bob), "no deny"
assert any(x["action"] == "schedule.fired" for x in bob), "no fired"
EOPY

req "$alice" DELETE "/v1/schedules/$s1"
[ "$code" = 204 ] || bad "delete: $code $body"
req "$alice" GET "/v1/schedules/$s1"
[ "$code" = 404 ] && ok "deleted" || bad "after delete: $code $body"
req "$alice" GET /v1/schedules
[ "$(jget "$body" '["schedules"].__len__()')" = 1 ] && ok "alice lists her one schedule left" || bad "list: $body"

# keep api schedules
K() { "$KEEP" api --url "$url" --token "$alice" schedules "$@"; }
out=$(K create --cron "0 * * * *" --tz "EST5EDT,M3.2.0,M11.1.0" --sandbox "$sbx" --cmd echo hi there) &&
    [[ $out == *"when: 0 * * * * (EST5EDT"* && $out == *"next_fire_at: 2026-01-01T13:00:00Z"* ]] &&
    ok "keep api schedules create" || bad "cli create: $out"
cid=$(sed -n 's/^id: //p' <<<"$out")
out=$(K list) && [[ $out == *"$cid"*enabled* ]] && ok "keep api schedules list" || bad "cli list: $out"
out=$(K update "$cid" --disable) && [[ $out == *"enabled: no"* ]] &&
    ok "keep api schedules update --disable" || bad "cli update: $out"
out=$(K runs "$s2") && [[ $out == *"#0 2026-01-01T12:07:00Z completed exit 0 catch-up"* ]] &&
    ok "keep api schedules runs" || bad "cli runs: $out"
K delete "$cid" && ! K get "$cid" 2>/dev/null && ok "keep api schedules delete" || bad "cli delete"
out=$(K create --cron "61 * * * *" --sandbox "$sbx" --cmd echo 2>&1); rc=$?
[ $rc = 1 ] && [[ $out == *"out of range"* ]] && ok "a bad schedule: exit 1 ($out)" || bad "cli bad: $rc $out"

keepd_finish
