/*
 * Fuzz the ELF validator. Whatever it accepts must be safe to load: each
 * segment's file bytes are read and its memory range is checked against
 * the guest range, as the loader would.
 */
#include <elf.h>
#include <stdint.h>
#include <stdlib.h>

#include "host/vmm/abi.h"
#include "host/vmm/elf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* As loader.c places an interpreter: parsed at base 0 for its extent,
 * then again at the top of an mmap area; what the second parse accepts
 * must lie in that area. */
static void
check_interp_placement(const uint8_t *data, size_t size)
{
	const uint64_t lo = 1ULL << 30, hi = 2ULL << 30;
	struct elf_info probe, in;
	char err[128];
	uint64_t span, at;
	size_t i;

	if (elf_parse_at(data, size, 0, 0, UINT64_MAX / 2, &probe, err,
	        sizeof(err)) != 0 ||
	    probe.type != ET_DYN)
		return;
	span = probe.hi - probe.lo;
	if (probe.hi < probe.lo || span > hi - lo)
		return;
	at = (hi - span) & ~0xfffULL;
	if (elf_parse_at(
	        data, size, at - probe.lo, lo, hi, &in, err, sizeof(err)) != 0)
		return;
	for (i = 0; i < in.nload; i++) {
		const struct elf_load *l = &in.load[i];

		if (l->vaddr < lo || l->vaddr + l->memsz > hi ||
		    l->offset + l->filesz > size || l->filesz > l->memsz)
			abort();
	}
	if (in.entry < in.lo || in.entry >= in.hi || in.lo < lo || in.hi > hi)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint64_t lo = GUEST_LOW_END, hi = 64ULL << 20;
	struct elf_info info;
	volatile uint8_t sink = 0;
	char err[128];
	size_t i;
	uint64_t j;

	check_interp_placement(data, size);
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
