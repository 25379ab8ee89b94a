#!/usr/bin/env bash
# A Go program in the machine image (tests/guests/go/main.go), built
# with Debian's Go, static (CGO_ENABLED=0) and as `go build` makes it
# here (cgo: linked to the image's glibc), each run by keep run from the
# workspace beside the same binary run natively, compared line by line:
# goroutine preemption and garbage collection beside goroutines that
# never call (signals to one thread), os/exec (waitid WNOWAIT), a pipe
# between two children, a child killed at its context's deadline, HTTP
# on loopback through Go's epoll poller, files, signal.Notify. Then
# through keepd: a page fetched by name through the guest's resolver and
# egress, a name no rule allows refused.
source "$(dirname "$0")/../lib/keepd.sh"
I=$B/images/machine.img; K=$B/keys/dev.public
export GOCACHE=$PWD/$B/gocache GO111MODULE=off
if ! command -v go >/dev/null; then
	bad "go is not installed (mk/images.mk's DEPS_PKGS installs golang-go)"
	exit 1
fi
ws=$tmp/ws; nat=$tmp/native; mkdir "$ws" "$nat"
for kind in static cgo; do
	cgo=0; [ "$kind" = cgo ] && cgo=1
	if ! CGO_ENABLED=$cgo go build -o "$tmp/goprog" tests/guests/go/main.go; then
		bad "go build ($kind)"
		continue
	fi
	cp "$tmp/goprog" "$ws/"; cp "$tmp/goprog" "$nat/"
	want=$(cd "$nat" && env -i PATH=/usr/bin:/bin ./goprog 2>&1; echo "rc=$?")
	got=$("$KEEP" run --workspace "$ws" --trust "$K" "$I" bash -c ./goprog 2>&1 </dev/null; echo "rc=$?")
	if [ "$want" == "$got" ] && [[ $want == *preempted* ]]; then
		ok "a Go program ($kind): the same as natively ($(wc -l <<<"$got") lines)"
	else
		bad "a Go program ($kind): native '$want' guest '$got'"
	fi
done

# Through keepd, as an agent's tool: the same binaries in a machine
# sandbox fetch a page from a server on 127.0.0.1 by a name that
# egress.hosts_file maps there and a rule allows, through the guest's
# resolver (Go's own, static; glibc's, cgo) and egress; a name no rule
# allows does not resolve.
mkdir -p "$tmp/www"; echo "hello from the host" >"$tmp/www/x"
python3 -m http.server --bind 127.0.0.1 --directory "$tmp/www" 0 >"$tmp/http.out" 2>&1 &
hpid=$!
trap 'kill $hpid 2>/dev/null; keepd_cleanup' EXIT
for _ in $(seq 50); do
	hp=$(sed -n 's/.*port \([0-9]*\).*/\1/p' "$tmp/http.out" | head -n 1)
	[ -n "$hp" ] && break
	sleep 0.1
done
echo "127.0.0.1 allowed.test" >"$tmp/hosts"
cat >"$tmp/test.policy" <<EOP
agent "dev" {
	allow sandbox:read, sandbox:write, exec, artifact:write
	exec "bash"
	egress "allowed.test":$hp private
	timeout 120s
}
EOP
KEEPD_IMAGES="machine" KEEPD_YAML_EXTRA="egress:
  hosts_file: $tmp/hosts" keepd_start "$tmp/test.policy"
tok=$(mint dev sandbox:read,sandbox:write,exec,egress,artifact:write)
req "$tok" POST /v1/sandboxes '{"image":"machine"}'
sbx=$(jget "$body" '["id"]' 2>/dev/null)
want=$'resolved: true\nget: 200 "hello from the host\\n"\na name no rule allows resolves: false'
for kind in static cgo; do
	cgo=0; [ "$kind" = cgo ] && cgo=1
	CGO_ENABLED=$cgo go build -o "$tmp/goprog" tests/guests/go/main.go ||
	    { bad "go build ($kind) for the sandbox"; continue; }
	code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $tok" \
	    --data-binary @"$tmp/goprog" "$url/v1/sandboxes/$sbx/files/write?path=/goprog-$kind")
	[ "$code" = 200 ] || bad "files/write goprog-$kind: $code"
	req "$tok" POST "/v1/sandboxes/$sbx/commands/run" \
	    "$(python3 -c 'import json,sys; print(json.dumps({"cmd": "bash", "args": ["-c", sys.argv[1]]}))' \
	    "chmod +x goprog-$kind && ./goprog-$kind fetch http://allowed.test:$hp/x other.test")"
	got=$(jget "$body" '["stdout"]' 2>/dev/null)
	[ "$got" = "$want" ] &&
	    ok "a Go program ($kind) in a sandbox fetches a page by an allowed name; a name no rule allows does not resolve" ||
	    bad "Go fetch ($kind): $code $body"
done
keepd_finish
