#!/usr/bin/env bash
# bench/net: issue 29's network benchmarks, through a real keepd (every
# process, chroots, seccomp, the policy's decisions, egress's checks, the
# audit), on loopback only; each row beside the same work done natively
# in the same run, keep and native runs alternated, medians over RUNS.
#  1. stream    a guest's TCP stream of MIB MiB to a server on the host,
#               the connect by name (bench.test, mapped to 127.0.0.1 by
#               egress.hosts_file, rule `private`: keep's resolver, then
#               egress opens the connection); MiB/s beside the same client
#               natively to 127.0.0.1 (target >= 0.5x native)
#  2. connect   connect() to the first byte of the server's reply, p50 of
#               CONNECTS connections a run, the same way (target <= 3x)
#  3. pip       `pip install --no-deps` of a local wheel (a pure-python
#               package of PIP_MODULES modules, made here) into a fresh
#               --target: from an HTTP index on the host by name
#               (pypi.test), and from a file in the workspace, in the
#               machine image through commands/run, beside the host's
#               /usr/bin/python3.11 -m pip (target <= 1.5x). The machine
#               image has no /etc/resolv.conf yet, so the sandbox's
#               workspace is given images/resolv.conf as etc/resolv.conf
#  4. port      wrk through keepd's /v1/sandboxes/{id}/ports/8080/ to a
#               guest's HTTP server beside wrk through nginx (one worker,
#               proxy_pass) to the same server program run natively, the
#               same connections and duration (target >= 0.5x); with the
#               CPU each keepd process spends per request, how often the
#               front was restarted, and one client's p50 latency
# bench/netbench.c is both sides' program (client, server): a static musl
# binary, run as the guest (the netbench image) and natively. The keep
# figures of rows 1-2 are timed inside the guest, as the native ones are;
# row 3 times the API request (the run's start included) against the
# native process (the interpreter's start included).
#
# usage: bench/net.sh [BUILD_DIR]   (env: RUNS=5 MIB=256 CONNECTS=100
#        PIP_MODULES=200 DURATION=5 CONNS=32 THREADS=2; QUICK=1 sets them
#        all small, to see that every row runs; ROWS="stream connect pip
#        port" names the rows to run, e.g. ROWS=port). Needs root (keepd),
#        wrk and nginx (make bench-net installs them).
set -u
B=${1:-build}
export B
if [ -n "${QUICK:-}" ]; then
	: "${RUNS:=1}" "${MIB:=8}" "${CONNECTS:=5}" "${PIP_MODULES:=5}" "${DURATION:=1}" "${CONNS:=4}"
fi
RUNS=${RUNS:-5} MIB=${MIB:-256} CONNECTS=${CONNECTS:-100}
PIP_MODULES=${PIP_MODULES:-200} DURATION=${DURATION:-5} CONNS=${CONNS:-32}
THREADS=${THREADS:-2}
ROWS=${ROWS:-stream connect pip port}
export RUNS MIB CONNECTS PIP_MODULES DURATION CONNS THREADS ROWS
command -v wrk >/dev/null || { echo "bench/net: wrk is not installed"; exit 1; }
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
[ -x "$NGINX" ] || { echo "bench/net: nginx is not installed"; exit 1; }
PY=/usr/bin/python3.11
"$PY" -m pip --version >/dev/null 2>&1 || { echo "bench/net: $PY has no pip"; exit 1; }
export KEEPD_IMAGES=machine
source "$(dirname "$0")/../tests/lib/keepd.sh" || exit 1 # (cd to the tree)
for f in "$B/bench/netbench" "$B/bench/netbench.img" "$B/images/machine.img"; do
	[ -f "$f" ] || { echo "bench/net: $f is missing (make bench-net builds it)"; exit 1; }
done
NETBENCH=$(realpath "$B/bench/netbench")
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; keepd_cleanup' EXIT
chmod 755 "$tmp"

# port_of FILE: the port a server printed ("port N"), once it has.
port_of() {
	local p
	for _ in $(seq 100); do
		p=$(sed -n 's/^port \([0-9]*\).*/\1/p;s/.*port \([0-9]*\) .*/\1/p' "$1" | head -n 1)
		[ -n "$p" ] && { echo "$p"; return 0; }
		sleep 0.05
	done
	echo "bench/net: no port in $1: $(cat "$1")" >&2
	return 1
}

