/*
 * Fuzz the parser of an image's reserve (/etc/keep/reserve,
 * vm_reserve_parse in host/vmm/mem_space.c). Whatever it accepts is a
 * whole number of 2 MiB pages and at most 8 GiB: the guest memory the
 * VMM maps for it must stay within the page tables' reach.
 */
#include <stdint.h>
#include <stdlib.h>

#include "host/vmm/vm_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t b = 1;

	if (vm_reserve_parse(data, size, &b) != 0) {
		if (b != 0)
			abort();
		return 0;
	}
	if (b % (2ULL << 20) != 0 || b > (8ULL << 30))
		abort();
	return 0;
}
