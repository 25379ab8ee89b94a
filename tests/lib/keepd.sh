# Sourced by integration tests that drive a real keepd (bash).
# keepd_start POLICY_FILE starts keepd as root with KVM, the stock images
# trusted, a fresh issuer key and that policy; it sets tmp, url, pid.
# KEEPD_YAML_EXTRA, when set, is appended to keepd.yaml (top-level keys);
# KEEPD_IMAGES, when set, names the only images to install ("toolbox js").
# Then: mint SUB CAPS [TTL], req TOKEN METHOD PATH [BODY] (sets code,
# body), jget JSON PY-SUFFIX, ok/bad, keepd_finish (prints the log on
# failure and gives the exit status).
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
B=${B:-build}; KEEP=$B/bin/keep; KEEPD=$B/bin/keepd
# A test that boots no guest says KEEPD_NO_GUEST=1 before sourcing this
# file, and runs on any machine; the others need a guest platform
# (tests/lib/platform.sh).
source tests/lib/platform.sh
if [ "$(id -u)" -ne 0 ]; then echo "SKIP: needs root"; exit 77; fi
getent passwd _keep >/dev/null || useradd --system --no-create-home \
    --home-dir /nonexistent --shell /usr/sbin/nologin _keep || exit 1
tmp=$(mktemp -d); pid=
keepd_cleanup() {
	[ -n "${KEEP_TEST_KEEP:-}" ] && rm -rf "$KEEP_TEST_KEEP" &&
	    cp -r "$tmp" "$KEEP_TEST_KEEP"
	[ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	rm -rf "$tmp"
}
trap keepd_cleanup EXIT
fails=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fails=$((fails+1)); }

keepd_start() {
	local port
	mkdir -p "$tmp/state/images" "$tmp/policy"
	# Hard links where they can be: the python image is hundreds of MiB.
	local imgs=("$B"/images/*.img) i
	if [ -n "${KEEPD_IMAGES:-}" ]; then
		imgs=()
		for i in $KEEPD_IMAGES; do imgs+=("$B/images/$i.img"); done
	fi
	cp -l "${imgs[@]}" "$tmp/state/images/" 2>/dev/null ||
		cp "${imgs[@]}" "$tmp/state/images/"
	cp "$1" "$tmp/policy/test.policy"
	"$KEEP" key generate --out "$tmp" --name issuer >/dev/null || exit 1
	port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	# KEEP_PLATFORM (tests/lib/platform.sh), unless the test names one.
	local platform_line=
	[ -n "${KEEP_PLATFORM:-}" ] &&
	    [[ ${KEEPD_YAML_EXTRA:-} != *platform:* ]] &&
	    platform_line="platform: $KEEP_PLATFORM"
	cat >"$tmp/keepd.yaml" <<EOC
listen:
  address: 127.0.0.1
  port: $port
state_dir: $tmp/state
policy_dir: $tmp/policy
user: _keep
tokens:
  issuer_keys: [ $tmp/issuer.public ]
  max_ttl: 1h
images:
  trusted_keys: [ $(realpath "$B/keys/dev.public") ]
${KEEPD_YAML_EXTRA:-}
$platform_line
EOC
	url=http://127.0.0.1:$port
	keepd_launch
}

keepd_launch() {
	# KEEPD_ARGS: extra options, e.g. -T FILE (the schedules' test clock).
	"$KEEPD" -d ${KEEPD_ARGS:-} -f "$tmp/keepd.yaml" >>"$tmp/log" 2>&1 &
	pid=$!
	keepd_wait_ready || { echo "keepd did not start"; cat "$tmp/log"; exit 1; }
}

# Stop keepd (it stops every process before it exits) and start it again
# on the same state directory.
keepd_restart() {
	kill -TERM "$pid"
	wait "$pid" 2>/dev/null
	keepd_launch
}

# The front answers once every process is up.
keepd_wait_ready() {
	for _ in $(seq "$(slow 150)"); do
		[ "$(curl -s -o /dev/null -w '%{http_code}' "$url/healthz")" = 200 ] &&
		    return 0
		sleep 0.1
	done
	return 1
}

mint() {
	"$KEEP" token mint --key "$tmp/issuer.secret" --sub "$1" --caps "$2" \
	    --ttl "${3:-10m}"
}

# req TOKEN METHOD PATH [BODY] -> sets code and body
req() {
	local t=$1 m=$2 p=$3 d=${4:-}
	body=$(curl -s -o - -w '\n%{http_code}' -X "$m" -H "Authorization: Bearer $t" \
	    ${d:+-H 'Content-Type: application/json' -d "$d"} "$url$p")
	code=${body##*$'\n'}; body=${body%$'\n'*}
}

jget() { python3 -c 'import json,sys; print(json.loads(sys.argv[1])'"$2"')' "$1"; }
# sched_loaded TOKEN: wait until the front has loaded the schedules from
# the store (503 "Schedules are being loaded" before), as after a restart:
# a clock moved before then would pass their next fire unseen.
sched_loaded() {
	for _ in $(seq "$(slow 300)"); do
		req "$1" GET /v1/schedules
		[ "$code" = 200 ] && return 0
		sleep 0.1
	done
	return 1
}
# sched_runs TOKEN ID N [LOOKS]: wait until schedule ID has N runs, looking
# LOOKS times (100 unless given, a tenth of a second apart); 1 if it never does.
sched_runs() {
	for _ in $(seq "$(slow "${4:-100}")"); do
		req "$1" GET "/v1/schedules/$2/runs"
		[ "$code" = 200 ] && [ "$(jget "$body" '["runs"].__len__()')" -ge "$3" ] &&
		    return 0
		sleep 0.1
	done
	return 1
}

keepd_finish() {
	kill -0 "$pid" 2>/dev/null && ok "keepd still running" || bad "keepd died"
	[ $fails -eq 0 ] || { echo "--- keepd log"; tail -n 40 "$tmp/log"; }
	echo "$(basename "$0" .sh): $fails failures"
	[ $fails -eq 0 ]
}

# mark: the number of keepd's next log line; paused CONTEXT FROM-LINE
# waits for the context's pause to end in that line or later: 0 when it
# saved a memory image, 1 when it paused without one (or never).
mark() { echo $(($(wc -l <"$tmp/log") + 1)); }
paused() {
	local l
	for _ in $(seq "$(slow 150)"); do
		# One read of the log for both questions, whole lines only: a
		# line being written reads as "paused" without its end.
		l=$(tail -n +"$2" "$tmp/log"; echo .)
		l=${l%.}
		case $l in *$'\n') ;; *$'\n'*) l=${l%$'\n'*} ;; *) l= ;; esac
		l=$(grep "context $1 paused" <<<"$l")
		if grep -q "memory image" <<<"$l"; then return 0; fi
		if [ -n "$l" ]; then return 1; fi
		sleep 0.1
	done
	return 1
}
