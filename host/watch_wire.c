/*
 * MSG_VMM_WATCH_EVENTS (host/vmm_msg.h): the check of a whole message
 * from the vmm and the walk of its entries, for the front. Pure.
 */
#include <string.h>

#include "host/vmm_msg.h"

int
watch_events_check(const uint8_t *p, size_t len, struct msg_vmm_watch_events *h)
{
	size_t off = sizeof(*h);

	if (len < sizeof(*h))
		return -1;
	memcpy(h, p, sizeof(*h));
	if (h->end > WATCH_END_STOPPED || h->pad != 0 ||
	    h->count > (MSG_MAX_PAYLOAD - sizeof(*h)) / 5)
		return -1;
	for (uint32_t i = 0; i < h->count; i++) {
		size_t n;

		if (len - off < 4)
			return -1;
		n = (size_t)p[off + 2] | (size_t)p[off + 3] << 8;
		if (p[off] < WATCH_CREATED || p[off] > WATCH_DELETED ||
		    p[off + 1] > 1 || n == 0 || n >= FILE_PATH_MAX ||
		    len - off - 4 < n || p[off + 4] != '/' ||
		    memchr(p + off + 4, '\0', n) != NULL)
			return -1;
		off += 4 + n;
	}
	return off == len ? 0 : -1;
}

size_t
watch_events_entry(const uint8_t *p, size_t off, uint8_t *kind, int *is_dir,
    const char **path, size_t *n)
{
	*kind = p[off];
	*is_dir = p[off + 1];
	*n = (size_t)p[off + 2] | (size_t)p[off + 3] << 8;
	*path = (const char *)p + off + 4;
	return off + 4 + *n;
}
