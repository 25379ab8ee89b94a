/*
 * Fuzz schedule definitions (host/sched/sched_spec.c): the API's bodies
 * and the store's records read back. Properties: nothing crashes, leaks
 * or over-reads; an error names itself; a definition that parses prints
 * to text that parses again to the same text (what GET shows is what
 * fires), and its next fire time is after the start.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "host/sched/sched_spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const int64_t after = INT64_C(1795000000); /* 2026-11 */
	struct sched_spec s, again;
	char err[256], *text, *text2;
	int64_t next;

	if (sched_spec_parse_text((const char *)data, size, NULL, NULL, &s, err,
	        sizeof(err)) != 0) {
		if (memchr(err, '\0', sizeof(err)) == NULL || err[0] == '\0')
			abort();
		return 0;
	}
	if ((text = sched_spec_text(&s)) == NULL)
		abort();
	if (sched_spec_parse_text(
	        text, strlen(text), NULL, NULL, &again, err, sizeof(err)) != 0)
		abort();
	if ((text2 = sched_spec_text(&again)) == NULL ||
	    strcmp(text, text2) != 0)
		abort();
	if (sched_spec_next(&s, after, &next) == 0 && next <= after)
		abort();
	free(text);
	free(text2);
	sched_spec_free(&again);
	sched_spec_free(&s);
	return 0;
}
