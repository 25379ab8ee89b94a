#!/usr/bin/env bash
# The machine image (images/machine.manifest: a whole Debian machine,
# E2B's default template) works as a machine: a shell pipeline, ls, git
# init/add/commit/log in the workspace, bc, jq, sqlite3, python's
# subprocess (from the main thread and from another), pip, venv, numpy,
# pandas, scipy and requests, a venv (its links into the image), links to
# /dev/null and the image's files, node, npm, gcc building and running a C
# program, make, curl, pip building an sdist; the CPU count. Each under keep run beside the same
# command run natively on the same Debian files, compared byte for byte;
# then one through keepd's commands/run, as E2B's SDK runs its commands
# (bash -l -c).
source "$(dirname "$0")/../lib/keepd.sh"
I=$B/images/machine.img; K=$B/keys/dev.public
export LC_ALL=C LANG=C.UTF-8

ws=$tmp/ws; nat=$tmp/native; mkdir "$ws" "$nat"
setup() { # the same files in the guest's workspace and the native one
	mkdir "$1/dir"
	echo one >"$1/dir/a"; echo two >"$1/dir/b"
	echo '{"a": [1, 2, {"b": "x"}], "n": 3.5}' >"$1/j.json"
	printf '#include <stdio.h>\nint main(void) { printf("hello %%d\\n", 6 * 7); return 0; }\n' >"$1/hello.c"
	printf 'all: hello\n\t./hello\n' >"$1/Makefile"
	mkdir "$1/cext"
	printf 'from setuptools import setup, Extension\nsetup(name="cext", version="0.1", ext_modules=[Extension("cext", ["cext.c"])])\n' >"$1/cext/setup.py"
	cat >"$1/cext/cext.c" <<'C'
#include <Python.h>
static PyObject *twice(PyObject *self, PyObject *arg) { return PyLong_FromLong(2 * PyLong_AsLong(arg)); }
static PyMethodDef methods[] = { { "twice", twice, METH_O, NULL }, { NULL } };
static struct PyModuleDef mod = { PyModuleDef_HEAD_INIT, "cext", NULL, -1, methods };
PyMODINIT_FUNC PyInit_cext(void) { return PyModule_Create(&mod); }
C
	# A node package packed into a tarball, for npm to install offline.
	mkdir "$1/npmpkg"
	printf '{"name":"keep-demo","version":"1.0.0","main":"index.js"}\n' >"$1/npmpkg/package.json"
	echo 'module.exports = { v: 6 * 7 };' >"$1/npmpkg/index.js"
	# multiprocessing (POSIX semaphores in /dev/shm, shared memory,
	# pipes) and sqlite's WAL from several processes (shared mappings
	# of the -shm file, fcntl locks).
	cat >"$1/mp.py" <<'PY'
import concurrent.futures, multiprocessing, sqlite3
def square(x): return x * x
def bump(v):
    for _ in range(200):
        with v.get_lock(): v.value += 1
def writer(n):
    c = sqlite3.connect("wal.db", timeout=60)
    for i in range(25):
        c.execute("insert into t values (?)", (n * 100 + i,)); c.commit()
    c.close()
if __name__ == "__main__":
    with multiprocessing.Lock(): print("lock")
    with multiprocessing.Pool(2) as p: print(p.map(square, range(8)))
    with concurrent.futures.ProcessPoolExecutor(2) as ex:
        print(list(ex.map(square, range(5))))
    v = multiprocessing.Value("i", 0)
    ps = [multiprocessing.Process(target=bump, args=(v,)) for _ in range(3)]
    [p.start() for p in ps]; [p.join() for p in ps]; print(v.value)
    q = multiprocessing.Queue()
    p = multiprocessing.Process(target=q.put, args=("via a queue",)); p.start()
    print(q.get()); p.join()
    db = sqlite3.connect("wal.db")
    print(db.execute("pragma journal_mode=wal").fetchone()[0])
    db.execute("create table t(x)"); db.commit()
    ps = [multiprocessing.Process(target=writer, args=(n,)) for n in range(3)]
    [p.start() for p in ps]; [p.join() for p in ps]
    print(db.execute("select count(*), sum(x) from t").fetchone(), [p.exitcode for p in ps])
PY
}
setup "$ws"; setup "$nat"

# NAME, then a bash script run in the workspace: in the guest through
# the image's bash, natively through the host's, with the image's
# environment (no HOME, so git and pip read no user's configuration).
same() {
	local name=$1 script=$2 want got
	want=$(cd "$nat" && env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/nonexistent \
	    LANG=C.UTF-8 bash -c "$script" 2>&1 </dev/null; echo "rc=$?")
	got=$("$KEEP" run --workspace "$ws" --trust "$K" "$I" bash -c "$script" 2>&1 </dev/null; echo "rc=$?")
	if [ "$want" == "$got" ]; then ok "$name"
	else bad "$name: native '$want' guest '$got'"; fi
}

