/*
 * The parent process of keepd: holds the configuration, the grant keys, the
 * listening socket and /dev/kvm; forks and re-executes each child, connects
 * them, restarts the ones that die, reloads on SIGHUP and stops them all on
 * SIGTERM or SIGINT.
 */
#ifndef KEEP_HOST_PARENT_H
#define KEEP_HOST_PARENT_H

#include "host/config.h"

/*
 * Run the parent until SIGTERM/SIGINT. cfgpath is re-read on SIGHUP.
 * Returns the exit status (0 after a clean stop).
 */
/* keepd -T FILE: tests only. The front's schedules take their time from
 * FILE (unix seconds), read at each start of the front and each SIGHUP. */
void parent_test_clock(const char *path);
/* The zone table for the front (host/parent_zones.c): a sealed memfd of
 * len bytes, or -1. */
int parent_zones_memfd(const char *zoneinfo, size_t *len);
int parent_main(const struct keepd_config *cfg, const char *cfgpath,
    int foreground, int verbosity);

#endif
