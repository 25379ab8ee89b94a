/*
 * Fuzz the parse of a paused context's memory image (host/vmm/snapshot.c,
 * vm_snap_parse): the bytes are what follows the seal, which a vm process
 * (perhaps one a guest took over) wrote. The harness puts a valid seal in
 * front, pads to a page, and takes the layout the parse must match from
 * the state's first words (mmap_lo, mmap_hi, the stack's top as the
 * guest's size, then nfiles at word 9), so
 * the fuzzer reaches the page maps, descriptors, references and runs.
 * No input may read past the buffer (the sanitizers watch) or be refused
 * without a reason.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "host/vmm/snapshot.h"
#include "host/vmm/vm_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t
word(const uint8_t *data, size_t size, size_t i)
{
	uint64_t v = 0;

	if ((i + 1) * 8 <= size)
		memcpy(&v, data + i * 8, 8);
	return v;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vm_snap_layout lay;
	struct vm_snap_seal seal;
	size_t meta_len;
	uint8_t *meta;
	char err[128];

	if (size > (1u << 20))
		return 0;
	meta_len = (sizeof(seal) + size + VM_PAGE - 1) & ~(VM_PAGE - 1);
	if ((meta = calloc(1, meta_len)) == NULL)
		return 0;
	memset(&lay, 0, sizeof(lay));
	/* The guest's size from the state's stack top (word 3), where it
	 * is a whole number of 2 MiB pages from 64 MiB to 64 GiB: a
	 * context saved with the images' 2 GiB fits as one with 64 MiB. */
	lay.memsz = word(data, size, 3);
	if (lay.memsz < (64ULL << 20) || lay.memsz > (64ULL << 30) ||
	    lay.memsz % (2ULL << 20) != 0)
		lay.memsz = 64ULL << 20;
	lay.low_end = 2ULL << 20;
	lay.mmap_lo = word(data, size, 0);
	lay.mmap_hi = word(data, size, 1);
	lay.nfds = 1024;
	lay.nfiles = word(data, size, 9) & 0xffffff;
	lay.file_len = meta_len + lay.memsz + sizeof(struct vm_snap_end);
	memset(&seal, 0, sizeof(seal));
	memcpy(seal.magic, VM_SNAP_MAGIC, 8);
	seal.version = VM_SNAP_VERSION;
	seal.seal_len = sizeof(seal);
	seal.file_len = lay.file_len;
	seal.meta_len = meta_len;
	seal.memsz = lay.memsz;
	memcpy(meta, &seal, sizeof(seal));
	if (size > 0)
		memcpy(meta + sizeof(seal), data, size);
	if (vm_snap_parse(meta, meta_len, &lay, err, sizeof(err)) != 0) {
		if (memchr(err, '\0', sizeof(err)) == NULL)
			abort();
	}
	free(meta);
	return 0;
}
