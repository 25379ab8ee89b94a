/*
 * A (re)started vmm reads the sandboxes back from the store and adopts
 * each whose workspace is still on disk; the rest are swept.
 */
#include "host/vmmproc/vmm_int.h"

/* ---- restore from the store ------------------------------------------- */

/*
 * One request at a time: a page of sandbox records, then each record's
 * variables, then the next page. A request id carries the epoch (a new
 * store link starts over) so a late reply to an abandoned pass is dropped.
 */
#define RESTORE_PAGE 8 /* records up to 4 KiB (the front checks) */
#define RESTORE_TAG (UINT64_C(0x5245) << 48)

struct restore {
	struct sandbox rec[RESTORE_PAGE]; /* adopted one by one */
	size_t n, i;
	char cursor[STORE_CURSOR_MAX]; /* "" : the first page */
	int last_page;
	char env_cursor[STORE_CURSOR_MAX]; /* rec[i]'s next page, or "" */
	uint64_t reqid;
};

static void restore_next(struct proc_ctx *, struct vmm_state *);

static void
restore_send(struct proc_ctx *ctx, struct vmm_state *vs, unsigned db,
    const char *k1, const char *k2, unsigned limit)
{
	void *q;
	size_t qlen;

	vs->restore->reqid = RESTORE_TAG |
	    (uint64_t)(vs->restore_epoch & 0xffff) << 32 |
	    (uint32_t)(vs->restore->reqid + 1);
	if (ctx->fd[PROC_STORE] < 0 ||
	    store_wire_key_encode(MSG_STORE_LIST, db, k1, k2, limit, NULL, &q,
	        &qlen) != STORE_OK) {
		log_warnx("%s: cannot ask the store", __func__);
		free(vs->restore);
		vs->restore = NULL;
		return;
	}
	if (msg_send(ctx->fd[PROC_STORE], MSG_STORE_LIST, 0, vs->restore->reqid,
	        q, qlen, -1) != MSG_OK) {
		log_warnx("%s: the store did not get it", __func__);
		free(vs->restore);
		vs->restore = NULL;
	}
	free(q);
}

