# The VMM (issue 4): the guest kernel, the test guests, keep run.
#
# guest/kernel.S is assembled to a flat binary and embedded in libkeep.a,
# so keep and keepd carry the guest kernel they were built with.

DEPS_PKGS += musl-tools busybox-static bash-static

GUEST_KERNEL_BIN = $(B)/guest/kernel.bin
GUEST_KERNEL_C   = $(B)/gen/guest_kernel.c
LIB_OBJS += $(B)/obj/gen/guest_kernel.o

$(B)/guest/kernel.o: guest/kernel.S host/vmm/abi.h | deps
	@mkdir -p $(dir $@)
	$(CC) -I. -c $< -o $@

$(GUEST_KERNEL_BIN): $(B)/guest/kernel.o
	objcopy -O binary -j .text $< $@

$(GUEST_KERNEL_C): $(GUEST_KERNEL_BIN) mk/bin2c.sh
	@mkdir -p $(dir $@)
	sh mk/bin2c.sh guest_kernel $< > $@

$(B)/obj/gen/guest_kernel.o: $(GUEST_KERNEL_C)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

# Test guests: one static musl program per behaviour (tests/guests/).
GUEST_SRCS = $(wildcard tests/guests/*.c)
GUEST_BINS = $(patsubst tests/guests/%.c,$(B)/guests/%,$(GUEST_SRCS))
ALL_EXTRA += $(GUEST_BINS)

$(B)/guests/%: tests/guests/%.c tests/guests/lines.h | deps
	@mkdir -p $(dir $@)
	musl-gcc -static -O1 -Wall -Werror -o $@ $<

# bench/boot (not part of make check): keep's boot, system call, compute
# and python costs beside the bare KVM floor, QEMU and native runs.
DEPS_BENCH_VMM = qemu-system-x86
.PHONY: bench-vmm
bench-vmm: $(B)/bench/boot $(B)/bench/kvm_floor $(B)/bench/pvh.elf \
           $(B)/bin/keep $(GUEST_BINS) $(STOCK_IMAGES)
	@sh mk/deps.sh $(DEPS_BENCH_VMM)
	$(B)/bench/boot $(B)

$(B)/bench/boot: bench/boot.c | deps
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< -lbsd

# A baseline, not keep code: built without the project's warning set.
$(B)/bench/kvm_floor: bench/kvm_floor.c | deps
	@mkdir -p $(dir $@)
	$(CC) -O2 -Wall -o $@ $<

$(B)/bench/pvh.elf: bench/pvh.S | deps
	@mkdir -p $(dir $@)
	$(CC) -m32 -c $< -o $(B)/bench/pvh.o
	ld -m elf_i386 -Ttext=0x100000 -e pvh_start -o $@ $(B)/bench/pvh.o

# bench/procs (not part of make check): guest fork+exit+wait, pipe
# throughput, threads and shell work, the same static program natively and
# in keep, in alternation (bench/procs.sh).
.PHONY: bench-procs
bench-procs: $(B)/bench/procs $(B)/bin/keep
	bash bench/procs.sh $(B)

$(B)/bench/procs: bench/procs.c
	@mkdir -p $(dir $@)
	musl-gcc -static -O2 -Wall -Werror -o $@ $<

# The compatibility suites (not part of make check: several minutes):
# Debian's busybox-static applets, bash-static and sash scripts, and
# CPython's own regression tests, each in keep run and natively with the
# same binary (machine: the machine image's Debian python3 beside the
# host's), with the scores side by side at the end (tests/compat/,
# docs/compat.md). Their packages are installed here, not by make deps.
DEPS_COMPAT = busybox-static bash-static sash libpython3.11-testsuite \
              util-linux coreutils
COMPAT_SUITES = busybox shells python machine
.PHONY: check-compat
check-compat: $(B)/bin/keep $(DEV_KEY) $(STOCK_DIR)/python $(MACHINE_IMG)
	@sh mk/deps.sh $(DEPS_COMPAT)
	@status=0; for s in $(COMPAT_SUITES); do \
	  echo "== $$s"; \
	  (bash tests/compat/$$s.sh; echo $$? >$(B)/compat-$$s.rc) | \
	      tee $(B)/compat-$$s.txt; \
	  [ "$$(cat $(B)/compat-$$s.rc)" = 0 ] || status=1; \
	done; \
	echo "== compatibility, keep beside native (docs/compat.md)"; \
	grep -h -e '^busybox: [0-9]' -e '^shells: bash' -e '^python: clean' \
	    -e '^machine: clean' \
	    $(foreach s,$(COMPAT_SUITES),$(B)/compat-$(s).txt); \
	exit $$status

# bench/templates (not part of make check): python from a template
# through keep run and the API beside native python3.11, numpy, and an
# empty template's clone beside the bare KVM floor (docs/templates.md).
.PHONY: bench-templates
bench-templates: $(B)/bench/tplclone $(B)/bench/kvm_floor $(B)/bin/keep \
                 $(B)/bin/keepd $(GUEST_BINS) $(STOCK_IMAGES)
	bash bench/templates.sh $(B)

$(B)/bench/tplclone: bench/tplclone.c $(B)/libkeep.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< $(B)/libkeep.a $(LDLIBS)
