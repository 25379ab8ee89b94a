#!/usr/bin/env bash
# A new user's first session (issue 18, "Done when"), through keepd's API
# with the stock python image: upload a CSV with files/write, run pandas
# on it and draw a matplotlib chart with execute, fetch the chart with
# files/read. The output is what Debian's own interpreter prints for the
# same code and file, and the PNG decodes; execute's results carry the
# figure (PNG) and the DataFrame (text and HTML).
source "$(dirname "$0")/../lib/keepd.sh"
PY=/usr/bin/python3.11

cat >"$tmp/test.policy" <<'EOP'
agent "analyst" {
	allow sandbox:read, sandbox:write, exec, artifact:read, artifact:write
	exec "python"
	timeout 120s
	output 1M
}
EOP
keepd_start "$tmp/test.policy"
tok=$(mint analyst sandbox:read,sandbox:write,exec,artifact:read,artifact:write)

printf 'region,month,amount\nnorth,1,120.5\nsouth,1,80\nnorth,2,99.25\neast,2,42\nsouth,2,101\neast,3,7.5\n' >"$tmp/sales.csv"
cat >"$tmp/code.py" <<'PY'
import pandas as pd
import matplotlib.pyplot as plt
d = pd.read_csv("sales.csv")
g = d.groupby("region")["amount"].agg(["sum", "mean", "count"])
print(g.to_csv(), end="")
print(d.pivot_table(index="month", columns="region", values="amount").round(2))
ax = g["sum"].plot.bar(title="sales by region")
ax.figure.savefig("chart.png", dpi=80)
g
PY

req "$tok" POST /v1/sandboxes '{"image":"python"}'
[ "$code" = 201 ] && ok "a python sandbox" || bad "create: $code $body"
sb=$(jget "$body" '["id"]')
code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $tok" \
    --data-binary @"$tmp/sales.csv" "$url/v1/sandboxes/$sb/files/write?path=sales.csv")
[ "$code" = 200 ] && ok "files/write sales.csv" || bad "files/write: $code"

# keepd's guests see the host's CPUs too (its vmm reads them before
# its filter; keep run's own are image_python.sh's).
cpus='import os; print(os.cpu_count(), len(os.sched_getaffinity(0)))'
req "$tok" POST "/v1/sandboxes/$sb/execute" "$(python3 -c 'import json,sys; print(json.dumps({"code": sys.argv[1], "language": "python"}))' "$cpus")"
want=$("$PY" -c "$cpus")
[ "$(jget "$body" '["stdout"]' 2>/dev/null)" = "$want" ] && ok "through keepd the CPU count is the host's ($want)" ||
	bad "CPU count through keepd: $body, native $want"

# And the vDSO where keep run's guests get it (its vmm reads the host's
# clocksource before its chroot, docs/vmm.md "Time"): the data page's
# first word, enabled (vdso/vvar.h), read by the guest itself.
vvar='import ctypes; print(ctypes.c_uint32.from_address(0x30000).value)'
req "$tok" POST "/v1/sandboxes/$sb/execute" "$(python3 -c 'import json,sys; print(json.dumps({"code": sys.argv[1], "language": "python"}))' "$vvar")"
want=0
host_tsc_clocks && want=1
[ "$(jget "$body" '["stdout"]' 2>/dev/null)" = "$want" ] && ok "through keepd the vDSO is $([ $want = 1 ] && echo on || echo off), as the host's clocks say" ||
	bad "the vDSO's enabled through keepd: $body, want $want"

# CPU time and the process tree in a keepd vm process, whose filter
# keep run does not have (docs/vmm.md "CPU time", "/proc and /dev"):
# the other processes' CPU clocks are read with clock_gettime alone; a
# forked child's /proc entry is seen from its parent.
cpu='import os, time, resource
t = time.process_time(); sum(i * i for i in range(2000000)); t = time.process_time() - t
pid = os.fork()
if pid == 0:
    time.sleep(2); os._exit(0)
st = open("/proc/%d/stat" % pid).read().split()
r = resource.getrusage(resource.RUSAGE_SELF)
os.kill(pid, 9); os.waitpid(pid, 0)
print(t > 0.01, r.ru_utime + r.ru_stime >= t, os.times().elapsed > 0, st[2], int(st[3]) == os.getpid())'
req "$tok" POST "/v1/sandboxes/$sb/execute" "$(python3 -c 'import json,sys; print(json.dumps({"code": sys.argv[1], "language": "python"}))' "$cpu")"
[ "$(jget "$body" '["stdout"]' 2>/dev/null)" = "True True True S True" ] && ok "through keepd the CPU time counts and a child's /proc is seen" ||
	bad "CPU time and /proc through keepd: $body"

# File locks in a keepd vm process, whose filter and Landlock rules
# keep run does not have (host/vmm/sys_lock.c; tests/integration/
# vmm_locks.sh has the rest): a child's flock and lockf of a file the
# parent holds are refused, and sqlite's rollback journal works.
locks='import fcntl, os, sqlite3
fd = os.open("l", os.O_RDWR | os.O_CREAT); fcntl.flock(fd, fcntl.LOCK_EX); fcntl.lockf(fd, fcntl.LOCK_EX)
pid = os.fork()
if pid == 0:
    fd2 = os.open("l", os.O_RDWR); out = []
    for f in (fcntl.flock, fcntl.lockf):
        try: f(fd2, fcntl.LOCK_EX | fcntl.LOCK_NB); out.append("got")
        except BlockingIOError: out.append("held")
    print(*out, flush=True); os._exit(0)
