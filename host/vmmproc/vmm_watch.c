/*
 * files/watch: inotify on a directory of a sandbox's workspace and the
 * directories under it, as created, modified and deleted paths for the
 * front, which streams them to its client as server-sent events.
 *
 * Confinement: a directory is opened beneath the workspace (ws_openat,
 * RESOLVE_BENEATH) and watched through that descriptor (fchdir to it,
 * inotify_add_watch of "."), never by a path the kernel would resolve
 * again, so a symbolic link the guest swaps in cannot point a watch
 * outside the workspace.
 *
 * Bounds (host/vmm_msg.h): watches in all and per sandbox, directories
 * per watch, events a second; events on one path within WATCH_FLUSH_MS
 * are coalesced (created then modified stays created), and the rest is
 * counted as dropped and reported. A watch ends when its sandbox is
 * gone, when its directory is deleted or moved, or when the front stops
 * it (its client went).
 */
#include <sys/inotify.h>

#include "host/vmmproc/vmm_int.h"

#define WATCH_MASK                                                             \
	(IN_CREATE | IN_MOVED_TO | IN_MODIFY | IN_CLOSE_WRITE | IN_ATTRIB |    \
	    IN_DELETE | IN_MOVED_FROM | IN_DELETE_SELF | IN_MOVE_SELF |        \
	    IN_ONLYDIR | IN_DONT_FOLLOW | IN_EXCL_UNLINK)

struct watch_dir {
	int wd;
	char path[WS_PATH_MAX]; /* absolute in the workspace */
};

struct vmm_watch {
	uint64_t id; /* the front's reqid */
	char sbx[SBX_ID_MAX];
	char owner[GRANT_PRINCIPAL_MAX];
	int ifd;
	size_t ndirs;
	struct watch_dir dirs[WATCH_DIRS_MAX];
	struct watch_batch b; /* waiting to go */
	uint32_t end; /* enum watch_end, once ending */
};

static void
watch_free(struct vmm_state *vs, size_t i)
{
	struct vmm_watch *w = vs->watches[i];

	if (w == NULL)
		return;
	if (w->ifd >= 0)
		close(w->ifd);
	free(w);
	vs->watches[i] = NULL;
}

void
vmm_watch_stop_all(struct vmm_state *vs)
{
	for (size_t i = 0; i < WATCH_MAX; i++)
		watch_free(vs, i);
}

int
vmm_watch_fd(const struct vmm_state *vs, size_t i)
{
	return i < WATCH_MAX && vs->watches[i] != NULL ? vs->watches[i]->ifd
	                                               : -1;
}

/* Watch the directory at path (opened beneath the workspace) and, to the
 * depth left, the directories under it. */
static int
watch_dir(struct vmm_watch *w, int ws_fd, const char *path, int depth)
{
	struct dirent *e;
	DIR *d;
	int fd, lfd = -1, wd, root;

	if (w->ndirs >= WATCH_DIRS_MAX) {
		w->b.dropped++;
		return -ENOSPC;
	}
	if ((fd = ws_openat(
	         ws_fd, path, O_PATH | O_DIRECTORY | O_NOFOLLOW, 0)) < 0)
		return fd;
	/* Through the descriptor: the kernel resolves nothing again. */
	if ((root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC)) == -1) {
		close(fd);
		return -errno;
	}
	if (fchdir(fd) == -1) {
		wd = -errno;
		close(root);
		close(fd);
		return wd;
	}
	wd = inotify_add_watch(w->ifd, ".", WATCH_MASK);
	if (fchdir(root) == -1)
		fatal("%s: cannot return to the root", __func__);
	close(root);
	if (wd == -1) {
		wd = -errno;
		close(fd);
		return wd;
	}
	w->dirs[w->ndirs].wd = wd;
	strlcpy(w->dirs[w->ndirs].path, path, sizeof(w->dirs[0].path));
	w->ndirs++;
	if (depth <= 0 ||
	    (lfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1 ||
	    (d = fdopendir(lfd)) == NULL) {
		if (depth > 0 && lfd >= 0)
			close(lfd);
		close(fd);
		return 0;
	}
	while ((e = readdir(d)) != NULL) {
		char sub[WS_PATH_MAX];
		struct stat st;

		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) ==
		        -1 ||
		    !S_ISDIR(st.st_mode))
			continue;
		if (snprintf(sub, sizeof(sub), "%s/%s",
		        strcmp(path, "/") == 0 ? "" : path,
		        e->d_name) >= (int)sizeof(sub))
			continue;
		(void)watch_dir(w, ws_fd, sub, depth - 1);
	}
	closedir(d);
	close(fd);
	return 0;
}

