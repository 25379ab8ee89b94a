/*
 * The front's epoll loop. Level-triggered: each connection is registered
 * for either input or output, never both, which makes the state machine
 * easy to follow:
 *
 *   HEAD --head parsed--> BODY --body complete--> (api_handle) --> HEAD
 *     any state --error/close--> draining output --> closed
 *
 * Deadlines: a request's head must arrive within head_timeout_ms of its
 * first byte and its body within body_timeout_ms of the head; an idle
 * keep-alive connection lives idle_timeout_ms; pending output must drain
 * within write_timeout_ms. None is extended by trickling bytes, which is
 * what makes slowloris useless.
 *
 * Fair shares: a source address holds at most max_conns_per_client
 * connections; a connection that has not yet shown a verified bearer
 * token ("unproven") idles unproven_timeout_ms at most, and when every
 * slot is taken the oldest unproven one with nothing in flight (idle, or
 * a head or body half sent) makes room for a newcomer,
 * so idle sockets cannot lock anyone out (/healthz included). The bytes
 * of replies waiting for their readers are bounded in all
 * (max_pending_total): past it, the connection that has waited longest
 * for its reader is closed.
 */
#include <sys/epoll.h>
#include <sys/socket.h>

#include <errno.h>
#include <fcntl.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <tls.h>
#include <unistd.h>

#include "host/http/front.h"
#include "host/http/http_upstream.h"
#include "host/http/port_pool.h"
#include "host/http/ws.h"
#include "lib/clock.h"
#include "lib/log.h"
#include "lib/task.h"

#include "host/http/front_int.h"

void
front_limits_default(struct front_limits *l)
{
	http_limits_default(&l->http);
	l->max_conns = 1024;
	l->head_timeout_ms = 10000;
	l->body_timeout_ms = 30000;
	l->idle_timeout_ms = 60000;
	l->write_timeout_ms = 30000;
	l->max_requests = 0;
	l->wait_timeout_ms = 600000;
	l->max_pending_out = 4 << 20;
	l->max_conns_per_client = 128;
	l->unproven_timeout_ms = 10000;
	l->max_pending_total = (size_t)256 << 20;
	l->ws_idle_timeout_ms = 10 * 60 * 1000;
}

/* When a connection that has nothing in flight may be dropped. */
uint64_t
idle_deadline(const struct front *f, const struct conn *c)
{
	uint64_t ms = f->lim->idle_timeout_ms;

	if (!c->proven && f->lim->unproven_timeout_ms != 0 &&
	    f->lim->unproven_timeout_ms < ms)
		ms = f->lim->unproven_timeout_ms;
	return mono_ms() + ms;
}

uint64_t
conn_id(const struct conn *c)
{
	return (uint64_t)c->slot << 32 | c->gen;
}

/* The api hears once that a WebSocket session is over (or that the
 * client of one not yet upgraded has gone). */
static void
ws_ended(struct front *f, struct conn *c)
{
	if ((c->state == C_WS || c->state == C_WAIT) && !c->ws_told) {
		c->ws_told = 1;
		api_ws_closed(f->api, conn_id(c));
	}
}

