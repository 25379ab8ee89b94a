/*
 * Connections to sandboxes' ports kept between requests (keep-alive to a
 * guest's server, docs/architecture.md "Ports"): each under a key (the
 * sandbox, the port, the principal), the newest taken first, at most a
 * fixed number in all (the oldest closed to make room), each at most an
 * idle time. The front's loop owns it; none of its descriptors is in the
 * loop's epoll set while kept.
 */
#ifndef KEEP_PORT_POOL_H
#define KEEP_PORT_POOL_H

#include <stddef.h>
#include <stdint.h>

struct port_pool;

/* NULL when out of memory. max: connections kept in all (>= 1). */
struct port_pool *port_pool_new(unsigned max);
/* Closes every kept connection. */
void port_pool_free(struct port_pool *);
/* Keep fd (a connected socket, taken in every case) under key at now
 * (ms, monotonic). A key too long is not kept: fd is closed. */
void port_pool_put(struct port_pool *, int fd, const char *key, uint64_t now);
/* The newest connection kept under key that looks open (no end and no
 * stray byte from its server since), or -1. Those that do not are
 * closed on the way. The caller owns what it gets. */
int port_pool_take(struct port_pool *, const char *key);
/* Close those kept more than idle_ms before now. */
void port_pool_expire(struct port_pool *, uint64_t now, uint64_t idle_ms);
/* How many are kept. */
unsigned port_pool_count(const struct port_pool *);

#endif
