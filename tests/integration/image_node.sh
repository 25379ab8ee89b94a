#!/usr/bin/env bash
# The node image (Debian's nodejs package, or the vendor build installed
# under that name): programs given with -e and as script files in the
# workspace print the same bytes on stdout and stderr and end with the
# same status in keep run as under the same node natively: console.log,
# process.argv and env, the workspace's files, timers and the event loop,
# promises and async/await, ES2022-2023 (private fields and methods,
# static blocks, BigInt, ??, ?., at, findLast, change-array-by-copy,
# structuredClone), child_process with node itself, worker_threads,
# WebAssembly, crypto, zlib, Intl, JSON, an uncaught error and an
# unhandled rejection. node runs under a 128 MiB limit too: V8's and
# glibc's reservations are address space, not memory (docs/vmm.md,
# "Reservations").
source "$(dirname "$0")/../lib/guest.sh"
I=$B/images/node.img; K=$B/keys/dev.public
if [ ! -x /usr/bin/node ]; then echo "SKIP: no /usr/bin/node"; exit 77; fi
[ -f "$I" ] || { echo "FAIL: $I is not built"; exit 1; }

p=$tmp/progs; mkdir "$p"
printf '1\n2\n3\n' >"$p/input.txt"

cat >"$p/basics.js" <<'JS'
// console.log of values, process.argv and env, JSON.
console.log(process.argv.slice(1), process.argv0);
console.log(process.env.KEEP_TEST, process.env.NO_SUCH_VARIABLE);
console.log({ n: 1, s: 'x', a: [1, [2, [3, [4]]]], m: new Map([[1, 'a']]),
	set: new Set([1, 2]), u: undefined, nul: null, f() {}, sym: Symbol('s') });
console.log('%s is %d and %i, %o', 'keep', 42.5, 42.5, { a: 1 });
console.error('to stderr:', new Error('not thrown').message);
console.log(JSON.stringify({ a: [1, { b: 2 }], c: 'é', d: 1e21 }, null, 2));
console.log(JSON.parse('{"x":[1,2,{"y":null}]}',
	(k, v) => typeof v === 'number' ? v * 10 : v));
console.table([{ a: 1, b: 2 }, { a: 3, b: 4 }]);
JS

