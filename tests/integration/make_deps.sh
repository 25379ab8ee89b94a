#!/usr/bin/env bash
# A new machine's first make (issue 31, findings 13 and 14), without
# installing anything:
# - every file outside the tree that a target needs and `make deps`
#   installs (/bin/busybox, from busybox-static) has a rule through deps,
#   so `make -j2` does not stop at once with "No rule to make target"
#   before deps has run; with busybox missing (BUSYBOX names a file that
#   does not exist yet), make -j2 of the toolbox image runs deps first,
#   which makes it, and never says there is no rule;
# - bench-policy asks apt for nodejs and npm only when there is no node
#   or npm command: a nodejs that brings its own npm (NodeSource's) is
#   used, never fought with Debian's conflicting npm package.
set -u
cd "$(dirname "$0")/../.."
fails=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fails=$((fails+1)); }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

# --- 13: absolute prerequisites have rules.
db=$(make -pnrq all 2>/dev/null)
for f in /bin/busybox; do
	grep -q "^$f:.*| *deps" <<<"$db" && ok "$f: made by deps" || bad "$f: no rule (make -j2 stops before deps on a fresh machine)"
done
tar --exclude=./build --exclude=./.git -cf - . | tar -C "$tmp" -xf - || exit 1
mkdir "$tmp/bin"
log=$tmp/log
cat >"$tmp/mk/deps.sh" <<EOT
echo deps >>"$log"; : >"$tmp/busybox"; echo deps-done >>"$log"
EOT
for t in gcc cc clang musl-gcc python3 objcopy ld; do
	printf '#!/bin/sh\necho %s >>"%s"; exit 1\n' "$t" "$log" >"$tmp/bin/$t"
	chmod +x "$tmp/bin/$t"
done
out=$(PATH=$tmp/bin:$PATH make --no-print-directory -C "$tmp" -j2 B="$tmp/b" \
    BUSYBOX="$tmp/busybox" "$tmp/b/images/toolbox.img" 2>&1)
if grep -q "No rule to make target" <<<"$out"; then
	bad "make -j2 toolbox.img with busybox missing: $(grep 'No rule' <<<"$out")"
else
	ok "make -j2 toolbox.img with busybox missing: no 'No rule to make target'"
fi
[ "$(head -n 2 "$log" | tr '\n' ' ')" = "deps deps-done " ] && ok "deps ran first" ||
    bad "deps did not run first: $(tr '\n' ' ' <"$log")"

# --- 14: bench-policy's packages, with stand-in dpkg-query and apt-get.
recipe=$(make -n --no-print-directory bench-policy 2>/dev/null | grep 'mk/deps.sh.*npm' | tail -n 1)
[ -n "$recipe" ] || bad "bench-policy runs no mk/deps.sh"
stub=$tmp/stub; mkdir -p "$stub"
# As with NodeSource's nodejs: dpkg knows the nodejs package, which
# brings node and npm, and no npm package; apt-get logs what it is asked.
printf '#!/bin/sh\nfor a; do p=$a; done\n[ "$p" = nodejs ] && printf "install ok installed" && exit 0\nexit 1\n' >"$stub/dpkg-query"
printf '#!/bin/sh\necho "$*" >>"%s/apt"\n' "$tmp" >"$stub/apt-get"
for c in id sh; do ln -s "$(command -v $c)" "$stub/$c"; done
printf '#!/bin/sh\nexit 0\n' >"$stub/node"
printf '#!/bin/sh\nexit 0\n' >"$stub/npm"
chmod +x "$stub"/*
rm -f "$tmp/apt"
(PATH=$stub; eval "$recipe") >/dev/null 2>&1
[ ! -e "$tmp/apt" ] && ok "node and npm on PATH: apt is asked for nothing" ||
    bad "node and npm on PATH, apt-get was run: $(tr '\n' ';' <"$tmp/apt")"
rm -f "$stub/npm" "$tmp/apt"
(PATH=$stub; eval "$recipe") >/dev/null 2>&1
grep -q "install.* npm" "$tmp/apt" 2>/dev/null && ! grep -q nodejs "$tmp/apt" &&
    ok "npm missing: apt installs npm alone" || bad "npm missing: apt got: $(tr '\n' ';' <"$tmp/apt" 2>/dev/null)"
echo "make_deps: $fails failures"
[ $fails -eq 0 ]
