#!/bin/bash
# keep audit on a real data directory (keepd's layout, <state>/db): append,
# verify, tail, export, and tampering done with LMDB's own tools
# (mdb_dump/mdb_load/mdb_drop) -- an edit, a deletion, a reordering, a
# truncated tail -- each caught by `keep audit verify` (exit 1) naming the
# first broken entry. Then retention: prune from a signed checkpoint, verify
# with the right key (0) and a wrong one (1).
set -u
cd "$(dirname "$0")/../.." || exit 1
K=${B:-build}/bin/keep
for t in mdb_dump mdb_load python3; do
	command -v $t >/dev/null || { echo "SKIP: $t missing (lmdb-utils)"; exit 77; }
done
[ -x "$K" ] || { echo "FAIL: $K not built"; exit 1; }

T=$(mktemp -d)
trap '[ -n "${KEEP_TMP:-}" ] || rm -rf "$T"' EXIT
STATE=$T/state
DB=$STATE/db
mkdir -p "$DB"
fail() { echo "FAIL: $*"; exit 1; }

for i in $(seq -w 1 20); do
	"$K" audit append --data "$STATE" --action sandbox:write \
	    --principal "agent-$((10#$i % 2))" --target "sbx_$i" \
	    --decision allow --rule "role builder" --request-id "req-$i" \
	    >/dev/null || fail "append $i"
done
out=$("$K" audit verify --data "$STATE") || fail "verify of an intact log: $out"
[[ $out == *"20 entries (1..20)"* ]] || fail "verify said: $out"

# tail and filters
[ "$("$K" audit tail --data "$STATE" -n 3 | wc -l)" = 3 ] || fail "tail -n 3"
n=$("$K" audit tail --data "$STATE" -n 100 --principal agent-1 | wc -l)
[ "$n" = 10 ] || fail "tail --principal gave $n lines"
"$K" audit tail --data "$STATE" -n 1 | grep -q '^20 .* agent-0 sandbox:write sbx_20 allow' \
	|| fail "tail format"
# export: JSON lines, every one parses, filtered by time
"$K" audit export --data "$STATE" --since 1h >"$T/export.jsonl" || fail export
[ "$(wc -l <"$T/export.jsonl")" = 20 ] || fail "export count"
python3 -c '
import json, sys
prev = "0" * 64
for line in open(sys.argv[1]):
    e = json.loads(line)
    assert e["prev"] == prev, e
    prev = e["hash"]
' "$T/export.jsonl" || fail "export is not chained JSON lines"
[ "$("$K" audit export --data "$STATE" --since @4102444800 | wc -l)" = 0 ] \
	|| fail "export --since in the future"
"$K" audit export --data "$STATE" >/dev/null 2>&1; [ $? = 2 ] || fail "export without --since"

# follow: an entry appended while tail -f runs shows up. It prints the
# last entry first, so once that is there it is following (a poll, not a
# guess at how long it takes to start).
"$K" audit tail -f --data "$STATE" -n 1 >"$T/follow" &
tp=$!
for _ in $(seq 100); do grep -q '^20 ' "$T/follow" && break; sleep 0.1; done
grep -q '^20 ' "$T/follow" || fail "tail -f -n 1 did not print the last entry"
"$K" audit append --data "$STATE" --action key.rotate --target dev >/dev/null
for _ in $(seq 40); do grep -q key.rotate "$T/follow" && break; sleep 0.1; done
kill "$tp"; wait "$tp" 2>/dev/null
grep -q '^21 .* key.rotate dev info' "$T/follow" || fail "tail -f missed the entry"

cp -a "$DB" "$T/clean"
restore() { rm -rf "$DB"; cp -a "$T/clean" "$DB"; }

expect_broken() {
	local want=$1 what=$2 out rc
	out=$("$K" audit verify --data "$STATE"); rc=$?
	[ $rc = 1 ] || fail "$what: verify exit $rc ($out)"
	[[ $out == *"BROKEN at entry $want:"* ]] || fail "$what: verify said: $out"
	echo "ok: $what -> $out"
}

