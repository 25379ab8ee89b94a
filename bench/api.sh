#!/usr/bin/env bash
# bench/api: the real appliance (keepd: every process, seccomp, chroots,
# token check, policy decision, revocation check, audit) on loopback.
#  1. authenticated GET /v1/sandboxes/{id} requests per second beside
#     nginx (Debian's package, one worker) serving a 64-byte static file,
#     both measured by wrk in the same run; the ratio (target >= 0.70x).
#  2. POST execute of a trivial Python script, one client: p50, p99 and
#     executions per second, beside `keep run` of the same script on the
#     same image (target: p50 within 1.3x).
#
# usage: bench/api.sh [BUILD_DIR]   (env: DURATION=5 CONNS=128 THREADS=2
#        RUNS=50); needs root, like keepd (no guest). Both servers get
#        the same 128 connections: an API serves many clients at once;
#        nginx measures the same at 32 or 128 here, while keepd, which
#        batches the requests of one pass of its loop, gains from more
#        in flight (CONNS=32 shows the difference).
B=${1:-build}
export B
DURATION=${DURATION:-5}
CONNS=${CONNS:-128}
THREADS=${THREADS:-2}
RUNS=${RUNS:-50}
command -v wrk >/dev/null || { echo "bench/api: wrk is not installed"; exit 1; }
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
KEEPD_NO_GUEST=1 # GETs only: no guest platform needed
source "$(dirname "$0")/../tests/lib/keepd.sh" || exit 1
npid=
trap 'kill $npid 2>/dev/null; keepd_cleanup' EXIT

cat >"$tmp/bench.policy" <<'EOP'
agent "bench" {
	allow sandbox:read, sandbox:write, exec
	exec "python"
}
EOP
keepd_start "$tmp/bench.policy"
tok=$(mint bench sandbox:read,sandbox:write,exec 1h)
req "$tok" POST /v1/sandboxes '{"image":"python"}'
id=$(jget "$body" '["id"]') || { echo "bench/api: no sandbox: $body"; exit 1; }

# nginx: one worker, access log off, a 64-byte static file.
mkdir -p "$tmp/www" "$tmp/nginx"
chmod 755 "$tmp"
head -c 64 /dev/zero | tr '\0' 'k' >"$tmp/www/small.txt"
nport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat >"$tmp/nginx.conf" <<CONF
user root;
worker_processes 1;
daemon off;
pid $tmp/nginx/nginx.pid;
error_log $tmp/nginx/error.log;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_temp_path $tmp/nginx; proxy_temp_path $tmp/nginx;
    fastcgi_temp_path $tmp/nginx; uwsgi_temp_path $tmp/nginx; scgi_temp_path $tmp/nginx;
    server { listen 127.0.0.1:$nport; root $tmp/www; }
}
CONF
"$NGINX" -c "$tmp/nginx.conf" -p "$tmp/nginx" 2>/dev/null &
npid=$!
sleep 0.5

cat >"$tmp/auth.lua" <<LUA
wrk.headers["Authorization"] = "Bearer $tok"
LUA
cat >"$tmp/exec.lua" <<LUA
wrk.method = "POST"
wrk.body = '{"code":"print(1)","language":"python"}'
wrk.headers["Authorization"] = "Bearer $tok"
wrk.headers["Content-Type"] = "application/json"
LUA

rps() { sed -n 's/^Requests\/sec: *\([0-9.]*\).*/\1/p'; }
count() { sed -n 's/^ *\([0-9]*\) requests in.*/\1/p'; }
# CPU time (ns, from schedstat) of each process named: "name ns" lines.
cpu() { for p in "$@"; do echo "$(tr '\0' ' ' </proc/$p/cmdline | sed 's/^keepd: //; s/ .*//') $(cut -d' ' -f1 /proc/$p/schedstat)"; done; }
echo "bench/api: real keepd, wrk -t$THREADS -c$CONNS -d${DURATION}s, loopback, $(nproc) cores"
kids=$(pgrep -P "$pid")
cpu $kids >"$tmp/cpu0"
wrk -t"$THREADS" -c"$CONNS" -d"${DURATION}s" -s "$tmp/auth.lua" \
    "$url/v1/sandboxes/$id" >"$tmp/get.txt"
