/*
 * Templates in keepd (docs/templates.md): for an image that declares one
 * (/etc/keep/template, image/template.h), the vmm forks a holder
 * process, `keepd: template IMAGE`, that boots the template command to
 * its ready call and parks it (host/vmm/template.c). A run of a command
 * the template serves is then a clone: the vmm hands the holder the
 * run's descriptors over their socketpair, the holder forks with
 * CLONE_PARENT, so the clone is the vmm's own child like any `keepd: vm`
 * process (waited for, killed and reaped the same way), and the clone
 * becomes the run's vm process on a copy-on-write copy of the template.
 *
 * One template per (image, command, guest memory size): the first run
 * that could use one starts its boot and runs cold, as do the runs that
 * come while it boots. The image's code is all that ever ran in a
 * template, so templates are shared by every principal; a slot records
 * the principal whose code wrote it, were there one, and is then never
 * handed to another. A template dies with its image (a new upload or a
 * delete), and the oldest goes when the table is full.
 *
 * The holder keeps one spare clone ahead of the runs: forked, its VM
 * already rebuilt over the copy-on-write memory (the rebuild of a 1 GiB
 * guest's VM costs milliseconds here), waiting on the socketpair. It is
 * the spare that takes the next request and becomes the run's vm
 * process; the holder then forks the next spare.
 *
 * holder or spare <-> vmm, on the socketpair (SOCK_SEQPACKET), fixed
 * sizes:
 *	-> vmm	struct tpl_status: ready (with the largest request that
 *		fits), failed (with a reason), spare (its pid, so the vmm can
 *		reap one that never ran), cloned (the spare that took a
 *		request: its pid), refused (a malformed request)
 *	vmm ->	struct tpl_clone + TPL_CLONE_FDS descriptors, read by the
 *		spare
 */
#include <sys/prctl.h>
#include <sys/socket.h>

#include <sched.h>

#include "host/vmmproc/vmm_int.h"
#include "host/vm_confine.h"
#include "image/template.h"

#define TPL_BOOT_TIMEOUT_MS 120000
#define TPL_REPLY_MS 5000
/* How long the holder waits, after a spare took a run, before it makes
 * the next one while that run goes on and no request waits. */
#define TPL_SPARE_DEFER_MS 50
#define TPL_RETRY_MS 60000 /* after a failed boot */
#define TPL_MAGIC 0x4b54504cU /* "KTPL" */

enum { TPL_BOOTING = 1, TPL_READY, TPL_FAILED };
enum {
	TPL_ST_READY = 1,
	TPL_ST_FAILED,
	TPL_ST_CLONED,
	TPL_ST_REFUSED,
	TPL_ST_SPARE /* pid: a new spare, a child of the vmm */
};

struct tpl_status {
	uint32_t magic;
	uint32_t status; /* TPL_ST_* */
	int32_t pid; /* cloned: the clone's host pid */
	uint32_t pad;
	uint64_t request_max; /* ready: bytes of argv and envp that fit */
	uint64_t memory; /* ready: guest bytes the template holds */
	char reason[160];
};

/* The descriptors of a clone request, in this order. */
enum {
	TPL_FD_STRINGS, /* memfd: nargs then nenv NUL-terminated strings */
	TPL_FD_STDIN,
	TPL_FD_OUT,
	TPL_FD_ERR,
	TPL_FD_RESULT, /* memfd holding the struct vmm_result */
	TPL_FD_WORKSPACE,
	TPL_FD_EGRESS, /* the run's egress socket (vm end) */
	TPL_FD_EGRESS_SHM,
	TPL_FD_COUNT, /* memfd: the sandbox's shared quota count */
	TPL_FD_NETNS_USER, /* its sandbox's namespaces (struct sandbox), */
	TPL_FD_NETNS_NET, /* or the workspace again when net is 0 */
	TPL_FD_BUDGET, /* its principal's egress budget, or the workspace
	                * again when budget is 0 */
	TPL_FD_EGRESS_DIRECT, /* the run's direct link to egress (vm end),
	                       * or the workspace again when direct is 0 */
	TPL_CLONE_FDS
};

struct tpl_clone {
	uint32_t magic;
	uint32_t nargs, nenv;
	uint32_t net; /* 1: TPL_FD_NETNS_* are its sandbox's namespaces */
	uint32_t budget; /* 1: TPL_FD_BUDGET is its principal's budget */
	uint32_t direct; /* 1: TPL_FD_EGRESS_DIRECT is the run's link */
	uint64_t strings_len;
	uint64_t timeout_ms, output_max, workspace_max;
	uint64_t egress_max; /* the grant's egress bytes, 0 none */
	char id[SBX_ID_MAX]; /* the sandbox, for the process title */
};

