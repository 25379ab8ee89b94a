/*
 * Fuzz the CPUID cache decoder. The input is a key (CPUID_KEY_LEN bytes)
 * and a cache file. Whatever the decoder accepts must be bounded and must
 * encode back to exactly the same bytes: nothing in a file it accepts is
 * ignored.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "host/vmm/cpuid.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kvm_cpuid2 *c;
	uint8_t *again;
	size_t len;

	if (size < CPUID_KEY_LEN)
		return 0;
	c = cpuid_cache_decode(
	    data + CPUID_KEY_LEN, size - CPUID_KEY_LEN, data);
	if (c == NULL)
		return 0;
	if (c->nent == 0 || c->nent > CPUID_MAX_ENT)
		abort();
	again = cpuid_cache_encode(c, data, &len);
	if (again == NULL || len != size - CPUID_KEY_LEN ||
	    memcmp(again, data + CPUID_KEY_LEN, len) != 0)
		abort();
	free(again);
	free(c);
	return 0;
}
