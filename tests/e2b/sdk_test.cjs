// E2B's own SDK (npm @e2b/code-interpreter and e2b) against keepd, with
// nothing changed but its environment: E2B_API_URL, E2B_SANDBOX_URL and
// E2B_API_KEY (tests/integration/e2b_sdk.sh sets them, and KEEP_OTHER_KEY,
// another principal's, and KEEP_PORTS_DOMAIN, keepd.yaml's ports.domain,
// which getHost's answer must name). Prints ok:/FAIL: lines; exits 1 on
// any failure.
'use strict';
const http = require('node:http');
const { Sandbox } = require('@e2b/code-interpreter');

let fails = 0;
function check(name, cond, detail) {
	if (cond) {
		console.log(`ok: ${name}`);
	} else {
		fails++;
		console.log(`FAIL: ${name}${detail !== undefined ? ': ' + JSON.stringify(detail) : ''}`);
	}
}
async function threw(fn) {
	try {
		await fn();
		return null;
	} catch (e) {
		return e;
	}
}

async function codeInterpreter() {
	const sbx = await Sandbox.create({ envs: { E2B_TEST: 'from-create' },
		metadata: { owner: 'tests' }, timeoutMs: 600000 });
	check('Sandbox.create() makes a sandbox of the code interpreter template',
	    /^sbx-/.test(sbx.sandboxId), sbx.sandboxId);
	const info = await sbx.getInfo();
	check('getInfo: the machine image, the timeout as ttl',
	    info.sandboxId === sbx.sandboxId && info.name === 'machine' &&
	        Math.abs(info.endAt - info.startedAt - 600000) < 2000,
	    info);
	check("getInfo: the metadata Sandbox.create was given",
	    JSON.stringify(info.metadata) === JSON.stringify({ owner: 'tests' }),
	    info.metadata);
	check('isRunning() is true', await sbx.isRunning());

	let ex = await sbx.runCode('x = 42');
	check("runCode('x = 42'): no result, no error",
	    ex.results.length === 0 && ex.error === undefined, ex.toJSON());
	ex = await sbx.runCode('x');
	check("runCode('x') gives 42: the cells share the default context",
	    ex.text === '42' && ex.results[0].isMainResult === true, ex.toJSON());
	check('executionCount counts the cells', ex.executionCount === 2,
	    ex.executionCount);

	const outs = [], errs = [], results = [];
	ex = await sbx.runCode(
	    'import sys\nprint("hello")\nprint("oops", file=sys.stderr)\n' +
	    'print("world")\nx * 2',
	    {
		    onStdout: (m) => outs.push(m.line),
		    onStderr: (m) => errs.push(m.line),
		    onResult: (r) => results.push(r.text),
	    });
	check('onStdout is called with each line, in order',
	    outs.join('') === 'hello\nworld\n', outs);
	check('onStderr is called', errs.join('') === 'oops\n', errs);
	check('onResult is called with the main result',
	    results.length === 1 && results[0] === '84', results);
	check('logs hold the same lines',
	    ex.logs.stdout.join('') === 'hello\nworld\n' &&
	        ex.logs.stderr.join('') === 'oops\n',
	    ex.logs);

	// A long cell's output arrives as the cell prints it: the first
	// line reaches onStdout before the cell prints its second, stamped
	// with the guest's clock (the host's, as Date.now() is).
	const seen = [], seenResults = [];
	ex = await sbx.runCode('import time\nprint("first", flush=True)\n' +
	    'time.sleep(2)\nprint("second", time.time())\n7',
	    {
		    onStdout: (m) => seen.push([Date.now(), m.line]),
		    onResult: (r) => seenResults.push([Date.now(), r.text]),
	    });
	const firstAt = seen.length === 2 && seen[0][1] === 'first\n' ?
	    seen[0][0] : null;
	const secondPrinted = seen.length === 2 && /^second /.test(seen[1][1]) ?
	    parseFloat(seen[1][1].split(' ')[1]) * 1000 : null;
	check('runCode streams: onStdout gets the first line before the cell ' +
	    'prints its second',
	    firstAt !== null && secondPrinted !== null && firstAt < secondPrinted,
	    seen);
	check('then onResult, and the cell is counted at its end',
	    seenResults.length === 1 && seenResults[0][1] === '7' &&
	        ex.text === '7' && ex.executionCount === 4,
	    [seenResults, ex.executionCount]);

	const errors = [];
	ex = await sbx.runCode('def f():\n    return 1 / 0\nf()',
	    { onError: (e) => errors.push(e.name) });
	check("an error's name, value and traceback",
	    ex.error && ex.error.name === 'ZeroDivisionError' &&
	        ex.error.value === 'division by zero' &&
	        ex.error.traceback.includes('line 2, in f') &&
	        ex.error.traceback.includes('ZeroDivisionError'),
	    ex.error);
	check('onError is called', errors[0] === 'ZeroDivisionError', errors);
	ex = await sbx.runCode('x + 1');
	check('the context lives on after an error', ex.text === '43', ex.toJSON());

	ex = await sbx.runCode(
	    'import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [3, 1, 2])\n' +
	    'plt.title("keep")\nplt.show()');
	const png = ex.results.find((r) => r.png);
	const bytes = png ? Buffer.from(png.png, 'base64') : Buffer.alloc(0);
	check('a matplotlib figure comes back as a PNG',
	    png !== undefined && png.formats().includes('png') &&
	        bytes.subarray(1, 4).toString() === 'PNG' && bytes.length > 1000,
	    ex.results.map((r) => r.formats()));

	ex = await sbx.runCode('import pandas as pd\npd.DataFrame({"a": [1, 2]})');
	check('a DataFrame comes back as text and HTML',
	    ex.text && ex.text.includes('a') && ex.results[0].html &&
	        ex.results[0].html.includes('<table'),
	    ex.toJSON());

	ex = await sbx.runCode('import os\nos.environ.get("E2B_TEST")');
	check("Sandbox.create's envs are the cells' environment",
	    ex.text === "'from-create'", ex.toJSON());

	const ctx = await sbx.createCodeContext({ cwd: '/work' });
	check('createCodeContext makes a python context in its cwd',
	    typeof ctx.id === 'string' && ctx.language === 'python' &&
	        ctx.cwd === '/work',
	    ctx);
	await sbx.runCode('y = 5', { context: ctx });
	ex = await sbx.runCode('import os\n(y, os.getcwd())', { context: ctx });
	check('runCode in a context keeps its own state',
	    ex.text === "(5, '/work')", ex.toJSON());
	ex = await sbx.runCode('x', { context: ctx });
	check("a context does not see the default context's state",
	    ex.error && ex.error.name === 'NameError', ex.toJSON());
	ex = await sbx.runCode('y');
	check("nor the default context another's",
	    ex.error && ex.error.name === 'NameError', ex.toJSON());
	ex = await sbx.runCode('z = 7; z', { envs: { KEEP_E2B: 'yes' } });
	check('envs reach a cell',
	    ex.text === '7', ex.toJSON());
	ex = await sbx.runCode('import os; os.environ.get("KEEP_E2B")',
	    { envs: { KEEP_E2B: 'yes' } });
	check('a cell sees its envs', ex.text === "'yes'", ex.toJSON());

	const nojs = await threw(() => sbx.createCodeContext({ language: 'js' }));
	check('a js context in the python image is refused (its image has no js)',
	    nojs && /400/.test(nojs.message), nojs && nojs.message);
	const listed = await sbx.listCodeContexts();
	check('listCodeContexts lists them, the default one too',
	    listed.some((c) => c.id === ctx.id) && listed.length === 2,
	    listed);
	await sbx.restartCodeContext(ctx);
	ex = await sbx.runCode('y', { context: ctx });
	check('restartCodeContext forgets its state',
	    ex.error && ex.error.name === 'NameError', ex.toJSON());
	await sbx.removeCodeContext(ctx);
	const gone = await threw(() => sbx.runCode('1', { context: ctx }));
	check('removeCodeContext removes it: its cells are not found',
	    gone && gone.name === 'NotFoundError', gone && gone.message);

	// Files: envd's upload (multipart) and download, and its Connect RPC.
	const w = await sbx.files.write('/data/hello.txt', 'hi there\n');
	check('files.write makes the directories and writes',
	    w.path === '/data/hello.txt' && w.name === 'hello.txt', w);
	check('files.read reads it back',
	    (await sbx.files.read('/data/hello.txt')) === 'hi there\n');
	const bin = Buffer.from([0, 1, 2, 255, 254]);
	await sbx.files.write('/data/bin', bin.buffer.slice(bin.byteOffset,
	    bin.byteOffset + bin.length));
	const back = Buffer.from(await sbx.files.read('/data/bin', { format: 'bytes' }));
	check('binary files round-trip', back.equals(bin), [...back]);
	const big = Buffer.alloc(3 << 20, 'k');
	await sbx.files.write('/data/big', big.buffer.slice(big.byteOffset,
	    big.byteOffset + big.length));
	const bigBack = Buffer.from(await sbx.files.read('/data/big', { format: 'bytes' }));
	check('a 3 MiB file round-trips', bigBack.equals(big), bigBack.length);
	const many = await sbx.files.write([
		{ path: '/data/a.txt', data: 'a' },
		{ path: '/data/sub/b.txt', data: 'bb' },
	]);
	check('files.write of several files', Array.isArray(many) &&
	    many.length === 2 && many[1].path === '/data/sub/b.txt', many);
	ex = await sbx.runCode('open("/data/hello.txt").read()');
	check('a cell reads what files.write wrote',
	    ex.text === "'hi there\\n'", ex.toJSON());
	const list = await sbx.files.list('/data');
	const names = list.map((e) => `${e.name}:${e.type}:${e.size}`).sort();
	check('files.list names the entries, their types and sizes',
	    JSON.stringify(names) ===
	        JSON.stringify(['a.txt:file:1', `big:file:${3 << 20}`, 'bin:file:5',
		    'hello.txt:file:9', 'sub:dir:' + list.find((e) => e.name === 'sub').size]) &&
	        list.every((e) => e.path === `/data/${e.name}` &&
	            e.modifiedTime instanceof Date),
	    list);
	check('files.exists', (await sbx.files.exists('/data/a.txt')) === true &&
	    (await sbx.files.exists('/data/none')) === false);
	const gi = await sbx.files.getInfo('/data/hello.txt');
	check('files.getInfo', gi.type === 'file' && gi.size === 9 &&
	    gi.path === '/data/hello.txt', gi);
	check('files.makeDir: true when made, false when there',
	    (await sbx.files.makeDir('/data/new/deep')) === true &&
	        (await sbx.files.makeDir('/data/new/deep')) === false);
	await sbx.files.remove('/data/a.txt');
	check('files.remove', (await sbx.files.exists('/data/a.txt')) === false);
	// files.rename: envd's Move, answered with the moved entry.
	const moved = await sbx.files.rename('/data/sub/b.txt', '/data/b2.txt');
	check('files.rename answers the entry at its new path',
	    moved.name === 'b2.txt' && moved.path === '/data/b2.txt' &&
	        moved.type === 'file' && moved.size === 2,
	    moved);
	check('files.rename moved it',
	    (await sbx.files.read('/data/b2.txt')) === 'bb' &&
	        (await sbx.files.exists('/data/sub/b.txt')) === false);
	await sbx.files.write('/data/old.txt', 'old');
	await sbx.files.rename('/data/b2.txt', '/data/old.txt');
	check('files.rename onto a file replaces it, as os.Rename',
	    (await sbx.files.read('/data/old.txt')) === 'bb');
	const dmoved = await sbx.files.rename('/data/new', '/data/renamed');
	check('files.rename of a directory',
	    dmoved.type === 'dir' &&
	        (await sbx.files.exists('/data/renamed/deep')) === true,
	    dmoved);
	const rnf = await threw(() => sbx.files.rename('/data/none', '/data/x'));
	check('files.rename of a missing file is FileNotFoundError',
	    rnf && rnf.name === 'FileNotFoundError', rnf && [rnf.name, rnf.message]);
	const rout = await threw(() =>
	    sbx.files.rename('/data/old.txt', '/data/../../../etc/x'));
	check('files.rename out of the workspace is InvalidArgumentError',
	    rout && rout.name === 'InvalidArgumentError',
	    rout && [rout.name, rout.message]);
	const rroot = await threw(() => sbx.files.rename('/', '/data/root'));
	check('files.rename of the workspace root is InvalidArgumentError',
	    rroot && rroot.name === 'InvalidArgumentError',
	    rroot && [rroot.name, rroot.message]);
	const nf = await threw(() => sbx.files.read('/data/none'));
	check('reading a missing file is FileNotFoundError',
	    nf && nf.name === 'FileNotFoundError', nf && nf.message);

	// Sandbox.connect: a new token of the sandbox, the same default
	// context (it is the principal's).
	const again = await Sandbox.connect(sbx.sandboxId);
	ex = await again.runCode('x');
	check('Sandbox.connect, then runCode sees the state', ex.text === '42',
	    ex.toJSON());
	check('its token is a new one',
	    again.envdAccessToken && again.envdAccessToken !== sbx.envdAccessToken);

	// Sandbox.list: a paginator over the principal's sandboxes, filtered
	// by metadata, state and template.
	const listAll = async (opts) => {
		const pg = Sandbox.list(opts);
		const all = [];
		let pages = 0;
		while (pg.hasNext && pages++ < 50)
			all.push(...await pg.nextItems());
		return { all, pages };
	};
	let found = await listAll({ query: { metadata: { owner: 'tests' } } });
	const mine = found.all.find((s) => s.sandboxId === sbx.sandboxId);
	check('Sandbox.list finds the sandbox by its metadata',
	    mine && mine.state === 'running' && mine.metadata.owner === 'tests' &&
	        mine.templateId === 'machine' && mine.startedAt instanceof Date,
	    found.all);
	found = await listAll({ query: { metadata: { owner: 'no one' } } });
	check('Sandbox.list: metadata no sandbox has finds none',
	    found.all.length === 0, found.all);
	found = await listAll({ query: { state: ['paused'] } });
	check('Sandbox.list: no sandbox of keep is paused',
	    found.all.length === 0, found.all);
	found = await listAll({ query: { template: 'code-interpreter-v1' } });
	check("Sandbox.list: E2B's template name finds it",
	    found.all.some((s) => s.sandboxId === sbx.sandboxId), found.all);
	const extra = await Sandbox.create({ metadata: { owner: 'tests' } });
	found = await listAll({ limit: 1, query: { metadata: { owner: 'tests' } } });
	check('Sandbox.list pages: limit 1 takes a page per sandbox',
	    found.pages >= 2 && found.all.some((s) => s.sandboxId === sbx.sandboxId) &&
	        found.all.some((s) => s.sandboxId === extra.sandboxId), found);
	await extra.kill();
	found = await listAll({ apiKey: process.env.KEEP_OTHER_KEY });
	check("Sandbox.list: another principal's list does not hold it",
	    !found.all.some((s) => s.sandboxId === sbx.sandboxId), found.all);
	const badOrder = await threw(() => Sandbox.list({ order: 'asc' }).nextItems());
	check('Sandbox.list: order is refused, said so',
	    badOrder && /not served/.test(badOrder.message),
	    badOrder && badOrder.message);

	// Another principal's key: its own sandboxes only.
	const other = await threw(() => Sandbox.connect(sbx.sandboxId,
	    { apiKey: process.env.KEEP_OTHER_KEY }));
	check("another principal cannot connect to the sandbox",
	    other && other.name === 'SandboxNotFoundError', other && other.message);
	const stranger = new Sandbox({ sandboxId: sbx.sandboxId,
		envdAccessToken: process.env.KEEP_OTHER_KEY,
		trafficAccessToken: process.env.KEEP_OTHER_KEY,
		envdVersion: '0.5.2' });
	const peek = await threw(() => stranger.runCode('x'));
	check("nor run a cell in it with its own key",
	    peek && peek.name === 'NotFoundError', peek && peek.message);
	const ls = await threw(() => stranger.files.list('/'));
	check("nor list its files",
	    ls && ls.name === 'FileNotFoundError', ls && ls.message);

	check('sandbox.kill() is true', (await sbx.kill()) === true);
	check('then isRunning() is false', (await sbx.isRunning()) === false);
	check('Sandbox.kill of a killed sandbox is false',
	    (await Sandbox.kill(sbx.sandboxId)) === false);
}

