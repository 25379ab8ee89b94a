#!/usr/bin/env bash
# One loader for keep and keepd: `keep policy check a.policy b.policy`
# refuses what keepd refuses (an agent defined in both files), and every
# position is file:line:col in the file as written -- keep's diagnostics,
# keepd's log of a refused reload and its audit entry, /v1/policy/check's
# location and a decision's rule in the audit log.
# It boots no guest: it runs where no guest platform does.
KEEPD_NO_GUEST=1
source "$(dirname "$0")/../lib/keepd.sh"

mkdir -p "$tmp/p"
cat >"$tmp/p/a.policy" <<'EOP'
# first file
agent "ann" { allow sandbox:read }
agent "ops" { allow admin, audit:read, policy:read }
EOP
cat >"$tmp/p/b.policy" <<'EOP'
# second file

agent "bob" {
	allow sandbox:read, sandbox:write
}
EOP
cat >"$tmp/p/dup.policy" <<'EOP'
role x { allow sandbox:read }
agent "ann" { allow sandbox:write }
EOP
out=$("$KEEP" policy check "$tmp/p/a.policy" "$tmp/p/b.policy" 2>&1) &&
    ok "two files that agree: check passes" || bad "check a b: $out"
out=$("$KEEP" policy check "$tmp/p/a.policy" "$tmp/p/dup.policy" 2>&1); rc=$?
[ $rc = 1 ] && [[ $out == *"$tmp/p/dup.policy:2:1: error: agent 'ann' defined twice (first at $tmp/p/a.policy:2:1)"* ]] &&
    ok "an agent defined in two files: refused, both positions file:line:col" || bad "check a dup: $rc $out"

# keepd loads the same set from policy_dir.
mkdir -p "$tmp/policy"
cp "$tmp/p/b.policy" "$tmp/policy/b.policy"
keepd_start "$tmp/p/a.policy"	# as test.policy
ops=$(mint ops admin,audit:read,policy:read)
bob=$(mint bob sandbox:read,sandbox:write)

# /v1/policy/check: the rule's place in b.policy, not in the whole text.
req "$ops" POST /v1/policy/check '{"principal":"bob","capability":"sandbox:write"}'
loc=$(jget "$body" '["location"]' 2>/dev/null)
[ "$code" = 200 ] && [ "$loc" = "b.policy:4:22" ] && ok "policy/check location: $loc" ||
    bad "policy/check: $code $body"

# A decision's rule in the audit log.
curl -s -o /dev/null -H 'X-Request-Id: loader1' -H "Authorization: Bearer $bob" "$url/v1/sandboxes"
for _ in $(seq 50); do
	"$KEEP" audit export --data "$tmp/state" --since 1h >"$tmp/audit.jsonl" 2>/dev/null
	grep -q '"client_request_id":"loader1"' "$tmp/audit.jsonl" && break; sleep 0.1
done
grep '"client_request_id":"loader1"' "$tmp/audit.jsonl" | grep -q '"rule":"rule [0-9]*, b.policy:4:8"' &&
    ok "the audit log names the rule as b.policy:4:8" || bad "audit rule: $(grep loader1 "$tmp/audit.jsonl")"

# A reload that does not compile: the error is in the new file, at its line.
printf '# broken\n\nagent "eve" { allow nonsense }\n' >"$tmp/policy/zz.policy"
kill -HUP "$pid"
for _ in $(seq 50); do grep -q "generation 2 refused" "$tmp/log" && break; sleep 0.1; done
grep "generation 2 refused" "$tmp/log" | grep -q "zz.policy:3:21: error" &&
    ok "keepd's log: zz.policy:3:21" || bad "keepd log: $(grep 'refused' "$tmp/log")"
for _ in $(seq 50); do
	"$KEEP" audit export --data "$tmp/state" --since 1h >"$tmp/audit.jsonl" 2>/dev/null
	grep -q '"action":"policy.load","target":"2"' "$tmp/audit.jsonl" && break; sleep 0.1
done
grep '"action":"policy.load","target":"2"' "$tmp/audit.jsonl" | grep -q 'zz.policy:3:21: error' &&
    ok "the audit log's refused load: zz.policy:3:21" || bad "audit of the refused load: $(grep policy.load "$tmp/audit.jsonl")"
out=$("$KEEP" policy check "$tmp/policy/b.policy" "$tmp/policy/test.policy" "$tmp/policy/zz.policy" 2>&1)
[[ $out == *"zz.policy:3:21: error"* ]] && ok "keep policy check says the same" || bad "check: $out"
keepd_finish
