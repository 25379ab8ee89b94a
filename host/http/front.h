/*
 * The front's event loop: one thread, epoll, non-blocking sockets.
 * Each connection is a small state machine (reading the head, reading the
 * body, writing) with a deadline per state, so a slow client holds one
 * slot for at most the head or body timeout and never the loop.
 *
 * Keep-alive and pipelining: requests are answered in order; while a
 * response is being written no further request is parsed, and reading
 * stops once max_pending_out bytes wait to be written (backpressure).
 * A request whose reply the backend defers (api_defer) parks its
 * connection until api_resume_run; other connections go on meanwhile.
 */
#ifndef KEEP_FRONT_H
#define KEEP_FRONT_H

#include <stdint.h>

#include "host/api/api.h"
#include "host/http/http.h"

struct front_limits {
	struct http_limits http;
	unsigned max_conns; /* default 1024; above it: 503 + close */
	uint64_t head_timeout_ms; /* first byte of a request to its head end */
	uint64_t body_timeout_ms; /* head end to body end */
	uint64_t idle_timeout_ms; /* between requests on a kept connection */
	uint64_t write_timeout_ms; /* a response must drain in this time */
	uint64_t wait_timeout_ms; /* a deferred reply must come in this */
	unsigned max_requests; /* per connection, 0: unlimited */
	size_t max_pending_out; /* stop reading above this many bytes */
	/* Per source address (0: no limit); above it: 503 + close. */
	unsigned max_conns_per_client;
	/* How long a connection may stay idle before a bearer token has
	 * verified on it ("proven", api_set_auth_notify); when every slot
	 * is taken, the oldest idle unproven connection is closed to make
	 * room for a new one. */
	uint64_t unproven_timeout_ms;
	/* Bytes of replies waiting for their clients, over all connections;
	 * above it the connection that has waited longest for its reader
	 * is closed (0: no bound). */
	size_t max_pending_total;
	uint64_t ws_idle_timeout_ms; /* a WebSocket with no message from
					 its client (default 10 min) */
};

void front_limits_default(struct front_limits *);

/*
 * Serve listen_fd (a listening socket; made non-blocking) until *stop
 * becomes non-zero (checked at least every 250 ms; stop may be NULL). The
 * api answers each request. Returns 0 on a clean stop, -1 if epoll itself
 * fails (errno set).
 */
int front_serve_api(int listen_fd, struct api *, const struct front_limits *,
    volatile int *stop);

struct tls;

/*
 * A libtls server context from a PEM certificate chain and key held in
 * memory (the front is chrooted and cannot open files; the parent reads
 * them and sends the bytes). NULL with a reason in err on failure. The
 * caller should explicit_bzero its copy of the key afterwards.
 */
struct tls *front_tls_server(const void *cert, size_t certlen, const void *key,
    size_t keylen, char *err, size_t errlen);

/* front_serve_api, with every connection wrapped in TLS when tls is not
 * NULL (the handshake runs inside the loop, under the idle timeout). */
int front_serve_tls(int listen_fd, struct api *, const struct front_limits *,
    struct tls *tls, volatile int *stop);

/*
 * The same loop, one step at a time, for a process that has its own event
 * loop (the front process also talks to its peers): front_fd() is an
 * epoll descriptor that polls readable when front_step() has work; call
 * front_step(f, 0) then. Timeouts are enforced inside front_step, so call
 * it at least every 250 ms even when idle. listen_fd may be -1
 * (connections then come only through front_adopt). front_new registers
 * itself as the api's resume function. front_free closes the client
 * connections, not listen_fd.
 */
struct front;
struct front *front_new(
    int listen_fd, struct api *, const struct front_limits *, struct tls *tls);
int front_fd(const struct front *);
int front_step(struct front *, int timeout_ms);
/* front_step without its epoll_wait, for a loop whose own wait said
 * front_fd() had nothing: the deadlines and limits alone. */
void front_tick(struct front *);
unsigned front_nconns(const struct front *);
/* Serve an already-connected stream socket as if accepted (tests, fuzzing,
 * a descriptor passed in). Takes ownership of fd; 0, or -1 (fd closed). */
int front_adopt(struct front *, int fd);
void front_free(struct front *);

/* Convenience: api_new(be, NULL) + front_serve_api + api_free. */
int front_serve(int listen_fd, const struct api_backend *be,
    const struct front_limits *, volatile int *stop);

#endif