void
conn_close(struct front *f, struct conn *c)
{
	struct port_wait *w;

	f->pending_total -= c->counted;
	ws_ended(f, c);
	ws_reader_free(&c->ws);
	epoll_ctl(f->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	if (c->up_fd >= 0)
		close(c->up_fd); /* leaves the epoll set with it */
	http_buf_free(&c->up_out);
	http_buf_free(&c->up_head);
	if (c->tls != NULL) {
		/* Best effort: a close_notify if it fits without waiting. */
		(void)tls_close(c->tls);
		tls_free(c->tls);
	}
	close(c->fd);
	f->conns[c->slot] = NULL;
	f->nconns--;
	free(c->in);
	c->in = NULL;
	http_buf_free(&c->out);
	w = c->up_wait;
	c->up_wait = NULL;
	if (f->in_step) {
		c->state = C_DEAD;
		c->dead_next = f->dead;
		f->dead = c;
	} else
		free(c);
	/* A request's task that waits on it learns it has gone, last:
	 * it runs on, and finds no connection. */
	if (w != NULL) {
		struct task *t = w->task;

		w->rc = -2;
		if (task_run(t) == TASK_DONE)
			task_free(t);
	}
}

int
conn_watch(struct front *f, struct conn *c, uint32_t events)
{
	struct epoll_event ev;

	if (c->events == events)
		return 0;
	memset(&ev, 0, sizeof(ev));
	ev.events = events;
	ev.data.ptr = c;
	if (epoll_ctl(f->epfd, EPOLL_CTL_MOD, c->fd, &ev) == -1)
		return -1;
	c->events = events;
	return 0;
}

/*
 * Transport, plain or TLS. Both return bytes moved, 0 for end of stream
 * (recv only), or -1 with errno EAGAIN (and *want set to the epoll event
 * that will let it progress) or another errno for a dead connection.
 * With TLS, a read may need the socket writable and a write readable
 * (renegotiation, the handshake), which is why the want is kept per
 * direction rather than assumed.
 */
static ssize_t
tls_result(struct tls *t, ssize_t n, uint32_t *want)
{
	if (n == TLS_WANT_POLLIN) {
		*want = EPOLLIN;
		errno = EAGAIN;
		return -1;
	}
	if (n == TLS_WANT_POLLOUT) {
		*want = EPOLLOUT;
		errno = EAGAIN;
		return -1;
	}
	if (n < 0) {
		log_debug("tls: %s", tls_error(t) ? tls_error(t) : "error");
		errno = EPROTO;
	}
	return n;
}

ssize_t
conn_recv(struct conn *c, void *buf, size_t len)
{
	ssize_t n;

	if (c->tls == NULL) {
		c->rd_want = EPOLLIN;
		return recv(c->fd, buf, len, 0);
	}
	n = tls_read(c->tls, buf, len);
	return tls_result(c->tls, n, &c->rd_want);
}

static ssize_t
conn_send(struct conn *c, const void *buf, size_t len)
{
	ssize_t n;

	if (c->tls == NULL) {
		c->wr_want = EPOLLOUT;
		return send(c->fd, buf, len, MSG_NOSIGNAL);
	}
	n = tls_write(c->tls, buf, len);
	return tls_result(c->tls, n, &c->wr_want);
}

/*
 * A request served in a task (lib/task.h), so that its calls to other
 * processes suspend it rather than the loop. It has its own copy of the
 * request: the connection's buffer moves and fills with pipelined bytes
 * while the task waits.
 */
struct conn_task {
	struct front *f;
	struct task *task;
	uint64_t conn; /* slot << 32 | gen, as for a deferred reply */
	char *in;
	struct http_request req;
	struct http_buf out;
	int rc; /* api_handle_conn's */
	int detached; /* it suspended: the connection waits in C_WAIT */
};

static void front_resume(void *, uint64_t, const void *, size_t, int);

static void
conn_task_free(struct conn_task *ct)
{
	free(ct->in);
	http_buf_free(&ct->out);
	free(ct);
}

static void
conn_task_main(void *arg)
{
	struct conn_task *ct = arg;

	ct->rc = api_handle_conn(ct->f->api, &ct->req, &ct->out, ct->conn);
	if (!ct->detached)
		return;
	/* The connection went on without it: answer as a deferred reply
	 * does, unless the op deferred its reply itself. The task's stack
	 * is freed by whoever ran it last. */
	if (ct->rc != API_HANDLE_PENDING)
		front_resume(ct->f, ct->conn, ct->out.data, ct->out.len,
		    ct->rc ? API_RESUME_CLOSE : 0);
	conn_task_free(ct);
}

/*
 * Answer the request in c->req (its bytes are c->in[0, consumed)) as
 * api_handle_conn does. In a task when one can be had; without (out of
 * memory) on the loop's stack, where the backend's calls then wait in
 * turn.
 */
static int
conn_handle(struct front *f, struct conn *c, size_t consumed)
{
	uint64_t id = (uint64_t)c->slot << 32 | c->gen;
	struct conn_task *ct;
	int rc;

	if ((ct = calloc(1, sizeof(*ct))) == NULL)
		return api_handle_conn(f->api, &c->req, &c->out, id);
	http_buf_init(&ct->out);
	if ((ct->in = malloc(consumed)) == NULL ||
	    (ct->task = task_new(conn_task_main, ct)) == NULL) {
		conn_task_free(ct);
		return api_handle_conn(f->api, &c->req, &c->out, id);
	}
	memcpy(ct->in, c->in, consumed);
	ct->req = c->req;
	http_request_move(&ct->req, c->in, ct->in);
	ct->f = f;
	ct->conn = id;
	if (task_run(ct->task) == TASK_SUSPENDED) {
		ct->detached = 1;
		return API_HANDLE_PENDING;
	}
	task_free(ct->task);
	if (c->out.len == 0) {
		struct http_buf swap = c->out;

		c->out = ct->out;
		ct->out = swap;
	} else
		http_buf_add(&c->out, ct->out.data, ct->out.len);
	rc = ct->rc;
	conn_task_free(ct);
	return rc;
}

static void
conn_refuse(struct front *f, struct conn *c, int status)
{
	api_refuse(f->api, status, &c->out);
	c->closing = 1;
	c->inlen = 0;
}

/* Write what is pending; 0 ok (maybe partial), -1 the peer is gone. */
int
conn_flush(struct front *f, struct conn *c)
{
	while (c->outoff < c->out.len) {
		ssize_t n = conn_send(
		    c, c->out.data + c->outoff, c->out.len - c->outoff);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			return -1;
		}
		c->outoff += (size_t)n;
	}
	if (c->outoff == c->out.len) {
		c->outoff = 0;
		c->out.len = 0;
		c->write_deadline = 0;
	} else if (c->write_deadline == 0)
		c->write_deadline = mono_ms() + f->lim->write_timeout_ms;
	return 0;
}

/*
 * Parse and answer as many complete requests as the input holds. Stops
 * when a request is incomplete, when the connection is closing, or when
 * enough output is pending that the client must read first.
 */
