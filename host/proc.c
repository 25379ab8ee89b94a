/*
 * The process framework: the process table, the child's start-up (title,
 * privilege drop, seccomp) and its message loop, and the control handlers
 * every child shares.
 */
#include <sys/capability.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "host/config.h"
#include "host/grant.h"
#include "host/msg.h"
#include "host/proc.h"
#include "host/seccomp_filters.h"
#include "host/vm_confine.h"
#include "host/vmm/vmm.h"
#include "lib/clock.h"
#include "lib/log.h"

#define P(x) PROC_BIT(PROC_##x)

const struct proc_info proc_table[PROC_COUNT] = {
	[PROC_PARENT] = { "parent", PROC_PARENT, NULL,
	    P(FRONT) | P(POLICY) | P(VMM) | P(STORE) | P(EGRESS),
	    PROC_ROOT_EMPTY, NULL },
	[PROC_FRONT] = { "front", PROC_FRONT, front_main,
	    P(POLICY) | P(VMM) | P(STORE) | P(EGRESS), PROC_ROOT_EMPTY,
	    &seccomp_front },
	[PROC_POLICY] = { "policy", PROC_POLICY, policy_main,
	    P(FRONT) | P(VMM) | P(STORE) | P(EGRESS), PROC_ROOT_EMPTY,
	    &seccomp_policy },
	[PROC_VMM] = { "vmm", PROC_VMM, vmm_main,
	    P(FRONT) | P(POLICY) | P(STORE) | P(EGRESS), PROC_ROOT_STATE,
	    &seccomp_vmm },
	[PROC_STORE] = { "store", PROC_STORE, store_main,
	    P(FRONT) | P(POLICY) | P(VMM) | P(EGRESS), PROC_ROOT_DB,
	    &seccomp_store },
	[PROC_EGRESS] = { "egress", PROC_EGRESS, egress_main,
	    P(FRONT) | P(POLICY) | P(VMM) | P(STORE), PROC_ROOT_EMPTY,
	    &seccomp_egress },
};

const struct proc_info *
proc_by_name(const char *name)
{
	size_t i;

	for (i = 0; i < nitems(proc_table); i++)
		if (strcmp(proc_table[i].name, name) == 0)
			return &proc_table[i];
	return NULL;
}

const char *
proc_name(enum proc_id id)
{
	if ((unsigned)id >= PROC_COUNT)
		return "unknown";
	return proc_table[id].name;
}

int
proc_linked(enum proc_id a, enum proc_id b)
{
	if ((unsigned)a >= PROC_COUNT || (unsigned)b >= PROC_COUNT || a == b)
		return 0;
	if (a == PROC_PARENT || b == PROC_PARENT)
		return 1;
	return (proc_table[a].peers & PROC_BIT(b)) != 0 &&
	    (proc_table[b].peers & PROC_BIT(a)) != 0;
}

/* The bounding set needs CAP_SETPCAP, so it goes while still root. */
static int
drop_bounding(void)
{
	int c;

	for (c = 0; c <= CAP_LAST_CAP; c++)
		if (prctl(PR_CAPBSET_READ, c) == 1 &&
		    prctl(PR_CAPBSET_DROP, c) == -1 && errno != EINVAL)
			return -1;
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) == -1 &&
	    errno != EINVAL)
		return -1;
	return 0;
}

static int
drop_caps(void)
{
	cap_t caps;
	int rc;

	if ((caps = cap_init()) == NULL)
		return -1;
	rc = cap_set_proc(caps);
	cap_free(caps);
	return rc;
}

/*
 * The root as a mount namespace of the process's own whose root is the
 * directory (pivot_root), not a chroot: Linux refuses a user namespace
 * to a chrooted process, and the trap platform's stub, which the vmm's
 * vm processes start, lives in one (docs/vmm.md). The old root is
 * detached, so nothing of the host's file system is reachable.
 * 0, or -1 with errno (nothing changed but, maybe, the namespace).
 */