// The js template: Duktape's contexts, the default one and others.
async function javascript() {
	const sbj = await Sandbox.create('js');
	await sbj.runCode('var n = 20;', { language: 'js' });
	let ex = await sbj.runCode('n + 1', { language: 'js' });
	check("runCode(..., {language: 'js'}) keeps state in js's default context",
	    ex.text === '21', ex.toJSON());
	const js = await sbj.createCodeContext({ language: 'js' });
	await sbj.runCode('var m = 2;', { context: js });
	ex = await sbj.runCode('m * 21', { context: js });
	check('a js context made by createCodeContext runs its cells as js',
	    ex.text === '42' && js.language === 'js', [ex.toJSON(), js]);
	ex = await sbj.runCode('throw new TypeError("no")', { language: 'js' });
	check('a js error', ex.error && ex.error.name === 'TypeError', ex.toJSON());
	await sbj.kill();
}

async function commands() {
	const sh = await Sandbox.create('base');
	const r = await sh.commands.run('echo hi; echo err >&2; pwd');
	check('commands.run in the base (machine) template, in /home/user',
	    r.exitCode === 0 && r.stdout === 'hi\n/home/user\n' &&
	        r.stderr === 'err\n', r);
	const chunks = [];
	await sh.commands.run('for i in 1 2 3; do echo $i; done',
	    { onStdout: (d) => chunks.push(d) });
	check('commands.run onStdout', chunks.join('') === '1\n2\n3\n', chunks);
	const times = [];
	await sh.commands.run('echo a; sleep 1; echo b',
	    { onStdout: (d) => times.push([Date.now(), d]) });
	check('commands.run streams its output as it comes (onStdout before the end)',
	    times.length === 2 && times[1][0] - times[0][0] >= 500 &&
	        times[0][1] === 'a\n' && times[1][1] === 'b\n',
	    times);
	// The start event comes when the command starts, not with its
	// first output: this command is silent until a file appears, which
	// the test writes only once the SDK has handed it the command's
	// handle (which waits for the start event).
	await sh.files.makeDir('/w/gate');
	const h = await sh.commands.run(
	    'for i in $(seq 200); do [ -e /w/gate/go ] && break; sleep 0.1; ' +
	    'done; [ -e /w/gate/go ] && echo went || echo "no go"',
	    { background: true, timeoutMs: 60000 });
	await sh.files.write('/w/gate/go', '1');
	const went = await h.wait();
	check('a silent command gets its start event (its handle, its pid) before its output',
	    went.stdout === 'went\n' && h.pid > 0, [went, h.pid]);
	// A background command is listed, and killed by its pid.
	const bg = await sh.commands.run('sleep 60', { background: true });
	const listed = await sh.commands.list();
	check('commands.list lists a running command by its pid',
	    bg.pid > 0 && listed.some((p) => p.pid === bg.pid && p.cmd === 'bash'),
	    [bg.pid, listed]);
	check('commands.kill(pid) is true for a running command',
	    (await sh.commands.kill(bg.pid)) === true);
	const ended = await threw(() => bg.wait());
	check('the killed command ends (CommandExitError, not a wait of 60 s)',
	    ended && ended.name === 'CommandExitError', ended && ended.message);
	check('then commands.list does not hold it',
	    !(await sh.commands.list()).some((p) => p.pid === bg.pid));
	check('and commands.kill of its pid is false',
	    (await sh.commands.kill(bg.pid)) === false);
	const e = await threw(() => sh.commands.run('echo no >&2; exit 3'));
	check('a non-zero exit is CommandExitError with its code',
	    e && e.name === 'CommandExitError' && e.exitCode === 3 &&
	        e.stderr === 'no\n',
	    e && { name: e.name, exitCode: e.exitCode });
	const env = await sh.commands.run('echo $GREETING',
	    { envs: { GREETING: 'hello' } });
	check('commands.run envs', env.stdout === 'hello\n', env);
	await sh.files.write('/w/f.txt', 'file');
	const cat = await sh.commands.run('cat /w/f.txt');
	check('a command reads what files.write wrote', cat.stdout === 'file', cat);
	const pwd = await sh.commands.run('pwd; cat f.txt', { cwd: '/w' });
	check('commands.run with a cwd starts there',
	    pwd.stdout === '/w\nfile', pwd);
	const nocwd = await threw(() => sh.commands.run('ls', { cwd: '/nowhere' }));
	check('a cwd the workspace does not have is NotFoundError, as ENOENT',
	    nocwd && nocwd.name === 'NotFoundError' && /cwd/.test(nocwd.message),
	    nocwd && [nocwd.name, nocwd.message]);
	const t = await threw(() => sh.commands.run('sleep 5', { timeoutMs: 1000 }));
	check('a command past its timeout is stopped',
	    t !== null, t && t.message);
	await pty(sh);
	await watch(sh);
	await sh.kill();
	await stdin();
}

