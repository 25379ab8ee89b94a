/*
 * Fuzz the front's check of MSG_VMM_WATCH_EVENTS (host/watch_wire.c),
 * a message from the vmm. Properties: nothing crashes or over-reads (the
 * input is an exact-size copy); a message that passes walks entry by
 * entry to exactly its end, each entry a known kind and a path that
 * starts with '/' and holds no NUL.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "host/vmm_msg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct msg_vmm_watch_events h;
	uint8_t *p;
	size_t off;

	if ((p = malloc(size ? size : 1)) == NULL)
		return 0;
	memcpy(p, data, size);
	if (watch_events_check(p, size, &h) == 0) {
		off = sizeof(h);
		for (uint32_t i = 0; i < h.count; i++) {
			const char *path;
			uint8_t kind;
			int is_dir;
			size_t n;

			off = watch_events_entry(
			    p, off, &kind, &is_dir, &path, &n);
			if (kind < WATCH_CREATED || kind > WATCH_DELETED ||
			    path[0] != '/' || memchr(path, '\0', n) != NULL ||
			    off > size)
				abort();
		}
		if (off != size)
			abort();
	}
	free(p);
	return 0;
}
