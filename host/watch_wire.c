/*
 * MSG_VMM_WATCH_EVENTS (host/vmm_msg.h): the vmm's batch of a watch's
 * events (coalesced, bounded), and the check of a whole message and the
 * walk of its entries for the front. Pure.
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

void
watch_batch_add(struct watch_batch *b, uint8_t kind, int is_dir,
    const char *path, uint64_t now_ms)
{
	size_t i;

	if (now_ms / 1000 != b->second) {
		b->second = now_ms / 1000;
		b->in_second = 0;
	}
	for (i = 0; i < b->npend; i++)
		if (strcmp(b->pend[i].path, path) == 0) {
			if (!(b->pend[i].kind == WATCH_CREATED &&
			        kind == WATCH_MODIFIED))
				b->pend[i].kind = kind;
			return;
		}
	if (b->in_second >= WATCH_RATE || b->npend >= WATCH_PENDING_MAX ||
	    strlen(path) >= sizeof(b->pend[0].path)) {
		b->dropped++;
		return;
	}
	b->in_second++;
	b->pend[b->npend].kind = kind;
	b->pend[b->npend].is_dir = (uint8_t)(is_dir != 0);
	memcpy(b->pend[b->npend].path, path, strlen(path) + 1);
	b->npend++;
	if (b->flush_at == 0)
		b->flush_at = now_ms + WATCH_FLUSH_MS;
}