static void
conn_process(struct front *f, struct conn *c)
{
	const struct front_limits *lim = f->lim;
	int status, rc;

	while (!c->closing && c->out.len < lim->max_pending_out &&
	    c->state != C_WAIT && c->state != C_PORT) {
		size_t consumed;

		if (c->state == C_IDLE || c->state == C_HEAD) {
			if (c->inlen == 0) {
				if (c->state == C_HEAD) {
					c->state = C_IDLE;
					c->deadline = idle_deadline(f, c);
				}
				return;
			}
			if (c->state == C_IDLE) {
				c->state = C_HEAD;
				c->deadline = mono_ms() + lim->head_timeout_ms;
			}
			rc = http_parse_head(
			    c->in, c->inlen, &lim->http, &c->req, &status);
			c->head_at = c->in;
			if (rc == HTTP_MORE)
				return;
			if (rc == HTTP_ERROR) {
				conn_refuse(f, c, status);
				return;
			}
			strlcpy(c->req.peer, c->peertext, sizeof(c->req.peer));
			c->state = C_BODY;
			c->deadline = mono_ms() + lim->body_timeout_ms;
			c->sent_continue = 0;
			/* A body still to come is read only for a token that
			 * verifies (or a route that needs none): 401 now. */
			if ((c->req.chunked ||
			        c->inlen - c->req.head_len <
			            c->req.content_length) &&
			    api_head_check(
			        f->api, &c->req, &c->out, conn_id(c))) {
				c->closing = 1;
				c->inlen = 0;
				return;
			}
			if (c->req.chunked) {
				http_chunked_init(&c->ch);
				c->body_r = c->body_w = c->req.head_len;
			}
		}

		/* C_BODY */
		if (c->req.chunked) {
			rc = http_chunked_decode(&c->ch, c->in, c->inlen,
			    &c->body_r, &c->body_w, lim->http.max_body,
			    &status);
			if (rc == HTTP_ERROR) {
				conn_refuse(f, c, status);
				return;
			}
			/* Compact: decoded bytes then the raw remainder. */
			if (c->body_r > c->body_w) {
				memmove(c->in + c->body_w, c->in + c->body_r,
				    c->inlen - c->body_r);
				c->inlen -= c->body_r - c->body_w;
				c->body_r = c->body_w;
			}
			if (rc == HTTP_MORE)
				goto more_body;
			consumed = c->body_w;
		} else {
			consumed = c->req.head_len + c->req.content_length;
			if (c->inlen < consumed)
				goto more_body;
		}

		/* The buffer may have moved since the head was parsed. */
		if (c->head_at != c->in)
			http_request_move(&c->req, c->head_at, c->in);
		c->req.body = c->in + c->req.head_len;
		c->req.body_len = consumed - c->req.head_len;
		c->nreq++;
		rc = conn_handle(f, c, consumed);
		if (lim->max_requests && c->nreq >= lim->max_requests)
			c->closing = 1;
		memmove(c->in, c->in + consumed, c->inlen - consumed);
		c->inlen -= consumed;
		if (c->state == C_PIPE) {
			/* Handled without waiting: what followed the request
			 * goes to the port too. */
			c->closing = 0;
			http_buf_add(&c->up_out, c->in, c->inlen);
			c->inlen = 0;
			return;
		}
		if (c->state == C_PORT) {
			/* Handled without waiting: the response comes back
			 * before the next request is read. */
			c->closing = 0;
			return;
		}
		if (rc == API_HANDLE_PENDING) {
			c->state = C_WAIT;
			c->deadline = mono_ms() + lim->wait_timeout_ms;
			return;
		}
		if (rc)
			c->closing = 1;
		c->state = C_HEAD;
		continue;
	more_body:
		if (c->req.expect_continue && !c->sent_continue) {
			http_buf_puts(&c->out, "HTTP/1.1 100 Continue\r\n\r\n");
			c->sent_continue = 1;
		}
		return;
	}
}

/* One server frame, whole, to the output. */
static void
ws_send(struct conn *c, enum ws_opcode op, const void *data, size_t len)
{
	uint8_t head[10];

	http_buf_add(&c->out, head, ws_frame_head(head, op, len));
	http_buf_add(&c->out, data, len);
}

static void
ws_close(struct front *f, struct conn *c, uint16_t code, const char *why)
{
	uint8_t p[2 + 64];
	size_t n = strlen(why) < 64 ? strlen(why) : 64;

	p[0] = (uint8_t)(code >> 8);
	p[1] = (uint8_t)code;
	memcpy(p + 2, why, n);
	ws_send(c, WS_OP_CLOSE, p, 2 + n);
	ws_ended(f, c);
	c->closing = 1;
}

/* The frames the input holds: messages to the api, pings answered. */
static void
ws_process(struct front *f, struct conn *c)
{
	struct ws_msg m;
	size_t used;
	uint16_t code;
	int rc;

	while (!c->closing && c->inlen > 0) {
		rc = ws_read(
		    &c->ws, (uint8_t *)c->in, c->inlen, &used, &m, &code);
		if (rc == WS_ERROR) {
			ws_close(f, c, code, "protocol error");
			c->inlen = 0;
			return;
		}
		if (rc == WS_MORE) {
			memmove(c->in, c->in + used, c->inlen - used);
			c->inlen -= used;
			if (used == 0)
				return;
			continue;
		}
		/* m may point into c->in: used before the input moves. */
		c->deadline = mono_ms() + f->lim->ws_idle_timeout_ms;
		switch (m.opcode) {
		case WS_OP_PING:
			ws_send(c, WS_OP_PONG, m.data, m.len);
			break;
		case WS_OP_PONG:
			break;
		case WS_OP_CLOSE:
			ws_close(f, c,
			    m.close_code ? m.close_code : WS_CLOSE_NORMAL, "");
			c->inlen = 0;
			return;
		default:
			api_ws_message(
			    f->api, conn_id(c), m.opcode, m.data, m.len);
			break;
		}
		memmove(c->in, c->in + used, c->inlen - used);
		c->inlen -= used;
	}
}