# The host's servers: the sink (rows 1-2), the package index (row 3), the
# native HTTP server (row 4) and nginx in front of it.
"$NETBENCH" sink 0 >"$tmp/sink.out" 2>&1 &
pids+=($!)
sink=$(port_of "$tmp/sink.out") || exit 1

mkdir -p "$tmp/index/simple/keepbenchpkg" "$tmp/home"
"$PY" - "$tmp/index" "$PIP_MODULES" <<'EOPY' || exit 1
# A wheel made by hand (no build tool): MODULES modules of a package,
# its dist-info and RECORD with each file's hash, as pip checks them.
import base64, hashlib, sys, zipfile
out, n = sys.argv[1], int(sys.argv[2])
name, ver = "keepbenchpkg", "1.0"
whl = "%s-%s-py3-none-any.whl" % (name, ver)
files = {"%s/__init__.py" % name: "VERSION = %r\n" % ver}
for i in range(n):
    body = "".join("def f%d_%d(x):\n    return [x * %d + j for j in range(%d)]\n\n" % (i, j, j, j)
                   for j in range(40))
    files["%s/m%03d.py" % (name, i)] = body
di = "%s-%s.dist-info" % (name, ver)
files[di + "/METADATA"] = "Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (name, ver)
files[di + "/WHEEL"] = "Wheel-Version: 1.0\nGenerator: bench-net\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
rec = []
for p, s in files.items():
    d = base64.urlsafe_b64encode(hashlib.sha256(s.encode()).digest()).rstrip(b"=").decode()
    rec.append("%s,sha256=%s,%d" % (p, d, len(s.encode())))
rec.append(di + "/RECORD,,")
files[di + "/RECORD"] = "\n".join(rec) + "\n"
with zipfile.ZipFile("%s/%s" % (out, whl), "w", zipfile.ZIP_DEFLATED) as z:
    for p, s in files.items():
        z.writestr(p, s)
with open("%s/simple/%s/index.html" % (out, name), "w") as f:
    f.write('<html><body><a href="../../%s">%s</a></body></html>\n' % (whl, whl))