static int
pivot_into(const char *root)
{
	if (unshare(CLONE_NEWNS) == -1 ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == -1 ||
	    mount(root, root, NULL, MS_BIND | MS_REC, NULL) == -1 ||
	    chdir(root) == -1 || syscall(SYS_pivot_root, ".", ".") == -1 ||
	    umount2(".", MNT_DETACH) == -1 || chdir("/") == -1)
		return -1;
	return 0;
}

static int privdrop(const char *root, const char *user, int ns);

int
proc_privdrop_ns(const char *root, const char *user)
{
	return privdrop(root, user, 1);
}

int
proc_privdrop(const char *root, const char *user)
{
	return privdrop(root, user, 0);
}

static int
privdrop(const char *root, const char *user, int ns)
{
	struct passwd *pw = NULL;
	uid_t uid;
	gid_t gid;

	if (geteuid() != 0) {
		log_warnx("%s: not root: no chroot, no user change", __func__);
		goto nnp;
	}
	if (user != NULL && (pw = getpwnam(user)) == NULL) {
		log_warnx("%s: no user %s", __func__, user);
		return -1;
	}
	if (root != NULL && ns && pivot_into(root) == -1) {
		log_warn("%s: a mount namespace at %s; chroot instead",
		    __func__, root);
		ns = 0;
	}
	if (root != NULL && !ns) {
		if (chroot(root) == -1) {
			log_warn("%s: chroot %s", __func__, root);
			return -1;
		}
		if (chdir("/") == -1) {
			log_warn("%s: chdir /", __func__);
			return -1;
		}
	}
	if (pw != NULL) {
		uid = pw->pw_uid;
		gid = pw->pw_gid;
		if (setgroups(1, &gid) == -1 ||
		    setresgid(gid, gid, gid) == -1) {
			log_warn("%s: groups of %s", __func__, user);
			return -1;
		}
		if (drop_bounding() == -1) {
			log_warn("%s: bounding set", __func__);
			return -1;
		}
		if (setresuid(uid, uid, uid) == -1) {
			log_warn("%s: setresuid %s", __func__, user);
			return -1;
		}
	}
	if (drop_caps() == -1) {
		log_warn("%s: capabilities", __func__);
		return -1;
	}
nnp:
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1) {
		log_warn("%s: PR_SET_NO_NEW_PRIVS", __func__);
		return -1;
	}
	return 0;
}

static int
fd_open(int fd)
{
	return fcntl(fd, F_GETFD) != -1;
}

/*
 * The vmm holds six descriptors for each live context (a thousand of
 * them: VMM_CONTEXTS_MAX) beside its runs': its soft limit is raised
 * toward the hard one, which stays the operator's. Its vm processes
 * inherit it; each guest's own table is bounded by the VMM (vm->nfds).
 */
#define VMM_NOFILE_WANT 8192
static void
vmm_raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == -1 ||
	    rl.rlim_cur >= VMM_NOFILE_WANT)
		return;
	rl.rlim_cur =
	    rl.rlim_max < VMM_NOFILE_WANT ? rl.rlim_max : VMM_NOFILE_WANT;
	if (setrlimit(RLIMIT_NOFILE, &rl) == -1)
		log_warn("%s: RLIMIT_NOFILE", __func__);
	else if (rl.rlim_cur < VMM_NOFILE_WANT)
		log_warnx(
		    "%s: at most %llu descriptors (the hard limit): fewer "
		    "live contexts fit",
		    __func__, (unsigned long long)rl.rlim_cur);
}

