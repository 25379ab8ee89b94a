#!/usr/bin/env bash
# --help on every command and subcommand of keep and keepd, walked from
# the dispatch tables in cli/ (keep.c's groups, each group's subcommand
# strcmp()s, keep api's commands and theirs): exit 0, a usage on stdout,
# nothing on stderr, and no request sent (keep api points at a listener
# here that counts connections).
set -u
cd "$(dirname "$0")/../.."
B=${B:-build}
KEEP=$B/bin/keep KEEPD=$B/bin/keepd
fails=0 n=0
bad() { echo "FAIL: $*"; fails=$((fails+1)); }
tmp=$(mktemp -d) || exit 1
lpid=
trap '[ -n "$lpid" ] && kill $lpid 2>/dev/null; rm -rf "$tmp"' EXIT
python3 - "$tmp" <<'EOPY' &
import socket, sys
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(16)
open(sys.argv[1] + "/port", "w").write(str(s.getsockname()[1]))
n = 0
while True:
    c, _ = s.accept(); n += 1
    open(sys.argv[1] + "/conns", "w").write(str(n)); c.close()
EOPY
lpid=$!
for _ in $(seq 100); do [ -s "$tmp/port" ] && break; sleep 0.05; done
[ -s "$tmp/port" ] || { echo "FAIL: no listener"; exit 1; }
url=http://127.0.0.1:$(cat "$tmp/port")
export KEEP_TOKEN=not-a-token

check() { # check ARGV...: exit 0, usage on stdout, stderr empty
	local out err rc
	n=$((n+1))
	out=$("$@" 2>"$tmp/err" </dev/null); rc=$?
	err=$(cat "$tmp/err")
	if [ $rc -ne 0 ] || [[ $out != usage:* ]] || [ -n "$err" ]; then
		bad "$*: exit $rc, stdout '${out:0:60}', stderr '${err:0:120}'"
	fi
}

# Words compared with strcmp(X, "word") == 0 in a function of a file.
words() { # words FILE [FUNCTION]
	if [ -n "${2:-}" ]; then
		awk -v f="$2" '$0 ~ "^"f"\\(" { on = 1 } on && /^}/ { exit } on' "$1"
	else
		cat "$1"
	fi | grep -o 'strcmp([a-z]*\(\[[0-9]\]\)\?, "[a-z][a-z-]*") == 0' |
	    sed 's/.*"\([a-z-]*\)".*/\1/' | sort -u
}

groups=$(grep -o '^	{ "[a-z]*", cmd_[a-z_]*,' cli/keep.c | sed 's/.*"\([a-z]*\)".*/\1/')
[ "$(wc -w <<<"$groups")" -ge 7 ] || bad "groups from cli/keep.c: $groups"
check "$KEEP" --help
check "$KEEP" -h
check "$KEEP" help
for g in $groups; do
	check "$KEEP" "$g" --help
	check "$KEEP" "$g" -h
	# Commands without subcommands.
	[ "$g" = api ] || [ "$g" = run ] || [ "$g" = status ] && continue
	subs=$(words "cli/cmd_$g.c")
	[ -n "$subs" ] || bad "no subcommands found for keep $g"
	for s in $subs; do
		check "$KEEP" "$g" "$s" --help
	done
	# Help wins over the subcommand's operands, too.
	check "$KEEP" "$g" "$(head -n 1 <<<"$subs")" some-file --help
done
# keep api: its commands, and theirs (sandbox, files, env).
check "$KEEP" api --url "$url" --help
for s in $(words cli/cmd_api.c cmd_api); do
	check "$KEEP" api --url "$url" "$s" --help
	fn=$(grep -o "strcmp(argv\[0\], \"$s\") == 0)$" cli/cmd_api.c >/dev/null &&
	    awk -v s="$s" '$0 ~ "strcmp\\(argv\\[0\\], \""s"\"\\) == 0\\)$" { getline; print; exit }' cli/cmd_api.c |
	    grep -o 'cmd_[a-z_]*')
	[ -n "$fn" ] || continue
	for t in $(words cli/cmd_api.c "$fn"); do
		check "$KEEP" api --url "$url" "$s" "$t" --help
	done
done
check "$KEEP" api --url "$url" run sbx-1 --help
check "$KEEP" api --url "$url" exec sbx-1 --help
# keepd
check "$KEEPD" --help
check "$KEEPD" -h
check "$KEEPD" -f /nonexistent --help
# A last connection of our own: the listener takes them in order, so once
# it has counted ours, it has counted every earlier one.
python3 -c 'import socket,sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])))' "$(cat "$tmp/port")"
for _ in $(seq 100); do [ -s "$tmp/conns" ] && break; sleep 0.05; done
conns=$(cat "$tmp/conns" 2>/dev/null || echo 0)
[ "$conns" = 1 ] || bad "$((conns - 1)) request(s) reached the listener"
echo "cli_help: $n commands checked, $fails failures"
[ $n -gt 40 ] && [ $fails -eq 0 ]
