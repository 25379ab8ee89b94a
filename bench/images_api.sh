#!/usr/bin/env bash
# bench/images_api: python3 -c 'print(1)' through keepd's API
# (POST commands/run, one client, one run after another) from the python
# image and from the machine image, taken in alternation, medians of
# curl's total time: the machine image's 22,600 files must not make a
# run slower than the python image's 8,700 do (issue 30). Both images
# start python3 as clones of their template once it is ready; the first
# runs (warm-up, not counted) wait for it.
#
# usage: bench/images_api.sh [BUILD_DIR]   (env: RUNS=30, CMD=python3 or
#        python; needs root and `make images`, like the integration tests
#        that start keepd)
B=${1:-build}
export B
RUNS=${RUNS:-30}
CMD=${CMD:-python3}
export KEEPD_IMAGES="python machine"
source "$(dirname "$0")/../tests/lib/keepd.sh" || exit 1
trap keepd_cleanup EXIT

cat >"$tmp/bench.policy" <<EOP
agent "bench" {
	allow sandbox:read, sandbox:write, exec
	exec "$CMD"
	timeout 60s
}
EOP
keepd_start "$tmp/bench.policy" >/dev/null 2>&1
tok=$(mint bench sandbox:read,sandbox:write,exec 1h)
declare -A sbx
for img in python machine; do
	req "$tok" POST /v1/sandboxes "{\"image\":\"$img\"}"
	sbx[$img]=$(jget "$body" '["id"]') || { echo "bench/images_api: no $img sandbox: $body"; exit 1; }
done
run="{\"cmd\": \"$CMD\", \"args\": [\"-c\", \"print(1)\"]}"
once() { # IMAGE: prints curl's total time in ms, or fails
	local out
	out=$(curl -s -w '\n%{time_total}' -X POST -H "Authorization: Bearer $tok" \
	    -H 'Content-Type: application/json' -d "$run" \
	    "$url/v1/sandboxes/${sbx[$1]}/commands/run")
	case $out in *'"stdout":"1\n"'*|*'"stdout": "1\n"'*) ;; *) return 1;; esac
	awk -v t="${out##*$'\n'}" 'BEGIN {printf "%.3f\n", t * 1000}'
}
for _ in 1 2 3 4 5; do once python >/dev/null; once machine >/dev/null; sleep 0.2; done
: >"$tmp/python"; : >"$tmp/machine"
for ((i = 0; i < RUNS; i++)); do
	once python >>"$tmp/python" || { echo "bench/images_api: a python run failed"; exit 1; }
	once machine >>"$tmp/machine" || { echo "bench/images_api: a machine run failed"; exit 1; }
done
median() { sort -n | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
p=$(median <"$tmp/python"); m=$(median <"$tmp/machine")
echo "bench/images_api: $RUNS runs each, in alternation, medians"
echo "| $CMD -c 'print(1)' via the API | python image | machine image | machine/python |"
echo "|---|---|---|---|"
printf '| commands/run | %s ms | %s ms | %s |\n' "$p" "$m" "$(awk -v a="$m" -v b="$p" 'BEGIN {printf "%.2fx", a / b}')"