/* Remove the workspaces of sandboxes that were not adopted. */
static void
restore_sweep(struct vmm_state *vs)
{
	int wd = open("workspaces", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = wd >= 0 ? fdopendir(wd) : NULL;
	struct dirent *e;
	size_t i;

	while (d != NULL && (e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		for (i = 0; i < VMM_SANDBOXES_MAX; i++)
			if (vs->sbx[i].used &&
			    strcmp(vs->sbx[i].id, e->d_name) == 0)
				break;
		if (i == VMM_SANDBOXES_MAX) {
			log_info(
			    "workspace %s: no sandbox, removed", e->d_name);
			if (tree_remove(dirfd(d), e->d_name) == -1)
				log_warn(
				    "workspace %s: removing it", e->d_name);
		}
	}
	if (d != NULL)
		closedir(d);
	else if (wd >= 0)
		close(wd);
}

static void
restore_adopt(struct vmm_state *vs, struct sandbox *r)
{
	char path[SBX_ID_MAX + 16];
	size_t i, slot = VMM_SANDBOXES_MAX;

	for (i = 0; i < VMM_SANDBOXES_MAX; i++) {
		if (vs->sbx[i].used && strcmp(vs->sbx[i].id, r->id) == 0)
			return; /* still live: this process made it */
		if (!vs->sbx[i].used && slot == VMM_SANDBOXES_MAX)
			slot = i;
	}
	if (slot == VMM_SANDBOXES_MAX) {
		log_warnx("sandbox %s: no room to restore it", r->id);
		return;
	}
	snprintf(path, sizeof(path), "workspaces/%s", r->id);
	if ((r->ws_fd = open(path,
	         O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) == -1) {
		log_info("sandbox %s: workspace gone, not restored", r->id);
		return;
	}
	r->used = 1;
	vs->sbx[slot] = *r;
	log_info("sandbox %s (%s) restored", r->id, r->image);
}

/* A page of sandbox records: keep the live ones for their variables. */
static void
restore_page(struct vmm_state *vs, const void *msg, size_t len,
    const struct store_wire_reply *hdr, const char *next)
{
	struct restore *rs = vs->restore;
	int64_t now = (int64_t)time(NULL);
	uint32_t i;

	rs->n = rs->i = 0;
	for (i = 0; i < hdr->count && rs->n < RESTORE_PAGE; i++) {
		struct store_sandbox ss;
		struct sandbox *r = &rs->rec[rs->n];
		const void *rec;
		size_t reclen;

		if (store_wire_reply_record(msg, len, i, &rec, &reclen) !=
		        STORE_OK ||
		    store_sandbox_decode(rec, reclen, &ss) != STORE_OK)
			continue;
		if (ss.expires_ms / 1000 <= now ||
		    !vmm_safe_name(ss.id, SBX_ID_MAX))
			continue;
		memset(r, 0, sizeof(*r));
		if (strlcpy(r->id, ss.id, sizeof(r->id)) >= sizeof(r->id) ||
		    strlcpy(r->owner, ss.owner, sizeof(r->owner)) >=
		        sizeof(r->owner) ||
		    strlcpy(r->image, ss.image, sizeof(r->image)) >=
		        sizeof(r->image))
			continue;
		r->created_at = ss.created_ms / 1000;
		r->expires_at = ss.expires_ms / 1000;
		r->ws_fd = -1;
		rs->n++;
	}
	strlcpy(rs->cursor, next, sizeof(rs->cursor));
	rs->last_page = next[0] == '\0';
}

/* The variables of rs->rec[rs->i]. */
static void
restore_env(struct vmm_state *vs, const void *msg, size_t len,
    const struct store_wire_reply *hdr, const char *next)
{
	struct sandbox *r = &vs->restore->rec[vs->restore->i];
	uint32_t i;
	int n;

	for (i = 0; i < hdr->count; i++) {
		struct store_env e;
		const void *rec;
		size_t reclen;

		if (store_wire_reply_record(msg, len, i, &rec, &reclen) !=
		        STORE_OK ||
		    store_env_decode(rec, reclen, &e) != STORE_OK ||
		    e.key[0] == '\0' || strchr(e.key, '=') != NULL)
			continue;
		n = snprintf(r->env + r->env_len, sizeof(r->env) - r->env_len,
		    "%s=%s", e.key, e.value);
		if (n < 0 || (size_t)n + 1 > sizeof(r->env) - r->env_len)
			break;
		r->env_len += (uint32_t)n + 1;
	}
	strlcpy(vs->restore->env_cursor, i == hdr->count ? next : "",
	    sizeof(vs->restore->env_cursor));
	if (vs->restore->env_cursor[0] != '\0')
		return;
	restore_adopt(vs, r);
	vs->restore->i++;
}

static void
restore_next(struct proc_ctx *ctx, struct vmm_state *vs)
{
	struct restore *rs = vs->restore;

	if (rs->i < rs->n) {
		restore_send(ctx, vs, STORE_DB_ENV, rs->rec[rs->i].id,
		    rs->env_cursor[0] != '\0' ? rs->env_cursor : NULL,
		    STORE_WIRE_MAX_LIST);
		return;
	}
	if (!rs->last_page) {
		restore_send(ctx, vs, STORE_DB_SANDBOXES, NULL,
		    rs->cursor[0] != '\0' ? rs->cursor : NULL, RESTORE_PAGE);
		return;
	}
	restore_sweep(vs);
	free(vs->restore);
	vs->restore = NULL;
	vmm_contexts_adopt(vs); /* their contexts, paused */
	log_info("%s: sandboxes restored from the store", __func__);
}

int
vmm_h_store_reply(struct proc_ctx *ctx, const struct msg *m)
{
	struct vmm_state *vs = ctx->arg;
	struct store_wire_reply hdr;
	char next[STORE_CURSOR_MAX];
	struct restore *rs = vs->restore;

	if (rs == NULL || m->hdr.reqid != rs->reqid)
		return 0; /* an abandoned pass */
	if (store_wire_reply_decode(m->data, m->hdr.len, &hdr, next) !=
	        STORE_OK ||
	    hdr.status != STORE_OK) {
		log_warnx("%s: the store cannot list: %s", __func__,
		    store_strerror((int)hdr.status));
		free(vs->restore);
		vs->restore = NULL;
		return 0;
	}
	if (rs->i >= rs->n)
		restore_page(vs, m->data, m->hdr.len, &hdr, next);
	else
		restore_env(vs, m->data, m->hdr.len, &hdr, next);
	restore_next(ctx, vs);
	return 0;
}

/* Start reading the sandboxes back (again, on a new store link). */
void
vmm_restore_start(struct proc_ctx *ctx, struct vmm_state *vs)
{
	free(vs->restore);
	if ((vs->restore = calloc(1, sizeof(*vs->restore))) == NULL) {
		log_warnx("%s: out of memory", __func__);
		return;
	}
	vs->restore_epoch++;
	restore_send(ctx, vs, STORE_DB_SANDBOXES, NULL, NULL, RESTORE_PAGE);
}
