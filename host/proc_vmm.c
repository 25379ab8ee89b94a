/*
 * The vmm: holds /dev/kvm (passed by the parent, never opened here), the
 * images (images/NAME.img, verified against the image keys from
 * keepd.yaml before use) and the sandboxes with their workspaces
 * (workspaces/ID). Each run is a `keepd: vm` process forked from here,
 * with its own seccomp allowlist, that boots the guest (host/vmm/) and
 * exits; this process waits on it without blocking its links.
 *
 * The live sandboxes are in this process's memory; their records are in
 * the store (the front writes them, with grants, before a client hears
 * of them). When this process starts it reads them back and adopts each
 * whose workspace is still on disk; workspaces nobody adopted are then
 * removed.
 */
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "host/grant.h"
#include "host/msg.h"
#include "host/proc.h"
#include "host/proc_egress.h"
#include "host/seccomp_filters.h"
#include "host/vmm_egress.h"
#include "host/store/store.h"
#include "host/store/store_wire.h"
#include "host/vmm/vmm.h"
#include "host/vmm/workspace.h"
#include "host/vmm_msg.h"
#include "image/image.h"
#include "lib/caps.h"
#include "lib/log.h"
#include "token/paserk.h"

#define VMM_SANDBOXES_MAX 256
#define VMM_JOBS_MAX 16
#define VMM_IMAGES_MAX 16
#define VMM_GRACE_MS 5000 /* past a run's own timeout, then SIGKILL */

struct sandbox {
	int used;
	char id[SBX_ID_MAX];
	char owner[GRANT_PRINCIPAL_MAX];
	char image[RUN_NAME_MAX];
	int64_t created_at, expires_at;
	char env[SBX_ENV_MAX];
	uint32_t env_len;
	int ws_fd;
	struct vmm_proc procs[SBX_PROCS_MAX]; /* a ring, procs_next next */
	uint32_t procs_next;
	uint64_t runs, run_us, peak_memory; /* usage, this vmm's life */
};

struct loaded_image {
	char name[RUN_NAME_MAX];
	struct image *img;
};

/* A run in flight: one `keepd: vm` process. */
struct job {
	int used;
	pid_t pid;
	int pidfd;
	uint64_t reqid;
	enum proc_id from;
	int outfd, errfd;
	struct vmm_result *res; /* shared with the child */
	uint64_t deadline; /* monotonic ms: kill after this */
	struct vmm_egress_run egress; /* the guest's fetch relay */
	/* Its entry in the sandbox's process table. */
	uint64_t run_pid;
	int background, killed;
	char sbx[SBX_ID_MAX];
	char owner[GRANT_PRINCIPAL_MAX];
	char cmd[RUN_NAME_MAX];
};

struct vmm_state {
	struct sandbox sbx[VMM_SANDBOXES_MAX];
	struct loaded_image images[VMM_IMAGES_MAX];
	struct job jobs[VMM_JOBS_MAX];
	const struct msg_pubkeys *keys_for; /* image keys last decoded */
	uint8_t keys[MSG_PUBKEYS_MAX][32];
	size_t nkeys;
	/* MSG_VMM_RUN_CAPS for the MSG_VMM_RUN that follows it. */
	uint64_t caps_reqid;
	struct msg_vmm_run_caps caps;
	struct restore *restore; /* reading the store back, NULL when done */
	uint32_t restore_epoch;
	uint64_t next_pid; /* run numbers, per vmm life */
};

static int env_valid(const char *, size_t, int);
static int exists(const char *);

static uint64_t
mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* A sandbox id or image name: [A-Za-z0-9_-], 1..63, so it is also a safe
 * file name. */
static int
safe_name(const char *s, size_t max)
{
	size_t i;

	for (i = 0; i < max && s[i] != '\0'; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') ||
		        (s[i] >= 'A' && s[i] <= 'Z') ||
		        (s[i] >= '0' && s[i] <= '9') || s[i] == '_' ||
		        s[i] == '-'))
			return 0;
	return i > 0 && i < max && i < 64;
}

/* The grant in a request: authentic, for this request, this cap, this
 * target. The principal in it is the owner. */
static int
check_grant(struct proc_ctx *ctx, const struct msg *m, const struct grant *g,
    uint32_t cap, const char *target, struct grant *out)
{
	int rc;

	rc = proc_grant_verify(ctx, m, g, sizeof(*g), out);
	if (rc == GRANT_OK)
		rc = grant_check(out, cap, target, strlen(target));
	if (rc != GRANT_OK) {
		log_warnx("%s: %s from %s refused: %s", __func__,
		    msg_type_name(m->hdr.type), proc_name(m->from),
		    grant_strerror(rc));
		return -1;
	}
	return 0;
}

static struct sandbox *
sandbox_find(struct vmm_state *vs, const char *id, const char *owner)
{
	size_t i;

	for (i = 0; i < VMM_SANDBOXES_MAX; i++)
		if (vs->sbx[i].used && strcmp(vs->sbx[i].id, id) == 0 &&
		    strcmp(vs->sbx[i].owner, owner) == 0)
			return &vs->sbx[i];
	return NULL;
}

/* A sandbox that is not there may only not be back yet: until the store
 * has been read (after a restart), the client should retry. */
static uint32_t
not_found(const struct vmm_state *vs)
{
	return vs->restore != NULL ? SBX_E_RESTORING : SBX_E_NOTFOUND;
}

/* rm -r below dirfd, then the directory itself. Bounded depth. */
static void
remove_tree(int dir, const char *name, int depth)
{
	DIR *d;
	struct dirent *e;
	int fd;

	if (depth > 32)
		return;
	if (unlinkat(dir, name, 0) == 0 || errno == ENOENT)
		return;
	if ((fd = openat(dir, name,
	         O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) == -1)
		return;
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return;
	}
	while ((e = readdir(d)) != NULL)
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			remove_tree(dirfd(d), e->d_name, depth + 1);
	closedir(d);
	unlinkat(dir, name, AT_REMOVEDIR);
}