// E2B's layout: commands and cells start in /home/user, HOME is it,
// relative paths are its; the workspace's / keeps keep's meaning.
async function layout() {
	const m = await Sandbox.create();
	const w = await m.files.write('a.txt', 'written\n');
	check('files.write of a relative path writes under /home/user',
	    w.path === '/home/user/a.txt', w);
	const r = await m.commands.run('pwd; echo $HOME; cat a.txt');
	check("commands.run starts in /home/user, HOME is it, reads 'a.txt'",
	    r.stdout === '/home/user\n/home/user\nwritten\n', r);
	check('files.read of the absolute path reads it',
	    (await m.files.read('/home/user/a.txt')) === 'written\n');
	check('files.list of a relative path lists /home/user',
	    (await m.files.list('.')).some((e) => e.name === 'a.txt' &&
	        e.path === '/home/user/a.txt'));
	const sub = await m.commands.run('pwd', { cwd: 'sub' }).catch((e) => e);
	check('a relative cwd is /home/user\'s (missing: NotFoundError)',
	    sub && sub.name === 'NotFoundError', sub && sub.name);
	await m.files.makeDir('sub');
	const sub2 = await m.commands.run('pwd', { cwd: 'sub' });
	check('a relative cwd that is there', sub2.stdout === '/home/user/sub\n',
	    sub2);
	const own = await m.commands.run('echo $HOME', { envs: { HOME: '/w' } });
	check("the SDK's envs set HOME over E2B's", own.stdout === '/w\n', own);
	let ex = await m.runCode('import os\n(os.getcwd(), os.environ["HOME"], ' +
	    'open("a.txt").read())');
	check("runCode's cwd and HOME are /home/user",
	    ex.text === "('/home/user', '/home/user', 'written\\n')", ex.toJSON());
	ex = await m.runCode('import shutil, zipfile\n' +
	    'sorted(zipfile.ZipFile(shutil.make_archive("/tmp/x", "zip", ".")).namelist())');
	check("make_archive of '.' holds the user's files only (no proc/, dev/, tmp/)",
	    ex.text !== undefined && ex.text.includes("'a.txt'") &&
	        !/'(proc|dev|tmp|home|usr)\//.test(ex.text),
	    ex.toJSON());
	ex = await m.runCode('import matplotlib.pyplot as plt\n' +
	    'import matplotlib\nmatplotlib.get_cachedir()');
	check("matplotlib's cache is the image's, not the user's home",
	    ex.text === "'/.cache/matplotlib'", ex.toJSON());
	await m.kill();
}

