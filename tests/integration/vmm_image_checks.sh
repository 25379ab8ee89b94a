#!/usr/bin/env bash
# keepd's checks of an image with deferred hashes (docs/image-format.md,
# "Deferred hashes"): the vmm hashes each file once in its life and
# later runs do not hash it again; but an image written on disk after
# that (in place, or replaced by another file) is opened and checked
# again, so a file tampered after its first check is refused as before.
export KEEPD_IMAGES=toolbox
source "$(dirname "$0")/../lib/keepd.sh" || exit 1

# A small image of Debian's bash, its libraries' hashes deferred,
# signed with the key keepd trusts.
mkdir -p "$tmp/state/images"
img=$tmp/state/images/dfr.img
"$KEEP" image build --name dfr --version 1 --deb bash --defer-hashes \
    --command bash=/bin/bash -o "$tmp/dfr.img" >/dev/null &&
    "$KEEP" image sign --key "$B/keys/dev.secret" "$tmp/dfr.img" >/dev/null ||
    { echo "FAIL: cannot build the image"; exit 1; }
cp "$tmp/dfr.img" "$img"

cat >"$tmp/test.policy" <<'EOP'
agent "dfr" {
	allow sandbox:read, sandbox:write, exec
	exec "bash"
}
EOP
keepd_start "$tmp/test.policy"
tok=$(mint dfr sandbox:read,sandbox:write,exec)
req "$tok" POST /v1/sandboxes '{"image":"dfr"}'
sb=$(jget "$body" '["id"]')
run() { # -> code, body of commands/run bash -c 'echo ran'
	req "$tok" POST "/v1/sandboxes/$sb/commands/run" \
	    '{"cmd":"bash","args":["-c","echo ran"]}'
}
ran() { [ "$code" = 200 ] && [ "$(jget "$body" '["stdout"]')" = ran ]; }

# flip FILE GUEST-PATH: one byte in the middle of that file's contents,
# written in place (the same inode, as a careless cp or an attacker
# would), or back again when run twice.
flip() { python3 tests/lib/image_flip.py "$1" "$2"; }

run && ran && ok "a run of the deferred image" || bad "first run: $code $body"
run && ran && ok "a second run, with the files checked" || bad "second run: $code $body"
# The vmm takes the runs' word for nothing: it hashes the files they
# found matching itself, a moment later.
sleep 0.5
lib=/lib/x86_64-linux-gnu/libtinfo.so.6

# Written in place with its mtime put back: its ctime says so, and it
# is opened and checked again.
mt=$(python3 -c 'import os, sys; print(os.stat(sys.argv[1]).st_mtime_ns)' "$img")
flip "$img" "$lib" || { echo "FAIL: no $lib in the image"; exit 1; }
python3 -c 'import os, sys; os.utime(sys.argv[1], ns=(int(sys.argv[2]), int(sys.argv[2])))' "$img" "$mt"
[ "$(python3 -c 'import os, sys; print(os.stat(sys.argv[1]).st_mtime_ns)' "$img")" = "$mt" ] ||
    bad "the test could not put the mtime back"
run
! ran && grep -q "libtinfo.so.6 does not match" "$tmp/log" &&
    ok "a library written in place with the image's mtime put back still stops the run" ||
    bad "mtime put back: $code $body"
flip "$img" "$lib"
run && ran || bad "written back: $code $body"

flip "$img" "$lib" || { echo "FAIL: no $lib in the image"; exit 1; }
# The guest stops at the library (the reply says "fault", the log why).
stopped() { # -> 0 if the last run stopped at the tampered library
	! ran && [ "$(jget "$body" '["reason"]')" = fault ] &&
	    [ "$(grep -c "libtinfo.so.6 does not match" "$tmp/log")" -gt "$1" ]
}
run
stopped 0 && ok "a library written in place after its check stops the run" ||
    bad "tampered library ran: $code $body"
grep -q "image dfr changed on disk: opening it again" "$tmp/log" &&
    ok "the vmm saw the image change" || bad "no change logged"
flip "$img" "$lib"
run && ran && ok "the library written back: runs again" || bad "restored: $code $body"

flip "$img" /bin/bash
run
! ran && [[ $body == *"does not match its hash"* ]] &&
    ok "a program written in place after its check is refused" ||
    bad "tampered program ran: $code $body"
flip "$img" /bin/bash
run && ran && ok "the program written back: runs again" || bad "restored program: $code $body"

# Replaced by another file (a new inode): checked as a new image.
cp "$tmp/dfr.img" "$tmp/t.img" && flip "$tmp/t.img" "$lib" && mv "$tmp/t.img" "$img"
run
stopped 1 && ok "an image replaced by a tampered one stops the run" ||
    bad "replaced image ran: $code $body"
cp "$tmp/dfr.img" "$tmp/t.img" && mv "$tmp/t.img" "$img"
run && ran && ok "replaced by the good one: runs again" || bad "good image again: $code $body"

# The zero padding after a file is checked with the file, when it is
# first used (opening the image reads none of the payload).
python3 tests/lib/image_flip.py "$img" "$lib" pad ||
    { echo "FAIL: no padding after $lib"; exit 1; }
run
stopped 2 && ok "a byte of the padding after a library stops the run" ||
    bad "library with tampered padding ran: $code $body"
python3 tests/lib/image_flip.py "$img" "$lib" pad
run && ran && ok "the padding written back: runs again" || bad "padding restored: $code $body"
keepd_finish