static void
sandbox_remove(struct sandbox *s)
{
	int wd;

	if (s->ws_fd >= 0)
		close(s->ws_fd);
	if ((wd = open("workspaces", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) !=
	    -1) {
		remove_tree(wd, s->id, 0);
		close(wd);
	}
	log_info("sandbox %s removed", s->id);
	memset(s, 0, sizeof(*s));
	s->ws_fd = -1;
}

static void
expire_sandboxes(struct vmm_state *vs)
{
	int64_t now = (int64_t)time(NULL);
	size_t i;

	for (i = 0; i < VMM_SANDBOXES_MAX; i++)
		if (vs->sbx[i].used && vs->sbx[i].expires_at <= now)
			sandbox_remove(&vs->sbx[i]);
}

/* ---- images ----------------------------------------------------------- */

static void
decode_keys(struct proc_ctx *ctx, struct vmm_state *vs)
{
	uint32_t i;

	if (vs->keys_for == ctx->image_keys)
		return;
	vs->keys_for = ctx->image_keys;
	vs->nkeys = 0;
	for (i = 0; ctx->image_keys != NULL && i < ctx->image_keys->n; i++)
		if (paserk_public_decode(vs->keys[vs->nkeys],
		        ctx->image_keys->keys[i],
		        strlen(ctx->image_keys->keys[i])) == 0)
			vs->nkeys++;
}

/* The image named name, opened and verified once. */
static struct image *
image_get(struct proc_ctx *ctx, struct vmm_state *vs, const char *name)
{
	char path[RUN_NAME_MAX + 16], err[256];
	struct image *img;
	size_t i, slot = VMM_IMAGES_MAX;

	if (!safe_name(name, RUN_NAME_MAX))
		return NULL;
	decode_keys(ctx, vs);
	for (i = 0; i < VMM_IMAGES_MAX; i++) {
		if (vs->images[i].img != NULL &&
		    strcmp(vs->images[i].name, name) == 0)
			return vs->images[i].img;
		if (vs->images[i].img == NULL && slot == VMM_IMAGES_MAX)
			slot = i;
	}
	snprintf(path, sizeof(path), "images/%s.img", name);
	if (!exists(path))
		snprintf(path, sizeof(path), "uploads/%s.img", name);
	if (image_open_trusted(path, (const uint8_t(*)[32])vs->keys, vs->nkeys,
	        &img, err, sizeof(err)) != 0) {
		log_warnx("image %s refused: %s", name, err);
		return NULL;
	}
	if (slot == VMM_IMAGES_MAX) {
		image_close(img);
		return NULL;
	}
	strlcpy(vs->images[slot].name, name, sizeof(vs->images[slot].name));
	vs->images[slot].img = img;
	log_info("image %s %s verified", image_name(img), image_version(img));
	return img;
}

/* ---- sandboxes -------------------------------------------------------- */

static void
fill_info(struct msg_vmm_sandbox_info *r, const struct sandbox *s)
{
	strlcpy(r->id, s->id, sizeof(r->id));
	strlcpy(r->image, s->image, sizeof(r->image));
	r->created_at = s->created_at;
	r->expires_at = s->expires_at;
}

static int
vmm_h_create(struct proc_ctx *ctx, const struct msg *m)
{
	struct vmm_state *vs = ctx->arg;
	struct msg_vmm_sandbox_new *q;
	struct msg_vmm_sandbox_info r;
	struct sandbox *s = NULL;
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
	    !safe_name(q->id, sizeof(q->id)) || q->env_len > sizeof(q->env) ||
	    !env_valid(q->env, q->env_len, 0))
		goto out;
	rc = 0;
	expire_sandboxes(vs);
	if (check_grant(ctx, m, &q->grant, CAP_SANDBOX_WRITE, q->id, &g) != 0)
		r.status = SBX_E_GRANT;
	else if (image_get(ctx, vs, q->image) == NULL)
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
			fill_info(&r, s);
			char esc[GRANT_PRINCIPAL_MAX * 4];

			log_info("sandbox %s (%s) created for %s", s->id,
			    s->image,
			    log_escape(
			        esc, sizeof(esc), s->owner, strlen(s->owner)));
		}
	}
	msg_reply(ctx, m, MSG_VMM_SANDBOX_INFO, &r, sizeof(r), -1);
out:
	free(q);
	return rc;
}

static int
vmm_h_ref(struct proc_ctx *ctx, const struct msg *m)
{
	struct vmm_state *vs = ctx->arg;
	struct msg_vmm_sandbox_ref q;
	struct msg_vmm_sandbox_info r;
	struct sandbox *s;
	struct grant g;
	int del = m->hdr.type == MSG_VMM_SANDBOX_DELETE;

	memcpy(&q, m->data, sizeof(q));
	memset(&r, 0, sizeof(r));
	if (memchr(q.id, '\0', sizeof(q.id)) == NULL)
		return -1;
	expire_sandboxes(vs);
	/* Reading needs sandbox:read or :write (a token refresh asks with
	 * the latter); deleting needs :write. */
	if (check_grant(ctx, m, &q.grant,
	        del || q.grant.cap == CAP_SANDBOX_WRITE ? CAP_SANDBOX_WRITE
	                                                : CAP_SANDBOX_READ,
	        q.id, &g) != 0)
		r.status = SBX_E_GRANT;
	else if ((s = sandbox_find(vs, q.id, g.principal)) == NULL)
		r.status = not_found(vs);
	else {
		fill_info(&r, s);
		if (del)
			sandbox_remove(s);
	}
	msg_reply(ctx, m, MSG_VMM_SANDBOX_INFO, &r, sizeof(r), -1);
	return 0;
}

static int
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
	expire_sandboxes(vs);
	if (check_grant(ctx, m, &q.grant, CAP_SANDBOX_READ, "", &g) != 0)
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

			if (!s->used || strcmp(s->owner, g.principal) != 0 ||
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
		fill_info(&r->items[r->n++], best);
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

static int
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
	expire_sandboxes(vs);
	/* A write answers with the variables it leaves (the API's reply to
	 * PUT and PATCH), so a write grant also reads. */
	if (check_grant(ctx, m, &q->grant,
	        q->op == ENV_GET && q->grant.cap == CAP_SANDBOX_READ
	            ? CAP_SANDBOX_READ
	            : CAP_SANDBOX_WRITE,
	        q->id, &g) != 0)
		r->op = SBX_E_GRANT;
	else if ((s = sandbox_find(vs, q->id, g.principal)) == NULL)
		r->op = not_found(vs);
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

/* ---- files ------------------------------------------------------------ */

/* len bytes of from, read from its start (a memfd's offset is shared
 * with whoever wrote it), to to. */
static int
copy_fd(int from, int to, uint64_t len)
{
	char buf[65536];
	off_t off = 0;
	ssize_t n;

	while (len > 0) {
		n = pread(
		    from, buf, len < sizeof(buf) ? len : sizeof(buf), off);
		if (n <= 0) {
			if (n == -1 && errno == EINTR)
				continue;
			return n == 0 ? -EIO : -errno;
		}
		if (write(to, buf, (size_t)n) != n)
			return -errno;
		off += n;
		len -= (uint64_t)n;
	}
	return 0;
}

static int
file_list(int dir, int out, uint64_t *count)
{
	struct vmm_dirent de;
	struct dirent *e;
	struct stat st;
	DIR *d;
	int fd;

	/* fdopendir wants a real descriptor, not an O_PATH one. */
	if ((fd = openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return -errno;
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return -errno;
	}
	*count = 0;
	while ((e = readdir(d)) != NULL && *count < FILE_LIST_MAX) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) ==
		    -1)
			continue;
		memset(&de, 0, sizeof(de));
		strlcpy(de.name, e->d_name, sizeof(de.name));
		strlcpy(de.type,
		    S_ISREG(st.st_mode)       ? "file"
		        : S_ISDIR(st.st_mode) ? "dir"
		        : S_ISLNK(st.st_mode) ? "link"
		                              : "other",
		    sizeof(de.type));
		de.size = (uint64_t)st.st_size;
		de.mtime = st.st_mtim.tv_sec;
		if (write(out, &de, sizeof(de)) != (ssize_t)sizeof(de)) {
			closedir(d);
			return -EIO;
		}
		(*count)++;
	}
	closedir(d);
	return 0;
}