static int
depth_of(const char *path)
{
	int n = 0;

	for (; *path != '\0'; path++)
		n += *path == '/';
	return n;
}

/* The watch's events so far, and its end if it ends. */
static void
watch_flush(struct proc_ctx *ctx, struct vmm_watch *w)
{
	static uint8_t buf[MSG_MAX_PAYLOAD];
	struct msg_vmm_watch_events h;
	size_t off = sizeof(h), i = 0;

	while (i < w->b.npend || (i == 0 && (w->b.dropped || w->end))) {
		memset(&h, 0, sizeof(h));
		off = sizeof(h);
		for (; i < w->b.npend; i++) {
			size_t n = strlen(w->b.pend[i].path);

			if (off + 4 + n > sizeof(buf))
				break;
			buf[off] = w->b.pend[i].kind;
			buf[off + 1] = w->b.pend[i].is_dir;
			buf[off + 2] = (uint8_t)n;
			buf[off + 3] = (uint8_t)(n >> 8);
			memcpy(buf + off + 4, w->b.pend[i].path, n);
			off += 4 + n;
			h.count++;
		}
		if (i >= w->b.npend) {
			h.dropped = w->b.dropped;
			h.end = w->end;
		}
		memcpy(buf, &h, sizeof(h));
		if (ctx->fd[PROC_FRONT] < 0 ||
		    msg_send(ctx->fd[PROC_FRONT], MSG_VMM_WATCH_EVENTS, 0,
		        w->id, buf, off, -1) != MSG_OK)
			log_warnx("%s: watch %llu: events lost", __func__,
			    (unsigned long long)w->id);
		if (i >= w->b.npend)
			break;
	}
	w->b.npend = 0;
	w->b.dropped = 0;
	w->b.flush_at = 0;
}

void
vmm_watch_event(struct proc_ctx *ctx, struct vmm_state *vs, size_t i)
{
	_Alignas(struct inotify_event) char buf[8192];
	struct vmm_watch *w = vs->watches[i];
	struct sandbox *s;
	ssize_t n;

	if (w == NULL || w->end)
		return;
	s = vmm_sandbox_find(vs, w->sbx, w->owner);
	if ((n = read(w->ifd, buf, sizeof(buf))) <= 0)
		return;
	for (char *p = buf; p + sizeof(struct inotify_event) <= buf + n;) {
		const struct inotify_event *ev = (const void *)p;
		char path[WS_PATH_MAX];
		size_t d;
		uint8_t kind = 0;

		if (ev->len > (size_t)(buf + n - p) - sizeof(*ev))
			break;
		p += sizeof(*ev) + ev->len;
		if (ev->mask & IN_Q_OVERFLOW) {
			w->b.dropped++;
			continue;
		}
		for (d = 0; d < w->ndirs && w->dirs[d].wd != ev->wd; d++)
			;
		if (d == w->ndirs)
			continue;
		if (ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED)) {
			if (d == 0)
				w->end = WATCH_END_DIR;
			w->dirs[d].wd = -1;
			continue;
		}
		if (ev->len == 0 || memchr(ev->name, '\0', ev->len) == NULL ||
		    snprintf(path, sizeof(path), "%s/%s",
		        strcmp(w->dirs[d].path, "/") == 0 ? ""
		                                          : w->dirs[d].path,
		        ev->name) >= (int)sizeof(path))
			continue;
		if (ev->mask & (IN_CREATE | IN_MOVED_TO))
			kind = WATCH_CREATED;
		else if (ev->mask & (IN_DELETE | IN_MOVED_FROM))
			kind = WATCH_DELETED;
		else if (ev->mask & (IN_MODIFY | IN_CLOSE_WRITE | IN_ATTRIB))
			kind = WATCH_MODIFIED;
		if (kind == 0)
			continue;
		watch_batch_add(
		    &w->b, kind, (ev->mask & IN_ISDIR) != 0, path, mono_ms());
		/* A new directory is watched too, within the bounds. */
		if (kind == WATCH_CREATED && (ev->mask & IN_ISDIR) &&
		    s != NULL &&
		    depth_of(path) - depth_of(w->dirs[0].path) <
		        WATCH_DEPTH_MAX)
			(void)watch_dir(w, s->ws_fd, path,
			    WATCH_DEPTH_MAX - 1 -
			        (depth_of(path) - depth_of(w->dirs[0].path)));
	}
	if (w->end)
		vmm_watch_tick(ctx, vs);
}

