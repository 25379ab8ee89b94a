/*
 * Secrets, from the front's side (docs/secrets.md). The front holds only
 * the public half of the secrets key: it seals a value it accepts
 * (crypto_box_seal) and hands the store the sealed bytes, and it can
 * never open one again. For a run whose environment names secrets it
 * asks the policy for secret:read on each name (a grant minted for the
 * vmm), fetches the sealed value from the store and passes both to the
 * vmm, which alone opens it. No value, sealed or not, is logged.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "host/front/front_backend_int.h"
#include "host/store/store.h"
#include "host/store/store_wire.h"
#include "host/vmm_msg.h"
#include "lib/log.h"
#include "lib/secret_ref.h"
#include "policy/policy.h"

_Static_assert(RUN_SECRET_SEALED_MAX == STORE_SEALED_MAX,
    "a stored secret fits the vmm's message");
_Static_assert(SECRET_VALUE_MAX + crypto_box_SEALBYTES <= STORE_SEALED_MAX,
    "a sealed value fits its record");

#define SECRETS_LIST_MAX 1000

/* The key arrives with the rest of the set-up, before the backend
 * exists; it is the front's, whichever backend serves. */
static struct {
	uint8_t pk[32];
	int have;
} secret_key;

static int
h_secret_key(struct proc_ctx *ctx, const struct msg *m)
{
	struct msg_secret_key k;
	static const uint8_t zero[32];

	(void)ctx;
	memcpy(&k, m->data, sizeof(k));
	/* The front is never to hold the opening half. */
	if (sodium_memcmp(k.sk, zero, sizeof(zero)) != 0) {
		sodium_memzero(&k, sizeof(k));
		log_warnx("%s: refused: it carries a secret key", __func__);
		return -1;
	}
	memcpy(secret_key.pk, k.pk, sizeof(secret_key.pk));
	secret_key.have = 1;
	return 0;
}

const struct msg_handler fb_secret_handlers[] = {
	{ MSG_CTL_SECRET_KEY, PROC_BIT(PROC_PARENT),
	    sizeof(struct msg_secret_key), 0, h_secret_key },
};
const size_t fb_secret_nhandlers = nitems(fb_secret_handlers);

static int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void
to_api(const struct store_secret *z, struct api_secret *out)
{
	memset(out, 0, sizeof(*out));
	strlcpy(out->name, z->name, sizeof(out->name));
	strlcpy(out->set_by, z->set_by, sizeof(out->set_by));
	out->created_at = z->created_ms;
	out->updated_at = z->updated_ms;
}

/*
 * The stored record of name: API_OK with *rec (malloc, the caller
 * frees) and *z decoded from it; API_ENOTFOUND when there is none.
 */
static int
secret_get(struct front_backend *fb, const char *name, void **rec,
    struct store_secret *z, struct api_error *err)
{
	const void *r;
	void *reply;
	size_t len;
	uint32_t status;
	int rc;

	*rec = NULL;
	if ((rc = fb_store_get(fb, STORE_DB_SECRETS, name, NULL, API_EBADREQ,
	         "Bad secret name", &reply, &r, &len, &status, err)) != API_OK)
		return rc;
	if (status == STORE_E_NOTFOUND) {
		free(reply);
		return fb_fail(err, API_ENOTFOUND, "Secret not found");
	}
	if (status != STORE_OK || (*rec = malloc(len)) == NULL) {
		free(reply);
		return fb_fail(err, API_EINTERNAL, "The store refused: %s",
		    store_strerror(
		        status == STORE_OK ? STORE_E_NOMEM : (int)status));
	}
	memcpy(*rec, r, len);
	free(reply);
	if (store_secret_decode(*rec, len, z) != STORE_OK) {
		free(*rec);
		*rec = NULL;
		return fb_fail(
		    err, API_EINTERNAL, "A secret's record is corrupt");
	}
	return API_OK;
}

static int
fb_secret_put(void *arg, const struct api_call *call, const char *name,
    const char *value, size_t len, struct api_secret *out, int *created,
    struct api_error *err)
{
	struct front_backend *fb = arg;
	uint8_t sealed[SECRET_VALUE_MAX + crypto_box_SEALBYTES];
	struct store_secret z, old;
	void *oldrec = NULL, *rec = NULL;
	size_t reclen;
	int rc;