static void
conn_read(struct front *f, struct conn *c)
{
	ssize_t n;

	if (c->state == C_LINGER) {
		char sink[4096];

		n = recv(c->fd, sink, sizeof(sink), 0);
		if (n == 0 ||
		    (n == -1 && errno != EAGAIN && errno != EWOULDBLOCK &&
		        errno != EINTR))
			c->closing = 2;
		return;
	}

	/*
	 * A TLS record decrypts to at most 16 KiB and libtls cannot say
	 * whether plaintext is left inside it, so a TLS read always gets a
	 * whole record's room: nothing is stranded where epoll cannot see.
	 */
	size_t need = c->tls != NULL ? 16384 : 1;

	while (c->incap - c->inlen < need && c->incap < f->incap_max) {
		size_t cap = c->incap ? c->incap * 2 : 16384;
		char *p;

		if (cap > f->incap_max)
			cap = f->incap_max;
		if ((p = realloc(c->in, cap)) == NULL) {
			conn_refuse(f, c, 503);
			return;
		}
		c->in = p;
		c->incap = cap;
	}
	if (c->inlen == c->incap) {
		if (c->state == C_WAIT || c->state == C_PORT)
			return; /* conn_settle stops watching input */
		conn_refuse(f, c, 413);
		return;
	}
	n = conn_recv(c, c->in + c->inlen, c->incap - c->inlen);
	if (n == -1) {
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			c->closing = 2;
		return;
	}
	if (c->state == C_WS) {
		if (n == 0) {
			ws_ended(f, c);
			c->closing = 2;
			return;
		}
		c->inlen += (size_t)n;
		ws_process(f, c);
		return;
	}
	if (n == 0 && (c->state == C_WAIT || c->state == C_PORT)) {
		/* Answer the request in flight, then close. */
		c->peer_eof = 1;
		return;
	}
	if (n == 0) {
		/* Half-close: answer what is complete, then go. */
		c->closing = c->state == C_IDLE && c->inlen == 0 ? 2 : 1;
		if (c->closing == 1) {
			c->closing = 0;
			conn_process(f, c);
			c->closing = 1;
		}
		return;
	}
	c->inlen += (size_t)n;
	conn_process(f, c);
}

/* After any event: write, then decide what to wait for next. */
static void
conn_settle_io(struct front *f, struct conn *c)
{
	if (c->closing == 2) {
		conn_close(f, c);
		return;
	}
	if (c->state == C_LINGER)
		return;
	if (c->state == C_PIPE) {
		pipe_settle(f, c);
		return;
	}
	if (c->state == C_PORT) {
		port_settle(f, c);
		return;
	}
	if (conn_flush(f, c) == -1) {
		conn_close(f, c);
		return;
	}
	if (c->state == C_WS) {
		if (c->out.len > WS_MAX_OUT) {
			conn_close(f, c);
			return;
		}
		if (c->closing && c->out.len == 0) {
			/* The close frame is out: the client's may follow. */
			ws_ended(f, c);
			shutdown(c->fd, SHUT_WR);
			c->state = C_LINGER;
			c->deadline = mono_ms() + LINGER_MS;
			c->inlen = 0;
			if (conn_watch(f, c, EPOLLIN) == -1)
				conn_close(f, c);
			return;
		}
		if (conn_watch(
		        f, c, c->out.len > 0 ? c->wr_want : c->rd_want) == -1)
			conn_close(f, c);
		return;
	}
	if (c->state == C_WAIT && c->out.len == 0) {
		/* Keep reading pipelined bytes unless there is no room or the
		 * peer has half-closed (EOF would be reported forever). */
		uint32_t ev = c->peer_eof || c->inlen == c->incap ? 0 : EPOLLIN;
		if (conn_watch(f, c, ev) == -1)
			conn_close(f, c);
		return;
	}
	if (c->out.len > 0) {
		if (conn_watch(f, c, c->wr_want) == -1)
			conn_close(f, c);
		return;
	}
	if (c->closing) {
		if (c->tls != NULL || c->state == C_IDLE) {
			conn_close(f, c);
			return;
		}
		shutdown(c->fd, SHUT_WR);
		c->state = C_LINGER;
		c->deadline = mono_ms() + LINGER_MS;
		c->inlen = 0;
		if (conn_watch(f, c, EPOLLIN) == -1)
			conn_close(f, c);
		return;
	}
	/* Output drained: pipelined requests may be waiting in the buffer. */
	if (c->inlen > 0 && c->state != C_BODY) {
		size_t before = c->inlen;
		conn_process(f, c);
		if (c->out.len > 0 || c->closing || c->inlen != before) {
			conn_settle_io(f, c);
			return;
		}
	}
	if (conn_watch(f, c, c->rd_want) == -1)
		conn_close(f, c);
}