print(whl)
EOPY
whl=$(cd "$tmp/index" && ls ./*.whl) && whl=${whl#./}
"$PY" -m http.server --bind 127.0.0.1 --directory "$tmp/index" 0 >"$tmp/index.out" 2>&1 &
pids+=($!)
idx=$(port_of "$tmp/index.out") || exit 1

"$NETBENCH" http 0 >"$tmp/http.out" 2>&1 &
pids+=($!)
hpid=$!
hport=$(port_of "$tmp/http.out") || exit 1
nport=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
mkdir -p "$tmp/nginx"
cat >"$tmp/nginx.conf" <<CONF
user root;
worker_processes 1;
daemon off;
pid $tmp/nginx/nginx.pid;
error_log $tmp/nginx/error.log;
events { worker_connections 4096; }
http {
    access_log off;
    client_body_temp_path $tmp/nginx; proxy_temp_path $tmp/nginx;
    fastcgi_temp_path $tmp/nginx; uwsgi_temp_path $tmp/nginx; scgi_temp_path $tmp/nginx;
    server {
        listen 127.0.0.1:$nport;
        location / { proxy_pass http://127.0.0.1:$hport; }
    }
}
CONF
"$NGINX" -c "$tmp/nginx.conf" -p "$tmp/nginx" 2>"$tmp/nginx.err" &
pids+=($!)
npid=$!

echo "127.0.0.1 bench.test pypi.test" >"$tmp/hosts"
cat >"$tmp/bench.policy" <<EOP
agent "bench" {
	allow sandbox:read, sandbox:write, exec, artifact:write
	exec "netbench", "python3"
	egress "bench.test":$sink private, "pypi.test":$idx private
	expose 8080
	timeout 600s
}
EOP
mkdir -p "$tmp/state/images"
cp "$B/bench/netbench.img" "$tmp/state/images/"
KEEPD_YAML_EXTRA="egress:
  hosts_file: $tmp/hosts
  connect_timeout: 5s" keepd_start "$tmp/bench.policy"
tok=$(mint bench sandbox:read,sandbox:write,exec,egress,artifact:write 1h)

echo "bench/net: $(date -u '+%F %H:%M') UTC, $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg);" \
    "RUNS=$RUNS alternated keep/native, medians"
"$PY" - "$url" "$tok" "$pid" "$NETBENCH" "$sink" "$idx" "$tmp" "$whl" \
    "$nport" "$npid" "$hpid" <<'EOPY'
import http.client, json, os, subprocess, sys, time, urllib.parse

url, tok, keepd, netbench, sink, idx, tmp, whl, nport, npid, hpid = sys.argv[1:]
E = os.environ
RUNS, MIB, CONNECTS = int(E["RUNS"]), int(E["MIB"]), int(E["CONNECTS"])
DURATION, CONNS, THREADS = int(E["DURATION"]), int(E["CONNS"]), int(E["THREADS"])
ROWS = E["ROWS"].split()
u = urllib.parse.urlparse(url)
hdr = {"Authorization": "Bearer " + tok, "Content-Type": "application/json"}

def call(method, path, body=None, raw=None, want=(200, 201, 202, 204)):
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=900)
    conn.request(method, path, raw if raw is not None else
                 (None if body is None else json.dumps(body)), hdr)
    r = conn.getresponse()
    data = r.read()
    conn.close()
    if r.status not in want:
        sys.exit("bench/net: %s %s: %d %s" % (method, path, r.status, data[:300]))
    return json.loads(data) if data else None

def sandbox(image):
    return call("POST", "/v1/sandboxes", {"image": image})["id"]

def guest(sbx, cmd, args, cwd=None):
    """commands/run: (stdout, seconds of the whole request)."""
    body = {"cmd": cmd, "args": args}
    if cwd:
        body["cwd"] = cwd
    t0 = time.perf_counter()
    r = call("POST", "/v1/sandboxes/%s/commands/run" % sbx, body)
    dt = time.perf_counter() - t0
    platform.add(r.get("platform", "?"))
    if r["exit_code"] != 0:
        sys.exit("bench/net: %s %s in the guest: exit %s, %s %s" %
                 (cmd, args, r["exit_code"], r.get("reason"), r["stderr"][-500:]))
    return r["stdout"], dt

def native(args, env=None):
    t0 = time.perf_counter()
    r = subprocess.run(args, capture_output=True, text=True, env=env)
    dt = time.perf_counter() - t0
    if r.returncode:
        sys.exit("bench/net: %s natively: %s" % (args, r.stderr[-500:]))
    return r.stdout, dt

def med(v):
    v = sorted(v)
    return v[(len(v) - 1) // 2]

def alternate(keep_fn, native_fn):
    """RUNS rounds, the order swapped each round: (keep list, native list)."""
    k, n = [], []
    for i in range(RUNS):
        if i % 2:
            n.append(native_fn()); k.append(keep_fn())
        else:
            k.append(keep_fn()); n.append(native_fn())
    return k, n

platform = set()
rows = []
def row(name, unit, keep, nat, higher_better, target, note):
    ratio = keep / nat if nat else float("inf")
    met = ratio >= target if higher_better else ratio <= target
    rows.append((name, keep, nat, unit, ratio, ("%s %.1fx: " % (">=" if higher_better else "<=", target)) +
                 ("met" if met else "missed"), note))
    print("%-8s keep %10.1f  native %10.1f %-6s  %5.2fx  target %s  %s" % rows[-1], flush=True)

nb = sandbox("netbench")
# 1. The stream, by name through keep's resolver and egress.
def kstream():
    out, _ = guest(nb, "netbench", ["stream", "bench.test", sink, str(MIB)])
    return float(out.split()[1])
def nstream():
    out, _ = native([netbench, "stream", "127.0.0.1", sink, str(MIB)])
    return float(out.split()[1])
if "stream" in ROWS:
    k, n = alternate(kstream, nstream)
    row("stream", "MiB/s", med(k), med(n), True, 0.5,
        "%d MiB a run; keep %s, native %s" % (MIB, [round(x) for x in k], [round(x) for x in n]))

# 2. Connect + first byte.
def krtt():
    out, _ = guest(nb, "netbench", ["rtt", "bench.test", sink, str(CONNECTS)])
    return float(out.split()[1])
def nrtt():
    out, _ = native([netbench, "rtt", "127.0.0.1", sink, str(CONNECTS)])
    return float(out.split()[1])
if "connect" in ROWS:
    k, n = alternate(krtt, nrtt)
    row("connect", "us", med(k), med(n), False, 3.0,
        "p50 of %d connections a run, connect() to the reply's first byte; keep %s, native %s" %
        (CONNECTS, [round(x) for x in k], [round(x) for x in n]))

# 3. pip install of the wheel: from the index by name, and from a file in
# the workspace; each into a fresh --target.
if "pip" in ROWS:
    mc = sandbox("machine")
    with open(os.path.join(tmp, "index", whl), "rb") as f:
        call("POST", "/v1/sandboxes/%s/files/write?path=%s" % (mc, whl), raw=f.read())
    call("POST", "/v1/sandboxes/%s/files/mkdir?path=etc" % mc)
    with open("images/resolv.conf", "rb") as f:
        call("POST", "/v1/sandboxes/%s/files/write?path=etc/resolv.conf" % mc, raw=f.read())
    pip = ["-m", "pip", "install", "--no-deps", "--no-cache-dir",
           "--disable-pip-version-check", "--quiet", "--root-user-action=ignore"]
    nenv = {"PATH": "/usr/bin:/bin", "HOME": os.path.join(tmp, "home")}
    seq = iter(range(1 << 30))
    def kpip(src):
        def f():
            i = next(seq)
            a = pip + ["--target", "/t%d" % i] + (
                ["--index-url", "http://pypi.test:%s/simple/" % idx, "--trusted-host",
                 "pypi.test", "keepbenchpkg"]
                if src == "index" else ["--no-index", "/" + whl])
            out, dt = guest(mc, "python3", a)
            return dt * 1000
        return f
    def npip(src):
        def f():
            i = next(seq)
            a = ["/usr/bin/python3.11"] + pip + ["--target", os.path.join(tmp, "t%d" % i)] + (
                ["--index-url", "http://127.0.0.1:%s/simple/" % idx, "--trusted-host",
                 "127.0.0.1", "keepbenchpkg"]
                if src == "index" else ["--no-index", os.path.join(tmp, "index", whl)])
            out, dt = native(a, nenv)
            return dt * 1000
        return f
    for src in ("index", "file"):
        k, n = alternate(kpip(src), npip(src))
        row("pip " + src, "ms", med(k), med(n), False, 1.5,
            ("by name from http://pypi.test (host: 127.0.0.1)" if src == "index"
             else "--no-index, the wheel in the workspace") +
            "; %s modules, machine image vs the host's python3.11; keep %s, native %s" %
            (E["PIP_MODULES"], [round(x) for x in k], [round(x) for x in n]))

# 4. Requests through a port beside nginx's proxy_pass to the same server.
if "port" in ROWS:
    call("POST", "/v1/sandboxes/%s/commands/background" % nb,
         {"cmd": "netbench", "args": ["http", "8080"]})
    for _ in range(200):
        c = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
        c.request("GET", "/v1/sandboxes/%s/ports/8080/" % nb, None, hdr)
        r = c.getresponse(); r.read(); c.close()
        if r.status == 200:
            break
        time.sleep(0.1)
    else:
        sys.exit("bench/net: the guest's server never answered through the port: %d" % r.status)
    lua = os.path.join(tmp, "auth.lua")
    with open(lua, "w") as f:
        f.write('wrk.headers["Authorization"] = "Bearer %s"\n' % tok)

    def descendants(root):
        kids = {}
        for p in os.listdir("/proc"):
            if p.isdigit():
                try:
                    with open("/proc/%s/stat" % p) as f:
                        ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                    kids.setdefault(ppid, []).append(int(p))
                except (OSError, IndexError, ValueError):
                    pass
        out, todo = [], [int(root)]
        while todo:
            p = todo.pop()
            out.append(p)
            todo += kids.get(p, [])
        return out

    TICK_NS = 1e9 / os.sysconf("SC_CLK_TCK")
    def cpu_by_name(*roots):
        """ns of CPU of the roots and their descendants, by (pid, name): each
        process's own and that of its children it reaped (the vmm's per-request
        children end inside the window); every thread's."""
        t = {}
        for p in [d for r in roots for d in descendants(r)]:
            try:
                with open("/proc/%d/cmdline" % p, "rb") as f:
                    name = f.read().split(b"\0")[0].decode(errors="replace")
                with open("/proc/%d/stat" % p) as f:
                    st = f.read().rsplit(")", 1)[1].split()
            except (OSError, ValueError, IndexError):
                continue
            name = name.replace("keepd: ", "").split()[0] if name.strip() else "?"
            name = os.path.basename(name)
            t[(p, name)] = sum(int(x) for x in st[11:15]) * TICK_NS
        return t

    def wrk(target, script=None):
        a = ["wrk", "-t%d" % THREADS, "-c%d" % CONNS, "-d%ds" % DURATION]
        if script:
            a += ["-s", script]
        r = subprocess.run(a + [target], capture_output=True, text=True)
        rps = reqs = errs = 0
        for l in r.stdout.splitlines():
            if l.startswith("Requests/sec:"):
                rps = float(l.split()[1])
            elif "requests in" in l:
                reqs = int(l.split()[0])
            elif "Non-2xx" in l or "Socket errors" in l:
                errs += 1
        if errs:
            print("  wrk %s: %s" % (target, " ".join(l.strip() for l in r.stdout.splitlines()
                                                   if "Non-2xx" in l or "Socket errors" in l)))
        return rps, reqs

    kcpu = {}
    def kport():
        c0 = cpu_by_name(keepd)
        rps, reqs = wrk("%s/v1/sandboxes/%s/ports/8080/" % (url, nb), lua)
        c1 = cpu_by_name(keepd)
        for key, ns in c1.items():
            kcpu.setdefault(key[1], [0, 0])
            kcpu[key[1]][0] += ns - c0.get(key, 0)
        kcpu.setdefault("", [0, 0])[1] += reqs
        return rps
    ncpu = [0, 0]
    def nport_():
        c0 = cpu_by_name(npid, hpid)
        rps, reqs = wrk("http://127.0.0.1:%s/" % nport)
        c1 = cpu_by_name(npid, hpid)
        ncpu[0] += sum(ns - c0.get(key, 0) for key, ns in c1.items())
        ncpu[1] += reqs
        return rps
    def restarts():
        with open(os.path.join(tmp, "log"), errors="replace") as f:
            return sum("restarting front" in l for l in f)
    r0 = restarts()
    k, n = alternate(kport, nport_)
    r1 = restarts()
    if r1 > r0:
        print("  keepd's front died and was restarted %d times during the port runs "
              "(KEEP_TEST_KEEP=DIR keeps keepd's log)" % (r1 - r0))
    row("port", "req/s", med(k), med(n), True, 0.5,
        "wrk -t%d -c%d -d%ds; nginx: 1 worker, proxy_pass" % (THREADS, CONNS, DURATION))
    reqs = kcpu.pop("")[1]
    if reqs:
        parts = sorted(((ns / 1000 / reqs, name) for name, (ns, _) in kcpu.items() if ns > 0), reverse=True)
        print("  CPU per request through the port, us: keepd %.1f (%s)" %
              (sum(p[0] for p in parts), ", ".join("%s %.1f" % (nm, us) for us, nm in parts)))
    if ncpu[1]:
        print("  CPU per request, us: nginx and the native server %.1f" % (ncpu[0] / 1000 / ncpu[1]))
    # One client, one request at a time: the latency of a request through the
    # port when nothing queues (wrk's p50), beside nginx's.
    def p50(target, script=None):
        a = ["wrk", "-t1", "-c1", "-d%ds" % DURATION, "--latency"]
        if script:
            a += ["-s", script]
        r = subprocess.run(a + [target], capture_output=True, text=True)
        for l in r.stdout.splitlines():
            f = l.split()
            if len(f) == 2 and f[0] == "50%":
                v = f[1]
                for unit, mul in (("us", 0.001), ("ms", 1.0), ("s", 1000.0)):
                    if v.endswith(unit):
                        return float(v[:-len(unit)]) * mul
        return float("nan")
    kl = p50("%s/v1/sandboxes/%s/ports/8080/" % (url, nb), lua)
    nl = p50("http://127.0.0.1:%s/" % nport)
    print("  one client (wrk -c1 p50): keepd %.2f ms, nginx %.2f ms (%.1fx)" % (kl, nl, kl / nl if nl else 0))
print("guest platform: %s" % ", ".join(sorted(platform) or ["KEEP_PLATFORM=" + E.get("KEEP_PLATFORM", "auto")]))
print("load average after: %s" % " ".join(open("/proc/loadavg").read().split()[:3]))
EOPY
