/*
 * The guest's outbound HTTP call (KEEP_SYS_FETCH, struct keep_fetch) is
 * defined once, in the header image authors use: guest/include/keep.h.
 * The host (host/vmm/fetch.c) includes it through this name.
 */
#ifndef KEEP_EGRESS_ABI_H
#define KEEP_EGRESS_ABI_H

#include "guest/include/keep.h"

#endif