/* ---- the holder process ------------------------------------------------ */

static char tpl_tail[200]; /* the end of the template boot's output */
static size_t tpl_tail_len;

static void
tail_sink(void *arg, int fd, const void *buf, size_t len)
{
	const char *p = buf;

	(void)arg;
	(void)fd;
	if (len >= sizeof(tpl_tail)) {
		p += len - sizeof(tpl_tail);
		len = sizeof(tpl_tail);
		tpl_tail_len = 0;
	}
	if (tpl_tail_len + len > sizeof(tpl_tail)) {
		size_t drop = tpl_tail_len + len - sizeof(tpl_tail);

		memmove(tpl_tail, tpl_tail + drop, tpl_tail_len - drop);
		tpl_tail_len -= drop;
	}
	memcpy(tpl_tail + tpl_tail_len, p, len);
	tpl_tail_len += len;
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

static void
holder_send(int sock, uint32_t status, int32_t pid, uint64_t request_max,
    uint64_t memory, const char *reason)
{
	struct tpl_status st;

	memset(&st, 0, sizeof(st));
	st.magic = TPL_MAGIC;
	st.status = status;
	st.pid = pid;
	st.request_max = request_max;
	st.memory = memory;
	strlcpy(st.reason, reason, sizeof(st.reason));
	if (send(sock, &st, sizeof(st), MSG_NOSIGNAL) != (ssize_t)sizeof(st))
		_exit(1);
}

/* A clone request: 1 when it is exactly its size with TPL_CLONE_FDS
 * descriptors; -1 when malformed (whatever came is closed); 0 when the
 * vmm closed the link or it failed. */
static int
holder_recv(int sock, struct tpl_clone *q, int fds[TPL_CLONE_FDS])
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int) * TPL_CLONE_FDS)];
	} u;
	struct iovec iov = { q, sizeof(*q) };
	struct msghdr mh;
	struct cmsghdr *c;
	size_t nfd = 0, i;
	ssize_t n;

	memset(&mh, 0, sizeof(mh));
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = u.buf;
	mh.msg_controllen = sizeof(u.buf);
	while (
	    (n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC)) == -1 && errno == EINTR)
		;
	if (n <= 0)
		return 0;
	for (c = CMSG_FIRSTHDR(&mh); c != NULL; c = CMSG_NXTHDR(&mh, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
			size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);

			for (i = 0; i < k; i++) {
				int fd;

				memcpy(&fd, CMSG_DATA(c) + i * sizeof(int),
				    sizeof(int));
				if (nfd < TPL_CLONE_FDS)
					fds[nfd++] = fd;
				else
					close(fd);
			}
		}
	if (n != (ssize_t)sizeof(*q) || nfd != TPL_CLONE_FDS ||
	    (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0 ||
	    q->magic != TPL_MAGIC || q->nargs == 0 || q->budget > 1 ||
	    q->direct > 1 || q->nargs > RUN_MAX_ARGS + 1 ||
	    q->nenv > 2 * RUN_MAX_ENV ||
	    q->strings_len > RUN_MAX_INPUT + SBX_ENV_MAX ||
	    memchr(q->id, '\0', sizeof(q->id)) == NULL) {
		for (i = 0; i < nfd; i++)
			close(fds[i]);
		return -1;
	}
	return 1;
}

/* Split the strings memfd into argv and envp (each NULL-terminated):
 * exactly nargs + nenv NUL-terminated strings, nothing after. */
static int
clone_strings(
    const struct tpl_clone *q, int fd, char **buf, char ***argv, char ***envp)
{
	size_t i, off = 0, n = (size_t)q->nargs + q->nenv;
	char **v;

	if ((*buf = malloc(q->strings_len + 1)) == NULL ||
	    (v = calloc(n + 2, sizeof(*v))) == NULL)
		return -1;
	if (pread(fd, *buf, q->strings_len, 0) != (ssize_t)q->strings_len)
		return -1;
	(*buf)[q->strings_len] = '\0';
	for (i = 0; i < n; i++) {
		char *nul = memchr(*buf + off, '\0', q->strings_len - off);

		if (off >= q->strings_len || nul == NULL)
			return -1;
		v[i + (i >= q->nargs)] = *buf + off;
		off = (size_t)(nul - *buf) + 1;
	}
	if (off != q->strings_len)
		return -1;
	v[q->nargs] = NULL;
	v[n + 1] = NULL;
	*argv = v;
	*envp = v + q->nargs + 1;
	return 0;
}