void
proc_child_start(const struct proc_info *info, const char *root,
    const char *user, int foreground, int verbosity)
{
	static char ident[32];
	struct proc_ctx ctx;
	struct msg_ready ready;
	enum proc_id p;
	unsigned scf = 0;
	int rc;

	/*
	 * Close inherited descriptors first, so none (a directory above the
	 * chroot, say) survives into the jail, and before openlog so the
	 * syslog socket survives.
	 */
	closefrom(PROC_FD_FIRST_FREE);
	snprintf(ident, sizeof(ident), "keepd/%s", info->name);
	log_init(foreground, verbosity, ident);
	setproctitle("%s", info->name);
	/* Re-executed through /proc/self/exe, the command name is "exe". */
	prctl(PR_SET_NAME, "keepd", 0, 0, 0);
	if (sodium_init() < 0)
		fatalx("%s: sodium_init", __func__);

	memset(&ctx, 0, sizeof(ctx));
	ctx.self = info->id;
	for (p = 0; p < PROC_COUNT; p++) {
		ctx.fd[p] = -1;
		if (proc_linked(info->id, p) && fd_open(PROC_FD_LINK(p)))
			ctx.fd[p] = PROC_FD_LINK(p);
	}
	if (ctx.fd[PROC_PARENT] == -1)
		fatalx("%s: no link to the parent", __func__);
	ctx.kvm_fd =
	    info->id == PROC_VMM && fd_open(PROC_FD_KVM) ? PROC_FD_KVM : -1;
	ctx.listen_fd = info->id == PROC_FRONT && fd_open(PROC_FD_LISTEN)
	    ? PROC_FD_LISTEN
	    : -1;

	/* The vmm's vm processes join network namespaces of their own,
	 * made by a child forked before the vmm's chroot (host/vm_confine.h);
	 * its filter lets them, and their sockets there, through. */
	ctx.netns_fd = -1;
	if (info->id == PROC_VMM) {
		ctx.netns_fd = vm_netns_maker_start(user);
		scf = SCF_VM_NET | SCF_VM_NETNS;
		/* Its filter must let its vm processes' internet sockets
		 * through (filters stack), so the vmm itself, and whatever it
		 * starts that joins no sandbox's namespace, gets a network
		 * namespace with no interface at all: a vmm taken over opens
		 * those sockets where nothing is reachable. Without
		 * CAP_SYS_ADMIN (unprivileged, or a unit's bounding set) it
		 * cannot, and says so (docs/threat-model.md). */
		if (unshare(CLONE_NEWNET) == -1)
			log_warn(
			    "%s: no network namespace of the vmm's own "
			    "(its guests' internet sockets rest on its code)",
			    __func__);
		vmm_raise_nofile();
		vmm_host_cpus_init();
		/* The host's clocksource, which decides whether guests get
		 * a vDSO, is in /sys, out of sight past the chroot. */
		vmm_prepare_clocks();
	}
	/* proc_privdrop_ns (a mount namespace, so the trap platform's stubs
	 * get user namespaces) is not used yet: keep status and the privsep
	 * checks read each child's root through /proc (docs/vmm.md). */
	if (proc_privdrop(root, user) == -1)
		fatalx("%s: privilege drop failed", __func__);
	if (seccomp_filter_install_flags(info->filter, scf) == -1)
		fatal("%s: seccomp", __func__);

	memset(&ready, 0, sizeof(ready));
	ready.proc = info->id;
	ready.seccomp = 1;
	ready.pid = (uint64_t)getpid();
	if (msg_send(ctx.fd[PROC_PARENT], MSG_CTL_READY, 0, 0, &ready,
	        sizeof(ready), -1) != MSG_OK)
		fatal("%s: ready", __func__);
	rc = info->main(&ctx);
	exit(rc == 0 ? 0 : 1);
}

#define PROC_LINK_BATCH 32

int
proc_link_event(
    struct proc_ctx *ctx, enum proc_id from, void *buf, size_t bufsz)
{
	int err, i, link;

	if ((unsigned)from >= PROC_COUNT || (link = ctx->fd[from]) < 0)
		return 0;
	/* What is queued, up to a bound so that one busy link cannot starve
	 * the others: a poll per message would cost a system call each. */
	err = msg_dispatch(ctx, from, buf, bufsz);
	for (i = 1; err == MSG_OK && i < PROC_LINK_BATCH && !ctx->quit &&
	     ctx->fd[from] == link;
	     i++)
		err = msg_dispatch_nowait(ctx, from, buf, bufsz);
	if (err == MSG_OK || err == MSG_ERR_AGAIN || ctx->fd[from] != link)
		return 0;
	if (from == PROC_PARENT) {
		/* Without the parent there is nobody to answer to: leave. */
		log_warnx("%s: parent link: %s", __func__, msg_strerror(err));
		return -1;
	}
	log_info("%s: link to %s closed (%s)", __func__, proc_name(from),
	    msg_strerror(err));
	close(ctx->fd[from]);
	ctx->fd[from] = -1;
	return 0;
}

