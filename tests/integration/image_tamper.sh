#!/usr/bin/env bash
# Stock images verify against the development key and nothing else; a
# flipped byte anywhere, a truncation or an appended byte is refused with
# a clear reason, and keep never crashes on them.
set -u
cd "$(dirname "$0")/../.."
B=${B:-build}; KEEP=$B/bin/keep
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fails=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fails=$((fails+1)); }

for i in hello toolbox js python; do
	if "$KEEP" image verify --trust "$B/keys/dev.public" "$B/images/$i.img" >/dev/null; then
		ok "$i.img verifies"; else bad "$i.img does not verify"; fi
done
"$KEEP" key generate --out "$tmp" --name stranger >/dev/null
err=$("$KEEP" image verify --trust "$tmp/stranger.public" "$B/images/hello.img" 2>&1)
[ $? -eq 1 ] && [[ $err == *"not trusted"* ]] && ok "untrusted key refused: $err" || bad "untrusted key: $err"

img=$B/images/hello.img; size=$(stat -c %s "$img")
# Flip one byte at a spread of offsets: header, manifest, payload, signature.
for off in 0 9 20 70 200 4096 5000 $((size/2)) $((size-200)) $((size-100)) $((size-1)); do
	cp "$img" "$tmp/t.img"
	python3 -c "import sys; p=sys.argv[1]; o=int(sys.argv[2]); b=bytearray(open(p,'rb').read()); b[o]^=0x40; open(p,'wb').write(b)" "$tmp/t.img" "$off"
	err=$("$KEEP" image verify --trust "$B/keys/dev.public" "$tmp/t.img" 2>&1); rc=$?
	if [ $rc -eq 1 ] && [ -n "$err" ]; then ok "byte $off flipped: $err"; else bad "byte $off flipped: rc $rc"; fi
done
head -c $((size-1)) "$img" >"$tmp/t.img"
err=$("$KEEP" image verify --trust "$B/keys/dev.public" "$tmp/t.img" 2>&1)
[ $? -eq 1 ] && ok "truncated: $err" || bad "truncated accepted"
{ cat "$img"; printf x; } >"$tmp/t.img"
err=$("$KEEP" image verify --trust "$B/keys/dev.public" "$tmp/t.img" 2>&1)
[ $? -eq 1 ] && ok "appended: $err" || bad "appended accepted"
"$KEEP" image inspect "$tmp/t.img" >/dev/null 2>&1; [ $? -eq 1 ] && ok "inspect refuses it too" || bad "inspect"

# The toolbox lists its applets as commands; inspect --json is JSON.
"$KEEP" image inspect --json "$B/images/toolbox.img" | python3 -c '
import json,sys; d=json.load(sys.stdin); names={c["name"] for c in d["commands"]}
assert {"sha256sum","cat","awk"} <= names, names' && ok "toolbox commands" || bad "toolbox commands"
echo "image_tamper: $fails failures"
[ "$fails" -eq 0 ]