/* In the clone: become the run's vm process, run, exit. */
static void __attribute__((noreturn))
clone_run(struct proc_ctx *ctx, struct vmm_template *t, int sock,
    const struct tpl_clone *q, int fds[TPL_CLONE_FDS])
{
	struct vmm_egress_run er;
	struct vmm_result *res;
	struct vmm_config cfg;
	char **argv, **envp, *buf, err[160];
	int outfds[2] = { fds[TPL_FD_OUT], fds[TPL_FD_ERR] }, rc, net;

	close(sock);
	setpgid(0, 0);
	setproctitle("vm %s", q->id);
	res = mmap(NULL, sizeof(*res), PROT_READ | PROT_WRITE, MAP_SHARED,
	    fds[TPL_FD_RESULT], 0);
	if (res == MAP_FAILED)
		_exit(2);
	/* As every vm process (vmm_vm_process): its sandbox's network, its
	 * workspace only, no signals or sockets beyond its own
	 * (host/vm_confine.c). */
	net = q->net
	    ? vm_confine_net_join(fds[TPL_FD_NETNS_USER], fds[TPL_FD_NETNS_NET],
	          fds[TPL_FD_WORKSPACE], err, sizeof(err))
	    : 0;
	close(fds[TPL_FD_NETNS_USER]);
	close(fds[TPL_FD_NETNS_NET]);
	if (net == -1 ||
	    vm_confine(fds[TPL_FD_WORKSPACE], net, err, sizeof(err)) == -1) {
		strlcpy(res->reason, "error: ", sizeof(res->reason));
		strlcat(res->reason, err, sizeof(res->reason));
		res->status = VMM_FAULT;
		_exit(2);
	}
	if (clone_strings(q, fds[TPL_FD_STRINGS], &buf, &argv, &envp) != 0) {
		strlcpy(res->reason, "error: the run's arguments",
		    sizeof(res->reason));
		res->status = VMM_FAULT;
		_exit(2);
	}
	close(fds[TPL_FD_STRINGS]);
	memset(&cfg, 0, sizeof(cfg));
	cfg.net = net;
	if (net == 1)
		vmm_dns_take(&cfg);
	cfg.kvm_fd = ctx->kvm_fd;
	cfg.platform = vmm_ctx_platform(ctx);
	cfg.argv = (const char *const *)argv;
	cfg.envp = (const char *const *)envp;
	cfg.workspace_fd = fds[TPL_FD_WORKSPACE];
	cfg.stdin_fd = fds[TPL_FD_STDIN];
	cfg.output = out_sink;
	cfg.output_arg = outfds;
	cfg.timeout_ms = q->timeout_ms;
	cfg.output_max = q->output_max;
	cfg.egress_max = q->egress_max;
	cfg.workspace_max = q->workspace_max;
	if (cfg.workspace_max != 0)
		cfg.workspace_count = vmm_count_map(fds[TPL_FD_COUNT]);
	close(fds[TPL_FD_COUNT]);
	if (q->budget &&
	    (cfg.egress_budget = vmm_budget_map(fds[TPL_FD_BUDGET])) == NULL) {
		strlcpy(res->reason, "error: the egress budget",
		    sizeof(res->reason));
		res->status = VMM_FAULT;
		_exit(2);
	}
	close(fds[TPL_FD_BUDGET]);
	memset(&er, 0, sizeof(er));
	er.fd = -1;
	er.shm = fds[TPL_FD_EGRESS_SHM];
	er.direct_vm = -1;
	if (q->direct)
		er.direct_vm = fds[TPL_FD_EGRESS_DIRECT];
	else
		close(fds[TPL_FD_EGRESS_DIRECT]);
	vmm_egress_child(&er, fds[TPL_FD_EGRESS], &cfg);
	rc = vmm_template_run(t, &cfg, res, err, sizeof(err));
	if (rc != VMM_OK) {
		strlcpy(res->reason, vmm_strerror(rc), sizeof(res->reason));
		strlcat(res->reason, ": ", sizeof(res->reason));
		strlcat(res->reason, err, sizeof(res->reason));
		_exit(3);
	}
	vmm_egress_child_done(res);
	_exit(0);
}

/*
 * A spare: rebuild the VM now, then wait for the holder's word that it
 * has announced this spare to the vmm (a byte on go, end of file if the
 * holder died), then for a request, and run it. It tells the holder (one
 * byte on taken) when it has taken one.
 *
 * The word orders the socketpair: the vmm reads "spare P" before "cloned
 * P". Without it a holder slow to announce its new spare (a loaded box)
 * let the spare take a run first; the late announcement then named a
 * running clone as the spare, and the next announcement killed it as a
 * spare that died: its run answered exit 0 with no output.
 */
