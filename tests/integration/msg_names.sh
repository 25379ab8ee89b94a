#!/usr/bin/env bash
# Every message type a process handles (a row `{ MSG_..., ` of a handler
# table in host/) is in msg_type_name's generated table, so every log line
# about a message names its type.
set -u
cd "$(dirname "$0")/../.."
B=${B:-build}
gen=$B/gen/msg_names.c
[ -f "$gen" ] || make --no-print-directory "$gen" >/dev/null || exit 1
fails=0 n=0
for t in $(grep -rhoE '\{ *MSG_[A-Z0-9_]+,' host | grep -oE 'MSG_[A-Z0-9_]+' | sort -u); do
	n=$((n+1))
	grep -q "{ $t, \"$t\" }" "$gen" || { echo "FAIL: $t has no name"; fails=$((fails+1)); }
done
echo "msg_names: $n handled types, $fails without a name"
[ $n -gt 40 ] && [ $fails -eq 0 ]
