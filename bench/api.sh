#!/bin/sh
# bench/api: authenticated GET /v1/sandboxes/{id} through the real front
# (keep-api-testserver: the epoll loop, parser, router, token check over
# the in-memory backend) beside nginx serving a small static file, both
# single-process on loopback, measured by wrk in the same run. Then POST
# execute latency (p50/p99) through the front; `keep run` of the same
# script beside it once the VMM can run it.
#
# usage: bench/api.sh [BUILD_DIR]   (env: DURATION=5 CONNS=32 THREADS=2)
B=${1:-build}
DURATION=${DURATION:-5}
CONNS=${CONNS:-32}
THREADS=${THREADS:-2}
command -v wrk >/dev/null || { echo "bench/api: wrk is not installed"; exit 1; }
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
tmp=$(mktemp -d)
chmod 755 "$tmp"
spid=; npid=
cleanup() {
	[ -n "$spid" ] && kill "$spid" 2>/dev/null
	[ -n "$npid" ] && kill "$npid" 2>/dev/null
	wait 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

"$B/bin/keep-api-testserver" -p 0 -P "$tmp/port" -t benchtoken 2>/dev/null &
spid=$!
for _ in $(seq 50); do [ -s "$tmp/port" ] && break; sleep 0.1; done
port=$(cat "$tmp/port")
id=$(curl -s -H 'Authorization: Bearer benchtoken' -d '{"image":"python"}' \
    "http://127.0.0.1:$port/v1/sandboxes" | sed 's/.*"id":"\([^"]*\)".*/\1/')

# nginx: one worker, access log off, a 64-byte static file.
mkdir -p "$tmp/www" "$tmp/nginx"
head -c 64 /dev/zero | tr '\0' 'k' > "$tmp/www/small.txt"
nport=$((port + 1))
user=; [ "$(id -u)" = 0 ] && user="user root;"
cat > "$tmp/nginx.conf" <<CONF
$user
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

cat > "$tmp/auth.lua" <<'LUA'
wrk.headers["Authorization"] = "Bearer benchtoken"
LUA
cat > "$tmp/exec.lua" <<'LUA'
wrk.method = "POST"
wrk.body = '{"code":"print(1)","language":"python"}'
wrk.headers["Authorization"] = "Bearer benchtoken"
wrk.headers["Content-Type"] = "application/json"
LUA

rps() { sed -n 's/^Requests\/sec: *\([0-9.]*\).*/\1/p'; }
echo "bench/api: wrk -t$THREADS -c$CONNS -d${DURATION}s, loopback, $(nproc) cores"
keep=$(wrk -t"$THREADS" -c"$CONNS" -d"${DURATION}s" -s "$tmp/auth.lua" \
    "http://127.0.0.1:$port/v1/sandboxes/$id" | rps)
if kill -0 "$npid" 2>/dev/null; then
	ngx=$(wrk -t"$THREADS" -c"$CONNS" -d"${DURATION}s" \
	    "http://127.0.0.1:$nport/small.txt" | rps)
else
	ngx=
	echo "nginx did not start: $(tail -n 2 "$tmp/nginx/error.log" 2>/dev/null)"
fi
printf '%-46s %12s req/s\n' "keep front: GET /v1/sandboxes/{id} (auth)" "$keep"
printf '%-46s %12s req/s\n' "nginx: GET /small.txt (64 B static)" "${ngx:-n/a}"
if [ -n "$ngx" ] && [ -n "$keep" ]; then
	awk -v k="$keep" -v n="$ngx" 'BEGIN { printf "ratio keep/nginx: %.2fx (target >= 0.70x)\n", k / n }'
fi

wrk -t1 -c1 -d"${DURATION}s" --latency -s "$tmp/exec.lua" \
    "http://127.0.0.1:$port/v1/sandboxes/$id/execute" > "$tmp/exec.txt"
p50=$(awk '$1 == "50%" { print $2 }' "$tmp/exec.txt")
p99=$(awk '$1 == "99%" { print $2 }' "$tmp/exec.txt")
eps=$(rps < "$tmp/exec.txt")
echo "POST execute through the front (fake backend): p50 $p50 p99 $p99, $eps exec/s"
echo "keep run baseline: measured by bench/boot once the VMM serves execute;" \
    "the fake backend's execute does no work, so this is the front's share"
