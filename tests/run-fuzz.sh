#!/bin/sh
# replay: run each harness's replay build over its seed corpus (and any
#         committed crash reproducers in fuzz/regress/NAME/).
# smoke:  run each libFuzzer build for FUZZ_SECONDS on a scratch copy of
#         its corpus, so the committed corpus is not churned; FUZZ_JOBS
#         (2 unless set: make check's two cores) at a time, each a
#         single process, the results printed in order.
mode=$1; dir=$2; shift 2
pass=0; fail=0

# smoke NAME: one harness's run; its lines in $dir/NAME.out, status 0 or 1.
smoke() {
	n=$1; work=$(mktemp -d) || return 1
	dict=; [ -f "fuzz/$n.dict" ] && dict="-dict=fuzz/$n.dict"
	cp -r "fuzz/corpus/$n"/. "$work"/
	if "$dir/$n" -max_total_time="${FUZZ_SECONDS:-10}" -rss_limit_mb=2048 \
	    -timeout=10 -artifact_prefix="$dir/$n-" $dict "$work" >"$dir/$n.log" 2>&1; then
		echo "PASS: fuzz $n ($(grep -o 'Done [0-9]* runs' "$dir/$n.log" | tail -n 1))" >"$dir/$n.out"
		st=0
	else
		{ echo "FAIL: fuzz $n"; tail -n 40 "$dir/$n.log"; } >"$dir/$n.out"
		st=1
	fi
	rm -rf "$work"
	return $st
}

if [ "$mode" = smoke ]; then
	jobs=${FUZZ_JOBS:-2}; i=0; names=
	for n in "$@"; do
		if [ ! -d "fuzz/corpus/$n" ]; then
			echo "FAIL: fuzz/$n.c has no fuzz/corpus/$n"; fail=$((fail + 1)); continue
		fi
		names="$names $n"
		smoke "$n" &
		i=$((i + 1)); [ $((i % jobs)) -eq 0 ] && wait
	done
	wait
	for n in $names; do
		cat "$dir/$n.out"
		case $(head -n 1 "$dir/$n.out") in
		PASS:*) pass=$((pass + 1)) ;;
		*) fail=$((fail + 1)) ;;
		esac
	done
else
	for n in "$@"; do
		corpus=fuzz/corpus/$n
		if [ ! -d "$corpus" ]; then echo "FAIL: fuzz/$n.c has no $corpus"; fail=$((fail + 1)); continue; fi
		files=$(find "$corpus" fuzz/regress/"$n" -type f 2>/dev/null)
		# shellcheck disable=SC2086
		if "$dir/$n" $files >/dev/null 2>"$dir/$n.log"; then
			echo "PASS: replay $n ($(echo "$files" | wc -w) inputs)"; pass=$((pass + 1))
		else
			echo "FAIL: replay $n"; tail -n 30 "$dir/$n.log"; fail=$((fail + 1))
		fi
	done
fi
echo "fuzz-$mode: $pass passed, $fail failed"
[ -n "$RESULTS" ] && echo "fuzz-$mode $pass $fail 0" >>"$RESULTS"
[ "$fail" -eq 0 ]
