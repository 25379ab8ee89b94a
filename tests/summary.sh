#!/bin/sh
# Add up the per-suite lines "SUITE passed failed skipped" written by the
# steps of `make check` and print the closing line.
f=$1
if [ ! -s "$f" ]; then echo "0 passed, 1 failed, 0 skipped"; exit 1; fi
awk '{ p += $2; f += $3; s += $4; printf "  %-16s %5d passed %3d failed %3d skipped\n", $1, $2, $3, $4 }
     END { printf "%d passed, %d failed, %d skipped\n", p, f, s }' "$f"
