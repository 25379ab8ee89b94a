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
