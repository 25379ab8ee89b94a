#!/usr/bin/env bash
# The shell image (bash, coreutils, grep, sed, gawk, findutils, diffutils,
# jq, file, tar, gzip, xz from Debian): its programs and a bash script give
# byte for byte what they give natively, through keep run and through
# keepd's commands/run: a script of builtins, and a script of pipelines
# over coreutils, grep, sed, awk, jq and xargs.
source "$(dirname "$0")/../lib/keepd.sh"
I=$B/images; K=$B/keys/dev.public
export LC_ALL=C

ws=$tmp/ws; mkdir "$ws" "$ws/dir"
printf 'pear 3\napple 10\nfig 7\napple 10\nbanana 1\n' >"$ws/fruit.txt"
printf 'pear 3\napple 11\nfig 7\n' >"$ws/fruit2.txt"
echo '{"a": [1, 2, {"b": "x"}], "n": 3.5}' >"$ws/j.json"
head -c 50000 /dev/urandom | base64 >"$ws/blob.txt"
echo one >"$ws/dir/a"; echo two >"$ws/dir/b"
cat >"$ws/script.sh" <<'SH'
# Builtins only: loops, arithmetic, arrays, parameter expansion,
# redirections, read, printf, case.
declare -A count
total=0
while read -r name n; do
	count[$name]=$(( ${count[$name]:-0} + n ))
	total=$((total + n))
done < fruit.txt
for k in apple banana fig pear; do printf '%-8s %4d\n' "$k" "${count[$k]}"; done
printf 'total %d, %s\n' "$total" "${BASH_VERSION%%.*}"
s="Hello, Keep"; echo "${s^^} ${s,,} ${#s} ${s/Keep/world}"
for i in {1..5}; do case $((i % 3)) in 0) echo "$i fizz";; *) echo "$i";; esac; done >out.txt
while read -r line; do n=$((n + 1)); done <out.txt; echo "wrote $n lines"
SH

cat >"$ws/pipes.sh" <<'SH'
# Pipelines, command substitution and external programs: what an agent's
# shell tool runs.
set -o pipefail
sort fruit.txt | uniq -c | sort -k1,1nr -k2 | head -n 3
awk '{s += $2} END {print s}' < fruit.txt
n=$(grep -c apple fruit.txt); echo "apples: $n, lines: $(wc -l < fruit.txt)"
cut -d' ' -f1 fruit.txt | sort -u | tr '[:lower:]' '[:upper:]' | paste -sd, -
seq 1 100 | tr '\n' ' ' | sed 's/ $//' | md5sum
printf '%s\n' b a c | xargs -n1 echo item | sort -r
echo '{"a":[1,2,3]}' | jq -c '.a | map(. * 2)'
sha256sum fruit.txt | cut -c1-16 > sum.txt && cat sum.txt && rm sum.txt
date -u -d @0 +%F
for w in $(sort -u < fruit.txt | cut -d' ' -f1); do printf '%s=%d ' "$w" "${#w}"; done; echo
SH

while read -r cmd args; do
	want=$(cd "$ws" && $cmd $args 2>&1 </dev/null; echo "rc=$?")
	got=$("$KEEP" run --workspace "$ws" --trust "$K" "$I/shell.img" $cmd $args 2>&1 </dev/null; echo "rc=$?")
	if [ "$want" == "$got" ]; then ok "keep run $cmd $args"
	else bad "keep run $cmd $args: native '$want' guest '$got'"; fi
done <<'LIST'
nproc
nproc --all
cat fruit.txt
sort -k2 -n fruit.txt
uniq -c fruit.txt
wc fruit.txt blob.txt
sha256sum fruit.txt blob.txt
b2sum blob.txt
grep -n -E ^(apple|fig) fruit.txt
sed -e s/apple/APPLE/g -e 3d fruit.txt
awk {s+=$2}END{print(s,NR)} fruit.txt
gawk -F ; {print($1)} fruit.txt
jq -c .a[2] j.json
jq .n*2 j.json
diff fruit.txt fruit2.txt
cmp fruit.txt fruit2.txt
file fruit.txt j.json
head -n 2 fruit.txt
tail -c 20 blob.txt
cut -c1-3 fruit.txt
seq 3 2 11
expr 6 + 7
numfmt --to=iec 123456789
bash script.sh
bash pipes.sh
bash -c echo ${BASH_VERSINFO[0]} $((2**40))
LIST

# A script finds awk and sh in PATH as it does on Debian (there they are
# links that Debian's alternatives and dash own, here gawk and bash).
got=$("$KEEP" run --workspace "$ws" --trust "$K" "$I/shell.img" bash -c 'type -P awk sh; [ -x /usr/bin/awk ] && [ -x /bin/sh ] && echo executable' 2>&1)
[ "$got" = "$(printf '/usr/bin/awk\n/bin/sh\nexecutable')" ] && ok "awk and sh are in PATH" || bad "awk and sh: '$got'"

# Through keepd: commands/run picks the programs from the image by name.
cat >"$tmp/test.policy" <<'EOP'
agent "sh" {
	allow sandbox:read, sandbox:write, exec, artifact:write
	exec "bash", "sort", "jq", "sha256sum"
}
EOP
keepd_start "$tmp/test.policy"
tok=$(mint sh sandbox:read,sandbox:write,exec,artifact:write)
req "$tok" POST /v1/sandboxes '{"image":"shell"}'
sb=$(jget "$body" '["id"]')
[ "$code" = 201 ] || [ "$code" = 200 ] && ok "a shell sandbox" || bad "sandbox: $code $body"
for f in fruit.txt script.sh pipes.sh; do
	code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $tok" \
	    --data-binary @"$ws/$f" "$url/v1/sandboxes/$sb/files/write?path=/$f")
	[ "$code" = 200 ] && ok "files/write $f" || bad "files/write $f: $code"
done
run() { # cmd args-json stdin -> the run's stdout, as the API returns it
	req "$tok" POST "/v1/sandboxes/$sb/commands/run" \
	    "$(python3 -c 'import json,sys; print(json.dumps({"cmd": sys.argv[1], "args": json.loads(sys.argv[2]), "stdin": sys.argv[3]}))' "$1" "$2" "$3")"
	jget "$body" '["stdout"]'
}
want=$(cd "$ws" && bash script.sh)
got=$(run bash '["script.sh"]' '')
[ "$got" = "$want" ] && ok "commands/run bash script.sh: byte-identical" || bad "keepd bash: '$got' want '$want' ($code $body)"
want=$(cd "$ws" && bash pipes.sh)
got=$(run bash '["pipes.sh"]' '')
[ "$got" = "$want" ] && ok "commands/run bash pipes.sh (pipelines): byte-identical" || bad "keepd pipes: '$got' want '$want' ($code $body)"
want=$(sort -k2 -n "$ws/fruit.txt")
got=$(run sort '["-k2", "-n"]' "$(cat "$ws/fruit.txt")")
[ "$got" = "$want" ] && ok "commands/run sort with stdin" || bad "keepd sort: '$got' ($code $body)"
want=$(jq -c '.a' "$ws/j.json")
got=$(run jq '["-c", ".a"]' "$(cat "$ws/j.json")")
[ "$got" = "$want" ] && ok "commands/run jq" || bad "keepd jq: '$got' ($code $body)"
keepd_finish
