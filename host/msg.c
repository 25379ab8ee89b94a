/*
 * Message framing, decoding and dispatch between keepd's processes.
 * msg_decode is pure (no I/O, no globals) so the unit tests and the fuzzer
 * drive it directly; msg_dispatch adds the logging and counting.
 */
#include <sys/socket.h>
#include <sys/uio.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "host/msg.h"
#include "lib/log.h"

const char *
msg_strerror(int err)
{
	switch (err) {
	case MSG_OK:
		return "ok";
	case MSG_ERR_SHORT:
		return "datagram shorter than the header";
	case MSG_ERR_LENGTH:
		return "header length differs from the datagram";
	case MSG_ERR_RESERVED:
		return "reserved bits set";
	case MSG_ERR_TYPE:
		return "unknown message type";
	case MSG_ERR_SENDER:
		return "sender may not send this type";
	case MSG_ERR_SIZE:
		return "wrong payload size";
	case MSG_ERR_FD:
		return "descriptor missing or unexpected";
	case MSG_ERR_TRUNCATED:
		return "datagram or control data truncated";
	case MSG_ERR_TOOBIG:
		return "payload too large";
	case MSG_ERR_EOF:
		return "link closed";
	case MSG_ERR_IO:
		return "i/o error";
	case MSG_ERR_HANDLER:
		return "handler refused the payload";
	case MSG_ERR_AGAIN:
		return "link would block";
	}
	return "unknown error";
}

const char *
msg_type_name(uint32_t type)
{
	size_t i;

	for (i = 0; i < msg_type_nnames; i++)
		if (msg_type_names[i].type == type)
			return msg_type_names[i].name;
	return "unknown";
}

int
msg_decode(const struct msg_handler *handlers, size_t n, enum proc_id from,
    const void *buf, size_t len, int has_fd, struct msg *m,
    const struct msg_handler **hp)
{
	const struct msg_handler *h = NULL;
	struct msg_hdr hdr;
	size_t i;

	if (len < sizeof(hdr))
		return MSG_ERR_SHORT;
	memcpy(&hdr, buf, sizeof(hdr));
	if (hdr.len > MSG_MAX_PAYLOAD)
		return MSG_ERR_TOOBIG;
	if ((size_t)hdr.len != len - sizeof(hdr))
		return MSG_ERR_LENGTH;
	if (hdr.pad != 0 || (hdr.flags & ~MSG_F_ALL) != 0)
		return MSG_ERR_RESERVED;
	for (i = 0; i < n; i++) {
		if (handlers[i].type == hdr.type) {
			h = &handlers[i];
			break;
		}
	}
	if (h == NULL)
		return MSG_ERR_TYPE;
	if ((unsigned)from >= PROC_COUNT || (h->senders & PROC_BIT(from)) == 0)
		return MSG_ERR_SENDER;
	if (h->flags & MSG_H_VARIABLE) {
		if (hdr.len > h->size)
			return MSG_ERR_SIZE;
	} else if (hdr.len != h->size)
		return MSG_ERR_SIZE;
	if (!!has_fd != !!(h->flags & MSG_H_FD))
		return MSG_ERR_FD;
	m->hdr = hdr;
	m->data = (const uint8_t *)buf + sizeof(hdr);
	m->from = from;
	m->fd = MSG_NO_FD;
	if (hp != NULL)
		*hp = h;
	return MSG_OK;
}

int
msg_send(int sock, uint32_t type, uint32_t flags, uint64_t reqid,
    const void *payload, size_t len, int fd)
{
	struct msg_hdr hdr;
	struct iovec iov[2];
	struct msghdr mh;
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int))];
	} cbuf;
	struct cmsghdr *cm;
	ssize_t n;

	if (len > MSG_MAX_PAYLOAD)
		return MSG_ERR_TOOBIG;
	memset(&hdr, 0, sizeof(hdr));
	hdr.type = type;
	hdr.flags = flags;
	hdr.reqid = reqid;
	hdr.len = (uint32_t)len;
	iov[0].iov_base = &hdr;
	iov[0].iov_len = sizeof(hdr);
	iov[1].iov_base = (void *)(uintptr_t)payload;
	iov[1].iov_len = len;
	memset(&mh, 0, sizeof(mh));
	mh.msg_iov = iov;
	mh.msg_iovlen = len > 0 ? 2 : 1;
	if (fd >= 0) {
		memset(&cbuf, 0, sizeof(cbuf));
		mh.msg_control = cbuf.buf;
		mh.msg_controllen = sizeof(cbuf.buf);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	}
	do {
		n = sendmsg(sock, &mh, MSG_NOSIGNAL);
	} while (n == -1 && errno == EINTR);
	if (n == -1)
		return errno == EAGAIN ? MSG_ERR_AGAIN : MSG_ERR_IO;
	if ((size_t)n != sizeof(hdr) + len) {
		errno = EMSGSIZE;
		return MSG_ERR_IO;
	}
	return MSG_OK;
}

