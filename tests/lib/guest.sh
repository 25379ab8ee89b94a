# Sourced by integration tests that run guests with `keep run`, no keepd
# (bash): from the top of the tree, B, KEEP and G (the test guests), a
# loud SKIP without /dev/kvm, tmp (removed at exit), and ok/bad, which
# count the failures in fails.
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
B=${B:-build}; KEEP=$B/bin/keep; G=$B/guests
source tests/lib/platform.sh
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fails=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fails=$((fails+1)); }
# like_native WHAT NATIVE KEEP: ok when a program's output natively and
# in keep (two files) are the same bytes, else bad with their diff.
like_native() {
	if cmp -s "$2" "$3"; then
		ok "$1 as natively ($(wc -l <"$3") lines)"
	else
		bad "$1 differs from Linux's: $(diff "$2" "$3")"
	fi
}
