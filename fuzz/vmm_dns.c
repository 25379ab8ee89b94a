/*
 * Fuzz the guest resolver's query parser and answer builder
 * (host/vmm/dns.c): a hostile guest writes every byte. Properties:
 * nothing crashes or reads out of bounds; a parsed name is lower case
 * [a-z0-9_.-] with no empty label, at most 253 bytes; an answer fits
 * DNS_UDP_MAX, echoes the query's id, has QR set, and copies the
 * question exactly; the name table gives every name one address that
 * maps back to it.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "host/vmm/dns.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct dns_table *table;

static void
check_name(const char *n)
{
	size_t len = strlen(n), i;

	if (len == 0 || len > DNS_NAME_MAX || n[0] == '.' || n[len - 1] == '.')
		abort();
	for (i = 0; i < len; i++) {
		char c = n[i];

		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		        c == '-' || c == '_' || c == '.'))
			abort();
		if (c == '.' && n[i + 1] == '.')
			abort();
	}
}

static void
check_answer(const uint8_t *q, const struct dns_query *dq, int rcode,
    const uint8_t *addr)
{
	uint8_t out[DNS_UDP_MAX];
	size_t n = dns_answer_make(q, dq, rcode, addr, out, sizeof(out));

	if (n == 0 || n > DNS_UDP_MAX)
		abort();
	if (out[0] != (uint8_t)(dq->id >> 8) || out[1] != (uint8_t)dq->id ||
	    !(out[2] & 0x80) || (out[3] & 0xf) != (rcode & 0xf))
		abort();
	if (dq->question_end != 0 &&
	    memcmp(out + 12, q + 12, dq->question_end - 12) != 0)
		abort();
	/* Too small a buffer is refused, never overrun. */
	if (dns_answer_make(q, dq, rcode, addr, out, n - 1) != 0)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t addr[4] = { 198, 18, 0, 1 };
	struct dns_query dq;
	uint8_t *copy;
	uint32_t a;
	int rc;

	if (table == NULL) {
		table = mmap(NULL, sizeof(*table), PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (table == MAP_FAILED)
			abort();
	}
	/* An exact-size copy, so any over-read is caught. */
	if ((copy = malloc(size ? size : 1)) == NULL)
		return 0;
	memcpy(copy, data, size);
	rc = dns_query_parse(copy, size, &dq);
	switch (rc) {
	case DNS_PARSE_OK:
		check_name(dq.name);
		if (dq.question_end < 17 || dq.question_end > size)
			abort();
		check_answer(copy, &dq, DNS_RCODE_OK, addr);
		check_answer(copy, &dq, DNS_RCODE_NXDOMAIN, NULL);
		if ((a = dns_table_add(table, dq.name)) != 0 &&
		    (!dns_synthetic(a) || dns_table_find(table, dq.name) != a ||
		        strcmp(dns_table_name(table, a), dq.name) != 0))
			abort();
		break;
	case DNS_PARSE_BADNAME:
		if (dq.question_end == 0 || dq.question_end > size)
			abort();
		check_answer(copy, &dq, DNS_RCODE_NXDOMAIN, NULL);
		break;
	case DNS_PARSE_FORMERR:
	case DNS_PARSE_NOTIMP:
		dq.question_end = 0;
		check_answer(copy, &dq, DNS_RCODE_FORMERR, NULL);
		break;
	case DNS_PARSE_DROP:
		break;
	default:
		abort();
	}
	free(copy);
	return 0;
}
