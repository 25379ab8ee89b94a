#!/usr/bin/env bash
# keep run's record of the files of an image it checked (image/verified.h,
# docs/image-format.md "The verified files of keep run"): a run of an image
# with deferred hashes records the files that matched; the next run takes
# them as checked while the image file is the same (boot, device, inode,
# size, mtime, ctime, signature); a file written in place or an image
# replaced is checked again and refused when tampered; a record written by
# another user, writable by others, or cut short is ignored. The record
# also says the signature verified under the key the image names, which
# the next run takes only when that key is among those it trusts.
set -u
cd "$(dirname "$0")/../.."
B=${B:-build}; KEEP=$B/bin/keep; G=$B/guests
source tests/lib/platform.sh # a guest platform: kvm or trap, or a loud skip
if [ "$(id -u)" -ne 0 ]; then echo "SKIP: root's record is /run's (and /dev/kvm)"; exit 77; fi
tmp=$(mktemp -d)
fails=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fails=$((fails+1)); }

mkdir "$tmp/k" && "$KEEP" key generate --out "$tmp/k" >/dev/null || exit 1
head -c $((64 * 1024 + 1234)) /dev/urandom >"$tmp/data"
img=$tmp/v.img
"$KEEP" image build --name v --version 1 --defer-hashes \
	--file "/data=$tmp/data" "$G/mapimage" -o "$img" >/dev/null &&
	"$KEEP" image sign --key "$tmp/k/keep.secret" "$img" || exit 1
# The record's slot: the first byte of BLAKE2b-64 of the image's real
# path, modulo 64.
rec=/run/keep-verified-$(python3 -c 'import hashlib, os, sys
print("%02x" % (hashlib.blake2b(os.path.realpath(sys.argv[1]).encode(), digest_size=8).digest()[0] % 64))' "$img")
trap 'rm -rf "$tmp" "$rec"' EXIT
rm -f "$rec"
run() { "$KEEP" run --trust "$tmp/k/keep.public" "$img" mapimage /data 2>&1; }
good() { [[ $out == *"mapimage: ok" ]]; }
refused() { [[ $out == *"/data does not match its hash"* ]]; }
# bits FILE: the record's file bits, as a string of 0 and 1 (file 0
# first), then the signature's.
bits() { python3 -c 'import sys
b = open(sys.argv[1], "rb").read()
n = int.from_bytes(b[168:172], "little") + 1
print("".join(str(b[176 + i // 8] >> (i % 8) & 1) for i in range(n)))' "$1"; }
flip() { python3 tests/lib/image_flip.py "$img" /data; }

out=$(run); good && ok "first run" || bad "first run: $out"
if [ -f "$rec" ] && [ "$(stat -c '%u %a' "$rec")" = "0 600" ] &&
    [ "$(bits "$rec")" = 111 ]; then
	ok "the record names the program, /data and the signature, root's, mode 600"
else
	bad "record: $(ls -l "$rec" 2>&1) bits $(bits "$rec" 2>&1)"
fi
good_rec=$tmp/good.rec && cp "$rec" "$good_rec"
out=$(run); good && ok "a second run, with the record" || bad "second run: $out"
# The signature's bit holds for the key the image names only: trusting
# another key alone, the image is refused as untrusted.
mkdir "$tmp/k2" && "$KEEP" key generate --out "$tmp/k2" >/dev/null || exit 1
out=$("$KEEP" run --trust "$tmp/k2/keep.public" "$img" mapimage /data 2>&1); rc=$?
[ $rc -eq 126 ] && [[ $out == *"not trusted"* ]] && [[ $out != *mapimage:* ]] &&
	ok "with the record, an image signed by a key not trusted is refused" ||
	bad "untrusted signer believed ($rc): $out"

# Written in place after the record (the same inode): its ctime moved,
# so the record no longer names this file, and the file is hashed again.
flip
out=$(run); refused && ok "a file written in place after the record is refused" ||
	bad "tampered file ran: $out"
flip
out=$(run); good && ok "written back: runs again" || bad "restored: $out"

# A record claiming every file for the tampered image as it stands now:
# believed only if this user wrote it and nobody else can write it.
flip
forge() { python3 -c 'import os, sys
rec, img = sys.argv[1], sys.argv[2]
b = bytearray(open(sys.argv[3], "rb").read())
st = os.stat(img)
for off, v in ((72, st.st_mtime_ns // 10**9), (80, st.st_mtime_ns % 10**9),
               (88, st.st_ctime_ns // 10**9), (96, st.st_ctime_ns % 10**9)):
    b[off:off + 8] = v.to_bytes(8, "little")
b[176] = 3
open(rec, "wb").write(b)
os.chmod(rec, 0o600)' "${1:-$rec}" "$img" "$good_rec"; }
forge && chown 65534 "$rec"
out=$(run); refused && ok "a record of another user is ignored" || bad "foreign record believed: $out"
forge && chmod 666 "$rec"
out=$(run); refused && ok "a record others may write is ignored" || bad "writable record believed: $out"
forge && truncate -s -1 "$rec"
out=$(run); refused && ok "a record cut short is ignored" || bad "short record believed: $out"
forge "$tmp/forged.rec" && ln -sf "$tmp/forged.rec" "$rec.l" && mv -f "$rec.l" "$rec"
out=$(run); refused && ok "a symbolic link is not followed" || bad "link believed: $out"
rm -f "$rec"
# One root wrote for the image as it stands is believed: only root could
# have written it (the same trust as the image file's own directory).
forge
out=$(run); good && ok "root's own record is the check" || bad "root's record: $out"
flip

# A manifest whose hash of /data was changed (it still validates; a new
# file, so the record does not name it) is refused at its signature
# before the guest's first instruction, and before any other complaint
# about the image.
cp "$img" "$tmp/s.img"
python3 -c 'import struct, sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
nc, nf = struct.unpack_from("<II", b, 28)
for i in range(nf):
    e = 160 + nc * 80 + i * 192
    if b[e:e + 128].rstrip(b"\0") == b"/data":
        b[e + 144] ^= 1
open(p, "wb").write(b)' "$tmp/s.img"
out=$("$KEEP" run --trust "$tmp/k/keep.public" "$tmp/s.img" mapimage /data 2>&1); rc=$?
if [ $rc -eq 126 ] && [[ $out == *"signature"*"does not verify"* ]] &&
    [[ $out != *mapimage* ]]; then
	ok "a manifest that fails its signature: refused before the guest ran"
else
	bad "tampered manifest ($rc): $out"
fi
out=$("$KEEP" run --trust "$tmp/k/keep.public" "$tmp/s.img" nosuch 2>&1); rc=$?
[ $rc -eq 126 ] && [[ $out == *"does not verify"* ]] &&
	ok "its signature is told before a missing command" ||
	bad "tampered manifest, missing command ($rc): $out"

# Replaced by a tampered copy (a new inode): checked as a new file.
cp "$img" "$tmp/t.img" && python3 tests/lib/image_flip.py "$tmp/t.img" /data &&
	mv "$tmp/t.img" "$img"
out=$(run); refused && ok "an image replaced by a tampered one is refused" ||
	bad "replaced image ran: $out"

echo "vmm_verified: $fails failures"
[ $fails -eq 0 ]
