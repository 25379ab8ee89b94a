/*
 * The front's requests through sandboxes' ports (docs/architecture.md,
 * "Ports"), in the loop of host/http/front.c: C_PORT, a request whose
 * response comes back framed (host/http/http_upstream.h) on a
 * connection kept between requests (host/http/port_pool.h), and C_PIPE,
 * an upgrade's byte pipe both ways.
 */
#include <sys/epoll.h>
#include <sys/socket.h>

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host/http/front_int.h"
#include "host/http/http_upstream.h"
#include "host/http/port_pool.h"
#include "lib/clock.h"
#include "lib/log.h"
#include "lib/task.h"

/* --- C_PIPE: a sandbox's port (docs/architecture.md, "Ports") ---------- */

static int
pipe_watch_up(struct front *f, struct conn *c)
{
	struct epoll_event ev;
	uint32_t want = 0;

	if (!c->up_eof && c->out.len < PIPE_MAX_OUT)
		want |= EPOLLIN;
	if (c->up_off < c->up_out.len)
		want |= EPOLLOUT;
	if (want == c->up_events)
		return 0;
	memset(&ev, 0, sizeof(ev));
	ev.events = want;
	ev.data.u64 = UP_TAG | conn_id(c);
	if (epoll_ctl(f->epfd, EPOLL_CTL_MOD, c->up_fd, &ev) == -1)
		return -1;
	c->up_events = want;
	return 0;
}

/* Bytes to the port's socket; -1: it is gone. */
static int
pipe_up_flush(struct conn *c)
{
	while (c->up_off < c->up_out.len) {
		ssize_t n = send(c->up_fd, c->up_out.data + c->up_off,
		    c->up_out.len - c->up_off, MSG_NOSIGNAL);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			return -1;
		}
		c->up_off += (size_t)n;
	}
	c->up_off = 0;
	c->up_out.len = 0;
	/* The client has ended its half: so does the port's, once all of
	 * it is there. */
	if (c->client_eof && !c->up_shut) {
		shutdown(c->up_fd, SHUT_WR);
		c->up_shut = 1;
	}
	return 0;
}

/* The port's side is ready: read what the client may take, write what
 * waits for it. */
void
pipe_up_event(struct front *f, struct conn *c, uint32_t events)
{
	char buf[16384];
	ssize_t n;

	if (c->closing)
		return;
	c->deadline = mono_ms() + f->lim->ws_idle_timeout_ms;
	if (pipe_up_flush(c) == -1) {
		c->closing = 2;
		return;
	}
	while (!c->up_eof && c->out.len < PIPE_MAX_OUT) {
		n = recv(c->up_fd, buf, sizeof(buf), 0);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				c->up_eof = 1;
			break;
		}
		if (n == 0) {
			c->up_eof = 1;
			break;
		}
		c->up_answered = 1;
		http_buf_add(&c->out, buf, (size_t)n);
	}
	/* The port's server ended the connection without a byte of an
	 * answer (it died, or was killed, with the request in flight): the
	 * client gets a 502 as from any proxy, not a connection closed on
	 * it with nothing. */
	if (c->up_eof && !c->up_answered && c->out.len == 0) {
		static const char body[] =
		    "{\"error\":{\"message\":\"The sandbox's server on this "
		    "port closed the connection without answering\","
		    "\"code\":\"BAD_GATEWAY\"}}\n";
		char head[160];
		int hn = snprintf(head, sizeof(head),
		    "HTTP/1.1 502 Bad Gateway\r\nContent-Type: "
		    "application/json\r\nContent-Length: %zu\r\nConnection: "
		    "close\r\n\r\n",
		    sizeof(body) - 1);

		c->up_answered = 1;
		if (hn > 0 && (size_t)hn < sizeof(head)) {
			http_buf_add(&c->out, head, (size_t)hn);
			http_buf_add(&c->out, body, sizeof(body) - 1);
		}
	}
	if (c->out.oom)
		c->closing = 2;
	(void)events;
}

/* The client's side: what it sends goes to the port as it is. */
void
pipe_client_read(struct front *f, struct conn *c)
{
	ssize_t n;

	while (!c->client_eof && c->up_out.len < PIPE_MAX_OUT) {
		char buf[16384];

		n = conn_recv(c, buf, sizeof(buf));
		if (n == -1) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				c->closing = 2;
			break;
		}
		if (n == 0) {
			c->client_eof = 1;
			break;
		}
		c->deadline = mono_ms() + f->lim->ws_idle_timeout_ms;
		http_buf_add(&c->up_out, buf, (size_t)n);
	}
	if (c->up_out.oom || pipe_up_flush(c) == -1)
		c->closing = 2;
}

