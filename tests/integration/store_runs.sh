#!/usr/bin/env bash
# A run's record in the store holds its whole output up to the policy's
# output limit, also when it is larger than one IPC message (it then goes
# to the store in a sealed memfd). Read back with LMDB's own mdb_dump.
source "$(dirname "$0")/../lib/keepd.sh"
command -v mdb_dump >/dev/null || { echo "FAIL: mdb_dump (lmdb-utils) missing"; exit 1; }

cat >"$tmp/test.policy" <<'EOP'
agent "alice" {
	allow sandbox:read, sandbox:write, exec, artifact:write
	exec "cat"
	output 1M
}
EOP
keepd_start "$tmp/test.policy"
alice=$(mint alice sandbox:read,sandbox:write,exec,artifact:write)
req "$alice" POST /v1/sandboxes '{"image":"toolbox"}'
sbx=$(jget "$body" '["id"]')
# 300 KiB of lines, the last one marked, so the end of the record shows.
python3 -c 'for i in range(3072): print("%099d" % i)
print("the-last-line")' >"$tmp/big"
curl -s -o /dev/null -H "Authorization: Bearer $alice" --data-binary @"$tmp/big" \
    "$url/v1/sandboxes/$sbx/files/write?path=/big.txt"
req "$alice" POST "/v1/sandboxes/$sbx/commands/run" '{"cmd":"cat","args":["big.txt"]}'
out=$(python3 -c "import json,sys; print(len(json.load(sys.stdin)[\"stdout\"]))" <<<"$body" 2>/dev/null)
[ "$code" = 200 ] && [ "$out" -gt 300000 ] && ok "a run with $out bytes of output" || bad "run: $code ${body:0:200}"

# The record is written after the reply: wait for it.
hex=
for _ in $(seq 50); do
	hex=$(mdb_dump -s runs "$tmp/state/db" 2>/dev/null | awk 'length($0) > max { max = length($0); line = $0 } END { print line }')
	[ ${#hex} -gt 600000 ] && break
	sleep 0.1
done
tail_hex=$(printf '%s' "the-last-line" | od -An -tx1 | tr -d ' \n')
[ $(( ${#hex} / 2 )) -gt 300000 ] && [[ $hex == *"$tail_hex"* ]] &&
    ok "the run record holds the whole output ($(( ${#hex} / 2 )) bytes, its last line included)" ||
    bad "run record: $(( ${#hex} / 2 )) bytes"
keepd_finish