static void __attribute__((noreturn)) spare_main(
    struct proc_ctx *ctx, struct vmm_template *t, int sock, int go, int taken)
{
	struct tpl_clone q;
	char err[160], c;
	int fds[TPL_CLONE_FDS], n;

	/* A child of the vmm: it goes with the vmm. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (vmm_template_prepare(t, err, sizeof(err)) != VMM_OK)
		_exit(1);
	while ((n = (int)read(go, &c, 1)) == -1 && errno == EINTR)
		;
	if (n != 1)
		_exit(1);
	close(go);
	for (;;) {
		if ((n = holder_recv(sock, &q, fds)) == 0)
			_exit(0);
		if (n > 0)
			break;
		holder_send(
		    sock, TPL_ST_REFUSED, 0, 0, 0, "malformed clone request");
	}
	/* The answer first: the holder's next spare is announced after it,
	 * and the vmm reaps a spare announced before its predecessor was
	 * taken as one that died. */
	holder_send(sock, TPL_ST_CLONED, getpid(), 0, 0, "");
	if (write(taken, "t", 1) != 1)
		_exit(1);
	/* taken stays open: it closes with this process (and the guest's
	 * forks), and the holder makes the next spare then, once the run
	 * is answered, not on the cores the run wants. */
	clone_run(ctx, t, sock, &q, fds);
}

/* The holder: boot, report, then keep a spare clone waiting until the
 * vmm closes the link. */
static void __attribute__((noreturn)) holder_main(struct proc_ctx *ctx,
    const struct vmm_config *boot, int sock, const char *name)
{
	struct vmm_template *t;
	struct pollfd pfd[2];
	char err[160], reason[160], c;
	int p[2], go[2], failures = 0, learnt, n;
	pid_t pid;
	size_t i;

	setproctitle("template %s", name);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	/* Forked in the middle of a run's start: whatever of it is open
	 * here (its request, output, egress link) is not the template's. */
	for (i = 3; i < 1024; i++)
		if ((int)i != sock && (int)i != ctx->kvm_fd &&
		    (int)i != boot->image_fd && (int)i != vmm_trap_stub_fd())
			close((int)i);
	sodium_memzero(ctx->grant_key, sizeof(ctx->grant_key));
	/* Image code runs here from now on, shared by every principal's
	 * runs: nothing of the state directory is in reach but the
	 * workspaces, to which each clone narrows further. */
	if (vm_confine_holder(err, sizeof(err)) == -1) {
		log_warnx("template %s: %s", name, err);
		_exit(2);
	}
	if (seccomp_filter_install_flags(&seccomp_template, VMM_TEMPLATE_SCF) ==
	    -1)
		_exit(2);
	if (vmm_template_boot(boot, &t, err, sizeof(err)) != VMM_OK) {
		/* The guest's last words say why, if it said anything. */
		for (i = 0; i < tpl_tail_len; i++)
			if (tpl_tail[i] < 0x20 || tpl_tail[i] > 0x7e)
				tpl_tail[i] = ' ';
		strlcpy(reason, err, sizeof(reason));
		if (tpl_tail_len > 0) {
			tpl_tail[tpl_tail_len < sizeof(tpl_tail)
			        ? tpl_tail_len
			        : sizeof(tpl_tail) - 1] = '\0';
			strlcat(reason, "; its output ends: ", sizeof(reason));
			strlcat(reason, tpl_tail, sizeof(reason));
		}
		holder_send(sock, TPL_ST_FAILED, 0, 0, 0, reason);
		_exit(0);
	}
	/* Before the first spare: it and every later one copy ahead the
	 * pages a clone writes (docs/templates.md). */
	if ((learnt = vmm_template_learn(t)) > 0)
		log_info("template %s: a clone writes %d pages at least; each "
		         "spare makes them its own ahead of its run",
		    name, learnt);
	else
		log_info(
		    "template %s: no probe: spares copy nothing ahead", name);
	holder_send(sock, TPL_ST_READY, 0, vmm_template_request_max(t),
	    vmm_template_memory(t), "");
	while (failures < 3) {
		if (pipe2(p, O_CLOEXEC) == -1)
			break;
		if (pipe2(go, O_CLOEXEC) == -1) {
			close(p[0]);
			close(p[1]);
			break;
		}
		/* The spare is the vmm's child, as a cold vm process is. */
		pid = (pid_t)syscall(
		    SYS_clone, CLONE_PARENT | SIGCHLD, NULL, NULL, NULL, 0);
		if (pid == 0) {
			close(p[0]);
			close(go[1]);
			spare_main(ctx, t, sock, go[0], p[1]);
		}
		close(p[1]);
		close(go[0]);
		if (pid < 0) {
			close(p[0]);
			close(go[1]);
			break;
		}
		holder_send(sock, TPL_ST_SPARE, pid, 0, 0, "");
		if (write(go[1], "g", 1) != 1)
			_exit(1);
		close(go[1]);
		/* Until the spare takes a request (a byte) or dies (end of
		 * file), or the vmm hangs up. */
		pfd[0].fd = p[0];
		pfd[0].events = POLLIN;
		pfd[1].fd = sock;
		pfd[1].events = 0;
		for (;;) {
			pfd[0].revents = pfd[1].revents = 0;
			if (poll(pfd, 2, -1) == -1 && errno != EINTR)
				_exit(1);
			if (pfd[1].revents & (POLLHUP | POLLERR))
				_exit(0);
			if (pfd[0].revents != 0)
				break;
		}
		failures = read(p[0], &c, 1) == 1 ? 0 : failures + 1;
		/* A spare made at once would copy the template's memory
		 * (about 11 ms of a core for python's) while the run that
		 * just took the last one wants both cores for its guest and
		 * the vm process that serves it. The next spare waits for
		 * that run's end (its end of the pipe closes), a request
		 * that finds no spare, or TPL_SPARE_DEFER_MS. */
		if (failures == 0) {
			pfd[0].events = POLLIN;
			pfd[1].events = POLLIN;
			for (;;) {
				pfd[0].revents = pfd[1].revents = 0;
				n = poll(pfd, 2, TPL_SPARE_DEFER_MS);
				if (n == -1 && errno != EINTR)
					_exit(1);
				if (pfd[1].revents & (POLLHUP | POLLERR))
					_exit(0);
				if (n != -1)
					break;
			}
		}
		close(p[0]);
	}
	holder_send(sock, TPL_ST_FAILED, 0, 0, 0, "its clones fail");
	_exit(1);
}

