#!/usr/bin/env bash
# A flood of requests without a token costs the audit log a bounded number
# of entries and never reaches the tenants (issue 31, finding 1). 2,000
# refusals from one address (no token, a malformed one, a forged one) are
# at most FB_ANON_EACH (8) entries of their own, the rest counted into one
# entry per source (written at the end of its minute, or when keepd
# stops), and the counts add up. On a store with less room than the floor
# kept for authenticated requests (a 40 MiB tmpfs), refusals without a
# token are not recorded at all while authenticated decisions still are;
# /metrics and keep status say how much room is left.
KEEPD_NO_GUEST=1
source "$(dirname "$0")/../lib/keepd.sh"

cat >"$tmp/test.policy" <<'EOP'
agent "dev" { allow sandbox:read }
agent "ops" { allow admin, audit:read }
EOP
# keepd is stopped on purpose before the end.
keepd_finish_stopped() {
	[ $fails -eq 0 ] || { echo "--- keepd log"; tail -n 40 "$tmp/log"; }
	echo "$(basename "$0" .sh): $fails failures"
	[ $fails -eq 0 ]
}
KEEPD_IMAGES=hello keepd_start "$tmp/test.policy"
dev=$(mint dev sandbox:read)
ops=$(mint ops admin,audit:read)
forged="${dev%?}A"; [ "$forged" = "$dev" ] && forged="${dev%?}B"

# 2,000 requests on keep-alive connections, three kinds of bad token.
python3 - "$url" "$forged" <<'EOF' || bad "the flood did not run"
import http.client, sys, urllib.parse
u = urllib.parse.urlparse(sys.argv[1])
heads = [{}, {"Authorization": "Basic x"}, {"Authorization": "Bearer " + sys.argv[2]}]
n = 0
for k in range(4):
    c = http.client.HTTPConnection(u.hostname, u.port)
    for i in range(500):
        c.request("GET", "/v1/sandboxes", headers=heads[(n) % 3])
        r = c.getresponse(); r.read()
        if r.status != 401:
            sys.exit("request %d: %d" % (n, r.status))
        n += 1
    c.close()
EOF
req "$dev" GET /v1/sandboxes
[ "$code" = 200 ] && ok "a tenant is served after the flood" || bad "after the flood: $code $body"
req "$ops" GET /metrics
[[ $body == *'keep_audit_unattributed_total{recorded="counted"} 1992'* ]] &&
    ok "/metrics counts the refusals counted, not recorded one by one" ||
    bad "metrics: $(grep unattributed <<<"$body")"
[[ $body =~ keep_store_room_bytes\ [1-9][0-9]* ]] && ok "/metrics: the store's room" ||
    bad "no keep_store_room_bytes"

# keepd stops: the minute's counts are written.
kill -TERM "$pid"; wait "$pid" 2>/dev/null; pid=
"$KEEP" audit export --data "$tmp/state" --since 1h >"$tmp/audit.jsonl" || bad "export"
python3 - "$tmp/audit.jsonl" <<'EOF' && ok "2,000 refusals: 8 entries and one counted entry of 1,992" || bad "the flood's entries"
import json, re, sys
own = counted = entries = 0
for l in open(sys.argv[1]):
    e = json.loads(l)
    if e["principal"] != "" or e["decision"] != "deny" or e["rule"] != "token":
        continue
    entries += 1
    m = re.search(r"count=(\d+)", e["detail"])
    if m:
        counted += int(m.group(1))
        assert e["action"] == "token.refused" and "source=127.0.0.1" in e["detail"], e
    else:
        own += 1
        assert "status=401" in e["detail"] and "source=127.0.0.1" in e["detail"], e
print("entries", entries, "own", own, "counted", counted)
sys.exit(0 if own == 8 and counted == 1992 and entries == 9 else 1)
EOF
"$KEEP" audit verify --data "$tmp/state" >/dev/null && ok "the log verifies" || bad "verify"

# --- a store with little room: refusals without a token are not recorded.
rm -rf "$tmp/state"; mkdir -p "$tmp/state"
if ! mount -t tmpfs -o size=40m,mode=0755 keep-audit-flood "$tmp/state" 2>/dev/null; then
	echo "SKIP: cannot mount a tmpfs here"; keepd_finish_stopped; exit
fi
flood_cleanup() {
	[ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	pid=
	umount "$tmp/state" 2>/dev/null
	keepd_cleanup
}
trap flood_cleanup EXIT
rm -f "$tmp/issuer.secret" "$tmp/issuer.public"
KEEPD_IMAGES=hello KEEPD_YAML_EXTRA=$'limits:\n  store_reserve: 1M' keepd_start "$tmp/test.policy"
dev=$(mint dev sandbox:read)
ops=$(mint ops admin,audit:read)
for i in 1 2 3; do
	curl -s -o /dev/null -H "X-Request-Id: anon$i" "$url/v1/sandboxes"
done
curl -s -o /dev/null -H "X-Request-Id: nocap1" -H "Authorization: Bearer $dev" \
    -X DELETE "$url/v1/sandboxes/sbx-x"
req "$dev" GET /v1/sandboxes
[ "$code" = 200 ] && ok "a tenant is served on a small store" || bad "small store: $code $body"
req "$ops" GET /metrics
room=$(sed -n 's/^keep_store_room_bytes \([0-9]*\)$/\1/p' <<<"$body")
[ -n "$room" ] && [ "$room" -lt $((40 << 20)) ] && ok "/metrics: room $room bytes" || bad "room: '$room'"
"$KEEP" status -f "$tmp/keepd.yaml" >"$tmp/status" 2>&1
grep -q "warning: below 128 MiB: refusals without a token are no longer recorded" "$tmp/status" &&
    ok "keep status warns: $(grep warning "$tmp/status")" || bad "keep status: $(cat "$tmp/status")"
kill -TERM "$pid"; wait "$pid" 2>/dev/null; pid=
"$KEEP" audit export --data "$tmp/state" --since 1h >"$tmp/audit.jsonl" || bad "export"
grep -q '"rule":"token caps"' "$tmp/audit.jsonl" &&
    ok "an authenticated refusal is recorded" || bad "no authenticated entry"
grep -q '"rule":"token"' "$tmp/audit.jsonl" &&
    bad "refusals without a token were recorded below the floor" ||
    ok "refusals without a token are not recorded below the floor"
keepd_finish_stopped