# Tamper with LMDB's own tools: dump every database (-a), change the dump
# (one " key" line then one " value" line per record, in hex), and load it
# into a fresh environment that replaces the store.
cat >"$T/tamper.py" <<'PY'
import sys
op, db, k1 = sys.argv[1], sys.argv[2], sys.argv[3]
k2 = sys.argv[4] if len(sys.argv) > 4 else None
lines = sys.stdin.read().split("\n")
out, cur, i, recs = [], None, 0, None
def key(k):
    return " " + (k.encode().hex() if not k.isdigit() else "%016x" % int(k))
def flush():
    global recs
    if recs is None:
        return
    if cur == db:
        ks = [r[0] for r in recs]
        a = ks.index(key(k1))
        if op == "edit":
            recs[a][1] = recs[a][1].replace(b"sbx_".hex(), b"sbx-".hex(), 1)
        elif op == "delete":
            del recs[a]
        elif op == "swap":
            b = ks.index(key(k2))
            recs[a][1], recs[b][1] = recs[b][1], recs[a][1]
    for r in recs:
        out.extend(r)
    recs = None
while i < len(lines):
    l = lines[i]
    if l.startswith("database="):
        cur = l.split("=", 1)[1]
    if recs is not None and l.startswith(" "):
        recs.append([l, lines[i + 1]]); i += 2; continue
    if l == "HEADER=END":
        out.append(l); recs = []; i += 1; continue
    if l == "DATA=END":
        flush()
    out.append(l); i += 1
sys.stdout.write("\n".join(out))
PY
tamper() { # OP DB KEY [KEY2]
	rm -rf "$T/new"; mkdir "$T/new"
	mdb_dump -a "$DB" >"$T/all" || fail mdb_dump
	python3 "$T/tamper.py" "$@" <"$T/all" >"$T/changed" || fail "tamper $*"
	cmp -s "$T/all" "$T/changed" && fail "tamper $* changed nothing"
	mdb_load -f "$T/changed" "$T/new" 2>/dev/null || fail mdb_load
	rm -rf "$DB"; mv "$T/new" "$DB"
}

tamper edit audit 5; expect_broken 5 "edited entry"; restore
tamper delete audit 7; expect_broken 7 "deleted entry"; restore
tamper swap audit 3 4; expect_broken 3 "reordered entries"; restore
tamper delete audit 21; expect_broken 21 "truncated log"; restore
# The control: a dump and load that changes nothing still verifies.
mdb_dump -a "$DB" >"$T/all"; rm -rf "$T/new"; mkdir "$T/new"
mdb_load -f "$T/all" "$T/new" 2>/dev/null || fail mdb_load
"$K" audit verify --data "$T/new" >/dev/null || fail "an untouched copy fails verify"

# Retention from a signed checkpoint.
mkdir -p "$T/keys"; "$K" key generate --out "$T/keys" --name audit >/dev/null || fail "key generate"
"$K" key generate --out "$T/keys" --name other >/dev/null || fail "key generate"
out=$("$K" audit prune --data "$STATE" --key "$T/keys/audit.secret" --max-entries 5) \
	|| fail "prune: $out"
[ "$out" = "removed 16 entries" ] || fail "prune said: $out"
out=$("$K" audit verify --data "$STATE" --key "$T/keys/audit.public") || fail "verify after prune: $out"
[[ $out == *"5 entries (17..21), from a signed checkpoint at entry 16"* ]] || fail "verify said: $out"
out=$("$K" audit verify --data "$STATE" --key "$T/keys/other.public"); rc=$?
[ $rc = 1 ] || fail "a checkpoint signed by another key passed: $out"
"$K" audit append --data "$STATE" --action after.prune >/dev/null || fail "append after prune"
"$K" audit verify --data "$STATE" --key "$T/keys/audit.public" >/dev/null || fail "verify after append"
# Without the checkpoint, the pruned entries count as deleted.
tamper delete meta checkpoint; expect_broken 1 "checkpoint removed"

"$K" audit verify --data "$T/nothing-here" >/dev/null 2>&1; [ $? = 1 ] || fail "no store: exit 1"
"$K" audit frobnicate >/dev/null 2>&1; [ $? = 2 ] || fail "usage: exit 2"
echo "PASS: audit verify, tail, export, tampering and retention"
