#!/bin/sh
# make run: start keepd in the foreground on the development config
# (etc/keepd.dev.yaml: state under build/run/, API on 127.0.0.1:8421, the
# policy in etc/policy/). Ctrl-C stops keepd and all its processes.
B=${1:-build}
cd "$(dirname "$0")/.." || exit 1
if [ "$(id -u)" -eq 0 ]; then
	if ! getent passwd _keep >/dev/null; then
		echo "run: creating the system user _keep"
		useradd --system --no-create-home --home-dir /nonexistent \
		    --shell /usr/sbin/nologin _keep || exit 1
	fi
else
	echo "run: not root: keepd runs without chroot and user change" \
	    "(seccomp still applies)" >&2
fi
mkdir -p build/run
"$B/bin/keepd" -n -f etc/keepd.dev.yaml || exit 1
cat <<EOT
run: starting keepd in the foreground (Ctrl-C stops it):
run:   config  etc/keepd.dev.yaml
run:   policy  etc/policy/*.policy
run:   state   build/run/ (chroots: build/run/empty, build/run/db)
run:   API     127.0.0.1:8421 (served by keepd: front)
run: in another terminal: ps -o pid,user,args -C keepd
EOT
exec "$B/bin/keepd" -d -f etc/keepd.dev.yaml
