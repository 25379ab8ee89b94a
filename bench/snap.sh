#!/usr/bin/env bash
# bench/snap: Python start-up and live contexts, side by side, one run.
# Rows (p50 and p90 over RUNS, each after a warm-up):
#   native   Debian's python3.11 -c 'print(1)' (the interpreter the static
#            image is built from), and the same with -I -S (as the image
#            runs it: isolated, no site)
#   cold     `keep run` of the python image's -c 'print(1)' (no API)
#   api      POST execute {"code":"print(1)"}: a clone of the python
#            template when one is ready (docs/templates.md), else a cold boot
#   cell     POST execute {"code":"print(1)","context_id":...}: a cell in a
#            live context, through the API
#   cell/vmm the same cell as the vmm timed it (pipe in to end line out)
#   memory   the idle context's vm process (VmRSS, RssAnon) beside a
#            native python3.11
#   resume   a cell in a context paused after its policy's `pause 1s`,
#            which starts from the memory image the interpreter saved
#            (docs/contexts.md); the same with the image removed, which
#            runs its 10 acknowledged cells again in a new interpreter;
#            beside a cell in a live one; and what the paused context
#            holds: no process, its journal and its image, whose pages
#            are the guest's dirty pages (target: the image <= those
#            pages + 256 KiB)
# Targets (docs/contexts.md): a cell in a live context <= 1 ms plus the
# cell's own time; from a template, print(1) <= 0.5x native (templates
# are not built yet: no row).
#
# usage: bench/snap.sh [BUILD_DIR]   (env: RUNS=40); root and /dev/kvm.
B=${1:-build}
export B
RUNS=${RUNS:-40}
source "$(dirname "$0")/../tests/lib/keepd.sh" || exit 1

cat >"$tmp/bench.policy" <<'EOP'
agent "bench" {
	allow sandbox:read, sandbox:write, exec
	exec "python"
}
agent "bench-pause" {
	allow sandbox:read, sandbox:write, exec
	exec "python"
	pause 1s
}
EOP
keepd_start "$tmp/bench.policy"
tok=$(mint bench sandbox:read,sandbox:write,exec 1h)
req "$tok" POST /v1/sandboxes '{"image":"python"}'
id=$(jget "$body" '["id"]') || { echo "bench/snap: no sandbox: $body"; exit 1; }
req "$tok" POST "/v1/sandboxes/$id/contexts" '{}'
cid=$(jget "$body" '["id"]') || { echo "bench/snap: no context: $body"; exit 1; }

python3 - "$url" "$tok" "$id" "$cid" "$RUNS" "$KEEP" "$B/images/python.img" \
    "$B/keys/dev.public" <<'EOPY'
import http.client, json, subprocess, sys, time, urllib.parse

url, tok, sbx, cid, runs, keep, img, key = sys.argv[1:9]
runs = int(runs)
u = urllib.parse.urlparse(url)
conn = http.client.HTTPConnection(u.hostname, u.port)
hdr = {"Authorization": "Bearer " + tok, "Content-Type": "application/json"}

def post(body):
    conn.request("POST", "/v1/sandboxes/%s/execute" % sbx, json.dumps(body), hdr)
    r = conn.getresponse()
    data = r.read()
    if r.status != 200:
        sys.exit("bench/snap: %d %s" % (r.status, data[:200]))
    return json.loads(data)

def timed(fn, n=runs):
    fn()  # warm-up
    t = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        t.append((time.perf_counter() - t0) * 1000)
    t.sort()
    return t[len(t) // 2], t[int(len(t) * 0.9)]

def run(argv):
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)

rows = []
native = timed(lambda: run(["/usr/bin/python3.11", "-c", "print(1)"]))
rows.append(("native python3.11 -c 'print(1)'", native))
rows.append(("native python3.11 -I -S -c 'print(1)'",
             timed(lambda: run(["/usr/bin/python3.11", "-I", "-S", "-c", "print(1)"]))))
rows.append(("keep run python -c 'print(1)' (cold boot)",
             timed(lambda: run([keep, "run", "--trust", key, img, "python", "-c",
                                "print(1)"]))))
rows.append(("API execute print(1) (the template's clone)",
             timed(lambda: post({"code": "print(1)"}))))
cell = {"code": "print(1)", "context_id": cid}
rows.append(("API execute print(1) in a live context",
             timed(lambda: post(cell))))
vmm = []
def cell_vmm():
    vmm.append(post(cell)["duration_ms"])
