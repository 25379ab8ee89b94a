#!/usr/bin/env bash
# The audit log fails closed on a full disk. The state directory is a
# small tmpfs that the store shares with the workspaces; a "tenant" fills
# it. The store's reserved room (limits.store_reserve) still takes the
# audit entries: writes are acknowledged, each with its entries in the
# log. Once the reserve is spent too, a write is refused with 507 and not
# done; every write acknowledged before it has its entry, and after room
# is freed keepd serves again.
# It boots no guest: it runs where no guest platform does.
KEEPD_NO_GUEST=1
source "$(dirname "$0")/../lib/keepd.sh"
mkdir -p "$tmp/state"
if ! mount -t tmpfs -o size=40m,mode=0755 keep-audit-diskfull "$tmp/state" 2>/dev/null; then
	echo "SKIP: cannot mount a tmpfs here"; exit 77
fi
diskfull_cleanup() {
	[ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	pid=
	umount "$tmp/state" 2>/dev/null
	keepd_cleanup
}
trap diskfull_cleanup EXIT
rm -f "$tmp/state/images/python.img"
cat >"$tmp/test.policy" <<'EOP'
agent "dev" { allow sandbox:read, sandbox:write }
agent "ops" { allow admin }
EOP
KEEPD_IMAGES=toolbox KEEPD_YAML_EXTRA=$'limits:\n  store_reserve: 2M' keepd_start "$tmp/test.policy"
rm -f "$tmp/state/images/python.img"
dev=$(mint dev sandbox:read,sandbox:write 30m)
req "$dev" POST /v1/sandboxes '{"image":"toolbox"}'
[ "$code" = 201 ] || bad "create before the disk is full: $code $body"
sid=$(jget "$body" '["id"]')

# A tenant fills the file system.
dd if=/dev/zero of="$tmp/state/fill" bs=64k 2>/dev/null
dd if=/dev/zero of="$tmp/state/fill2" bs=4k 2>/dev/null
avail=$(df --output=avail -B1 "$tmp/state" | tail -n 1)
[ "$avail" -lt 65536 ] && ok "the disk is full ($avail bytes left)" || bad "disk not full: $avail"

# The store's audit entries of request id $1 (actions, one a line).
entries() {
	"$KEEP" audit export --data "$tmp/state" --since 1h 2>/dev/null |
	    python3 -c 'import json,sys
for l in sys.stdin:
    e = json.loads(l)
    if e.get("client_request_id") == sys.argv[1]: print(e["action"], e["decision"])' "$1"
}

# --- on the reserve: acknowledged, with their entries.
code=$(curl -s -o "$tmp/b" -w '%{http_code}' -H 'X-Request-Id: full-create' -H "Authorization: Bearer $dev" \
    -H 'Content-Type: application/json' -d '{"image":"toolbox"}' "$url/v1/sandboxes")
got=$(entries full-create)
case $code in
201) [[ $got == *"sandbox:write allow"* ]] && ok "create on a full disk: 201, with its entry" ||
    bad "create on a full disk: 201 without its audit entry ($got)" ;;
507) ok "create on a full disk: 507" ;;
*) bad "create on a full disk: $code $(cat "$tmp/b")" ;;
esac
code=$(curl -s -o "$tmp/b" -w '%{http_code}' -X PUT -H 'X-Request-Id: full-env' -H "Authorization: Bearer $dev" \
    -H 'Content-Type: application/json' -d '{"env":{"A":"1"}}' "$url/v1/sandboxes/$sid/env")
got=$(entries full-env)
case $code in
200) [[ $got == *"sandbox:write allow"* ]] && ok "env PUT on a full disk: 200, with its entry" ||
    bad "env PUT on a full disk: 200 without its audit entry ($got)" ;;
507) ok "env PUT on a full disk: 507" ;;
*) bad "env PUT on a full disk: $code $(cat "$tmp/b")" ;;
esac

# --- spend the reserve: env PATCHes, each a new key, until one is 507.
python3 - "$url" "$dev" "$sid" >"$tmp/acked" <<'PY'
import http.client, json, sys, urllib.parse
u = urllib.parse.urlparse(sys.argv[1])
c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
for i in range(20000):
    body = json.dumps({"env": {"K%d" % i: "x" * 200}})
    c.request("PATCH", "/v1/sandboxes/%s/env" % sys.argv[3], body,
              {"Authorization": "Bearer " + sys.argv[2], "Content-Type": "application/json",
               "X-Request-Id": "patch-%d" % i})
    r = c.getresponse(); r.read()
    if r.status == 507:
        print("refused", i); break
    if r.status != 200:
        print("status", r.status, i); break
    print("acked", i)
PY
last=$(tail -n 1 "$tmp/acked")
nacked=$(grep -c '^acked' "$tmp/acked")
[[ $last == "refused "* ]] && ok "after $nacked writes on the reserve, a write is refused: 507" ||
    bad "no 507 after $nacked writes: $last"
refused=${last#refused }

# Every acknowledged write has its entry.
"$KEEP" audit export --data "$tmp/state" --since 1h >"$tmp/audit.jsonl" 2>/dev/null
missing=$(python3 -c 'import json,sys
have = {json.loads(l).get("client_request_id") for l in open(sys.argv[1])}
acked = [l.split()[1] for l in open(sys.argv[2]) if l.startswith("acked")]
print(sum(1 for i in acked if "patch-%s" % i not in have))' "$tmp/audit.jsonl" "$tmp/acked")
[ "$missing" = 0 ] && ok "every acknowledged write is in the audit log" || bad "$missing acknowledged writes without an entry"

# Room freed: keepd serves, the refused write was not done, the others were.
rm -f "$tmp/state/fill" "$tmp/state/fill2"
for _ in $(seq 50); do req "$dev" GET "/v1/sandboxes/$sid/env"; [ "$code" = 200 ] && break; sleep 0.1; done
[ "$code" = 200 ] && ok "room freed: keepd serves again" || bad "after freeing room: $code $body"
if [ -n "$refused" ] && [ "$code" = 200 ]; then
	python3 -c 'import json,sys
env = json.loads(sys.argv[1]); env = env.get("env", env)
acked = [int(l.split()[1]) for l in open(sys.argv[2]) if l.startswith("acked")]
assert "K%s" % sys.argv[3] not in env, "the refused write was done"
assert all("K%d" % i in env for i in acked), "an acknowledged write is missing"' "$body" "$tmp/acked" "$refused" &&
	    ok "the refused write was not done; the acknowledged ones were" || bad "env after the refusal"
fi
# /metrics counts the 507 under its own code.
ops=$(mint ops admin)
req "$ops" GET /metrics
grep -q 'keep_http_requests_total{route="env_patch",code="507"} 1' <<<"$body" &&
    ok "/metrics counts the 507 as 507" || bad "metrics 507: $(grep env_patch <<<"$body")"
keepd_finish
