/*
 * Fuzz the check of a live context's journal (host/ctx_journal.h), any
 * bytes: a journal read back from disk after a crash. It must never read
 * past its input, and what it calls valid must scan again to the same
 * count.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "host/ctx_journal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ctx_journal_head h;
	uint64_t cells, again;
	size_t valid, valid2;

	if (ctx_journal_scan(data, size, &h, &cells, &valid) != 0)
		return 0;
	if (valid > size || valid < sizeof(h) ||
	    ctx_journal_scan(data, valid, &h, &again, &valid2) != 0 ||
	    again != cells || valid2 != valid)
		abort();
	(void)ctx_journal_payload_ok(data, size);
	return 0;
}
