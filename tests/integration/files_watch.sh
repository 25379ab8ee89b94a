#!/usr/bin/env bash
# files/watch: an event stream of the paths created, modified and
# deleted under a workspace directory (subdirectories too), from an
# execute, runs and the files API; refused without artifact:read or for
# a path that is no directory; stopped at the vmm when the client goes;
# ended when the sandbox is deleted. Every wait is a bounded poll.
source "$(dirname "$0")/../lib/keepd.sh"

cat >"$tmp/test.policy" <<'EOP'
agent "alice" {
	allow sandbox:read, sandbox:write, exec, artifact:read, artifact:write
	exec "python", "cp", "mkdir", "rm"
}
EOP
keepd_start "$tmp/test.policy"
alice=$(mint alice sandbox:read,sandbox:write,exec,artifact:read,artifact:write 30m)
blind=$(mint alice sandbox:read,exec 30m)

# wait_for FILE TEXT: bounded poll until FILE holds TEXT.
wait_for() {
	for _ in $(seq 100); do
		grep -qF -- "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}
watch() { # watch TOKEN SANDBOX PATH OUT: a client in the background
	curl -sN -H "Authorization: Bearer $1" \
	    "$url/v1/sandboxes/$2/files/watch?path=$3" >"$4" 2>&1 &
}
run() { # run CMD ARG...: a command in the toolbox sandbox, exit 0
	local args
	args=$(python3 -c 'import json,sys; print(json.dumps(sys.argv[1:]))' "${@:2}")
	req "$alice" POST "/v1/sandboxes/$sbx/commands/run" "{\"cmd\":\"$1\",\"args\":$args}"
	[ "$code" = 200 ] && [ "$(jget "$body" '["exit_code"]')" = 0 ] || bad "$*: $code $body"
}

req "$alice" POST /v1/sandboxes '{"image":"toolbox"}'
[ "$code" = 201 ] || bad "sandbox: $code $body"
sbx=$(jget "$body" '["id"]')
req "$alice" POST "/v1/sandboxes/$sbx/files/mkdir?path=/data"
[ "$code" = 201 ] || bad "mkdir: $code $body"

req "$blind" GET "/v1/sandboxes/$sbx/files/watch?path=/data"
[ "$code" = 403 ] && ok "no artifact:read: 403" || bad "blind: $code $body"
req "$alice" GET "/v1/sandboxes/$sbx/files/watch?path=/nowhere"
[ "$code" = 404 ] && ok "no such directory: 404" || bad "nowhere: $code $body"
printf 'x' >"$tmp/f"
curl -s -o /dev/null -H "Authorization: Bearer $alice" --data-binary @"$tmp/f" \
    "$url/v1/sandboxes/$sbx/files/write?path=/data/plain"
req "$alice" GET "/v1/sandboxes/$sbx/files/watch?path=/data/plain"
[ "$code" = 400 ] && ok "a file is not a directory: 400" || bad "file: $code $body"

# An execute (Python) writes a file: the watch sees it.
if [ -e "$B/images/python.img" ]; then
	req "$alice" POST /v1/sandboxes '{"image":"python"}'
	py=$(jget "$body" '["id"]')
	watch "$alice" "$py" / "$tmp/ev0"; c0=$!
	wait_for "$tmp/ev0" "event: ready" || bad "ready 0: $(cat "$tmp/ev0")"
	req "$alice" POST "/v1/sandboxes/$py/execute" \
	    '{"code":"open(\"by-execute.txt\",\"w\").write(\"hi\")","language":"python"}'
	[ "$code" = 200 ] || bad "execute: $code $body"
	wait_for "$tmp/ev0" '{"path":"/by-execute.txt","type":"file"}' &&
	    grep -B1 '/by-execute.txt' "$tmp/ev0" | grep -q "event: created" &&
	    ok "a file created by an execute is seen: created" || bad "execute: $(cat "$tmp/ev0")"
	kill "$c0"; wait "$c0" 2>/dev/null
else
	bad "no python image (make images): the execute case cannot run"
fi

watch "$alice" "$sbx" /data "$tmp/ev1"; c1=$!
wait_for "$tmp/ev1" "event: ready" && ok "the stream starts with ready" || bad "ready: $(cat "$tmp/ev1")"
grep -qF 'data: {"path":"/data"}' "$tmp/ev1" || bad "ready data: $(cat "$tmp/ev1")"
run cp data/plain data/new.txt
wait_for "$tmp/ev1" '{"path":"/data/new.txt","type":"file"}' &&
    ok "a file created by a run is seen" || bad "cp: $(cat "$tmp/ev1")"
run mkdir data/sub
wait_for "$tmp/ev1" '{"path":"/data/sub","type":"dir"}' || bad "mkdir sub: $(cat "$tmp/ev1")"
run cp data/plain data/sub/deep.txt
wait_for "$tmp/ev1" '{"path":"/data/sub/deep.txt","type":"file"}' &&
    ok "a new subdirectory is watched too" || bad "deep: $(cat "$tmp/ev1")"
run rm data/new.txt
wait_for "$tmp/ev1" "event: deleted" && ok "a deletion is seen" || bad "rm: $(cat "$tmp/ev1")"
curl -s -o /dev/null -H "Authorization: Bearer $alice" --data-binary @"$tmp/f" \
    "$url/v1/sandboxes/$sbx/files/write?path=/data/plain"
wait_for "$tmp/ev1" '{"path":"/data/plain","type":"file"}' &&
    grep -B1 '"/data/plain"' "$tmp/ev1" | grep -q "event: modified" &&
    ok "a rewrite through the API is seen: modified" || bad "modified: $(cat "$tmp/ev1")"

# The client goes: the vmm stops watching.
kill "$c1"; wait "$c1" 2>/dev/null
wait_for "$tmp/log" "stopped by the front" && ok "a client that goes stops its watch" ||
    bad "client gone: $(grep -i watch "$tmp/log")"

# At most four watches a sandbox: a fifth is 429.
cs=
for i in 1 2 3 4; do
	watch "$alice" "$sbx" /data "$tmp/lim$i"; cs="$cs $!"
	wait_for "$tmp/lim$i" "event: ready" || bad "watch $i: $(cat "$tmp/lim$i")"
done
req "$alice" GET "/v1/sandboxes/$sbx/files/watch?path=/data"
[ "$code" = 429 ] && ok "a fifth watch on a sandbox: 429" || bad "fifth: $code $body"
kill $cs; wait $cs 2>/dev/null
for _ in $(seq 100); do
	[ "$(grep -c "stopped by the front" "$tmp/log")" -ge 5 ] && break
	sleep 0.1
done

# The sandbox goes: the stream ends (and keep api files watch with it).
watch "$alice" "$sbx" / "$tmp/ev2"; c2=$!
wait_for "$tmp/ev2" "event: ready" || bad "ready 2: $(cat "$tmp/ev2")"
"$KEEP" api --url "$url" --token "$alice" files watch "$sbx" /data >"$tmp/cli" 2>&1 &
c3=$!
wait_for "$tmp/cli" "ready /data" || bad "cli ready: $(cat "$tmp/cli")"
run cp data/plain data/cli.txt
wait_for "$tmp/cli" "created /data/cli.txt" && ok "keep api files watch prints it" ||
    bad "cli: $(cat "$tmp/cli")"
req "$alice" DELETE "/v1/sandboxes/$sbx"
wait_for "$tmp/ev2" "event: end" &&
    ok "deleting the sandbox ends the stream ($(grep -A1 'event: end' "$tmp/ev2" | tail -1))" ||
    bad "end: $(cat "$tmp/ev2")"
for _ in $(seq 50); do kill -0 "$c2" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$c2" 2>/dev/null; then
	bad "the stream did not close"
	kill "$c2"
else
	ok "and the response is complete"
fi

for _ in $(seq 50); do kill -0 "$c3" 2>/dev/null || break; sleep 0.1; done
wait "$c3" && grep -q "^end the sandbox is gone" "$tmp/cli" &&
    ok "keep api files watch ends with the stream, exit 0" || bad "cli end: $(cat "$tmp/cli")"

keepd_finish