static int
vmm_h_file(struct proc_ctx *ctx, const struct msg *m)
{
	struct vmm_state *vs = ctx->arg;
	struct msg_vmm_file q;
	struct msg_vmm_file_reply r;
	struct sandbox *s;
	struct stat st;
	struct grant g;
	char path[WS_PATH_MAX], name[WS_PATH_MAX];
	int out = -1, fd = -1, dfd = -1, rc = 0, wr;

	memcpy(&q, m->data, sizeof(q));
	wr = q.op == FILE_WRITE || q.op == FILE_REMOVE || q.op == FILE_MKDIR;
	if (memchr(q.path, '\0', sizeof(q.path)) == NULL ||
	    memchr(q.id, '\0', sizeof(q.id)) == NULL || q.op < FILE_READ ||
	    q.op > FILE_MKDIR) {
		close(m->fd);
		return -1;
	}
	memset(&r, 0, sizeof(r));
	expire_sandboxes(vs);
	if (check_grant(ctx, m, &q.grant,
	        wr ? CAP_ARTIFACT_WRITE : CAP_ARTIFACT_READ, q.id, &g) != 0)
		r.status = SBX_E_GRANT;
	else if ((s = sandbox_find(vs, q.id, g.principal)) == NULL)
		r.status = not_found(vs);
	else if ((rc = ws_normalize("/", q.path, path, sizeof(path))) != 0 ||
	    (out = memfd_create("keep-file", MFD_CLOEXEC)) == -1)
		rc = rc != 0 ? rc : -errno;
	else {
		switch (q.op) {
		case FILE_READ:
			if ((fd = ws_openat(s->ws_fd, path, O_RDONLY, 0)) < 0)
				rc = fd;
			else if (fstat(fd, &st) == -1)
				rc = -errno;
			else if (!S_ISREG(st.st_mode))
				rc = -EISDIR;
			else if ((uint64_t)st.st_size > FILE_READ_MAX)
				rc = -EFBIG;
			else if ((rc = copy_fd(
			              fd, out, (uint64_t)st.st_size)) == 0)
				r.len = (uint64_t)st.st_size;
			break;
		case FILE_WRITE:
			if (fstat(m->fd, &st) == -1 ||
			    (uint64_t)st.st_size != q.len)
				rc = -EINVAL;
			else if (ctx->config != NULL &&
			    ctx->config->workspace_max != 0 &&
			    q.len > ctx->config->workspace_max)
				rc = -EDQUOT;
			else if ((fd = ws_openat(s->ws_fd, path,
			              O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW,
			              0644)) < 0)
				rc = fd;
			else
				rc = copy_fd(m->fd, fd, q.len);
			break;
		case FILE_LIST:
			if ((fd = ws_openat(
			         s->ws_fd, path, O_PATH | O_DIRECTORY, 0)) < 0)
				rc = fd;
			else
				rc = file_list(fd, out, &r.len);
			break;
		case FILE_EXISTS:
			fd = ws_openat(s->ws_fd, path, O_PATH | O_NOFOLLOW, 0);
			r.exists = fd >= 0;
			if (fd < 0 && fd != -ENOENT && fd != -ENOTDIR)
				rc = fd;
			break;
		case FILE_REMOVE:
		case FILE_MKDIR:
			if (strcmp(path, "/") == 0)
				rc = -EBUSY;
			else if ((dfd = ws_parentat(
			              s->ws_fd, path, name, sizeof(name))) < 0)
				rc = dfd;
			else if (q.op == FILE_MKDIR)
				rc =
				    mkdirat(dfd, name, 0755) == -1 ? -errno : 0;
			else if (unlinkat(dfd, name, 0) == -1)
				rc = errno == EISDIR &&
				        unlinkat(dfd, name, AT_REMOVEDIR) == 0
				    ? 0
				    : -errno;
			break;
		}
	}
	r.error = rc < 0 ? -rc : 0;
	if (out == -1)
		out = memfd_create("keep-file", MFD_CLOEXEC);
	if (out == -1 ||
	    msg_reply(ctx, m, MSG_VMM_FILE_REPLY, &r, sizeof(r), out) != MSG_OK)
		log_warnx("%s: reply lost", __func__);
	if (out != -1)
		close(out);
	if (fd >= 0)
		close(fd);
	if (dfd >= 0)
		close(dfd);
	close(m->fd);
	return 0;
}

/* ---- runs ------------------------------------------------------------- */

static int
get_u32(const uint8_t **p, const uint8_t *end, uint32_t *v)
{
	if (end - *p < 4)
		return -1;
	*v = (uint32_t)(*p)[0] | (uint32_t)(*p)[1] << 8 |
	    (uint32_t)(*p)[2] << 16 | (uint32_t)(*p)[3] << 24;
	*p += 4;
	return 0;
}

/* Split the request memfd's strings into vec (NUL-terminated copies in
 * buf, which the caller frees). */
static int
parse_strings(const uint8_t **p, const uint8_t *end, uint32_t n,
    const char **vec, char *buf, size_t *used, size_t cap)
{
	uint32_t i, len;

	for (i = 0; i < n; i++) {
		if (get_u32(p, end, &len) != 0 || (size_t)(end - *p) < len ||
		    memchr(*p, '\0', len) != NULL || *used + len + 1 > cap)
			return -1;
		memcpy(buf + *used, *p, len);
		buf[*used + len] = '\0';
		vec[i] = buf + *used;
		*used += len + 1;
		*p += len;
	}
	return 0;
}

static void
run_reply(struct proc_ctx *ctx, enum proc_id to, uint64_t reqid,
    uint32_t status, int exit_code, const char *reason, int outfd,
    uint64_t out_len, uint64_t err_len, const struct vmm_result *res)
{
	struct msg_vmm_run_done d;
	int fd = outfd;

	memset(&d, 0, sizeof(d));
	d.status = status;
	d.exit_code = exit_code;
	d.out_len = out_len;
	d.err_len = err_len;
	if (res != NULL) {
		d.duration_ms = (res->boot_us + res->run_us) / 1000;
		d.boot_us = res->boot_us;
	}
	strlcpy(d.reason, reason, sizeof(d.reason));
	if (fd < 0)
		fd = memfd_create("keep-out", MFD_CLOEXEC);
	if (fd < 0 || ctx->fd[to] < 0 ||
	    msg_send(ctx->fd[to], MSG_VMM_RUN_DONE, MSG_F_REPLY, reqid, &d,
	        sizeof(d), fd) != MSG_OK)
		log_warnx("%s: reply for run %llu lost", __func__,
		    (unsigned long long)reqid);
	if (fd >= 0 && fd != outfd)
		close(fd);
}

/* A background run is answered as soon as it runs. */
static void
run_started(struct proc_ctx *ctx, enum proc_id to, uint64_t reqid, uint64_t pid)
{
	struct msg_vmm_run_done d;
	int fd;

	memset(&d, 0, sizeof(d));
	d.status = RUN_STARTED;
	d.pid = pid;
	if ((fd = memfd_create("keep-out", MFD_CLOEXEC)) < 0 ||
	    ctx->fd[to] < 0 ||
	    msg_send(ctx->fd[to], MSG_VMM_RUN_DONE, MSG_F_REPLY, reqid, &d,
	        sizeof(d), fd) != MSG_OK)
		log_warnx("%s: reply for run %llu lost", __func__,
		    (unsigned long long)reqid);
	if (fd >= 0)
		close(fd);
}

static void
out_sink(void *arg, int fd, const void *buf, size_t len)
{
	const int *fds = arg;
	const char *p = buf;
	ssize_t n;

	while (len > 0) {
		n = write(fds[fd == 2], p, len);
		if (n <= 0) {
			if (n == -1 && errno == EINTR)
				continue;
			return;
		}
		p += n;
		len -= (size_t)n;
	}
}

/* In the `keepd: vm` process: shed what belongs to other runs and
 * sandboxes, confine, boot, report, exit. */