/* After an event on either side: write, then what to wait for. */
void
pipe_settle(struct front *f, struct conn *c)
{
	uint32_t want = 0;

	if (c->closing == 2 || conn_flush(f, c) == -1) {
		conn_close(f, c);
		return;
	}
	/* The port has said all it will and the client has it all. */
	if (c->up_eof && c->out.len == 0) {
		conn_close(f, c);
		return;
	}
	if (c->out.len > 0)
		want |= c->wr_want;
	if (!c->client_eof && c->up_out.len < PIPE_MAX_OUT)
		want |= c->rd_want;
	if (conn_watch(f, c, want) == -1 || pipe_watch_up(f, c) == -1)
		conn_close(f, c);
}

/* --- C_PORT: a request through a port, its response framed ------------ */

enum { PORT_HEAD, PORT_BODY };

/* The connection of id, if it is still there. */
static struct conn *
conn_of(struct front *f, uint64_t id)
{
	unsigned slot = (unsigned)(id >> 32);
	struct conn *c;

	if (slot >= f->lim->max_conns || (c = f->conns[slot]) == NULL ||
	    c->gen != (uint32_t)id)
		return NULL;
	return c;
}

/* The request's task learns rc (api_pipe_ops' wait) and runs on. Last
 * thing its caller does with c: the task may have opened c anew, or
 * answered and closed it. */
static void
port_wake(struct conn *c, int rc)
{
	struct port_wait *w = c->up_wait;
	struct task *t;

	if (w == NULL)
		return;
	c->up_wait = NULL;
	t = w->task;
	w->rc = rc;
	if (task_run(t) == TASK_DONE)
		task_free(t);
}

/* The port's connection leaves c: kept for the next request of its key,
 * or closed. */
static void
port_release(struct front *f, struct conn *c, int keep)
{
	epoll_ctl(f->epfd, EPOLL_CTL_DEL, c->up_fd, NULL);
	if (keep && f->pool != NULL)
		port_pool_put(f->pool, c->up_fd, c->up_key, mono_ms());
	else
		close(c->up_fd);
	c->up_fd = -1;
	c->up_events = 0;
	c->up_out.len = 0;
	c->up_off = 0;
	c->up_head.len = 0;
}

/* The response has ended: the client's connection goes on to its next
 * request, unless the response's framing or either side says close. */
static void
port_done(struct front *f, struct conn *c)
{
	/* Not when any of the request is still to go: the server answered
	 * before it had all of it. */
	int reusable =
	    c->rh.reusable && !c->up_junk && !c->up_eof && c->up_out.len == 0;

	port_release(f, c, reusable);
	if ((c->up_flags & API_PIPE_CLOSE) || !c->rh.reusable || c->up_junk ||
	    c->peer_eof)
		c->closing = 1;
	c->state = c->inlen > 0 ? C_HEAD : C_IDLE;
	c->deadline = c->inlen > 0 ? mono_ms() + f->lim->head_timeout_ms
	                           : idle_deadline(f, c);
}

/* The client's answer when the port's server gave none it could have:
 * a 502 as from any proxy, then the connection's end. */
static void
port_bad_gateway(struct front *f, struct conn *c, const char *why)
{
	char body[256], head[160];
	int bn, hn;

	port_release(f, c, 0);
	bn = snprintf(body, sizeof(body),
	    "{\"error\":{\"message\":\"The sandbox's server on this port %s\","
	    "\"code\":\"BAD_GATEWAY\"}}\n",
	    why);
	hn = snprintf(head, sizeof(head),
	    "HTTP/1.1 502 Bad Gateway\r\nContent-Type: "
	    "application/json\r\nContent-Length: %d\r\nConnection: "
	    "close\r\n\r\n",
	    bn);
	if (bn > 0 && (size_t)bn < sizeof(body) && hn > 0 &&
	    (size_t)hn < sizeof(head)) {
		http_buf_add(&c->out, head, (size_t)hn);
		http_buf_add(&c->out, body, (size_t)bn);
	}
	c->closing = 1;
	c->state = C_IDLE;
}

/*
 * The port's connection ended or failed before a byte of an answer. A
 * kept one whose request's task waits: it goes back to C_WAIT and the
 * task opens another (-1). Otherwise the server died, or was killed,
 * with the request in flight: the client gets a 502 as from any proxy.
 * Returns -1 when c may be gone (the task ran).
 */
static int
port_unanswered(struct front *f, struct conn *c)
{
	if (c->up_wait != NULL) {
		port_release(f, c, 0);
		c->state = C_WAIT;
		c->deadline = mono_ms() + f->lim->wait_timeout_ms;
		port_wake(c, -1);
		return -1;
	}
	port_bad_gateway(f, c, "closed the connection without answering");
	return 0;
}

