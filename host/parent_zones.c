/*
 * The zone table for schedules: the front reads schedules' time zones by
 * name ("Europe/Berlin") but may not open files, so the parent, which
 * may, gives it each zone's POSIX TZ rule, the last line of its TZif
 * file in the machine's tzdata (a root-owned system directory, trusted
 * as the configuration is). The table is text, "NAME<TAB>RULE\n" per
 * zone, in a sealed memfd; the front validates every name and rule
 * before it uses one (host/front/front_sched.c).
 */
#include <sys/mman.h>
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host/parent.h"
#include "lib/log.h"
#include "lib/tz.h"

#define ZONES_DEPTH 3
#define ZONE_FILE_MAX (64 * 1024)

/* The rule a TZif file of version 2 or later ends with, or -1. */
static int
footer(int dir, const char *name, char *rule, size_t rulemax)
{
	static char buf[ZONE_FILE_MAX];
	ssize_t n;
	size_t len = 0, i;
	int fd;

	if ((fd = openat(dir, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) == -1)
		return -1;
	while (len < sizeof(buf) &&
	    (n = read(fd, buf + len, sizeof(buf) - len)) > 0)
		len += (size_t)n;
	close(fd);
	if (len < 6 || len == sizeof(buf) || memcmp(buf, "TZif", 4) != 0 ||
	    buf[4] < '2' || buf[len - 1] != '\n')
		return -1;
	for (i = len - 1; i > 0 && buf[i - 1] != '\n'; i--)
		;
	if (i == 0 || len - 1 - i == 0 || len - 1 - i >= rulemax)
		return -1;
	memcpy(rule, buf + i, len - 1 - i);
	rule[len - 1 - i] = '\0';
	for (i = 0; rule[i] != '\0'; i++)
		if (rule[i] < 0x21 || rule[i] > 0x7e)
			return -1;
	return 0;
}

static void
walk(int dir, const char *prefix, int depth, FILE *out, size_t *n)
{
	struct dirent *e;
	DIR *d;
	int fd;

	if ((fd = dup(dir)) == -1 || (d = fdopendir(fd)) == NULL) {
		if (fd != -1)
			close(fd);
		return;
	}
	while ((e = readdir(d)) != NULL) {
		char name[TZ_RULE_MAX + 1], rule[TZ_RULE_MAX + 1];
		struct stat st;
		int sub;

		if (e->d_name[0] == '.' ||
		    snprintf(name, sizeof(name), "%s%s", prefix, e->d_name) >=
		        (int)sizeof(name) ||
		    fstatat(dirfd(d), e->d_name, &st, 0) == -1)
			continue;
		/* posix/ and right/ repeat the zones (right/ with leap
		 * seconds, which a schedule does not count). */
		if (S_ISDIR(st.st_mode)) {
			if (depth <= 1 || strcmp(e->d_name, "posix") == 0 ||
			    strcmp(e->d_name, "right") == 0 ||
			    (sub = openat(dirfd(d), e->d_name,
			         O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
				continue;
			strlcat(name, "/", sizeof(name));
			walk(sub, name, depth - 1, out, n);
			close(sub);
		} else if (S_ISREG(st.st_mode) && tz_name_valid(name) &&
		    footer(dirfd(d), e->d_name, rule, sizeof(rule)) == 0) {
			fprintf(out, "%s\t%s\n", name, rule);
			(*n)++;
		}
	}
	closedir(d);
}

int
parent_zones_memfd(const char *zoneinfo, size_t *len)
{
	FILE *out;
	size_t n = 0;
	long end;
	int dir, mfd, fd;

	if ((dir = open(zoneinfo, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1) {
		log_warn("%s: %s", __func__, zoneinfo);
		return -1;
	}
	if ((mfd = memfd_create(
	         "keep-zones", MFD_CLOEXEC | MFD_ALLOW_SEALING)) == -1 ||
	    (fd = dup(mfd)) == -1 || (out = fdopen(fd, "w")) == NULL) {
		log_warn("%s: memfd", __func__);
		close(dir);
		if (mfd != -1)
			close(mfd);
		return -1;
	}
	walk(dir, "", ZONES_DEPTH, out, &n);
	close(dir);
	end = ftell(out);
	if (fclose(out) != 0 || end < 0 ||
	    fcntl(mfd, F_ADD_SEALS,
	        F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) ==
	        -1) {
		close(mfd);
		return -1;
	}
	*len = (size_t)end;
	log_info("%s: %zu time zones from %s", __func__, n, zoneinfo);
	return mfd;
}