static void __attribute__((noreturn))
vm_process(struct proc_ctx *ctx, struct vmm_state *vs, struct vmm_config *cfg,
    int outfds[2], struct vmm_result *res, const char *id)
{
	char err[160];
	size_t i;
	int rc;

	setproctitle("vm %s", id);
	for (i = 0; i < PROC_COUNT; i++)
		if (ctx->fd[i] >= 0)
			close(ctx->fd[i]);
	for (i = 0; i < VMM_SANDBOXES_MAX; i++)
		if (vs->sbx[i].used && vs->sbx[i].ws_fd != cfg->workspace_fd)
			close(vs->sbx[i].ws_fd);
	for (i = 0; i < VMM_JOBS_MAX; i++)
		if (vs->jobs[i].used) {
			close(vs->jobs[i].outfd);
			close(vs->jobs[i].errfd);
			if (vs->jobs[i].pidfd >= 0)
				close(vs->jobs[i].pidfd);
			if (vs->jobs[i].egress.fd >= 0)
				close(vs->jobs[i].egress.fd);
			if (vs->jobs[i].egress.shm >= 0)
				close(vs->jobs[i].egress.shm);
		}
	if (seccomp_filter_install(&seccomp_vm) == -1) {
		snprintf(res->reason, sizeof(res->reason), "error: seccomp");
		res->status = VMM_FAULT;
		_exit(2);
	}
	cfg->kvm_fd = ctx->kvm_fd;
	cfg->output = out_sink;
	cfg->output_arg = outfds;
	rc = vmm_run(cfg, res, err, sizeof(err));
	if (rc != VMM_OK) {
		strlcpy(res->reason, vmm_strerror(rc), sizeof(res->reason));
		strlcat(res->reason, ": ", sizeof(res->reason));
		strlcat(res->reason, err, sizeof(res->reason));
		_exit(3);
	}
	_exit(0);
}

/* ---- images over the API ---------------------------------------------- */

/* The vmm's filter has newfstatat, not access. */
static int
exists(const char *path)
{
	struct stat sb;

	return fstatat(AT_FDCWD, path, &sb, AT_SYMLINK_NOFOLLOW) == 0;
}

/* Forget a verified image, so the next use reads the file again. */
static void
image_forget(struct vmm_state *vs, const char *name)
{
	size_t i;

	for (i = 0; i < VMM_IMAGES_MAX; i++)
		if (vs->images[i].img != NULL &&
		    strcmp(vs->images[i].name, name) == 0) {
			image_close(vs->images[i].img);
			memset(&vs->images[i], 0, sizeof(vs->images[i]));
		}
}

static void
image_info(const struct image *img, const uint8_t *bytes, size_t len,
    int uploaded, struct vmm_image_info *out)
{
	uint8_t sum[32];
	size_t i;

	memset(out, 0, sizeof(*out));
	strlcpy(out->name, image_name(img), sizeof(out->name));
	strlcpy(out->version, image_version(img), sizeof(out->version));
	crypto_generichash(sum, sizeof(sum), bytes, len, NULL, 0);
	sodium_bin2hex(out->digest, sizeof(out->digest), sum, sizeof(sum));
	out->size = len;
	out->uploaded = (uint32_t)uploaded;
	for (i = 0; i < image_ncommands(img); i++) {
		const char *c = image_command_at(img, i)->name;
		const char *lang = strcmp(c, "python") == 0 ? "python"
		    : strcmp(c, "js") == 0                  ? "javascript"
		                                            : NULL;

		if (lang == NULL)
			continue;
		if (out->languages[0] != '\0')
			strlcat(out->languages, ",", sizeof(out->languages));
		strlcat(out->languages, lang, sizeof(out->languages));
	}
}

/* Every image in dir that verifies against the trusted keys. */
static void
image_scan(struct vmm_state *vs, const char *dir, int uploaded,
    struct msg_vmm_images *r)
{
	char path[300], err[256], name[RUN_NAME_MAX];
	struct dirent *e;
	struct image *img;
	const uint8_t *bytes;
	size_t len, nl;
	DIR *d;

	if ((d = opendir(dir)) == NULL)
		return;
	while ((e = readdir(d)) != NULL && r->n < VMM_IMAGE_LIST_MAX) {
		nl = strlen(e->d_name);
		if (nl <= 4 || nl - 4 >= sizeof(name) ||
		    strcmp(e->d_name + nl - 4, ".img") != 0)
			continue;
		memcpy(name, e->d_name, nl - 4);
		name[nl - 4] = '\0';
		if (!safe_name(name, sizeof(name)))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (image_open_trusted(path, (const uint8_t(*)[32])vs->keys,
		        vs->nkeys, &img, err, sizeof(err)) != 0)
			continue;
		bytes = image_bytes(img, &len);
		image_info(img, bytes, len, uploaded, &r->im[r->n]);
		/* The file's name is what a sandbox asks for. */
		strlcpy(r->im[r->n].name, name, sizeof(r->im[r->n].name));
		r->n++;
		image_close(img);
	}
	closedir(d);
}

/* Write bytes to uploads/NAME.img: a temporary file, synced, renamed. */
static int
image_store(const char *name, const uint8_t *bytes, size_t len)
{
	char tmp[RUN_NAME_MAX + 32], path[RUN_NAME_MAX + 16];
	size_t off = 0;
	ssize_t n;
	int fd;

	snprintf(tmp, sizeof(tmp), "uploads/.%s.tmp", name);
	snprintf(path, sizeof(path), "uploads/%s.img", name);
	if ((fd = open(tmp,
	         O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
	         0600)) == -1)
		return -1;
	while (off < len) {
		if ((n = pwrite(fd, bytes + off, len - off, (off_t)off)) ==
		    -1) {
			if (errno == EINTR)
				continue;
			break;
		}
		off += (size_t)n;
	}
	if (off != len || fsync(fd) == -1 || close(fd) == -1) {
		if (off == len)
			fd = -1;
		if (fd != -1)
			close(fd);
		unlinkat(AT_FDCWD, tmp, 0);
		return -1;
	}
	if (renameat(AT_FDCWD, tmp, AT_FDCWD, path) == -1) {
		unlinkat(AT_FDCWD, tmp, 0);
		return -1;
	}
	return 0;
}

