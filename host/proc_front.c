/*
 * The front: the TCP/TLS listener, HTTP/1.1 (host/http/), the API
 * (host/api/) and its backend over the links (host/front/front_backend.c). One
 * epoll loop serves the clients and the links; the TLS certificate and key
 * arrive from the parent as bytes, since the front cannot open files.
 */
#include <sys/epoll.h>
#include <sys/stat.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <sodium.h>

#include "host/api/api.h"
#include "host/front/front_backend.h"
#include "lib/clock.h"
#include "host/front/front_backend_int.h"
#include "host/http/front.h"
#include "host/msg.h"
#include "host/proc.h"
#include "host/vmm/vmm.h"
#include "lib/log.h"
#include "lib/memfd.h"

struct front_state {
	struct front_backend *fb;
	struct api *api;
	struct front *front;
	struct tls *tls;
	struct front_limits lim; /* front_new keeps a pointer to it */
	char *cert; /* PEM chain, cert_len bytes, NUL-terminated */
	char *key; /* PEM key, key_len bytes, NUL-terminated */
	size_t cert_len, key_len;
	int64_t test_clock_s; /* keepd -T: the schedules' clock, else 0 */
	char *zones; /* the zone table (MSG_CTL_ZONES), NUL-terminated */
	size_t zones_len;
};

