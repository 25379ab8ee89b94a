# The trap platform's stub (guest/trap_stub.c, docs/vmm.md "The trap
# platform"): a freestanding static-pie ELF with no relocations,
# embedded whole in libkeep.a; a vm process executes it from a sealed
# memfd as each guest process on a host without KVM.

TRAP_STUB_ELF = $(B)/guest/trap_stub.elf
TRAP_STUB_C   = $(B)/gen/trap_stub.c
LIB_OBJS += $(B)/obj/gen/trap_stub.o

$(TRAP_STUB_ELF): guest/trap_stub.c guest/trap_stub_entry.S host/vmm/abi.h \
                  host/vmm/trap_abi.h guest/fastcall.c guest/fastcall.h | deps
	@mkdir -p $(dir $@)
	$(CC) -I. -std=gnu11 -O2 $(WARN) -ffreestanding -fPIE \
	    -mgeneral-regs-only -fno-stack-protector -fcf-protection=none \
	    -fno-asynchronous-unwind-tables -fno-builtin -nostdlib \
	    -static-pie -Wl,--build-id=none -Wl,-z,noexecstack \
	    -Wl,-e,_stub_start -o $@.tmp guest/trap_stub_entry.S guest/trap_stub.c \
	    guest/fastcall.c
	@if readelf -r $@.tmp | grep -q R_X86_64; then \
	    echo "trap stub: has relocations (no loader applies them)" >&2; exit 1; fi
	mv $@.tmp $@

$(TRAP_STUB_C): $(TRAP_STUB_ELF) mk/bin2c.sh
	@mkdir -p $(dir $@)
	sh mk/bin2c.sh trap_stub $< > $@

$(B)/obj/gen/trap_stub.o: $(TRAP_STUB_C)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

# bench/trap (not part of make check): the trap platform beside its
# floors, measured in the same run (bench/trap.sh).
.PHONY: bench-trap
bench-trap: $(B)/bench/trap_floor $(B)/bin/keep $(GUEST_BINS) $(STOCK_IMAGES)
	bash bench/trap.sh $(B)

# A baseline, not keep code: built without the project's warning set.
$(B)/bench/trap_floor: bench/trap_floor.c | deps
	@mkdir -p $(dir $@)
	$(CC) -D_GNU_SOURCE -O2 -Wall -o $@ $<

# make check-trap: the integration tests again with every guest on the
# trap platform (KEEP_PLATFORM=trap: keep run's default, and keepd.yaml's
# platform in tests/lib/keepd.sh), for a machine with /dev/kvm, where
# make check ran them on KVM. .ci/run runs it there; without /dev/kvm
# make check already ran them on trap. Its tally is
# $(B)/check-trap.results. T=TEST... runs those tests instead.
.PHONY: check-trap
check-trap: all $(INTEGRATION_BINS)
	@rm -f $(B)/check-trap.results $(B)/check-trap.results.failed
	@KEEP_PLATFORM=trap JOBS=$(INTEGRATION_JOBS) RESULTS=$(abspath $(B))/check-trap.results \
	    bash tests/run-tests.sh check-trap $(or $(T),$(sort $(wildcard tests/integration/*.sh)))
