/*
 * keep cron next EXPR [--tz ZONE] [--after TIME] [-n COUNT]
 *     the next COUNT (default 5) times a schedule's cron expression fires
 *     after TIME (seconds since the epoch, or YYYY-MM-DDTHH:MM:SSZ;
 *     default now) in ZONE (an IANA name from /usr/share/zoneinfo, or a
 *     POSIX TZ rule; default UTC), one a line: UTC, then local time with
 *     its offset. Exit 1 if the expression or zone is wrong or it never
 *     fires.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cmd.h"
#include "lib/cron.h"
#include "lib/tz.h"

#define ZONEINFO "/usr/share/zoneinfo"

static int
cron_usage(FILE *fp, int status)
{
	fprintf(fp,
	    "usage: keep cron next EXPR [--tz ZONE] [--after TIME] "
	    "[-n COUNT]\n");
	return status;
}

/* Seconds since the epoch, or YYYY-MM-DDTHH:MM:SSZ. */
static int
parse_time(const char *s, int64_t *out)
{
	unsigned y, mo, d, h, mi, sec;
	char *end, z;
	long long v;
	int n;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno == 0 && end != s && *end == '\0') {
		*out = v;
		return 0;
	}
	if (sscanf(s, "%4u-%2u-%2uT%2u:%2u:%2u%c%n", &y, &mo, &d, &h, &mi, &sec,
	        &z, &n) != 7 ||
	    z != 'Z' || s[n] != '\0' || mo < 1 || mo > 12 || d < 1 || d > 31 ||
	    h > 23 || mi > 59 || sec > 59)
		return -1;
	*out = tz_days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec;
	return 0;
}

static void
print_time(int64_t t, int32_t off)
{
	int64_t y, local = t + off, days;
	unsigned mo, d, secs;

	days = (local >= 0 ? local : local - 86399) / 86400;
	tz_civil_from_days(days, &y, &mo, &d);
	secs = (unsigned)(local - days * 86400);
	printf("%04lld-%02u-%02uT%02u:%02u:%02u", (long long)y, mo, d,
	    secs / 3600, secs / 60 % 60, secs % 60);
	if (off == 0)
		printf("Z");
	else
		printf("%c%02d:%02d", off < 0 ? '-' : '+', abs(off) / 3600,
		    abs(off) / 60 % 60);
}

static int
cron_next_cmd(int argc, char **argv)
{
	static const struct option opts[] = { { "tz", required_argument, NULL,
		                                  'z' },
		{ "after", required_argument, NULL, 'a' },
		{ "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 } };
	const char *zone = "UTC";
	char err[160];
	struct cron c;
	struct tz tz;
	int64_t t = (int64_t)time(NULL), next;
	long count = 5;
	int ch, dir, i;

	while ((ch = getopt_long(argc, argv, "n:h", opts, NULL)) != -1)
		switch (ch) {
		case 'z':
			zone = optarg;
			break;
		case 'a':
			if (parse_time(optarg, &t) == -1) {
				fprintf(stderr, "keep cron: bad time '%s'\n",
				    optarg);
				return EXIT_USAGE;
			}
			break;
		case 'n':
			count = strtol(optarg, NULL, 10);
			if (count < 1 || count > 1000)
				return cron_usage(stderr, EXIT_USAGE);
			break;
		case 'h':
			return cron_usage(stdout, 0);
		default:
			return cron_usage(stderr, EXIT_USAGE);
		}
	if (optind + 1 != argc)
		return cron_usage(stderr, EXIT_USAGE);
	if (cron_parse(argv[optind], strlen(argv[optind]), &c, err,
	        sizeof(err)) == -1) {
		fprintf(stderr, "keep cron: %s\n", err);
		return 1;
	}
	if (tz_parse_rule(zone, strlen(zone), &tz) == -1) {
		if ((dir = open(
		         ZONEINFO, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1 ||
		    tz_load(dir, zone, &tz) == -1) {
			fprintf(stderr, "keep cron: unknown time zone '%s'\n",
			    zone);
			return 1;
		}
		close(dir);
	}
	for (i = 0; i < count; i++) {
		if (cron_next(&c, &tz, t, &next) == -1) {
			if (i == 0) {
				fprintf(stderr, "keep cron: never fires\n");
				return 1;
			}
			break;
		}
		print_time(next, 0);
		printf(" ");
		print_time(next, tz_offset(&tz, next));
		printf("\n");
		t = next;
	}
	return 0;
}

int
cmd_cron(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "next") == 0)
		return cron_next_cmd(argc - 1, argv + 1);
	if (argc >= 2 &&
	    (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0))
		return cron_usage(stdout, 0);
	return cron_usage(stderr, EXIT_USAGE);
}
