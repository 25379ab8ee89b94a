# The VMM (issue 4): the guest kernel, the test guests, keep run.
#
# guest/kernel.S is assembled to a flat binary and embedded in libkeep.a,
# so keep and keepd carry the guest kernel they were built with.

DEPS_PKGS += musl-tools busybox-static

GUEST_KERNEL_BIN = $(B)/guest/kernel.bin
GUEST_KERNEL_C   = $(B)/gen/guest_kernel.c
LIB_OBJS += $(B)/obj/gen/guest_kernel.o

$(B)/guest/kernel.o: guest/kernel.S host/vmm/abi.h
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

$(B)/guests/%: tests/guests/%.c
	@mkdir -p $(dir $@)
	musl-gcc -static -O1 -Wall -Werror -o $@ $<