// runCode in bash and js in the machine image: each cell a command
// (bash -c, node), in /home/user; nothing but files lives between two.
async function cells() {
	const m = await Sandbox.create();
	const outs = [];
	let ex = await m.runCode('echo hi; echo err >&2; pwd; echo $HOME',
	    { language: 'bash', onStdout: (o) => outs.push(o.line) });
	check("runCode(..., {language: 'bash'}): its output as the cell's logs",
	    ex.logs.stdout.join('') === 'hi\n/home/user\n/home/user\n' &&
	        ex.logs.stderr.join('') === 'err\n' && ex.error === undefined &&
	        outs.join('') === ex.logs.stdout.join(''),
	    [ex.toJSON(), outs]);
	ex = await m.runCode('echo partial; exit 3', { language: 'bash' });
	check("a bash cell's exit status is its error, as E2B's bash kernel's",
	    ex.error && ex.error.name === '' && ex.error.value === '3' &&
	        ex.logs.stdout.join('') === 'partial\n',
	    ex.toJSON());
	await m.runCode('X=1; echo x > kept.txt', { language: 'bash' });
	ex = await m.runCode('echo "${X:-unset}"; cat kept.txt',
	    { language: 'bash' });
	check('between bash cells the files live on, the variables do not',
	    ex.logs.stdout.join('') === 'unset\nx\n', ex.toJSON());
	ex = await m.runCode('console.log("a"); process.cwd() + " " + 6 * 7',
	    { language: 'js' });
	check("runCode(..., {language: 'js'}) in the machine image: node, its " +
	    'last value the result',
	    ex.logs.stdout.join('') === 'a\n' &&
	        ex.text === "'/home/user 42'" && ex.error === undefined,
	    ex.toJSON());
	ex = await m.runCode('throw new TypeError("no")',
	    { language: 'javascript' });
	check('a js error: its name, message and stack',
	    ex.error && ex.error.name === 'TypeError' && ex.error.value === 'no' &&
	        ex.error.traceback.includes('<cell>'),
	    ex.toJSON());
	ex = await m.runCode('process.exit(4)', { language: 'js' });
	check('a js cell that exits: an error with its status',
	    ex.error && ex.error.value === '4', ex.toJSON());
	await m.kill();
}

