# Shared by the suites that run CPython's regression tests (python.sh,
# machine.sh): reading regrtest's verbose logs and tallying the sides.
#
# regrtest_results LOG: "name result" per test, sorted.
regrtest_results() {
	sed -n 's/^\(test[^ ]*\) (\([^)]*\))\( \[.*\]\)\{0,1\} \.\.\. \(ok\|FAIL\|ERROR\|skipped\|expected failure\|unexpected success\).*/\2\3 \4/p' "$1" | sort -u
}
regrtest_clean() { grep -q '^Tests result: SUCCESS' "$1" && echo clean || echo FAILURE; }

# regrtest_tally MODULE NATIVE_LOG KEEP_LOG: one line of the table, the
# totals (nclean kclean nok kok total) advanced, and MODULE added to
# differ when keep is not as clean or passes fewer tests. DIR holds the
# working files (regrtest_dir).
regrtest_tally() {
	local m=$1 n=$2 k=$3 d=$regrtest_dir nc kc no ko
	regrtest_results "$n" >"$d/$m.nr"; regrtest_results "$k" >"$d/$m.kr"
	nc=$(regrtest_clean "$n"); kc=$(regrtest_clean "$k")
	no=$(grep -c ' ok$' "$d/$m.nr"); ko=$(grep -c ' ok$' "$d/$m.kr")
	total=$((total+1))
	[ "$nc" = clean ] && nclean=$((nclean+1))
	[ "$kc" = clean ] && kclean=$((kclean+1))
	nok=$((nok+no)); kok=$((kok+ko))
	printf '%-26s %-8s %5d tests ok     %-8s %5d tests ok\n' "$m" "$nc" "$no" "$kc" "$ko"
	grep ' ok$' "$d/$m.nr" | sort >"$d/$m.nok"
	grep ' ok$' "$d/$m.kr" | sort >"$d/$m.kok"
	comm -23 "$d/$m.nok" "$d/$m.kok" >"$d/$m.lost"
	cp "$n" "$d/$m.n.log"; cp "$k" "$d/$m.k.log"
	if [ "$nc" != "$kc" ] || [ -s "$d/$m.lost" ]; then
		differ+=("$m")
	fi
}

# regrtest_report NAME: the totals and, for each module that differs, the
# tests that pass natively only and the errors keep met that native did
# not, most frequent first. Its status: 1 when a module differs.
regrtest_report() {
	local name=$1 d=$regrtest_dir m
	echo "$name: clean modules keep $kclean/$total vs native $nclean/$total;" \
	    "tests passing keep $kok vs native $nok"
	[ ${#differ[@]} -eq 0 ] && return 0
	echo "$name: modules where keep differs from native:"
	for m in "${differ[@]}"; do
		echo "  $m: $(wc -l <"$d/$m.lost") tests pass natively only," \
		    "e.g. $(head -3 "$d/$m.lost" | sed 's/ ok$//' | tr '\n' ' ')"
		grep -hE '^[A-Za-z_.]*(Error|Exception)\b.*' "$d/$m.k.log" | sort >"$d/$m.ke"
		grep -hE '^[A-Za-z_.]*(Error|Exception)\b.*' "$d/$m.n.log" | sort >"$d/$m.ne"
		comm -23 "$d/$m.ke" "$d/$m.ne" | uniq -c | sort -rn | head -3 |
		    sed 's/^ */      /'
	done
	return 1
}
nclean=0 kclean=0 nok=0 kok=0 total=0 differ=()