	if (!secret_key.have)
		return fb_fail(
		    err, API_EUNAVAIL, "The secrets key has not arrived yet");
	if (len < SECRET_VALUE_MIN || len > SECRET_VALUE_MAX)
		return fb_fail(err, API_EBADREQ, "Bad secret value");
	rc = secret_get(fb, name, &oldrec, &old, err);
	if (rc != API_OK && rc != API_ENOTFOUND)
		return rc;
	*created = rc == API_ENOTFOUND;
	if (crypto_box_seal(
	        sealed, (const uint8_t *)value, len, secret_key.pk) != 0) {
		free(oldrec);
		return fb_fail(err, API_EINTERNAL, "Internal error");
	}
	memset(&z, 0, sizeof(z));
	z.name = name;
	z.sealed = sealed;
	z.sealed_len = (uint32_t)(len + crypto_box_SEALBYTES);
	z.updated_ms = now_ms();
	z.created_ms = *created ? z.updated_ms : old.created_ms;
	z.set_by = call->who->sub;
	rc = store_secret_encode(&z, &rec, &reclen) == STORE_OK
	    ? fb_store_put(fb, call->who, CAP_SECRET_WRITE, name,
	          STORE_DB_SECRETS, rec, reclen, err)
	    : fb_fail(err, API_EINTERNAL, "Secret record refused");
	free(rec);
	free(oldrec);
	if (rc != API_OK)
		return rc;
	to_api(&z, out);
	fb_audit_event(
	    fb, call, *created ? "secret.create" : "secret.rotate", name, "");
	return API_OK;
}

static int
fb_secret_delete(void *arg, const struct api_call *call, const char *name,
    struct api_error *err)
{
	struct front_backend *fb = arg;
	struct store_secret z;
	void *rec;
	int rc;

	if ((rc = secret_get(fb, name, &rec, &z, err)) != API_OK)
		return rc;
	free(rec);
	rc = fb_store_del(fb, call->who, CAP_SECRET_WRITE, name,
	    STORE_DB_SECRETS, name, NULL, err);
	if (rc == API_OK)
		fb_audit_event(fb, call, "secret.delete", name, "");
	return rc;
}

static int
fb_secret_list(void *arg, const struct api_call *call, struct api_secret **out,
    size_t *n, struct api_error *err)
{
	struct front_backend *fb = arg;
	struct store_wire_reply hdr;
	struct store_secret z;
	char next[STORE_CURSOR_MAX] = "", cursor[STORE_CURSOR_MAX] = "";
	const void *r;
	void *q, *reply;
	size_t qlen, rlen, len, cap = 16;
	uint32_t i;
	int rc;

	(void)call;
	*n = 0;
	if ((*out = calloc(cap, sizeof(**out))) == NULL)
		return fb_fail(err, API_EINTERNAL, "Out of memory");
	do {
		if (store_wire_key_encode(MSG_STORE_LIST, STORE_DB_SECRETS,
		        NULL, cursor[0] ? cursor : NULL, STORE_WIRE_MAX_LIST,
		        NULL, &q, &qlen) != STORE_OK) {
			rc = fb_fail(err, API_EINTERNAL, "Internal error");
			goto fail;
		}
		rc = fb_store_call(fb, 0, MSG_STORE_LIST, q, qlen, &reply,
		    &rlen, &hdr, next, err);
		free(q);
		if (rc != API_OK)
			goto fail;
		if (hdr.status != STORE_OK) {
			free(reply);
			rc =
			    fb_fail(err, API_EINTERNAL, "The store refused: %s",
			        store_strerror((int)hdr.status));
			goto fail;
		}
		for (i = 0; i < hdr.count && *n < SECRETS_LIST_MAX; i++) {
			if (store_wire_reply_record(reply, rlen, i, &r, &len) !=
			        STORE_OK ||
			    store_secret_decode(r, len, &z) != STORE_OK)
				continue;
			if (*n == cap) {
				struct api_secret *nv =
				    reallocarray(*out, cap * 2, sizeof(**out));
				if (nv == NULL) {
					free(reply);
					rc = fb_fail(err, API_EINTERNAL,
					    "Out of memory");
					goto fail;
				}
				*out = nv;
				cap *= 2;
			}
			to_api(&z, &(*out)[(*n)++]);
		}
		free(reply);
		strlcpy(cursor, next, sizeof(cursor));
	} while (cursor[0] != '\0' && *n < SECRETS_LIST_MAX);
	return API_OK;
fail:
	free(*out);
	*out = NULL;
	*n = 0;
	return rc;
}

