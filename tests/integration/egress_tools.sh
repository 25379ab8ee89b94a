#!/usr/bin/env bash
# An agent's network tools, end to end in the machine image through a
# real keepd (docs/egress.md "Names and connections", docs/vmm.md "Added
# certificates"): pip installs a wheel and an sdist from an HTTPS package
# index, git clones over HTTPS from `git http-backend`, npm installs from
# a registry, curl and requests.get fetch a page, all from one HTTPS
# server on 127.0.0.1 whose certificate a test CA made here issued, under
# names egress.hosts_file maps to 127.0.0.1 and rules allow with
# `private`. Without guest.ca_file the same commands fail with a
# certificate error, so the trust comes from keepd's configuration (added
# by a reload); a name no rule allows and a port no rule lists are
# refused, the run's result saying egress. keep run --ca-file gives a
# run the same files. Offline: nothing reaches any other host (pip
# --no-build-isolation, every index and registry named).
# run-tests: alone (a clone of the machine image's template asserted:
# another keepd's hard link to the image changes its ctime, and the vmm
# drops the template under it)
set -u
source "$(dirname "$0")/../lib/keepd.sh"
[ -f "$B/images/machine.img" ] || { echo "SKIP: no machine image"; exit 77; }
for t in openssl git npm; do
	command -v $t >/dev/null || { echo "SKIP: no $t"; exit 77; }
done
srv=$tmp/srv; mkdir -p "$srv/www/simple/keeptool" "$srv/www/simple/keepsdist" \
    "$srv/www/files" "$srv/npm" "$srv/git" "$tmp/build"

# A test CA and a leaf for every name the server answers to.
names="pypi.test git.test npm.test web.test"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout "$tmp/ca.key" -out "$tmp/ca.pem" -days 2 -subj "/CN=keep test CA" \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign \
    2>/dev/null || { echo "FAIL: the CA"; exit 1; }
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout "$tmp/leaf.key" -out "$tmp/leaf.csr" -subj "/CN=pypi.test" 2>/dev/null &&
printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth\n' \
    "$(for n in $names; do printf 'DNS:%s,' $n; done | sed 's/,$//')" >"$tmp/leaf.ext" &&
openssl x509 -req -in "$tmp/leaf.csr" -CA "$tmp/ca.pem" -CAkey "$tmp/ca.key" \
    -CAcreateserial -days 2 -extfile "$tmp/leaf.ext" -out "$tmp/leaf.pem" 2>/dev/null ||
    { echo "FAIL: the leaf"; exit 1; }

