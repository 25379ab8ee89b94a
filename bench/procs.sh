#!/usr/bin/env bash
# bench/procs: bench/procs.c (fork+exit+wait, pipe throughput, thread
# create+join, a condition-variable ping-pong, busybox `sh -c 'echo x |
# cat'` and a 1,000-command shell loop), the same static binary natively
# and in `keep run`, RUNS times each (default 5) in alternation, so that
# the machine's load moves both sides alike; medians side by side, with
# issue 15's targets: fork+exit+wait within 3x of native, pipe throughput
# at least 0.5x native.
#
# usage: bench/procs.sh [BUILD_DIR]   (needs /bin/busybox)
set -u
B=${1:-build}; RUNS=${RUNS:-5}
KEEP=$B/bin/keep; PROCS=$B/bench/procs
# KVM where /dev/kvm opens, the trap platform elsewhere (docs/vmm.md).
for f in "$KEEP" "$PROCS" /bin/busybox; do
	[ -e "$f" ] || { echo "bench/procs: $f is missing"; exit 1; }
done
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/ws/bin" && cp /bin/busybox "$tmp/ws/bin/"

# Each row as "label<TAB>number", the program's own figures.
rows() { sed -n 's/^\([^:]*\): \([0-9.-]*\).*/\1\t\2/p'; }

for ((i = 0; i < RUNS; i++)); do
	"$PROCS" | rows >>"$tmp/native" || exit 1
	"$KEEP" run --memory 128M --timeout 300s --workspace "$tmp/ws" \
	    "$PROCS" | rows >>"$tmp/keep" || exit 1
done

# median LABEL FILE
median() {
	awk -F '\t' -v l="$1" '$1 == l {print $2}' "$2" | sort -g |
	    awk '{v[NR]=$1} END {if (NR == 0) print "-"; else
	         print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'
}

echo "bench/procs: $RUNS runs each, in alternation, medians"
echo
echo "| row | keep | native | keep/native | target |"
echo "|---|---|---|---|---|"
cut -f1 "$tmp/native" | awk '!seen[$0]++' | while IFS= read -r label; do
	k=$(median "$label" "$tmp/keep"); n=$(median "$label" "$tmp/native")
	case $label in
	fork+exit+wait) target="<= 3x" ;;
	pipe) target=">= 0.5x" ;;
	*) target="" ;;
	esac
	awk -v l="$label" -v k="$k" -v n="$n" -v t="$target" 'BEGIN {
		r = (n + 0 != 0) ? sprintf("%.2fx", k / n) : "-"
		if (t == "<= 3x") t = t ((k / n <= 3) ? " (met)" : " (missed)")
		if (t == ">= 0.5x") t = t ((k / n >= 0.5) ? " (met)" : " (missed)")
		gsub(/\|/, "\\|", l)
		printf "| %s | %s | %s | %s | %s |\n", l, k, n, r, t }'
done
echo
echo "units: microseconds, except pipe (MiB/s; higher is better) and the"
echo "shell loop (milliseconds for the whole loop)"
