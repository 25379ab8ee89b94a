/* A template guest (docs/templates.md). At boot it does its "work"
 * (fills a table, remembers its boot argument) and parks in
 * KEEP_SYS_READY; each clone then prints what it got and what it sees:
 * the boot argument, the request's argv and one variable, whether an
 * earlier clone's writes show through (they must not), and 16 bytes
 * from getrandom (two clones must differ). Run cold (not as a
 * template), the call answers ENOSYS and the program says so. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../../guest/include/keep.h"

static char boot_arg[64] = "none";
static unsigned table[65536]; /* 256 KiB the template writes */
static unsigned clones_seen; /* each clone adds 1: must print 1 */
static char request[1 << 20];

int
main(int argc, char **argv)
{
	unsigned char rnd[16];
	uint32_t counts[2];
	const char *p, *mark = "";
	long n;
	unsigned i, sum = 0;
	int code = 0;

	if (argc > 1)
		snprintf(boot_arg, sizeof(boot_arg), "%s", argv[1]);
	for (i = 0; i < 65536; i++)
		table[i] = i;
	n = syscall(KEEP_SYS_READY, request, sizeof(request));
	if (n < 0) {
		printf("cold: ready answered %s\n", strerror(errno));
		return 3;
	}
	clones_seen++;
	for (i = 0; i < 65536; i++)
		sum += table[i] == i;
	memcpy(counts, request, sizeof(counts));
	printf("boot=%s\n", boot_arg);
	p = request + sizeof(counts);
	for (i = 0; i < counts[0] + counts[1] && p < request + n; i++) {
		if (i < counts[0]) {
			printf("argv[%u]=%s\n", i, p);
			if (strncmp(p, "exit=", 5) == 0)
				code = atoi(p + 5);
		} else if (strncmp(p, "MARK=", 5) == 0)
			mark = p + 5;
		p += strlen(p) + 1;
	}
	printf("MARK=%s\n", mark);
	printf("pid=%d\n", (int)getpid());
	printf("clones_seen=%u\n", clones_seen);
	printf("table_intact=%s\n", sum == 65536 ? "yes" : "no");
	/* This clone's writes: the next clone must not see them. */
	for (i = 0; i < 65536; i++)
		table[i] = 0;
	if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd))
		return 4;
	printf("random=");
	for (i = 0; i < sizeof(rnd); i++)
		printf("%02x", rnd[i]);
	printf("\n");
	return code;
}
