#!/bin/sh
# Print a keep image manifest's "command NAME=PATH" line for every program
# the given installed Debian packages put in /bin, /sbin, /usr/bin or
# /usr/sbin (the first of a name wins), sorted by name. Names a command
# cannot have ("[": letters, digits, . _ - + only) are left out. The
# C locale's byte order and a stable sort, so the manifest, and the
# image, are the same on any machine with the same packages.
set -eu
export LC_ALL=C
for pkg in "$@"; do
	dpkg-query -L "$pkg"
done | grep -E '^/(usr/)?s?bin/[^/]+$' | while read -r p; do
	[ -f "$p" ] && [ -x "$p" ] && printf '%s %s\n' "${p##*/}" "$p"
done | grep -E '^[A-Za-z0-9_+][A-Za-z0-9._+-]{0,30} ' | sort -s -k1,1 -u |
while read -r name path; do
	printf 'command %s=%s\n' "$name" "$path"
done
