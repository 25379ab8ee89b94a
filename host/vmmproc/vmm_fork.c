/*
 * A sandbox's fork (POST /v1/sandboxes/{id}/fork): the new sandbox starts
 * with a copy of the workspace of the one it forks. The copy runs in a
 * child of the vmm, so the vmm goes on serving while it runs; the child
 * confines itself to workspaces/ first (Landlock), since what it copies
 * was written by a guest. It is bounded by the workspace quota, the
 * quota walk's names and depth (lib/tree_copy.h) and VMM_FORK_MS; a copy
 * that does not fit is removed and the fork refused.
 *
 * The fork takes the source's live contexts along (docs/contexts.md,
 * "Fork and snapshots"): their idle interpreters are asked to save their
 * memory images when the copy starts, and once the copy is done and the
 * saves have ended (or the fork's time is up) each context is copied
 * into the new sandbox with its id, from its image where it saved one.
 */
#include "host/vmmproc/vmm_int.h"
#include "lib/tree_copy.h"

#include <sys/prctl.h>

enum { COPY_OK = 0, COPY_TOOBIG = 3, COPY_FAILED = 4 };

static void __attribute__((noreturn)) copy_child(
    struct proc_ctx *ctx, const struct sandbox *src, const struct sandbox *s)
{
	struct tree_copy_limits lim;
	char err[160];
	size_t i;
	int from, to;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	setproctitle("fork %s", s->id);
	for (i = 0; i < PROC_COUNT; i++)
		if (ctx->fd[i] >= 0)
			close(ctx->fd[i]);
	if (vm_confine_holder(err, sizeof(err)) == -1) {
		log_warnx("sandbox %s: fork: %s", s->id, err);
		_exit(COPY_FAILED);
	}
	/* The two workspaces and the standard streams (the log's), no
	 * more: the vmm's other descriptors (other sandboxes' workspaces,
	 * egress budgets, links) have no business beside a tree a guest
	 * wrote. Above 2, where nothing else is kept. */
	if ((from = fcntl(src->ws_fd, F_DUPFD_CLOEXEC, 3)) == -1 ||
	    (to = fcntl(s->ws_fd, F_DUPFD_CLOEXEC, from + 1)) == -1 ||
	    dup2(from, 3) != 3 || dup2(to, 4) != 4 ||
	    syscall(SYS_close_range, 5U, ~0U, 0U) != 0) {
		log_warn("sandbox %s: fork: descriptors", s->id);
		_exit(COPY_FAILED);
	}
	memset(&lim, 0, sizeof(lim));
	lim.max_bytes = ctx->config != NULL ? ctx->config->workspace_max : 0;
	lim.max_entries = WS_USAGE_MAX_ENTRIES;
	lim.max_depth = WS_USAGE_MAX_DEPTH;
	if (tree_copy(3, 4, &lim) == -1) {
		if (errno == EDQUOT || errno == E2BIG)
			_exit(COPY_TOOBIG);
		log_warn("sandbox %s: fork of %s", s->id, src->id);
		_exit(COPY_FAILED);
	}
	_exit(COPY_OK);
}

uint32_t
vmm_fork_start(struct proc_ctx *ctx, struct vmm_state *vs, const struct msg *m,
    const struct sandbox *src, struct sandbox *s, uint32_t contexts_max)
{
	struct vmm_fork *f = NULL;
	uint32_t st;
	size_t i;
	pid_t pid;

	for (i = 0; i < VMM_FORKS_MAX && f == NULL; i++)
		if (!vs->forks[i].used)
			f = &vs->forks[i];
	if (f == NULL)
		return SBX_E_FORK_BUSY;
	if ((st = vmm_contexts_fork_check(vs, src, contexts_max)) != SBX_OK)
		return st;
	switch (pid = fork()) {
	case -1:
		log_warn("sandbox %s: fork", s->id);
		return SBX_E_INTERNAL;
	case 0:
		copy_child(ctx, src, s);
	default:
		break;
	}
	memset(f, 0, sizeof(*f));
	if ((f->pidfd = (int)syscall(SYS_pidfd_open, pid, 0)) == -1) {
		log_warn("sandbox %s: pidfd_open", s->id);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return SBX_E_INTERNAL;
	}
	f->used = 1;
	f->pid = pid;
	f->reqid = m->hdr.reqid;
	f->from = m->from;
	f->sbx = (size_t)(s - vs->sbx);
	strlcpy(f->src, src->id, sizeof(f->src));
	f->deadline = mono_ms() + VMM_FORK_MS;
	s->forking = 1;
	vmm_contexts_fork_prepare(vs, src);
	return SBX_OK;
}

