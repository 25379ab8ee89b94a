#!/usr/bin/env bash
# The node image through keepd's API: a sandbox of image `node`, whose
# `execute` with "language":"javascript" (or "js") runs node (the image's
# js command), prints what node prints natively for the same code and
# ends with its status; a script uploaded with files/write and run with
# commands/run, reading its stdin and writing a file that files/read
# returns; child_process from keepd's confined vm process; the image list
# names the language; and the js image stays Duktape.
source "$(dirname "$0")/../lib/keepd.sh"
if [ ! -x /usr/bin/node ]; then echo "SKIP: no /usr/bin/node"; exit 77; fi
KEEPD_IMAGES="node js"

cat >"$tmp/test.policy" <<'EOP'
agent "dev" {
	allow sandbox:read, sandbox:write, exec, artifact:read, artifact:write, image:read
	exec "js", "node"
	timeout 60s
	output 1M
}
EOP
keepd_start "$tmp/test.policy"
tok=$(mint dev sandbox:read,sandbox:write,exec,artifact:read,artifact:write,image:read)

# execute LANGUAGE CODE: sets code and body
execute() {
	req "$tok" POST "/v1/sandboxes/$sb/execute" \
	    "$(python3 -c 'import json,sys; print(json.dumps({"code": sys.argv[2], "language": sys.argv[1]}))' "$1" "$2")"
}
# native CODE: node -e CODE in an empty directory, as "[eval]" everywhere
native() {
	mkdir -p "$tmp/native"
	(cd "$tmp/native" && (exec -a node /usr/bin/node -e "$1") \
	    >"$tmp/n.out" 2>"$tmp/n.err" </dev/null; echo $? >"$tmp/n.rc")
}
# same NAME LANGUAGE CODE: execute's stdout, stderr and exit status are
# node's natively
same() {
	local name=$1 lang=$2 c=$3
	execute "$lang" "$c"
	native "$c"
	python3 -c 'import json,sys; r = json.loads(sys.argv[1])
open(sys.argv[2], "w").write(r.get("stdout", ""))
open(sys.argv[3], "w").write(r.get("stderr", ""))
open(sys.argv[4], "w").write("%s\n" % r.get("exit_code"))' "$body" \
	    "$tmp/k.out" "$tmp/k.err" "$tmp/k.rc" 2>/dev/null
	if [ "$code" = 200 ] && cmp -s "$tmp/n.out" "$tmp/k.out" &&
	    cmp -s "$tmp/n.err" "$tmp/k.err" && cmp -s "$tmp/n.rc" "$tmp/k.rc"; then
		ok "$name (exit $(cat "$tmp/k.rc"), as natively)"
	else
		bad "$name: $code $body; native exit $(cat "$tmp/n.rc"): $(cat "$tmp/n.out" "$tmp/n.err")"
	fi
}

req "$tok" POST /v1/sandboxes '{"image":"node"}'
[ "$code" = 201 ] && ok "a node sandbox" || bad "create: $code $body"
sb=$(jget "$body" '["id"]')

same "execute javascript: ES2023" javascript 'class P { #x = 2n ** 64n; get x() { return this.#x; } }
const a = [3, 1, 2];
console.log(new P().x, a.toSorted(), a.findLast(v => v > 1), a.at(-1), null ?? "dflt",
	structuredClone({ m: new Map([[1, [2]]]) }), JSON.stringify({ k: [1, "é"] }))'
same "execute js: timers and async/await" js '(async () => {
	const t = (ms, v) => new Promise(r => setTimeout(() => r(v), ms));
	console.log(await Promise.all([t(20, "a"), t(5, "b")]), await Promise.race([t(30, "x"), t(1, "y")]));
})()'
same "execute: a thrown error, its stack and exit status 1" javascript 'console.log("before"); throw new TypeError("boom")'
same "execute: process.exit(5)" javascript 'console.error("bye"); process.exit(5)'
same "execute: child_process from the confined vm process" javascript \
    'const cp = require("child_process"); console.log(cp.execFileSync(process.execPath, ["-e", "console.log(6*7)"]).toString().trim(), cp.spawnSync(process.execPath, ["-e", "process.stdin.pipe(process.stdout)"], { input: "echo" }).stdout.toString())'
same "execute: worker_threads" javascript 'const { Worker } = require("worker_threads");
new Worker("require(\"worker_threads\").parentPort.postMessage(21 * 2)", { eval: true }).on("message", m => console.log("worker", m))'

