#!/usr/bin/env bash
# The issue's new user: a Python job every minute with a secret in its
# environment. Each fire gets the value (the job checks it), its output
# shows *** where the value was printed, the runs listing and the audit
# log never hold the value, every injection is audited by name, and an
# owner the policy does not allow the secret gets a refused fire.
source "$(dirname "$0")/../lib/keepd.sh"

cat >"$tmp/test.policy" <<'EOP'
agent "alice" {
	allow sandbox:read, sandbox:write, exec, schedule:read, schedule:write
	allow secret:write
	exec "python"
	secret "db-pass"
}
agent "bob" {
	allow sandbox:read, sandbox:write, exec, schedule:read, schedule:write
	exec "python"
}
agent "root" { allow audit:read }
EOP

t0=$(date -u -d 2026-01-01T12:00:30Z +%s)
echo "$t0" >"$tmp/clock"
KEEPD_ARGS="-T $tmp/clock" KEEPD_IMAGES="python" keepd_start "$tmp/test.policy"

clock() { # clock HH:MM:SS on 2026-01-01: move the schedules' time
	date -u -d "2026-01-01T$1Z" +%s >"$tmp/clock"
	kill -HUP "$pid"
}
runs() { sched_runs "$@" 300; } # runs TOKEN ID N (tests/lib/keepd.sh)

alice=$(mint alice sandbox:read,sandbox:write,exec,schedule:read,schedule:write,secret:read,secret:write 30m)
bob=$(mint bob sandbox:read,sandbox:write,exec,schedule:read,schedule:write,secret:read 30m)
root=$(mint root audit:read 30m)
val="s3cr3t-db-pass-$RANDOM$RANDOM"

req "$alice" PUT /v1/secrets/db-pass "{\"value\":\"$val\"}"
[ "$code" = 201 ] && ok "the secret is set" || bad "PUT: $code $body"
job='import os; v = os.environ["DB_PASS"]; print("len", len(v), "ok" if v.startswith("s3cr3t") else "no"); print(v)'
spec=$(python3 -c 'import json,sys; print(json.dumps({"cron": "* * * * *", "image": "python",
    "execute": {"language": "python", "code": sys.argv[1], "env": {"DB_PASS": "${{ secrets.db-pass }}"}}}))' "$job")
req "$alice" POST /v1/schedules "$spec"
[ "$code" = 201 ] && ok "a Python job every minute with a secret in its env" || bad "create: $code $body"
s1=$(jget "$body" '["id"]')
[[ $body != *"$val"* ]] && ok "the schedule holds the reference, not the value" || bad "value in the schedule"
req "$bob" POST /v1/schedules "$spec"
[ "$code" = 201 ] || bad "bob's create: $code $body"
s2=$(jget "$body" '["id"]')
req "$alice" POST /v1/schedules '{"cron":"* * * * *","image":"python","execute":{"language":"python","code":"1","env":{"1X":"a"}}}'
[ "$code" = 400 ] && ok "a bad variable name is 400 ($(jget "$body" '["error"]["message"]'))" ||
    bad "bad env: $code $body"

clock 12:01:05
runs "$alice" "$s1" 1 || bad "no fire at 12:01"
out=$(jget "$body" '["runs"][0]["stdout"]')
[ "$(jget "$body" '["runs"][0]["status"]')" = completed ] && [[ $out == *"ok"* ]] &&
    ok "the fire ran with the value in its environment" || bad "run: $body"
[[ $out == *"***"* && $out != *"$val"* ]] && ok "what it printed shows *** for the value" ||
    bad "not redacted: $out"
clock 12:02:05
runs "$alice" "$s1" 2 && ok "it fires again the next minute" || bad "no fire at 12:02"
[[ $body != *"$val"* ]] && ok "the runs listing never holds the value" || bad "value in runs"
runs "$bob" "$s2" 1 || bad "no fire for bob"
[ "$(jget "$body" '["runs"][0]["status"]')" != completed ] &&
    ok "bob's fire, without the secret in his policy, is refused ($(jget "$body" '["runs"][0]["status"]'))" ||
    bad "bob's fire: $body"

python3 - "$url" "$root" "$val" <<'EOPY' && ok "every injection audited by name, the value nowhere in the log" || bad "audit"
import json, sys, urllib.request
url, tok, val = sys.argv[1:4]
entries, cur = [], ""
while True:
    rq = urllib.request.Request(url + "/v1/audit?limit=100" + cur,
                                headers={"Authorization": "Bearer " + tok})
    page = json.load(urllib.request.urlopen(rq))
    entries += page["entries"]
    if not page.get("next_cursor"):
        break
    cur = "&cursor=" + page["next_cursor"]
text = json.dumps(entries)
assert val not in text, "value in the audit log"
inj = [e for e in entries if e["action"] == "secret.inject" and e["principal"] == "alice"]
assert len(inj) >= 2, "injections: %d" % len(inj)
assert any(e["principal"] == "bob" and e["decision"] == "deny" for e in entries), "no deny for bob"
EOPY
grep -q -- "$val" "$tmp/log" && bad "the value is in keepd's log" || ok "the value is not in keepd's log"

keepd_finish
