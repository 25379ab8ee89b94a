#include <vis.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "lib/fdio.h"
#include "lib/log.h"

/*
 * Process-wide logging state. The only global in the tree by design: a
 * process logs to one place, and pure libraries (lang/, policy/) never log.
 */
static int log_to_stderr = 1;
static int log_level;
static char log_name[32] = "keep";

void
log_init(int foreground, int verbosity, const char *ident)
{
	log_to_stderr = foreground;
	log_level = verbosity;
	if (ident != NULL)
		strlcpy(log_name, ident, sizeof(log_name));
	if (!foreground)
		openlog(log_name, LOG_PID | LOG_NDELAY, LOG_DAEMON);
	tzset();
}

void
log_stderr_only(void)
{
	if (!log_to_stderr)
		closelog();
	log_to_stderr = 1;
}

void
log_procname(const char *name)
{
	strlcpy(log_name, name, sizeof(log_name));
}

int
log_verbosity(void)
{
	return log_level;
}

static void KEEP_PRINTF(2, 0)
    vlog(int pri, const char *fmt, va_list ap, int with_errno, int saved_errno)
{
	char msg[2048];
	int n = vsnprintf(msg, sizeof(msg), fmt, ap);

	if (n < 0)
		strlcpy(msg, "(log format error)", sizeof(msg));
	if (with_errno) {
		size_t len = strlen(msg);
		snprintf(msg + len, sizeof(msg) - len, ": %s",
		    strerror(saved_errno));
	}
	if (log_to_stderr) {
		/* One write a line: dprintf's FILE cost an fstat and an
		 * lseek besides, on every line (egress logs each connect). */
		char line[sizeof(log_name) + 2 + sizeof(msg) + 1];
		int len =
		    snprintf(line, sizeof(line), "%s: %s\n", log_name, msg);

		if (len > 0 && (size_t)len < sizeof(line))
			(void)write_all(STDERR_FILENO, line, (size_t)len);
	} else
		syslog(pri, "%s", msg);
}

#define LOG_BODY(pri, with_errno)                                              \
	do {                                                                   \
		int saved = errno;                                             \
		va_list ap;                                                    \
		va_start(ap, fmt);                                             \
		vlog(pri, fmt, ap, with_errno, saved);                         \
		va_end(ap);                                                    \
		errno = saved;                                                 \
	} while (0)

void
log_warn(const char *fmt, ...)
{
	LOG_BODY(LOG_ERR, 1);
}

void
log_warnx(const char *fmt, ...)
{
	LOG_BODY(LOG_ERR, 0);
}

void
log_info(const char *fmt, ...)
{
	if (log_level < 1 && !log_to_stderr)
		return;
	LOG_BODY(LOG_INFO, 0);
}

void
log_debug(const char *fmt, ...)
{
	if (log_level < 2)
		return;
	LOG_BODY(LOG_DEBUG, 0);
}

void
fatal(const char *fmt, ...)
{
	LOG_BODY(LOG_CRIT, 1);
	exit(1);
}

void
fatalx(const char *fmt, ...)
{
	LOG_BODY(LOG_CRIT, 0);
	exit(1);
}

char *
log_escape(char *dst, size_t dstlen, const void *src, size_t srclen)
{
	/* strnvis needs up to 4 output bytes per input byte plus the NUL. */
	size_t max = (dstlen - 1) / 4;

	if (srclen > max)
		srclen = max;
	if (strnvisx(dst, dstlen, src, srclen,
	        VIS_CSTYLE | VIS_NL | VIS_TAB | VIS_OCTAL) == -1)
		dst[0] = '\0';
	return dst;
}