same "a pipeline" 'echo a | tr a b'
same "ls" 'ls dir; ls -l dir | cut -c1-10,30-'
same "git init, add, commit, log" 'git init -q repo && cd repo && echo x >f &&
	git add f && git -c user.name=keep -c user.email=keep@example.org \
	    commit -q -m first && git log --format="%s %an" && git ls-files &&
	git status --porcelain | wc -l'
same "the C.UTF-8 locale: perl starts quietly, ls shows a UTF-8 name, wc -m counts characters" \
    'touch "é.txt" && ls -- *.txt && printf "h\303\251llo" | wc -m && perl -e "print 1+1, qq(\n)" &&
	printf "%s\n" b a B | sort | tr "\n" " "'
same "bc" 'echo "2^100; scale=20; 4*a(1); sqrt(2)" | bc -l'
same "jq" 'jq -c ".a[2], (.n * 2), (.a | length)" j.json'
same "sqlite3 in memory" "sqlite3 :memory: 'create table t(x); insert into t values (1), (2), (40); select sum(x), group_concat(x) from t;'"
same "python's subprocess, from the main thread and another" "python3 -c '
import subprocess, threading
print(subprocess.run([\"echo\", \"sub\"], capture_output=True).stdout)
out = []
t = threading.Thread(target=lambda: out.append(subprocess.run([\"ls\", \"dir\"], capture_output=True, text=True).stdout))
t.start(); t.join(); print(out)
print(subprocess.run(\"echo \$0\", shell=True, capture_output=True, text=True).stdout, end=\"\")'"
same "pip" 'python3 -m pip --version; pip3 --version'
same "numpy, pandas, scipy, requests" "python3 -c '
import numpy, pandas, scipy, scipy.linalg, requests
print(numpy.__version__, pandas.__version__, scipy.__version__, requests.__version__)
print(scipy.linalg.det(numpy.array([[4.0, 2.0], [1.0, 3.0]])))
print(pandas.DataFrame({\"a\": [1, 2, 3]}).a.sum())'"
same "a venv (--copies) with pip" 'python3 -m venv --copies venv &&
	venv/bin/python -c "import sys; print(sys.prefix == sys.base_prefix)" &&
	venv/bin/python -m pip --version | cut -d" " -f1,2'
same "a venv (links into the image, without --copies) with pip" 'python3 -m venv venv2 &&
	venv2/bin/python -c "import sys; print(sys.prefix == sys.base_prefix)" &&
	venv2/bin/python -m pip --version | cut -d" " -f1,2 && readlink venv2/bin/python3 &&
	venv2/bin/pip --version | cut -d" " -f1,2'
same "workspace links to /dev, the image's files and directories" 'ln -s /dev/null n && cat n &&
	echo gone >n && wc -c <n && stat -L -c %F n && ln -s /usr/bin/python3 p && ./p -c "print(6*7)" &&
	ln -s /usr/lib/python3.11 pylib && ls pylib/json/__init__.py && stat -L -c %F pylib &&
	ln -s pylib via && cat via/json/__init__.py | wc -l && test -x p && echo exec'
same "pip builds and installs an sdist with a C extension (gcc, python3-dev)" \
    'python3 -m pip install -q --root-user-action=ignore --no-index --no-build-isolation --target site ./cext &&
	PYTHONPATH=site python3 -c "import cext; print(cext.twice(21))"'
same "pip builds a wheel of a local package and installs the wheel" \
    'python3 -m pip wheel -q --no-index --no-build-isolation --no-deps -w dist ./cext &&
	ls dist && python3 -m pip install -q --root-user-action=ignore --no-index --target site2 dist/cext-0.1-*.whl &&
	PYTHONPATH=site2 python3 -c "import cext; print(cext.twice(4))"'
same "npm packs a local package into a tarball and installs it offline" \
    'cd npmpkg && npm pack --silent --cache ../npmcache >/dev/null && cd .. && mkdir app && cd app &&
	npm install --offline --no-audit --no-fund --silent --cache ../npmcache ../npmpkg/keep-demo-1.0.0.tgz &&
	node -e "console.log(require(\"keep-demo\").v)" && ls node_modules && cat package.json'
same "node" 'node -e "console.log(1, process.version)"'
same "gcc builds and runs a C program" 'gcc -O2 -Wall -o hello hello.c && ./hello'
same "cc and make" 'rm -f hello; make -s CC=cc'
same "curl" 'curl --version | head -1'
same "the CPU count: nproc, os.cpu_count(), the affinity mask, /proc/cpuinfo, /sys's online list" \
    'nproc; python3 -c "import os; print(os.cpu_count(), len(os.sched_getaffinity(0)))";
	grep -c ^processor /proc/cpuinfo; cat /sys/devices/system/cpu/online'
same "/proc/self/status: the signal masks a process set (SigBlk, SigIgn, SigCgt)" "python3 -c '
import signal
def masks():
    return {l.split(\":\")[0]: int(l.split()[1], 16) for l in open(\"/proc/self/status\") if l[:3] == \"Sig\" and l[:4] != \"SigQ\"}
bit = lambda s: 1 << (s - 1)
signal.signal(signal.SIGUSR1, lambda *a: None); signal.signal(signal.SIGTERM, signal.SIG_IGN)
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR2})
m = masks()
print(bool(m[\"SigCgt\"] & bit(10)), bool(m[\"SigIgn\"] & bit(15)), bool(m[\"SigIgn\"] & bit(13)), bool(m[\"SigBlk\"] & bit(12)), bool(m[\"SigCgt\"] & bit(15)))'"
same "/bin/sh is dash, as on Debian" 'sh -c "echo \$((6*7)) \${BASH_VERSION:-not bash}"'
same "multiprocessing: Lock, Pool, ProcessPoolExecutor, Value, Queue; sqlite's WAL from three writer processes" \
    'python3 mp.py'

# npm and npx: node sets process.title, which writes over the span of
# its argument strings (the VMM laid them out in descending order, and
# that span ran to the top of the stack).
want=$(npm --version; npx --version)
got=$("$KEEP" run --workspace "$ws" --trust "$K" "$I" bash -c 'npm --version; npx --version' 2>&1 </dev/null)
[ -n "$want" ] && [ "$got" = "$want" ] && ok "npm --version, npx --version" ||
    bad "npm: native '$want' guest '$got'"
same "node's process.title" 'node -e "process.title = \"a title longer than node\"; console.log(process.argv.length, process.title)" x y'

# A "#!" script as the run's own program, not through a shell: the boot
# follows "#!" as execve does (docs/vmm.md, "Scripts").
own() { # NAME, then the command and its arguments
	local name=$1 want got; shift
	want=$(cd "$nat" && env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/nonexistent \
	    LANG=C.UTF-8 "$@" 2>&1 </dev/null; echo "rc=$?")
	got=$("$KEEP" run --workspace "$ws" --trust "$K" "$I" "$@" 2>&1 </dev/null; echo "rc=$?")
	if [ "$want" == "$got" ]; then ok "$name"
	else bad "$name: native '$want' guest '$got'"; fi
}
gzip -c "$ws/dir/a" >"$ws/a.gz"; cp "$ws/a.gz" "$nat/a.gz"
own "pip as the run's program (#!/usr/bin/python3)" pip --version
own "pydoc3 as the run's program (#!/usr/bin/python3.11)" pydoc3 json.dumps
own "zgrep as the run's program (#!/bin/sh)" zgrep -c one a.gz
own "npm as the run's program" npm --version
own "npx as the run's program" npx --version

# Through keepd, as E2B's SDK runs a command: bash -l -c.
cat >"$tmp/test.policy" <<'EOP'
agent "dev" {
	allow sandbox:read, sandbox:write, exec, artifact:write
	exec "bash"
	exec "pip"
	timeout 120s
}
EOP
keepd_start "$tmp/test.policy"
tok=$(mint dev sandbox:read,sandbox:write,exec,artifact:write)
req "$tok" POST /v1/sandboxes '{"image":"machine"}'
sb=$(jget "$body" '["id"]')
[ "$code" = 201 ] || [ "$code" = 200 ] && ok "a machine sandbox" || bad "sandbox: $code $body"
script='echo a | tr a b; python3 -c "import subprocess; print(subprocess.run([\"echo\", \"sub\"], capture_output=True).stdout)"; echo "2^10" | bc; git --version'
req "$tok" POST "/v1/sandboxes/$sb/commands/run" \
    "$(python3 -c 'import json,sys; print(json.dumps({"cmd": "bash", "args": ["-l", "-c", sys.argv[1]]}))' "$script")"
got=$(jget "$body" '["stdout"]')
want=$(env -i PATH=/usr/bin:/bin bash -c "$script")
[ -n "$want" ] && [ "$got" = "$want" ] && ok "commands/run bash -l -c: as natively" ||
    bad "commands/run: '$got' want '$want' ($code $body)"
# A script as keepd's run's own program: the same boot.
req "$tok" POST "/v1/sandboxes/$sb/commands/run" '{"cmd": "pip", "args": ["--version"]}'
got=$(jget "$body" '["stdout"]')
want=$(env -i PATH=/usr/bin:/bin pip --version)
[ -n "$want" ] && [ "$got" = "$want" ] && ok "commands/run pip --version: as natively" ||
    bad "commands/run pip: '$got' want '$want' ($code $body)"
keepd_finish
