#!/usr/bin/env bash
# KEEP_SYS_FETCH with hostile arguments from a real KVM guest (keep run,
# no keepd): bad pointers are EFAULT, bad fields EINVAL, and a well-formed
# request without keepd's egress relay is EACCES with its reason. The
# host never crashes and the guest finishes normally.
set -u
cd "$(dirname "$0")/../.."
B=${B:-build}; KEEP=$B/bin/keep
source tests/lib/platform.sh # a guest platform: kvm or trap, or a loud skip
[ -x "$B/guests/fetchbad" ] || make --no-print-directory "$B/guests/fetchbad" >/dev/null || exit 1
out=$("$KEEP" run --timeout 10s "$B/guests/fetchbad" 2>&1); rc=$?
want='null=-14
kernel=-14
wild=-14
size=-22
version=-22
reserved=-22
url_ptr=-14
url_len=-22
resp_wrap=-14
body_len=-22
scheme=-22
method=-22
header=-22
ok=-13 reason=not allowed: no egress for this run'
if [ "$rc" -ne 0 ] || [ "$out" != "$want" ]; then
	echo "FAIL: fetchbad (rc $rc):"; echo "$out"
	diff <(echo "$want") <(echo "$out")
	exit 1
fi
echo "PASS: KEEP_SYS_FETCH refuses hostile arguments with EFAULT/EINVAL, EACCES without a relay"
