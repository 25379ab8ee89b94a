/*
 * keepd -n: after the configuration parses, the checks that a valid file
 * can still fail in production. Each finding is a warning that says what
 * breaks and how to fix it; warnings do not fail the check (keepd starts),
 * because an operator may stage keys or policy after the config.
 */
#ifndef KEEP_HOST_PREFLIGHT_H
#define KEEP_HOST_PREFLIGHT_H

#include <stdio.h>

#include "host/config.h"

/* Print one "keepd: warning: ..." paragraph per finding to out.
 * Returns the number of warnings. */
int preflight_check(const struct keepd_config *cfg, FILE *out);

#endif