void
fb_secret_ops(struct api_backend *ops)
{
	ops->secret_put = fb_secret_put;
	ops->secret_delete = fb_secret_delete;
	ops->secret_list = fb_secret_list;
}

/* Add the distinct secret names env's values refer to; -1 on a
 * malformed reference or too many. */
static int
referenced(const struct api_kv *env, size_t nenv,
    char names[SECRET_RUN_MAX][SECRET_NAME_MAX + 1], size_t *n,
    struct api_error *err)
{
	struct secret_ref ref;
	size_t i, k, pos;
	int rc;

	for (i = 0; i < nenv; i++) {
		const char *v = env[i].value;

		if (strstr(env[i].key, "${{") != NULL)
			return fb_fail(err, API_EBADREQ,
			    "A variable's name cannot refer to a secret");
		pos = 0;
		while ((rc = secret_ref_next(v, strlen(v), &pos, &ref)) == 1) {
			for (k = 0; k < *n; k++)
				if (strlen(names[k]) == ref.name_len &&
				    memcmp(names[k], ref.name, ref.name_len) ==
				        0)
					break;
			if (k < *n)
				continue;
			if (*n == SECRET_RUN_MAX)
				return fb_fail(err, API_EBADREQ,
				    "A run may use at most %d secrets",
				    SECRET_RUN_MAX);
			memcpy(names[*n], ref.name, ref.name_len);
			names[(*n)++][ref.name_len] = '\0';
		}
		if (rc < 0)
			return fb_fail(err, API_EBADREQ,
			    "Variable %.64s: \"${{\" must begin a reference "
			    "${{ secrets.NAME }}",
			    env[i].key);
	}
	return API_OK;
}

/*
 * The names the sandbox's own variables refer to, read from the store,
 * which has every variable the client was told of (the front writes
 * them before it answers, host/front/front_persist.c).
 */
static int
sandbox_refs(struct front_backend *fb, const char *sandbox,
    char names[SECRET_RUN_MAX][SECRET_NAME_MAX + 1], size_t *n,
    struct api_error *err)
{
	struct store_wire_reply hdr;
	struct store_env e;
	struct api_kv kv;
	char next[STORE_CURSOR_MAX] = "", cursor[STORE_CURSOR_MAX] = "";
	const void *r;
	void *q, *reply;
	size_t qlen, rlen, len;
	uint32_t i;
	int rc = API_OK, pages = 0;

	do {
		if (store_wire_key_encode(MSG_STORE_LIST, STORE_DB_ENV, sandbox,
		        cursor[0] ? cursor : NULL, STORE_WIRE_MAX_LIST, NULL,
		        &q, &qlen) != STORE_OK)
			return fb_fail(err, API_EINTERNAL, "Internal error");
		rc = fb_store_call(fb, 0, MSG_STORE_LIST, q, qlen, &reply,
		    &rlen, &hdr, next, err);
		free(q);
		if (rc != API_OK)
			return rc;
		if (hdr.status != STORE_OK) {
			free(reply);
			return fb_fail(err, API_EINTERNAL,
			    "The store refused: %s",
			    store_strerror((int)hdr.status));
		}
		for (i = 0; rc == API_OK && i < hdr.count; i++) {
			if (store_wire_reply_record(reply, rlen, i, &r, &len) !=
			        STORE_OK ||
			    store_env_decode(r, len, &e) != STORE_OK ||
			    strstr(e.value, "${{") == NULL)
				continue;
			kv.key = (char *)e.key;
			kv.value = (char *)e.value;
			rc = referenced(&kv, 1, names, n, err);
		}
		free(reply);
		strlcpy(cursor, next, sizeof(cursor));
	} while (rc == API_OK && cursor[0] != '\0' && ++pages < 16);
	return rc;
}