// betaPause and Sandbox.connect: keep's pause (contexts to their memory
// images, commands ended) and resume.
async function pause() {
	const p = await Sandbox.create({ metadata: { owner: 'pause-test' } });
	await p.runCode('x = 41');
	await p.files.write('kept.txt', 'kept');
	const bg = await p.commands.run('sleep 60', { background: true });
	check('betaPause() is true', (await p.betaPause()) === true);
	const info = await p.getInfo();
	check("getInfo says paused", info.state === 'paused', info);
	check('isRunning() is false while paused', (await p.isRunning()) === false);
	check('a second pause is false, as E2B answers it (409)',
	    (await Sandbox.pause(p.sandboxId)) === false);
	const ended = await threw(() => bg.wait());
	check('a pause ends the sandbox\'s commands (CommandExitError)',
	    ended && ended.name === 'CommandExitError', ended && ended.message);
	const listAll = async (opts) => {
		const pg = Sandbox.list(opts);
		const all = [];
		for (let i = 0; pg.hasNext && i < 50; i++)
			all.push(...await pg.nextItems());
		return all;
	};
	let l = await listAll({ query: { state: ['paused'],
		metadata: { owner: 'pause-test' } } });
	check("Sandbox.list({query: {state: ['paused']}}) lists it, paused",
	    l.length === 1 && l[0].sandboxId === p.sandboxId &&
	        l[0].state === 'paused', l);
	l = await listAll({ query: { state: ['running'],
		metadata: { owner: 'pause-test' } } });
	check('and the running ones do not hold it', l.length === 0, l);
	const c = await Sandbox.connect(p.sandboxId);
	check('Sandbox.connect resumes it: running',
	    (await c.getInfo()).state === 'running' && (await c.isRunning()));
	const ex = await c.runCode('x + 1');
	check("its default context comes back with its variables: x + 1 is 42",
	    ex.text === '42', ex.toJSON());
	check('and its files',
	    (await c.commands.run('cat kept.txt')).stdout === 'kept');
	await c.kill();
}

