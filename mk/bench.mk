# Issue 28's API benchmarks (not part of make check; they print figures
# beside their targets and a same-run baseline, never a threshold).
# make bench-start     create a sandbox + run echo, ITERS=100 times (bench/start.sh)
.PHONY: bench-start
bench-start: $(B)/bin/keep $(B)/bin/keepd images
	bash bench/start.sh $(B)