/*
 * Bytes from the port, in order: the head is gathered and framed, then
 * it and the body go to the client as they are. 1: the response has
 * ended (what followed it is the server's junk); 0: more to come; -1:
 * it cannot be framed.
 */
static int
port_feed(struct conn *c, const char *p, size_t n)
{
	while (n > 0) {
		size_t used;
		int rc;

		if (c->up_phase == PORT_HEAD) {
			size_t before = c->up_head.len, take;

			take = n < PORT_HEAD_MAX - before
			    ? n
			    : PORT_HEAD_MAX - before;
			http_buf_add(&c->up_head, p, take);
			if (c->up_head.oom)
				return -1;
			rc = http_upstream_head(c->up_head.data, c->up_head.len,
			    PORT_HEAD_MAX, (c->up_flags & API_PIPE_HEAD) != 0,
			    &c->rh);
			if (rc == HTTP_ERROR || (rc == HTTP_MORE && take < n))
				return -1;
			if (rc == HTTP_MORE)
				return 0;
			/* Of what was added, the head's and the rest. */
			used = c->rh.head_len - before;
			http_buf_add(&c->out, c->up_head.data, c->rh.head_len);
			c->up_forwarded = 1;
			c->up_head.len = 0;
			p += used;
			n -= used;
			if (c->rh.status < 200) {
				/* 100 or 103 goes on, and the real head
				 * follows; a 101 nobody asked for is not a
				 * response this loop can frame. */
				if (c->rh.status == 101)
					return -1;
				continue;
			}
			c->up_phase = PORT_BODY;
			c->up_left = c->rh.content_length;
			http_chunk_scan_init(&c->cs);
			if (c->rh.framing == HTTP_FRAME_NONE ||
			    (c->rh.framing == HTTP_FRAME_LENGTH &&
			        c->up_left == 0))
				goto ended;
			continue;
		}
		switch (c->rh.framing) {
		case HTTP_FRAME_LENGTH:
			used = n < c->up_left ? n : (size_t)c->up_left;
			http_buf_add(&c->out, p, used);
			c->up_left -= used;
			p += used;
			n -= used;
			if (c->up_left == 0)
				goto ended;
			break;
		case HTTP_FRAME_CHUNKED:
			rc = http_chunk_scan(&c->cs, p, n, &used);
			if (rc == HTTP_ERROR)
				return -1;
			http_buf_add(&c->out, p, used);
			p += used;
			n -= used;
			if (rc == HTTP_OK)
				goto ended;
			break;
		case HTTP_FRAME_CLOSE:
			http_buf_add(&c->out, p, n);
			n = 0;
			break;
		default:
			goto ended;
		}
	}
	return 0;
ended:
	if (n > 0)
		c->up_junk = 1;
	return 1;
}

/* The port's side is ready: write the request, read what the client may
 * take. Returns -1 when c may be gone (a task ran): not to be settled. */
int
port_up_event(struct front *f, struct conn *c)
{
	char buf[16384];
	ssize_t n;
	int rc = 0;

	if (c->closing)
		return 0;
	c->deadline = mono_ms() + f->lim->ws_idle_timeout_ms;
	if (pipe_up_flush(c) == -1) {
		if (!c->up_answered)
			return port_unanswered(f, c);
		c->closing = 2;
		return 0;
	}
	while (rc == 0 && c->out.len < PIPE_MAX_OUT) {
		n = recv(c->up_fd, buf, sizeof(buf), 0);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (n <= 0) {
			c->up_eof = 1;
			if (!c->up_answered)
				return port_unanswered(f, c);
			if (c->up_phase == PORT_BODY &&
			    c->rh.framing == HTTP_FRAME_CLOSE) {
				port_done(f, c);
				return 0;
			}
			/* Cut short: the client sees it end there, or a
			 * 502 when none of it has gone to the client. */
			if (!c->up_forwarded) {
				port_bad_gateway(f, c,
				    "closed the connection in its answer's "
				    "head");
				return 0;
			}
			port_release(f, c, 0);
			c->closing = 1;
			c->state = C_IDLE;
			return 0;
		}
		if (!c->up_answered) {
			c->up_answered = 1;
			/* Its task ends now, while c waits in C_PORT. */
			port_wake(c, 0);
			if (conn_of(f, conn_id(c)) != c || c->state != C_PORT)
				return -1;
		}
		rc = port_feed(c, buf, (size_t)n);
	}
	if (c->out.oom)
		rc = -1;
	if (rc == 1)
		port_done(f, c);
	else if (rc == -1) {
		/* What went out was the server's; nothing can follow it. */
		log_debug("%s: a response that cannot be framed", __func__);
		if (!c->up_forwarded && !c->out.oom)
			port_bad_gateway(
			    f, c, "answered what is not an HTTP/1.1 response");
		else {
			port_release(f, c, 0);
			c->closing = c->out.len > 0 && !c->out.oom ? 1 : 2;
			c->state = C_IDLE;
		}
	}
	return 0;
}