// setTimeout moves a sandbox's end, later or sooner; the SDK's token
// outlives the first end (E2B's SDK keeps it for the sandbox's life).
async function timeouts() {
	const s = await Sandbox.create('base', { timeoutMs: 4000 });
	const first = (await s.getInfo()).endAt;
	await s.setTimeout(120_000);
	const later = (await s.getInfo()).endAt;
	check('setTimeout(120 s) moves the end to 120 s from now',
	    later - Date.now() > 110_000 && later - Date.now() <= 121_000 &&
	        later > first, [first, later]);
	await new Promise((r) => setTimeout(r, 5000));
	const alive = await s.commands.run('echo alive');
	check('past its first end, the sandbox and the SDK\'s token still work',
	    alive.stdout === 'alive\n', alive);
	const c = await Sandbox.connect(s.sandboxId, { timeoutMs: 90_000 });
	const viaConnect = (await c.getInfo()).endAt;
	check('Sandbox.connect with timeoutMs moves the end to that long from now',
	    viaConnect - Date.now() > 80_000 && viaConnect - Date.now() <= 91_000,
	    viaConnect);
	await s.setTimeout(1000);
	await new Promise((r) => setTimeout(r, 2500));
	check('setTimeout(1 s) ends it sooner: not running after',
	    (await s.isRunning()) === false);
	const gone = await threw(() => Sandbox.setTimeout(s.sandboxId, 60_000));
	check('setTimeout of a sandbox that ended is SandboxNotFoundError',
	    gone && /NotFound/.test(gone.name), gone && gone.name);
	const bad = await threw(() => Sandbox.setTimeout('sbx-nosuchsandboxhere0', 0));
	check('setTimeout(0) or of no sandbox is an error', bad !== null,
	    bad && bad.name);
}

// files.watchDir: envd's WatchDir stream over keep's files/watch.
async function watch(sh) {
	const until = async (f) => {
		for (let i = 0; i < 100 && !f(); i++)
			await new Promise((r) => setTimeout(r, 100));
		return f();
	};
	await sh.files.makeDir('/w/watched/sub');
	const flat = [], deep = [];
	const w1 = await sh.files.watchDir('/w/watched', (e) => flat.push(e));
	const w2 = await sh.files.watchDir('/w/watched', (e) => deep.push(e),
	    { recursive: true });
	const named = (l, n, t) => l.some((e) => e.name === n && e.type === t);
	// keep tells one event per path within 100 ms: the removal waits
	// for the creation to be told.
	await sh.files.write('/w/watched/a.txt', 'x');
	check('watchDir: a file written through the SDK is told (create)',
	    await until(() => named(flat, 'a.txt', 'create')), flat);
	await sh.commands.run('echo y > /w/watched/sub/deep.txt; rm /w/watched/a.txt');
	check('watchDir: a file the guest removes is told (remove)',
	    await until(() => named(flat, 'a.txt', 'remove')), flat);
	check('watchDir recursive: a nested file, by its relative name',
	    await until(() => named(deep, 'sub/deep.txt', 'create')), deep);
	check('watchDir without recursive leaves nested ones out',
	    !flat.some((e) => e.name.includes('/')), flat);
	await w1.stop();
	await w2.stop();
	const missing = await threw(() => sh.files.watchDir('/w/none', () => {}));
	check('watchDir of a missing directory is FileNotFoundError, as envd\'s',
	    missing && missing.name === 'FileNotFoundError',
	    missing && [missing.name, missing.message]);
}

// A terminal: pty.create, its output by onData, sendInput, resize, kill.
async function pty(sh) {
	const dec = new TextDecoder();
	let screen = '';
	const term = await sh.pty.create({ cols: 80, rows: 24,
		onData: (d) => { screen += dec.decode(d); } });
	check('pty.create gives a handle with a pid', term.pid > 0, term.pid);
	const until = async (re) => {
		for (let i = 0; i < 100 && !re.test(screen); i++)
			await new Promise((r) => setTimeout(r, 100));
		return re.test(screen);
	};
	const enc = new TextEncoder();
	await sh.pty.sendInput(term.pid, enc.encode('echo $((6*7))-pty\r'));
	check('pty.sendInput reaches the shell, its output comes by onData',
	    await until(/42-pty/), screen);
	await sh.pty.resize(term.pid, { cols: 100, rows: 30 });
	await sh.pty.sendInput(term.pid, enc.encode('stty size\r'));
	check('pty.resize is what the shell reads as its size',
	    await until(/30 100/), screen);
	// Another principal, even one its policy lets use a terminal, does
	// not reach this pty by the sandbox's id and the pid.
	const other = await fetch(process.env.E2B_SANDBOX_URL +
	    '/process.Process/SendInput', {
		method: 'POST',
		headers: { 'Content-Type': 'application/json',
			'X-Access-Token': process.env.KEEP_OTHER_KEY,
			'E2b-Sandbox-Id': sh.sandboxId },
		body: JSON.stringify({ process: { pid: term.pid },
			input: { pty: Buffer.from('echo other\r').toString('base64') } }),
	});
	check("another principal's SendInput to the pty is not_found",
	    other.status === 404, other.status);
	const none = await threw(() => sh.pty.sendInput(999999, enc.encode('x')));
	check('sendInput to a pid that is no pty is NotFoundError',
	    none && none.name === 'NotFoundError', none && [none.name, none.message]);
	check('pty.kill(pid) is true', (await sh.pty.kill(term.pid)) === true);
	const ended = await threw(() => term.wait());
	check('the killed pty ends (CommandExitError)',
	    ended && ended.name === 'CommandExitError', ended && ended.message);
	const gone = await threw(() => sh.pty.sendInput(term.pid, enc.encode('x')));
	check('then sendInput to it is NotFoundError',
	    gone && gone.name === 'NotFoundError', gone && gone.name);
}

