#!/bin/sh
# Install the Debian packages named on the command line that are missing.
# Runs `apt-get update` only when something is missing; never upgrades.
# CMD:PKG names a package for a command: PKG is installed only when no
# CMD is on PATH, whoever provided it (NodeSource's nodejs brings its own
# npm, which Debian's npm package conflicts with).
missing=
for p in "$@"; do
	case "$p" in
	*:*)
		command -v "${p%%:*}" >/dev/null 2>&1 && continue
		p=${p#*:} ;;
	esac
	st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)
	case "$st" in
	*"install ok installed"*) ;;
	*) missing="$missing $p" ;;
	esac
done
[ -z "$missing" ] && exit 0
echo "deps: missing Debian packages:$missing"
if [ "$(id -u)" -ne 0 ]; then
	echo "deps: not root; install them with: apt-get install$missing" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq || exit 1
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing || exit 1
