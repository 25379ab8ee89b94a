/* The monotonic clock, for deadlines and intervals (never for dates). */
#ifndef KEEP_CLOCK_H
#define KEEP_CLOCK_H

#include <stdint.h>

/* CLOCK_MONOTONIC in milliseconds. */
uint64_t mono_ms(void);
/* CLOCK_MONOTONIC in microseconds. */
uint64_t mono_us(void);

#endif
