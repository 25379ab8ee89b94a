/* A live context's journal: its format checks (host/ctx_journal.h). */
#include <string.h>

#include <sodium.h>

#include "host/ctx_journal.h"

static uint32_t
get_u32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	    (uint32_t)p[3] << 24;
}

static int
terminated(const char *s, size_t max)
{
	return memchr(s, '\0', max) != NULL;
}

int
ctx_journal_payload_ok(const uint8_t *p, size_t len)
{
	size_t at = 8, l;
	uint32_t nenv, i;

	if (len < 8 || len > CTX_JOURNAL_PAYLOAD_MAX)
		return -1;
	l = get_u32(p);
	nenv = get_u32(p + 4);
	if (len - at < l || memchr(p + at, '\0', l) != NULL)
		return -1;
	at += l;
	for (i = 0; i < nenv; i++) {
		if (len - at < 4)
			return -1;
		l = get_u32(p + at);
		at += 4;
		if (len - at < l || memchr(p + at, '\0', l) != NULL)
			return -1;
		at += l;
	}
	return at == len ? 0 : -1;
}

void
ctx_journal_record_head(
    const uint8_t *p, size_t len, uint8_t rec[CTX_JOURNAL_REC_HDR])
{
	rec[0] = (uint8_t)len;
	rec[1] = (uint8_t)(len >> 8);
	rec[2] = (uint8_t)(len >> 16);
	rec[3] = (uint8_t)(len >> 24);
	crypto_generichash(rec + 4, CTX_JOURNAL_HASH, p, len, NULL, 0);
}

int
ctx_journal_scan(const uint8_t *buf, size_t len, struct ctx_journal_head *head,
    uint64_t *cells, size_t *valid)
{
	uint8_t h[CTX_JOURNAL_HASH];
	size_t at = sizeof(*head), l;

	*cells = 0;
	*valid = 0;
	if (len < sizeof(*head))
		return -1;
	memcpy(head, buf, sizeof(*head));
	if (memcmp(head->magic, CTX_JOURNAL_MAGIC, 8) != 0 ||
	    !terminated(head->name, sizeof(head->name)) ||
	    !terminated(head->from, sizeof(head->from)) ||
	    !terminated(head->sbx, sizeof(head->sbx)) ||
	    !terminated(head->owner, sizeof(head->owner)) ||
	    !terminated(head->cwd, sizeof(head->cwd)) ||
	    head->language > CTX_LANG_JS || head->kind > CTX_JOURNAL_SNAPSHOT)
		return -1;
	*valid = at;
	while (len - at >= CTX_JOURNAL_REC_HDR) {
		l = get_u32(buf + at);
		if (l > CTX_JOURNAL_PAYLOAD_MAX ||
		    len - at - CTX_JOURNAL_REC_HDR < l)
			break;
		crypto_generichash(
		    h, sizeof(h), buf + at + CTX_JOURNAL_REC_HDR, l, NULL, 0);
		if (sodium_memcmp(h, buf + at + 4, sizeof(h)) != 0 ||
		    ctx_journal_payload_ok(buf + at + CTX_JOURNAL_REC_HDR, l) !=
		        0)
			break;
		at += CTX_JOURNAL_REC_HDR + l;
		(*cells)++;
		*valid = at;
	}
	return 0;
}
