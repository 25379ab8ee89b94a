#!/usr/bin/env bash
# `make -j2` on a fresh machine: `deps` installs the compilers, so it must
# finish before any compiler or build tool starts. A copy of the tree gets
# a slow deps step and stand-in tools that log their start; the log must
# show deps done before the first tool.
set -u
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
tar --exclude=./build --exclude=./.git -cf - . | tar -C "$tmp" -xf - || exit 1
mkdir "$tmp/bin"
log=$tmp/log
cat >"$tmp/mk/deps.sh" <<EOT
echo deps >>"$log"; sleep 1; echo deps-done >>"$log"
EOT
for t in gcc cc clang musl-gcc python3 objcopy ld; do
	printf '#!/bin/sh\necho %s >>"%s"; exit 1\n' "$t" "$log" >"$tmp/bin/$t"
	chmod +x "$tmp/bin/$t"
done
for goal in all run unit; do
	rm -f "$log"
	PATH=$tmp/bin:$PATH make --no-print-directory -C "$tmp" -j2 B="$tmp/b" \
	    "$goal" >/dev/null 2>&1
	first=$(head -n 2 "$log" | tr '\n' ' ')
	if [ "$first" != "deps deps-done " ]; then
		echo "FAIL: make -j2 $goal started a tool before deps finished:"
		sed 's/^/    /' "$log"
		exit 1
	fi
	echo "ok: make -j2 $goal: deps before every tool ($(wc -l <"$log") lines)"
done
