#!/usr/bin/env bash
# bench/images: the stock images built from Debian packages (issue 18),
# each figure beside its native baseline measured in the same run.
#  1. cold boot, `keep run` of the python image (Debian's CPython 3.11)
#     against Debian's /usr/bin/python3.11 on the host: -c 'print(1)',
#     -c 'import numpy', -c 'import pandas' (targets: start and import
#     numpy <= 2x native); the static python-static image beside them;
#     print(1) and import numpy again with keep run's record of the
#     image's checked files removed before each run (the first run after
#     a reboot or a new image, which hashes every file it uses);
#  2. memory charged to a run that imports numpy (keep run --stats, the
#     guest's brk + mmap + stack) against the native process's maximum
#     RSS (target <= 1.2x);
#  3. bash -c true, the shell image against the host's bash; the machine
#     image (a whole Debian machine, E2B's default template) beside
#     them: python3 -c 'print(1)' and bash -c true from it, which its
#     size must not slow;
#  4. the time to build each package image and the size of every stock
#     image.
# Figures are medians of RUNS runs (default 10), taken in alternation.
#
# usage: bench/images.sh [BUILD_DIR]   (needs `make images`)
set -u
B=${1:-build}; RUNS=${RUNS:-10}
KEEP=$B/bin/keep; K=$B/keys/dev.public; I=$B/images
PY=/usr/bin/python3.11
# KVM where /dev/kvm opens, the trap platform elsewhere (docs/vmm.md).
for f in "$KEEP" "$I/python.img" "$I/shell.img" "$I/python-static.img" "$I/machine.img"; do
	[ -e "$f" ] || { echo "bench/images: $f is missing (make images)"; exit 1; }
done
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

now() { date +%s%N; }
# median of the numbers on stdin
median() { sort -n | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
ms() { awk -v n="$1" 'BEGIN {printf "%.1f ms", n / 1e6}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2fx", a / b}'; }

# time_pair LABEL NATIVE-COMMAND... -- KEEP-COMMAND...: medians, ratio.
# With FRESH set, that file (keep run's record of the image's checked
# files) is removed before each keep run, untimed.
time_pair() {
	local label=$1 i t0 native=() guest=()
	shift
	while [ "$1" != -- ]; do native+=("$1"); shift; done
	shift
	guest=("$@")
	: >"$tmp/n"; : >"$tmp/g"
	"${native[@]}" >/dev/null 2>&1; "${guest[@]}" >/dev/null 2>&1 # page cache
	for ((i = 0; i < RUNS; i++)); do
		t0=$(now); "${native[@]}" >/dev/null 2>&1; echo $(($(now) - t0)) >>"$tmp/n"
		[ -z "${FRESH:-}" ] || rm -f "$FRESH"
		t0=$(now); "${guest[@]}" >/dev/null 2>&1; echo $(($(now) - t0)) >>"$tmp/g"
	done
	local n g
	n=$(median <"$tmp/n"); g=$(median <"$tmp/g")
	printf '| %s | %s | %s | %s |\n' "$label" "$(ms "$g")" "$(ms "$n")" "$(ratio "$g" "$n")"
}

kr() { "$KEEP" run --trust "$K" "$@"; }
echo "bench/images: $RUNS runs each, medians, cold boots (a new keep run each time)"
echo
echo "| row | keep | native | ratio |"
echo "|---|---|---|---|"
time_pair "python -c 'print(1)'" $PY -c 'print(1)' -- kr "$I/python.img" python -c 'print(1)'
# keep run's record of the files it checked (docs/image-format.md): the
# first run after a reboot or a new image hashes every file it uses.
rec_dir=$([ "$(id -u)" -eq 0 ] && echo /run || echo "${XDG_RUNTIME_DIR:-}")
if [ -n "$rec_dir" ]; then
	REC=$rec_dir/keep-verified-$(python3 -c 'import hashlib, os, sys
print("%02x" % (hashlib.blake2b(os.path.realpath(sys.argv[1]).encode(), digest_size=8).digest()[0] % 64))' "$I/python.img")
	FRESH=$REC time_pair "python -c 'print(1)', no record of checked files" \
	    $PY -c 'print(1)' -- kr "$I/python.img" python -c 'print(1)'
fi
time_pair "python -c 'import numpy'" $PY -c 'import numpy' -- kr "$I/python.img" python -c 'import numpy'
[ -z "${REC:-}" ] || FRESH=$REC time_pair "python -c 'import numpy', no record of checked files" \
    $PY -c 'import numpy' -- kr "$I/python.img" python -c 'import numpy'
time_pair "python -c 'import pandas'" $PY -c 'import pandas' -- kr "$I/python.img" python -c 'import pandas'
time_pair "python-static -c 'print(1)'" $PY -c 'print(1)' -- kr "$I/python-static.img" python -c 'print(1)'
time_pair "bash -c true" /bin/bash -c true -- kr "$I/shell.img" bash -c true
time_pair "machine: python3 -c 'print(1)'" $PY -c 'print(1)' -- kr "$I/machine.img" python3 -c 'print(1)'
time_pair "machine: bash -c true" /bin/bash -c true -- kr "$I/machine.img" bash -c true

# Memory: the native process's maximum RSS, and what keep charges the
# guest (peak of brk + mmap + stack pages it holds).
native_kib=$($PY -c 'import resource, subprocess
subprocess.run(["'$PY'", "-c", "import numpy"], check=True)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)')
guest_kib=$(kr --stats "$I/python.img" python -c 'import numpy' 2>&1 |
	sed -n 's/.*peak memory \([0-9]*\) KiB.*/\1/p')
printf '| memory of import numpy | %s KiB | %s KiB RSS | %s |\n' "$guest_kib" "$native_kib" \
	"$(ratio "${guest_kib:-0}" "$native_kib")"
echo

echo "| image | size | build |"
echo "|---|---|---|"
build_row() { # name: rebuilds the image into tmp and times it
	local name=$1 t0 t
	t0=$(now)
	case $name in
	python) "$KEEP" image build --name python --version 3.11 --memory 1G --defer-hashes \
	    --manifest images/python.manifest \
	    --file /.cache/matplotlib/fontlist-v330.json="$B/stock/mpl/fontlist-v330.json" \
	    -o "$tmp/x.img" >/dev/null;;
	shell) "$KEEP" image build --name shell --version 1.0 --memory 256M --defer-hashes \
	    --manifest "$B/stock/shell.manifest" -o "$tmp/x.img" >/dev/null;;
	machine) "$KEEP" image build --name machine --version 1.0 --memory 2G --defer-hashes \
	    --manifest "$B/stock/machine.manifest" \
	    --file /.cache/matplotlib/fontlist-v330.json="$B/stock/mpl/fontlist-v330.json" \
	    -o "$tmp/x.img" >/dev/null 2>&1;;
	esac
	"$KEEP" image sign --key "$B/keys/dev.secret" "$tmp/x.img"
	t=$(($(now) - t0))
	printf '| %s | %s MiB | %s |\n' "$name" \
	    "$(awk -v s="$(stat -c %s "$I/$name.img")" 'BEGIN {printf "%.1f", s / 1048576}')" "$(ms "$t")"
	rm -f "$tmp/x.img"
}
build_row python
build_row shell
build_row machine
for f in "$I"/*.img; do
	n=$(basename "$f" .img)
	case $n in python|shell|machine) continue;; esac
	printf '| %s | %s MiB | (make) |\n' "$n" "$(awk -v s="$(stat -c %s "$f")" 'BEGIN {printf "%.1f", s / 1048576}')"
done
