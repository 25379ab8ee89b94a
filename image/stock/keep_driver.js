// keep's live-context driver for the js image (docs/contexts.md): the
// vmm starts `js -e <this file>`; each cell comes from __keep_cell() and
// runs by indirect eval in the global scope, so its var and function
// declarations stay for the next cell. Output, the value of the cell's
// last expression, errors and the end line go back as JSON lines on
// descriptor 1. Duktape has no environment: a cell's env_vars are
// available to it as the global object `env_vars`.
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
	global.print = writer('stdout');
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
		try {
			var value = (0, eval)(cell.code);
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
		send({ type: 'number_of_executions', execution_count: count });
		__keep_write(1, '{"type":"end","nonce":"' + cell.nonce + '"}\n');
	}
})();
