/*
 * The store's messages: exact-length decoding, the service step, and
 * encoders for the senders. Every count and length from a message is
 * bounded before use; sums are checked against the length received.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "host/proc.h"
#include "host/store/store_int.h"
#include "host/store/store_wire.h"
#include "lib/caps.h"
#include "lib/util.h"

#define READERS                                                                \
	(PROC_BIT(PROC_FRONT) | PROC_BIT(PROC_VMM) | PROC_BIT(PROC_POLICY))
#define WRITERS (PROC_BIT(PROC_FRONT) | PROC_BIT(PROC_VMM))
#define AUDITORS                                                               \
	(PROC_BIT(PROC_PARENT) | PROC_BIT(PROC_FRONT) |                        \
	    PROC_BIT(PROC_POLICY) | PROC_BIT(PROC_VMM) |                       \
	    PROC_BIT(PROC_EGRESS))
#define COUNTERS (PROC_BIT(PROC_POLICY))

static int
allzero(const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		if (b[i] != 0)
			return 0;
	return 1;
}

/* Copy a key part of n bytes (no NUL inside) into buf as a C string. */
static int
key_part(const uint8_t *p, size_t n, size_t max, char *buf)
{
	if (n > max || memchr(p, '\0', n) != NULL)
		return -1;
	memcpy(buf, p, n);
	buf[n] = '\0';
	return 0;
}

/* ---- replies -------------------------------------------------------- */

struct reply {
	struct store_wbuf w;
	uint32_t count;
};

static void
reply_begin(struct reply *r, int status, int64_t value, const char *next)
{
	struct store_wire_reply h;
	size_t nl = next ? strlen(next) : 0;

	memset(r, 0, sizeof(*r));
	memset(&h, 0, sizeof(h));
	h.version = STORE_WIRE_VERSION;
	h.status = (uint32_t)status;
	h.next_len = (uint32_t)nl;
	h.value = value;
	store_w_bytes(&r->w, &h, sizeof(h));
	store_w_bytes(&r->w, next, nl);
}

static void
reply_add(struct reply *r, const void *rec, size_t len)
{
	uint32_t n = (uint32_t)len;

	store_w_bytes(&r->w, &n, sizeof(n));
	store_w_bytes(&r->w, rec, len);
	r->count++;
}

static int
reply_end(struct reply *r, void **out, size_t *len)
{
	int rc = store_w_finish(&r->w, out, len);

	if (rc == STORE_OK)
		memcpy(
		    (uint8_t *)*out + offsetof(struct store_wire_reply, count),
		    &r->count, sizeof(r->count));
	return rc;
}

static int
reply_status(int status, int64_t value, void **out, size_t *len)
{
	struct reply r;

	reply_begin(&r, status, value, NULL);
	return reply_end(&r, out, len);
}

/* ---- authorization -------------------------------------------------- */

