/* Error messages into a caller's buffer, for the parsers that report
 * "what is wrong" as text beside their return code. */
#ifndef KEEP_ERRF_H
#define KEEP_ERRF_H

#include <stddef.h>

#include "lib/util.h"

/*
 * Format the message into err (errlen bytes, always terminated; err
 * NULL or errlen 0: nothing is written) and return -1, so that a parser
 * fails with `return errf(err, errlen, "...", ...)`.
 */
int errf(char *err, size_t errlen, const char *fmt, ...) KEEP_PRINTF(3, 4);

#endif