cat >"$p/es2023.js" <<'JS'
// ES2022-2023: private fields and methods, static blocks, BigInt, ??,
// ?., logical assignment, at/findLast, change-array-by-copy,
// structuredClone, error causes, RegExp match indices.
class Counter {
	#count = 0;
	static #instances = 0;
	static { Counter.made = 'static block'; }
	constructor() { Counter.#instances++; }
	#bump() { return ++this.#count; }
	inc() { return this.#bump(); }
	static has(o) { return #count in o; }
	static get instances() { return Counter.#instances; }
}
const c = new Counter();
c.inc(); c.inc();
console.log(c.inc(), Counter.instances, Counter.has(c), Counter.has({}), Counter.made);
const big = 2n ** 100n;
console.log(big, big % 97n, BigInt.asUintN(64, -1n), typeof big,
	(123456789n * 987654321n).toString(16));
const o = { a: null, b: 0, c: { d: undefined } };
console.log(o.a ?? 'dflt', o.b ?? 'dflt', o.b || 'or', o.c?.d?.e, o.x?.y);
let z = null; z ??= 5; let w = 0; w ||= 7; let q = 1; q &&= 9;
console.log(z, w, q);
const arr = [5, 1, 4, 2, 3];
console.log(arr.at(-1), arr.findLast(x => x > 3), arr.findLastIndex(x => x > 3),
	arr.toSorted(), arr.toReversed(), arr.with(0, 50), arr.toSpliced(1, 2), arr);
console.log(Object.hasOwn(o, 'a'), 'abcabc'.replaceAll('b', 'B'), 'hello'.at(-1),
	[1, [2, [3, [4]]]].flat(Infinity));
const err = new Error('outer', { cause: new Error('inner') });
console.log(err.cause.message);
console.log(/(?<y>\d{4})-(?<m>\d\d)/d.exec('on 2024-05').indices.groups.y);
console.log(structuredClone({ d: new Date(0), m: new Map([[1, { x: [1, 2] }]]),
	s: new Set(['a']), r: /x/g, b: new Uint8Array([1, 2]) }));
console.log([...'héllo'].length, Array.from({ length: 3 }, (_, i) => i * i),
	Number.MAX_SAFE_INTEGER, 0.1 + 0.2);
outer: for (const x of [1, 2])
	for (const y of [3, 4]) {
		if (y === 4) continue outer;
		console.log(x, y);
	}
function* gen() { yield* [1, 2]; return 3; }
console.log([...gen()], Symbol.for('k').description, globalThis === global);
JS

cat >"$p/async.js" <<'JS'
// Timers, the event loop's order, promises and async/await.
const log = [];
// Long enough that the loop's first turn (its immediates) comes first
// on a loaded machine too; the test's sleep below outlasts it.
setTimeout(() => log.push('timeout 400'), 400);
setImmediate(() => log.push('immediate'));
process.nextTick(() => log.push('nextTick'));
Promise.resolve().then(() => log.push('microtask'));
queueMicrotask(() => log.push('queueMicrotask'));
let n = 0;
const iv = setInterval(() => { if (++n === 3) clearInterval(iv); }, 5);
const sleep = (ms, v) => new Promise(r => setTimeout(() => r(v), ms));
async function* ticks() {
	for (let i = 0; i < 3; i++) { await sleep(1); yield i; }
}
async function main() {
	const all = await Promise.all([sleep(10, 'a'), sleep(5, 'b'), 'c']);
	const settled = await Promise.allSettled([Promise.reject(new Error('no')), sleep(1, 'yes')]);
	const any = await Promise.any([sleep(15, 'slow'), sleep(2, 'fast')]);
	const race = await Promise.race([sleep(30, 'late'), sleep(3, 'early')]);
	const got = [];
	for await (const t of ticks()) got.push(t);
	await sleep(600); /* after 'timeout 400', by any machine's speed */
	try {
		await Promise.reject(new TypeError('caught'));
	} catch (e) {
		log.push(e.name + ': ' + e.message);
	}
	await sleep(40);
	console.log(all, settled.map(s => s.status), any, race, got, 'interval ran', n);
	console.log(log.join('\n'));
	const t0 = Date.now();
	await sleep(50);
	console.log('slept at least 50 ms:', Date.now() - t0 >= 49);
}
main().then(() => console.log('main done'));
JS

cat >"$p/files.js" <<'JS'
// The workspace's files: sync, streams and promises.
const fs = require('fs');
const fsp = require('fs/promises');
const path = require('path');
fs.mkdirSync('out/deep/er', { recursive: true });
fs.writeFileSync('out/a.txt', 'line 1\n');
fs.appendFileSync('out/a.txt', 'line 2\n');
console.log(fs.readFileSync('out/a.txt', 'utf8'));
console.log(fs.readFileSync('input.txt', 'utf8').split('\n').filter(Boolean)
	.map(Number).reduce((a, b) => a + b, 0));
const st = fs.statSync('out/a.txt');
console.log(st.size, st.isFile(), st.isDirectory(), fs.statSync('out').isDirectory());
fs.renameSync('out/a.txt', 'out/b.txt');
console.log(fs.existsSync('out/a.txt'), fs.existsSync('out/b.txt'), fs.readdirSync('out').sort());
const fd = fs.openSync('out/bin', 'w+');
fs.writeSync(fd, Buffer.from([1, 2, 3, 250]));
const b = Buffer.alloc(4);
fs.readSync(fd, b, 0, 4, 0);
fs.closeSync(fd);
console.log(b);
try {
	fs.readFileSync('missing.txt');
} catch (e) {
	console.log(e.code, e.syscall, e.message);
}
(async () => {
	await fsp.writeFile('out/p.json', JSON.stringify({ ok: true }));
	console.log(JSON.parse(await fsp.readFile('out/p.json', 'utf8')));
	const names = [];
	for await (const d of await fsp.opendir('out'))
		names.push(d.name + (d.isDirectory() ? '/' : ''));
	console.log(names.sort());
	fs.rmSync('out/deep', { recursive: true });
	fs.unlinkSync('out/bin');
	console.log(fs.readdirSync('out').sort(), path.join('/a', '../b', 'c.txt'),
		path.resolve('rel'), __filename, path.relative(__dirname, __filename));
	fs.createReadStream('input.txt').on('data', c => console.log('stream', c.length))
		.on('end', () => console.log('end'));
})();
JS

cat >"$p/child.js" <<'JS'
// child_process with the one program the image has: node itself.
const cp = require('child_process');
console.log(cp.execFileSync(process.execPath, ['-e', 'console.log(6 * 7)']).toString());
const r = cp.spawnSync(process.execPath,
	['-e', 'process.stdin.pipe(process.stdout); console.error("err line")'],
	{ input: 'from parent\n' });
console.log(r.status, JSON.stringify(r.stdout.toString()), JSON.stringify(r.stderr.toString()));
try {
	cp.execFileSync(process.execPath, ['-e', 'process.exit(3)'], { stdio: 'pipe' });
} catch (e) {
	console.log('status', e.status);
}
const child = cp.spawn(process.execPath, ['-e', 'setTimeout(() => console.log("async child"), 10)']);
child.stdout.on('data', d => process.stdout.write('got: ' + d));
child.on('close', (code, sig) => console.log('close', code, sig));
JS

cat >"$p/libs.js" <<'JS'
// Built-in modules: crypto (OpenSSL), zlib, Buffer, text codecs, Intl
// (ICU), util.
const crypto = require('crypto');
const zlib = require('zlib');
console.log(crypto.createHash('sha256').update('keep').digest('hex'));
console.log(crypto.createHmac('sha1', 'k').update('v').digest('base64'));
console.log(/^[0-9a-f-]{36}$/.test(crypto.randomUUID()), crypto.randomBytes(8).length);
console.log(zlib.gunzipSync(zlib.gzipSync('x'.repeat(1000))).length,
	zlib.inflateSync(zlib.deflateSync(Buffer.from('abc'))).toString());
console.log(Buffer.from('héllo').toString('base64'), Buffer.from('68656c6c6f', 'hex').toString());
console.log(new TextEncoder().encode('€'), new TextDecoder().decode(new Uint8Array([0xe2, 0x82, 0xac])));
console.log((1234567.891).toLocaleString('en-US'),
	new Intl.NumberFormat('de-DE', { style: 'currency', currency: 'EUR' }).format(1234.5));
console.log(new Date(Date.UTC(2020, 0, 2, 3, 4, 5)).toISOString(), new Date(0).toUTCString());
console.log(require('util').inspect({ a: { b: { c: { d: 1 } } } }, { depth: 0 }),
	require('util').format('%j', { x: 1 }));
JS

cat >"$p/throw.js" <<'JS'
// An uncaught error: exit status 1 and its stack on stderr.
console.log('before');
function f() { throw new TypeError('boom'); }
f();
JS

cat >"$p/reject.js" <<'JS'
// An unhandled rejection ends the process as an uncaught error does.
console.log('before');
Promise.reject(new RangeError('rejected'));
JS

cat >"$p/exitcode.js" <<'JS'
process.on('exit', code => console.log('exiting with', code));
process.exitCode = 3;
console.log('set');
JS

cat >"$p/worker.js" <<'JS'
const { Worker, isMainThread, parentPort, workerData } = require('worker_threads');
if (isMainThread) {
	const w = new Worker(__filename, { workerData: 21 });
	w.on('message', m => console.log('worker says', m));
	w.on('exit', c => console.log('worker exit', c));
} else
	parentPort.postMessage(workerData * 2);
JS

cat >"$p/wasm.js" <<'JS'
const bytes = new Uint8Array([0,97,115,109,1,0,0,0,1,7,1,96,2,127,127,1,127,3,2,1,0,7,7,1,3,97,100,100,0,0,10,9,1,7,0,32,0,32,1,106,11]);
WebAssembly.instantiate(bytes).then(({ instance }) => console.log('wasm add', instance.exports.add(2, 3)));
const mem = new WebAssembly.Memory({ initial: 1, maximum: 10 }); console.log(mem.buffer.byteLength);
JS

# same NAME [keep-run options --] ARGS...: node ARGS natively in a copy of
# the programs, and in keep run with another copy as the workspace (whose
# path the native output loses, so both read "/name.js"); stdin from
# $tmp/stdin. stdout, stderr and the exit status must be the same bytes.
same() {
	local name=$1 opts=(); shift
	if [ "${1:-}" = --memory ]; then opts=(--memory "$2"); shift 3; fi
	rm -rf "$tmp/n" "$tmp/k"; cp -r "$p" "$tmp/n"; cp -r "$p" "$tmp/k"
	(cd "$tmp/n" && (KEEP_TEST=val exec -a node /usr/bin/node "$@") \
	    <"$tmp/stdin" >"$tmp/n.out" 2>"$tmp/n.err"; echo $? >"$tmp/n.rc")
	sed -i "s|$tmp/n||g" "$tmp/n.out" "$tmp/n.err"
	"$KEEP" run "${opts[@]}" --timeout 60s --workspace "$tmp/k" \
	    --env KEEP_TEST=val --trust "$K" "$I" node "$@" <"$tmp/stdin" \
	    >"$tmp/k.out" 2>"$tmp/k.err"; echo $? >"$tmp/k.rc"
	if cmp -s "$tmp/n.out" "$tmp/k.out" && cmp -s "$tmp/n.err" "$tmp/k.err" &&
	    cmp -s "$tmp/n.rc" "$tmp/k.rc"; then
		ok "$name (exit $(cat "$tmp/k.rc"), $(wc -c <"$tmp/k.out") + $(wc -c <"$tmp/k.err") bytes as native)"
	else
		bad "$name: exit $(cat "$tmp/n.rc") natively, $(cat "$tmp/k.rc") in keep; stdout: $(diff "$tmp/n.out" "$tmp/k.out" | head -8); stderr: $(diff "$tmp/n.err" "$tmp/k.err" | head -8)"
	fi
}
: >"$tmp/stdin"

same "console.log, argv, env, JSON" basics.js a 'b c'
same "ES2022-2023: private fields, BigInt, ??, at, findLast, toSorted, structuredClone" es2023.js
same "timers, event-loop order, promises, async/await, for await" async.js
same "workspace files: sync, promises, streams" files.js
# What the program wrote in the workspace is on the host afterwards.
[ "$(cat "$tmp/k/out/b.txt" 2>/dev/null)" = $'line 1\nline 2' ] &&
	ok "the guest's files are in the workspace" ||
	bad "workspace after files.js: $(ls -R "$tmp/k" | head)"
same "child_process: execFileSync, spawnSync with input, a failing child, spawn" child.js
same "crypto, zlib, Buffer, TextEncoder, Intl, util" libs.js
same "worker_threads" worker.js
same "WebAssembly" wasm.js
same "an uncaught TypeError: exit 1, the stack on stderr" throw.js
same "an unhandled rejection" reject.js
same "process.exitCode and the exit event" exitcode.js
same "-e: console.log" -e 'console.log("hi", [1, 2].at(-1), 10n ** 20n, { a: null ?? "d" })'
same "-p" -p '[3, 1, 2].toSorted().findLast(x => x < 3)'
same "-e: a thrown error" -e 'throw new Error("x")'
same "-e: a syntax error" -e 'let = ;'
same "os.cpus() counts what availableParallelism() does" -p \
    'const os = require("os"); os.cpus().length === os.availableParallelism() && os.cpus().length > 0'
same "process.exit(7) after output" -e 'console.log("out"); console.error("err"); process.exit(7)'
same "20,000 lines of output" -e 'for (let i = 0; i < 20000; i++) console.log("line " + i)'
# stdin from a file, as natively (keep sees it as a pipe; epoll takes
# it), and from /dev/null.
printf '3\n4\n5\n' >"$tmp/stdin"
same "stdin read to its end" -e 'let s = ""; process.stdin.on("data", d => s += d).on("end", () => console.log(s.split("\n").filter(Boolean).map(Number).reduce((a, b) => a + b)))'
cp /dev/null "$tmp/stdin"
same "stdin empty" -e 'process.stdin.on("data", d => console.log("data", d)).on("end", () => console.log("end"))'
: >"$tmp/stdin"

# Under a 128 MiB limit: V8's 512 MiB code range and glibc's arenas are
# reservations, not memory; a child node is charged beside its parent.
same "under --memory 128M: ES2023" --memory 128M -- es2023.js
same "under --memory 128M: child_process" --memory 128M -- child.js
"$KEEP" run --stats --memory 128M --trust "$K" "$I" node -e 'console.log(1)' \
    >"$tmp/out" 2>"$tmp/err"; rc=$?
peak=$(sed -n 's/.*peak memory \([0-9]*\) KiB.*/\1/p' "$tmp/err")
[ $rc -eq 0 ] && [ -n "$peak" ] && [ "$peak" -lt 131072 ] &&
	ok "node -e under 128 MiB: peak memory $peak KiB" ||
	bad "node under 128M: exit $rc, '$peak' $(cat "$tmp/err")"
# Past the limit, V8 is refused memory and says so, as under a cgroup.
"$KEEP" run --memory 128M --trust "$K" "$I" node -e \
    'const a = []; for (;;) a.push(new Array(1e6).fill(1))' >"$tmp/out" 2>"$tmp/err"; rc=$?
[ $rc -ne 0 ] && grep -q "refused memory at its limit" "$tmp/err" &&
	ok "a heap past the limit ends the run, named (exit $rc)" ||
	bad "past the limit: exit $rc: $(tail -3 "$tmp/err")"

# The image's js command is node too (the API's javascript executes).
got=$("$KEEP" run --trust "$K" "$I" js -e 'console.log(typeof process.versions.v8, 2n ** 3n)' 2>&1)
[ "$got" = "string 8n" ] && ok "js is node in this image" || bad "js: '$got'"

[ $fails -eq 0 ] && echo "image_node: all passed" ||
	echo "image_node: $fails failures"
[ $fails -eq 0 ]
