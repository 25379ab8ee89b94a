/*
 * Runs: each is a `keepd: vm` process forked from the vmm with its own
 * seccomp allowlist; its output, its entry in the sandbox's process table,
 * kill, and the relay of its guest's fetches to egress.
 */
#include "host/vmmproc/vmm_int.h"
#include "lib/fdio.h"

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

void
vmm_run_done_send(struct proc_ctx *ctx, enum proc_id to, uint64_t reqid,
    const struct msg_vmm_run_done *d, int outfd, const char *what)
{
	int fd = outfd;

	if (fd < 0)
		fd = memfd_make_sealed("keep-out", NULL, 0);
	if (fd < 0 || ctx->fd[to] < 0 ||
	    msg_send(ctx->fd[to], MSG_VMM_RUN_DONE, MSG_F_REPLY, reqid, d,
	        sizeof(*d), fd) != MSG_OK)
		log_warnx("%s: reply for %s %llu lost", __func__, what,
		    (unsigned long long)reqid);
	if (fd >= 0 && fd != outfd)
		close(fd);
}

static void
run_reply(struct proc_ctx *ctx, enum proc_id to, uint64_t reqid,
    uint32_t status, int exit_code, const char *reason, int outfd,
    uint64_t out_len, uint64_t err_len, const struct vmm_result *res)
{
	struct msg_vmm_run_done d;

	memset(&d, 0, sizeof(d));
	d.status = status;
	d.exit_code = exit_code;
	d.out_len = out_len;
	d.err_len = err_len;
	if (res != NULL) {
		d.duration_ms = (res->boot_us + res->run_us) / 1000;
		d.boot_us = res->boot_us;
		d.egress_out = res->egress_bytes.out;
		d.egress_in = res->egress_bytes.in;
		if (res->limits_hit & VMM_LIMIT_PROCESSES)
			d.limits |= RUN_LIMIT_PROCESSES;
		if (res->limits_hit & VMM_LIMIT_MEMORY)
			d.limits |= RUN_LIMIT_MEMORY;
		if (res->limits_hit & VMM_LIMIT_EGRESS) {
			d.limits |= RUN_LIMIT_EGRESS;
			memcpy(d.egress, res->egress_refused,
			    sizeof(d.egress) < sizeof(res->egress_refused)
			        ? sizeof(d.egress)
			        : sizeof(res->egress_refused));
			d.egress[sizeof(d.egress) - 1] = '\0';
		}
	}
	strlcpy(d.reason, reason, sizeof(d.reason));
	vmm_run_done_send(ctx, to, reqid, &d, outfd, "run");
}

/* A background run is answered as soon as it runs. */
static void
run_started(struct proc_ctx *ctx, enum proc_id to, uint64_t reqid, uint64_t pid)
{
	struct msg_vmm_run_done d;

	memset(&d, 0, sizeof(d));
	d.status = RUN_STARTED;
	d.pid = pid;
	vmm_run_done_send(ctx, to, reqid, &d, -1, "run");
}

static void
out_sink(void *arg, int fd, const void *buf, size_t len)
{
	const int *fds = arg;

	(void)write_all(fds[fd == 2], buf, len);
}

/* A terminal has one screen: stdout and stderr in the order written. */
static void
term_sink(void *arg, int fd, const void *buf, size_t len)
{
	const int *fds = arg;

	(void)fd;
	(void)write_all(fds[0], buf, len);
}