int
vmm_fork_pollfd(const struct vmm_state *vs, size_t i)
{
	return vs->forks[i].used ? vs->forks[i].pidfd : -1;
}

/* Answer fork f's create with r, and free its slot. */
static void
fork_answer(struct proc_ctx *ctx, struct vmm_fork *f,
    const struct msg_vmm_sandbox_info *r)
{
	if (ctx->fd[f->from] >= 0)
		msg_send(ctx->fd[f->from], MSG_VMM_SANDBOX_INFO, MSG_F_REPLY,
		    f->reqid, r, sizeof(*r), -1);
	memset(f, 0, sizeof(*f));
	f->pidfd = -1;
}

/* The copy is done: the contexts come along once their saves have ended
 * (or the fork's time is up: those still saving come with their
 * journals), then the fork is answered. */
static void
fork_finish(struct proc_ctx *ctx, struct vmm_state *vs, struct vmm_fork *f)
{
	struct sandbox *s = &vs->sbx[f->sbx];
	struct msg_vmm_sandbox_info r;

	if (vmm_contexts_saving(vs, f->src) && mono_ms() <= f->deadline)
		return;
	memset(&r, 0, sizeof(r));
	if (!s->used || !s->forking)
		r.status = SBX_E_INTERNAL; /* never: forks do not expire */
	else {
		s->forking = 0;
		vmm_contexts_fork_sandbox(ctx, vs, f->src, s);
		vmm_sandbox_info(&r, s);
		log_info("sandbox %s forked from %s", s->id, f->src);
	}
	fork_answer(ctx, f, &r);
}

void
vmm_forks_saved(struct proc_ctx *ctx, struct vmm_state *vs)
{
	size_t i;

	for (i = 0; i < VMM_FORKS_MAX; i++)
		if (vs->forks[i].used && vs->forks[i].copied)
			fork_finish(ctx, vs, &vs->forks[i]);
}

void
vmm_fork_event(struct proc_ctx *ctx, struct vmm_state *vs, size_t i)
{
	struct vmm_fork *f = &vs->forks[i];
	struct sandbox *s = &vs->sbx[f->sbx];
	struct msg_vmm_sandbox_info r;
	int status = 0;

	if (!f->used || waitpid(f->pid, &status, WNOHANG) != f->pid)
		return;
	close(f->pidfd);
	f->pidfd = -1;
	memset(&r, 0, sizeof(r));
	if (!s->used || !s->forking)
		r.status = SBX_E_INTERNAL; /* never: forks do not expire */
	else if (WIFEXITED(status) && WEXITSTATUS(status) == COPY_OK) {
		f->copied = 1;
		fork_finish(ctx, vs, f);
		return;
	} else {
		r.status =
		    (WIFEXITED(status) && WEXITSTATUS(status) == COPY_TOOBIG) ||
		        (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
		    ? SBX_E_FORK_TOOBIG
		    : SBX_E_INTERNAL;
		log_info("sandbox %s: the fork of %s refused: %s", s->id,
		    f->src,
		    r.status == SBX_E_FORK_TOOBIG
		        ? "its workspace is too large to copy"
		        : "the copy failed");
		s->forking = 0;
		vmm_sandbox_discard(vs, s);
	}
	fork_answer(ctx, f, &r);
}

void
vmm_forks_tick(struct proc_ctx *ctx, struct vmm_state *vs)
{
	uint64_t now = mono_ms();
	size_t i;

	for (i = 0; i < VMM_FORKS_MAX; i++) {
		if (!vs->forks[i].used || now <= vs->forks[i].deadline)
			continue;
		if (vs->forks[i].copied)
			fork_finish(ctx, vs, &vs->forks[i]);
		else {
			kill(vs->forks[i].pid, SIGKILL);
			vs->forks[i].deadline = UINT64_MAX;
		}
	}
}

void
vmm_forks_kill_all(struct vmm_state *vs)
{
	size_t i;

	for (i = 0; i < VMM_FORKS_MAX; i++)
		if (vs->forks[i].used && !vs->forks[i].copied)
			kill(vs->forks[i].pid, SIGKILL);
}
