/* Unit tests for a live context's journal format (host/ctx_journal.h):
 * whole records counted, a torn or altered tail cut off, a bad header
 * refused, payloads whose lengths do not add up refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "host/ctx_journal.h"

static uint8_t buf[8192];

static size_t
head(void)
{
	struct ctx_journal_head h;

	memset(&h, 0, sizeof(h));
	memcpy(h.magic, CTX_JOURNAL_MAGIC, 8);
	strcpy(h.name, "ctx-abc");
	strcpy(h.sbx, "sbx-def");
	strcpy(h.owner, "alice");
	h.language = CTX_LANG_PYTHON;
	memcpy(buf, &h, sizeof(h));
	return sizeof(h);
}

/* A payload of code (no variables), as a record at buf + at. */
static size_t
record(size_t at, const char *code)
{
	uint8_t p[256];
	size_t l = strlen(code);

	memset(p, 0, 8);
	p[0] = (uint8_t)l;
	memcpy(p + 8, code, l);
	ctx_journal_record_head(p, 8 + l, buf + at);
	memcpy(buf + at + CTX_JOURNAL_REC_HDR, p, 8 + l);
	return at + CTX_JOURNAL_REC_HDR + 8 + l;
}

static void
test_records(void **state)
{
	struct ctx_journal_head h;
	uint64_t cells;
	size_t valid, at, end;

	(void)state;
	at = head();
	assert_int_equal(ctx_journal_scan(buf, at, &h, &cells, &valid), 0);
	assert_int_equal(cells, 0);
	assert_int_equal(valid, at);
	at = record(at, "x = 1");
	end = record(at, "print(x)");
	assert_int_equal(ctx_journal_scan(buf, end, &h, &cells, &valid), 0);
	assert_int_equal(cells, 2);
	assert_int_equal(valid, end);
	assert_string_equal(h.owner, "alice");
	/* Torn: the second record cut short; then one byte altered. */
	assert_int_equal(ctx_journal_scan(buf, end - 3, &h, &cells, &valid), 0);
	assert_int_equal(cells, 1);
	assert_int_equal(valid, at);
	buf[end - 1] ^= 1;
	assert_int_equal(ctx_journal_scan(buf, end, &h, &cells, &valid), 0);
	assert_int_equal(cells, 1);
	assert_int_equal(valid, at);
}

static void
test_bad_head(void **state)
{
	struct ctx_journal_head h;
	uint64_t cells;
	size_t valid, at;

	(void)state;
	at = head();
	assert_int_equal(ctx_journal_scan(buf, at - 1, &h, &cells, &valid), -1);
	buf[0] = 'X';
	assert_int_equal(ctx_journal_scan(buf, at, &h, &cells, &valid), -1);
	at = head();
	memset(buf + offsetof(struct ctx_journal_head, owner), 'a',
	    GRANT_PRINCIPAL_MAX); /* no NUL */
	assert_int_equal(ctx_journal_scan(buf, at, &h, &cells, &valid), -1);
	at = head();
	buf[offsetof(struct ctx_journal_head, language)] = 9;
	assert_int_equal(ctx_journal_scan(buf, at, &h, &cells, &valid), -1);
}

static void
test_payload(void **state)
{
	/* code "ab", one variable "K=V" */
	uint8_t p[] = { 2, 0, 0, 0, 1, 0, 0, 0, 'a', 'b', 3, 0, 0, 0, 'K', '=',
		'V' };

	(void)state;
	assert_int_equal(ctx_journal_payload_ok(p, sizeof(p)), 0);
	assert_int_equal(ctx_journal_payload_ok(p, sizeof(p) - 1), -1);
	p[4] = 2; /* two variables, one there */
	assert_int_equal(ctx_journal_payload_ok(p, sizeof(p)), -1);
	p[4] = 1;
	p[9] = '\0'; /* a NUL in the code */
	assert_int_equal(ctx_journal_payload_ok(p, sizeof(p)), -1);
	p[9] = 'b';
	p[0] = 0xff; /* past the end */
	assert_int_equal(ctx_journal_payload_ok(p, sizeof(p)), -1);
	assert_int_equal(ctx_journal_payload_ok(p, 3), -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_records),
		cmocka_unit_test(test_bad_head),
		cmocka_unit_test(test_payload),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
