#!/usr/bin/env bash
# The make targets of the benchmarks, read without running them (they take
# minutes and the machine): make deps installs no benchmark-only package,
# each bench target installs its own, and every script a target runs is
# run by the shell its first line names (bench/api.sh is bash: `sh` would
# stop at its first `source`).
set -u
cd "$(dirname "$0")/../.."
fails=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fails=$((fails+1)); }
db=$(make -pnrq deps 2>/dev/null)
deps=" $(sed -n 's/^DEPS_PKGS = //p' <<<"$db" | head -n 1) "
# (nodejs is no longer benchmark-only: the node image is built from it,
# mk/images.mk.)
for p in wrk nginx-light nginx qemu-system-x86 npm; do
	[[ $deps != *" $p "* ]] && ok "make deps leaves out $p" ||
	    bad "make deps installs the benchmark-only package $p"
done
# target: the packages it needs.
declare -A needs=([bench-api]="wrk nginx-light" [bench-vmm]="qemu-system-x86"
    [bench-policy]="nodejs npm" [bench-store]="" [bench-token]=""
    [bench-images]="" [bench-procs]="" [bench-snap]="" [bench-templates]=""
    [bench-trap]="" [bench-start]="" [bench-density]=""
    [bench-net]="wrk nginx-light")
targets=$(sed -n 's/^\(bench-[a-z]*\):.*/\1/p' <<<"$db" | sort -u)
[ -n "$targets" ] || bad "no bench-* targets found"
for t in $targets; do
	[ "${needs[$t]+set}" = set ] || { bad "$t: unknown to this test; add it"; continue; }
	# The recipe lines of the target itself (make -n prints prerequisites'
	# recipes first; the target's own come last and name bench/).
	recipe=$(make -n --no-print-directory "$t" 2>/dev/null)
	for p in ${needs[$t]}; do
		grep -q "mk/deps.sh.*[ :]$p\b" <<<"$recipe" &&
		    ok "$t installs $p" || bad "$t does not install $p"
	done
	while read -r sh script; do
		first=$(head -n 1 "$script")
		case "$first" in
		*bash*) want=bash ;;
		*) want=sh ;;
		esac
		[ "$sh" = "$want" ] && ok "$t runs $script with $sh" ||
		    bad "$t runs $script with $sh, but it starts with $first"
	done < <(grep -o '\b\(sh\|bash\) bench/[^ ]*' <<<"$recipe")
done
echo "make_bench: $fails failures"
[ $fails -eq 0 ]
