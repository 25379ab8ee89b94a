#!/usr/bin/env bash
# A template's clones and keepd's checks of deferred hashes
# (docs/image-format.md, "Deferred hashes"): the vmm's verdicts are read
# live by every vm process, so a file the vmm checked after the template
# was made is not hashed again by the next clone. Until 2026-12-07 a
# clone saw only what the vmm had checked when its template was made and
# hashed every other file it opened at every run (pip in the machine
# image: 400 to 500 files, 50 to 75 ms a run). The run's log line says
# how many files it hashed.
# run-tests: alone (another keepd's hard link to the same image changes
# its ctime, and the vmm opens it again, verdicts and template anew)
export KEEPD_IMAGES=python
source "$(dirname "$0")/../lib/keepd.sh" || exit 1

cat >"$tmp/test.policy" <<'EOP'
agent "th" {
	allow sandbox:read, sandbox:write, exec
	exec "python"
}
EOP
keepd_start "$tmp/test.policy"
tok=$(mint th sandbox:read,sandbox:write,exec)
req "$tok" POST /v1/sandboxes '{"image":"python"}'
sb=$(jget "$body" '["id"]')

# Extension modules the template's boot (numpy) does not load: each is a
# file of its own in the image, unlike the pure modules in python311.zip.
body_run=$(python3 -c 'import json; print(json.dumps({"cmd": "python", "args":
    ["-c", "import csv, decimal, sqlite3, xml.parsers.expat; print(\"ran\")"]}))')
# run: one run of that code; from (1 when it was a clone) and hashed (the
# files its log line says it hashed).
run() {
	local m line
	m=$(mark)
	req "$tok" POST "/v1/sandboxes/$sb/commands/run" "$body_run"
	[ "$code" = 200 ] && [ "$(jget "$body" '["stdout"]')" = ran ] ||
	    { bad "run: $code $body"; return 1; }
	from=0
	tail -n +"$m" "$tmp/log" | grep -q "from its template" && from=1
	line=$(tail -n +"$m" "$tmp/log" | grep -m 1 "run [0-9]* done:")
	hashed=$(sed -n 's/.* \([0-9]*\) files hashed).*/\1/p' <<<"$line")
	[ -n "$hashed" ] || { bad "no count of files hashed in: $line"; return 1; }
}

# The first runs boot cold while the template boots.
from=0 hashed=
for _ in $(seq "$(slow 100)"); do
	run || break
	[ "$from" = 1 ] && break
	sleep 0.2
done
[ "$from" = 1 ] && ok "a run from the template" || bad "no run from the template"

# The vm processes' hints are hashed by the vmm a moment later (100 ms
# turns); then a clone opens the same files without hashing them.
for _ in $(seq "$(slow 50)"); do
	sleep 0.2
	run || break
	[ "$from" = 1 ] && [ "$hashed" = 0 ] && break
done
[ "$from" = 1 ] && [ "$hashed" = 0 ] &&
    ok "a later clone hashes none of the files the vmm checked after the template was made" ||
    bad "a clone hashed $hashed files again (from template: $from)"

keepd_finish
