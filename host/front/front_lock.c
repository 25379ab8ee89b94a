/*
 * Sandbox write locks, for agents whose policy says `lock writes`: such
 * an agent's writes to a sandbox carry `Keep-Lock: <lock_id>` naming the
 * lock it holds on that sandbox, or are refused with 423 LOCK_REQUIRED.
 * One lock per sandbox, held by one principal until it is released or
 * expires. Locks live in the front's memory: a restart of the front
 * releases them all (they are short, and a holder takes a new one).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "host/front/front_backend_int.h"
#include "host/vmm_msg.h"
#include "lib/log.h"

#define LOCKS_MAX 1024
#define LOCK_TTL_DEFAULT 60
#define LOCK_ID_LEN 22 /* 16 random bytes, base64url */

struct fb_lock {
	char sbx[SBX_ID_MAX]; /* "" : free */
	char holder[GRANT_PRINCIPAL_MAX];
	char id[LOCK_ID_LEN + 1];
	int64_t expires; /* unix seconds */
};

struct fb_locks {
	struct fb_lock l[LOCKS_MAX];
};

static struct fb_lock *
lock_find(struct front_backend *fb, const char *sbx)
{
	int64_t now = (int64_t)time(NULL);
	size_t i;

	if (fb->locks == NULL)
		return NULL;
	for (i = 0; i < LOCKS_MAX; i++) {
		struct fb_lock *l = &fb->locks->l[i];

		if (l->sbx[0] != '\0' && l->expires <= now)
			memset(l, 0, sizeof(*l));
		if (l->sbx[0] != '\0' && strcmp(l->sbx, sbx) == 0)
			return l;
	}
	return NULL;
}

static int
lock_matches(const struct fb_lock *l, const struct api_call *call)
{
	return l != NULL && call->lock != NULL &&
	    call->lock_len == strlen(l->id) &&
	    sodium_memcmp(call->lock, l->id, call->lock_len) == 0 &&
	    strcmp(l->holder, call->who->sub) == 0;
}

int
fb_lock_check(struct front_backend *fb, const struct api_call *call,
    const char *sbx, const struct msg_policy_decision *d, struct api_error *err)
{
	if ((d->flags & DECISION_LOCK_WRITES) == 0 || sbx == NULL ||
	    sbx[0] == '\0' || strcmp(call->route, "sandbox_lock") == 0 ||
	    strcmp(call->route, "sandbox_unlock") == 0)
		return API_OK;
	if (lock_matches(lock_find(fb, sbx), call))
		return API_OK;
	return fb_fail(err, API_ELOCKED,
	    "The policy requires a lock for writes: POST "
	    "/v1/sandboxes/%s/lock, then send its lock_id as Keep-Lock",
	    sbx);
}

static int
fb_sandbox_lock(void *arg, const struct api_call *call, const char *id,
    uint64_t ttl_s, char lock_id[API_ID_MAX + 1], int64_t *expires_at,
    struct api_error *err)
{
	struct front_backend *fb = arg;
	struct api_sandbox sb;
	struct fb_lock *l;
	uint8_t raw[16];
	size_t i;
	int rc;

	/* Only a sandbox the caller can see: the vmm checks the owner. */
	memset(&sb, 0, sizeof(sb));
	if ((rc = fb->ops.sandbox_get(arg, call, id, &sb, err)) != API_OK)
		return rc;
	fb_kv_free(sb.metadata, sb.nmetadata);
	if ((l = lock_find(fb, id)) != NULL && !lock_matches(l, call))
		return fb_fail(err, API_ECONFLICT,
		    "The sandbox is locked until %lld", (long long)l->expires);
	if (l == NULL) {
		if (fb->locks == NULL &&
		    (fb->locks = calloc(1, sizeof(*fb->locks))) == NULL)
			return fb_fail(err, API_EINTERNAL, "Out of memory");
		for (i = 0; i < LOCKS_MAX && l == NULL; i++)
			if (fb->locks->l[i].sbx[0] == '\0')
				l = &fb->locks->l[i];
		if (l == NULL)
			return fb_fail(err, API_ERATE, "Too many locks");
		strlcpy(l->sbx, id, sizeof(l->sbx));
		strlcpy(l->holder, call->who->sub, sizeof(l->holder));
		randombytes_buf(raw, sizeof(raw));
		sodium_bin2base64(l->id, sizeof(l->id), raw, sizeof(raw),
		    sodium_base64_VARIANT_URLSAFE_NO_PADDING);
	}
	/* Taking it again with its id extends it. */
	l->expires = (int64_t)time(NULL) +
	    (int64_t)(ttl_s != 0 ? ttl_s : LOCK_TTL_DEFAULT);
	strlcpy(lock_id, l->id, API_ID_MAX + 1);
	*expires_at = l->expires;
	fb_audit_event(fb, call, "sandbox.lock", id, "");
	return API_OK;
}

static int
fb_sandbox_unlock(void *arg, const struct api_call *call, const char *id,
    struct api_error *err)
{
	struct front_backend *fb = arg;
	struct api_sandbox sb;
	struct fb_lock *l;
	int rc;

	/*
	 * A sandbox the caller cannot see answers 404 before the lock is
	 * looked at, so that 409 tells no one else that it is locked.
	 */
	memset(&sb, 0, sizeof(sb));
	if ((rc = fb->ops.sandbox_get(arg, call, id, &sb, err)) != API_OK)
		return rc;
	fb_kv_free(sb.metadata, sb.nmetadata);
	if ((l = lock_find(fb, id)) == NULL)
		return fb_fail(err, API_ENOTFOUND, "The sandbox is not locked");
	if (!lock_matches(l, call))
		return fb_fail(err, API_ECONFLICT,
		    "Keep-Lock does not name this sandbox's lock");
	memset(l, 0, sizeof(*l));
	fb_audit_event(fb, call, "sandbox.unlock", id, "");
	return API_OK;
}

void
fb_lock_ops(struct api_backend *ops)
{
	ops->sandbox_lock = fb_sandbox_lock;
	ops->sandbox_unlock = fb_sandbox_unlock;
}

void
fb_locks_free(struct front_backend *fb)
{
	free(fb->locks);
	fb->locks = NULL;
}
