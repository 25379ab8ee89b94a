#!/bin/sh
# Add up the per-suite lines "SUITE passed failed skipped" written by the
# steps of `make check` and print the closing line.
f=$1
if [ ! -s "$f" ]; then echo "0 passed, 1 failed, 0 skipped"; exit 1; fi
# The tests that did not run for want of /dev/kvm (5th column) get a
# line of their own, before the closing one.
awk '{ p += $2; f += $3; s += $4; k += $5; printf "  %-16s %5d passed %3d failed %3d skipped\n", $1, $2, $3, $4 }
     END { printf "%d of the skipped did not run for want of /dev/kvm (make check-kvm runs them)\n", k
           printf "%d passed, %d failed, %d skipped\n", p, f, s }' "$f"
