#!/usr/bin/env bash
# The seed corpora that fuzz/seeds/gen_seeds.c owns are exactly its
# output: a wire layout change that was not followed by `make fuzz-seeds`
# would leave seeds that stop at the decoder's first refusal. Also checks
# that two runs give the same bytes (the corpora must not churn).
# GEN_SEEDS: the generator (default build/fuzz-seeds/gen_seeds).
gen=${GEN_SEEDS:-build/fuzz-seeds/gen_seeds}
cd "$(dirname "$0")/.." || exit 1
[ -x "$gen" ] || { echo "FAIL: $gen not built (make $gen)"; exit 1; }
work=$(mktemp -d) || exit 1
trap 'rm -rf "$work"' EXIT
"$gen" "$work/a" || { echo "FAIL: $gen exited $?"; exit 1; }
"$gen" "$work/b" || { echo "FAIL: $gen exited $? (second run)"; exit 1; }
if ! diff -r "$work/a" "$work/b" >/dev/null; then
	echo "FAIL: two runs of $gen differ: its output must be deterministic"
	exit 1
fi
status=0; n=0
for d in "$work"/a/*/; do
	name=$(basename "$d")
	n=$((n + 1))
	if ! out=$(diff -rq "fuzz/corpus/$name" "$d" 2>&1); then
		echo "FAIL: fuzz/corpus/$name differs from the generator's output:"
		echo "$out" | sed "s|$work/a/|generated:|" | head -n 20
		status=1
	fi
done
if [ "$n" -eq 0 ]; then
	echo "FAIL: $gen wrote no corpus"; exit 1
fi
if [ "$status" -ne 0 ]; then
	echo "FAIL: committed seeds are stale: run make fuzz-seeds and commit fuzz/corpus"
	exit 1
fi
echo "PASS: $n generated seed corpora match fuzz/seeds/gen_seeds.c's output"