int
proc_grant_verify(const struct proc_ctx *ctx, const struct msg *m,
    const void *grant, size_t len, struct grant *out)
{
	if ((ctx->grant_keys_held & PROC_BIT(ctx->self)) == 0)
		return GRANT_ERR_ARG;
	return grant_verify(grant, len, ctx->self, ctx->grant_key[ctx->self],
	    grant_now_ms(), m->hdr.reqid, out);
}

int
proc_loop(struct proc_ctx *ctx)
{
	return proc_loop_every(ctx, 0, NULL, NULL);
}

int
proc_loop_every(
    struct proc_ctx *ctx, unsigned every_ms, void (*tick)(void *), void *arg)
{
	struct pollfd pfd[PROC_COUNT + PROC_POLL_MORE];
	enum proc_id who[PROC_COUNT];
	uint64_t next = mono_ms() + every_ms, now;
	uint8_t *buf;
	size_t n, i, more;
	int timeout, w;

	if ((buf = malloc(MSG_BUFSZ)) == NULL)
		fatal("%s", __func__);
	while (!ctx->quit) {
		n = 0;
		for (i = 0; i < PROC_COUNT; i++) {
			if (ctx->fd[i] < 0)
				continue;
			pfd[n].fd = ctx->fd[i];
			pfd[n].events = POLLIN;
			pfd[n].revents = 0;
			who[n++] = (enum proc_id)i;
		}
		more = ctx->poll_more != NULL
		    ? ctx->poll_more(ctx, pfd + n, PROC_POLL_MORE)
		    : 0;
		if (more > PROC_POLL_MORE)
			more = PROC_POLL_MORE;
		timeout = -1;
		if (tick != NULL) {
			now = mono_ms();
			timeout = next > now ? (int)(next - now) : 0;
		}
		if (ctx->wake_in != NULL && (w = ctx->wake_in(ctx)) >= 0 &&
		    (timeout < 0 || w < timeout))
			timeout = w;
		if (poll(pfd, n + more, timeout) == -1) {
			if (errno == EINTR)
				continue;
			fatal("%s: poll", __func__);
		}
		for (i = 0; i < n && !ctx->quit; i++) {
			if (pfd[i].revents == 0)
				continue;
			if (proc_link_event(ctx, who[i], buf, MSG_BUFSZ) == -1)
				ctx->quit = 1;
		}
		if (more > 0 && ctx->poll_ready != NULL && !ctx->quit)
			ctx->poll_ready(ctx, pfd + n, more);
		if (ctx->on_round_end != NULL)
			ctx->on_round_end(ctx);
		if (tick != NULL && !ctx->quit && mono_ms() >= next) {
			tick(arg);
			next = mono_ms() + every_ms;
		}
	}
	free(buf);
	return 0;
}

void
proc_drain(struct proc_ctx *ctx)
{
	uint8_t *buf;
	unsigned n;
	int p;

	if ((buf = malloc(MSG_BUFSZ)) == NULL)
		return;
	for (p = 0; p < PROC_COUNT; p++) {
		if (p == PROC_PARENT)
			continue;
		for (n = 0; n < PROC_DRAIN_MAX && ctx->fd[p] >= 0 &&
		     msg_dispatch_nowait(
		         ctx, (enum proc_id)p, buf, MSG_BUFSZ) == MSG_OK;
		     n++)
			;
	}
	free(buf);
}

int
msg_h_ping(struct proc_ctx *ctx, const struct msg *m)
{
	struct msg_ping p;

	memcpy(&p, m->data, sizeof(p));
	p.pid = (uint64_t)getpid();
	p.nrecv = ctx->nrecv;
	p.ndropped = ctx->ndropped;
	log_debug("%s: ping %llu from %s", __func__, (unsigned long long)p.seq,
	    proc_name(m->from));
	msg_reply(ctx, m, MSG_CTL_PONG, &p, sizeof(p), -1);
	return 0;
}

