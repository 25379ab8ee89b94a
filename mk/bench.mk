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
# make bench-net       issue 29's network rows, each beside the same work
#                      natively on loopback in the same run: a guest's TCP
#                      stream and connect + first byte to a host server by
#                      name (keep's resolver and egress), pip install of a
#                      local wheel, requests through a port beside nginx
#                      (bench/net.sh). wrk and nginx are benchmark-only:
#                      make deps leaves them out, this target installs them.
DEPS_BENCH_NET = wrk nginx-light
.PHONY: bench-net
bench-net: $(B)/bench/netbench $(B)/bench/netbench.img $(B)/bin/keep \
           $(B)/bin/keepd $(B)/images/machine.img
	@sh mk/deps.sh $(DEPS_BENCH_NET)
	bash bench/net.sh $(B)

# bench/netbench.c runs natively and as the guest: a static musl binary,
# built without the project's warning set (a baseline's tool, as
# bench/trap_floor.c is). Its image carries the images' resolver files,
# so the guest's getaddrinfo asks keep's resolver.
$(B)/bench/netbench: bench/netbench.c | deps
	@mkdir -p $(dir $@)
	musl-gcc -static -O2 -Wall -o $@ $<

$(B)/bench/netbench.img: $(B)/bench/netbench images/resolv.conf images/hosts \
                         | $(B)/bin/keep $(B)/keys/dev.secret
	$(B)/bin/keep image build --name netbench --version 1 --memory 64M \
	    --command netbench --file /etc/resolv.conf=images/resolv.conf \
	    --file /etc/hosts=images/hosts $< -o $@.tmp
	$(sign_image)