/* ---- the vmm's side ---------------------------------------------------- */

/* A spare that never took a run is the vmm's child: kill and reap it. */
static void
slot_reap_spare(struct tpl_slot *ts)
{
	if (ts->spare_pid > 0) {
		kill(ts->spare_pid, SIGKILL);
		waitpid(ts->spare_pid, NULL, 0);
	}
	ts->spare_pid = 0;
}

static void
slot_kill(struct tpl_slot *ts)
{
	if (ts->fd >= 0)
		close(ts->fd);
	if (ts->pid > 0) {
		kill(ts->pid, SIGKILL);
		waitpid(ts->pid, NULL, 0);
	}
	slot_reap_spare(ts);
	memset(ts, 0, sizeof(*ts));
	ts->fd = -1;
}

/* Wait up to ms for a status from the holder; 0, or -1 when none came
 * or it is gone. */
static int
slot_read(struct tpl_slot *ts, int ms, struct tpl_status *st)
{
	struct pollfd pfd = { ts->fd, POLLIN, 0 };
	ssize_t n;

	if (poll(&pfd, 1, ms) != 1)
		return -1;
	/* read(2): the vmm's filter has it (recv would be recvfrom). */
	n = read(ts->fd, st, sizeof(*st));
	if (n != (ssize_t)sizeof(*st) || st->magic != TPL_MAGIC)
		return -2;
	st->reason[sizeof(st->reason) - 1] = '\0';
	return 0;
}

/* What the holder said: ready, a new spare, or failed. */
static void
slot_status(struct tpl_slot *ts, int rc, const struct tpl_status *st)
{
	if (rc == 0 && st->status == TPL_ST_READY && ts->state == TPL_BOOTING) {
		ts->state = TPL_READY;
		ts->request_max = st->request_max;
		log_info("template %s %s (%llu MiB guest memory): ready, "
		         "holding %llu KiB",
		    ts->image, ts->command,
		    (unsigned long long)(ts->memory >> 20),
		    (unsigned long long)(st->memory >> 10));
		return;
	}
	if (rc == 0 && st->status == TPL_ST_SPARE && st->pid > 0) {
		/* A spare is announced before it may take a run; one named
		 * after it took one is a job's process now, never a spare
		 * to reap. */
		if (st->pid == ts->cloned_pid) {
			log_warnx("template %s %s: a spare announced after "
			          "its run began (pid %d)",
			    ts->image, ts->command, (int)st->pid);
			return;
		}
		/* The last spare died before it took a run. */
		slot_reap_spare(ts);
		ts->spare_pid = st->pid;
		return;
	}
	if (rc == 0 &&
	    (st->status == TPL_ST_REFUSED || st->status == TPL_ST_CLONED))
		return; /* answers to a request that gave up waiting */
	log_warnx("template %s %s failed: %s", ts->image, ts->command,
	    rc == 0 && st->status == TPL_ST_FAILED ? st->reason
	                                           : "the holder died");
	if (ts->fd >= 0)
		close(ts->fd);
	ts->fd = -1;
	if (ts->pid > 0) {
		kill(ts->pid, SIGKILL);
		waitpid(ts->pid, NULL, 0);
	}
	ts->pid = 0;
	slot_reap_spare(ts);
	ts->state = TPL_FAILED;
	ts->failed_at_ms = mono_ms();
}

