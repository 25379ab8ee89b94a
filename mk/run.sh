#!/bin/sh
# make run: start keepd in the foreground on the development config
# (etc/keepd.dev.yaml: state under build/run/, API on 127.0.0.1:8421, the
# policy in etc/policy/), with the stock images installed and a token
# issuer key made on first use. Once keepd answers on the address its
# configuration names, prints an admin token and a first curl.
# Ctrl-C stops keepd and all its processes. KEEP_RUN_CONFIG names another
# configuration (the tests use one on a free port).
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
mkdir -p build/run/keys build/run/images
[ -f build/run/keys/issuer.secret ] ||
	"$B/bin/keep" key generate --out build/run/keys --name issuer >/dev/null ||
	exit 1
# The images keepd may boot: the stock ones, signed with the dev key that
# etc/keepd.dev.yaml trusts.
# Hard links where they can be: the python image is hundreds of MiB, and
# keepd never writes its operator's images.
cp -lf "$B"/images/*.img build/run/images/ 2>/dev/null ||
	cp -f "$B"/images/*.img build/run/images/ || exit 1
CONFIG=${KEEP_RUN_CONFIG:-etc/keepd.dev.yaml}
url=$("$B/bin/keepd" -n -v -f "$CONFIG" | sed -n 's/^url: //p')
[ -n "$url" ] || exit 1
token=$("$B/bin/keep" token mint --key build/run/keys/issuer.secret \
    --sub admin --ttl 1h \
    --caps sandbox:read,sandbox:write,exec,artifact:read,artifact:write,policy:read,audit:read,image:read,admin,secret:read,secret:write) ||
	exit 1
(umask 077 && printf '%s\n' "$token" >build/run/admin.token) || exit 1
echo "run: starting keepd in the foreground (Ctrl-C stops it): $CONFIG"
# keepd replaces this shell below (so Ctrl-C and the exit status are its
# own); this child waits until it answers, then says how to use it.
keepd_pid=$$
(
	curl_k=
	case "$url" in https:*) curl_k=-k ;; esac
	i=0
	until [ "$(curl -s $curl_k -o /dev/null -w '%{http_code}' "$url/healthz")" = 200 ]; do
		i=$((i + 1))
		if [ $i -gt 300 ] || ! kill -0 "$keepd_pid" 2>/dev/null; then
			echo "run: keepd is not answering on $url; see its log above" >&2
			exit 1
		fi
		sleep 0.1
	done
	cat <<EOT
run: keepd is serving:
run:   config  $CONFIG
run:   policy  etc/policy/*.policy
run:   state   build/run/ (chroots: build/run/empty, build/run/db)
run:   images  build/run/images/ (hello, toolbox, js, python, python-static, shell, node, machine)
run:   API     $url (served by keepd: front)
run:
run: an admin token, valid for an hour (also in build/run/admin.token):
export KEEP_TOKEN=$token
run: a first sandbox, and JavaScript run in it:
ID=\$(curl -s ${curl_k:+-k }-H "Authorization: Bearer \$KEEP_TOKEN" -d '{"image":"js"}' $url/v1/sandboxes | sed 's/.*"id":"\\([^"]*\\)".*/\\1/'); echo \$ID
curl -s ${curl_k:+-k }-H "Authorization: Bearer \$KEEP_TOKEN" -d '{"code":"console.log(6*7)","language":"javascript"}' $url/v1/sandboxes/\$ID/execute
run: a python sandbox: upload a CSV, run pandas on it, fetch the matplotlib chart it drew:
PY=\$(curl -s ${curl_k:+-k }-H "Authorization: Bearer \$KEEP_TOKEN" -d '{"image":"python"}' $url/v1/sandboxes | sed 's/.*"id":"\\([^"]*\\)".*/\\1/'); echo \$PY
printf 'city,temp\\nParis,12\\nOslo,3\\nParis,14\\n' | curl -s ${curl_k:+-k }-H "Authorization: Bearer \$KEEP_TOKEN" --data-binary @- "$url/v1/sandboxes/\$PY/files/write?path=temps.csv"
curl -s ${curl_k:+-k }-H "Authorization: Bearer \$KEEP_TOKEN" $url/v1/sandboxes/\$PY/execute -d '{"language":"python","code":"import pandas as pd\\nd = pd.read_csv(\\"temps.csv\\").groupby(\\"city\\").mean()\\nprint(d)\\nd.plot.bar().figure.savefig(\\"chart.png\\")"}'
curl -s ${curl_k:+-k }-H "Authorization: Bearer \$KEEP_TOKEN" -o chart.png "$url/v1/sandboxes/\$PY/files/read?path=chart.png"
EOT
) &
exec "$B/bin/keepd" -d -f "$CONFIG"
