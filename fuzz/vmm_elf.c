/*
 * Fuzz the ELF validator. Whatever it accepts must be safe to load: each
 * segment's file bytes are read and its memory range is checked against
 * the guest range, as the loader would.
 */
#include <stdint.h>
#include <stdlib.h>

#include "host/vmm/abi.h"
#include "host/vmm/elf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint64_t lo = GUEST_LOW_END, hi = 64ULL << 20;
	struct elf_info info;
	volatile uint8_t sink = 0;
	char err[128];
	size_t i;
	uint64_t j;

	if (elf_parse(data, size, lo, hi, &info, err, sizeof(err)) != 0)
		return 0;
	for (i = 0; i < info.nload; i++) {
		const struct elf_load *l = &info.load[i];

		if (l->vaddr < lo || l->vaddr + l->memsz > hi ||
		    l->offset + l->filesz > size || l->filesz > l->memsz)
			abort();
		for (j = 0; j < l->filesz; j++)
			sink ^= data[l->offset + j];
	}
	if (info.entry < info.lo || info.entry >= info.hi)
		abort();
	/* The interpreter path the loader looks up must lie in the file,
	 * NUL after it. */
	if (info.interp_len != 0 &&
	    (info.interp_off + info.interp_len >= size ||
	        data[info.interp_off + info.interp_len] != '\0'))
		abort();
	(void)sink;
	return 0;
}