// A command's stdin stream: stdin: true, sendStdin, closeStdin (envd
// 0.5.2's). The shell image has bash and cat.
async function stdin() {
	const sh = await Sandbox.create('shell');
	const outs = [];
	const h = await sh.commands.run(
	    '[ -t 0 ] && echo tty || echo pipe; cat; echo end',
	    { background: true, stdin: true, onStdout: (d) => outs.push(d) });
	await h.sendStdin('hello ');
	await sh.commands.sendStdin(h.pid, new TextEncoder().encode('world\n'));
	// Another principal, allowed exec in the same sandbox's routes,
	// does not reach this command's stdin by the sandbox and the pid.
	const other = await fetch(process.env.E2B_SANDBOX_URL +
	    '/process.Process/SendInput', {
		method: 'POST',
		headers: { 'Content-Type': 'application/json',
			'X-Access-Token': process.env.KEEP_OTHER_KEY,
			'E2b-Sandbox-Id': sh.sandboxId },
		body: JSON.stringify({ process: { pid: h.pid },
			input: { stdin: Buffer.from('intruder\n').toString('base64') } }),
	});
	const otherBody = await other.json();
	check("another principal's SendInput to the command's stdin is not_found",
	    other.status === 404 && otherBody.code === 'not_found',
	    [other.status, otherBody]);
	await h.closeStdin();
	const r = await h.wait();
	check('sendStdin reaches the command (a pipe, not a tty), closeStdin ends its input',
	    r.exitCode === 0 && r.stdout === 'pipe\nhello world\nend\n' &&
	        outs.join('') === r.stdout,
	    [r, outs]);
	const after = await threw(() => sh.commands.sendStdin(h.pid, 'x'));
	check('sendStdin after the command ended is NotFoundError',
	    after && after.name === 'NotFoundError', after && [after.name, after.message]);
	// Without stdin: true the command's stdin is empty, and input to it
	// is refused as envd refuses it (failed_precondition).
	const empty = await sh.commands.run('cat; echo done', { timeoutMs: 20000 });
	check('without stdin: true a command reads an empty stdin',
	    empty.stdout === 'done\n', empty);
	const bg = await sh.commands.run('sleep 30', { background: true });
	const no = await threw(() => sh.commands.sendStdin(bg.pid, 'x'));
	check('sendStdin to a command started without stdin: true is refused',
	    no && /stdin not enabled or closed/.test(no.message),
	    no && [no.name, no.message]);
	const noClose = await threw(() => sh.commands.closeStdin(bg.pid));
	check('and so is closeStdin',
	    noClose && /stdin not enabled or closed/.test(noClose.message),
	    noClose && [noClose.name, noClose.message]);
	await sh.commands.kill(bg.pid);
	// After closeStdin, while the command still runs (it waits for a
	// file the test writes after), more input and a second close are
	// refused as envd refuses them.
	const c2 = await sh.commands.run(
	    'cat; while [ ! -e /gate2 ]; do sleep 0.1; done',
	    { background: true, stdin: true });
	await sh.commands.sendStdin(c2.pid, 'once');
	await sh.commands.closeStdin(c2.pid);
	const again = await threw(() => sh.commands.closeStdin(c2.pid));
	const late = await threw(() => sh.commands.sendStdin(c2.pid, 'x'));
	await sh.files.write('/gate2', '1');
	const r2 = await c2.wait();
	check('input or a close after closeStdin is refused; the command read EOF',
	    r2.stdout === 'once' &&
	        again && /stdin not enabled or closed/.test(again.message) &&
	        late && /stdin not enabled or closed/.test(late.message),
	    [r2, again && again.message, late && late.message]);
	// commands.connect: a second reader of a running command's stream
	// gets its output from then on, and its end.
	const first = await sh.commands.run('cat; echo bye',
	    { background: true, stdin: true });
	const seen = [];
	const second = await sh.commands.connect(first.pid,
	    { onStdout: (d) => seen.push(d) });
	// Another principal does not attach to it by the sandbox and pid:
	// Connect's stream ends in not_found (one envelope, flags 2).
	const msg = Buffer.from(JSON.stringify({ process: { pid: first.pid } }));
	const env = Buffer.concat([Buffer.from([0, 0, 0, 0, 0]), msg]);
	env.writeUInt32BE(msg.length, 1);
	const peer = await fetch(process.env.E2B_SANDBOX_URL +
	    '/process.Process/Connect', {
		method: 'POST',
		headers: { 'Content-Type': 'application/connect+json',
			'X-Access-Token': process.env.KEEP_OTHER_KEY,
			'E2b-Sandbox-Id': sh.sandboxId },
		body: env,
	});
	const peerBody = Buffer.from(await peer.arrayBuffer());
	check("another principal's commands.connect to the command is not_found",
	    peerBody[0] === 2 &&
	        /"not_found"/.test(peerBody.subarray(5).toString()),
	    peerBody.toString());
	await sh.commands.sendStdin(first.pid, 'after\n');
	await sh.commands.closeStdin(first.pid);
	const [a1, a2] = await Promise.all([first.wait(), second.wait()]);
	check('commands.connect to a running command: its output from then on, and its end',
	    second.pid === first.pid && a2.exitCode === 0 &&
	        a2.stdout === 'after\nbye\n' && a1.stdout === a2.stdout &&
	        seen.join('') === a2.stdout,
	    [a1, a2, seen]);
	const nc = await threw(() => sh.commands.connect(999999));
	check('commands.connect to a pid that is no running command is NotFoundError',
	    nc && nc.name === 'NotFoundError', nc && [nc.name, nc.message]);
	const ended = await threw(() => sh.commands.connect(first.pid));
	check('nor to one that has ended',
	    ended && ended.name === 'NotFoundError', ended && [ended.name, ended.message]);
	await sh.kill();
}