static int
vmm_h_images(struct proc_ctx *ctx, const struct msg *m)
{
	struct vmm_state *vs = ctx->arg;
	struct msg_vmm_image_ref q;
	struct msg_vmm_images *r;
	struct image *img = NULL;
	uint8_t *bytes = MAP_FAILED;
	char path[RUN_NAME_MAX + 16], err[256] = "";
	struct grant g;
	struct stat st;
	int put = m->hdr.type == MSG_VMM_IMAGE_PUT;
	int del = m->hdr.type == MSG_VMM_IMAGE_DELETE;

	memcpy(&q, m->data, sizeof(q));
	if (memchr(q.name, '\0', sizeof(q.name)) == NULL ||
	    (r = calloc(1, sizeof(*r))) == NULL) {
		if (put)
			close(m->fd);
		return -1;
	}
	decode_keys(ctx, vs);
	if (check_grant(ctx, m, &q.grant,
	        put || del ? CAP_IMAGE_WRITE : CAP_IMAGE_READ, q.name,
	        &g) != 0) {
		r->status = SBX_E_GRANT;
		goto reply;
	}
	if (del) {
		snprintf(path, sizeof(path), "images/%s.img", q.name);
		if (!safe_name(q.name, sizeof(q.name)))
			r->status = SBX_E_NOTFOUND;
		else if (exists(path)) {
			r->status = SBX_E_EXISTS;
			strlcpy(r->reason, "installed by the operator",
			    sizeof(r->reason));
		} else {
			snprintf(path, sizeof(path), "uploads/%s.img", q.name);
			r->status = unlinkat(AT_FDCWD, path, 0) == 0
			    ? SBX_OK
			    : SBX_E_NOTFOUND;
			image_forget(vs, q.name);
		}
		goto reply;
	}
	if (!put) {
		image_scan(vs, "images", 0, r);
		image_scan(vs, "uploads", 1, r);
		goto reply;
	}
	/* An upload: every byte is the client's until it verifies. */
	r->status = SBX_E_IMAGE;
	if (fstat(m->fd, &st) == -1 || (uint64_t)st.st_size != q.size ||
	    q.size == 0 || q.size > VMM_IMAGE_MAX_BYTES) {
		strlcpy(r->reason, "size", sizeof(r->reason));
		goto reply;
	}
	if ((bytes = mmap(NULL, q.size, PROT_READ, MAP_PRIVATE, m->fd, 0)) ==
	    MAP_FAILED) {
		r->status = SBX_E_INTERNAL;
		goto reply;
	}
	if (image_open_mem(bytes, q.size, &img, err, sizeof(err)) != 0 ||
	    image_verify(img, (const uint8_t(*)[32])vs->keys, vs->nkeys, NULL,
	        err, sizeof(err)) != 0) {
		strlcpy(r->reason, err, sizeof(r->reason));
		goto reply;
	}
	if (!safe_name(image_name(img), RUN_NAME_MAX)) {
		strlcpy(r->reason, "the image's name is not a plain name",
		    sizeof(r->reason));
		goto reply;
	}
	snprintf(path, sizeof(path), "images/%s.img", image_name(img));
	if (exists(path)) {
		r->status = SBX_E_EXISTS;
		strlcpy(r->reason, "an operator image has that name",
		    sizeof(r->reason));
		goto reply;
	}
	if (image_store(image_name(img), bytes, q.size) != 0) {
		log_warn("%s: uploads/%s.img", __func__, image_name(img));
		r->status = SBX_E_INTERNAL;
		goto reply;
	}
	image_forget(vs, image_name(img));
	image_info(img, bytes, q.size, 1, &r->im[0]);
	r->n = 1;
	r->status = SBX_OK;
	log_info("image %s %s uploaded by %s", image_name(img),
	    image_version(img), g.principal);
reply:
	if (img != NULL)
		image_close(img);
	if (bytes != MAP_FAILED)
		munmap(bytes, q.size);
	if (put)
		close(m->fd);
	msg_reply(ctx, m, MSG_VMM_IMAGES, r, sizeof(*r), -1);
	free(r);
	return 0;
}

/* ---- the process table ----------------------------------------------- */

static struct vmm_proc *
proc_find(struct sandbox *s, uint64_t pid)
{
	size_t i;

	for (i = 0; i < SBX_PROCS_MAX; i++)
		if (s->procs[i].pid == pid && pid != 0)
			return &s->procs[i];
	return NULL;
}

static void
proc_add(struct sandbox *s, uint64_t pid, const char *cmd)
{
	struct vmm_proc *p = &s->procs[s->procs_next++ % SBX_PROCS_MAX];

	memset(p, 0, sizeof(*p));
	p->pid = pid;
	strlcpy(p->cmd, cmd, sizeof(p->cmd));
	p->status = RUN_STARTED;
	p->started_at = (int64_t)time(NULL);
}

