#!/usr/bin/env bash
# `keep api` against a real keepd: what a user types, end to end.
source "$(dirname "$0")/../lib/keepd.sh"

cat >"$tmp/test.policy" <<'EOP'
agent "dev" {
	allow sandbox:read, sandbox:write, exec, artifact:read, artifact:write
	allow audit:read
	exec "python", "js", "sha256sum", "cat"
}
EOP
keepd_start "$tmp/test.policy"
export KEEP_TOKEN=$(mint dev sandbox:read,sandbox:write,exec,artifact:read,artifact:write,audit:read)
api() { "$KEEP" api --url "$url" "$@"; }

api health >/dev/null && ok "health" || bad "health"
id=$(api --json sandbox create --image toolbox --env GREETING=hi | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
[ -n "$id" ] && ok "sandbox create: $id" || bad "sandbox create"
api sandbox list | grep -q "$id" && ok "sandbox list shows it" || bad "sandbox list"
api sandbox get "$id" | grep -q toolbox && ok "sandbox get" || bad "sandbox get"
printf 'hello keep\n' >"$tmp/in.txt"
api files put "$id" "$tmp/in.txt" /in.txt && ok "files put" || bad "files put"
out=$(api run "$id" sha256sum in.txt)
[[ $out == "$(cd "$tmp" && sha256sum in.txt | cut -d' ' -f1)  in.txt"* ]] && ok "run sha256sum on it" || bad "run: $out"
api files get "$id" /in.txt "$tmp/back.txt" && cmp -s "$tmp/in.txt" "$tmp/back.txt" && ok "files get" || bad "files get"
api files ls "$id" / | grep -q in.txt && ok "files ls" || bad "files ls"
api env set "$id" COLOR=blue && api env get "$id" | grep -q "COLOR=blue" && ok "env set/get" || bad "env: $(api env get "$id" 2>&1)"
api files rm "$id" /in.txt && ! api files ls "$id" / | grep -q in.txt && ok "files rm" || bad "files rm"
py=$(api --json sandbox create --image python | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
out=$(api exec "$py" 'print(6*7)')
[ "$out" = 42 ] && ok "exec python" || bad "exec: $out"
out=$(api exec "$py" 'import sys; sys.exit(3)'); rc=$?
[ $rc -ne 0 ] && ok "exec passes on a failing exit (rc $rc)" || bad "exec exit: $rc"
api audit --limit 50 | grep -q "sandbox.create" && ok "audit" || bad "audit: $(api audit --limit 5 2>&1)"
api sandbox delete "$id" && ! api sandbox get "$id" >/dev/null 2>&1 && ok "sandbox delete" || bad "sandbox delete"
KEEP_TOKEN=bogus api sandbox list >/dev/null 2>&1; rc=$?
[ $rc -ne 0 ] && ok "a bad token fails (rc $rc)" || bad "bad token accepted"
! grep -q "not recorded" "$tmp/log" && ok "every run was recorded in the store" ||
    bad "runs not recorded: $(grep 'not recorded' "$tmp/log" | head -n 3)"
keepd_finish
