#!/usr/bin/env bash
# bench/templates: templates (docs/templates.md), each figure beside its
# baseline measured in the same run.
#  1. python -c 'print(1)': Debian's /usr/bin/python3.11 on the host (the
#     interpreter the python image holds) beside keep run (a cold boot),
#     execute through the API on an image without a template (cold),
#     keep run --template (a clone from the user's template holder) and
#     execute from the python image's template (target: p50 <= 0.5x
#     native);
#  2. import numpy as np; print(np.ones(3).sum()): native beside execute
#     from the template, which imported numpy (target <= 0.1x);
#  3. an empty template's clone beside the bare KVM floor (bench/tplclone,
#     target <= 1.2x), and the host memory a clone adds: the empty one's,
#     and a python clone's (its private dirty pages while it sleeps).
#
# usage: bench/templates.sh [BUILD_DIR]   (env: RUNS=40); needs root and
#        /dev/kvm, like keepd.
B=${1:-build}
export B
RUNS=${RUNS:-40}
source "$(dirname "$0")/../tests/lib/keepd.sh" || exit 1

cat >"$tmp/bench.policy" <<'EOP'
agent "bench" {
	allow image:read, image:write, sandbox:read, sandbox:write, exec
	exec "python"
}
EOP
# The same image without its template, for the cold execute row (an
# operator image: too large for an upload).
mkdir -p "$tmp/state/images"
grep -v '^file /etc/keep/template=' images/python.manifest >"$tmp/cold.manifest"
"$KEEP" image build --name pycold --version 3.11 --memory 1G --defer-hashes \
    --manifest "$tmp/cold.manifest" \
    --file /.cache/matplotlib/fontlist-v330.json="$B/stock/mpl/fontlist-v330.json" \
    -o "$tmp/state/images/pycold.img" >/dev/null &&
    "$KEEP" image sign --key "$B/keys/dev.secret" "$tmp/state/images/pycold.img" >/dev/null ||
    { echo "bench/templates: cannot build the cold image"; exit 1; }
keepd_start "$tmp/bench.policy"
tok=$(mint bench image:read,image:write,sandbox:read,sandbox:write,exec 1h)

req "$tok" POST /v1/sandboxes '{"image":"python"}'
sbx=$(jget "$body" '["id"]')
req "$tok" POST /v1/sandboxes '{"image":"pycold"}'
cold=$(jget "$body" '["id"]')

# The first execute boots the template; wait until it is held.
req "$tok" POST "/v1/sandboxes/$sbx/execute" '{"code":"print(1)","language":"python"}'
for _ in $(seq 1200); do
	grep -q 'template python python .*: ready' "$tmp/log" && break
	sleep 0.1
done
grep 'template python python .*: ready' "$tmp/log" | sed 's/^keepd\/vmm: /# /'

echo "bench/templates: $RUNS runs each (cold rows: fewer), alternating with the baseline"
echo
before=$(ls /run/keep-template-* 2>/dev/null)
python3 bench/templates.py "$url" "$tok" "$sbx" "$cold" "$KEEP" \
    "$B/images/python.img" "$B/keys/dev.public" "$RUNS" || exit 1
# The keep run template holder this run started: stopped by its pid.
for s in $(comm -13 <(echo "$before") <(ls /run/keep-template-* 2>/dev/null) | grep -v '\.lock$'); do
	hp=$(ss -xlpn 2>/dev/null | grep -F "$s " | sed -n 's/.*pid=\([0-9]*\).*/\1/p' | head -n 1)
	[ -n "$hp" ] && kill "$hp"
	rm -f "$s" "$s.lock"
done

# A python clone's own memory: an execute that sleeps, in the background.
req "$tok" POST "/v1/sandboxes/$sbx/execute/background" \
    '{"code":"import time; print(1); time.sleep(3)","language":"python"}'
vp=
for _ in $(seq 100); do
	vp=$(grep 'python in sandbox.*in the background, from its template' "$tmp/log" |
	    tail -n 1 | sed -n 's/.*vm pid \([0-9]*\).*/\1/p')
	[ -n "$vp" ] && break
	sleep 0.1
done
sleep 1
pykib=$(awk '/^Private_Dirty:/ { print $2 }' "/proc/$vp/smaps_rollup" 2>/dev/null)
tplkib=$(grep 'template python python .*: ready' "$tmp/log" | sed -n 's/.*holding \([0-9]*\) KiB.*/\1/p' | tail -n 1)

"$B/bench/tplclone" "$B/guests/ready_empty" "$B/bench/kvm_floor" "$RUNS" >"$tmp/clone" || exit 1
v() { awk -v k="$1" '$1 == k { print $2 }' "$tmp/clone"; }
awk -v c="$(v clone_p50_ns)" -v c99="$(v clone_p99_ns)" -v f="$(v floor_p50_ns)" -v f99="$(v floor_p99_ns)" 'BEGIN {
	printf "| empty template clone (fork, VM rebuilt, run to exit, wait) | %.2f ms | %.2f ms | KVM floor %.2f ms (p99 %.2f) | %.2fx | <= 1.2x |\n",
	    c / 1e6, c99 / 1e6, f / 1e6, f99 / 1e6, c / f }'
echo
echo "| host memory | KiB |"
echo "|---|---|"
echo "| added by an empty template's clone (private dirty, p50) | $(v clone_private_kib) |"
echo "| added by a python clone after print(1), sleeping (private dirty) | ${pykib:-n/a} |"
echo "| the python template's guest memory (held once, shared by its clones) | ${tplkib:-n/a} |"