/* Whatever the holder has said, without waiting. */
static void
slot_check(struct tpl_slot *ts)
{
	struct tpl_status st;
	int rc;

	while (ts->fd >= 0 && (rc = slot_read(ts, 0, &st)) != -1)
		slot_status(ts, rc, &st);
}

static int
slot_start(struct proc_ctx *ctx, struct vmm_state *vs, struct tpl_slot *ts,
    const struct vmm_config *boot)
{
	int sv[2];
	pid_t pid;
	size_t i;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == -1)
		return -1;
	switch (pid = fork()) {
	case -1:
		close(sv[0]);
		close(sv[1]);
		return -1;
	case 0:
		/* Shed everything of the vmm's but /dev/kvm and the image:
		 * the template must hold only what the image put there. */
		close(sv[0]);
		for (i = 0; i < PROC_COUNT; i++)
			if (ctx->fd[i] >= 0)
				close(ctx->fd[i]);
		for (i = 0; i < VMM_SANDBOXES_MAX; i++)
			if (vs->sbx[i].used && vs->sbx[i].ws_fd >= 0)
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
		vmm_port_close_all(vs);
		vmm_templates_close(vs);
		vmm_images_shed(vs, boot->image_map);
		holder_main(ctx, boot, sv[1], ts->image);
	}
	close(sv[1]);
	ts->fd = sv[0];
	ts->pid = pid;
	ts->state = TPL_BOOTING;
	log_info("template %s %s (%llu MiB guest memory): booting, holder "
	         "pid %d",
	    ts->image, ts->command, (unsigned long long)(ts->memory >> 20),
	    (int)pid);
	return 0;
}

int
vmm_template_pollfd(const struct vmm_state *vs, size_t i)
{
	const struct tpl_slot *ts = &vs->templates[i];

	return ts->used ? ts->fd : -1;
}

void
vmm_template_event(struct vmm_state *vs, size_t i)
{
	if (i < VMM_TEMPLATES_MAX && vs->templates[i].used)
		slot_check(&vs->templates[i]);
}

void
vmm_templates_forget(struct vmm_state *vs, const char *image)
{
	size_t i;

	for (i = 0; i < VMM_TEMPLATES_MAX; i++)
		if (vs->templates[i].used &&
		    strcmp(vs->templates[i].image, image) == 0) {
			log_info("template %s %s: dropped with its image",
			    vs->templates[i].image, vs->templates[i].command);
			slot_kill(&vs->templates[i]);
		}
}

void
vmm_templates_close(struct vmm_state *vs)
{
	size_t i;

	for (i = 0; i < VMM_TEMPLATES_MAX; i++)
		if (vs->templates[i].used && vs->templates[i].fd >= 0)
			close(vs->templates[i].fd);
}

int
vmm_template_usable(const char *owner, const char *principal)
{
	return owner[0] == '\0' || strcmp(owner, principal) == 0;
}

/* The image's template declaration, if it has a valid one serving name
 * with the same program as the template boots: 0 and *spec. */
static int
image_spec(const struct image *img, const char *image_name, const char *name,
    struct image_template *spec)
{
	const struct image_command *first, *cmd;
	const struct image_file *f;
	char err[160];

	/* A search, not a walk: this is asked at every run's start. */
	if ((f = image_file_find(img, IMAGE_TEMPLATE_PATH)) == NULL)
		return -1;
	if (image_file_verify(f) != 0 ||
	    image_template_parse(f->data, f->len, spec, err, sizeof(err)) !=
	        0) {
		log_warnx("image %s: %s: %s", image_name, IMAGE_TEMPLATE_PATH,
		    image_file_verify(f) != 0 ? "does not match its hash"
		                              : err);
		return -1;
	}
	if (!image_template_serves(spec, name) ||
	    (first = image_command(img, spec->commands[0])) == NULL ||
	    (cmd = image_command(img, name)) == NULL ||
	    cmd->program != first->program)
		return -1;
	return 0;
}