/*
 * Before a run: for each secret its variables (the run's and the
 * sandbox's) name, the policy's
 * secret:read on the name (audited, refused with 403), the sealed value
 * from the store, both to the vmm for the MSG_VMM_RUN with this reqid.
 */
int
fb_run_secrets(struct front_backend *fb, const struct api_call *call,
    const char *sandbox, uint64_t reqid, const struct api_kv *env, size_t nenv,
    int context, struct api_error *err)
{
	char names[SECRET_RUN_MAX][SECRET_NAME_MAX + 1];
	struct api_call sc = *call; /* audited as secret:read */
	struct msg_policy_decision d;
	struct msg_vmm_run_secret *m;
	struct store_secret z;
	size_t n, i;
	void *rec;
	int rc;

	n = 0;
	if ((rc = referenced(env, nenv, names, &n, err)) != API_OK)
		return rc;
	if (context) {
		if (n > 0)
			return fb_fail(err, API_EBADREQ,
			    "Secrets are not available in a live context's "
			    "cells");
		return API_OK;
	}
	/*
	 * A new run takes the sandbox's variables too. Without the store
	 * (restarting) the run goes on with its own names: the vmm refuses
	 * it if the sandbox's variables name a secret it was not given, so
	 * nothing is given that was not decided, and runs that need no
	 * secret do not wait for the store.
	 */
	if (sandbox_refs(fb, sandbox, names, &n, err) != API_OK) {
		log_warnx("run in %s: the sandbox's variables not read: %s",
		    sandbox, err->message);
		memset(err, 0, sizeof(*err));
	}
	if (n == 0)
		return API_OK;
	/*
	 * Gathered first (decisions and store reads suspend this task),
	 * then sent together: between the first and the MSG_VMM_RUN that
	 * follows them on the link, nothing of another run can come, so
	 * the vmm keeps one run's secrets at a time.
	 */
	if ((m = calloc(n, sizeof(*m))) == NULL)
		return fb_fail(err, API_EINTERNAL, "Out of memory");
	for (i = 0; i < n; i++) {
		rc = fb_decide(fb, call->who, CAP_SECRET_READ, PROC_VMM,
		    names[i], reqid, 0, &d, err);
		if (rc != API_OK)
			break;
		sc.cap = CAP_SECRET_READ;
		if (d.grant.decision != GRANT_ALLOW) {
			fb_audit_decision(fb, &sc, names[i], &d);
			rc = d.reason == POLICY_R_TARGET
			    ? fb_fail(err, API_EFORBIDDEN,
			          "Not allowed to use secret %s", names[i])
			    : fb_refusal(&d, CAP_SECRET_READ, err);
			break;
		}
		if ((rc = fb_audit_decision_commit(
		         fb, &sc, names[i], &d, err)) != API_OK)
			break;
		if ((rc = secret_get(fb, names[i], &rec, &z, err)) != API_OK) {
			if (rc == API_ENOTFOUND)
				rc = fb_fail(err, API_EBADREQ,
				    "No secret named %s", names[i]);
			break;
		}
		m[i].grant = d.grant;
		strlcpy(m[i].name, names[i], sizeof(m[i].name));
		m[i].sealed_len = z.sealed_len;
		memcpy(m[i].sealed, z.sealed, z.sealed_len);
		free(rec);
	}
	for (i = 0; rc == API_OK && i < n; i++) {
		if (fb->ctx->fd[PROC_VMM] < 0 ||
		    msg_send(fb->ctx->fd[PROC_VMM], MSG_VMM_RUN_SECRET, 0,
		        reqid, &m[i], sizeof(m[i]), -1) != MSG_OK) {
			rc = fb_fail(
			    err, API_EUNAVAIL, "The vmm service is restarting");
			break;
		}
		/* Every injection, by name, never by value. */
		fb_audit_event(fb, call, "secret.inject", names[i], sandbox);
	}
	free(m);
	return rc;
}
