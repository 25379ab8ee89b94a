# The calls the guest answers itself (docs/vmm.md "Calls answered in the
# guest"): guest/fastcall.c and its entry, linked to run at GUEST_FAST,
# flattened and embedded in libkeep.a as the guest kernel is.
# Freestanding: general registers only (a system call keeps the vector
# registers as they were), no red zone, no stack protector, no unwind
# tables, no writable data.

GUEST_FAST_ELF = $(B)/guest/fastcall.elf
GUEST_FAST_BIN = $(B)/guest/fastcall.bin
GUEST_FAST_C   = $(B)/gen/guest_fast.c
LIB_OBJS += $(B)/obj/gen/guest_fast.o

$(GUEST_FAST_ELF): guest/fastcall.c guest/fastcall_entry.S guest/fastcall.h \
                   guest/fastcall.lds host/vmm/abi.h | deps
	@mkdir -p $(dir $@)
	$(CC) -I. -std=gnu11 -O2 $(WARN) -ffreestanding -fno-pic -fno-pie \
	    -mgeneral-regs-only -mno-red-zone -fno-stack-protector \
	    -fcf-protection=none -fno-asynchronous-unwind-tables \
	    -fno-builtin -nostdlib -static -Wl,--build-id=none \
	    -Wl,-T,guest/fastcall.lds -Wl,-e,fast_entry \
	    -o $@.tmp guest/fastcall_entry.S guest/fastcall.c
	@if [ -n "$$(objdump -h $@.tmp | awk '$$2 == ".data" && $$3 != "00000000"')" ]; then \
	    echo "fastcall: writable data" >&2; exit 1; fi
	@if [ "$$(nm $@.tmp | awk '$$3 == "fast_entry" {print $$1}')" != 0000000000036000 ]; then \
	    echo "fastcall: fast_entry is not at GUEST_FAST" >&2; exit 1; fi
	mv $@.tmp $@

$(GUEST_FAST_BIN): $(GUEST_FAST_ELF)
	objcopy -O binary -j .text $< $@
	@test $$(stat -c %s $@) -le 16384 || \
	    { echo "fastcall: larger than GUEST_FAST_MAX" >&2; exit 1; }

$(GUEST_FAST_C): $(GUEST_FAST_BIN) mk/bin2c.sh
	@mkdir -p $(dir $@)
	sh mk/bin2c.sh guest_fast $< > $@

$(B)/obj/gen/guest_fast.o: $(GUEST_FAST_C)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@