int
msg_h_grant_key(struct proc_ctx *ctx, const struct msg *m)
{
	struct msg_grant_key k;
	uint32_t link;

	memcpy(&k, m->data, sizeof(k));
	link = k.link;
	if (k.link >= PROC_COUNT || k.link == PROC_PARENT || k.pad != 0) {
		sodium_memzero(&k, sizeof(k));
		return -1;
	}
	memcpy(ctx->grant_key[k.link], k.key, sizeof(k.key));
	ctx->grant_keys_held |= PROC_BIT(k.link);
	sodium_memzero(&k, sizeof(k));
	log_debug("%s: key for link %s", __func__, proc_name(link));
	return 0;
}

int
msg_h_peer(struct proc_ctx *ctx, const struct msg *m)
{
	struct msg_peer pe;

	memcpy(&pe, m->data, sizeof(pe));
	if (pe.peer >= PROC_COUNT || pe.pad != 0 ||
	    !proc_linked(ctx->self, pe.peer) || pe.peer == PROC_PARENT) {
		close(m->fd);
		return -1;
	}
	if (ctx->fd[pe.peer] >= 0)
		close(ctx->fd[pe.peer]);
	ctx->fd[pe.peer] = m->fd;
	log_info("%s: new link to %s", __func__, proc_name(pe.peer));
	if (ctx->on_peer != NULL)
		ctx->on_peer(ctx, pe.peer);
	return 0;
}

int
msg_h_shutdown(struct proc_ctx *ctx, const struct msg *m)
{
	log_info("%s: shutting down", __func__);
	ctx->quit = 1;
	return 0;
}

int
msg_h_stats(struct proc_ctx *ctx, const struct msg *m)
{
	struct msg_stats st;

	memset(&st, 0, sizeof(st));
	st.nrecv = ctx->nrecv;
	st.ndropped = ctx->ndropped;
	msg_reply(ctx, m, MSG_CTL_STATS_REPLY, &st, sizeof(st), -1);
	return 0;
}

int
msg_h_config(struct proc_ctx *ctx, const struct msg *m)
{
	struct msg_config *c;

	if ((c = malloc(sizeof(*c))) == NULL)
		return -1;
	memcpy(c, m->data, sizeof(*c));
	if (c->tls > 1 || c->memory_default > c->memory_max ||
	    c->timeout_default_ms > c->timeout_max_ms ||
	    strnlen(c->node, sizeof(c->node)) > CONFIG_NODE_MAX ||
	    strspn(c->node, "abcdefghijklmnopqrstuvwxyz0123456789") !=
	        strlen(c->node) ||
	    memchr(c->ports_domain, '\0', sizeof(c->ports_domain)) == NULL ||
	    (c->ports_domain[0] != '\0' &&
	        !config_valid_domain(c->ports_domain))) {
		free(c);
		return -1;
	}
	free(ctx->config);
	ctx->config = c;
	log_debug("%s: configuration received", __func__);
	return 0;
}

int
msg_h_pubkeys(struct proc_ctx *ctx, const struct msg *m)
{
	struct msg_pubkeys *k, **slot;
	uint32_t i;

	if ((k = malloc(sizeof(*k))) == NULL)
		return -1;
	memcpy(k, m->data, sizeof(*k));
	slot = k->kind == MSG_PUBKEYS_TOKEN ? &ctx->token_keys
	    : k->kind == MSG_PUBKEYS_IMAGE  ? &ctx->image_keys
	                                    : NULL;
	if (slot == NULL || k->n > MSG_PUBKEYS_MAX)
		goto bad;
	for (i = 0; i < MSG_PUBKEYS_MAX; i++)
		if (memchr(k->keys[i], '\0', MSG_PUBKEY_LEN) == NULL)
			goto bad;
	free(*slot);
	*slot = k;
	log_info("%s: %u %s key(s)", __func__, k->n,
	    k->kind == MSG_PUBKEYS_TOKEN ? "token issuer" : "image signing");
	return 0;
bad:
	free(k);
	return -1;
}
