/*
 * The front's loop inside (host/http/front.c and front_port.c): a
 * connection and its states, the loop's state, and what the two files
 * share. Nothing outside host/http includes it.
 */
#ifndef KEEP_FRONT_INT_H
#define KEEP_FRONT_INT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "host/api/api.h"
#include "host/http/front.h"
#include "host/http/http.h"
#include "host/http/http_upstream.h"
#include "host/http/ws.h"

struct task;
struct tls;
struct port_pool;

/* C_LINGER: answered and half-closed, discarding input until the peer
 * closes or 2 s pass, so that our last response is not destroyed by a
 * reset caused by unread request bytes (the peer may still be sending a
 * body we refused). */
/* C_WAIT: a deferred reply is due; nothing after it is parsed until it
 * arrives, so replies stay in request order. */
/* C_WS: upgraded to a WebSocket (the terminal, host/http/ws.h).
 * C_PORT: a request through a sandbox's port (api_pipe_ops): the
 * response comes back framed (host/http/http_upstream.h), then the
 * connection goes on to its next request; what the client sends
 * meanwhile waits in its buffer, as in C_WAIT.
 * C_PIPE: a byte pipe to a sandbox's port (an upgrade): what the client
 * sends goes to the port's socket and back, unparsed. */
/* C_DEAD: closed while front_step walks its events; freed after them,
 * so that a later event of the same pass (a pipe's client side after
 * its port side closed it) finds it dead rather than freed. */
enum conn_state {
	C_IDLE,
	C_HEAD,
	C_BODY,
	C_WAIT,
	C_LINGER,
	C_WS,
	C_PORT,
	C_PIPE,
	C_DEAD
};

/* A pipe stops reading a side while this much waits for the other. */
#define PIPE_MAX_OUT (256u * 1024)

/* A response head from a guest's server; connections to ports kept in
 * all, and how long one is kept idle. */
#define PORT_HEAD_MAX 65536
#define PORT_KEPT_MAX 64
#define PORT_KEPT_IDLE_MS 30000

/* A request's task waiting to know whether a kept connection answers
 * (api_pipe_ops' wait); on its stack. */
struct port_wait {
	struct task *task;
	int rc;
};

#define WS_MAX_MESSAGE 65536
#define WS_MAX_OUT (4u << 20) /* a client that reads no output is closed */

#define LINGER_MS 2000

struct conn {
	int fd;
	unsigned slot;
	uint32_t gen; /* with slot, the id a deferred reply finds it by */
	int peer_eof; /* the client half-closed while we waited */
	enum conn_state state;
	char *in;
	size_t inlen;
	size_t incap;
	struct http_buf out;
	size_t outoff;
	struct http_request req;
	const char *head_at; /* c->in when req was parsed */
	struct http_chunked ch;
	size_t body_r; /* chunked: raw read position */
	size_t body_w; /* chunked: decoded write position */
	uint64_t deadline;
	uint64_t write_deadline;
	int closing;
	uint32_t events; /* registered epoll events */
	uint32_t rd_want; /* what the last read waits for */
	uint32_t wr_want; /* what the last write waits for */
	struct tls *tls; /* NULL: plain TCP */
	int sent_continue;
	unsigned nreq;
	int proven; /* a bearer token verified on this connection */
	size_t counted; /* out.len as counted in front.pending_total */
	uint8_t peer[17]; /* family, then the address (IPv6: its /64) */
	uint8_t peerlen; /* 0: no address (adopted), no per-client limit */
	char peertext[48]; /* the same as text, for the audit log */
	struct ws_reader ws; /* C_WS */
	int ws_told; /* the api knows the session has ended */
	/* C_PIPE: the port's socket, the bytes still to write to it, and
	 * which halves have ended. */
	int up_fd;
	uint32_t up_events;
	struct http_buf up_out;
	size_t up_off;
	int up_eof, client_eof, up_shut;
	int up_answered; /* a byte came from the port */
	int up_forwarded; /* C_PORT: a head of its went to the client */
	/* C_PORT: the response's head as it comes, then its framing; the
	 * key its connection is kept under; the request's task while it
	 * waits to know whether a kept connection answers. */
	int up_flags; /* API_PIPE_* */
	int up_phase; /* PORT_HEAD, PORT_BODY */
	int up_junk; /* bytes past the response's end: not kept */
	struct http_buf up_head;
	struct http_upstream_head rh;
	struct http_chunk_scan cs;
	uint64_t up_left; /* HTTP_FRAME_LENGTH: body bytes to come */
	char up_key[API_PIPE_KEY_MAX];
	struct port_wait *up_wait;
	struct conn *dead_next; /* C_DEAD: front.dead's list */
};

/*
 * One epoll set serves clients and the ports' sockets. A client's event
 * carries its conn; a port's carries UP_TAG and the conn's id (slot and
 * generation), never the pointer: the conn may have been closed by its
 * client's event earlier in the same pass. User-space pointers never
 * have the top bit.
 */
#define UP_TAG (UINT64_C(1) << 63)

struct front {
	int epfd;
	int lfd;
	struct api *api;
	const struct front_limits *lim;
	struct tls *tls; /* server context, or NULL */
	struct conn **conns;
	unsigned nconns;
	size_t incap_max;
	uint64_t next_sweep;
	uint32_t next_gen;
	size_t pending_total; /* sum of conns' counted */
	int in_step; /* front_step is walking its events */
	struct conn *dead; /* closed during this step, freed at its end */
	struct port_pool *pool; /* kept connections to ports */
};

/* host/http/front.c */
uint64_t idle_deadline(const struct front *, const struct conn *);
uint64_t conn_id(const struct conn *);
void conn_close(struct front *, struct conn *);
int conn_watch(struct front *, struct conn *, uint32_t events);
ssize_t conn_recv(struct conn *, void *buf, size_t len);
/* Write what is pending; 0 ok (maybe partial), -1 the peer is gone. */
int conn_flush(struct front *, struct conn *);
/* After any event: write, then what to wait for; counts what waits. */
void conn_settle(struct front *, struct conn *);

/* host/http/front_port.c: C_PIPE's and C_PORT's events and settling;
 * port_up_event returns -1 when c may be gone (a task ran): it is not
 * to be settled then. front_port_ops: api_pipe_ops. */
void pipe_up_event(struct front *, struct conn *, uint32_t events);
void pipe_client_read(struct front *, struct conn *);
void pipe_settle(struct front *, struct conn *);
int port_up_event(struct front *, struct conn *);
void port_settle(struct front *, struct conn *);
extern const struct api_pipe_ops front_port_ops;

#endif
