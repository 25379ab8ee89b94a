"""bench/templates.py: the timing loops of bench/templates.sh.

usage: templates.py URL TOKEN SBX_TEMPLATE SBX_COLD KEEP IMAGE TRUST RUNS

Each row's runs alternate with its baseline's, one at a time, so load on
the shared machine falls on both alike. Times are wall clock around the
whole start: a subprocess (fork, exec, exit, wait) for native python and
keep run, one HTTP request on a kept-alive connection for execute.
"""
import glob
import http.client
import json
import subprocess
import sys
import time
import urllib.parse

url, token, sbx_tpl, sbx_cold, keep, image, trust, runs = sys.argv[1:9]
runs = int(runs)
u = urllib.parse.urlparse(url)
conn = http.client.HTTPConnection(u.hostname, u.port)
PY = "/usr/bin/python3.11"
PRINT1 = "print(1)"
NUMPY = "import numpy as np; print(np.ones(3).sum())"


def execute(sbx, code):
    body = json.dumps({"code": code, "language": "python"})
    t0 = time.perf_counter_ns()
    conn.request("POST", "/v1/sandboxes/%s/execute" % sbx, body,
                 {"Authorization": "Bearer " + token,
                  "Content-Type": "application/json"})
    r = conn.getresponse()
    data = r.read()
    t = time.perf_counter_ns() - t0
    out = json.loads(data)
    if r.status != 200 or out.get("exit_code") != 0:
        sys.exit("execute failed: %d %s" % (r.status, data[:300]))
    return t


def proc(argv):
    t0 = time.perf_counter_ns()
    subprocess.run(argv, stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter_ns() - t0


def pct(v, p):
    v = sorted(v)
    return v[(len(v) - 1) * p // 100]


def ms(ns):
    return "%.2f ms" % (ns / 1e6)


def row(label, keep_ns, base_label, base_ns, target=None):
    k50, b50 = pct(keep_ns, 50), pct(base_ns, 50)
    print("| %s | %s | %s | %s %s | %.2fx | %s |" % (
        label, ms(k50), ms(pct(keep_ns, 99)), base_label, ms(b50),
        k50 / b50, target or ""))


native = lambda code: proc([PY, "-c", code])
keeprun = lambda code: proc([keep, "run", "--trust", trust, image,
                             "python", "-c", code])
keeprun_tpl = lambda code: proc([keep, "run", "--template", "--trust",
                                 trust, image, "python", "-c", code])
# Warm the page cache and both connections' paths; the first keep run
# --template starts its template holder, which listens once it holds
# the template.
native(PRINT1), keeprun(PRINT1), execute(sbx_tpl, PRINT1)
execute(sbx_cold, PRINT1)
before = set(glob.glob("/run/keep-template-*"))
keeprun_tpl(PRINT1)
for i in range(600):  # a holder of this key may be there already
    if set(glob.glob("/run/keep-template-*")) - before:
        break
    time.sleep(0.1)
keeprun_tpl(PRINT1)

n1, kr, ex_cold, ex_tpl, n2, ex_np, kr_tpl = [], [], [], [], [], [], []
for i in range(runs):
    n1.append(native(PRINT1))
    ex_tpl.append(execute(sbx_tpl, PRINT1))
    kr_tpl.append(keeprun_tpl(PRINT1))
    n2.append(native(NUMPY))
    ex_np.append(execute(sbx_tpl, NUMPY))
for i in range(max(3, runs // 5)):  # the cold rows are slow
    kr.append(keeprun(PRINT1))
    ex_cold.append(execute(sbx_cold, PRINT1))

print("| row | keep p50 | keep p99 | baseline p50 | ratio | target |")
print("|---|---|---|---|---|---|")
row("print(1): keep run, cold boot", kr, "native", n1)
row("print(1): execute, cold boot (image without template)", ex_cold,
    "native", n1)
row("print(1): keep run --template", kr_tpl, "native", n1)
row("print(1): execute from the template", ex_tpl, "native", n1,
    "<= 0.5x")
row("numpy ones(3).sum(): execute from the template", ex_np, "native",
    n2, "<= 0.1x")
