#!/usr/bin/env bash
# bench/trap: the trap platform (docs/vmm.md "The trap platform") beside
# its floors, measured in the same run (bench/trap_floor.c): a call served
# by the vm process against an in-process SIGSYS round trip plus a
# spinning hand-off between two processes (target 1.2x); a call answered
# in the guest's process (getpid, in the stub's SIGSYS handler) and a
# clock read through keep's vDSO against the SIGSYS round trip (target
# 1.5x); a call served with more busy guests than cores against a
# futex ping-pong (target 1.2x);
# compute against the same program natively (target 0.95x or better);
# python -c 'print(1)' and import numpy cold against Debian's python3.11
# (target 1.5x); fork+exit+wait against the same binary natively (target
# 3x) and pipe throughput between two processes (target 0.5x native or
# better; tests/guests/procloop.c). Medians of RUNS (default 7), keep and
# native in alternation.
#
# usage: bench/trap.sh [BUILD_DIR]
set -u
B=${1:-build}; RUNS=${RUNS:-7}; N=${N:-200000}
KEEP=$B/bin/keep; G=$B/guests; FLOOR=$B/bench/trap_floor
T="--trust $B/keys/dev.public $B/images/python.img"
FORKS=${FORKS:-200}; MIB=${MIB:-256}
for f in "$KEEP" "$FLOOR" "$G/sysloop" "$G/compute" "$G/procloop" "$B/images/python.img"; do
	[ -e "$f" ] || { echo "bench/trap: $f is missing"; exit 1; }
done
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

med() { sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
# run_us ARGS...: the guest's run time from keep run --stats, in us.
run_us() {
	"$KEEP" run --platform trap --stats "$@" 2>&1 >/dev/null |
	    sed -n 's/.*run \([0-9]*\) us.*/\1/p'
}
# wall_ms CMD...: the command's wall time in ms (microseconds, e-3).
wall_ms() {
	local t0 t1
	t0=$(date +%s%N); "$@" >/dev/null 2>&1; t1=$(date +%s%N)
	echo $(( (t1 - t0) / 1000 ))e-3
}

"$FLOOR" >"$tmp/floor" || exit 1
floor() { awk -v k="$1" '$1 == k {print $2}' "$tmp/floor"; }
for ((i = 0; i < RUNS; i++)); do
	a=$(run_us "$G/sysloop" "$N"); b=$(run_us "$G/sysloop" 0)
	echo "$(( (a - b) * 1000 / N ))" >>"$tmp/call"
	# A call answered in the guest's process: getpid, in the stub.
	a=$(run_us "$G/sysloop" "$N" getpid)
	echo "$(( (a - b) * 1000 / N ))" >>"$tmp/here"
	# A call answered in the guest: a clock read through keep's vDSO.
	"$KEEP" run --platform trap "$G/sysloop" 1000000 clock | awk '{print $2}' >>"$tmp/clock"
	# Three guests calling at once on two cores: the futex row.
	for j in 1 2 3; do run_us "$G/sysloop" "$N" >"$tmp/busy.$j" & done; wait
	echo "$(( ( $(cat "$tmp/busy.1") + $(cat "$tmp/busy.2") + $(cat "$tmp/busy.3") ) * 1000 / (3 * N) ))" >>"$tmp/busy"
	wall_ms "$G/compute" 300000000 >>"$tmp/cn"
	wall_ms "$KEEP" run --platform trap "$G/compute" 300000000 >>"$tmp/ck"
	wall_ms /usr/bin/python3.11 -c 'print(1)' >>"$tmp/pn"
	wall_ms "$KEEP" run --platform trap $T python -c 'print(1)' >>"$tmp/pk"
	wall_ms /usr/bin/python3.11 -c 'import numpy' >>"$tmp/nn"
	wall_ms "$KEEP" run --platform trap $T python -c 'import numpy' >>"$tmp/nk"
	# Per fork: the loop's time less an empty run's, in us.
	a=$(wall_ms "$G/procloop" fork "$FORKS"); b=$(wall_ms "$G/procloop" fork 0)
	awk -v a="$a" -v b="$b" -v n="$FORKS" 'BEGIN {print (a - b) * 1000 / n}' >>"$tmp/fn"
	a=$(wall_ms "$KEEP" run --platform trap "$G/procloop" fork "$FORKS")
	b=$(wall_ms "$KEEP" run --platform trap "$G/procloop" fork 0)
	awk -v a="$a" -v b="$b" -v n="$FORKS" 'BEGIN {print (a - b) * 1000 / n}' >>"$tmp/fk"
	# MiB/s through the pipe.
	a=$(wall_ms "$G/procloop" pipe "$MIB")
	awk -v a="$a" -v m="$MIB" 'BEGIN {print m * 1000 / a}' >>"$tmp/qn"
	a=$(wall_ms "$KEEP" run --platform trap "$G/procloop" pipe "$MIB")
	awk -v a="$a" -v m="$MIB" 'BEGIN {print m * 1000 / a}' >>"$tmp/qk"
done
sigsys=$(floor sigsys); spin=$(floor spin); futex=$(floor futex)
call=$(med <"$tmp/call"); busy=$(med <"$tmp/busy")
row() { # LABEL KEEP BASE UNIT TARGET
	awk -v l="$1" -v k="$2" -v b="$3" -v u="$4" -v t="$5" 'BEGIN {
	    printf "| %s | %.6g %s | %.6g %s | %.2fx | %s |\n", l, k, u, b, u, k / b, t }'
}
echo "bench/trap: $RUNS runs, medians; floors: getppid $(floor native) ns, SIGSYS round trip $sigsys ns, spinning hand-off $spin ns, futex ping-pong $futex ns"
echo
echo "| row | keep (trap) | baseline | ratio | target |"
echo "|---|---|---|---|---|"
row "a call served by the vm process" "$call" "$((sigsys + spin))" ns "1.2x (SIGSYS + spinning hand-off)"
row "a call answered in the guest's process (getpid, the stub's handler)" "$(med <"$tmp/here")" "$sigsys" ns "1.5x (SIGSYS round trip)"
row "a call answered in the guest (clock_gettime, keep's vDSO)" "$(med <"$tmp/clock")" "$sigsys" ns "1.5x (SIGSYS round trip)"
row "the same, 3 busy guests on 2 cores" "$busy" "$futex" ns "1.2x (futex ping-pong)"
row "compute (300M xorshift steps)" "$(med <"$tmp/ck")" "$(med <"$tmp/cn")" ms "1/0.95 = 1.05x"
row "python -c 'print(1)', cold" "$(med <"$tmp/pk")" "$(med <"$tmp/pn")" ms "1.5x"
row "python -c 'import numpy', cold" "$(med <"$tmp/nk")" "$(med <"$tmp/nn")" ms "1.5x"
row "fork+exit+wait" "$(med <"$tmp/fk")" "$(med <"$tmp/fn")" us "3x"
row "pipe throughput ($MIB MiB, 64 KiB writes)" "$(med <"$tmp/qk")" "$(med <"$tmp/qn")" MiB/s "0.5x or more"