/* conn_settle_io, then count what is left waiting for the reader. */
void
conn_settle(struct front *f, struct conn *c)
{
	unsigned slot = c->slot;

	conn_settle_io(f, c);
	if (f->conns[slot] != c)
		return; /* closed */
	f->pending_total -= c->counted;
	c->counted = c->out.len;
	f->pending_total += c->counted;
}

/* A key made by peer_key as text: "192.0.2.1", "2001:db8:1:2::/64". */
static void
peer_text(const uint8_t *key, size_t keylen, char *out, size_t outlen)
{
	uint8_t a6[16];
	size_t n;

	out[0] = '\0';
	if (key[0] == AF_INET && keylen == 5)
		(void)inet_ntop(AF_INET, key + 1, out, (socklen_t)outlen);
	else if (key[0] == AF_INET6 && keylen == 9) {
		memset(a6, 0, sizeof(a6));
		memcpy(a6, key + 1, 8);
		if (inet_ntop(AF_INET6, a6, out, (socklen_t)outlen) != NULL &&
		    (n = strlen(out)) + 4 < outlen)
			memcpy(out + n, "/64", 4);
	}
}

/* Take a connected, non-blocking socket from peer (a key made by
 * peer_key, or NULL) into the loop; closes fd on failure. */
static int
conn_add(struct front *f, int fd, const uint8_t *peer, size_t peerlen)
{
	struct epoll_event ev;
	struct conn *c;
	unsigned slot;

	for (slot = 0; slot < f->lim->max_conns; slot++)
		if (f->conns[slot] == NULL)
			break;
	if (slot == f->lim->max_conns || (c = calloc(1, sizeof(*c))) == NULL) {
		close(fd);
		return -1;
	}
	c->fd = fd;
	c->up_fd = -1;
	c->slot = slot;
	if (peer != NULL && peerlen <= sizeof(c->peer)) {
		memcpy(c->peer, peer, peerlen);
		c->peerlen = (uint8_t)peerlen;
		peer_text(peer, peerlen, c->peertext, sizeof(c->peertext));
	}
	c->gen = ++f->next_gen;
	c->events = EPOLLIN;
	c->rd_want = EPOLLIN;
	c->wr_want = EPOLLOUT;
	if (f->tls != NULL && tls_accept_socket(f->tls, &c->tls, fd) == -1) {
		log_warnx(
		    "%s: tls_accept_socket: %s", __func__, tls_error(f->tls));
		close(fd);
		free(c);
		return -1;
	}
	c->state = C_IDLE;
	c->deadline = idle_deadline(f, c);
	http_buf_init(&c->out);
	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLIN;
	ev.data.ptr = c;
	if (epoll_ctl(f->epfd, EPOLL_CTL_ADD, fd, &ev) == -1) {
		if (c->tls != NULL)
			tls_free(c->tls);
		close(fd);
		free(c);
		return -1;
	}
	f->conns[slot] = c;
	f->nconns++;
	api_count_conn(f->api, API_CONN_ACCEPTED);
	return 0;
}

int
front_adopt(struct front *f, int fd)
{
	int fl;

	if (f->nconns >= f->lim->max_conns) {
		close(fd);
		return -1;
	}
	if ((fl = fcntl(fd, F_GETFL)) != -1)
		(void)fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	return conn_add(f, fd, NULL, 0);
}

/*
 * The key a per-client limit counts by: the family, then the IPv4
 * address or the IPv6 /64 (one host or one site holds a whole /64, so
 * counting single IPv6 addresses would limit nothing). An IPv4-mapped
 * IPv6 address counts as its IPv4 address. 0: no key (not IP).
 */
static size_t
peer_key(const struct sockaddr_storage *ss, uint8_t key[17])
{
	static const uint8_t v4mapped[12] = { [10] = 0xff, [11] = 0xff };

	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *sin = (const void *)ss;

		key[0] = AF_INET;
		memcpy(key + 1, &sin->sin_addr, 4);
		return 5;
	}
	if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const void *)ss;
		const uint8_t *a = s6->sin6_addr.s6_addr;

		if (memcmp(a, v4mapped, sizeof(v4mapped)) == 0) {
			key[0] = AF_INET;
			memcpy(key + 1, a + 12, 4);
			return 5;
		}
		key[0] = AF_INET6;
		memcpy(key + 1, a, 8);
		return 9;
	}
	return 0;
}

static unsigned
conns_from(const struct front *f, const uint8_t *key, size_t keylen)
{
	unsigned n = 0;

	for (unsigned i = 0; i < f->lim->max_conns; i++) {
		const struct conn *c = f->conns[i];

		if (c != NULL && c->peerlen == keylen &&
		    memcmp(c->peer, key, keylen) == 0)
			n++;
	}
	return n;
}

/*
 * Every slot is taken: close the oldest connection that has not shown a
 * verified token and has nothing in flight (idle, a head or a body still
 * arriving), so that a newcomer gets its slot. false: there is none.
 * A body arrives unproven only for a route that needs no token (a body
 * for any other is refused with 401 after its head, api_head_check).
 */