/* Find the slot for this key, start its boot if there is none; NULL
 * unless a ready template is there. */
static struct tpl_slot *
slot_get(struct proc_ctx *ctx, struct vmm_state *vs, const struct image *img,
    const char *image_name, const char *name, uint64_t memory,
    const char *principal, const struct vmm_config *run)
{
	struct image_template spec;
	struct tpl_slot *ts = NULL, *oldest = NULL;
	const struct image_command *first;
	struct vmm_config boot;
	const char *argv[IMAGE_TEMPLATE_ARGS + 2], *envp[1] = { NULL };
	size_t i;

	if (image_spec(img, image_name, name, &spec) != 0)
		return NULL;
	for (i = 0; i < VMM_TEMPLATES_MAX; i++) {
		struct tpl_slot *s = &vs->templates[i];

		if (!s->used) {
			if (ts == NULL)
				ts = s;
			continue;
		}
		slot_check(s);
		if (strcmp(s->image, image_name) == 0 &&
		    strcmp(s->command, spec.commands[0]) == 0 &&
		    s->memory == memory && s->ca_gen == vs->guest_ca_gen &&
		    vmm_template_usable(s->owner, principal)) {
			if (s->state == TPL_READY)
				return s;
			if (s->state == TPL_BOOTING ||
			    mono_ms() - s->failed_at_ms < TPL_RETRY_MS)
				return NULL;
			slot_kill(s);
			ts = s;
			break;
		}
		if (oldest == NULL || s->started_ms < oldest->started_ms)
			oldest = s;
	}
	if (ts == NULL) {
		if (oldest == NULL)
			return NULL;
		log_info("template %s %s: dropped for room", oldest->image,
		    oldest->command);
		slot_kill(oldest);
		ts = oldest;
	}
	first = image_command(img, spec.commands[0]);
	argv[0] = first->argv0;
	for (i = 0; i < spec.nargs; i++)
		argv[i + 1] = spec.args[i];
	argv[spec.nargs + 1] = NULL;
	boot = *run;
	boot.elf = first->program->data;
	boot.elf_len = first->program->len;
	boot.argv = argv;
	boot.envp = envp;
	boot.workspace = NULL;
	boot.workspace_fd = -1;
	boot.stdin_fd = -1;
	boot.output = tail_sink;
	boot.output_arg = NULL;
	boot.timeout_ms = TPL_BOOT_TIMEOUT_MS;
	boot.output_max = 0;
	boot.workspace_max = 0;
	boot.fetch = NULL;
	boot.kvm_fd = ctx->kvm_fd;
	boot.platform = vmm_ctx_platform(ctx);
	memset(ts, 0, sizeof(*ts));
	ts->used = 1;
	ts->fd = -1;
	strlcpy(ts->image, image_name, sizeof(ts->image));
	strlcpy(ts->command, spec.commands[0], sizeof(ts->command));
	ts->memory = memory;
	ts->ca_gen = vs->guest_ca_gen;
	ts->started_ms = mono_ms();
	/* Only the image's code runs in the template: no owner. */
	ts->owner[0] = '\0';
	if (slot_start(ctx, vs, ts, &boot) != 0) {
		log_warn("%s: template %s", __func__, image_name);
		memset(ts, 0, sizeof(*ts));
		ts->fd = -1;
	}
	return NULL;
}

static int
send_clone(int sock, const struct tpl_clone *q, const int fds[TPL_CLONE_FDS])
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int) * TPL_CLONE_FDS)];
	} u;
	struct iovec iov = { (void *)q, sizeof(*q) };
	struct msghdr mh;
	struct cmsghdr *c;

	memset(&u, 0, sizeof(u));
	memset(&mh, 0, sizeof(mh));
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = u.buf;
	mh.msg_controllen = sizeof(u.buf);
	c = CMSG_FIRSTHDR(&mh);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int) * TPL_CLONE_FDS);
	memcpy(CMSG_DATA(c), fds, sizeof(int) * TPL_CLONE_FDS);
	return sendmsg(sock, &mh, MSG_NOSIGNAL) == (ssize_t)sizeof(*q) ? 0 : -1;
}

static int
put_strings(int fd, const char *const *v, uint32_t *n, uint64_t *len)
{
	size_t l;

	for (*n = 0; v[*n] != NULL; (*n)++) {
		l = strlen(v[*n]) + 1;
		if (write(fd, v[*n], l) != (ssize_t)l)
			return -1;
		*len += l;
	}
	return 0;
}

