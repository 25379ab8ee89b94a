/*
 * The store: alone opens the LMDB environment (host/store/), chrooted in
 * <state_dir>/db, and answers the other processes' requests with the
 * store's pure service step (host/store/store_wire.h). It checks senders
 * and grants itself as well; the handler table below only routes.
 */
#include <sys/stat.h>

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <sodium.h>

#include "host/msg.h"
#include "host/proc.h"
#include "host/store/store.h"
#include "host/store/store_wire.h"
#include "lib/log.h"
#include "lib/memfd.h"

#define STORE_MAP_SIZE STORE_KEEPD_MAP_SIZE
#define STORE_MAP_MAX STORE_KEEPD_MAP_MAX
#define STORE_EXPIRE_MS 60000 /* expired revocations and idempotency */

static struct store_service svc;
static uint64_t told_dropped; /* svc.nunattributed_dropped, as logged */

/*
 * Group commit: the writes that arrive in one turn of the loop (a run's
 * audit entry, its record, another request's audit) share one transaction
 * and one sync, and their replies wait for that sync: a reply still means
 * the write is on disk. Each write was a sync of its own, three in a row
 * before an execute could start.
 */
#define BATCH_MAX 32

static struct {
	enum proc_id to;
	uint64_t reqid;
	uint16_t type;
	void *reply;
	size_t len;
} held[BATCH_MAX];
static size_t nheld;

static int
batchable(uint16_t type)
{
	return type == MSG_STORE_PUT || type == MSG_STORE_DELETE ||
	    type == MSG_STORE_AUDIT;
}

/* Commit the batch, then send its replies: a write the commit lost is
 * answered with the commit's failure, never as done. */
static void
batch_flush(struct proc_ctx *ctx)
{
	struct store_wire_reply r;
	struct msg to;
	size_t i;
	int rc;

	if (svc.st == NULL)
		return;
	rc = store_batch_end(svc.st);
	if (rc != STORE_OK && nheld > 0)
		log_warnx("%s: %zu writes lost: %s", __func__, nheld,
		    store_strerror(rc));
	for (i = 0; i < nheld; i++) {
		memset(&to, 0, sizeof(to));
		to.from = held[i].to;
		to.hdr.reqid = held[i].reqid;
		if (rc != STORE_OK && held[i].len >= sizeof(r)) {
			memcpy(&r, held[i].reply, sizeof(r));
			if (r.status == STORE_OK) {
				memset(&r, 0, sizeof(r));
				r.version = STORE_WIRE_VERSION;
				r.status = (uint32_t)rc;
				held[i].len = sizeof(r);
				memcpy(held[i].reply, &r, sizeof(r));
			}
		}
		msg_reply(
		    ctx, &to, held[i].type, held[i].reply, held[i].len, -1);
		free(held[i].reply);
	}
	nheld = 0;
}

static void
store_round_end(struct proc_ctx *ctx)
{
	batch_flush(ctx);
}

/* Serve one request (type, its payload) and send the reply to m; a
 * write joins the round's batch if may_batch (a large put goes alone: the
 * batch's room in the map is for messages). */
static int
serve(struct proc_ctx *ctx, const struct msg *m, uint16_t type,
    const void *data, size_t len, int may_batch)
{
	int batch = may_batch && batchable(type);
	uint16_t rtype = 0;
	void *reply = NULL;
	size_t rlen = 0;
	int rc;

	if (svc.st == NULL)
		return -1;
	if (ctx->config != NULL)
		store_set_reserve(svc.st, ctx->config->store_reserve);
	/* The key for link PROC_STORE arrives by MSG_CTL_GRANT_KEY. */
	memcpy(svc.grant_key, ctx->grant_key[PROC_STORE], GRANT_KEY_BYTES);
	/* A read sees the writes before it; a full batch goes. */
	if (!batch || nheld == BATCH_MAX)
		batch_flush(ctx);
	if (batch)
		(void)store_batch_begin(svc.st); /* else: alone, as before */
	rc = store_service_handle(&svc, type, m->from, m->hdr.reqid, data, len,
	    &rtype, &reply, &rlen);
	if (batch && reply != NULL && rlen <= MSG_MAX_PAYLOAD) {
		held[nheld].to = m->from;
		held[nheld].reqid = m->hdr.reqid;
		held[nheld].type = rtype;
		held[nheld].reply = reply;
		held[nheld].len = rlen;
		nheld++;
		reply = NULL;
	}
	if (reply != NULL) {
		if (rlen > MSG_MAX_PAYLOAD) {
			/* A page of large records, or one record larger than
			 * a message: the asker must ask for less, and hears
			 * so rather than waiting for ever. */
			struct store_wire_reply big;

			log_warnx("%s: reply of %zu bytes to %s too large",
			    __func__, rlen, proc_name(m->from));
			memset(&big, 0, sizeof(big));
			big.version = STORE_WIRE_VERSION;
			big.status = STORE_E_ARG;
			msg_reply(ctx, m, rtype, &big, sizeof(big), -1);
		} else
			msg_reply(ctx, m, rtype, reply, rlen, -1);
	}
	free(reply);
	if (rc != STORE_OK)
		log_info("%s: %s from %s: %s", __func__,
		    msg_type_name(m->hdr.type), proc_name(m->from),
		    store_strerror(rc));
	return rc == STORE_OK ? 0 : -1;
}

