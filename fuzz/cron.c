/* Fuzz the cron grammar, POSIX TZ rules and TZif footers. The first
 * byte picks the parser; a schedule that parses must give a next time
 * after the start that is found again from just before it. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/cron.h"
#include "lib/tz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const int64_t after = INT64_C(1795000000); /* 2026-11 */
	struct cron c;
	struct tz tz;
	char err[160];
	int64_t next, again, t;

	if (size < 1)
		return 0;
	switch (data[0] % 3) {
	case 0:
		if (cron_parse((const char *)data + 1, size - 1, &c, err,
		        sizeof(err)) == -1) {
			if (memchr(err, '\0', sizeof(err)) == NULL)
				abort();
			break;
		}
		tz_parse_rule("CET-1CEST,M3.5.0,M10.5.0/3", 26, &tz);
		if (cron_next(&c, &tz, after, &next) == 0) {
			if (next <= after || next % 60 != 0 ||
			    cron_next(&c, &tz, next - 1, &again) != 0 ||
			    again != next)
				abort();
		}
		break;
	case 1:
		if (tz_parse_rule((const char *)data + 1, size - 1, &tz) == 0)
			for (t = after; t < after + 400 * 86400; t += 86400)
				(void)tz_offset(&tz, t);
		break;
	default:
		if (tz_from_tzif(data + 1, size - 1, &tz) == 0)
			(void)tz_offset(&tz, after);
		break;
	}
	return 0;
}
