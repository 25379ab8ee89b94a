#!/usr/bin/env bash
# The stock images under keep run: busybox applets give byte-identical
# output to the same applets on the host, JavaScript evaluates ES5, Python
# imports json, hashlib and re; a command outside the manifest and an
# untrusted image are refused before boot.
source "$(dirname "$0")/../lib/guest.sh"
K=$B/keys/dev.public; I=$B/images

ws=$tmp/ws; mkdir "$ws"
printf 'pear 3\napple 10\nfig 7\napple 10\nbanana 1\n' >"$ws/fruit.txt"
head -c 100000 /dev/urandom | base64 >"$ws/blob.txt"
mkdir "$ws/dir"; echo one >"$ws/dir/a"; echo two >"$ws/dir/b"

# applet, then its arguments (guest paths are relative to the workspace)
while read -r applet args; do
	want=$(cd "$ws" && busybox $applet $args 2>&1)
	got=$("$KEEP" run --workspace "$ws" --trust "$K" "$I/toolbox.img" $applet $args 2>&1)
	if [ "$want" == "$got" ]; then ok "busybox $applet $args"
	else bad "busybox $applet $args: host '$want' guest '$got'"; fi
done <<'LIST'
cat fruit.txt
wc fruit.txt blob.txt
sha256sum fruit.txt blob.txt
md5sum blob.txt
sort fruit.txt
sort -k2 -n fruit.txt
uniq -c fruit.txt
grep -n apple fruit.txt
sed s/apple/APPLE/g fruit.txt
awk {s+=$2}END{print(s)} fruit.txt
head -n 2 fruit.txt
tail -n 2 blob.txt
cut -d  -f1 fruit.txt
ls dir
ls -a dir
base64 fruit.txt
LIST
echo "via stdin" | "$KEEP" run --trust "$K" "$I/toolbox.img" tr a-z A-Z >"$tmp/o" 2>&1
[ "$(cat "$tmp/o")" = "VIA STDIN" ] && ok "stdin reaches the guest" || bad "stdin: $(cat "$tmp/o")"

out=$("$KEEP" run --trust "$K" "$I/js.img" js -e 'var o = {a: [1, 2, 3]}; print(JSON.stringify(o)); o.a.reduce(function (s, x) { return s + x * x; }, 0)' 2>&1)
[ "$out" = $'{"a":[1,2,3]}\n14' ] && ok "js: ES5" || bad "js: '$out'"

out=$("$KEEP" run --trust "$K" "$I/python.img" python -c 'import json, hashlib, re
print(json.dumps({"sha": hashlib.sha256(b"keep").hexdigest()[:12], "n": re.findall(r"\d+", "a1b22")}, sort_keys=True))' 2>&1)
want=$(python3 -c 'import hashlib; print("{\"n\": [\"1\", \"22\"], \"sha\": \"%s\"}" % hashlib.sha256(b"keep").hexdigest()[:12])')
[ "$out" = "$want" ] && ok "python: json, hashlib, re" || bad "python: '$out' want '$want'"
out=$("$KEEP" run --trust "$K" "$I/python.img" python -c 'import time
t0 = time.monotonic(); w0 = time.time(); time.sleep(0.3)
print(time.monotonic() - t0 >= 0.3, time.time() - w0 >= 0.29)')
[ "$out" = "True True" ] && ok "python: time.sleep takes the time it says" || bad "sleep: '$out'"
out=$("$KEEP" run --timeout 500ms --trust "$K" "$I/python.img" python -c 'import time; time.sleep(3600)' 2>&1); rc=$?
[ $rc -eq 124 ] && ok "a sleep past the time limit is cut short (124)" || bad "sleep timeout: $rc $out"

out=$("$KEEP" run --trust "$K" "$I/toolbox.img" reboot 2>&1); rc=$?
[ $rc -eq 126 ] && [[ $out == *"has no command reboot"* ]] && ok "command outside the manifest refused" || bad "manifest: $rc $out"
"$KEEP" key generate --out "$tmp" --name other >/dev/null
out=$("$KEEP" run --trust "$tmp/other.public" "$I/hello.img" hello 2>&1); rc=$?
[ $rc -eq 126 ] && [[ $out == *"not trusted"* ]] && ok "untrusted image refused" || bad "untrusted: $rc $out"
out=$("$KEEP" run "$I/hello.img" 2>&1); rc=$?
[ $rc -eq 126 ] && [[ $out == *"is an image"* ]] && ok "image without --trust refused" || bad "no trust: $rc $out"

echo "vmm_images: $fails failures"
[ $fails -eq 0 ]
