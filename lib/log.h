/*
 * Logging. Three tiers (STYLE.md): fatal/fatalx for broken invariants and
 * set-up failures only; log_warn/log_warnx for everything recoverable, with
 * an error returned to the caller; log_info/log_debug for the operator.
 * The *x variants do not append strerror(errno).
 *
 * Output goes to stderr until log_init(0, ...) switches to syslog. Strings
 * that come from outside must pass through log_escape() first.
 */
#ifndef KEEP_LOG_H
#define KEEP_LOG_H

#include <stddef.h>

#include "lib/util.h"

void log_init(int foreground, int verbosity, const char *ident);
void log_procname(const char *name);
/* From now on log to stderr only, and close the syslog socket (a process
 * whose seccomp filter allows no socket calls). */
void log_stderr_only(void);
int log_verbosity(void);

void log_warn(const char *fmt, ...) KEEP_PRINTF(1, 2);
void log_warnx(const char *fmt, ...) KEEP_PRINTF(1, 2);
void log_info(const char *fmt, ...) KEEP_PRINTF(1, 2);
void log_debug(const char *fmt, ...) KEEP_PRINTF(1, 2);
KEEP_NORETURN void fatal(const char *fmt, ...) KEEP_PRINTF(1, 2);
KEEP_NORETURN void fatalx(const char *fmt, ...) KEEP_PRINTF(1, 2);

/*
 * Escape an untrusted byte string for a log line (strnvis VIS_SAFE|VIS_CSTYLE
 * semantics, truncated to fit). Returns dst, always NUL-terminated.
 * dstlen must be at least 1.
 */
char *log_escape(char *dst, size_t dstlen, const void *src, size_t srclen);

#endif
