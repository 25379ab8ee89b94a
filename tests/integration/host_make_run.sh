#!/usr/bin/env bash
# What a newcomer does: `make run` (mk/run.sh), then the printed commands.
# The token file is private, the token and commands are printed only once
# keepd answers, with the address its configuration names (here a free
# port, not the default 8421), the printed curl commands create a sandbox
# and run JavaScript in it, then run pandas in a python sandbox on a CSV
# they upload and fetch the chart it drew, and SIGINT stops every process.
# run-tests: alone (make run's fixed port 8421, and it counts its session's processes)
set -u
cd "$(dirname "$0")/../.."
B=${B:-build}
source tests/lib/platform.sh # a guest platform: kvm or trap, or a loud skip
if [ "$(id -u)" -ne 0 ]; then echo "SKIP: needs root"; exit 77; fi
fails=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fails=$((fails+1)); }
log=$(mktemp); chartdir=$(mktemp -d)
conf=$(mktemp --suffix=.yaml)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
sed "s/^  port: 8421\$/  port: $port/" etc/keepd.dev.yaml >"$conf"
grep -q "port: $port" "$conf" || { echo "FAIL: no port in etc/keepd.dev.yaml"; exit 1; }
KEEP_RUN_CONFIG=$conf setsid sh mk/run.sh "$B" >"$log" 2>&1 &
pid=$!
trap 'kill -INT -$pid 2>/dev/null; rm -rf "$log" "$conf" "$chartdir"' EXIT
# The moment the token is printed, keepd must answer.
for _ in $(seq 300); do grep -q '^export KEEP_TOKEN=' "$log" && break; sleep 0.05; done
hz=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/healthz")
[ "$hz" = 200 ] && ok "keepd answers when the token is printed" ||
    bad "token printed before keepd answers (healthz: $hz): $(cat "$log")"
grep -q "API     http://127.0.0.1:$port " "$log" && grep -q "127.0.0.1:$port/v1/sandboxes" "$log" &&
    ! grep -q 8421 "$log" && ok "the printed address is the configured one (port $port)" ||
    bad "printed address: $(grep -E 'API|curl' "$log")"
[ "$(stat -c %a build/run/admin.token)" = 600 ] && ok "build/run/admin.token is mode 0600" ||
    bad "admin.token mode $(stat -c %a build/run/admin.token)"
grep -q "^export KEEP_TOKEN=$(cat build/run/admin.token)\$" "$log" && ok "the printed token is the file's" ||
    bad "token not printed"
export KEEP_TOKEN=$(cat build/run/admin.token)
eval "$(grep '^ID=' "$log")" >/dev/null
out=$(eval "$(grep '^curl .*execute$' "$log")")
[[ $out == *'"stdout":"42\n"'* ]] && ok "the printed curl commands run JavaScript: $out" ||
    bad "printed commands: ID=$ID out=$out; $(cat "$log")"
# The python example (issue 18): pandas on an uploaded CSV, and the
# chart it drew fetched back; run where chart.png may land.
out=$(cd "$chartdir" && eval "$(grep '^PY=' "$log")" >/dev/null &&
	eval "$(grep '^printf .*files/write' "$log")" >/dev/null &&
	eval "$(grep '^curl .*/execute -d ' "$log")" &&
	eval "$(grep '^curl .*files/read' "$log")")
[[ $out == *'"stdout":"       temp\ncity       \nOslo    3.0\nParis  13.0\n"'* ]] &&
	ok "the printed curl commands run pandas on an uploaded CSV" || bad "python example: $out"
[ "$(head -c 8 "$chartdir/chart.png" 2>/dev/null | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] &&
	ok "and fetch the PNG chart it drew" || bad "chart.png: $(head -c 100 "$chartdir/chart.png" 2>&1)"
kill -INT -$pid
# Its session: keepd and every process it started.
for _ in $(seq 100); do pgrep -s $pid >/dev/null || break; sleep 0.1; done
! pgrep -s $pid >/dev/null && ok "Ctrl-C stops every process" ||
    bad "processes left: $(pgrep -a -s $pid)"
echo "host_make_run: $fails failures"
[ $fails -eq 0 ]
