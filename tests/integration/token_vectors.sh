#!/usr/bin/env bash
# The official PASETO v4 vectors through the keep CLI: the v4.public ones
# sign to exactly the expected token and verify to exactly the payload;
# every other token is refused with exit 1 and one line naming the reason.
# Also: keep key generate/id, mint -> verify, and claim refusals.
set -u
cd "$(dirname "$0")/../.."
KEEP=${B:-build}/bin/keep
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fails=0
check() { if [ "$1" = "$2" ]; then echo "ok: $3"; else echo "FAIL: $3"; echo "  want: $1"; echo "  got:  $2"; fails=$((fails+1)); fi; }

python3 - tests/vectors/paseto-v4.json >"$tmp/cases" <<'PY'
import base64, json, sys
def b64(h): return base64.urlsafe_b64encode(bytes.fromhex(h)).decode().rstrip('=')
pk1 = None
for t in json.load(open(sys.argv[1]))['tests']:
    if t.get('public-key'): pk1 = pk1 or t['public-key']
for t in json.load(open(sys.argv[1]))['tests']:
    pub = t.get('public-key') or pk1
    sec = t.get('secret-key') or ''
    print('\t'.join([t['name'], 'fail' if t['expect-fail'] or not t['token'].startswith('v4.public.') else 'ok',
        'k4.public.' + b64(pub), ('k4.secret.' + b64(sec)) if sec else '-', t['token'],
        t['payload'] or '-', t['footer'], t['implicit-assertion']]))
PY
while IFS=$'\t' read -r name want pub sec tok payload footer ia; do
	if [ "$want" = ok ]; then
		got=$("$KEEP" token sign --secret-key "$sec" --footer "$footer" --implicit "$ia" "$payload")
		check "$tok" "$got" "$name signs to the vector's token"
		got=$("$KEEP" token verify --no-claims --public-key "$pub" --implicit "$ia" "$tok")
		check "$payload" "$got" "$name verifies to the vector's payload"
	else
		err=$("$KEEP" token verify --no-claims --public-key "$pub" --implicit "$ia" "$tok" 2>&1 >/dev/null); rc=$?
		check "1 1" "$rc $(printf '%s\n' "$err" | wc -l)" "$name refused with one line ($err)"
	fi
done <"$tmp/cases"

# Keys: generate, refuse to overwrite, id, secret mode 0600.
"$KEEP" key generate --out "$tmp" --name k >/dev/null
check 1 "$("$KEEP" key generate --out "$tmp" --name k >/dev/null 2>&1; echo $?)" "key generate refuses to overwrite"
check 600 "$(stat -c %a "$tmp/k.secret")" "secret key file is mode 0600"
check "$("$KEEP" key id "$tmp/k.public")" "$("$KEEP" key id "$(cat "$tmp/k.public")")" "key id from file and from text agree"

# Mint and verify with claims; refusals name their reason.
t=$("$KEEP" token mint --key "$tmp/k.secret" --sub agent-b --caps artifact:read,exec --ttl 10m --sandbox s1)
out=$("$KEEP" token verify --public-key "$tmp/k.public" --audience keep "$t")
check 0 "$?" "minted token verifies with claims"
case "$out" in *'"sub":"agent-b"'*'"caps":["artifact:read","exec"]'*'"sbx":"s1"'*) echo "ok: claims present";; *) echo "FAIL: claims: $out"; fails=$((fails+1));; esac
check "keep token verify: wrong audience" "$("$KEEP" token verify --public-key "$tmp/k.public" --audience other "$t" 2>&1)" "wrong audience refused"
"$KEEP" key generate --out "$tmp" --name other >/dev/null
check "keep token verify: signature does not verify" "$("$KEEP" token verify --public-key "$tmp/other.public" "$t" 2>&1)" "another key refused"
check 1 "$("$KEEP" token mint --key "$tmp/k.secret" --sub a --caps root:all --ttl 1m >/dev/null 2>&1; echo $?)" "unknown capability refused at mint"
chmod 644 "$tmp/k.secret"
check 1 "$("$KEEP" token mint --key "$tmp/k.secret" --sub a --caps exec --ttl 1m >/dev/null 2>&1; echo $?)" "world-readable secret key refused"
case "$("$KEEP" token inspect "$t")" in *"NOT VERIFIED"*) echo "ok: inspect says it did not verify";; *) echo "FAIL: inspect"; fails=$((fails+1));; esac

echo "token_vectors: $fails failures"
[ "$fails" -eq 0 ]