/* Close every descriptor in an SCM_RIGHTS control buffer but the first
 * one, which is returned (MSG_NO_FD if none). */
static int
take_fds(struct msghdr *mh)
{
	struct cmsghdr *cm;
	int fd = MSG_NO_FD, x;
	size_t i, nfd;

	for (cm = CMSG_FIRSTHDR(mh); cm != NULL; cm = CMSG_NXTHDR(mh, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		nfd = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < nfd; i++) {
			memcpy(
			    &x, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			if (fd == MSG_NO_FD)
				fd = x;
			else
				close(x);
		}
	}
	return fd;
}

static int
recv_one(int sock, void *buf, size_t bufsz, size_t *len, int *fdp, int flags)
{
	struct iovec iov;
	struct msghdr mh;
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(4 * sizeof(int))];
	} cbuf;
	ssize_t n;
	int fd;

	*fdp = MSG_NO_FD;
	*len = 0;
	iov.iov_base = buf;
	iov.iov_len = bufsz;
	memset(&mh, 0, sizeof(mh));
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = cbuf.buf;
	mh.msg_controllen = sizeof(cbuf.buf);
	do {
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC | flags);
	} while (n == -1 && errno == EINTR);
	if (n == -1)
		return errno == EAGAIN ? MSG_ERR_AGAIN : MSG_ERR_IO;
	fd = take_fds(&mh);
	if (n == 0 && fd == MSG_NO_FD)
		return MSG_ERR_EOF;
	if (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
		if (fd != MSG_NO_FD)
			close(fd);
		return MSG_ERR_TRUNCATED;
	}
	*len = (size_t)n;
	*fdp = fd;
	return MSG_OK;
}

int
msg_recv(int sock, void *buf, size_t bufsz, size_t *len, int *fdp)
{
	return recv_one(sock, buf, bufsz, len, fdp, 0);
}

int
msg_recv_nowait(int sock, void *buf, size_t bufsz, size_t *len, int *fdp)
{
	return recv_one(sock, buf, bufsz, len, fdp, MSG_DONTWAIT);
}

static void
log_dropped(struct proc_ctx *ctx, enum proc_id from, const void *buf,
    size_t len, int err)
{
	char esc[4 * 24 + 1];
	uint32_t type = 0;

	if (len >= sizeof(type))
		memcpy(&type, buf, sizeof(type));
	log_escape(esc, sizeof(esc), buf, len < 24 ? len : 24);
	log_warnx("%s: dropped message from %s: %s (type 0x%04x %s, %zu "
	          "bytes, header \"%s\"), %llu dropped so far",
	    __func__, proc_name(from), msg_strerror(err), type,
	    msg_type_name(type), len, esc, (unsigned long long)ctx->ndropped);
}

static int
dispatch_one(
    struct proc_ctx *ctx, enum proc_id from, void *buf, size_t bufsz, int flags)
{
	const struct msg_handler *h;
	struct msg m;
	size_t len;
	int err, fd;

	err = recv_one(ctx->fd[from], buf, bufsz, &len, &fd, flags);
	if (err == MSG_ERR_AGAIN)
		return flags & MSG_DONTWAIT ? MSG_ERR_AGAIN : MSG_OK;
	if (err == MSG_ERR_TRUNCATED) {
		ctx->ndropped++;
		log_dropped(ctx, from, buf, 0, err);
		return MSG_OK;
	}
	if (err != MSG_OK)
		return err;
	err = msg_decode(ctx->handlers, ctx->nhandlers, from, buf, len,
	    fd != MSG_NO_FD, &m, &h);
	if (err != MSG_OK) {
		ctx->ndropped++;
		log_dropped(ctx, from, buf, len, err);
		if (fd != MSG_NO_FD)
			close(fd);
		return MSG_OK;
	}
	m.fd = fd;
	ctx->nrecv++;
	log_debug("%s: %s from %s, reqid %llu, %u bytes", __func__,
	    msg_type_name(m.hdr.type), proc_name(from),
	    (unsigned long long)m.hdr.reqid, m.hdr.len);
	if (h->fn(ctx, &m) != 0) {
		ctx->ndropped++;
		log_dropped(ctx, from, buf, len, MSG_ERR_HANDLER);
	}
	return MSG_OK;
}

int
msg_dispatch(struct proc_ctx *ctx, enum proc_id from, void *buf, size_t bufsz)
{
	return dispatch_one(ctx, from, buf, bufsz, 0);
}

int
msg_dispatch_nowait(
    struct proc_ctx *ctx, enum proc_id from, void *buf, size_t bufsz)
{
	return dispatch_one(ctx, from, buf, bufsz, MSG_DONTWAIT);
}