os.waitpid(pid, 0)
c = sqlite3.connect("t.db"); c.execute("create table t (n)"); c.execute("insert into t values (7)"); c.commit()
print(c.execute("select n from t").fetchone()[0])'
req "$tok" POST "/v1/sandboxes/$sb/execute" "$(python3 -c 'import json,sys; print(json.dumps({"code": sys.argv[1], "language": "python"}))' "$locks")"
[ "$(jget "$body" '["stdout"]' 2>/dev/null)" = "held held
7" ] && ok "through keepd, flock and lockf hold between processes, sqlite writes" ||
	bad "locks through keepd: $body"

req "$tok" POST "/v1/sandboxes/$sb/execute" \
    "$(python3 -c 'import json,sys; print(json.dumps({"code": open(sys.argv[1]).read(), "language": "python"}))' "$tmp/code.py")"
got=$(jget "$body" '["stdout"]' 2>/dev/null)
mkdir "$tmp/native" && cp "$tmp/sales.csv" "$tmp/native/" &&
	want=$(cd "$tmp/native" && MPLBACKEND=Agg MPLCONFIGDIR="$tmp/native/mpl" "$PY" "$tmp/code.py")
[ "$code" = 200 ] && [ "$(jget "$body" '["exit_code"]')" = 0 ] && [ "$got" = "$want" ] &&
	ok "execute: pandas on the uploaded CSV prints what the host's python prints" ||
	bad "execute: $code '$got' want '$want' ($body)"

# results (item 4 of issue 18): the open figure as a PNG that decodes,
# the DataFrame (the last expression) as text and HTML.
res=$(python3 -c 'import base64, json, sys
r = json.loads(sys.argv[1]).get("results", [])
figs = [x for x in r if not x["is_main_result"] and "png" in x]
main = [x for x in r if x["is_main_result"]]
open(sys.argv[2], "wb").write(base64.b64decode(figs[0]["png"]) if figs else b"")
print(len(figs), len(main), main and main[0]["text"].split("\n")[0].split(), main and "<table" in main[0].get("html", ""))' "$body" "$tmp/result.png" 2>&1)
rdims=$("$PY" -c 'import sys; from PIL import Image; im = Image.open(sys.argv[1]); im.load(); print(im.format, im.size)' "$tmp/result.png" 2>&1)
[ "$res" = "1 1 ['sum', 'mean', 'count'] True" ] && [ "$rdims" = "PNG (640, 480)" ] &&
	ok "execute's results: the figure as a PNG that decodes ($rdims), the DataFrame as text and HTML" ||
	bad "results: '$res' '$rdims'"

code=$(curl -s -o "$tmp/chart.png" -w '%{http_code}' -H "Authorization: Bearer $tok" \
    "$url/v1/sandboxes/$sb/files/read?path=chart.png")
dims=$("$PY" -c 'import sys; from PIL import Image; im = Image.open(sys.argv[1]); im.load(); print(im.format, im.size)' "$tmp/chart.png" 2>&1)
[ "$code" = 200 ] && [ "$dims" = "PNG (512, 384)" ] &&
	ok "files/read chart.png: the matplotlib chart decodes ($dims)" || bad "chart: $code '$dims'"

# A new sandbox's first execute, once it is a clone of the image's
# template (keepd's log says which; a cold start builds the template
# meanwhile, so new sandboxes are tried until one's is), finds the /tmp
# and /dev/shm a boot makes, so tempfile, multiprocessing's locks and
# memfd_create work. A clone lacked both: in a new sandbox every
# execute's mp.Lock raised FileNotFoundError until a cold boot had made
# them.
first='import multiprocessing as mp, os, tempfile
mp.Lock(); os.memfd_create("m")
print(tempfile.gettempdir(), os.path.isdir("/dev/shm"))'
cloned=
for _ in $(seq 60); do
	req "$tok" POST /v1/sandboxes '{"image":"python"}'
	sb2=$(jget "$body" '["id"]')
	req "$tok" POST "/v1/sandboxes/$sb2/execute" "$(python3 -c 'import json,sys; print(json.dumps({"code": sys.argv[1], "language": "python"}))' "$first")"
	out2=$body
	if grep -q "in sandbox $sb2, .*from its template" "$tmp/log"; then
		cloned=1
		break
	fi
	req "$tok" DELETE "/v1/sandboxes/$sb2"
	sleep 1
done
if [ -z "$cloned" ]; then
	bad "no new sandbox's execute was a template's clone in a minute"
elif [ "$(jget "$out2" '["stdout"]' 2>/dev/null)" = "/tmp True" ]; then
	ok "a template's clone in a new sandbox has /tmp and /dev/shm: tempfile, mp.Lock and memfd_create work"
else
	bad "/tmp in a clone: $out2"
fi
keepd_finish