/* C_PORT's settle: write to the client, then what to wait for on both
 * sides. */
void
port_settle(struct front *f, struct conn *c)
{
	uint32_t want;

	if (c->closing == 2 || conn_flush(f, c) == -1) {
		conn_close(f, c);
		return;
	}
	/* The client's next requests wait in its buffer, as in C_WAIT. */
	want = c->out.len > 0                     ? c->wr_want
	    : c->peer_eof || c->inlen == c->incap ? 0
	                                          : EPOLLIN;
	if (conn_watch(f, c, want) == -1 || pipe_watch_up(f, c) == -1)
		conn_close(f, c);
}

/*
 * api_pipe_ops' open: the api hands over connection id with the port's
 * socket and the request as it goes there (head, then body). Without
 * API_PIPE_UPGRADE the response is framed (C_PORT) and what the client
 * sends after the request stays to be parsed; with it, the connection is
 * a byte pipe until either side ends (C_PIPE), and what the client sent
 * after the request goes too (a WebSocket's first frames).
 */
static int
front_port_open(void *arg, uint64_t id, int fd, const void *req, size_t len,
    const char *key, int flags)
{
	struct front *f = arg;
	struct epoll_event ev;
	struct conn *c;

	if ((c = conn_of(f, id)) == NULL || c->closing || c->up_fd >= 0 ||
	    c->state != C_WAIT || strlen(key) >= sizeof(c->up_key))
		return -1;
	if (!(flags & API_PIPE_REUSED) && fcntl(fd, F_SETFL, O_NONBLOCK) == -1)
		return -1;
	c->up_fd = fd;
	c->up_eof = c->up_shut = c->up_answered = c->up_junk = 0;
	c->up_forwarded = 0;
	c->client_eof = 0;
	c->up_flags = flags;
	c->up_phase = PORT_HEAD;
	c->up_off = 0;
	c->up_out.len = 0;
	c->up_head.len = 0;
	strlcpy(c->up_key, key, sizeof(c->up_key));
	http_buf_add(&c->up_out, req, len);
	c->deadline = mono_ms() + f->lim->ws_idle_timeout_ms;
	if (flags & API_PIPE_UPGRADE) {
		/* Pipelined bytes already read are the client's next
		 * ones. */
		if (c->inlen > 0) {
			http_buf_add(&c->up_out, c->in, c->inlen);
			c->inlen = 0;
		}
		c->state = C_PIPE;
		if (c->peer_eof)
			c->client_eof = 1;
	} else
		c->state = C_PORT;
	memset(&ev, 0, sizeof(ev));
	ev.events = c->state == C_PIPE ? EPOLLOUT : EPOLLIN;
	ev.data.u64 = UP_TAG | conn_id(c);
	if (epoll_ctl(f->epfd, EPOLL_CTL_ADD, fd, &ev) == -1) {
		c->up_fd = -1;
		c->up_out.len = 0;
		c->state = C_WAIT;
		return -1;
	}
	c->up_events = ev.events;
	/* The request goes at once, as a rule whole (a socket's buffer
	 * holds it): then the answer is what to wait for. A send that
	 * fails is seen as the answer's absence. */
	if (c->state == C_PORT &&
	    (pipe_up_flush(c) == -1 || c->up_off < c->up_out.len)) {
		ev.events = EPOLLIN | EPOLLOUT;
		if (epoll_ctl(f->epfd, EPOLL_CTL_MOD, fd, &ev) == 0)
			c->up_events = ev.events;
	}
	if (!f->in_step)
		conn_settle(f, c);
	return 0;
}

static int
front_port_take(void *arg, const char *key)
{
	struct front *f = arg;

	return f->pool != NULL ? port_pool_take(f->pool, key) : -1;
}

static int
front_port_wait(void *arg, uint64_t id)
{
	struct front *f = arg;
	struct port_wait w = { task_self(), 0 };
	struct conn *c;

	if ((c = conn_of(f, id)) == NULL)
		return -2;
	if (c->state != C_PORT || c->up_answered)
		return 0;
	if (w.task == NULL || c->up_wait != NULL)
		return 0;
	c->up_wait = &w;
	task_suspend();
	return w.rc;
}

const struct api_pipe_ops front_port_ops = {
	.open = front_port_open,
	.take = front_port_take,
	.wait = front_port_wait,
};