static int
vmm_h_procs(struct proc_ctx *ctx, const struct msg *m)
{
	struct vmm_state *vs = ctx->arg;
	struct msg_vmm_sandbox_ref q;
	struct msg_vmm_procs *r;
	struct sandbox *s;
	struct grant g;
	uint32_t i, k;

	memcpy(&q, m->data, sizeof(q));
	if (memchr(q.id, '\0', sizeof(q.id)) == NULL ||
	    (r = calloc(1, sizeof(*r))) == NULL)
		return -1;
	if (check_grant(ctx, m, &q.grant, CAP_SANDBOX_READ, q.id, &g) != 0)
		r->status = SBX_E_GRANT;
	else if ((s = sandbox_find(vs, q.id, g.principal)) == NULL)
		r->status = not_found(vs);
	else
		for (i = 0; i < SBX_PROCS_MAX; i++) {
			k = (s->procs_next + i) % SBX_PROCS_MAX;
			if (s->procs[k].pid != 0)
				r->p[r->n++] = s->procs[k];
		}
	msg_reply(ctx, m, MSG_VMM_PROCS_REPLY, r, sizeof(*r), -1);
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

static int
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
	if (check_grant(ctx, m, &q.grant, CAP_SANDBOX_READ, q.id, &g) != 0)
		r.status = SBX_E_GRANT;
	else if ((s = sandbox_find(vs, q.id, g.principal)) == NULL)
		r.status = not_found(vs);
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
static int
vmm_h_kill(struct proc_ctx *ctx, const struct msg *m)
{
	struct vmm_state *vs = ctx->arg;
	struct msg_vmm_kill q;
	struct grant g;
	size_t i;

	memcpy(&q, m->data, sizeof(q));
	if (memchr(q.id, '\0', sizeof(q.id)) == NULL)
		return -1;
	q.status = SBX_E_NOTFOUND;
	if (check_grant(ctx, m, &q.grant, CAP_EXEC, "", &g) != 0)
		q.status = SBX_E_GRANT;
	else if (sandbox_find(vs, q.id, g.principal) != NULL)
		for (i = 0; i < VMM_JOBS_MAX; i++) {
			struct job *j = &vs->jobs[i];

			if (j->used && j->run_pid == q.pid &&
			    strcmp(j->sbx, q.id) == 0) {
				kill(j->pid, SIGKILL);
				j->killed = 1;
				q.status = SBX_OK;
			}
		}
	memset(&q.grant, 0, sizeof(q.grant));
	msg_reply(ctx, m, MSG_VMM_KILL_REPLY, &q, sizeof(q), -1);
	return 0;
}

static int
vmm_h_run(struct proc_ctx *ctx, const struct msg *m)
{
	struct vmm_state *vs = ctx->arg;
	struct msg_vmm_run q;
	const struct image_command *cmd;
	const struct vmm_file *files = NULL;
	struct vmm_file *fv = NULL;
	struct image *img;
	struct sandbox *s;
	struct grant g;
	struct vmm_config cfg;
	struct job *job = NULL;
	const char *argv[RUN_MAX_ARGS + 2], *envp[2 * RUN_MAX_ENV + 1];
	const uint8_t *p, *end;
	uint8_t *in = MAP_FAILED;
	char *strbuf = NULL, reason[64] = "";
	size_t used = 0, nenv = 0, i;
	int outfds[2] = { -1, -1 }, st = RUN_REFUSED, efd = -1;
	uint64_t timeout;
	pid_t pid;

	memcpy(&q, m->data, sizeof(q));
	if (memchr(q.sandbox, '\0', sizeof(q.sandbox)) == NULL ||
	    memchr(q.image, '\0', sizeof(q.image)) == NULL ||
	    memchr(q.command, '\0', sizeof(q.command)) == NULL ||
	    q.nargs > RUN_MAX_ARGS || q.nenv > RUN_MAX_ENV ||
	    q.input_len > RUN_MAX_INPUT || q.stdin_len > q.input_len) {
		close(m->fd);
		return -1;
	}
	expire_sandboxes(vs);
	/* exec is granted per program; the sandbox is the principal's own. */
	if (check_grant(ctx, m, &q.grant, CAP_EXEC, q.command, &g) != 0) {
		strlcpy(reason, "not authorized", sizeof(reason));
		goto refuse;
	}
	if ((s = sandbox_find(vs, q.sandbox, g.principal)) == NULL) {
		strlcpy(reason, "no such sandbox", sizeof(reason));
		goto refuse;
	}
	if ((img = image_get(ctx, vs, s->image)) == NULL) {
		strlcpy(reason, "the sandbox's image does not verify",
		    sizeof(reason));
		goto refuse;
	}
	if ((cmd = image_command(img, q.command)) == NULL) {
		strlcpy(reason, "the image has no command ", sizeof(reason));
		strlcat(reason, q.command, sizeof(reason));
		goto refuse;
	}
	for (i = 0; i < VMM_JOBS_MAX && job == NULL; i++)
		if (!vs->jobs[i].used)
			job = &vs->jobs[i];
	if (job == NULL) {
		strlcpy(reason, "too many runs at once", sizeof(reason));
		goto refuse;
	}
	/* The request's strings and stdin, from its sealed memfd. */
	if (q.input_len > 0 &&
	    (in = mmap(NULL, q.input_len, PROT_READ, MAP_PRIVATE, m->fd, 0)) ==
	        MAP_FAILED)
		goto error;
	p = in == MAP_FAILED ? NULL : in;
	end = p + q.input_len;
	if ((strbuf = malloc(q.input_len + SBX_ENV_MAX + 1)) == NULL)
		goto error;
	argv[0] = cmd->argv0;
	if (parse_strings(&p, end - q.stdin_len, q.nargs, argv + 1, strbuf,
	        &used, q.input_len + 1) != 0) {
		strlcpy(reason, "malformed arguments", sizeof(reason));
		goto refuse;
	}
	argv[q.nargs + 1] = NULL;
	/* The request's variables first: getenv finds the first match, so
	 * they override the sandbox's. */
	if (parse_strings(&p, end - q.stdin_len, q.nenv, envp, strbuf, &used,
	        q.input_len + 1) != 0 ||
	    p != end - q.stdin_len) {
		strlcpy(reason, "malformed environment", sizeof(reason));
		goto refuse;
	}
	nenv = q.nenv;
	for (i = 0; i < s->env_len && nenv < 2 * RUN_MAX_ENV;
	     i += strlen(s->env + i) + 1)
		envp[nenv++] = s->env + i;
	envp[nenv] = NULL;
	if ((fv = calloc(image_nfiles(img), sizeof(*fv))) == NULL)
		goto error;
	for (i = 0; i < image_nfiles(img); i++) {
		const struct image_file *f = image_file_at(img, i);

		fv[i].path = f->path;
		fv[i].data = f->data;
		fv[i].len = f->len;
		fv[i].mode = f->mode;
	}
	files = fv;
	timeout = g.timeout_ms;
	if (ctx->config != NULL) {
		if (timeout == 0)
			timeout = ctx->config->timeout_default_ms;
		if (ctx->config->timeout_max_ms != 0 &&
		    timeout > ctx->config->timeout_max_ms)
			timeout = ctx->config->timeout_max_ms;
	}
	if (q.timeout_ms != 0 && q.timeout_ms < timeout)
		timeout = q.timeout_ms;

	memset(&cfg, 0, sizeof(cfg));
	cfg.elf = cmd->program->data;
	cfg.elf_len = cmd->program->len;
	cfg.argv = argv;
	cfg.envp = envp;
	cfg.files = files;
	cfg.nfiles = image_nfiles(img);
	cfg.workspace_fd = s->ws_fd;
	cfg.memory = g.mem_max ? g.mem_max : image_memory(img);
	if (ctx->config != NULL && ctx->config->memory_max != 0 &&
	    cfg.memory > ctx->config->memory_max)
		cfg.memory = ctx->config->memory_max;
	cfg.timeout_ms = timeout;
	cfg.output_max = g.output_max ? g.output_max
	    : ctx->config != NULL     ? ctx->config->output_max
	                              : 0;
	cfg.workspace_max =
	    ctx->config != NULL ? ctx->config->workspace_max : 0;
	/* stdin is the tail of the request memfd. */
	cfg.stdin_fd = m->fd;
	if (lseek(m->fd, (off_t)(q.input_len - q.stdin_len), SEEK_SET) == -1)
		goto error;

	memset(job, 0, sizeof(*job));
	job->res = mmap(NULL, sizeof(*job->res), PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (job->res == MAP_FAILED ||
	    (outfds[0] = memfd_create("keep-stdout", MFD_CLOEXEC)) == -1 ||
	    (outfds[1] = memfd_create("keep-stderr", MFD_CLOEXEC)) == -1)
		goto error;
	memset(job->res, 0, sizeof(*job->res));
	/* Egress: the guest's fetches go over a socketpair to here, with
	 * the caps of the token that asked for the run (host/vmm_egress.h). */
	if (vmm_egress_prepare(&job->egress, g.principal, s->id,
	        vs->caps_reqid == m->hdr.reqid ? &vs->caps : NULL, &efd) == -1)
		goto error;
	vs->caps_reqid = 0;
	switch (pid = fork()) {
	case -1:
		log_warn("%s: fork", __func__);
		vmm_egress_close(&job->egress);
		close(efd);
		goto error;
	case 0:
		vmm_egress_child(&job->egress, efd, &cfg);
		close(job->egress.fd);
		job->egress.fd = -1;
		job->egress.shm = -1; /* now the vm process's own */
		vm_process(ctx, vs, &cfg, outfds, job->res, s->id);
	}
	close(efd);
	job->used = 1;
	job->pid = pid;
	job->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	job->reqid = m->hdr.reqid;
	job->from = m->from;
	job->outfd = outfds[0];
	job->errfd = outfds[1];
	job->deadline = mono_ms() + timeout + VMM_GRACE_MS;
	job->run_pid = ++vs->next_pid;
	job->background = (q.flags & RUN_F_BACKGROUND) != 0;
	strlcpy(job->sbx, s->id, sizeof(job->sbx));
	strlcpy(job->owner, s->owner, sizeof(job->owner));
	strlcpy(job->cmd, q.command, sizeof(job->cmd));
	proc_add(s, job->run_pid, q.command);
	log_info("run %llu: %s in sandbox %s, vm pid %d, run %llu%s",
	    (unsigned long long)job->reqid, q.command, s->id, (int)pid,
	    (unsigned long long)job->run_pid,
	    job->background ? ", in the background" : "");
	if (job->background)
		run_started(ctx, m->from, m->hdr.reqid, job->run_pid);
	goto done;

error:
	log_warn("%s: run %llu", __func__, (unsigned long long)m->hdr.reqid);
	st = RUN_ERROR;
	strlcpy(reason, "the host could not start the run", sizeof(reason));
refuse:
	log_info(
	    "run %llu refused: %s", (unsigned long long)m->hdr.reqid, reason);
	run_reply(ctx, m->from, m->hdr.reqid, (uint32_t)st, -1, reason, -1, 0,
	    0, NULL);
	if (job != NULL && job->res != NULL && job->res != MAP_FAILED)
		munmap(job->res, sizeof(*job->res));
	if (job != NULL)
		memset(job, 0, sizeof(*job));
	for (i = 0; i < 2; i++)
		if (outfds[i] != -1)
			close(outfds[i]);
done:
	if (in != MAP_FAILED)
		munmap(in, q.input_len);
	free(strbuf);
	free(fv);
	close(m->fd);
	return 0;
}

/* Append the stderr memfd to the stdout one: the reply carries both. */
static int
join_output(int outfd, int errfd, uint64_t *out_len, uint64_t *err_len)
{
	struct stat so, se;
	char buf[65536];
	off_t off = 0;
	ssize_t n;

	if (fstat(outfd, &so) == -1 || fstat(errfd, &se) == -1)
		return -1;
	*out_len = (uint64_t)so.st_size;
	*err_len = (uint64_t)se.st_size;
	if (lseek(outfd, 0, SEEK_END) == -1)
		return -1;
	while ((n = pread(errfd, buf, sizeof(buf), off)) > 0) {
		if (write(outfd, buf, (size_t)n) != n)
			return -1;
		off += n;
	}
	return n == 0 ? 0 : -1;
}

/*
 * How a run ended, in its sandbox's process table; a background run's end
 * goes to the front too (its concurrency slot, the audit log). Its output
 * is not kept: a background program writes what it wants to keep into
 * the workspace.
 */
static void
job_record(struct proc_ctx *ctx, const struct job *job, uint32_t st,
    int exit_code, const struct vmm_result *res)
{
	struct vmm_state *vs = ctx->arg;
	struct msg_vmm_bg_done d;
	struct vmm_proc *p;
	struct sandbox *s;

	if ((s = sandbox_find(vs, job->sbx, job->owner)) != NULL) {
		s->runs++;
		s->run_us += res->run_us;
		if (res->peak_memory > s->peak_memory)
			s->peak_memory = res->peak_memory;
		if ((p = proc_find(s, job->run_pid)) != NULL) {
			p->status = st;
			p->exit_code = exit_code;
		}
	}
	if (!job->background)
		return;
	memset(&d, 0, sizeof(d));
	strlcpy(d.principal, job->owner, sizeof(d.principal));
	strlcpy(d.id, job->sbx, sizeof(d.id));
	strlcpy(d.cmd, job->cmd, sizeof(d.cmd));
	d.pid = job->run_pid;
	d.status = st;
	d.exit_code = exit_code;
	d.duration_ms = (res->boot_us + res->run_us) / 1000;
	if (ctx->fd[job->from] < 0 ||
	    msg_send(ctx->fd[job->from], MSG_VMM_BG_DONE, 0, job->reqid, &d,
	        sizeof(d), -1) != MSG_OK)
		log_warnx("%s: the end of run %llu not told", __func__,
		    (unsigned long long)job->run_pid);
}

static void
job_finish(struct proc_ctx *ctx, struct job *job)
{
	static const uint32_t map[] = { [VMM_EXITED] = RUN_EXITED,
		[VMM_FAULT] = RUN_FAULT,
		[VMM_TIMEOUT] = RUN_TIMEOUT,
		[VMM_OUTPUT_LIMIT] = RUN_OUTPUT_LIMIT };
	struct vmm_result res = *job->res;
	uint64_t out_len = 0, err_len = 0;
	uint32_t st;
	int wst = 0;
	char reason[64];

	waitpid(job->pid, &wst, 0);
	res.reason[sizeof(res.reason) - 1] = '\0';
	if (WIFEXITED(wst) && WEXITSTATUS(wst) == 0 &&
	    (unsigned)res.status < nitems(map)) {
		st = map[res.status];
		strlcpy(reason, res.reason, sizeof(reason));
	} else {
		st = RUN_ERROR;
		strlcpy(reason,
		    WIFSIGNALED(wst)            ? "the vm process was killed"
		        : res.reason[0] != '\0' ? res.reason
		                                : "the vm process failed",
		    sizeof(reason));
		log_warnx("run %llu: vm pid %d: %s",
		    (unsigned long long)job->reqid, (int)job->pid, reason);
	}
	if (join_output(job->outfd, job->errfd, &out_len, &err_len) != 0) {
		st = RUN_ERROR;
		out_len = err_len = 0;
		strlcpy(reason, "output lost", sizeof(reason));
	}
	if (job->killed) {
		st = RUN_KILLED;
		strlcpy(reason, "killed", sizeof(reason));
	}
	log_info(
	    "run %llu done: status %u, exit %d, %llu+%llu bytes, %llu us%s%s",
	    (unsigned long long)job->reqid, st, res.exit_code,
	    (unsigned long long)out_len, (unsigned long long)err_len,
	    (unsigned long long)(res.boot_us + res.run_us),
	    reason[0] != '\0' ? ": " : "", reason);
	job_record(ctx, job, st, res.exit_code, &res);
	if (!job->background)
		run_reply(ctx, job->from, job->reqid, st, res.exit_code, reason,
		    job->outfd, out_len, err_len, &res);
	close(job->outfd);
	close(job->errfd);
	if (job->pidfd >= 0)
		close(job->pidfd);
	munmap(job->res, sizeof(*job->res));
	vmm_egress_close(&job->egress);
	memset(job, 0, sizeof(*job));
}

/* ---- egress relay (host/vmm_egress.h) -------------------------------- */

static int
vmm_h_run_caps(struct proc_ctx *ctx, const struct msg *m)
{
	struct vmm_state *vs = ctx->arg;
	struct msg_vmm_run_caps c;

	memcpy(&c, m->data, sizeof(c));
	if (c.pad != 0 ||
	    memchr(c.request_id, '\0', sizeof(c.request_id)) == NULL)
		return -1;
	vs->caps_reqid = m->hdr.reqid;
	vs->caps = c;
	return 0;
}

static struct vmm_egress_run *
egress_run_find(struct vmm_state *vs, uint64_t reqid)
{
	struct vmm_egress_run *runs[VMM_JOBS_MAX];
	size_t i;

	for (i = 0; i < VMM_JOBS_MAX; i++)
		runs[i] = vs->jobs[i].used ? &vs->jobs[i].egress : NULL;
	return vmm_egress_find(runs, VMM_JOBS_MAX, reqid);
}

static int
vmm_h_egress_decision(struct proc_ctx *ctx, const struct msg *m)
{
	struct vmm_egress_run *r = egress_run_find(ctx->arg, m->hdr.reqid);

	return r != NULL ? vmm_egress_decision(ctx, r, m) : -1;
}

static int
vmm_h_egress_reply(struct proc_ctx *ctx, const struct msg *m)
{
	struct vmm_egress_run *r = egress_run_find(ctx->arg, m->hdr.reqid);

	if (r == NULL) {
		close(m->fd);
		return -1;
	}
	return vmm_egress_reply(ctx, r, m);
}

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
			remove_tree(dirfd(d), e->d_name, 0);
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
		    !safe_name(ss.id, SBX_ID_MAX))
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
	log_info("%s: sandboxes restored from the store", __func__);
}