static int64_t
svc_now(struct store_service *svc)
{
	struct timespec ts;

	if (svc->now_ms != NULL)
		return svc->now_ms(svc->arg);
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int
grant_ok(struct store_service *svc, const struct grant *wire, uint64_t reqid,
    struct grant *g)
{
	int rc;

	if (svc->verify != NULL)
		rc = svc->verify(svc->arg, wire, reqid, g);
	else
		rc = grant_verify(wire, sizeof(*wire), PROC_STORE,
		    svc->grant_key, grant_now_ms(), reqid, g);
	return rc == GRANT_OK ? 0 : -1;
}

/*
 * What a write to db needs: the capability (-1: any), the target the
 * grant must name and, when the record names one, the principal.
 */
static int
write_rule(unsigned db, const char *k1, int *cap, int *cap2)
{
	*cap2 = -1;
	switch (db) {
	case STORE_DB_SANDBOXES:
	case STORE_DB_ENV:
		*cap = CAP_SANDBOX_WRITE;
		return 0;
	case STORE_DB_RUNS:
		*cap = CAP_EXEC;
		return 0;
	case STORE_DB_FILES:
		*cap = CAP_ARTIFACT_WRITE;
		return 0;
	case STORE_DB_IMAGES:
		*cap = CAP_IMAGE_WRITE;
		return 0;
	case STORE_DB_SECRETS:
		*cap = CAP_SECRET_WRITE;
		return 0;
	case STORE_DB_REVOCATIONS:
		*cap = CAP_ADMIN;
		*cap2 = CAP_SANDBOX_WRITE;
		return 0;
	case STORE_DB_IDEMPOTENCY:
		*cap = -1;
		return 0;
	case STORE_DB_SCHEDULES:
	case STORE_DB_SCHED_RUNS:
		*cap = CAP_SCHEDULE_WRITE;
		return 0;
	default:
		(void)k1;
		return -1;
	}
}

static int
authorize(struct store_service *svc, const struct grant *wire, uint64_t reqid,
    unsigned db, const char *target, const char *principal)
{
	struct grant g;
	int cap, cap2;

	if (write_rule(db, target, &cap, &cap2) != 0 ||
	    grant_ok(svc, wire, reqid, &g) != 0)
		return STORE_E_GRANT;
	if (cap >= 0) {
		if (g.cap != (uint32_t)cap &&
		    (cap2 < 0 || g.cap != (uint32_t)cap2))
			return STORE_E_GRANT;
		if (grant_check(&g, g.cap, target, strlen(target)) != GRANT_OK)
			return STORE_E_GRANT;
	}
	if (principal != NULL &&
	    strncmp(g.principal, principal, sizeof(g.principal)) != 0)
		return STORE_E_GRANT;
	return STORE_OK;
}

/* The grant's target and principal for a record about to be put. */
static int
record_subject(unsigned db, const void *rec, size_t len, const char **target,
    const char **principal)
{
	union {
		struct store_sandbox s;
		struct store_run r;
		struct store_revocation v;
		struct store_idem k;
		struct store_image i;
		struct store_env e;
		struct store_file f;
		struct store_schedule d;
		struct store_sched_run g;
		struct store_secret z;
	} u;
	int rc = STORE_E_MSG;

	*principal = NULL;
	switch (db) {
	case STORE_DB_SANDBOXES:
		if ((rc = store_sandbox_decode(rec, len, &u.s)) == 0) {
			*target = u.s.id;
			*principal = u.s.owner;
		}
		break;
	case STORE_DB_RUNS:
		/* exec is granted per program: the run's command. */
		if ((rc = store_run_decode(rec, len, &u.r)) == 0) {
			*target = u.r.command;
			*principal = u.r.principal;
		}
		break;
	case STORE_DB_REVOCATIONS:
		if ((rc = store_revocation_decode(rec, len, &u.v)) == 0)
			*target = u.v.jti;
		break;
	case STORE_DB_IDEMPOTENCY:
		if ((rc = store_idem_decode(rec, len, &u.k)) == 0) {
			*target = u.k.key;
			*principal = u.k.principal;
		}
		break;
	case STORE_DB_IMAGES:
		if ((rc = store_image_decode(rec, len, &u.i)) == 0)
			*target = u.i.name;
		break;
	case STORE_DB_ENV:
		if ((rc = store_env_decode(rec, len, &u.e)) == 0)
			*target = u.e.sandbox;
		break;
	case STORE_DB_FILES:
		if ((rc = store_file_decode(rec, len, &u.f)) == 0)
			*target = u.f.sandbox;
		break;
	case STORE_DB_SCHEDULES:
		if ((rc = store_schedule_decode(rec, len, &u.d)) == 0) {
			*target = u.d.id;
			*principal = u.d.owner;
		}
		break;
	case STORE_DB_SCHED_RUNS:
		if ((rc = store_sched_run_decode(rec, len, &u.g)) == 0) {
			*target = u.g.schedule;
			*principal = u.g.owner;
		}
		break;
	case STORE_DB_SECRETS:
		if ((rc = store_secret_decode(rec, len, &u.z)) == 0) {
			*target = u.z.name;
			*principal = u.z.set_by;
		}
		break;
	default:
		break;
	}
	return rc == STORE_OK ? STORE_OK : STORE_E_MSG;
}

/* ---- handlers ------------------------------------------------------- */

static int
handle_put(struct store_service *svc, uint32_t from, uint64_t reqid,
    const uint8_t *msg, size_t len, void **reply, size_t *reply_len,
    int *status)
{
	struct store_wire_put h;
	const char *target, *principal;
	const uint8_t *rec;
	int rc;

	if (len < sizeof(h))
		return STORE_E_MSG;
	memcpy(&h, msg, sizeof(h));
	rec = msg + sizeof(h);
	if (h.version != STORE_WIRE_VERSION || h.rec_len != len - sizeof(h) ||
	    (h.flags & ~STORE_PUT_CREATE) != 0 || h.db == STORE_DB_META ||
	    h.db == STORE_DB_AUDIT || h.db == STORE_DB_COUNTERS ||
	    h.db >= STORE_DB_COUNT)
		return STORE_E_MSG;
	if (record_subject(h.db, rec, h.rec_len, &target, &principal) != 0)
		return STORE_E_MSG;
	/*
	 * Idempotency records are the front's memory of the replies it
	 * made: only the front writes them, and they need no grant, since a
	 * front that lied in them could as well lie in its replies. Every
	 * other record is an effect and needs the policy's grant.
	 */
	if (h.db == STORE_DB_IDEMPOTENCY)
		rc = from == PROC_FRONT ? STORE_OK : STORE_E_SENDER;
	else
		rc = authorize(svc, &h.grant, reqid, h.db, target, principal);
	if (rc != STORE_OK) {
		*status = rc;
		return rc;
	}
	if (h.db == STORE_DB_IDEMPOTENCY) {
		struct store_idem k;

		(void)store_idem_decode(rec, h.rec_len, &k);
		*status = store_idem_put(svc->st, &k, svc_now(svc));
	} else
		*status = store_put(svc->st, h.db, rec, h.rec_len, h.flags);
	(void)reply;
	(void)reply_len;
	return STORE_OK;
}

struct keyreq {
	struct store_wire_key h;
	char k1[STORE_NAME_MAX + 1];
	char k2[STORE_PATH_MAX + 1];
};

static int
key_decode(uint16_t type, const uint8_t *msg, size_t len, struct keyreq *q)
{
	struct store_wire_key *h = &q->h;

	if (len < sizeof(*h))
		return STORE_E_MSG;
	memcpy(h, msg, sizeof(*h));
	if (h->version != STORE_WIRE_VERSION || h->reserved != 0 ||
	    h->db == STORE_DB_META || h->db >= STORE_DB_COUNT ||
	    h->k1_len > STORE_NAME_MAX || h->k2_len > STORE_PATH_MAX ||
	    (uint64_t)sizeof(*h) + h->k1_len + h->k2_len != len)
		return STORE_E_MSG;
	if (key_part(msg + sizeof(*h), h->k1_len, STORE_NAME_MAX, q->k1) != 0 ||
	    key_part(msg + sizeof(*h) + h->k1_len, h->k2_len, STORE_PATH_MAX,
	        q->k2) != 0)
		return STORE_E_MSG;
	if (type != MSG_STORE_DELETE && !allzero(&h->grant, sizeof(h->grant)))
		return STORE_E_MSG;
	if (type == MSG_STORE_LIST) {
		if (h->limit == 0 || h->limit > STORE_WIRE_MAX_LIST)
			return STORE_E_MSG;
	} else if (h->limit != 0 || h->k1_len == 0 || h->db == STORE_DB_AUDIT)
		return STORE_E_MSG;
	if (type == MSG_STORE_REVOKED &&
	    (h->db != STORE_DB_REVOCATIONS || h->k2_len != 0))
		return STORE_E_MSG;
	if (type == MSG_STORE_DELETE && h->db == STORE_DB_COUNTERS)
		return STORE_E_MSG;
	return STORE_OK;
}

/* The list cursor that names rec (the last part of its key). */
static void
cursor_of(unsigned db, const void *rec, size_t len, char *out, size_t outlen)
{
	uint8_t key[STORE_KEY_MAX];
	const uint8_t *p = key, *nul;
	size_t klen;

	out[0] = '\0';
	if (store_record_key(db, rec, len, key, sizeof(key), &klen) != 0)
		return;
	if (db == STORE_DB_AUDIT) {
		snprintf(out, outlen, "%" PRIu64, store_get_be64(key));
		return;
	}
	if ((nul = memchr(key, '\0', klen)) != NULL) {
		klen -= (size_t)(nul + 1 - key);
		p = nul + 1;
	}
	if (klen >= outlen)
		klen = outlen - 1;
	memcpy(out, p, klen);
	out[klen] = '\0';
}

static int
handle_key(struct store_service *svc, uint16_t type, uint64_t reqid,
    const uint8_t *msg, size_t len, void **reply, size_t *reply_len,
    int *status)
{
	struct keyreq *q = malloc(sizeof(*q));
	const char *k1, *k2;
	int rc = STORE_OK;

	if (q == NULL)
		return STORE_E_NOMEM;
	if (key_decode(type, msg, len, q) != STORE_OK) {
		free(q);
		return STORE_E_MSG;
	}
	k1 = q->h.k1_len ? q->k1 : NULL;
	k2 = q->h.k2_len ? q->k2 : NULL;
	switch (type) {
	case MSG_STORE_GET: {
		void *rec;
		size_t rlen;

		if (q->h.db == STORE_DB_IDEMPOTENCY && k2 != NULL) {
			struct store_idem k;

			*status = store_idem_get(
			    svc->st, k1, k2, svc_now(svc), &k, &rec);
			rlen = 0;
			if (*status == STORE_OK) {
				free(rec);
				*status = store_get(
				    svc->st, q->h.db, k1, k2, &rec, &rlen);
			}
		} else
			*status =
			    store_get(svc->st, q->h.db, k1, k2, &rec, &rlen);
		if (*status == STORE_OK) {
			struct reply r;

			reply_begin(&r, STORE_OK, 0, NULL);
			reply_add(&r, rec, rlen);
			free(rec);
			rc = reply_end(&r, reply, reply_len);
		}
		break;
	}
	case MSG_STORE_LIST: {
		struct store_page *pg = calloc(1, sizeof(*pg));
		char next[STORE_CURSOR_MAX];
		struct reply r;
		size_t n, used;

		if (pg == NULL) {
			rc = STORE_E_NOMEM;
			break;
		}
		*status = store_list(svc->st, q->h.db, k1, k2, q->h.limit, pg);
		if (*status != STORE_OK) {
			free(pg);
			break;
		}
		/* Stop early when the reply would outgrow one message. */
		used = sizeof(struct store_wire_reply) + STORE_CURSOR_MAX;
		for (n = 0; n < pg->n; n++) {
			if (used + 4 + pg->len[n] > STORE_WIRE_REPLY_MAX &&
			    n > 0)
				break;
			used += 4 + pg->len[n];
		}
		if (n < pg->n)
			cursor_of(q->h.db, pg->rec[n - 1], pg->len[n - 1], next,
			    sizeof(next));
		else
			strlcpy(next, pg->next, sizeof(next));
		reply_begin(&r, STORE_OK, 0, next);
		for (size_t i = 0; i < n; i++)
			reply_add(&r, pg->rec[i], pg->len[i]);
		store_page_free(pg);
		free(pg);
		rc = reply_end(&r, reply, reply_len);
		break;
	}
	case MSG_STORE_DELETE: {
		const char *target = k1;

		if (q->h.db == STORE_DB_AUDIT) {
			rc = STORE_E_MSG;
			break;
		}
		/* Idempotency keys are the caller's own: k1 is the principal. */
		if ((rc = authorize(svc, &q->h.grant, reqid, q->h.db, target,
		         q->h.db == STORE_DB_IDEMPOTENCY ? k1 : NULL)) != 0) {
			*status = rc;
			break;
		}
		*status = store_delete(svc->st, q->h.db, k1, k2);
		break;
	}
	case MSG_STORE_REVOKED: {
		int revoked = 0;

		*status =
		    store_revoked(svc->st, k1, svc_now(svc) / 1000, &revoked);
		if (*status == STORE_OK)
			rc = reply_status(STORE_OK, revoked, reply, reply_len);
		break;
	}
	default:
		rc = STORE_E_MSG;
	}
	free(q);
	return rc;
}

/* A refusal without a principal: no token, or one that did not verify. */
static int
is_unattributed(const struct store_audit *e)
{
	return e->principal[0] == '\0' && e->decision == STORE_DECISION_DENY &&
	    strcmp(e->rule, "token") == 0;
}

static uint32_t
unattributed(const struct store_audit *e, uint32_t n)
{
	uint32_t k = 0;

	for (uint32_t i = 0; i < n; i++)
		k += (uint32_t)is_unattributed(&e[i]);
	return k;
}

static int
handle_audit(struct store_service *svc, const uint8_t *msg, size_t len,
    void **reply, size_t *reply_len, int *status)
{
	struct store_wire_audit h;
	struct store_audit *e;
	struct store_rbuf r;
	uint64_t first = 0;
	uint32_t keep;
	int rc = STORE_OK;

	if (len < sizeof(h))
		return STORE_E_MSG;
	memcpy(&h, msg, sizeof(h));
	if (h.version != STORE_WIRE_VERSION || h.count == 0 ||
	    h.count > STORE_WIRE_MAX_AUDIT)
		return STORE_E_MSG;
	keep = h.count;
	if ((e = calloc(h.count, sizeof(*e))) == NULL)
		return STORE_E_NOMEM;
	r.p = msg + sizeof(h);
	r.left = len - sizeof(h);
	r.err = 0;
	for (uint32_t i = 0; i < h.count && rc == STORE_OK; i++) {
		uint32_t n;
		const void *rec = store_r_blob(&r, STORE_WIRE_REPLY_MAX, &n);

		if (rec == NULL ||
		    store_audit_decode(rec, n, &e[i]) != STORE_OK ||
		    e[i].seq != 0 || !allzero(e[i].prev, STORE_HASH_BYTES) ||
		    !allzero(e[i].hash, STORE_HASH_BYTES))
			rc = STORE_E_MSG;
	}
	if (rc == STORE_OK && store_r_end(&r) != 0)
		rc = STORE_E_MSG;
	/* Near full, the room left is for authenticated decisions: a
	 * refusal without a principal is counted, not recorded. */
	if (rc == STORE_OK && unattributed(e, keep) > 0 &&
	    store_room(svc->st) < STORE_UNATTRIBUTED_FLOOR) {
		uint32_t kept = 0;

		for (uint32_t i = 0; i < keep; i++)
			if (!is_unattributed(&e[i]))
				e[kept++] = e[i];
		svc->nunattributed_dropped += keep - kept;
		keep = kept;
	}
	if (rc == STORE_OK && keep == 0)
		rc = reply_status(STORE_OK, 0, reply, reply_len);
	else if (rc == STORE_OK) {
		*status = store_audit_append(svc->st, e, keep, &first);
		if (*status == STORE_OK)
			rc = reply_status(
			    STORE_OK, (int64_t)first, reply, reply_len);
	}
	free(e);
	return rc;
}

static int
handle_counter(struct store_service *svc, const uint8_t *msg, size_t len,
    void **reply, size_t *reply_len, int *status)
{
	struct store_wire_counter h;
	char k1[STORE_NAME_MAX + 1], k2[STORE_NAME_MAX + 1];
	int64_t value = 0;

	if (len < sizeof(h))
		return STORE_E_MSG;
	memcpy(&h, msg, sizeof(h));
	if (h.version != STORE_WIRE_VERSION || h.k1_len == 0 || h.k2_len == 0 ||
	    h.k1_len > STORE_NAME_MAX || h.k2_len > STORE_NAME_MAX ||
	    (uint64_t)sizeof(h) + h.k1_len + h.k2_len != len ||
	    key_part(msg + sizeof(h), h.k1_len, STORE_NAME_MAX, k1) != 0 ||
	    key_part(
	        msg + sizeof(h) + h.k1_len, h.k2_len, STORE_NAME_MAX, k2) != 0)
		return STORE_E_MSG;
	switch (h.op) {
	case STORE_COUNTER_ADD:
		*status = store_counter_add(
		    svc->st, k1, k2, h.value, svc_now(svc), &value);
		break;
	case STORE_COUNTER_SET:
		*status =
		    store_counter_set(svc->st, k1, k2, h.value, svc_now(svc));
		value = h.value;
		break;
	case STORE_COUNTER_GET:
		if (h.value != 0)
			return STORE_E_MSG;
		*status = store_counter_get(svc->st, k1, k2, &value);
		break;
	default:
		return STORE_E_MSG;
	}
	if (*status == STORE_OK)
		return reply_status(STORE_OK, value, reply, reply_len);
	return STORE_OK;
}

int
store_service_handle(struct store_service *svc, uint16_t type, uint32_t from,
    uint64_t reqid, const void *msg, size_t len, uint16_t *reply_type,
    void **reply, size_t *reply_len)
{
	uint32_t senders;
	int rc, status = STORE_OK;

	*reply = NULL;
	*reply_len = 0;
	*reply_type = 0;
	switch (type) {
	case MSG_STORE_PUT:
	case MSG_STORE_DELETE:
		senders = WRITERS;
		break;
	case MSG_STORE_GET:
	case MSG_STORE_LIST:
	case MSG_STORE_REVOKED:
		senders = READERS;
		break;
	case MSG_STORE_AUDIT:
		senders = AUDITORS;
		break;
	case MSG_STORE_ROOM:
		senders = READERS;
		break;
	case MSG_STORE_COUNTER:
		senders = COUNTERS;
		break;
	default:
		svc->nmalformed++;
		return STORE_E_MSG;
	}
	*reply_type = MSG_STORE_REPLY;
	if (from >= 32 || (senders & PROC_BIT(from)) == 0)
		rc = STORE_E_SENDER;
	else if (msg == NULL && len != 0)
		rc = STORE_E_MSG;
	else if (type == MSG_STORE_PUT)
		rc = handle_put(
		    svc, from, reqid, msg, len, reply, reply_len, &status);
	else if (type == MSG_STORE_AUDIT)
		rc = handle_audit(svc, msg, len, reply, reply_len, &status);
	else if (type == MSG_STORE_COUNTER)
		rc = handle_counter(svc, msg, len, reply, reply_len, &status);
	else if (type == MSG_STORE_ROOM) {
		uint64_t room = store_room(svc->st);

		rc = len != 0
		    ? STORE_E_MSG
		    : reply_status(STORE_OK,
		          room > INT64_MAX ? INT64_MAX : (int64_t)room, reply,
		          reply_len);
	} else
		rc = handle_key(
		    svc, type, reqid, msg, len, reply, reply_len, &status);
	if (rc == STORE_E_NOMEM) {
		free(*reply);
		*reply = NULL;
		*reply_len = 0;
		return rc;
	}
	if (rc == STORE_E_MSG || rc == STORE_E_SENDER || rc == STORE_E_GRANT) {
		status = rc;
		if (rc == STORE_E_MSG)
			svc->nmalformed++;
		else
			svc->nrefused++;
	} else
		svc->nhandled++;
	if (*reply == NULL) {
		int mrc = reply_status(status, 0, reply, reply_len);

		if (mrc != STORE_OK)
			return mrc;
	}
	return rc;
}

/* ---- encoders ------------------------------------------------------- */

int
store_wire_put_encode(unsigned db, unsigned flags, const struct grant *g,
    const void *rec, size_t rec_len, void **out, size_t *len)
{
	struct store_wire_put h;
	struct store_wbuf w = { 0 };

	if (db >= STORE_DB_COUNT || g == NULL || rec_len > UINT32_MAX ||
	    store_record_check(db, rec, rec_len) != STORE_OK)
		return STORE_E_ARG;
	memset(&h, 0, sizeof(h));
	h.version = STORE_WIRE_VERSION;
	h.db = db;
	h.flags = flags;
	h.rec_len = (uint32_t)rec_len;
	h.grant = *g;
	store_w_bytes(&w, &h, sizeof(h));
	store_w_bytes(&w, rec, rec_len);
	return store_w_finish(&w, out, len);
}

int
store_wire_key_encode(uint16_t type, unsigned db, const char *k1,
    const char *k2, unsigned limit, const struct grant *g, void **out,
    size_t *len)
{
	struct store_wire_key h;
	struct store_wbuf w = { 0 };
	size_t l1 = k1 ? strlen(k1) : 0, l2 = k2 ? strlen(k2) : 0;

	if (db >= STORE_DB_COUNT || l1 > STORE_NAME_MAX ||
	    l2 > STORE_PATH_MAX || (g != NULL) != (type == MSG_STORE_DELETE))
		return STORE_E_ARG;
	memset(&h, 0, sizeof(h));
	h.version = STORE_WIRE_VERSION;
	h.db = db;
	h.limit = limit;
	h.k1_len = (uint32_t)l1;
	h.k2_len = (uint32_t)l2;
	if (g != NULL)
		h.grant = *g;
	store_w_bytes(&w, &h, sizeof(h));
	store_w_bytes(&w, k1, l1);
	store_w_bytes(&w, k2, l2);
	return store_w_finish(&w, out, len);
}

int
store_wire_audit_encode(
    const struct store_audit *e, size_t n, void **out, size_t *len)
{
	struct store_wire_audit h = { STORE_WIRE_VERSION, (uint32_t)n };
	struct store_wbuf w = { 0 };

	if (n == 0 || n > STORE_WIRE_MAX_AUDIT)
		return STORE_E_ARG;
	store_w_bytes(&w, &h, sizeof(h));
	for (size_t i = 0; i < n; i++) {
		struct store_audit a = e[i];
		void *rec;
		size_t rlen;
		int rc;

		a.seq = 0;
		memset(a.prev, 0, sizeof(a.prev));
		memset(a.hash, 0, sizeof(a.hash));
		if ((rc = store_audit_encode(&a, &rec, &rlen)) != STORE_OK) {
			free(w.p);
			return rc;
		}
		store_w_blob(&w, rec, rlen, STORE_WIRE_REPLY_MAX);
		free(rec);
	}
	return store_w_finish(&w, out, len);
}

int
store_wire_counter_encode(unsigned op, const char *principal, const char *name,
    int64_t value, void **out, size_t *len)
{
	struct store_wire_counter h;
	struct store_wbuf w = { 0 };

	if (!store_name_ok(principal, STORE_NAME_MAX) ||
	    !store_name_ok(name, STORE_NAME_MAX))
		return STORE_E_ARG;
	memset(&h, 0, sizeof(h));
	h.version = STORE_WIRE_VERSION;
	h.op = op;
	h.k1_len = (uint32_t)strlen(principal);
	h.k2_len = (uint32_t)strlen(name);
	h.value = value;
	store_w_bytes(&w, &h, sizeof(h));
	store_w_bytes(&w, principal, h.k1_len);
	store_w_bytes(&w, name, h.k2_len);
	return store_w_finish(&w, out, len);
}

int
store_wire_reply_decode(const void *msg, size_t len,
    struct store_wire_reply *hdr, char next[STORE_CURSOR_MAX])
{
	const uint8_t *p = msg;
	size_t left;

	if (msg == NULL || len < sizeof(*hdr))
		return STORE_E_MSG;
	memcpy(hdr, p, sizeof(*hdr));
	left = len - sizeof(*hdr);
	if (hdr->version != STORE_WIRE_VERSION ||
	    hdr->next_len >= STORE_CURSOR_MAX || hdr->next_len > left ||
	    hdr->count > STORE_PAGE_MAX ||
	    (hdr->status != STORE_OK &&
	        (hdr->status <= STORE_E_BASE || hdr->status >= STORE_E_LAST)) ||
	    key_part(p + sizeof(*hdr), hdr->next_len, STORE_CURSOR_MAX - 1,
	        next) != 0)
		return STORE_E_MSG;
	p += sizeof(*hdr) + hdr->next_len;
	left -= hdr->next_len;
	for (uint32_t i = 0; i < hdr->count; i++) {
		uint32_t n;

		if (left < 4)
			return STORE_E_MSG;
		memcpy(&n, p, 4);
		if (n > left - 4)
			return STORE_E_MSG;
		p += 4 + n;
		left -= 4 + (size_t)n;
	}
	return left == 0 ? STORE_OK : STORE_E_MSG;
}

int
store_wire_reply_status(const void *msg, size_t len, uint32_t *status)
{
	struct store_wire_reply hdr;
	char next[STORE_CURSOR_MAX];
	int rc;

	if ((rc = store_wire_reply_decode(msg, len, &hdr, next)) == STORE_OK)
		*status = hdr.status;
	return rc;
}

int
store_wire_reply_record(
    const void *msg, size_t len, uint32_t i, const void **rec, size_t *rec_len)
{
	struct store_wire_reply h;
	char next[STORE_CURSOR_MAX];
	const uint8_t *p;

	if (store_wire_reply_decode(msg, len, &h, next) != STORE_OK ||
	    i >= h.count)
		return STORE_E_MSG;
	p = (const uint8_t *)msg + sizeof(h) + h.next_len;
	for (uint32_t j = 0;; j++) {
		uint32_t n;

		memcpy(&n, p, 4);
		if (j == i) {
			*rec = p + 4;
			*rec_len = n;
			return STORE_OK;
		}
		p += 4 + n;
	}
}
