/*
 * The vmm's sandboxes: create, look up, list, expire and delete them,
 * their environment variables, and what `system` reports of one.
 */
#include "host/vmmproc/vmm_int.h"

static int env_valid(const char *, size_t, int);

struct sandbox *
vmm_sandbox_find(struct vmm_state *vs, const char *id, const char *owner)
{
	size_t i;

	for (i = 0; i < VMM_SANDBOXES_MAX; i++)
		if (vs->sbx[i].used && !vs->sbx[i].forking &&
		    strcmp(vs->sbx[i].id, id) == 0 &&
		    strcmp(vs->sbx[i].owner, owner) == 0)
			return &vs->sbx[i];
	return NULL;
}

/* A sandbox that is not there may only not be back yet: until the store
 * has been read (after a restart), the client should retry. */
uint32_t
vmm_not_found(const struct vmm_state *vs)
{
	return vs->restore != NULL ? SBX_E_RESTORING : SBX_E_NOTFOUND;
}

/* No process outlives its sandbox: the runs still going in it (and
 * every guest process they forked) are killed before its workspace
 * goes; each then ends as killed. */
void
vmm_sandbox_discard(struct vmm_state *vs, struct sandbox *s)
{
	size_t i;
	int wd;

	for (i = 0; i < VMM_JOBS_MAX; i++)
		if (vs->jobs[i].used && strcmp(vs->jobs[i].sbx, s->id) == 0) {
			vmm_kill_tree(vs->jobs[i].pid);
			vs->jobs[i].killed = 1;
		}

	if (s->ws_fd >= 0)
		close(s->ws_fd);
	if (s->has_count)
		close(s->count_fd);
	vmm_port_stop(s);
	if (s->has_netns) {
		close(s->netns_user);
		close(s->netns_net);
	}
	if ((wd = open("workspaces", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) !=
	    -1) {
		if (tree_remove(wd, s->id) == -1)
			log_warn("sandbox %s: removing its workspace", s->id);
		close(wd);
	}
	vmm_contexts_sandbox_gone(s->id);
	log_info("sandbox %s removed", s->id);
	memset(s, 0, sizeof(*s));
	s->ws_fd = -1;
}

int
vmm_sandbox_count_fd(struct sandbox *s)
{
	int fd;

	if (s->has_count)
		return s->count_fd;
	if ((fd = memfd_create("keep-ws-count", MFD_CLOEXEC)) == -1)
		return -1;
	if (ftruncate(fd, sizeof(uint64_t)) == -1) {
		close(fd);
		return -1;
	}
	s->has_count = 1;
	s->count_fd = fd;
	return fd;
}

void
vmm_sandbox_netns(struct proc_ctx *ctx, struct sandbox *s)
{
	if (s->has_netns || ctx->netns_fd < 0)
		return;
	if (vm_netns_make(ctx->netns_fd, &s->netns_user, &s->netns_net) == -1) {
		log_warnx("%s: sandbox %s: no network namespace of its own; "
		          "each run tries its own",
		    __func__, s->id);
		return;
	}
	s->has_netns = 1;
}

void
vmm_expire_sandboxes(struct vmm_state *vs)
{
	int64_t now = (int64_t)time(NULL);
	size_t i;

	for (i = 0; i < VMM_SANDBOXES_MAX; i++)
		if (vs->sbx[i].used && !vs->sbx[i].forking &&
		    vs->sbx[i].expires_at <= now)
			vmm_sandbox_discard(vs, &vs->sbx[i]);
}

/* ---- sandboxes -------------------------------------------------------- */

void
vmm_sandbox_info(struct msg_vmm_sandbox_info *r, const struct sandbox *s)
{
	strlcpy(r->id, s->id, sizeof(r->id));
	strlcpy(r->image, s->image, sizeof(r->image));
	r->created_at = s->created_at;
	r->expires_at = s->expires_at;
	r->paused = s->paused != 0;
}

/* How many sandboxes owner holds: its policy's `sandboxes` quota. */
static uint32_t
owned_sandboxes(const struct vmm_state *vs, const char *owner)
{
	uint32_t n = 0;
	size_t i;

	for (i = 0; i < VMM_SANDBOXES_MAX; i++)
		if (vs->sbx[i].used && strcmp(vs->sbx[i].owner, owner) == 0)
			n++;
	return n;
}

/*
 * E2B's home in a new (so empty) workspace: home/ and home/user/, 0755
 * whatever the vmm's umask, as a Debian machine has them.
 */
static int
make_home_user(int ws_fd)
{
	int fd, ufd, rc = -1;

	if (mkdirat(ws_fd, "home", 0755) == -1 ||
	    (fd = openat(ws_fd, "home",
	         O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) == -1)
		return -1;
	if (fchmod(fd, 0755) == 0 && mkdirat(fd, "user", 0755) == 0 &&
	    (ufd = openat(fd, "user",
	         O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) != -1) {
		rc = fchmod(ufd, 0755);
		close(ufd);
	}
	close(fd);
	return rc;
}

int
vmm_h_create(struct proc_ctx *ctx, const struct msg *m)
{
	struct vmm_state *vs = ctx->arg;
	struct msg_vmm_sandbox_new *q;
	struct msg_vmm_sandbox_info r;
	struct sandbox *s = NULL, *src = NULL;
	struct grant g;
	char path[SBX_ID_MAX + 16];
	size_t i;
	int rc = -1;

	if ((q = malloc(sizeof(*q))) == NULL)
		return -1;
	memcpy(q, m->data, sizeof(*q));
	memset(&r, 0, sizeof(r));
	if (memchr(q->id, '\0', sizeof(q->id)) == NULL ||
	    memchr(q->image, '\0', sizeof(q->image)) == NULL ||
	    memchr(q->from, '\0', sizeof(q->from)) == NULL ||
	    !vmm_safe_name(q->id, sizeof(q->id)) ||
	    q->env_len > sizeof(q->env) || !env_valid(q->env, q->env_len, 0) ||
	    (q->flags & ~SBX_NEW_FLAGS) != 0 || q->pad != 0 ||
	    (q->flags != 0 && q->from[0] != '\0'))
		goto out;
	rc = 0;
	vmm_expire_sandboxes(vs);
	if (vmm_check_grant(ctx, m, &q->grant, CAP_SANDBOX_WRITE, q->id, &g) !=
	    0)
		r.status = SBX_E_GRANT;
	else if (q->from[0] != '\0' &&
	    (src = vmm_sandbox_find(vs, q->from, g.principal)) == NULL)
		r.status = vmm_not_found(vs);
	else if (src != NULL && strcmp(src->image, q->image) != 0)
		r.status = SBX_E_IMAGE; /* a fork runs what its source runs */
	else if (vmm_image_get(ctx, vs, q->image) == NULL)
		r.status = SBX_E_IMAGE;
	else {
		for (i = 0; i < VMM_SANDBOXES_MAX; i++) {
			if (vs->sbx[i].used &&
			    strcmp(vs->sbx[i].id, q->id) == 0)
				break;
			if (!vs->sbx[i].used && s == NULL)
				s = &vs->sbx[i];
		}
		if (i < VMM_SANDBOXES_MAX)
			r.status = SBX_E_EXISTS;
		else if (s == NULL ||
		    (ctx->config != NULL && ctx->config->max_sandboxes != 0 &&
		        (size_t)(s - vs->sbx) >= ctx->config->max_sandboxes))
			r.status = SBX_E_FULL;
		else if (g.count_max != 0 &&
		    owned_sandboxes(vs, g.principal) >= g.count_max)
			r.status = SBX_E_QUOTA;
	}
	if (r.status == SBX_OK) {
		snprintf(path, sizeof(path), "workspaces/%s", q->id);
		memset(s, 0, sizeof(*s));
		if (mkdir(path, 0700) == -1 ||
		    (s->ws_fd = open(
		         path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1) {
			log_warn("%s: %s", __func__, path);
			rmdir(path);
			r.status = SBX_E_INTERNAL;
		} else {
			s->used = 1;
			strlcpy(s->id, q->id, sizeof(s->id));
			strlcpy(s->owner, g.principal, sizeof(s->owner));
			strlcpy(s->image, q->image, sizeof(s->image));
			memcpy(s->env, q->env, q->env_len);
			s->env_len = q->env_len;
			s->created_at = (int64_t)time(NULL);
			s->expires_at = s->created_at +
			    (int64_t)(q->ttl_s ? q->ttl_s : 3600);
			vmm_sandbox_info(&r, s);
			char esc[GRANT_PRINCIPAL_MAX * 4];

			log_info("sandbox %s (%s) created for %s", s->id,
			    s->image,
			    log_escape(
			        esc, sizeof(esc), s->owner, strlen(s->owner)));
			if ((q->flags & SBX_NEW_HOME_USER) != 0 &&
			    make_home_user(s->ws_fd) != 0) {
				log_warn("sandbox %s: home/user", s->id);
				vmm_sandbox_discard(vs, s);
				r.status = SBX_E_INTERNAL;
			}
			/* A fork is answered once its workspace is copied. */
			if (src != NULL &&
			    (r.status = vmm_fork_start(ctx, vs, m, src, s,
			         q->contexts_max)) == SBX_OK)
				goto out;
			if (src != NULL)
				vmm_sandbox_discard(vs, s);
		}
	}
	msg_reply(ctx, m, MSG_VMM_SANDBOX_INFO, &r, sizeof(r), -1);
out:
	free(q);
	return rc;
}

int
vmm_h_ref(struct proc_ctx *ctx, const struct msg *m)
{
	struct vmm_state *vs = ctx->arg;
	struct msg_vmm_sandbox_ref q;
	struct msg_vmm_sandbox_info r;
	struct sandbox *s;
	struct grant g;
	int del = m->hdr.type == MSG_VMM_SANDBOX_DELETE;
	int pause = m->hdr.type == MSG_VMM_SANDBOX_PAUSE;
	int resume = m->hdr.type == MSG_VMM_SANDBOX_RESUME;
	size_t i;

	memcpy(&q, m->data, sizeof(q));
	memset(&r, 0, sizeof(r));
	if (memchr(q.id, '\0', sizeof(q.id)) == NULL)
		return -1;
	vmm_expire_sandboxes(vs);
	/* Reading needs sandbox:read or :write (a token refresh asks with
	 * the latter); deleting needs :write. */
	if (vmm_check_grant(ctx, m, &q.grant,
	        del || pause || resume || q.grant.cap == CAP_SANDBOX_WRITE
	            ? CAP_SANDBOX_WRITE
	            : CAP_SANDBOX_READ,
	        q.id, &g) != 0)
		r.status = SBX_E_GRANT;
	else if ((s = vmm_sandbox_find(vs, q.id, g.principal)) == NULL)
		r.status = vmm_not_found(vs);
	else if (pause && s->paused)
		r.status = SBX_E_PAUSED;
	else {
		/* A pause ends the sandbox's commands (a process tree has no
		 * memory image) and has each idle context save its own, as
		 * its policy's pause time would (docs/contexts.md). */
		if (pause) {
			for (i = 0; i < VMM_JOBS_MAX; i++)
				if (vs->jobs[i].used &&
				    strcmp(vs->jobs[i].sbx, s->id) == 0) {
					vmm_kill_tree(vs->jobs[i].pid);
					vs->jobs[i].killed = 1;
				}
			vmm_contexts_fork_prepare(vs, s);
			/* Its servers ended with its commands. */
			vmm_port_stop(s);
			s->paused = 1;
			log_info("sandbox %s paused", s->id);
		} else if (resume && s->paused) {
			s->paused = 0;
			log_info("sandbox %s resumed", s->id);
		}
		vmm_sandbox_info(&r, s);
		if (del)
			vmm_sandbox_discard(vs, s);
	}
	msg_reply(ctx, m, MSG_VMM_SANDBOX_INFO, &r, sizeof(r), -1);
	return 0;
}

/* A sandbox's new end, ttl_s from now (E2B's setTimeout): its owner's,
 * with sandbox:write. A sandbox past its end is gone already (the
 * expiry above), so this never brings one back. */
int
vmm_h_ttl(struct proc_ctx *ctx, const struct msg *m)
{
	struct vmm_state *vs = ctx->arg;
	struct msg_vmm_sandbox_ttl q;
	struct msg_vmm_sandbox_info r;
	struct sandbox *s;
	struct grant g;

	memcpy(&q, m->data, sizeof(q));
	memset(&r, 0, sizeof(r));
	/* The front checked the range: another is a malformed message. */
	if (memchr(q.id, '\0', sizeof(q.id)) == NULL || q.ttl_s == 0 ||
	    q.ttl_s > SBX_TTL_MAX)
		return -1;
	vmm_expire_sandboxes(vs);
	if (vmm_check_grant(ctx, m, &q.grant, CAP_SANDBOX_WRITE, q.id, &g) != 0)
		r.status = SBX_E_GRANT;
	else if ((s = vmm_sandbox_find(vs, q.id, g.principal)) == NULL)
		r.status = vmm_not_found(vs);
	else {
		s->expires_at = (int64_t)time(NULL) + (int64_t)q.ttl_s;
		log_info("sandbox %s: ends in %u s", s->id, q.ttl_s);
		vmm_sandbox_info(&r, s);
	}
	msg_reply(ctx, m, MSG_VMM_SANDBOX_INFO, &r, sizeof(r), -1);
	return 0;
}

int
vmm_h_list(struct proc_ctx *ctx, const struct msg *m)
{
	struct vmm_state *vs = ctx->arg;
	struct msg_vmm_sandbox_list q;
	struct msg_vmm_sandbox_page *r;
	const struct sandbox *best;
	struct grant g;
	size_t i;

	memcpy(&q, m->data, sizeof(q));
	if (memchr(q.cursor, '\0', sizeof(q.cursor)) == NULL ||
	    (r = calloc(1, sizeof(*r))) == NULL)
		return -1;
	vmm_expire_sandboxes(vs);
	if (vmm_check_grant(ctx, m, &q.grant, CAP_SANDBOX_READ, "", &g) != 0)
		r->status = SBX_E_GRANT;
	else if (vs->restore != NULL)
		r->status = SBX_E_RESTORING; /* a partial list would mislead */
	if (q.limit == 0 || q.limit > SBX_PAGE_MAX)
		q.limit = SBX_PAGE_MAX;
	/* Ids in order: the cursor is the last id of the previous page. */
	while (r->status == SBX_OK && r->n <= q.limit) {
		best = NULL;
		for (i = 0; i < VMM_SANDBOXES_MAX; i++) {
			const struct sandbox *s = &vs->sbx[i];

			if (!s->used || s->forking ||
			    strcmp(s->owner, g.principal) != 0 ||
			    strcmp(s->id, q.cursor) <= 0)
				continue;
			if (best == NULL || strcmp(s->id, best->id) < 0)
				best = s;
		}
		if (best == NULL)
			break;
		if (r->n == q.limit) {
			strlcpy(
			    r->next, r->items[r->n - 1].id, sizeof(r->next));
			break;
		}
		vmm_sandbox_info(&r->items[r->n++], best);
		strlcpy(q.cursor, best->id, sizeof(q.cursor));
	}
	msg_reply(ctx, m, MSG_VMM_SANDBOX_PAGE, r, sizeof(*r), -1);
	free(r);
	return 0;
}

/* ---- environment ------------------------------------------------------ */

/* Whether blob (n bytes of "K=V\0" or, names only, "K\0") is well
 * formed: NUL-terminated strings, each with a non-empty name. */
static int
env_valid(const char *blob, size_t n, int names_only)
{
	size_t i = 0, len;

	if (n > 0 && blob[n - 1] != '\0')
		return 0;
	while (i < n) {
		len = strlen(blob + i);
		if (len == 0 || blob[i] == '=' ||
		    (!names_only && strchr(blob + i, '=') == NULL) ||
		    (names_only && strchr(blob + i, '=') != NULL))
			return 0;
		i += len + 1;
	}
	return 1;
}

/* Whether var ("K=V") is named name (a "K" or "K=V"). */
static int
env_same(const char *var, const char *name)
{
	size_t n = strcspn(name, "=");

	return strncmp(var, name, n) == 0 && var[n] == '=';
}

/* Copy the variables of from into to, skipping those drop names. */
static int
env_filter(const char *from, size_t flen, const char *drop, size_t dlen,
    char *to, size_t *tlen)
{
	size_t i, j, len;
	int gone;

	for (i = 0; i < flen; i += len + 1) {
		len = strlen(from + i);
		for (gone = 0, j = 0; j < dlen && !gone;
		     j += strlen(drop + j) + 1)
			gone = env_same(from + i, drop + j);
		if (gone)
			continue;
		if (*tlen + len + 1 > SBX_ENV_MAX)
			return -1;
		memcpy(to + *tlen, from + i, len + 1);
		*tlen += len + 1;
	}
	return 0;
}

int
vmm_h_env(struct proc_ctx *ctx, const struct msg *m)
{
	struct vmm_state *vs = ctx->arg;
	struct msg_vmm_env *q, *r;
	struct sandbox *s;
	struct grant g;
	size_t len = 0;

	if ((q = malloc(sizeof(*q))) == NULL)
		return -1;
	if ((r = calloc(1, sizeof(*r))) == NULL) {
		free(q);
		return -1;
	}
	memcpy(q, m->data, sizeof(*q));
	if (memchr(q->id, '\0', sizeof(q->id)) == NULL ||
	    q->env_len > sizeof(q->env) || q->op < ENV_GET ||
	    q->op > ENV_CLEAR ||
	    !env_valid(q->env, q->env_len, q->op == ENV_DELETE)) {
		free(q);
		free(r);
		return -1;
	}
	vmm_expire_sandboxes(vs);
	/* A write answers with the variables it leaves (the API's reply to
	 * PUT and PATCH), so a write grant also reads. */
	if (vmm_check_grant(ctx, m, &q->grant,
	        q->op == ENV_GET && q->grant.cap == CAP_SANDBOX_READ
	            ? CAP_SANDBOX_READ
	            : CAP_SANDBOX_WRITE,
	        q->id, &g) != 0)
		r->op = SBX_E_GRANT;
	else if ((s = vmm_sandbox_find(vs, q->id, g.principal)) == NULL)
		r->op = vmm_not_found(vs);
	else {
		switch (q->op) {
		case ENV_REPLACE:
			memcpy(r->env, q->env, q->env_len);
			len = q->env_len;
			break;
		case ENV_MERGE:
			/* Old values the request names give way to its own. */
			if (env_filter(s->env, s->env_len, q->env, q->env_len,
			        r->env, &len) != 0 ||
			    len + q->env_len > SBX_ENV_MAX)
				r->op = SBX_E_FULL;
			else {
				memcpy(r->env + len, q->env, q->env_len);
				len += q->env_len;
			}
			break;
		case ENV_DELETE:
			env_filter(s->env, s->env_len, q->env, q->env_len,
			    r->env, &len);
			break;
		case ENV_CLEAR:
			break;
		default: /* ENV_GET */
			memcpy(r->env, s->env, s->env_len);
			len = s->env_len;
		}
		if (r->op == SBX_OK && q->op != ENV_GET) {
			memcpy(s->env, r->env, len);
			s->env_len = (uint32_t)len;
		}
		r->env_len = r->op == SBX_OK ? (uint32_t)len : 0;
	}
	strlcpy(r->id, q->id, sizeof(r->id));
	msg_reply(ctx, m, MSG_VMM_ENV_REPLY, r, sizeof(*r), -1);
	free(q);
	free(r);
	return 0;
}

/* Bytes under dir (a workspace), bounded in depth and entries. */
static uint64_t
tree_bytes(int dir, int depth, size_t *budget)
{
	struct dirent *e;
	struct stat sb;
	uint64_t sum = 0;
	DIR *d;
	int fd;

	if (depth > 32 ||
	    (fd = openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return 0;
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return 0;
	}
	while ((e = readdir(d)) != NULL && *budget > 0) {
		(*budget)--;
		if (strcmp(e->d_name, ".") == 0 ||
		    strcmp(e->d_name, "..") == 0 ||
		    fstatat(dirfd(d), e->d_name, &sb, AT_SYMLINK_NOFOLLOW) ==
		        -1)
			continue;
		if (S_ISREG(sb.st_mode))
			sum += (uint64_t)sb.st_size;
		else if (S_ISDIR(sb.st_mode) &&
		    (fd = openat(dirfd(d), e->d_name,
		         O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) !=
		        -1) {
			sum += tree_bytes(fd, depth + 1, budget);
			close(fd);
		}
	}
	closedir(d);
	return sum;
}

int
vmm_h_system(struct proc_ctx *ctx, const struct msg *m)
{
	struct vmm_state *vs = ctx->arg;
	struct msg_vmm_sandbox_ref q;
	struct msg_vmm_system r;
	struct sandbox *s;
	struct grant g;
	size_t budget = 100000;

	memcpy(&q, m->data, sizeof(q));
	if (memchr(q.id, '\0', sizeof(q.id)) == NULL)
		return -1;
	memset(&r, 0, sizeof(r));
	if (vmm_check_grant(ctx, m, &q.grant, CAP_SANDBOX_READ, q.id, &g) != 0)
		r.status = SBX_E_GRANT;
	else if ((s = vmm_sandbox_find(vs, q.id, g.principal)) == NULL)
		r.status = vmm_not_found(vs);
	else {
		r.runs = s->runs;
		r.cpu_ms = s->run_us / 1000;
		r.memory_bytes = s->peak_memory;
		r.workspace_bytes = tree_bytes(s->ws_fd, 0, &budget);
	}
	msg_reply(ctx, m, MSG_VMM_SYSTEM_REPLY, &r, sizeof(r), -1);
	return 0;
}

/* Stop a running run of the caller's sandbox; it ends as RUN_KILLED. */
