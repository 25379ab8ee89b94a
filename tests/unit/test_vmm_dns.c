/*
 * Unit tests for the guest resolver's packets and names (host/vmm/dns.c):
 * queries parsed or refused as a hostile guest may write them, answers
 * as a stub resolver reads them, and the table of keep's addresses.
 */
#include <sys/mman.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "host/vmm/dns.h"

/* A query: header (id 0x1234, flags, counts) then the bytes given. */
static size_t
query(uint8_t *out, uint16_t flags, uint16_t qd, uint16_t an, uint16_t ar,
    const void *rest, size_t len)
{
	uint8_t h[12] = { 0x12, 0x34, (uint8_t)(flags >> 8), (uint8_t)flags, 0,
		(uint8_t)qd, 0, (uint8_t)an, 0, 0, 0, (uint8_t)ar };

	memcpy(out, h, sizeof(h));
	memcpy(out + sizeof(h), rest, len);
	return sizeof(h) + len;
}

#define Q_ALLOWED                                                              \
	"\x07"                                                                 \
	"Allowed\x04test\x00\x00\x01\x00\x01"

static void
test_parse_ok(void **state)
{
	uint8_t p[512];
	struct dns_query q;
	size_t n;

	(void)state;
	n = query(p, 0x0100, 1, 0, 0, Q_ALLOWED, sizeof(Q_ALLOWED) - 1);
	assert_int_equal(dns_query_parse(p, n, &q), DNS_PARSE_OK);
	assert_string_equal(q.name, "allowed.test"); /* lower case */
	assert_int_equal(q.id, 0x1234);
	assert_int_equal(q.qtype, DNS_TYPE_A);
	assert_int_equal(q.qclass, DNS_CLASS_IN);
	assert_int_equal(q.question_end, n);
	/* EDNS's OPT record in the additional section is let be. */
	n = query(p, 0x0100, 1, 0, 1,
	    Q_ALLOWED "\x00\x00\x29\x04\xd0\0\0\0\0\0\0",
	    sizeof(Q_ALLOWED) - 1 + 11);
	assert_int_equal(dns_query_parse(p, n, &q), DNS_PARSE_OK);
	assert_int_equal(q.question_end, 12 + sizeof(Q_ALLOWED) - 1);
}

static void
test_parse_refused(void **state)
{
	static const uint8_t label64[] =
	    "\x40"
	    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	    "aaaaaaaaaaaaaaaaaaaaaaaa\x00\x00\x01\x00\x01";
	uint8_t p[700] = { 0 }, name[300];
	struct dns_query q;
	size_t n, i;

	(void)state;
	assert_int_equal(dns_query_parse(p, 0, &q), DNS_PARSE_DROP);
	assert_int_equal(dns_query_parse(p, 11, &q), DNS_PARSE_DROP);
	/* An answer is never answered. */
	n = query(p, 0x8100, 1, 0, 0, Q_ALLOWED, sizeof(Q_ALLOWED) - 1);
	assert_int_equal(dns_query_parse(p, n, &q), DNS_PARSE_DROP);
	/* Longer than a UDP query may be. */
	memset(p, 0, sizeof(p));
	assert_int_equal(dns_query_parse(p, 513, &q), DNS_PARSE_DROP);
	n = query(p, 0x1000, 1, 0, 0, Q_ALLOWED, sizeof(Q_ALLOWED) - 1);
	assert_int_equal(dns_query_parse(p, n, &q), DNS_PARSE_NOTIMP);
	assert_int_equal(q.id, 0x1234);
	n = query(p, 0x0100, 2, 0, 0, Q_ALLOWED, sizeof(Q_ALLOWED) - 1);
	assert_int_equal(dns_query_parse(p, n, &q), DNS_PARSE_FORMERR);
	n = query(p, 0x0100, 1, 1, 0, Q_ALLOWED, sizeof(Q_ALLOWED) - 1);
	assert_int_equal(dns_query_parse(p, n, &q), DNS_PARSE_FORMERR);
	/* A compression pointer, in a question: refused, never followed. */
	n = query(p, 0x0100, 1, 0, 0, "\xc0\x0c\x00\x01\x00\x01", 6);
	assert_int_equal(dns_query_parse(p, n, &q), DNS_PARSE_FORMERR);
	n = query(p, 0x0100, 1, 0, 0, label64, sizeof(label64) - 1);
	assert_int_equal(dns_query_parse(p, n, &q), DNS_PARSE_FORMERR);
	/* Every truncation of a good query. */
	n = query(p, 0x0100, 1, 0, 0, Q_ALLOWED, sizeof(Q_ALLOWED) - 1);
	for (i = 12; i < n; i++)
		assert_int_equal(dns_query_parse(p, i, &q), DNS_PARSE_FORMERR);
	/* A label past the packet's end. */
	n = query(p, 0x0100, 1, 0, 0,
	    "\x3f"
	    "ab",
	    3);
	assert_int_equal(dns_query_parse(p, n, &q), DNS_PARSE_FORMERR);
	/* Bytes no host name has, the root, and a name past 253: answered
	 * NXDOMAIN, with the question. */
	n = query(p, 0x0100, 1, 0, 0,
	    "\x03"
	    "a\0b\x00\x00\x01\x00\x01",
	    9);
	assert_int_equal(dns_query_parse(p, n, &q), DNS_PARSE_BADNAME);
	assert_int_equal(q.question_end, n);
	n = query(p, 0x0100, 1, 0, 0, "\x00\x00\x01\x00\x01", 5);
	assert_int_equal(dns_query_parse(p, n, &q), DNS_PARSE_BADNAME);
	for (i = 0; i < 4; i++) {
		name[i * 64] = 63;
		memset(name + i * 64 + 1, 'a', 63);
	}
	memcpy(name + 256, "\x00\x00\x01\x00\x01", 5);
	n = query(p, 0x0100, 1, 0, 0, name, 261);
	assert_int_equal(dns_query_parse(p, n, &q), DNS_PARSE_BADNAME);
	/* 253 exactly is a name. */
	name[3 * 64] = 61;
	memcpy(name + 3 * 64 + 62, "\x00\x00\x01\x00\x01", 5);
	n = query(p, 0x0100, 1, 0, 0, name, 3 * 64 + 67);
	assert_int_equal(dns_query_parse(p, n, &q), DNS_PARSE_OK);
	assert_int_equal(strlen(q.name), 253);
}