static int
front_h_tls(struct proc_ctx *ctx, const struct msg *m)
{
	struct front_state *fs = ctx->arg;
	struct msg_tls t;
	char *cert = NULL, *key = NULL;

	memcpy(&t, m->data, sizeof(t));
	if (t.cert_len == 0 || t.key_len == 0 || t.cert_len > MSG_TLS_MAX ||
	    t.key_len > MSG_TLS_MAX ||
	    memfd_check(m->fd, t.cert_len + t.key_len, 2 * MSG_TLS_MAX) == -1 ||
	    (cert = memfd_read_at(m->fd, 0, t.cert_len)) == NULL ||
	    (key = memfd_read_at(m->fd, t.cert_len, t.key_len)) == NULL) {
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

/* keepd -T only: the time schedules go by (host/front/front_sched.c). */
static int
front_h_test_clock(struct proc_ctx *ctx, const struct msg *m)
{
	struct front_state *fs = ctx->arg;
	struct msg_test_clock t;

	memcpy(&t, m->data, sizeof(t));
	if (t.now_s <= 0)
		return -1;
	fs->test_clock_s = t.now_s;
	if (fs->fb != NULL)
		fs->fb->test_clock_s = t.now_s;
	return 0;
}

/* The time zones' rules by name, for schedules. */
static int
front_h_zones(struct proc_ctx *ctx, const struct msg *m)
{
	struct front_state *fs = ctx->arg;
	struct msg_zones z;
	struct stat st;
	char *text;

	memcpy(&z, m->data, sizeof(z));
	if (z.len == 0 || z.len > MSG_ZONES_MAX || fstat(m->fd, &st) == -1 ||
	    (uint64_t)st.st_size != z.len ||
	    (text = memfd_read_at(m->fd, 0, z.len)) == NULL) {
		close(m->fd);
		return -1;
	}
	close(m->fd);
	if (memchr(text, '\0', z.len) != NULL) {
		free(text);
		return -1;
	}
	free(fs->zones);
	fs->zones = text;
	fs->zones_len = z.len;
	if (fs->fb != NULL) {
		fs->fb->zones = fs->zones;
		fs->fb->zones_len = fs->zones_len;
	}
	return 0;
}

/* Start serving once the configuration (and, if configured, the TLS
 * material) is here; until then the listener's backlog holds clients. */
static int
front_start(struct proc_ctx *ctx, struct front_state *fs)
{
	struct front_limits *lim = &fs->lim;
	char err[256];

	if (ctx->config == NULL || (ctx->config->tls && fs->cert == NULL))
		return 0;
	if ((fs->fb = front_backend_new(ctx)) == NULL ||
	    (fs->api = api_new(front_backend_ops(fs->fb), NULL)) == NULL)
		return -1;
	fs->fb->test_clock_s = fs->test_clock_s;
	fs->fb->zones = fs->zones;
	fs->fb->zones_len = fs->zones_len;
	if (ctx->config->tls) {
		fs->tls = front_tls_server(fs->cert, fs->cert_len, fs->key,
		    fs->key_len, err, sizeof(err));
		explicit_bzero(fs->key, fs->key_len);
		if (fs->tls == NULL) {
			log_warnx("%s: TLS: %s", __func__, err);
			return -1;
		}
	}
	front_limits_default(lim);
	if (ctx->config->max_connections != 0)
		lim->max_conns = ctx->config->max_connections;
	if (ctx->config->max_connections_per_client != 0)
		lim->max_conns_per_client =
		    ctx->config->max_connections_per_client;
	if (ctx->config->unauthenticated_timeout_ms != 0)
		lim->unproven_timeout_ms =
		    ctx->config->unauthenticated_timeout_ms;
	if (ctx->config->max_replies_pending != 0)
		lim->max_pending_total = ctx->config->max_replies_pending;
	if (ctx->config->max_request_body != 0)
		lim->http.max_body = ctx->config->max_request_body;
	api_set_ports_domain(fs->api, ctx->config->ports_domain);
	api_set_tls(fs->api, fs->tls != NULL);
	api_set_platform(fs->api,
	    ctx->config->platform == VMM_PLATFORM_TRAP ? "trap" : "kvm",
	    ctx->config->kvm_missing
	        ? "keepd.yaml says platform: kvm and /dev/kvm does not open "
	          "here: no guest can run (platform: auto or trap would)"
	        : NULL);
	if ((fs->front = front_new(ctx->listen_fd, fs->api, lim, fs->tls)) ==
	    NULL)
		return -1;
	log_info("%s: serving the API%s", __func__,
	    fs->tls != NULL ? " over TLS" : "");
	return 1;
}

/*
 * Serve once the links to every peer have come up (the parent starts the
 * children one after another): a request that came before the store
 * did, /healthz already green, was refused 503 (a full check drew one).
 * A peer that has not come within FRONT_PEERS_MS is not waited for: the
 * front serves what it can, as when a child restarts later.
 */
#define FRONT_PEERS_MS 10000

static int
front_peers_up(const struct proc_ctx *ctx, uint64_t t0)
{
	int p;

	for (p = 0; p < PROC_COUNT; p++)
		if (p != PROC_PARENT && p != PROC_FRONT &&
		    (proc_table[PROC_FRONT].peers & PROC_BIT(p)) &&
		    ctx->fd[p] < 0 && mono_ms() - t0 < FRONT_PEERS_MS)
			return 0;
	return 1;
}

static int
front_loop(struct proc_ctx *ctx, struct front_state *fs)
{
	struct epoll_event ev[16];
	uint8_t *buf;
	int epfd, n, i, started = 0, linkfd[PROC_COUNT], timeout, due;
	int front_due;
	enum proc_id p;
	uint64_t t0 = mono_ms();

	if ((buf = malloc(MSG_BUFSZ)) == NULL ||
	    (epfd = epoll_create1(EPOLL_CLOEXEC)) == -1)
		fatal("%s", __func__);
	for (p = 0; p < PROC_COUNT; p++)
		linkfd[p] = -1;
	while (!ctx->quit) {
		/* Links come and go (a peer restarts): keep epoll in step. */
		for (p = 0; p < PROC_COUNT; p++) {
			struct epoll_event e = { .events = EPOLLIN,
				.data.u64 = p };

			if (linkfd[p] == ctx->fd[p])
				continue;
			if (linkfd[p] != -1)
				epoll_ctl(epfd, EPOLL_CTL_DEL, linkfd[p], NULL);
			if (ctx->fd[p] != -1 &&
			    epoll_ctl(epfd, EPOLL_CTL_ADD, ctx->fd[p], &e) ==
			        -1)
				fatal("%s: epoll_ctl", __func__);
			if (linkfd[p] != -1 && ctx->fd[p] == -1)
				front_backend_link_down(fs->fb, p);
			linkfd[p] = ctx->fd[p];
		}
		timeout = 250;
		if (fs->fb != NULL &&
		    (due = front_backend_flush_in(fs->fb)) >= 0 &&
		    due < timeout)
			timeout = due;
		if (!started && front_peers_up(ctx, t0)) {
			if ((started = front_start(ctx, fs)) == -1)
				fatalx("%s: cannot serve", __func__);
			if (started) {
				struct epoll_event e = { .events = EPOLLIN,
					.data.u64 = PROC_COUNT };

				if (epoll_ctl(epfd, EPOLL_CTL_ADD,
				        front_fd(fs->front), &e) == -1)
					fatal("%s: epoll_ctl", __func__);
			}
		}
		n = epoll_wait(epfd, ev, nitems(ev), timeout);
		if (n == -1 && errno != EINTR)
			fatal("%s: epoll_wait", __func__);
		front_due = 0;
		for (i = 0; i < n && !ctx->quit; i++) {
			p = (enum proc_id)ev[i].data.u64;
			if (p == PROC_COUNT) {
				front_due = 1;
				continue;
			}
			if (ctx->fd[p] == -1)
				continue;
			/* Once serving, replies go to the tasks that wait
			 * for them (host/front/front_backend.c). */
			if ((fs->fb != NULL
			            ? front_backend_link_event(fs->fb, p)
			            : proc_link_event(
			                  ctx, p, buf, MSG_BUFSZ)) == -1)
				ctx->quit = 1;
		}
		/* Timeouts are enforced inside front_step: call it always,
		 * but ask its epoll only when this wait said it had events
		 * (a pass per reply from a peer would ask it for nothing). */
		if (started && !ctx->quit) {
			front_backend_resume(fs->fb);
			if (front_due || n <= 0)
				front_step(fs->front, 0);
			else
				front_tick(fs->front);
			front_backend_flush(fs->fb);
		}
	}
	if (fs->fb != NULL)
		front_backend_stop(fs->fb);
	if (fs->front != NULL)
		front_free(fs->front);
	if (fs->fb != NULL)
		front_backend_free(fs->fb);
	if (fs->api != NULL)
		api_free(fs->api);
	close(epfd);
	free(buf);
	return 0;
}

int
front_main(struct proc_ctx *ctx)
{
	static struct front_state fs;
	static struct msg_handler handlers[32];
	size_t n = 0, i;
	const struct msg_handler common[] = {
		MSG_HANDLERS_COMMON,
		{ MSG_CTL_TLS, PROC_BIT(PROC_PARENT), sizeof(struct msg_tls),
		    MSG_H_FD, front_h_tls },
		{ MSG_CTL_TEST_CLOCK, PROC_BIT(PROC_PARENT),
		    sizeof(struct msg_test_clock), 0, front_h_test_clock },
		{ MSG_CTL_ZONES, PROC_BIT(PROC_PARENT),
		    sizeof(struct msg_zones), MSG_H_FD, front_h_zones },
	};

	for (i = 0; i < nitems(common); i++)
		handlers[n++] = common[i];
	for (i = 0; i < fb_run_nhandlers && n < nitems(handlers); i++)
		handlers[n++] = fb_run_handlers[i];
	for (i = 0; i < fb_store_nhandlers && n < nitems(handlers); i++)
		handlers[n++] = fb_store_handlers[i];
	for (i = 0; i < fb_watch_nhandlers && n < nitems(handlers); i++)
		handlers[n++] = fb_watch_handlers[i];
	for (i = 0; i < fb_secret_nhandlers && n < nitems(handlers); i++)
		handlers[n++] = fb_secret_handlers[i];
	ctx->handlers = handlers;
	ctx->nhandlers = n;
	ctx->arg = &fs;
	/* jansson would seed its hash function from /dev/urandom on first
	 * use, and the front may not open files: seed it here. */
	json_object_seed(randombytes_random() | 1);
	if (ctx->listen_fd < 0)
		fatalx("%s: no listener from the parent", __func__);
	log_info("%s: ready", __func__);
	return front_loop(ctx, &fs);
}
