#!/usr/bin/env bash
# Images over the API: the stock images are listed with their languages;
# an image signed by a trusted key uploads and runs; unsigned, foreign-key
# and operator-named uploads are refused; only uploads can be deleted.
source "$(dirname "$0")/../lib/keepd.sh"

cat >"$tmp/test.policy" <<'EOP'
agent "ops" {
	allow image:read, image:write, sandbox:read, sandbox:write, exec
	exec "greet", "hello"
}
agent "viewer" { allow image:read }
EOP
keepd_start "$tmp/test.policy"
ops=$(mint ops image:read,image:write,sandbox:read,sandbox:write,exec)
viewer=$(mint viewer image:read,image:write)
upload() { # TOKEN FILE -> code, body
	body=$(curl -s -o - -w '\n%{http_code}' -H "Authorization: Bearer $1" \
	    --data-binary @"$2" "$url/v1/images")
	code=${body##*$'\n'}; body=${body%$'\n'*}
}

req "$ops" GET /v1/images
[ "$code" = 200 ] && [[ $body == *'"name":"python"'*'"languages":"python"'* || $body == *'"languages":"python"'*'"name":"python"'* ]] &&
    [[ $body == *'"languages":"javascript"'* ]] && ok "the stock images are listed with their languages" || bad "list: $code $body"

# A new image: the args guest under the command "greet", signed by the
# trusted dev key.
"$KEEP" image build --name greeter --version 2.0 --command greet "$B/guests/args" -o "$tmp/greeter.img" >/dev/null &&
    "$KEEP" image sign --key "$B/keys/dev.secret" "$tmp/greeter.img" >/dev/null || bad "build the image"
upload "$ops" "$tmp/greeter.img"
[ "$code" = 201 ] && [[ $body == *'"name":"greeter"'*'"version":"2.0"'* ]] && ok "a signed image uploads: $body" || bad "upload: $code $body"
req "$ops" GET /v1/images
[[ $body == *'"name":"greeter"'* ]] && ok "and is listed" || bad "list after upload: $body"
req "$ops" POST /v1/sandboxes '{"image":"greeter"}'
g=$(jget "$body" '["id"]' 2>/dev/null)
req "$ops" POST "/v1/sandboxes/$g/commands/run" '{"cmd":"greet","args":["a","b"]}'
[ "$code" = 200 ] && [[ $body == *'"exit_code":0'* ]] && ok "a sandbox runs the uploaded image's command" || bad "run uploaded: $code $body"

"$KEEP" image build --name unsigned --version 1 --command greet "$B/guests/args" -o "$tmp/unsigned.img" >/dev/null
upload "$ops" "$tmp/unsigned.img"
[ "$code" = 400 ] && ok "an unsigned image is refused: $(jget "$body" '["error"]["message"]')" || bad "unsigned: $code $body"
"$KEEP" key generate --out "$tmp" --name stranger >/dev/null
"$KEEP" image build --name foreign --version 1 --command greet "$B/guests/args" -o "$tmp/foreign.img" >/dev/null
"$KEEP" image sign --key "$tmp/stranger.secret" "$tmp/foreign.img" >/dev/null
upload "$ops" "$tmp/foreign.img"
[ "$code" = 400 ] && ok "an image signed by an untrusted key is refused" || bad "foreign: $code $body"
head -c 4096 /dev/urandom >"$tmp/noise.img"
upload "$ops" "$tmp/noise.img"
[ "$code" = 400 ] && ok "noise is refused" || bad "noise: $code $body"
"$KEEP" image build --name hello --version 9 --command hello "$B/guests/args" -o "$tmp/hello.img" >/dev/null
"$KEEP" image sign --key "$B/keys/dev.secret" "$tmp/hello.img" >/dev/null
upload "$ops" "$tmp/hello.img"
[ "$code" = 409 ] && ok "an upload may not take an operator image's name" || bad "shadow: $code $body"
upload "$viewer" "$tmp/greeter.img"
[ "$code" = 403 ] && ok "uploading needs image:write in the policy" || bad "viewer upload: $code $body"

req "$ops" DELETE /v1/images/hello
[ "$code" = 403 ] && ok "an operator image cannot be deleted" || bad "delete operator: $code $body"
req "$ops" DELETE /v1/images/greeter
[ "$code" = 200 ] || [ "$code" = 204 ] && ok "an upload can" || bad "delete: $code $body"
req "$ops" POST /v1/sandboxes '{"image":"greeter"}'
[ "$code" = 404 ] && ok "and is gone" || bad "after delete: $code $body"
[ -z "$(ls "$tmp/state/uploads")" ] && ok "nothing left in uploads/" || bad "uploads: $(ls -a "$tmp/state/uploads")"
"$KEEP" audit tail -n 100 --action image.upload --data "$tmp/state/db" | grep -q greeter &&
    ok "the upload is audited" || bad "upload audit"
! grep -q "not recorded\|record not deleted" "$tmp/log" && ok "the upload and the delete are recorded in the store" ||
    bad "image records: $(grep 'record' "$tmp/log" | head -n 3)"
keepd_finish