# A script and its input through files/write, run with commands/run and
# stdin; what it writes comes back with files/read.
cat >"$tmp/sum.js" <<'JS'
const fs = require('fs');
let s = '';
process.stdin.on('data', d => s += d).on('end', () => {
	const n = s.split('\n').filter(Boolean).map(Number);
	const data = JSON.parse(fs.readFileSync('data.json', 'utf8'));
	const out = { sum: n.reduce((a, b) => a + b, 0), items: data.items.length };
	fs.writeFileSync('result.json', JSON.stringify(out));
	console.log(out, process.argv.slice(2));
});
JS
echo '{"items": [1, 2, 3]}' >"$tmp/data.json"
for f in sum.js data.json; do
	code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $tok" \
	    --data-binary @"$tmp/$f" "$url/v1/sandboxes/$sb/files/write?path=$f")
	[ "$code" = 200 ] && ok "files/write $f" || bad "files/write $f: $code"
done
req "$tok" POST "/v1/sandboxes/$sb/commands/run" \
    '{"cmd":"node","args":["sum.js","x"],"stdin":"4\n5\n6\n"}'
got=$(jget "$body" '["stdout"]' 2>/dev/null)
mkdir -p "$tmp/nat2" && cp "$tmp/sum.js" "$tmp/data.json" "$tmp/nat2/" &&
	want=$(cd "$tmp/nat2" && printf '4\n5\n6\n' | node sum.js x)
[ "$code" = 200 ] && [ "$got" = "$want" ] &&
	ok "commands/run node sum.js with stdin: '$got'" ||
	bad "commands/run: $code $body; want '$want'"
code=$(curl -s -o "$tmp/result.json" -w '%{http_code}' -H "Authorization: Bearer $tok" \
    "$url/v1/sandboxes/$sb/files/read?path=result.json")
[ "$code" = 200 ] && cmp -s "$tmp/result.json" "$tmp/nat2/result.json" &&
	ok "files/read of what the script wrote: $(cat "$tmp/result.json")" ||
	bad "files/read: $code $(cat "$tmp/result.json")"

# A live context: node with keep's js driver, whose cells keep their
# declarations; console output and the last expression come back.
req "$tok" POST "/v1/sandboxes/$sb/contexts" '{"language":"javascript"}'
ctx=$(jget "$body" '["id"]' 2>/dev/null)
[ "$code" = 201 ] && ok "a javascript context in the node sandbox" || bad "context: $code $body"
cell() {
	req "$tok" POST "/v1/sandboxes/$sb/execute" \
	    "$(python3 -c 'import json,sys; print(json.dumps({"code": sys.argv[1], "language": "javascript", "context_id": sys.argv[2], "env_vars": {"WHO": "cell"}}))' "$1" "$ctx")"
}
cell 'var n = 20n ** 2n; class K { #v = 1; get v() { return this.#v; } }; console.log("in", n, process.env.WHO); n + 1n'
out=$(python3 -c 'import json,sys; r = json.loads(sys.argv[1]); print(repr(r["logs"]["stdout"]), [x["text"] for x in r["results"]])' "$body" 2>&1)
[ "$code" = 200 ] && [ "$out" = "['in 400n cell\n'] ['401']" ] &&
	ok "a context's cell: output, env_vars, its value" || bad "cell: $code $out $body"
cell 'new K().v + Number(n)'
out=$(python3 -c 'import json,sys; r = json.loads(sys.argv[1]); print([x["text"] for x in r["results"]], r["execution_count"])' "$body" 2>&1)
[ "$code" = 200 ] && [ "$out" = "['401'] 2" ] &&
	ok "the next cell sees the last one's declarations" || bad "cell 2: $code $out $body"

# The image list says the node image serves javascript.
req "$tok" GET /v1/images
langs=$(jget "$body" '["images"]' 2>/dev/null | python3 -c 'import ast,sys; print([i["languages"] for i in ast.literal_eval(sys.stdin.read()) if i["name"] == "node"])')
[ "$code" = 200 ] && [ "$langs" = "['javascript']" ] &&
	ok "the image list: node serves javascript" || bad "images: $code $langs $body"

# The js image stays Duktape: no process object there.
req "$tok" POST /v1/sandboxes '{"image":"js"}'
sbjs=$(jget "$body" '["id"]')
req "$tok" POST "/v1/sandboxes/$sbjs/execute" '{"language":"javascript","code":"print(typeof process, typeof Duktape)"}'
[ "$code" = 200 ] && [ "$(jget "$body" '["stdout"]')" = "undefined object" ] &&
	ok "the js image is still Duktape" || bad "js image: $code $body"

keepd_finish