uint64_t *
vmm_count_map(int fd)
{
	void *p = mmap(
	    NULL, sizeof(uint64_t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* In the `keepd: vm` process: shed what belongs to other runs and
 * sandboxes, confine, boot, report, exit. */
void __attribute__((noreturn)) vmm_vm_process(struct proc_ctx *ctx,
    struct vmm_state *vs, struct vmm_config *cfg, int outfds[2],
    struct vmm_result *res, const char *id)
{
	char err[160];
	size_t i;
	int rc, ns_user = -1, ns_net = -1;

	setproctitle("vm %s", id);
	/* The guest's processes are this one's forks (host/vmm/proc.c):
	 * one process group, so the vmm's kill reaches all of them. */
	setpgid(0, 0);
	for (i = 0; i < PROC_COUNT; i++)
		if (ctx->fd[i] >= 0)
			close(ctx->fd[i]);
	/* Its principal's budget is mapped (cfg->egress_budget); no other
	 * principal's is within reach. */
	vmm_budgets_close(vs, -1);
	for (i = 0; i < VMM_SANDBOXES_MAX; i++) {
		struct sandbox *o = &vs->sbx[i];

		if (!o->used)
			continue;
		/* Its own sandbox's count, shared with its other runs: mapped
		 * here, so the vmm and other runs hold no mapping of it. */
		if (o->ws_fd == cfg->workspace_fd && o->has_count &&
		    cfg->workspace_max != 0)
			cfg->workspace_count = vmm_count_map(o->count_fd);
		if (o->ws_fd != cfg->workspace_fd)
			close(o->ws_fd);
		if (o->has_port)
			close(o->port_fd);
		if (o->has_count)
			close(o->count_fd);
		if (o->has_netns && o->ws_fd == cfg->workspace_fd) {
			ns_user = o->netns_user;
			ns_net = o->netns_net;
		} else if (o->has_netns) {
			close(o->netns_user);
			close(o->netns_net);
		}
	}
	if (ctx->netns_fd >= 0)
		close(ctx->netns_fd);
	for (i = 0; i < VMM_FORKS_MAX; i++)
		if (vs->forks[i].used)
			close(vs->forks[i].pidfd);
	for (i = 0; i < VMM_JOBS_MAX; i++)
		if (vs->jobs[i].used) {
			close(vs->jobs[i].outfd);
			close(vs->jobs[i].errfd);
			if (vs->jobs[i].term && vs->jobs[i].term_fd >= 0)
				close(vs->jobs[i].term_fd);
			if (vs->jobs[i].pidfd >= 0)
				close(vs->jobs[i].pidfd);
			if (vs->jobs[i].egress.fd >= 0)
				close(vs->jobs[i].egress.fd);
			if (vs->jobs[i].egress.shm >= 0)
				close(vs->jobs[i].egress.shm);
		}
	vmm_templates_close(vs);
	vmm_contexts_close(vs);
	vmm_images_shed(vs, cfg->image_map);
	/* Its sandbox's network, else one of its own where one can be
	 * had: loopback only. */
	cfg->net = ns_net >= 0 ? vm_confine_net_join(ns_user, ns_net,
	                             cfg->workspace_fd, err, sizeof(err))
	                       : vm_confine_net(err, sizeof(err));
	if (ns_net >= 0) {
		close(ns_user);
		close(ns_net);
	}
	if (cfg->net == 1)
		vmm_dns_take(cfg);
	if (cfg->net == -1) {
		strlcpy(res->reason, "error: ", sizeof(res->reason));
		strlcat(res->reason, err, sizeof(res->reason));
		res->status = VMM_FAULT;
		_exit(2);
	}
	/* Its workspace only, no signals or sockets beyond its own. */
	if (vm_confine(cfg->workspace_fd, cfg->net, err, sizeof(err)) == -1) {
		strlcpy(res->reason, "error: ", sizeof(res->reason));
		strlcat(res->reason, err, sizeof(res->reason));
		res->status = VMM_FAULT;
		_exit(2);
	}
	cfg->kvm_fd = ctx->kvm_fd;
	cfg->platform = vmm_ctx_platform(ctx);
	if (cfg->output == NULL) {
		cfg->output = out_sink;
		cfg->output_arg = outfds;
	}
	rc = vmm_run(cfg, res, err, sizeof(err));
	if (res->efault_retries != 0)
		log_info("vm %s: %llu entries made again after KVM_RUN failed "
		         "a page the guest holds",
		    id, (unsigned long long)res->efault_retries);
	if (rc == VMM_E_SNAPSHOT) {
		log_warnx("vm %s: %s", id, err);
		_exit(VMM_EXIT_RESTORE_FAILED);
	}
	if (res->saved != 0) {
		if (res->saved != 1)
			log_info("vm %s: %s", id, res->reason);
		_exit(res->saved == 1 ? VMM_EXIT_SAVED : VMM_EXIT_UNSAVED);
	}
	if (rc != VMM_OK) {
		strlcpy(res->reason, vmm_strerror(rc), sizeof(res->reason));
		strlcat(res->reason, ": ", sizeof(res->reason));
		strlcat(res->reason, err, sizeof(res->reason));
		_exit(3);
	}
	vmm_egress_child_done(res);
	_exit(0);
}

void
vmm_kill_tree(pid_t pid)
{
	/* The group is the vm process's own from its first instruction on;
	 * before that it has no guest children and the pid is enough. */
	kill(-pid, SIGKILL);
	kill(pid, SIGKILL);
}

/*
 * The API's kill with a signal the guest may act on: every process of
 * the run's tree gets it (its vm processes take it as their guest's own,
 * host/vmm/kvm.c), as a terminal's ^C reaches a foreground job; whatever
 * is left VMM_GRACE_MS later is killed.
 */
static void
vmm_signal_tree(struct job *j, int sig)
{
	uint64_t by = mono_ms() + VMM_GRACE_MS;

	if (sig == 0 || sig == SIGKILL) {
		vmm_kill_tree(j->pid);
		return;
	}
	kill(-j->pid, sig);
	kill(j->pid, sig);
	if (j->deadline > by)
		j->deadline = by;
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
proc_add(struct sandbox *s, uint64_t pid, const char *cmd, int background)
{
	struct vmm_proc *p = &s->procs[s->procs_next++ % SBX_PROCS_MAX];

	memset(p, 0, sizeof(*p));
	p->pid = pid;
	strlcpy(p->cmd, cmd, sizeof(p->cmd));
	p->status = RUN_STARTED;
	p->started_at = (int64_t)time(NULL);
	p->background = background != 0;
}

int
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
	if (vmm_check_grant(ctx, m, &q.grant, CAP_SANDBOX_READ, q.id, &g) != 0)
		r->status = SBX_E_GRANT;
	else if ((s = vmm_sandbox_find(vs, q.id, g.principal)) == NULL)
		r->status = vmm_not_found(vs);
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

int
vmm_h_kill(struct proc_ctx *ctx, const struct msg *m)
{
	struct vmm_state *vs = ctx->arg;
	struct msg_vmm_kill q;
	struct grant g;
	size_t i;

	memcpy(&q, m->data, sizeof(q));
	if (memchr(q.id, '\0', sizeof(q.id)) == NULL ||
	    (q.sig != 0 && q.sig != SIGKILL && q.sig != SIGTERM &&
	        q.sig != SIGINT && q.sig != SIGHUP))
		return -1;
	q.status = SBX_E_NOTFOUND;
	if (vmm_check_grant(ctx, m, &q.grant, CAP_EXEC, "", &g) != 0)
		q.status = SBX_E_GRANT;
	else if (vmm_sandbox_find(vs, q.id, g.principal) != NULL)
		for (i = 0; i < VMM_JOBS_MAX; i++) {
			struct job *j = &vs->jobs[i];

			if (j->used && j->run_pid == q.pid &&
			    strcmp(j->sbx, q.id) == 0) {
				vmm_signal_tree(j, (int)q.sig);
				j->killed = 1;
				q.status = SBX_OK;
			}
		}
	memset(&q.grant, 0, sizeof(q.grant));
	msg_reply(ctx, m, MSG_VMM_KILL_REPLY, &q, sizeof(q), -1);
	return 0;
}

/* Whether one of env[0..n) ("NAME=VALUE") names kv's NAME. */
static int
env_named(const char *const *env, size_t n, const char *kv)
{
	const char *eq = strchr(kv, '=');
	size_t len = eq != NULL ? (size_t)(eq - kv) : strlen(kv);

	for (size_t i = 0; i < n; i++)
		if (strncmp(env[i], kv, len) == 0 && env[i][len] == '=')
			return 1;
	return 0;
}

/*
 * A run's first working directory (msg_vmm_run.cwd, untrusted): its
 * guest path normalized into out, and a directory of the workspace
 * now, looked up beneath it as the guest's paths are; else reason says
 * which, as a spawn's chdir would (ENOENT, ENOTDIR). Checked here so
 * that the run is refused before anything of it starts; a directory
 * removed after the check is the guest's, whose paths resolve anyway.
 */
static int
run_cwd(const struct sandbox *s, const char *cwd, char *out, size_t outlen,
    char *reason, size_t rlen)
{
	int fd;

	if (ws_normalize("/", cwd, out, outlen) != 0) {
		strlcpy(reason, "cwd is too long", rlen);
		return -1;
	}
	if ((fd = ws_openat(s->ws_fd, out, O_PATH | O_DIRECTORY, 0)) < 0) {
		snprintf(reason, rlen, "cwd: %s",
		    fd == -ENOTDIR ? "not a directory"
		                   : "no such directory in the workspace");
		return -1;
	}
	close(fd);
	return 0;
}

int
vmm_h_run(struct proc_ctx *ctx, const struct msg *m)
{
	struct vmm_state *vs = ctx->arg;
	struct msg_vmm_run q;
	const struct image_command *cmd;
	const struct vmm_file *files = NULL;
	struct vmm_file *fv = NULL;
	size_t image_len;
	volatile uint8_t *hints = NULL;
	const volatile uint8_t *checked = NULL;
	struct image *img;
	struct sandbox *s;
	struct grant g;
	struct vmm_config cfg;
	struct job *job = NULL;
	const char *argv[RUN_MAX_ARGS + 2], *envp[2 * RUN_MAX_ENV + 1];
	const uint8_t *p, *end;
	uint8_t *in = MAP_FAILED;
	char *strbuf = NULL, reason[64] = "", cwd[RUN_CWD_MAX] = "/";
	size_t used = 0, nenv = 0, i;
	int outfds[2] = { -1, -1 }, st = RUN_REFUSED, efd = -1;
	int from_template = 0, budget_fd = -1;
	int term[2] = { -1, -1 };
	struct vmm_run_secrets *rs = NULL;
	char *ebufs[2 * RUN_MAX_ENV + 1] = { NULL };
	uint64_t timeout;
	pid_t pid;

	memcpy(&q, m->data, sizeof(q));
	if (memchr(q.sandbox, '\0', sizeof(q.sandbox)) == NULL ||
	    memchr(q.image, '\0', sizeof(q.image)) == NULL ||
	    memchr(q.command, '\0', sizeof(q.command)) == NULL ||
	    memchr(q.cwd, '\0', sizeof(q.cwd)) == NULL ||
	    (q.cwd[0] != '\0' &&
	        (q.cwd[0] != '/' || (q.flags & RUN_F_CONTEXT) != 0)) ||
	    q.nargs > RUN_MAX_ARGS || q.nenv > RUN_MAX_ENV ||
	    q.input_len > RUN_MAX_INPUT || q.stdin_len > q.input_len) {
		close(m->fd);
		return -1;
	}
	vmm_expire_sandboxes(vs);
	/* exec is granted per program; the sandbox is the principal's own. */
	if (vmm_check_grant(ctx, m, &q.grant, CAP_EXEC, q.command, &g) != 0) {
		vmm_secrets_free(vmm_secrets_take(vs, m->hdr.reqid, ""));
		strlcpy(reason, "not authorized", sizeof(reason));
		goto refuse;
	}
	/* The front answers "unavailable" with 503: no guest can run. */
	if (vmm_ctx_platform(ctx) == VMM_PLATFORM_KVM && ctx->kvm_fd < 0) {
		vmm_secrets_free(vmm_secrets_take(vs, m->hdr.reqid, ""));
		strlcpy(reason, VMM_NO_KVM_REASON, sizeof(reason));
		goto refuse;
	}
	/* The policy's isolation kvm: never run it on the trap platform
	 * (a context's cell is started below, so it is refused here too). */
	if ((g.flags & GRANT_F_KVM) &&
	    vmm_ctx_platform(ctx) != VMM_PLATFORM_KVM) {
		vmm_secrets_free(vmm_secrets_take(vs, m->hdr.reqid, ""));
		/* the reason has 64 bytes: no room for the principal */
		strlcpy(reason,
		    "unavailable: isolation kvm; this box runs trap",
		    sizeof(reason));
		goto refuse;
	}
	/* The secrets sent for this run and granted to its principal. */
	rs = vmm_secrets_take(vs, m->hdr.reqid, g.principal);
	if ((s = vmm_sandbox_find(vs, q.sandbox, g.principal)) == NULL) {
		/* The front answers "restoring" with 503 and Retry-After. */
		if (vs->restore != NULL)
			strlcpy(reason,
			    "restoring: the sandbox is not back yet",
			    sizeof(reason));
		else {
			strlcpy(reason, "no such sandbox", sizeof(reason));
			st = RUN_NOSANDBOX;
		}
		goto refuse;
	}
	/* A run or a cell in a paused sandbox resumes it (docs/e2b.md). */
	if (s->paused) {
		s->paused = 0;
		log_info("sandbox %s resumed by a run", s->id);
	}
	if (q.flags & RUN_F_CONTEXT) {
		vmm_secrets_free(rs);
		vmm_context_cell(ctx, vs, m, &q, &g, s);
		close(m->fd);
		return 0;
	}
	if (q.cwd[0] != '\0' &&
	    run_cwd(s, q.cwd, cwd, sizeof(cwd), reason, sizeof(reason)) != 0) {
		st = RUN_NOCWD;
		goto refuse;
	}
	if ((img = vmm_image_get(ctx, vs, s->image)) == NULL) {
		strlcpy(reason, "the sandbox's image does not verify",
		    sizeof(reason));
		goto refuse;
	}
	if ((cmd = image_command(img, q.command)) == NULL) {
		strlcpy(reason, "the image has no command ", sizeof(reason));
		strlcat(reason, q.command, sizeof(reason));
		goto refuse;
	}
	/* An image with deferred hashes: the program is checked here, the
	 * files the guest opens by the VMM. */
	if (vmm_image_file_check(vs, img, cmd->program) != 0) {
		strlcpy(reason, "the program does not match its hash",
		    sizeof(reason));
		goto refuse;
	}
	for (i = 0; i < VMM_JOBS_MAX && job == NULL; i++)
		if (!vs->jobs[i].used)
			job = &vs->jobs[i];
	if (job == NULL) {
		strlcpy(reason, "too many runs at once", sizeof(reason));
		goto refuse;
	}
	/* The request's strings and stdin, from its sealed memfd: checked
	 * first, since a short one would fault the mapping (SIGBUS). */
	if (memfd_check(m->fd, q.input_len, RUN_MAX_INPUT) == -1) {
		strlcpy(reason, "the request's memfd is not sealed at its size",
		    sizeof(reason));
		goto refuse;
	}
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
	/* The request's variables override the sandbox's: a sandbox's
	 * variable the request names is left out, as bash and CPython
	 * take the last of two where getenv takes the first. */
	if (parse_strings(&p, end - q.stdin_len, q.nenv, envp, strbuf, &used,
	        q.input_len + 1) != 0 ||
	    p != end - q.stdin_len) {
		strlcpy(reason, "malformed environment", sizeof(reason));
		goto refuse;
	}
	nenv = q.nenv;
	for (i = 0; i < s->env_len && nenv < 2 * RUN_MAX_ENV;
	     i += strlen(s->env + i) + 1)
		if (!env_named(envp, q.nenv, s->env + i))
			envp[nenv++] = s->env + i;
	envp[nenv] = NULL;
	/* The run's and the sandbox's variables may name secrets. */
	if (vmm_secrets_expand(rs, envp, nenv, ebufs) != 0) {
		strlcpy(reason,
		    "a variable names a secret this run was not given",
		    sizeof(reason));
		goto refuse;
	}
	/* The image's own array when the vmm loaded it (a run's start
	 * then costs nothing per file), else a copy. */
	if ((files = vmm_image_files_shared(vs, img, &hints, &checked)) ==
	    NULL) {
		if ((fv = vmm_image_files(vs, img, 0, &hints)) == NULL)
			goto error;
		files = fv;
	}
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
	cfg.files_sorted = image_files_sorted(img); /* fv is in its order */
	cfg.file_hints = hints;
	cfg.files_checked = checked;
	cfg.image_fd = image_fd(img, &cfg.image_map, &image_len);
	cfg.image_map_len = image_len;
	cfg.ca_extra = vs->guest_ca;
	cfg.ca_extra_len = vs->guest_ca_len;
	cfg.no_pagemap = 1;
	cfg.workspace_fd = s->ws_fd;
	cfg.cwd = cwd;
	cfg.memory = g.mem_max ? g.mem_max : image_memory(img);
	if (ctx->config != NULL && ctx->config->memory_max != 0 &&
	    cfg.memory > ctx->config->memory_max)
		cfg.memory = ctx->config->memory_max;
	cfg.timeout_ms = timeout;
	cfg.max_procs = (unsigned)g.procs_max; /* 0: the default, 64 */
	cfg.output_max = g.output_max ? g.output_max
	    : ctx->config != NULL     ? ctx->config->output_max
	                              : 0;
	cfg.egress_max = (uint64_t)g.egress_kib * 1024; /* `egress bytes` */
	budget_fd = vmm_budget_fd(vs, &g); /* `egress budget` */
	cfg.workspace_max =
	    ctx->config != NULL ? ctx->config->workspace_max : 0;
	cfg.max_files = ctx->config != NULL ? ctx->config->max_files : 0;
	/* stdin is the tail of the request memfd, or a terminal's pipe. */
	cfg.stdin_fd = m->fd;
	if (lseek(m->fd, (off_t)(q.input_len - q.stdin_len), SEEK_SET) == -1)
		goto error;
	/* A terminal's input and a command's stdin stream come the same
	 * way (vmm_h_term_input); only a terminal is a tty to the guest. */
	if (q.flags & (RUN_F_TERMINAL | RUN_F_STDIN)) {
		if ((q.flags & (RUN_F_BACKGROUND | RUN_F_STREAM)) !=
		        RUN_F_STREAM ||
		    q.stdin_len != 0) {
			strlcpy(reason, "an input stream needs a streaming run",
			    sizeof(reason));
			goto refuse;
		}
		if (pipe2(term, O_CLOEXEC) == -1 ||
		    fcntl(term[1], F_SETFL, O_NONBLOCK) == -1)
			goto error;
		/* A program fed by another program's requests may read in
		 * large pieces: room for bursts (best effort, as contexts'). */
		if (q.flags & RUN_F_STDIN)
			(void)fcntl(term[1], F_SETPIPE_SZ, VMM_STDIN_PIPE_SIZE);
		cfg.stdin_fd = term[0];
	}
	if (q.flags & RUN_F_TERMINAL) {
		cfg.tty = 1;
		cfg.output = term_sink;
		cfg.output_arg = outfds;
	}

	memset(job, 0, sizeof(*job));
	job->res = mmap(NULL, sizeof(*job->res), PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (job->res == MAP_FAILED ||
	    (outfds[0] = memfd_new("keep-stdout")) == -1 ||
	    (outfds[1] = memfd_new("keep-stderr")) == -1)
		goto error;
	memset(job->res, 0, sizeof(*job->res));
	if (cfg.tty) {
		job->winsize = mmap(NULL, sizeof(*job->winsize),
		    PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		if (job->winsize == MAP_FAILED) {
			job->winsize = NULL;
			goto error;
		}
		job->winsize->rows = 24;
		job->winsize->cols = 80;
		cfg.winsize = job->winsize;
	}
	/* Egress: the guest's fetches go over a socketpair to here, with
	 * the caps of the token that asked for the run (host/vmm_egress.h). */
	if (vmm_egress_prepare(&job->egress, g.principal, s->id,
	        vs->caps_reqid == m->hdr.reqid ? &vs->caps : NULL, &efd) == -1)
		goto error;
	/* Its secrets injected at egress, read when a connect needs one
	 * (job->secrets is set below, before the loop reads a request). */
	job->egress.secret_for_egress = vmm_secrets_for_egress;
	job->egress.secret_arg = job;
	/* Its connects on decisions it may reuse go to egress directly. */
	vmm_egress_direct(ctx, &job->egress);
	vs->caps_reqid = 0;
	/* A clone of the image's template when one is ready, else a cold
	 * boot (docs/templates.md). */
	/* Runs at the same time in one sandbox share its quota's count
	 * (host/vmm/vmm.h); made before the fork, mapped after it. */
	(void)vmm_sandbox_count_fd(s);
	vmm_sandbox_netns(ctx, s);
	/* A template's guest is parked at the root: a run that starts
	 * elsewhere boots cold. */
	if (strcmp(cwd, "/") == 0 &&
	    (pid = vmm_template_clone(ctx, vs, img, s->image, q.command,
	         g.principal, s->id, &cfg, job, outfds, efd,
	         s->has_count ? s->count_fd : -1,
	         s->has_netns ? s->netns_user : -1,
	         s->has_netns ? s->netns_net : -1, budget_fd)) > 0)
		from_template = 1;
	else
		switch (pid = fork()) {
		case -1:
			log_warn("%s: fork", __func__);
			vmm_egress_close(&job->egress);
			close(efd);
			goto error;
		case 0:
			if (term[1] != -1)
				close(term[1]);
			vmm_egress_child(&job->egress, efd, &cfg);
			close(job->egress.fd);
			job->egress.fd = -1;
			job->egress.shm = -1; /* now the vm process's own */
			if (budget_fd >= 0 &&
			    (cfg.egress_budget = vmm_budget_map(budget_fd)) ==
			        NULL)
				_exit(2);
			vmm_vm_process(ctx, vs, &cfg, outfds, job->res, s->id);
		}
	close(efd);
	vmm_egress_direct_handed(&job->egress);
	if (term[0] != -1) {
		close(term[0]);
		term[0] = -1;
		job->term = 1;
		job->term_fd = term[1];
		term[1] = -1;
	}
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
	job->stream = !job->background && (q.flags & RUN_F_STREAM) != 0;
	job->sent[0] = job->sent[1] = 0;
	job->secrets = rs;
	rs = NULL;
	strlcpy(job->sbx, s->id, sizeof(job->sbx));
	strlcpy(job->owner, s->owner, sizeof(job->owner));
	strlcpy(job->cmd, q.command, sizeof(job->cmd));
	proc_add(s, job->run_pid, q.command, job->background);
	log_info("run %llu: %s in sandbox %s, vm pid %d, run %llu%s%s",
	    (unsigned long long)job->reqid, q.command, s->id, (int)pid,
	    (unsigned long long)job->run_pid,
	    job->background ? ", in the background" : "",
	    from_template ? ", from its template" : "");
	if (job->background)
		run_started(ctx, m->from, m->hdr.reqid, job->run_pid);
	if (job->stream) {
		/* The run's start, before any output: a terminal's client
		 * may talk now; E2B's start event goes out (its SDK waits
		 * for it, however long the command is silent). */
		struct msg_vmm_run_output h;

		memset(&h, 0, sizeof(h));
		h.stream = 1;
		h.run_pid = job->run_pid;
		if (ctx->fd[m->from] < 0 ||
		    msg_send(ctx->fd[m->from], MSG_VMM_RUN_OUTPUT, 0,
		        m->hdr.reqid, &h, sizeof(h), -1) != MSG_OK)
			log_warnx("run %llu: its start not told",
			    (unsigned long long)m->hdr.reqid);
	}
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
	if (job != NULL && job->winsize != NULL)
		munmap(job->winsize, sizeof(*job->winsize));
	if (job != NULL)
		memset(job, 0, sizeof(*job));
	for (i = 0; i < 2; i++)
		if (outfds[i] != -1)
			close(outfds[i]);
done:
	for (i = 0; i < 2; i++)
		if (term[i] != -1)
			close(term[i]);
	for (i = 0; i < nitems(ebufs); i++)
		if (ebufs[i] != NULL) {
			sodium_memzero(ebufs[i], strlen(ebufs[i]));
			free(ebufs[i]);
		}
	vmm_secrets_free(rs);
	if (in != MAP_FAILED)
		munmap(in, q.input_len);
	free(strbuf);
	free(fv);
	close(m->fd);
	return 0;
}

/* Append the stderr memfd to the stdout one: the reply carries both. */
int
vmm_join_output(int outfd, int errfd, uint64_t *out_len, uint64_t *err_len)
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

	if ((s = vmm_sandbox_find(vs, job->sbx, job->owner)) != NULL) {
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

/* The run's end, told to whoever asked for it: wst is the vm process's
 * wait status (0, exited 0, for one that said its result is final). */
static void
job_answer(struct proc_ctx *ctx, struct job *job, int wst)
{
	static const uint32_t map[] = { [VMM_EXITED] = RUN_EXITED,
		[VMM_FAULT] = RUN_FAULT,
		[VMM_TIMEOUT] = RUN_TIMEOUT,
		[VMM_OUTPUT_LIMIT] = RUN_OUTPUT_LIMIT };
	struct vmm_result res = *job->res;
	uint64_t out_len = 0, err_len = 0;
	uint32_t st;
	char reason[64];

	res.reason[sizeof(res.reason) - 1] = '\0';
	if (WIFEXITED(wst) && WEXITSTATUS(wst) == 0 && res.served &&
	    (unsigned)res.status < nitems(map)) {
		st = map[res.status];
		strlcpy(reason, res.reason, sizeof(reason));
	} else {
		st = RUN_ERROR;
		strlcpy(reason,
		    WIFSIGNALED(wst)            ? "the vm process was killed"
		        : res.reason[0] != '\0' ? res.reason
		        : WIFEXITED(wst) && WEXITSTATUS(wst) == 0
		        ? "the vm process ended before its run"
		        : "the vm process failed",
		    sizeof(reason));
		log_warnx("run %llu: vm pid %d: %s",
		    (unsigned long long)job->reqid, (int)job->pid, reason);
	}
	/* A run given secrets: no value leaves in its output. */
	if (job->secrets != NULL && vmm_secrets_redact_output(job) != 0) {
		st = RUN_ERROR;
		strlcpy(reason, "output lost", sizeof(reason));
		close(job->outfd);
		job->outfd = -1;
	}
	vmm_secrets_free(job->secrets);
	job->secrets = NULL;
	/* Sealed before it leaves: what remains of the run (its guest's
	 * other processes) can no longer change what the front reads. */
	if (job->outfd < 0 ||
	    vmm_join_output(job->outfd, job->errfd, &out_len, &err_len) != 0 ||
	    memfd_seal(job->outfd) == -1) {
		st = RUN_ERROR;
		out_len = err_len = 0;
		strlcpy(reason, "output lost", sizeof(reason));
		if (job->outfd >= 0)
			close(job->outfd);
		job->outfd = -1;
	}
	if (job->killed) {
		st = RUN_KILLED;
		strlcpy(reason, "killed", sizeof(reason));
	}
	log_info("run %llu done: status %u, exit %d, %llu+%llu bytes, %llu us "
	         "(boot %llu, %llu exits, %llu calls, %llu files hashed)%s%s",
	    (unsigned long long)job->reqid, st, res.exit_code,
	    (unsigned long long)out_len, (unsigned long long)err_len,
	    (unsigned long long)(res.boot_us + res.run_us),
	    (unsigned long long)res.boot_us, (unsigned long long)res.exits,
	    (unsigned long long)res.syscalls,
	    (unsigned long long)res.files_hashed, reason[0] != '\0' ? ": " : "",
	    reason);
	job_record(ctx, job, st, res.exit_code, &res);
	vmm_egress_drain(ctx, &job->egress);
	vmm_egress_audit_bytes(ctx, &job->egress, &res.egress_bytes);
	if (!job->background)
		run_reply(ctx, job->from, job->reqid, st, res.exit_code, reason,
		    job->outfd, out_len, err_len, &res);
	if (job->outfd >= 0)
		close(job->outfd);
	close(job->errfd);
	job->outfd = job->errfd = -1;
	if (job->term && job->term_fd >= 0)
		close(job->term_fd);
	job->term_fd = -1;
	if (job->winsize != NULL)
		munmap(job->winsize, sizeof(*job->winsize));
	job->winsize = NULL;
	job->stream = 0;
	job->answered = 1;
}

void
vmm_job_finish(struct proc_ctx *ctx, struct job *job)
{
	int wst = 0;

	if (waitpid(job->pid, &wst, 0) != job->pid) {
		/* Reaped elsewhere: its end is unknown, never "exited 0"
		 * (job_answer would take a run cut short for a whole one). */
		log_warn("%s: vm pid %d", __func__, (int)job->pid);
		wst = W_EXITCODE(0, SIGKILL);
	}
	if (!job->answered)
		job_answer(ctx, job, wst);
	if (job->pidfd >= 0)
		close(job->pidfd);
	munmap(job->res, sizeof(*job->res));
	vmm_egress_close(&job->egress);
	memset(job, 0, sizeof(*job));
}

void
vmm_job_done_early(struct proc_ctx *ctx, struct job *job)
{
	/* Only its reaping is left: the slot stays taken until then, so
	 * the runs at once stay bounded by the processes that exist. */
	if (job->used && !job->answered &&
	    __atomic_load_n(&job->res->done, __ATOMIC_ACQUIRE))
		job_answer(ctx, job, 0);
}

/* ---- terminals (docs/terminal.md) ------------------------------------- */

/*
 * A terminal run's input, or a command's stdin stream (RUN_F_STDIN):
 * bytes for its stdin pipe, a new size (a terminal's only), or the
 * input's end (the pipe closes: the program reads EOF). The
 * pipe does not block the vmm: input that does not fit (a guest that
 * reads nothing while the client types 64 KiB) is dropped and logged.
 */
int
vmm_h_term_input(struct proc_ctx *ctx, const struct msg *m)
{
	struct vmm_state *vs = ctx->arg;
	struct msg_vmm_term_input q;
	struct job *j = NULL;
	ssize_t n;
	size_t i;

	memcpy(&q, m->data, sizeof(q));
	if (q.pad != 0 || q.len > sizeof(q.data) ||
	    (q.kind == TERM_IN_RESIZE &&
	        (q.cols == 0 || q.cols > 1000 || q.rows == 0 ||
	            q.rows > 1000)) ||
	    (q.kind != TERM_IN_DATA && q.kind != TERM_IN_RESIZE &&
	        q.kind != TERM_IN_EOF))
		return -1;
	for (i = 0; i < VMM_JOBS_MAX; i++)
		if (vs->jobs[i].used && vs->jobs[i].term &&
		    vs->jobs[i].reqid == m->hdr.reqid &&
		    vs->jobs[i].from == m->from)
			j = &vs->jobs[i];
	if (j == NULL || j->term_fd < 0)
		return 0;
	switch (q.kind) {
	case TERM_IN_DATA:
		n = write(j->term_fd, q.data, q.len);
		if (n != (ssize_t)q.len)
			log_warnx("run %llu: %zd of %u bytes of terminal input "
			          "taken",
			    (unsigned long long)j->reqid, n, q.len);
		break;
	case TERM_IN_RESIZE:
		if (j->winsize != NULL) {
			j->winsize->rows = q.rows;
			j->winsize->cols = q.cols;
		}
		break;
	default:
		close(j->term_fd);
		j->term_fd = -1;
		break;
	}
	return 0;
}

/* ---- egress relay (host/vmm_egress.h) -------------------------------- */

int
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

int
vmm_h_egress_decision(struct proc_ctx *ctx, const struct msg *m)
{
	struct vmm_egress_run *r = egress_run_find(ctx->arg, m->hdr.reqid);

	return r != NULL ? vmm_egress_decision(ctx, r, m) : -1;
}

/* A policy was loaded: no run reuses a decision made before it. */
int
vmm_h_policy_changed(struct proc_ctx *ctx, const struct msg *m)
{
	struct vmm_state *vs = ctx->arg;
	size_t i;

	(void)m;
	for (i = 0; i < VMM_JOBS_MAX; i++)
		if (vs->jobs[i].used)
			vmm_egress_reuse_drop(&vs->jobs[i].egress);
	return 0;
}

int
vmm_h_egress_name_reply(struct proc_ctx *ctx, const struct msg *m)
{
	struct vmm_egress_run *r = egress_run_find(ctx->arg, m->hdr.reqid);

	if (r == NULL) {
		if (m->fd >= 0)
			close(m->fd);
		return -1;
	}
	return vmm_egress_name_reply(ctx, r, m);
}

int
vmm_h_egress_reply(struct proc_ctx *ctx, const struct msg *m)
{
	struct vmm_egress_run *r = egress_run_find(ctx->arg, m->hdr.reqid);

	if (r == NULL) {
		close(m->fd);
		return -1;
	}
	return vmm_egress_reply(ctx, r, m);
}

/*
 * The output of streaming runs so far, to the front (RUN_F_STREAM). The
 * program's stdout and stderr are memfds the vm process writes: what is
 * past what was sent goes out, a message of at most 32 KiB at a time and
 * a few per run per pass, so a chatty run does not hold the loop.
 */
int
vmm_stream_outputs(struct proc_ctx *ctx, struct vmm_state *vs)
{
	struct {
		struct msg_vmm_run_output h;
		uint8_t data[32768];
	} m;
	struct stat st;
	ssize_t n;
	size_t i;
	int s, k, streaming = 0;

	for (i = 0; i < VMM_JOBS_MAX; i++) {
		struct job *j = &vs->jobs[i];

		if (!j->used || !j->stream || ctx->fd[j->from] < 0)
			continue;
		streaming = 1;
		for (s = 0; s < 2; s++) {
			int fd = s == 0 ? j->outfd : j->errfd;

			if (j->secrets != NULL) {
				for (k = 0; k < 8; k++)
					if (vmm_secrets_stream(ctx, j, s, fd) <=
					    0)
						break;
				continue;
			}
			for (k = 0; k < 8; k++) {
				if (fstat(fd, &st) == -1 || st.st_size < 0 ||
				    (uint64_t)st.st_size <= j->sent[s])
					break;
				n = pread(fd, m.data, sizeof(m.data),
				    (off_t)j->sent[s]);
				if (n <= 0)
					break;
				memset(&m.h, 0, sizeof(m.h));
				m.h.stream = (uint32_t)s + 1;
				m.h.offset = j->sent[s];
				m.h.pad0 = 0;
				m.h.run_pid = 0;
				if (msg_send(ctx->fd[j->from],
				        MSG_VMM_RUN_OUTPUT, 0, j->reqid, &m,
				        sizeof(m.h) + (size_t)n, -1) != MSG_OK)
					break;
				j->sent[s] += (uint64_t)n;
			}
		}
	}
	return streaming;
}