// A server in the sandbox reached by getHost, as an E2B user reaches
// one: `${port}-${id}.${domain}` with the sandbox's traffic token. The
// name resolves nowhere on this machine, so the request goes to keepd's
// own loopback address and port (E2B_SANDBOX_URL's) with the name as its
// Host header: no traffic leaves loopback.
function viaHost(host, path, headers) {
	const keepd = new URL(process.env.E2B_SANDBOX_URL);
	return new Promise((resolve, reject) => {
		const req = http.request({ host: '127.0.0.1', port: keepd.port,
			path, headers: { ...headers, Host: host } }, (res) => {
			const chunks = [];
			res.on('data', (c) => chunks.push(c));
			res.on('end', () => resolve({ status: res.statusCode,
				body: Buffer.concat(chunks).toString() }));
			res.on('error', reject);
		});
		req.setTimeout(30000, () => req.destroy(new Error('no answer')));
		req.on('error', reject);
		req.end();
	});
}

async function ports() {
	// E2B's own way to ask for a port that needs the traffic token.
	const sbx = await Sandbox.create('base',
	    { network: { allowPublicTraffic: false } });
	const host = sbx.getHost(8000);
	check('getHost(8000) is 8000-{id}.{ports.domain in keepd.yaml}',
	    host === `8000-${sbx.sandboxId}.${process.env.KEEP_PORTS_DOMAIN}`,
	    host);
	const page = `served from ${sbx.sandboxId}\n`;
	await sbx.files.write('site/hello.txt', page);
	const server = await sbx.commands.run(
	    'python3 -m http.server 8000 --bind 127.0.0.1 --directory site',
	    { background: true });
	const token = { 'E2B-Traffic-Access-Token': sbx.trafficAccessToken };
	// Until the server listens keep answers 502 (nothing on the port).
	let r = null;
	for (let i = 0; i < 300; i++) {
		r = await viaHost(host, '/hello.txt', token);
		if (r.status !== 502)
			break;
		await new Promise((res) => setTimeout(res, 200));
	}
	check("a file files.write wrote, fetched from the sandbox's http.server " +
	    'through getHost(8000) with E2B-Traffic-Access-Token',
	    r.status === 200 && r.body === page, r);
	r = await viaHost(host, '/hello.txt',
	    { Authorization: `Bearer ${sbx.trafficAccessToken}` });
	check('the same with the token as Authorization: Bearer',
	    r.status === 200 && r.body === page, r);
	r = await viaHost(host, '/', token);
	check("the server's directory listing names the file",
	    r.status === 200 && r.body.includes('hello.txt'), r.status);
	r = await viaHost(host, '/hello.txt', {});
	check('without a token the port is refused (401)', r.status === 401, r);
	r = await viaHost(host, '/hello.txt',
	    { 'E2B-Traffic-Access-Token': process.env.KEEP_OTHER_KEY });
	check("another principal's token, allowed port 8000 of its own " +
	    'sandboxes, does not reach this one (404)',
	    r.status === 404, r);
	r = await viaHost(sbx.getHost(8001), '/hello.txt', token);
	check('getHost(8001), a port the policy does not expose: 403',
	    r.status === 403 && /Port 8001 is not exposed/.test(r.body), r);
	check('commands.kill ends the server', (await server.kill()) === true);
	for (let i = 0; i < 300; i++) {
		r = await viaHost(host, '/hello.txt', token);
		if (r.status !== 200)
			break;
		await new Promise((res) => setTimeout(res, 200));
	}
	check('then nothing listens on the port: 502, as E2B\'s proxy answers',
	    r.status === 502, r);
	await sbx.kill();
}

// The key's principal may not run bash (the policy's exec allowlist).
async function denied() {
	const sh = await Sandbox.create('base');
	const e = await threw(() => sh.commands.run('echo hi'));
	check('commands.run of a program the policy does not allow is refused',
	    e && /permission_denied/.test(e.message) && /bash/.test(e.message),
	    e && e.message);
	const c = await threw(() => sh.runCode('echo hi', { language: 'bash' }));
	check('so is a bash cell (exec of bash): 403',
	    c && /403/.test(c.message), c && [c.name, c.message]);
	await sh.kill();
}

(async () => {
	const which = process.argv[2] || 'all';
	try {
		if (which === 'all' || which === 'code') await codeInterpreter();
		if (which === 'all' || which === 'code') await javascript();
		if (which === 'all' || which === 'commands') await commands();
		if (which === 'all' || which === 'commands') await timeouts();
		if (which === 'all' || which === 'machine') await layout();
		if (which === 'all' || which === 'machine') await cells();
		if (which === 'all' || which === 'machine') await pause();
		if (which === 'all' || which === 'ports') await ports();
		if (which === 'denied') await denied();
	} catch (e) {
		fails++;
		console.log(`FAIL: unexpected ${e && e.name}: ${e && e.message}`);
		console.log(e && e.stack);
	}
	console.log(`sdk: ${fails} failures`);
	process.exit(fails ? 1 : 0);
})();