static int
store_h_request(struct proc_ctx *ctx, const struct msg *m)
{
	return serve(ctx, m, (uint16_t)m->hdr.type, m->data, m->hdr.len, 1);
}

/*
 * A put too large for a message: its payload in a memfd the sender has
 * sealed, so it cannot change while it is read. Then exactly a put.
 */
static int
store_h_put_large(struct proc_ctx *ctx, const struct msg *m)
{
	uint64_t len;
	uint8_t *buf = NULL;
	int rc = -1;

	memcpy(&len, m->data, sizeof(len));
	if (len <= MSG_MAX_PAYLOAD ||
	    (buf = memfd_read(m->fd, len, STORE_PUT_LARGE_MAX)) == NULL) {
		log_warnx("%s: a large put from %s refused (%llu bytes)",
		    __func__, proc_name(m->from), (unsigned long long)len);
		goto out;
	}
	rc = serve(ctx, m, MSG_STORE_PUT, buf, len, 0);
out:
	free(buf);
	close(m->fd);
	return rc;
}

#define ANY (MSG_ANY_PROC & ~PROC_BIT(PROC_PARENT))
#define STORE_ROW(type, who)                                                   \
	{                                                                      \
		type, who, MSG_MAX_PAYLOAD, MSG_H_VARIABLE, store_h_request    \
	}
static const struct msg_handler store_handlers[] = {
	MSG_HANDLERS_COMMON,
	STORE_ROW(MSG_STORE_PUT, PROC_BIT(PROC_FRONT) | PROC_BIT(PROC_VMM)),
	STORE_ROW(MSG_STORE_DELETE, PROC_BIT(PROC_FRONT) | PROC_BIT(PROC_VMM)),
	STORE_ROW(MSG_STORE_GET,
	    PROC_BIT(PROC_FRONT) | PROC_BIT(PROC_VMM) | PROC_BIT(PROC_POLICY)),
	STORE_ROW(MSG_STORE_LIST,
	    PROC_BIT(PROC_FRONT) | PROC_BIT(PROC_VMM) | PROC_BIT(PROC_POLICY)),
	STORE_ROW(MSG_STORE_REVOKED,
	    PROC_BIT(PROC_FRONT) | PROC_BIT(PROC_VMM) | PROC_BIT(PROC_POLICY)),
	STORE_ROW(MSG_STORE_AUDIT, MSG_ANY_PROC),
	STORE_ROW(MSG_STORE_COUNTER, PROC_BIT(PROC_POLICY)),
	STORE_ROW(MSG_STORE_ROOM,
	    PROC_BIT(PROC_FRONT) | PROC_BIT(PROC_VMM) | PROC_BIT(PROC_POLICY)),
	{ MSG_STORE_PUT_LARGE, PROC_BIT(PROC_FRONT) | PROC_BIT(PROC_VMM),
	    sizeof(uint64_t), MSG_H_FD, store_h_put_large },
};

/* The loop's timer: expired revocations and idempotency keys go. */
static void
store_expire_tick(void *arg)
{
	struct timespec ts;
	uint64_t n_expired;

	(void)arg;
	if (svc.st == NULL)
		return;
	if (svc.nunattributed_dropped != told_dropped) {
		log_warnx("%s: %llu refusals without a principal not recorded "
		          "since the last report: the store has %llu MiB "
		          "left, below the %llu MiB kept for authenticated "
		          "requests; see keep audit prune",
		    __func__,
		    (unsigned long long)(svc.nunattributed_dropped -
		        told_dropped),
		    (unsigned long long)(store_room(svc.st) >> 20),
		    (unsigned long long)(STORE_UNATTRIBUTED_FLOOR >> 20));
		told_dropped = svc.nunattributed_dropped;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	if (store_expire(svc.st,
	        (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000,
	        &n_expired) == STORE_OK &&
	    n_expired > 0)
		log_info("%s: %llu expired records removed", __func__,
		    (unsigned long long)n_expired);
}

int
store_main(struct proc_ctx *ctx)
{
	struct store_config cfg;
	int rc;

	ctx->handlers = store_handlers;
	ctx->nhandlers = nitems(store_handlers);
	/* Records are JSON nowhere, but libsodium and jansson are linked:
	 * keep jansson from opening /dev/urandom should anything parse. */
	json_object_seed(randombytes_random() | 1);
	memset(&cfg, 0, sizeof(cfg));
	cfg.map_size = STORE_MAP_SIZE;
	cfg.map_max = STORE_MAP_MAX;
	/* Chrooted in <state_dir>/db as root; in its cwd (the same) if not. */
	if ((rc = store_open(".", &cfg, &svc.st)) != STORE_OK) {
		log_warnx("%s: the store cannot open: %s; requests are refused",
		    __func__, store_strerror(rc));
		svc.st = NULL;
	} else
		log_info("%s: LMDB environment open, map %llu MiB", __func__,
		    (unsigned long long)(store_map_size(svc.st) >> 20));
	log_info("%s: ready", __func__);
	ctx->on_round_end = store_round_end;
	rc = proc_loop_every(ctx, STORE_EXPIRE_MS, store_expire_tick, NULL);
	/* A record a peer sent before the stop is written (an idempotent
	 * reply, an audit entry), not lost to a clean restart. */
	proc_drain(ctx);
	batch_flush(ctx);
	if (svc.st != NULL)
		store_close(svc.st);
	return rc;
}