timed(cell_vmm)
vmm.sort()
rows.append(("  the same cell as the vmm timed it (ms granularity)",
             (vmm[len(vmm) // 2], vmm[int(len(vmm) * 0.9)])))
rows.append(("API execute 'pass' in a live context",
             timed(lambda: post({"code": "pass", "context_id": cid}))))

print("%-56s %9s %9s %8s" % ("row", "p50 ms", "p90 ms", "x native"))
for name, (p50, p90) in rows:
    print("%-56s %9.2f %9.2f %8.2f" % (name, p50, p90, p50 / native[0]))
EOPY
# Host memory of the idle context: its vm process (the guest's touched
# pages are its anonymous memory) against a native python3.11 at rest.
for p in $(pgrep -f "keepd: vm $id"); do
	grep -E '^(VmRSS|RssAnon)' /proc/$p/status | tr -s ' ' | tr '\n' ' '
	echo "(idle context vm process $p)"
done
python3.11 -c 'import time, sys; sys.stdout.write(open("/proc/self/status").read()); sys.stdout.flush()' |
    grep -E '^(VmRSS|RssAnon)' | tr -s ' ' | tr '\n' ' '; echo "(native python3.11 at rest)"

# Resume of a paused context: 10 acknowledged cells, paused after 1 s
# idle, then one cell (timed) that brings it back first.
ptok=$(mint bench-pause sandbox:read,sandbox:write,exec 1h)
req "$ptok" POST /v1/sandboxes '{"image":"python"}'
pid_sbx=$(jget "$body" '["id"]')
req "$ptok" POST "/v1/sandboxes/$pid_sbx/contexts" '{}'
pcid=$(jget "$body" '["id"]')
python3 - "$url" "$ptok" "$pid_sbx" "$pcid" "$tmp/state/contexts" <<'EOPY'
import http.client, json, os, subprocess, sys, time, urllib.parse

url, tok, sbx, cid, cdir = sys.argv[1:6]
u = urllib.parse.urlparse(url)
conn = http.client.HTTPConnection(u.hostname, u.port)
hdr = {"Authorization": "Bearer " + tok, "Content-Type": "application/json"}

def call(method, path, body=None):
    conn.request(method, path, json.dumps(body) if body else None, hdr)
    r = conn.getresponse()
    return r.status, json.loads(r.read() or b"null")

def cell(code):
    t0 = time.perf_counter()
    st, d = call("POST", "/v1/sandboxes/%s/execute" % sbx,
                 {"code": code, "context_id": cid})
    if st != 200 or d.get("error"):
        sys.exit("bench/snap: resume: %d %s" % (st, d))
    return (time.perf_counter() - t0) * 1000

def paused():
    for _ in range(100):
        st, cs = call("GET", "/v1/sandboxes/%s/contexts" % sbx)
        if cs and cs[0]["state"] == "paused":
            return
        time.sleep(0.1)
    sys.exit("bench/snap: the context did not pause")

for i in range(10):
    cell("v%d = %d" % (i, i))
live = sorted(cell("print(1)") for _ in range(20))
j = os.path.join(cdir, sbx, cid)

def image():
    for _ in range(100):
        if os.path.exists(j + ".mem"):
            return
        time.sleep(0.1)
    sys.exit("bench/snap: the context saved no memory image")

res, rej = [], []
for _ in range(5):
    paused()
    image()
    res.append(cell("print(1)"))
    paused()
    image()
    os.unlink(j + ".mem")
    rej.append(cell("print(1)"))
res.sort()
rej.sort()
print("%-56s %9.2f" % ("API execute print(1) in a live context, p50", live[10]))
print("%-56s %9.2f" % ("  resuming a paused one from its memory image, p50", res[2]))
print("%-56s %9.2f" % ("  resuming one from its journal (10 cells again), p50", rej[2]))
paused()
image()
vm = subprocess.run(["pgrep", "-f", "keepd: vm " + sbx], capture_output=True,
                    text=True).stdout.split()
# The image: a seal (file_len, meta_len at bytes 16 and 24), the state,
# then the guest's dirty pages, then 16 bytes of end.
with open(j + ".mem", "rb") as f:
    head = f.read(32)
file_len = int.from_bytes(head[16:24], "little")
meta_len = int.from_bytes(head[24:32], "little")
pages = file_len - meta_len - 16
print("paused context: %d vm processes; journal %d bytes; memory image %d KiB"
      % (len(vm), os.path.getsize(j), file_len >> 10))
print("  its dirty pages %d KiB + %d KiB of state (target: <= 256 KiB)"
      % (pages >> 10, (file_len - pages) >> 10))
EOPY
