#!/bin/sh
# Print, one a line and sorted, the installed Debian packages the given
# ones need to work: each package and, in turn, what its Depends and
# Pre-Depends name (gcc needs gcc-12, cpp-12 and binutils; git needs
# perl; pip needs setuptools and wheel), as dpkg installed them. Of the
# alternatives of a dependency ("a | b") the first installed one is
# taken; a name no package of that name has installed is looked up among
# the installed packages' Provides (NodeSource's nodejs provides npm).
# Recommends and Suggests are left out, as apt-get --no-install-recommends
# leaves them. A name that nothing installed answers stops with an error.
# -x PKG names a package that is neither taken nor followed: a
# dependency Debian declares for something the image never does (a
# package's maintainer scripts, a build-time tool). -t prints only the
# installed package that answers each name given, without what they need.
set -eu
export LC_ALL=C
skip= top=0
while :; do
	case "${1:-}" in
	-x) skip="$skip $2"; shift 2 ;;
	-t) top=1; shift ;;
	*) break ;;
	esac
done
dpkg-query -W -f '${Package}\t${db:Status-Abbrev}\t${Provides}\t${Pre-Depends}, ${Depends}\n' |
awk -F '\t' -v want="$*" -v skip="$skip" -v top="$top" '
function strip(s) {
	sub(/\(.*/, "", s); gsub(/[ \t]/, "", s); sub(/:.*/, "", s)
	return s
}
function answer(name) {
	if (name in inst) return name
	if (name in provider) return provider[name]
	return ""
}
$2 ~ /^.i/ {
	inst[$1] = 1; deps[$1] = $4
	n = split($3, prov, ",")
	for (i = 1; i <= n; i++) {
		v = strip(prov[i])
		if (v != "" && !(v in provider)) provider[v] = $1
	}
}
END {
	k = split(skip, x, " ")
	for (i = 1; i <= k; i++) excluded[x[i]] = 1
	n = split(want, queue, " "); head = 1
	for (i = 1; i <= n; i++) {
		a = answer(queue[i])
		if (a == "") { print "deb-closure: " queue[i] ": not installed" > "/dev/stderr"; exit 1 }
		queue[i] = a
	}
	if (top) n = 0
	for (i = 1; top && i in queue; i++) seen[queue[i]] = 1
	while (head <= n) {
		pkg = queue[head++]
		if (pkg in seen || pkg in excluded) continue
		seen[pkg] = 1
		m = split(deps[pkg], d, ",")
		for (i = 1; i <= m; i++) {
			k = split(d[i], alt, "|"); got = ""
			for (j = 1; j <= k && got == ""; j++) {
				v = strip(alt[j])
				if (v != "") got = answer(v)
			}
			if (got != "") queue[++n] = got
			else if (strip(d[i]) != "") {
				print "deb-closure: " pkg " needs " d[i] ": not installed" > "/dev/stderr"; exit 1
			}
		}
	}
	for (p in seen) print p
}' | sort
