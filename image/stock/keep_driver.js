// keep's live-context driver for the js image (docs/contexts.md): the
// vmm starts `js -e <this file>`; each cell comes from __keep_cell() and
// runs by indirect eval in the global scope (in node, as a script in
// the global context), so its declarations stay for the next cell. Output, the value of the cell's
// last expression, errors and the end line go back as JSON lines on
// descriptor 1. Duktape has no environment: a cell's env_vars are
// available to it as the global object `env_vars`.
//
// In the node image `js` is node, which has neither function: they are
// made here from its fs module, reading the same frames as the Duktape
// image's main (image/stock/js_main.c): "KEEPCELL", an 8-byte nonce,
// the code's length and the number of variables (32 bits, little
// endian), the code, then each "NAME=VALUE" after its length. There a
// cell's env_vars are also in process.env for the cell.
(function () {
	if (typeof __keep_cell !== 'undefined' || typeof require !== 'function')
		return;
	var fs = require('fs');
	var global = (0, eval)('this');

	function readExact(n) {
		var b = Buffer.alloc(n), got = 0, r;
		while (got < n) {
			try {
				r = fs.readSync(0, b, got, n - got, null);
			} catch (e) {
				if (e.code !== 'EAGAIN')
					throw e;
				// A cell made stdin non-blocking: wait a little.
				Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 5);
				continue;
			}
			if (r === 0)
				return null;
			got += r;
		}
		return b;
	}
	function bad() {
		throw new Error('keep: bad cell frame');
	}
	global.__keep_cell = function () {
		var h = readExact(24), len, nenv, cell, i, l, kv, eq;
		if (h === null)
			return null;
		if (h.toString('latin1', 0, 8) !== 'KEEPCELL')
			bad();
		len = h.readUInt32LE(16);
		nenv = h.readUInt32LE(20);
		if (len > 16777216 || nenv > 4096)
			bad();
		cell = { nonce: h.toString('hex', 8, 16), code: '', env: {} };
		cell.code = len > 0 ? (readExact(len) || bad()).toString('utf8') : '';
		for (i = 0; i < nenv; i++) {
			l = (readExact(4) || bad()).readUInt32LE(0);
			if (l > 16777216)
				bad();
			kv = l > 0 ? (readExact(l) || bad()).toString('utf8') : '';
			eq = kv.indexOf('=');
			if (eq > 0)
				cell.env[kv.slice(0, eq)] = kv.slice(eq + 1);
		}
		return cell;
	};
	global.__keep_write = function (fd, text) {
		var b = Buffer.from(String(text), 'utf8'), off = 0;
		if (fd !== 1 && fd !== 2)
			throw new RangeError('fd must be 1 or 2');
		while (off < b.length)
			off += fs.writeSync(fd, b, off, b.length - off);
	};
})();
(function () {
	var TEXT_MAX = 65536;
	var global = (0, eval)('this');
	var count = 0;

	function send(o) {
		__keep_write(1, JSON.stringify(o) + '\n');
	}
	function clip(s) {
		return s.length <= TEXT_MAX ? s : s.slice(0, TEXT_MAX) + '\n[truncated]';
	}
	function text(v) {
		if (typeof v === 'string')
			return v;
		if (v !== null && typeof v === 'object' && !(v instanceof Error)) {
			try {
				var j = JSON.stringify(v);
				if (j !== undefined)
					return j;
			} catch (e) {
			}
		}
		return String(v);
	}
	function writer(kind) {
		return function () {
			var parts = [];
			for (var i = 0; i < arguments.length; i++)
				parts.push(text(arguments[i]));
			send({ type: kind, text: parts.join(' ') + '\n' });
		};
	}
	// node: the cell's variables in process.env, and back after it
	// (the previous values, or undefined to delete); Duktape: nothing.
	function withEnv(vars) {
		var old = {}, k;
		if (typeof process === 'undefined' || !process.env)
			return old;
		for (k in vars) {
			old[k] = process.env[k];
			if (vars[k] === undefined)
				delete process.env[k];
			else
				process.env[k] = vars[k];
		}
		return old;
	}
	// node runs a cell as a script in the global context, as its REPL
	// does, so its let, const and class declarations stay too; indirect
	// eval keeps only var and function ones.
	var run = typeof require === 'function' ? require('vm').runInThisContext
		: function (code) { return (0, eval)(code); };
	global.print = writer('stdout');
	if (typeof process !== 'undefined' && process.stdout) {
		// node: its console (and a cell's own writes) go through
		// process.stdout and stderr, which become JSON lines too.
		var streamWriter = function (kind) {
			return function (chunk, enc, cb) {
				send({ type: kind, text: typeof chunk === 'string' ? chunk
					: Buffer.from(chunk).toString('utf8') });
				if (typeof enc === 'function')
					enc();
				else if (typeof cb === 'function')
					cb();
				return true;
			};
		};
		process.stdout.write = streamWriter('stdout');
		process.stderr.write = streamWriter('stderr');
	} else
		global.console = {
			log: writer('stdout'),
			info: writer('stdout'),
			debug: writer('stdout'),
			warn: writer('stderr'),
			error: writer('stderr')
		};
	for (;;) {
		var cell = __keep_cell();
		if (cell === null)
			break;
		count++;
		global.env_vars = cell.env;
		var saved = withEnv(cell.env);
		try {
			var value = run(cell.code);
			if (value !== undefined) {
				var r = { type: 'result', text: clip(text(value)), is_main_result: true };
				if (value !== null && typeof value === 'object') {
					try {
						r.json = JSON.parse(JSON.stringify(value));
					} catch (e) {
					}
				}
				send(r);
			}
		} catch (e) {
			send({
				type: 'error',
				name: e && e.name ? String(e.name) : 'Error',
				value: clip(e && e.message !== undefined ? String(e.message) : String(e)),
				traceback: clip(e && e.stack ? String(e.stack) : String(e))
			});
		}
		delete global.env_vars;
		withEnv(saved);
		send({ type: 'number_of_executions', execution_count: count });
		__keep_write(1, '{"type":"end","nonce":"' + cell.nonce + '"}\n');
	}
})();