static bool
conn_evict_unproven(struct front *f)
{
	struct conn *oldest = NULL;

	for (unsigned i = 0; i < f->lim->max_conns; i++) {
		struct conn *c = f->conns[i];

		if (c == NULL || c->proven || c->closing || c->out.len > 0 ||
		    (c->state != C_IDLE && c->state != C_HEAD &&
		        c->state != C_BODY))
			continue;
		if (oldest == NULL || (int32_t)(c->gen - oldest->gen) < 0)
			oldest = c;
	}
	if (oldest == NULL)
		return false;
	api_count_conn(f->api, API_CONN_TIMEOUT);
	conn_close(f, oldest);
	return true;
}

/*
 * Replies waiting for their readers past max_pending_total: close the
 * connection that has waited longest for its reader, as long as more
 * than one connection has a reply waiting (one reply alone is bounded by
 * the output limits and the write timeout). keep (or NULL) is spared;
 * extra bytes are about to be added to it. Never while front_step walks
 * its events: it closes connections other than the one at hand.
 */
static void
front_shed(struct front *f, const struct conn *keep, size_t extra)
{
	while (f->lim->max_pending_total != 0 &&
	    f->pending_total + extra > f->lim->max_pending_total) {
		struct conn *victim = NULL;
		unsigned waiting = extra > 0 && keep->counted == 0;

		for (unsigned i = 0; i < f->lim->max_conns; i++) {
			struct conn *c = f->conns[i];

			if (c == NULL || c->counted == 0)
				continue;
			waiting++;
			if (c == keep)
				continue;
			if (victim == NULL ||
			    (c->write_deadline != 0 &&
			        (victim->write_deadline == 0 ||
			            c->write_deadline <
			                victim->write_deadline)) ||
			    (c->write_deadline == victim->write_deadline &&
			        c->counted > victim->counted))
				victim = c;
		}
		if (waiting < 2 || victim == NULL)
			return;
		log_warnx("%s: %zu bytes of replies wait for clients that do "
		          "not read (limit %zu): closing one holding %zu",
		    __func__, f->pending_total + extra,
		    f->lim->max_pending_total, victim->counted);
		api_count_conn(f->api, API_CONN_TIMEOUT);
		conn_close(f, victim);
	}
}

static void
front_accept(struct front *f)
{
	static const char busy[] =
	    "HTTP/1.1 503 Service Unavailable\r\nContent-Type: "
	    "application/json\r\nContent-Length: 65\r\nConnection: "
	    "close\r\nRetry-After: 1\r\n\r\n{\"error\":{\"message\":\"Too "
	    "many connections\",\"code\":\"UNAVAILABLE\"}}";
	static const char busy_client[] =
	    "HTTP/1.1 503 Service Unavailable\r\nContent-Type: "
	    "application/json\r\nContent-Length: 83\r\nConnection: "
	    "close\r\nRetry-After: 1\r\n\r\n{\"error\":{\"message\":\"Too "
	    "many connections from this address\",\"code\":\"UNAVAILABLE\"}}";

	for (;;) {
		struct sockaddr_storage ss;
		socklen_t sslen = sizeof(ss);
		uint8_t key[17];
		size_t keylen;
		int fd, one = 1;

		memset(&ss, 0, sizeof(ss));
		fd = accept4(f->lfd, (struct sockaddr *)&ss, &sslen,
		    SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd == -1) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				log_warn("%s: accept", __func__);
			return;
		}
		keylen = peer_key(&ss, key);
		if (keylen != 0 && f->lim->max_conns_per_client != 0 &&
		    conns_from(f, key, keylen) >=
		        f->lim->max_conns_per_client) {
			api_count_conn(f->api, API_CONN_REFUSED);
			(void)send(fd, busy_client, sizeof(busy_client) - 1,
			    MSG_NOSIGNAL | MSG_DONTWAIT);
			close(fd);
			continue;
		}
		if (f->nconns >= f->lim->max_conns && !conn_evict_unproven(f)) {
			api_count_conn(f->api, API_CONN_REFUSED);
			(void)send(fd, busy, sizeof(busy) - 1,
			    MSG_NOSIGNAL | MSG_DONTWAIT);
			close(fd);
			continue;
		}
		(void)setsockopt(
		    fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		(void)conn_add(f, fd, key, keylen);
	}
}

static void
front_sweep(struct front *f, uint64_t now)
{
	for (unsigned i = 0; i < f->lim->max_conns; i++) {
		struct conn *c = f->conns[i];

		if (c == NULL)
			continue;
		if (c->write_deadline && now >= c->write_deadline) {
			api_count_conn(f->api, API_CONN_TIMEOUT);
			conn_close(f, c);
			continue;
		}
		if ((c->state == C_LINGER || c->state == C_WAIT) &&
		    now >= c->deadline) {
			if (c->state == C_WAIT)
				api_count_conn(f->api, API_CONN_TIMEOUT);
			conn_close(f, c);
			continue;
		}
		if (c->state == C_WAIT)
			continue;
		if (c->state == C_PIPE || c->state == C_PORT) {
			if (now >= c->deadline) {
				api_count_conn(f->api, API_CONN_TIMEOUT);
				conn_close(f, c);
			}
			continue;
		}
		if (c->state == C_WS) {
			if (!c->closing && now >= c->deadline) {
				api_count_conn(f->api, API_CONN_TIMEOUT);
				ws_close(f, c, WS_CLOSE_GOING_AWAY, "idle");
				conn_settle(f, c);
			}
			continue;
		}
		if (c->out.len > 0 || c->closing || now < c->deadline)
			continue;
		api_count_conn(f->api, API_CONN_TIMEOUT);
		if (c->state == C_IDLE) {
			conn_close(f, c);
			continue;
		}
		/* A partial request timed out: say so, then close. */
		conn_refuse(f, c, 408);
		conn_settle(f, c);
	}
}

