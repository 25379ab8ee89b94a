/* Small helpers every module uses. */
#ifndef KEEP_UTIL_H
#define KEEP_UTIL_H

#include <stddef.h>

#ifndef nitems
#define nitems(a) (sizeof(a) / sizeof((a)[0]))
#endif

#define KEEP_UNUSED __attribute__((unused))
#define KEEP_PRINTF(f, a) __attribute__((format(printf, f, a)))
#define KEEP_NORETURN __attribute__((noreturn))

#endif