# keep run --ca-file: the same files, for one run without keepd; a file
# that is not certificates alone is refused before the boot.
I=$B/images/machine.img
got=$("$KEEP" run --trust "$B/keys/dev.public" --ca-file "$tmp/ca.pem" "$I" bash -c \
    'cat /etc/keep/ca.pem; tail -n '"$(wc -l <"$tmp/ca.pem")"' /etc/ssl/certs/ca-certificates.crt;
	python3 -c "import ssl; print(any(c[\"subject\"] == (((\"commonName\", \"keep test CA\"),),) for c in ssl.create_default_context().get_ca_certs()))"' 2>&1)
[ "$got" = "$(cat "$tmp/ca.pem" "$tmp/ca.pem")"$'\nTrue' ] &&
    ok "keep run --ca-file: /etc/keep/ca.pem and the end of Debian's bundle hold the CA; python's ssl trusts it" ||
    bad "keep run --ca-file: $got"
got=$("$KEEP" run --trust "$B/keys/dev.public" "$I" bash -c 'wc -c </etc/keep/ca.pem' 2>&1)
[ "$got" = 0 ] && ok "keep run without it: /etc/keep/ca.pem is empty" || bad "keep run without: $got"
"$KEEP" run --trust "$B/keys/dev.public" --ca-file "$tmp/ca.key" "$I" true >"$tmp/run.out" 2>&1
rc=$?
[ $rc = 2 ] && grep -q "not PEM certificates alone" "$tmp/run.out" &&
    ok "keep run --ca-file of a private key: refused (exit 2), saying why" ||
    bad "keep run --ca-file key: rc $rc $(cat "$tmp/run.out")"
# The node image: node reads the added certificates through
# NODE_EXTRA_CA_CERTS without a warning (it prints one for a file it
# cannot load).
if [ -f "$B/images/node.img" ]; then
	got=$("$KEEP" run --trust "$B/keys/dev.public" --ca-file "$tmp/ca.pem" "$B/images/node.img" \
	    node -e 'console.log(process.env.NODE_EXTRA_CA_CERTS, require("fs").readFileSync(process.env.NODE_EXTRA_CA_CERTS, "utf8").length)' 2>&1)
	[ "$got" = "/etc/keep/ca.pem $(wc -c <"$tmp/ca.pem")" ] &&
	    ok "the node image: NODE_EXTRA_CA_CERTS names /etc/keep/ca.pem, which node loads without a warning" ||
	    bad "node image: $got"
fi

# The packages, built here, offline: keeptool as a wheel, keepsdist as
# an sdist only (pip builds it in the guest), under a PEP 503 index.
mkdir -p "$tmp/build/keeptool/keeptool" "$tmp/build/keepsdist/keepsdist"
echo 'def answer(): return 42' >"$tmp/build/keeptool/keeptool/__init__.py"
echo 'def hello(): return "from an sdist"' >"$tmp/build/keepsdist/keepsdist/__init__.py"
for p in keeptool keepsdist; do
	printf 'from setuptools import setup\nsetup(name="%s", version="0.1", packages=["%s"])\n' \
	    $p $p >"$tmp/build/$p/setup.py"
done
(cd "$tmp/build/keeptool" && /usr/bin/python3 -m pip wheel -q --no-index --no-deps \
    --no-build-isolation -w "$srv/www/files" . >/dev/null 2>&1) &&
(cd "$tmp/build/keepsdist" && /usr/bin/python3 setup.py -q sdist -d "$srv/www/files" \
    >/dev/null 2>&1) || { echo "FAIL: building the packages"; exit 1; }
whl=$(cd "$srv/www/files" && ls keeptool-*.whl); sdist=$(cd "$srv/www/files" && ls keepsdist-*.tar.gz)
printf '<html><body><a href="keeptool/">keeptool</a><a href="keepsdist/">keepsdist</a></body></html>\n' \
    >"$srv/www/simple/index.html"
printf '<html><body><a href="../../files/%s#sha256=%s">%s</a></body></html>\n' \
    "$whl" "$(sha256sum "$srv/www/files/$whl" | cut -d' ' -f1)" "$whl" \
    >"$srv/www/simple/keeptool/index.html"
printf '<html><body><a href="../../files/%s#sha256=%s">%s</a></body></html>\n' \
    "$sdist" "$(sha256sum "$srv/www/files/$sdist" | cut -d' ' -f1)" "$sdist" \
    >"$srv/www/simple/keepsdist/index.html"
echo "hello over https" >"$srv/www/hello.txt"

# A git repository of one commit, served by git http-backend.
git init -q --bare "$srv/git/repo.git" &&
git -C "$srv/git/repo.git" config http.uploadpack true &&
git init -q "$tmp/build/repo" && echo "tracked" >"$tmp/build/repo/f" &&
git -C "$tmp/build/repo" add f &&
git -C "$tmp/build/repo" -c user.name=keep -c user.email=keep@example.org \
    commit -q -m "the first commit" &&
git -C "$tmp/build/repo" push -q "$srv/git/repo.git" HEAD:refs/heads/main &&
git -C "$srv/git/repo.git" symbolic-ref HEAD refs/heads/main ||
    { echo "FAIL: the git repository"; exit 1; }

# The server first: the registry's packument names its port.
tests/lib/egress_tools_server.py "$srv" "$tmp/leaf.pem" "$tmp/leaf.key" \
    "$tmp/port" 2>"$tmp/server.log" &
spid=$!
trap 'kill $spid 2>/dev/null; keepd_cleanup' EXIT
for _ in $(seq 100); do [ -s "$tmp/port" ] && break; sleep 0.1; done
P=$(cat "$tmp/port" 2>/dev/null)
[ -n "$P" ] || { echo "FAIL: the https server"; exit 1; }

# An npm package, packed here, and its packument.
mkdir -p "$tmp/build/npmpkg"
printf '{"name":"keep-tool","version":"1.0.0","main":"index.js"}\n' >"$tmp/build/npmpkg/package.json"
echo 'module.exports = { answer: 6 * 7 };' >"$tmp/build/npmpkg/index.js"
(cd "$tmp/build/npmpkg" && npm pack --silent --cache "$tmp/npmcache" >/dev/null 2>&1 &&
    mv keep-tool-1.0.0.tgz "$srv/npm/") || { echo "FAIL: npm pack"; exit 1; }
python3 - "$srv/npm/keep-tool-1.0.0.tgz" "$P" >"$srv/npm/keep-tool.json" <<'PY'
import base64, hashlib, json, sys
t = open(sys.argv[1], "rb").read()
v = {"name": "keep-tool", "version": "1.0.0", "main": "index.js",
     "dist": {"tarball": "https://npm.test:%s/keep-tool/-/keep-tool-1.0.0.tgz" % sys.argv[2],
              "shasum": hashlib.sha1(t).hexdigest(),
              "integrity": "sha512-" + base64.b64encode(hashlib.sha512(t).digest()).decode()}}
print(json.dumps({"name": "keep-tool", "dist-tags": {"latest": "1.0.0"}, "versions": {"1.0.0": v}}))
PY

# The host itself trusts the CA: the server works before the guest asks.
curl -sS --cacert "$tmp/ca.pem" --resolve "web.test:$P:127.0.0.1" \
    "https://web.test:$P/hello.txt" >"$tmp/host.out" 2>&1
[ "$(cat "$tmp/host.out")" = "hello over https" ] || { echo "FAIL: the server: $(cat "$tmp/host.out")"; exit 1; }

# A port no rule lists (nothing listens there either).
cp=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
echo "127.0.0.1 $names other.test" >"$tmp/hosts"
cat >"$tmp/test.policy" <<EOP
agent "dev" {
	allow sandbox:read, sandbox:write, exec
	exec "bash", "python3"
	egress "pypi.test":$P private
	egress "git.test":$P private
	egress "npm.test":$P private
	egress "web.test":$P private
	timeout 300s
}
EOP
KEEPD_IMAGES="machine" KEEPD_YAML_EXTRA="egress:
  hosts_file: $tmp/hosts
  connect_timeout: 10s" keepd_start "$tmp/test.policy"
tok=$(mint dev sandbox:read,sandbox:write,exec,egress)
req "$tok" POST /v1/sandboxes '{"image":"machine"}'
[ "$code" = 201 ] || { bad "sandbox: $code $body"; keepd_finish; exit 1; }
sbx=$(jget "$body" '["id"]')

# sh SCRIPT: bash -c SCRIPT in the sandbox; sets code, body, and out
# (its stdout, then its stderr).
both() { python3 -c 'import json,sys; r=json.loads(sys.argv[1]); print(r.get("stdout","") + r.get("stderr",""))' "$1" 2>/dev/null || echo "HTTP $code $1"; }
sh() {
	req "$tok" POST "/v1/sandboxes/$sbx/commands/run" \
	    "$(python3 -c 'import json,sys; print(json.dumps({"cmd": "bash", "args": ["-c", sys.argv[1]]}))' "$1")"
	out=$(both "$body")
}

# py CODE: python3 as the run's own program, which the machine image's
# template serves (a clone of an interpreter booted beforehand); sets
# out (stdout) and err (stderr). A clone that imported requests prints
# an "Exception ignored in: <function _removeHandlerRef" traceback to
# stderr as it exits, with or without added certificates (keep run
# --template does the same): the checks below read stdout.
py() {
	req "$tok" POST "/v1/sandboxes/$sbx/commands/run" \
	    "$(python3 -c 'import json,sys; print(json.dumps({"cmd": "python3", "args": ["-c", sys.argv[1]]}))' "$1")"
	out=$(jget "$body" '["stdout"]' 2>/dev/null || echo "HTTP $code $body")
	err=$(jget "$body" '["stderr"]' 2>/dev/null)
}

pip_args="--disable-pip-version-check --no-cache-dir --no-build-isolation --root-user-action=ignore"
fetch_py="import requests; print(requests.get('https://web.test:$P/hello.txt', timeout=60).text, end='')"

# Without guest.ca_file: every HTTPS tool refuses the server's certificate.
sh "curl -sS https://web.test:$P/hello.txt; echo rc=\$?"
grep -q "rc=60" <<<"$out" && grep -qi "certificate" <<<"$out" &&
    ok "without guest.ca_file: curl refuses the certificate (exit 60)" ||
    bad "curl without the CA: $out"
sh "python3 -c \"$fetch_py\""
grep -q "CERTIFICATE_VERIFY_FAILED" <<<"$out" &&
    ok "without guest.ca_file: requests.get raises CERTIFICATE_VERIFY_FAILED" ||
    bad "requests without the CA: $out"
py "$fetch_py"
grep -q "CERTIFICATE_VERIFY_FAILED" <<<"$err" &&
    ok "without guest.ca_file: requests.get in python3 as the run's program (the template's command) raises CERTIFICATE_VERIFY_FAILED" ||
    bad "requests (template) without the CA: $out $err"
sh "GIT_TERMINAL_PROMPT=0 git clone -q https://git.test:$P/repo.git nocl; echo rc=\$?"
grep -q "rc=128" <<<"$out" && grep -qi "certificate" <<<"$out" &&
    ok "without guest.ca_file: git clone refuses the certificate" ||
    bad "git without the CA: $out"
sh "mkdir -p noapp && cd noapp && npm install --no-audit --no-fund --update-notifier=false --fetch-retries=0 --cache ../nocache --registry https://npm.test:$P/ keep-tool; echo rc=\$?"
grep -q "UNABLE_TO_VERIFY_LEAF_SIGNATURE\|unable to verify\|self.signed\|local issuer" <<<"$out" &&
    ! grep -q "rc=0" <<<"$out" &&
    ok "without guest.ca_file: npm install refuses the certificate" ||
    bad "npm without the CA: $out"
sh "python3 -m pip install $pip_args --retries 0 --target nosite --index-url https://pypi.test:$P/simple/ keeptool; echo rc=\$?"
grep -q "CERTIFICATE_VERIFY_FAILED" <<<"$out" && ! grep -q "rc=0" <<<"$out" &&
    ok "without guest.ca_file: pip install refuses the certificate" ||
    bad "pip without the CA: $out"

# A reload with a guest.ca_file that holds a key besides its
# certificate is refused, and the guests keep what they had (nothing).
cat "$tmp/ca.pem" "$tmp/ca.key" >"$tmp/guest-ca.pem"
printf 'guest:\n  ca_file: %s\n' "$tmp/guest-ca.pem" >>"$tmp/keepd.yaml"
reload() { # reload PATTERN: SIGHUP, then wait for PATTERN in the log
	local m
	m=$(wc -l <"$tmp/log")
	kill -HUP "$pid"
	for _ in $(seq "$(slow 100)"); do
		log=$(tail -n +"$m" "$tmp/log")
		grep -q "$1" <<<"$log" && break
		sleep 0.1
	done
}
reload "the guests keep the certificates they had"
grep -q "guest.ca_file: $tmp/guest-ca.pem: a block that is not a CERTIFICATE (block 2)" <<<"$log" &&
    grep -q "the guests keep the certificates they had" <<<"$log" &&
    ok "a guest.ca_file with a private key in it is refused at reload, naming the block" ||
    bad "bad ca_file: $log"
# keepd made its appliance CA at its first start, before it read the
# certificates the guests trust: that one only.
sh "cat /etc/keep/ca.pem"
[ -n "$out" ] && [ "$out" = "$(openssl x509 -in "$tmp/state/keys/appliance-ca.pem")" ] &&
    ok "and the guests still trust only the appliance CA, made at the first start" ||
    bad "after a refused reload: $out"

# The CA into guest.ca_file, then a reload: the parent reads it and
# the appliance CA (<state_dir>/keys/appliance-ca.pem), the vmm gets
# both, the next runs (and a new template) trust them.
cp "$tmp/ca.pem" "$tmp/guest-ca.pem"
reload "vmm_h_guest_ca: .* bytes of added certificates"
grep -q "guests trust 2 added certificate" <<<"$log" &&
    ok "a reload reads guest.ca_file and the appliance CA: guests trust 2 added certificates" ||
    bad "reload: $log"
want=$(openssl x509 -in "$tmp/ca.pem"; openssl x509 -in "$tmp/state/keys/appliance-ca.pem")
sh "cat /etc/keep/ca.pem; echo; tail -n $(wc -l <<<"$want") /etc/ssl/certs/ca-certificates.crt; echo;
	tail -n $(wc -l <<<"$want") /usr/lib/ssl/cert.pem; echo \$NODE_EXTRA_CA_CERTS"
[ "$out" = "$want"$'\n\n'"$want"$'\n\n'"$want"$'\n/etc/keep/ca.pem' ] &&
    ok "/etc/keep/ca.pem holds the two; Debian's bundle and OpenSSL's cert.pem end with them" ||
    bad "the files: $out"

sh "curl -sS https://web.test:$P/hello.txt"
[ "$out" = "hello over https" ] && ok "curl https://web.test: the body" || bad "curl: $out"
sh "python3 -c \"$fetch_py\""
[ "$out" = "hello over https" ] && ok "requests.get https://web.test: the body" || bad "requests: $out"
py "$fetch_py"
[ "$out" = "hello over https" ] &&
    ok "requests.get in python3 after the reload: the body (the template booted before it is not used)" ||
    bad "requests (template): $out $err"

sh "python3 -m pip install -q $pip_args --target site --index-url https://pypi.test:$P/simple/ keeptool keepsdist &&
	PYTHONPATH=site python3 -c 'import keeptool, keepsdist; print(keeptool.answer(), keepsdist.hello())' &&
	ls site | grep -c dist-info"
[ "$out" = $'42 from an sdist\n2' ] &&
    ok "pip install from an HTTPS index: a wheel and an sdist (built in the guest), both import" ||
    bad "pip: $out"

sh "GIT_TERMINAL_PROMPT=0 git clone -q https://git.test:$P/repo.git cl && git -C cl log --format=%s && cat cl/f"
[ "$out" = $'the first commit\ntracked' ] &&
    ok "git clone over HTTPS from git http-backend: the log and the file" || bad "git: $out"

sh "mkdir -p app && cd app && npm install --no-audit --no-fund --update-notifier=false --silent --cache ../npmcache --registry https://npm.test:$P/ keep-tool &&
	node -e 'console.log(require(\"keep-tool\").answer)'"
[ "$out" = 42 ] && ok "npm install from an HTTPS registry; require works" || bad "npm: $out"

# By now the template booted after the reload is ready: a clone of it
# trusts the CA too.
# Ready is the template's last word in the log: one dropped and booted
# again (its image reopened) is not ready until it says so again.
for _ in $(seq "$(slow 300)"); do
	[ "$(grep -c "template machine python.*: ready" "$tmp/log")" -ge 2 ] &&
	    grep "template machine python" "$tmp/log" | tail -n 1 | grep -q ": ready" && break
	sleep 0.1
done
m=$(wc -l <"$tmp/log")
py "$fetch_py"
[ "$out" = "hello over https" ] &&
    tail -n +"$m" "$tmp/log" | grep -q "python3 in sandbox .*, from its template" &&
    ok "requests.get in a clone of the template booted after the reload: the body" ||
    bad "requests (clone): $out $err $(tail -n +"$m" "$tmp/log" | grep 'python3 in')"

# Refusals, with the CA trusted: a name no rule allows, a port the
# rule does not list.
sh "python3 -m pip install $pip_args --retries 0 --target other --index-url https://other.test:$P/simple/ keeptool; echo rc=\$?"
! grep -q "rc=0" <<<"$out" && [ "$(jget "$body" '["limits"]')" = "['egress']" ] &&
    [ "$(jget "$body" '["egress_refused"]')" = other.test ] &&
    ok "pip from a name no rule allows fails; the result says limits: egress, egress_refused: other.test" ||
    bad "refused name: $out $body"
sh "curl -sS https://web.test:$cp/hello.txt; echo rc=\$?"
grep -q "rc=7" <<<"$out" && [ "$(jget "$body" '["limits"]')" = "['egress']" ] &&
    [ "$(jget "$body" '["egress_refused"]')" = "web.test:$cp" ] &&
    ok "curl to a port the rule does not list: refused (exit 7), egress_refused: web.test:$cp" ||
    bad "refused port: $out $body"

# At start, a guest.ca_file that is not certificates stops keepd, with
# the reason (its own state directory: the running keepd's is left be).
printf 'not a certificate\n' >"$tmp/junk.pem"
sed -e "s|^state_dir: .*|state_dir: $tmp/state2|" \
    -e "s|^  ca_file: .*|  ca_file: $tmp/junk.pem|" "$tmp/keepd.yaml" >"$tmp/bad.yaml"
timeout 60 "$KEEPD" -d -f "$tmp/bad.yaml" >"$tmp/bad.log" 2>&1
rc=$?
[ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q "guest.ca_file: $tmp/junk.pem: no certificate" "$tmp/bad.log" &&
    ok "keepd refuses to start with a guest.ca_file that holds no certificate, and says why" ||
    bad "bad ca_file at start: rc $rc $(tail -3 "$tmp/bad.log")"

keepd_finish