int
front_serve_api(int lfd, struct api *api, const struct front_limits *lim,
    volatile int *stop)
{
	return front_serve_tls(lfd, api, lim, NULL, stop);
}

struct tls *
front_tls_server(const void *cert, size_t certlen, const void *key,
    size_t keylen, char *err, size_t errlen)
{
	struct tls_config *cfg;
	struct tls *t = NULL;

	if ((cfg = tls_config_new()) == NULL) {
		strlcpy(err, "tls_config_new failed", errlen);
		return NULL;
	}
	if (tls_config_set_protocols(cfg, TLS_PROTOCOLS_DEFAULT) != 0 ||
	    tls_config_set_cert_mem(cfg, cert, certlen) != 0 ||
	    tls_config_set_key_mem(cfg, key, keylen) != 0) {
		strlcpy(err, tls_config_error(cfg), errlen);
		goto out;
	}
	if ((t = tls_server()) == NULL) {
		strlcpy(err, "tls_server failed", errlen);
		goto out;
	}
	if (tls_configure(t, cfg) != 0) {
		strlcpy(err, tls_error(t), errlen);
		tls_free(t);
		t = NULL;
	}
out:
	/* The key stays only in the server context. */
	tls_config_clear_keys(cfg);
	tls_config_free(cfg);
	return t;
}

/* A request on connection id carried a verified bearer token. */
static void
front_proven(void *arg, uint64_t id)
{
	struct front *f = arg;
	unsigned slot = (unsigned)(id >> 32);
	struct conn *c;

	if (slot < f->lim->max_conns && (c = f->conns[slot]) != NULL &&
	    c->gen == (uint32_t)id)
		c->proven = 1;
}

/* Does the client that waits for a deferred reply still read? */
static int
front_alive(void *arg, uint64_t id)
{
	struct front *f = arg;
	unsigned slot = (unsigned)(id >> 32);
	struct conn *c;

	return slot < f->lim->max_conns && (c = f->conns[slot]) != NULL &&
	    c->gen == (uint32_t)id && c->state == C_WAIT && !c->peer_eof &&
	    !c->closing;
}

/* A deferred reply arrives: put it in order on its connection, if the
 * connection is still the one that asked. */
static void
front_resume(void *arg, uint64_t id, const void *resp, size_t len, int flags)
{
	struct front *f = arg;
	unsigned slot = (unsigned)(id >> 32);
	struct conn *c;

	if (slot >= f->lim->max_conns || (c = f->conns[slot]) == NULL ||
	    c->gen != (uint32_t)id)
		return;
	if (c->state == C_WS) {
		/* The terminal's output, framed here; its end closes. */
		if (c->closing)
			return;
		if (len > 0)
			ws_send(c, WS_OP_BINARY, resp, len);
		if (!(flags & API_RESUME_MORE))
			ws_close(f, c, WS_CLOSE_NORMAL, "exit");
		conn_settle(f, c);
		return;
	}
	if (c->state != C_WAIT)
		return;
	/* Make room first: the bytes of those that do not read go before
	 * these are copied. */
	if (!f->in_step)
		front_shed(f, c, len);
	http_buf_add(&c->out, resp, len);
	if (flags & API_RESUME_UPGRADE) {
		/* 101 sent: from here on the connection is a WebSocket. */
		c->state = C_WS;
		ws_reader_init(&c->ws, WS_MAX_MESSAGE);
		c->deadline = mono_ms() + f->lim->ws_idle_timeout_ms;
		if (c->inlen > 0)
			ws_process(f, c);
		conn_settle(f, c);
		return;
	}
	if (flags & API_RESUME_MORE) {
		/* Part of an event stream: send it, keep waiting; a stream
		 * that goes on (a watch) is not a reply that never came. */
		c->deadline = mono_ms() + f->lim->wait_timeout_ms;
		conn_settle(f, c);
		return;
	}
	if ((flags & API_RESUME_CLOSE) || c->peer_eof)
		c->closing = 1;
	c->state = c->inlen > 0 ? C_HEAD : C_IDLE;
	c->deadline = c->inlen > 0 ? mono_ms() + f->lim->head_timeout_ms
	                           : idle_deadline(f, c);
	conn_settle(f, c);
}

