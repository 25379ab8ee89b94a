#!/usr/bin/env bash
# A Go program in the machine image (tests/guests/go/main.go), built
# with Debian's Go, static (CGO_ENABLED=0) and as `go build` makes it
# here (cgo: linked to the image's glibc), each run by keep run from the
# workspace beside the same binary run natively, compared line by line:
# goroutine preemption and garbage collection beside goroutines that
# never call (signals to one thread), os/exec (waitid WNOWAIT), a pipe
# between two children, a child killed at its context's deadline, HTTP
# on loopback through Go's epoll poller, files, signal.Notify.
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
echo "$(basename "$0" .sh): $fails failures"
[ $fails -eq 0 ]
