/*
 * The front: the TCP/TLS listener, HTTP/1.1, token verification (host/http/,
 * host/api/ in phase 2). This skeleton holds the listener the parent
 * passed, keeps the TLS certificate and key the parent sends as bytes (the
 * front cannot open files) and answers the control messages.
 */
#include <sys/stat.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host/msg.h"
#include "host/proc.h"
#include "lib/log.h"

struct front_state {
	char *cert; /* PEM chain, cert_len bytes, NUL-terminated */
	char *key; /* PEM key, key_len bytes, NUL-terminated */
	size_t cert_len, key_len;
};

/* Read len bytes at off from fd into a new NUL-terminated buffer. */
static char *
read_at(int fd, uint64_t off, uint64_t len)
{
	char *buf;
	size_t got = 0;
	ssize_t n;

	if ((buf = malloc(len + 1)) == NULL)
		return NULL;
	while (got < len) {
		n = pread(fd, buf + got, len - got, (off_t)(off + got));
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0) {
			explicit_bzero(buf, len);
			free(buf);
			return NULL;
		}
		got += (size_t)n;
	}
	buf[len] = '\0';
	return buf;
}

static int
front_h_tls(struct proc_ctx *ctx, const struct msg *m)
{
	struct front_state *fs = ctx->arg;
	struct msg_tls t;
	struct stat st;
	char *cert = NULL, *key = NULL;

	memcpy(&t, m->data, sizeof(t));
	if (t.cert_len == 0 || t.key_len == 0 || t.cert_len > MSG_TLS_MAX ||
	    t.key_len > MSG_TLS_MAX || fstat(m->fd, &st) == -1 ||
	    (uint64_t)st.st_size != t.cert_len + t.key_len ||
	    (cert = read_at(m->fd, 0, t.cert_len)) == NULL ||
	    (key = read_at(m->fd, t.cert_len, t.key_len)) == NULL) {
		free(cert);
		close(m->fd);
		return -1;
	}
	close(m->fd);
	free(fs->cert);
	if (fs->key != NULL) {
		explicit_bzero(fs->key, fs->key_len);
		free(fs->key);
	}
	fs->cert = cert;
	fs->cert_len = t.cert_len;
	fs->key = key;
	fs->key_len = t.key_len;
	log_info("%s: TLS certificate (%zu bytes) and key received", __func__,
	    fs->cert_len);
	return 0;
}

static const struct msg_handler front_handlers[] = {
	MSG_HANDLERS_COMMON,
	{ MSG_CTL_TLS, PROC_BIT(PROC_PARENT), sizeof(struct msg_tls), MSG_H_FD,
	    front_h_tls },
};

int
front_main(struct proc_ctx *ctx)
{
	static struct front_state fs;

	ctx->handlers = front_handlers;
	ctx->nhandlers = nitems(front_handlers);
	ctx->arg = &fs;
	if (ctx->listen_fd < 0)
		log_warnx("%s: no listener from the parent", __func__);
	log_info("%s: ready", __func__);
	return proc_loop(ctx);
}