cpu $kids >"$tmp/cpu1"
nw=$(pgrep -P "$npid" -f 'nginx: worker' | head -n 1)
cpu "$nw" >"$tmp/ncpu0"
wrk -t"$THREADS" -c"$CONNS" -d"${DURATION}s" "http://127.0.0.1:$nport/small.txt" >"$tmp/ngx.txt"
cpu "$nw" >"$tmp/ncpu1"
keep=$(rps <"$tmp/get.txt"); ngx=$(rps <"$tmp/ngx.txt")
printf '%-50s %12s req/s\n' "keepd: GET /v1/sandboxes/{id} (token, policy, audit)" "${keep:-n/a}"
printf '%-50s %12s req/s\n' "nginx: GET /small.txt (64 B static, 1 worker)" "${ngx:-n/a}"
if [ -n "$ngx" ] && [ -n "$keep" ]; then
	awk -v k="$keep" -v n="$ngx" 'BEGIN { printf "ratio keepd/nginx: %.2fx (target >= 0.70x)\n", k / n }'
fi
# Where the time goes: CPU per request in each process, beside nginx's.
paste "$tmp/cpu0" "$tmp/cpu1" | awk -v n="$(count <"$tmp/get.txt")" '
	n > 0 && $4 > $2 { t += ($4 - $2); line = line sprintf(" %s %.1f", $1, ($4 - $2) / 1000 / n) }
	END { if (n > 0) printf "CPU per request, us: keepd %.1f (%s )\n", t / 1000 / n, line }'
paste "$tmp/ncpu0" "$tmp/ncpu1" | awk -v n="$(count <"$tmp/ngx.txt")" '
	n > 0 { printf "CPU per request, us: nginx %.1f\n", ($4 - $2) / 1000 / n }'

# POST execute, one client, then keep run of the same script.
wrk -t1 -c1 -d"${DURATION}s" --latency -s "$tmp/exec.lua" \
    "$url/v1/sandboxes/$id/execute" >"$tmp/exec.txt"
ms() { awk '{ v = $1; if (v ~ /us$/) { sub(/us$/, "", v); v /= 1000 } else if (v ~ /ms$/) sub(/ms$/, "", v); else if (v ~ /s$/) { sub(/s$/, "", v); v *= 1000 } printf "%.2f", v }'; }
p50=$(awk '$1 == "50%" { print $2 }' "$tmp/exec.txt" | ms)
p99=$(awk '$1 == "99%" { print $2 }' "$tmp/exec.txt" | ms)
eps=$(rps <"$tmp/exec.txt")
: >"$tmp/run.ms"
for _ in $(seq "$RUNS"); do
	t0=$(date +%s%N)
	"$KEEP" run --trust "$B/keys/dev.public" "$B/images/python.img" python -c 'print(1)' >/dev/null
	echo $((($(date +%s%N) - t0) / 1000)) >>"$tmp/run.ms"
done
sort -n "$tmp/run.ms" >"$tmp/run.sorted"
n=$(wc -l <"$tmp/run.sorted")
rp50=$(sed -n "$(((n + 1) / 2))p" "$tmp/run.sorted" | awk '{ printf "%.2f", $1 / 1000 }')
rp99=$(sed -n "$(((n * 99 + 99) / 100))p" "$tmp/run.sorted" | awk '{ printf "%.2f", $1 / 1000 }')
printf '%-50s p50 %8s ms  p99 %8s ms  %s exec/s\n' "keepd: POST execute (python print(1))" "$p50" "$p99" "$eps"
printf '%-50s p50 %8s ms  p99 %8s ms  (%s runs)\n' "keep run: the same script, same image" "$rp50" "$rp99" "$n"
awk -v a="$p50" -v b="$rp50" 'BEGIN { printf "ratio execute/keep run at p50: %.2fx (target <= 1.30x)\n", a / b }'