struct front *
front_new(
    int lfd, struct api *api, const struct front_limits *lim, struct tls *tls)
{
	struct front *f;
	struct epoll_event ev;
	int fl;

	if ((f = calloc(1, sizeof(*f))) == NULL)
		return NULL;
	f->lfd = lfd;
	f->api = api;
	f->lim = lim;
	f->tls = tls;
	f->incap_max = lim->http.max_head + lim->http.max_body + 65536;
	f->epfd = -1;
	if ((f->conns = calloc(lim->max_conns, sizeof(*f->conns))) == NULL)
		goto fail;
	if ((f->epfd = epoll_create1(EPOLL_CLOEXEC)) == -1)
		goto fail;
	if (lfd != -1) {
		if ((fl = fcntl(lfd, F_GETFL)) != -1)
			(void)fcntl(lfd, F_SETFL, fl | O_NONBLOCK);
		memset(&ev, 0, sizeof(ev));
		ev.events = EPOLLIN;
		ev.data.ptr = NULL;
		if (epoll_ctl(f->epfd, EPOLL_CTL_ADD, lfd, &ev) == -1)
			goto fail;
	}
	/* No kept connections without memory for them: each request
	 * through a port then has a new one. */
	f->pool = port_pool_new(PORT_KEPT_MAX);
	api_set_resume(api, front_resume, f);
	api_set_pipe(api, &front_port_ops, f);
	api_set_auth_notify(api, front_proven, f);
	api_set_alive(api, front_alive, f);
	return f;
fail:
	if (f->epfd != -1)
		close(f->epfd);
	free(f->conns);
	free(f);
	return NULL;
}

int
front_fd(const struct front *f)
{
	return f->epfd;
}

unsigned
front_nconns(const struct front *f)
{
	return f->nconns;
}

/* What front_step does after its events: connections made room for,
 * deadlines, kept connections' idle time. */
static void
front_after_events(struct front *f)
{
	uint64_t now;

	front_shed(f, NULL, 0);
	now = mono_ms();
	if (now >= f->next_sweep) {
		front_sweep(f, now);
		if (f->pool != NULL)
			port_pool_expire(f->pool, now, PORT_KEPT_IDLE_MS);
		f->next_sweep = now + 250;
	}
}

void
front_tick(struct front *f)
{
	front_after_events(f);
}

int
front_step(struct front *f, int timeout_ms)
{
	struct epoll_event evs[64];
	int n, accept_due = 0;

	n = epoll_wait(f->epfd, evs, (int)nitems(evs), timeout_ms);
	if (n == -1) {
		if (errno == EINTR)
			return 0;
		log_warn("%s: epoll_wait", __func__);
		return -1;
	}
	f->in_step = 1;
	for (int i = 0; i < n; i++) {
		uint64_t tag = evs[i].data.u64;
		struct conn *c;

		if (tag & UP_TAG) {
			unsigned slot = (unsigned)((tag & ~UP_TAG) >> 32);

			if (slot >= f->lim->max_conns ||
			    (c = f->conns[slot]) == NULL ||
			    c->gen != (uint32_t)tag || c->up_fd < 0)
				continue;
			if (c->state == C_PORT) {
				if (port_up_event(f, c) == 0)
					conn_settle(f, c);
				continue;
			}
			pipe_up_event(f, c, evs[i].events);
			conn_settle(f, c);
			continue;
		}
		if ((c = evs[i].data.ptr) == NULL) {
			accept_due = 1;
			continue;
		}
		if (c->state == C_DEAD)
			continue;
		if (c->state == C_PIPE) {
			if (c->out.len == 0 || (evs[i].events & EPOLLIN))
				pipe_client_read(f, c);
			conn_settle(f, c);
			continue;
		}
		if (c->state == C_PORT) {
			/* The response's bytes out; the next request in. */
			if (c->out.len == 0 || (evs[i].events & EPOLLIN))
				conn_read(f, c);
			conn_settle(f, c);
			continue;
		}
		if (evs[i].events & (EPOLLERR | EPOLLHUP) &&
		    !(evs[i].events & (EPOLLIN | EPOLLOUT))) {
			conn_close(f, c);
			continue;
		}
		/* With output pending, reading waits (backpressure). */
		if (c->out.len == 0)
			conn_read(f, c);
		conn_settle(f, c);
	}
	f->in_step = 0;
	while (f->dead != NULL) {
		struct conn *d = f->dead;

		f->dead = d->dead_next;
		free(d);
	}
	/* After the events: making room closes other connections, which
	 * may have events of their own further down evs. */
	if (accept_due)
		front_accept(f);
	front_after_events(f);
	return 0;
}

void
front_free(struct front *f)
{
	if (f == NULL)
		return;
	api_set_resume(f->api, NULL, NULL);
	api_set_pipe(f->api, NULL, NULL);
	api_set_auth_notify(f->api, NULL, NULL);
	api_set_alive(f->api, NULL, NULL);
	for (unsigned i = 0; i < f->lim->max_conns; i++)
		if (f->conns[i] != NULL)
			conn_close(f, f->conns[i]);
	port_pool_free(f->pool);
	close(f->epfd);
	free(f->conns);
	free(f);
}

int
front_serve_tls(int lfd, struct api *api, const struct front_limits *lim,
    struct tls *tls, volatile int *stop)
{
	struct front *f;
	int rc = 0;

	if ((f = front_new(lfd, api, lim, tls)) == NULL)
		return -1;
	while (rc == 0 && (stop == NULL || !*stop))
		rc = front_step(f, 250);
	front_free(f);
	return rc;
}

int
front_serve(int lfd, const struct api_backend *be,
    const struct front_limits *lim, volatile int *stop)
{
	struct api *api;
	int rc;

	if ((api = api_new(be, NULL)) == NULL)
		return -1;
	rc = front_serve_api(lfd, api, lim, stop);
	api_free(api);
	return rc;
}