static int
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

/* A (new) store link: read the sandboxes back. */
static void
vmm_on_peer(struct proc_ctx *ctx, enum proc_id peer)
{
	struct vmm_state *vs = ctx->arg;

	if (peer != PROC_STORE)
		return;
	free(vs->restore);
	if ((vs->restore = calloc(1, sizeof(*vs->restore))) == NULL) {
		log_warnx("%s: out of memory", __func__);
		return;
	}
	vs->restore_epoch++;
	restore_send(ctx, vs, STORE_DB_SANDBOXES, NULL, NULL, RESTORE_PAGE);
}

/* The front's requests of one loop pass, served one by one as if each
 * had come alone; their replies go back together. */
static int
vmm_h_batch(struct proc_ctx *ctx, const struct msg *m)
{
	static struct msg_replies replies;

	return msg_batch_serve(ctx, m, MSG_VMM_BATCH_REPLY, &replies);
}

static const struct msg_handler vmm_handlers[] = {
	MSG_HANDLERS_COMMON,
	{ MSG_VMM_BATCH, PROC_BIT(PROC_FRONT), MSG_MAX_PAYLOAD, MSG_H_VARIABLE,
	    vmm_h_batch },
	{ MSG_VMM_SANDBOX_CREATE, PROC_BIT(PROC_FRONT),
	    sizeof(struct msg_vmm_sandbox_new), 0, vmm_h_create },
	{ MSG_VMM_SANDBOX_GET, PROC_BIT(PROC_FRONT),
	    sizeof(struct msg_vmm_sandbox_ref), 0, vmm_h_ref },
	{ MSG_VMM_SANDBOX_DELETE, PROC_BIT(PROC_FRONT),
	    sizeof(struct msg_vmm_sandbox_ref), 0, vmm_h_ref },
	{ MSG_VMM_SANDBOX_LIST, PROC_BIT(PROC_FRONT),
	    sizeof(struct msg_vmm_sandbox_list), 0, vmm_h_list },
	{ MSG_VMM_RUN, PROC_BIT(PROC_FRONT), sizeof(struct msg_vmm_run),
	    MSG_H_FD, vmm_h_run },
	{ MSG_VMM_FILE, PROC_BIT(PROC_FRONT), sizeof(struct msg_vmm_file),
	    MSG_H_FD, vmm_h_file },
	{ MSG_VMM_ENV, PROC_BIT(PROC_FRONT), sizeof(struct msg_vmm_env), 0,
	    vmm_h_env },
	{ MSG_VMM_RUN_CAPS, PROC_BIT(PROC_FRONT),
	    sizeof(struct msg_vmm_run_caps), 0, vmm_h_run_caps },
	{ MSG_POLICY_DECISION, PROC_BIT(PROC_POLICY),
	    sizeof(struct msg_policy_decision), 0, vmm_h_egress_decision },
	{ MSG_EGRESS_FETCH_REPLY, PROC_BIT(PROC_EGRESS),
	    sizeof(struct msg_egress_rep), MSG_H_FD, vmm_h_egress_reply },
	{ MSG_VMM_PROCS, PROC_BIT(PROC_FRONT),
	    sizeof(struct msg_vmm_sandbox_ref), 0, vmm_h_procs },
	{ MSG_VMM_KILL, PROC_BIT(PROC_FRONT), sizeof(struct msg_vmm_kill), 0,
	    vmm_h_kill },
	{ MSG_VMM_SYSTEM, PROC_BIT(PROC_FRONT),
	    sizeof(struct msg_vmm_sandbox_ref), 0, vmm_h_system },
	{ MSG_VMM_IMAGE_LIST, PROC_BIT(PROC_FRONT),
	    sizeof(struct msg_vmm_image_ref), 0, vmm_h_images },
	{ MSG_VMM_IMAGE_PUT, PROC_BIT(PROC_FRONT),
	    sizeof(struct msg_vmm_image_ref), MSG_H_FD, vmm_h_images },
	{ MSG_VMM_IMAGE_DELETE, PROC_BIT(PROC_FRONT),
	    sizeof(struct msg_vmm_image_ref), 0, vmm_h_images },
	{ MSG_STORE_REPLY, PROC_BIT(PROC_STORE), MSG_MAX_PAYLOAD,
	    MSG_H_VARIABLE, vmm_h_store_reply },
};

