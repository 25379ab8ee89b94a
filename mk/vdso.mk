# The guest's vDSO (docs/vmm.md "Time"): a small shared object built from
# vdso/ with its own flags and embedded in libkeep.a as the guest kernel
# is. Freestanding: no stack protector (the guest's TLS may not exist
# when ld.so first reads a clock), no CET notes, no unwind tables; and
# no relocations at all, since ld.so never relocates a vDSO.

GUEST_VDSO_SO = $(B)/vdso/vdso.so
GUEST_VDSO_C  = $(B)/gen/guest_vdso.c
LIB_OBJS += $(B)/obj/gen/guest_vdso.o

$(GUEST_VDSO_SO): vdso/vdso.c vdso/vvar.h vdso/vdso.map vdso/vdso.lds \
                  host/vmm/abi.h | deps
	@mkdir -p $(dir $@)
	$(CC) -I. -std=gnu11 -O2 $(WARN) -fPIC -fno-stack-protector \
	    -fcf-protection=none -fno-asynchronous-unwind-tables \
	    -nostdlib -shared -Wl,-soname,linux-vdso.so.1 \
	    -Wl,--version-script,vdso/vdso.map -Wl,--hash-style=both \
	    -Wl,-T,vdso/vdso.lds -Wl,-z,max-page-size=4096 \
	    -Wl,--build-id=none -Wl,-s -o $@.tmp vdso/vdso.c
	@if readelf -rW $@.tmp | grep -q R_X86_64; then \
	    echo "vdso: the object has relocations" >&2; exit 1; fi
	@if readelf -lW $@.tmp | grep -c ' LOAD ' | grep -qv '^1$$'; then \
	    echo "vdso: not one PT_LOAD" >&2; exit 1; fi
	@test $$(stat -c %s $@.tmp) -le 16384 || \
	    { echo "vdso: larger than GUEST_VDSO_MAX" >&2; exit 1; }
	mv $@.tmp $@

$(GUEST_VDSO_C): $(GUEST_VDSO_SO) mk/bin2c.sh
	@mkdir -p $(dir $@)
	sh mk/bin2c.sh guest_vdso $< > $@

$(B)/obj/gen/guest_vdso.o: $(GUEST_VDSO_C)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@