pid_t
vmm_template_clone(struct proc_ctx *ctx, struct vmm_state *vs,
    const struct image *img, const char *image_name, const char *command,
    const char *principal, const char *sbx_id, const struct vmm_config *cfg,
    struct job *job, const int outfds[2], int efd, int count_fd, int ns_user,
    int ns_net, int budget_fd)
{
	struct tpl_slot *ts;
	struct tpl_clone q;
	struct tpl_status st;
	struct vmm_result *res;
	int fds[TPL_CLONE_FDS], sfd = -1, rfd = -1, rc;

	if ((ctx->kvm_fd < 0 && vmm_ctx_platform(ctx) == VMM_PLATFORM_KVM) ||
	    (ts = slot_get(ctx, vs, img, image_name, command, cfg->memory,
	         principal, cfg)) == NULL)
		return 0;
	memset(&q, 0, sizeof(q));
	q.magic = TPL_MAGIC;
	q.timeout_ms = cfg->timeout_ms;
	q.output_max = cfg->output_max;
	q.egress_max = cfg->egress_max;
	q.workspace_max = cfg->workspace_max;
	strlcpy(q.id, sbx_id, sizeof(q.id));
	if ((sfd = memfd_create("keep-argv", MFD_CLOEXEC)) == -1 ||
	    put_strings(sfd, cfg->argv, &q.nargs, &q.strings_len) != 0 ||
	    put_strings(sfd, cfg->envp, &q.nenv, &q.strings_len) != 0)
		goto cold;
	/* A request too large for the guest's buffer boots cold. */
	if (q.strings_len > ts->request_max)
		goto cold;
	/* The result page must reach a process the vmm did not fork. */
	if ((rfd = memfd_create("keep-result", MFD_CLOEXEC)) == -1 ||
	    ftruncate(rfd, sizeof(*res)) == -1 ||
	    (res = mmap(NULL, sizeof(*res), PROT_READ | PROT_WRITE, MAP_SHARED,
	         rfd, 0)) == MAP_FAILED)
		goto cold;
	fds[TPL_FD_STRINGS] = sfd;
	fds[TPL_FD_STDIN] = cfg->stdin_fd;
	fds[TPL_FD_OUT] = outfds[0];
	fds[TPL_FD_ERR] = outfds[1];
	fds[TPL_FD_RESULT] = rfd;
	fds[TPL_FD_WORKSPACE] = cfg->workspace_fd;
	fds[TPL_FD_EGRESS] = efd;
	fds[TPL_FD_EGRESS_SHM] = job->egress.shm;
	fds[TPL_FD_COUNT] = count_fd;
	q.net = ns_user >= 0 && ns_net >= 0;
	fds[TPL_FD_NETNS_USER] = q.net ? ns_user : cfg->workspace_fd;
	fds[TPL_FD_NETNS_NET] = q.net ? ns_net : cfg->workspace_fd;
	q.budget = budget_fd >= 0;
	fds[TPL_FD_BUDGET] = q.budget ? budget_fd : cfg->workspace_fd;
	q.direct = job->egress.direct_vm >= 0;
	fds[TPL_FD_EGRESS_DIRECT] =
	    q.direct ? job->egress.direct_vm : cfg->workspace_fd;
	st.status = 0;
	rc = -1;
	if (cfg->stdin_fd >= 0 && cfg->workspace_fd >= 0 && efd >= 0 &&
	    job->egress.shm >= 0 && count_fd >= 0 &&
	    send_clone(ts->fd, &q, fds) == 0) {
		uint64_t until = mono_ms() + TPL_REPLY_MS;

		/* Spares may be announced before the answer. */
		while ((rc = slot_read(ts, TPL_REPLY_MS, &st)) == 0 &&
		    st.status == TPL_ST_SPARE && mono_ms() < until)
			slot_status(ts, rc, &st);
	}
	if (rc != 0 || st.status != TPL_ST_CLONED || st.pid <= 0) {
		munmap(res, sizeof(*res));
		log_warnx("template %s %s: no clone (%s), the run boots cold",
		    ts->image, ts->command,
		    st.status == TPL_ST_REFUSED ? st.reason
		        : st.status == 0        ? "the holder did not answer"
		                                : "a bad answer");
		slot_kill(ts);
		goto cold;
	}
	if (st.pid == ts->spare_pid)
		ts->spare_pid = 0; /* now a job's, reaped as one */
	ts->cloned_pid = st.pid;
	close(sfd);
	close(rfd);
	munmap(job->res, sizeof(*job->res));
	job->res = res;
	return st.pid;
cold:
	if (sfd >= 0)
		close(sfd);
	if (rfd >= 0)
		close(rfd);
	return 0;
}