static void
test_answer(void **state)
{
	static const uint8_t addr[4] = { 198, 18, 0, 7 };
	uint8_t p[512], a[512];
	struct dns_query q;
	size_t n, len;

	(void)state;
	n = query(p, 0x0100, 1, 0, 0, Q_ALLOWED, sizeof(Q_ALLOWED) - 1);
	assert_int_equal(dns_query_parse(p, n, &q), DNS_PARSE_OK);
	len = dns_answer_make(p, &q, DNS_RCODE_OK, addr, a, sizeof(a));
	assert_int_equal(len, n + 16);
	assert_int_equal(a[0], 0x12);
	assert_int_equal(a[1], 0x34);
	assert_int_equal(a[2], 0x85); /* QR, AA, RD as asked */
	assert_int_equal(a[3], 0x80); /* RA, NOERROR */
	assert_int_equal(a[5], 1); /* one question */
	assert_int_equal(a[7], 1); /* one answer */
	assert_memory_equal(a + 12, p + 12, n - 12);
	assert_memory_equal(a + n,
	    "\xc0\x0c\x00\x01\x00\x01\x00\x00\x00\x3c\x00\x04\xc6\x12\x00\x07",
	    16);
	/* Too small: nothing, never a part. */
	assert_int_equal(
	    dns_answer_make(p, &q, DNS_RCODE_OK, addr, a, len - 1), 0);
	/* NXDOMAIN and an empty AAAA answer: the question, no record. */
	len = dns_answer_make(p, &q, DNS_RCODE_NXDOMAIN, NULL, a, sizeof(a));
	assert_int_equal(len, n);
	assert_int_equal(a[3] & 0xf, DNS_RCODE_NXDOMAIN);
	assert_int_equal(a[7], 0);
	/* FORMERR: the header alone. */
	q.question_end = 0;
	len = dns_answer_make(p, &q, DNS_RCODE_FORMERR, NULL, a, sizeof(a));
	assert_int_equal(len, 12);
	assert_int_equal(a[3] & 0xf, DNS_RCODE_FORMERR);
	assert_int_equal(a[5], 0);
}

static void
test_table(void **state)
{
	struct dns_table *t;
	char name[32];
	uint32_t a, b, i;

	(void)state;
	t = mmap(NULL, sizeof(*t), PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_ptr_not_equal(t, MAP_FAILED);
	assert_int_equal(dns_table_find(t, "a.test"), 0);
	a = dns_table_add(t, "a.test");
	b = dns_table_add(t, "b.test");
	assert_true(dns_synthetic(a) && dns_synthetic(b) && a != b);
	assert_int_equal(a, 0xc6120001u); /* 198.18.0.1 */
	assert_int_equal(dns_table_add(t, "a.test"), a); /* stable */
	assert_int_equal(dns_table_find(t, "b.test"), b);
	assert_string_equal(dns_table_name(t, a), "a.test");
	assert_string_equal(dns_table_name(t, b), "b.test");
	/* Addresses keep gave no name, and others. */
	assert_null(dns_table_name(t, b + 1));
	assert_null(dns_table_name(t, DNS_SYNTH_NET));
	assert_null(dns_table_name(t, 0x7f000001u));
	assert_null(dns_table_name(t, 0xc6140001u)); /* 198.20/16 */
	assert_true(dns_synthetic(0xc613ffffu));
	assert_false(dns_synthetic(0xc6140000u));
	/* Full: no address, never a reused one. */
	for (i = 2; i < DNS_TABLE_NAMES; i++) {
		snprintf(name, sizeof(name), "n%u.test", i);
		assert_int_not_equal(dns_table_add(t, name), 0);
	}
	assert_int_equal(dns_table_add(t, "late.test"), 0);
	assert_int_equal(dns_table_add(t, "a.test"), a);
	assert_null(dns_table_name(t, dns_table_addr(DNS_TABLE_NAMES)));
	munmap(t, sizeof(*t));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_ok),
		cmocka_unit_test(test_parse_refused),
		cmocka_unit_test(test_answer),
		cmocka_unit_test(test_table),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