int
vmm_watch_tick(struct proc_ctx *ctx, struct vmm_state *vs)
{
	uint64_t now = mono_ms();
	int next = -1;

	for (size_t i = 0; i < WATCH_MAX; i++) {
		struct vmm_watch *w = vs->watches[i];

		if (w == NULL)
			continue;
		if (!w->end && vmm_sandbox_find(vs, w->sbx, w->owner) == NULL &&
		    vs->restore == NULL)
			w->end = WATCH_END_SANDBOX;
		if (w->end || (w->b.flush_at != 0 && now >= w->b.flush_at))
			watch_flush(ctx, w);
		if (w->end) {
			log_info("watch %llu on sandbox %s ended (%u)",
			    (unsigned long long)w->id, w->sbx, w->end);
			watch_free(vs, i);
			continue;
		}
		if (w->b.flush_at != 0 &&
		    (next == -1 || (int)(w->b.flush_at - now) < next))
			next = (int)(w->b.flush_at - now);
	}
	return next;
}

int
vmm_h_watch(struct proc_ctx *ctx, const struct msg *m)
{
	struct vmm_state *vs = ctx->arg;
	struct msg_vmm_watch q;
	struct msg_vmm_watch_reply r;
	struct vmm_watch *w = NULL;
	struct sandbox *s = NULL;
	struct grant g;
	char path[WS_PATH_MAX];
	size_t i, slot = WATCH_MAX, mine = 0;
	int rc;

	memcpy(&q, m->data, sizeof(q));
	if (memchr(q.path, '\0', sizeof(q.path)) == NULL ||
	    memchr(q.id, '\0', sizeof(q.id)) == NULL)
		return -1;
	memset(&r, 0, sizeof(r));
	vmm_expire_sandboxes(vs);
	if (vmm_check_grant(ctx, m, &q.grant, CAP_ARTIFACT_READ, q.id, &g) !=
	    0) {
		r.status = SBX_E_GRANT;
		goto reply;
	}
	if ((s = vmm_sandbox_find(vs, q.id, g.principal)) == NULL) {
		r.status = vmm_not_found(vs);
		goto reply;
	}
	for (i = 0; i < WATCH_MAX; i++) {
		if (vs->watches[i] == NULL) {
			if (slot == WATCH_MAX)
				slot = i;
		} else if (strcmp(vs->watches[i]->sbx, q.id) == 0)
			mine++;
	}
	if (slot == WATCH_MAX || mine >= WATCH_PER_SANDBOX) {
		r.error = EMFILE;
		goto reply;
	}
	if ((rc = ws_normalize("/", q.path, path, sizeof(path))) != 0) {
		r.error = -rc;
		goto reply;
	}
	if ((w = calloc(1, sizeof(*w))) == NULL ||
	    (w->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) == -1) {
		r.error = w == NULL ? ENOMEM : errno;
		free(w);
		goto reply;
	}
	w->id = m->hdr.reqid;
	strlcpy(w->sbx, q.id, sizeof(w->sbx));
	strlcpy(w->owner, g.principal, sizeof(w->owner));
	if ((rc = watch_dir(w, s->ws_fd, path, WATCH_DEPTH_MAX - 1)) != 0) {
		r.error = -rc;
		close(w->ifd);
		free(w);
		goto reply;
	}
	vs->watches[slot] = w;
	log_info("watch %llu: sandbox %s, %s and %zu directories under it",
	    (unsigned long long)w->id, q.id, path, w->ndirs - 1);
reply:
	if (msg_reply(ctx, m, MSG_VMM_WATCH_REPLY, &r, sizeof(r), -1) != MSG_OK)
		log_warnx("%s: reply lost", __func__);
	return 0;
}

int
vmm_h_watch_stop(struct proc_ctx *ctx, const struct msg *m)
{
	struct vmm_state *vs = ctx->arg;
	struct msg_vmm_watch_stop q;

	memcpy(&q, m->data, sizeof(q));
	for (size_t i = 0; i < WATCH_MAX; i++)
		if (vs->watches[i] != NULL && vs->watches[i]->id == q.watch) {
			log_info("watch %llu stopped by the front",
			    (unsigned long long)q.watch);
			watch_free(vs, i);
		}
	return 0;
}