int
msg_batch_add(uint8_t *buf, size_t cap, size_t *len, uint32_t *count,
    uint32_t type, uint32_t flags, uint64_t reqid, const void *payload,
    size_t plen)
{
	struct msg_hdr h;

	if (*len == 0)
		*len = sizeof(struct msg_batch_hdr);
	if (plen > cap || *len + sizeof(h) + plen > cap)
		return MSG_ERR_TOOBIG;
	memset(&h, 0, sizeof(h));
	h.type = type;
	h.flags = flags;
	h.reqid = reqid;
	h.len = (uint32_t)plen;
	memcpy(buf + *len, &h, sizeof(h));
	if (plen > 0)
		memcpy(buf + *len + sizeof(h), payload, plen);
	*len += sizeof(h) + plen;
	(*count)++;
	return MSG_OK;
}

int
msg_batch_next(const uint8_t *payload, size_t len, size_t *off,
    const uint8_t **msg, size_t *mlen)
{
	struct msg_hdr h;

	if (*off == 0) {
		struct msg_batch_hdr bh;

		if (len < sizeof(bh))
			return -1;
		memcpy(&bh, payload, sizeof(bh));
		if (bh.count == 0 || bh.pad != 0)
			return -1;
		*off = sizeof(bh);
	}
	if (*off == len)
		return 0;
	if (len - *off < sizeof(h))
		return -1;
	memcpy(&h, payload + *off, sizeof(h));
	if (h.len > len - *off - sizeof(h))
		return -1;
	*msg = payload + *off;
	*mlen = sizeof(h) + h.len;
	*off += *mlen;
	return 1;
}

/* Send what r holds, as one message of its reply type. */
static void
replies_flush(struct proc_ctx *ctx, struct msg_replies *r, uint64_t reqid)
{
	struct msg_batch_hdr bh;

	if (r->count == 0)
		return;
	memset(&bh, 0, sizeof(bh));
	bh.count = r->count;
	memcpy(r->buf, &bh, sizeof(bh));
	if (ctx->fd[r->to] < 0 ||
	    msg_send(ctx->fd[r->to], r->reply_type, MSG_F_REPLY, reqid, r->buf,
	        r->len, -1) != MSG_OK)
		log_warnx("%s: %u replies to %s lost", __func__, r->count,
		    proc_name(r->to));
	r->count = 0;
	r->len = 0;
}

int
msg_batch_serve(struct proc_ctx *ctx, const struct msg *m, uint32_t reply_type,
    struct msg_replies *r)
{
	const struct msg_handler *h;
	const uint8_t *inner;
	size_t off = 0, ilen;
	struct msg im;
	uint32_t n = 0;
	int rc;

	/* The whole batch is checked before any of it is served. */
	while ((rc = msg_batch_next(
	            m->data, m->hdr.len, &off, &inner, &ilen)) == 1)
		n++;
	if (rc != 0 || n == 0)
		return -1;
	r->to = m->from;
	r->reply_type = reply_type;
	r->count = 0;
	r->len = 0;
	ctx->replies = r;
	off = 0;
	while (msg_batch_next(m->data, m->hdr.len, &off, &inner, &ilen) == 1) {
		rc = msg_decode(ctx->handlers, ctx->nhandlers, m->from, inner,
		    ilen, 0, &im, &h);
		if (rc == MSG_OK && im.hdr.type == m->hdr.type)
			rc = MSG_ERR_TYPE; /* no batch inside a batch */
		if (rc != MSG_OK) {
			ctx->ndropped++;
			log_dropped(ctx, m->from, inner, ilen, rc);
			continue;
		}
		im.fd = MSG_NO_FD;
		ctx->nrecv++;
		if (h->fn(ctx, &im) != 0) {
			ctx->ndropped++;
			log_dropped(ctx, m->from, inner, ilen, MSG_ERR_HANDLER);
		}
	}
	ctx->replies = NULL;
	replies_flush(ctx, r, m->hdr.reqid);
	return 0;
}

int
msg_reply(struct proc_ctx *ctx, const struct msg *m, uint32_t type,
    const void *payload, size_t len, int fd)
{
	struct msg_replies *r = ctx->replies;

	if (ctx->fd[m->from] < 0)
		return MSG_ERR_IO;
	/* In a batch: held, and sent with the others (a reply with a
	 * descriptor goes alone, at once). */
	if (r != NULL && r->to == m->from && fd < 0) {
		if (msg_batch_add(r->buf, sizeof(r->buf), &r->len, &r->count,
		        type, MSG_F_REPLY, m->hdr.reqid, payload,
		        len) == MSG_OK)
			return MSG_OK;
		replies_flush(ctx, r, 0);
		if (msg_batch_add(r->buf, sizeof(r->buf), &r->len, &r->count,
		        type, MSG_F_REPLY, m->hdr.reqid, payload,
		        len) == MSG_OK)
			return MSG_OK;
	}
	return msg_send(ctx->fd[m->from], type, MSG_F_REPLY, m->hdr.reqid,
	    payload, len, fd);
}
