#!/bin/sh
# Print manifest lines that take the given installed Debian packages
# less the files the omit list names: `deb PKG` for a package none of
# whose files it names, else a `file PATH=PATH` line for each of the
# package's other files (the builder takes a link's target as a copy,
# so a package of links to one program holds that program many times).
# The omit list (first argument, images/machine.omit) is a file of lines
#   ERE                  omit the package files that match
#   ERE -> TARGET        omit them only when they are links to TARGET
# ('#' starts a comment). Documentation is left to the builder. Each
# file left out is named on a line `#omitted PATH`, a comment to the
# builder.
set -eu
export LC_ALL=C
omit=$1
shift
rules=$(sed 's/#.*//; /^[[:space:]]*$/d' "$omit")
eres=$(printf '%s\n' "$rules" | awk '{print $1}')
for pkg in "$@"; do
	files=$(dpkg-query -L "$pkg" | grep '^/' |
	    grep -Ev '^/usr/share/(doc|man|info|lintian|bug|locale)/') || true
	drop=$(printf '%s\n' "$files" | grep -E -- "$eres" |
	while read -r p; do
		printf '%s\n' "$rules" | while read -r ere arrow target; do
			printf '%s\n' "$p" | grep -Eq -- "$ere" || continue
			if [ "${arrow:-}" = "->" ]; then
				[ -L "$p" ] && [ "$(readlink "$p")" = "$target" ] ||
				    continue
			fi
			printf '%s\n' "$p"
			break
		done
	done) || true
	if [ -z "$drop" ]; then
		printf 'deb %s\n' "$pkg"
		continue
	fi
	printf '%s\n' "$drop" | sed 's/^/#omitted /'
	printf '%s\n' "$files" | grep -vxF -- "$drop" | while read -r p; do
		# Directories are implied; the format names no space.
		[ -f "$p" ] || continue
		case "$p" in *[[:space:]]*) continue ;; esac
		printf 'file %s=%s\n' "$p" "$p"
	done
done