static int
vmm_loop(struct proc_ctx *ctx, struct vmm_state *vs)
{
	struct pollfd pfd[PROC_COUNT + 2 * VMM_JOBS_MAX];
	int who[PROC_COUNT + 2 * VMM_JOBS_MAX];
	uint8_t *buf;
	size_t n, i;
	uint64_t now;

	if ((buf = malloc(MSG_BUFSZ)) == NULL)
		fatal("%s", __func__);
	while (!ctx->quit) {
		n = 0;
		for (i = 0; i < PROC_COUNT; i++)
			if (ctx->fd[i] >= 0) {
				pfd[n].fd = ctx->fd[i];
				pfd[n].events = POLLIN;
				who[n++] = (int)i;
			}
		for (i = 0; i < VMM_JOBS_MAX; i++)
			if (vs->jobs[i].used && vs->jobs[i].pidfd >= 0) {
				pfd[n].fd = vs->jobs[i].pidfd;
				pfd[n].events = POLLIN;
				who[n++] = PROC_COUNT + (int)i;
			}
		for (i = 0; i < VMM_JOBS_MAX; i++)
			if (vs->jobs[i].used && vs->jobs[i].egress.fd >= 0) {
				pfd[n].fd = vs->jobs[i].egress.fd;
				pfd[n].events = POLLIN;
				who[n++] = PROC_COUNT + VMM_JOBS_MAX + (int)i;
			}
		for (i = 0; i < n; i++)
			pfd[i].revents = 0;
		if (poll(pfd, n, 1000) == -1 && errno != EINTR)
			fatal("%s: poll", __func__);
		for (i = 0; i < n && !ctx->quit; i++) {
			if (pfd[i].revents == 0)
				continue;
			if (who[i] >= PROC_COUNT + VMM_JOBS_MAX) {
				struct job *j = &vs->jobs[who[i] - PROC_COUNT -
				    VMM_JOBS_MAX];

				/* job_finish above may have ended it. */
				if (j->used && j->egress.fd == pfd[i].fd)
					vmm_egress_event(ctx, &j->egress);
			} else if (who[i] >= PROC_COUNT)
				job_finish(ctx, &vs->jobs[who[i] - PROC_COUNT]);
			else if (proc_link_event(ctx, (enum proc_id)who[i], buf,
			             MSG_BUFSZ) == -1)
				ctx->quit = 1;
		}
		/* A vm process past its time limit and grace is killed; its
		 * pidfd then reports it. */
		now = mono_ms();
		for (i = 0; i < VMM_JOBS_MAX; i++)
			if (vs->jobs[i].used && now > vs->jobs[i].deadline) {
				kill(vs->jobs[i].pid, SIGKILL);
				vs->jobs[i].deadline = UINT64_MAX;
			}
		expire_sandboxes(vs);
	}
	for (i = 0; i < VMM_JOBS_MAX; i++)
		if (vs->jobs[i].used)
			kill(vs->jobs[i].pid, SIGKILL);
	/* The sandboxes outlive this process: their workspaces stay for the
	 * next one to adopt. */
	for (i = 0; i < VMM_SANDBOXES_MAX; i++)
		if (vs->sbx[i].used && vs->sbx[i].ws_fd >= 0)
			close(vs->sbx[i].ws_fd);
	free(vs->restore);
	free(buf);
	return 0;
}

int
vmm_main(struct proc_ctx *ctx)
{
	static struct vmm_state vs;
	size_t i;
	int v;

	ctx->handlers = vmm_handlers;
	ctx->nhandlers = nitems(vmm_handlers);
	ctx->arg = &vs;
	ctx->on_peer = vmm_on_peer;
	for (i = 0; i < VMM_SANDBOXES_MAX; i++)
		vs.sbx[i].ws_fd = -1;
	if (ctx->kvm_fd < 0)
		log_warnx("%s: no /dev/kvm: guests cannot run", __func__);
	else if ((v = ioctl(ctx->kvm_fd, KVM_GET_API_VERSION, 0)) !=
	    KVM_API_VERSION)
		log_warnx("%s: /dev/kvm API version %d, want %d", __func__, v,
		    KVM_API_VERSION);
	else if (vmm_prepare(ctx->kvm_fd) != VMM_OK)
		log_warn("%s: KVM_GET_SUPPORTED_CPUID", __func__);
	else
		log_info("%s: /dev/kvm API version %d", __func__, v);
	/* A restarted vmm has its store link from the start; a first one
	 * may get it later (vmm_on_peer). */
	if (ctx->fd[PROC_STORE] >= 0)
		vmm_on_peer(ctx, PROC_STORE);
	log_info("%s: ready", __func__);
	return vmm_loop(ctx, &vs);
}
