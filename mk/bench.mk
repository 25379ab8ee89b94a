# Issue 28's API benchmarks (not part of make check; they print figures
# beside their targets and a same-run baseline, never a threshold).
# make bench-start     create a sandbox + run echo, ITERS=100 times (bench/start.sh)
.PHONY: bench-start
bench-start: $(B)/bin/keep $(B)/bin/keepd images
	bash bench/start.sh $(B)
# make bench-density   N live python contexts (N=1000; small N on a shared
#                      box), memory per context and next-cell time
#                      (bench/density.sh)
.PHONY: bench-density
bench-density: $(B)/bin/keep $(B)/bin/keepd images
	bash bench/density.sh $(B)
