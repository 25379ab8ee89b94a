/* Internal to policy/. */
#ifndef KEEP_POLICY_INT_H
#define KEEP_POLICY_INT_H

#include <stddef.h>
#include <stdint.h>

/* The hash of a principal name used by the lookup table. */
uint32_t policy_hash_name(const char *s, size_t len);

#endif
