#!/usr/bin/env bash
# The docs name the tree as it is: docs/architecture.md names every
# process file (host/proc_*.c, host/vmmproc/*.c) and every file of the
# front's backend (host/front/*.c); docs/development.md's tree names every directory of
# host/; docs/vmm.md does not say runs lack their own process.
set -u
cd "$(dirname "$0")/../.."
fails=0
bad() { echo "FAIL: $*"; fails=$((fails+1)); }
n=0
for f in host/proc_*.c host/front/*.c host/vmmproc/*.c; do
	n=$((n+1))
	grep -q "$(basename "$f")" docs/architecture.md ||
	    bad "docs/architecture.md does not name $f"
done
for d in host/*/; do
	n=$((n+1))
	grep -q "\`${d%/}/\`" docs/development.md ||
	    bad "docs/development.md's tree does not name ${d%/}/"
done
n=$((n+1))
grep -qi "does not yet fork" docs/vmm.md && bad "docs/vmm.md says the vmm does not fork keepd: vm processes"
echo "docs_tree: $n checked, $fails failures"
[ $fails -eq 0 ]
