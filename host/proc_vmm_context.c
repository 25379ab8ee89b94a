/*
 * Live contexts (docs/contexts.md): an interpreter that keeps its state
 * between cells. Each is a `keepd: vm` process that boots the sandbox's
 * interpreter with keep's driver (image/stock/keep_driver.py, embedded
 * in keepd) and stays up; between cells its guest is blocked reading
 * its stdin, so the VM takes no CPU.
 *
 * A cell goes down a pipe as one frame (magic, an 8-byte nonce, the
 * code, the cell's variables); the driver answers with JSON lines on
 * its descriptor 1 and ends with {"type":"end","nonce":"<hex>"}. The vm
 * process sends every write of the guest here as one datagram tagged
 * with the descriptor (1: the driver's lines, 2: raw output), and this
 * file collects them into the cell's reply. Nothing of it is parsed
 * here beyond the end line: the front decodes the lines as untrusted
 * JSON.
 *
 * A cell past its time limit, past its output limit, or whose
 * interpreter dies is answered with an error line of our own, and the
 * context's interpreter is gone: the next cell starts a fresh one (its
 * state lost, said in the reply).
 */
#include "host/proc_vmm_int.h"

#define CTX_CHUNK 32768 /* bytes of guest output per datagram */
#define CTX_PIPE_SIZE (1u << 20) /* asked for the cell pipe */
#define CTX_OUTPUT_MAX (16u << 20) /* a cell's output without a limit */
#define CTX_HDR_LEN 24 /* "KEEPCELL", nonce[8], u32 code, u32 nenv */

/* build/gen/context_drivers.c, from image/stock/keep_driver.{py,js} */
extern const char keep_driver_py[];
extern const char keep_driver_js[];

static const char *const ctx_program[] = {
	[CTX_LANG_PYTHON] = "python",
	[CTX_LANG_JS] = "js",
};

/* ---- the vm process's side ------------------------------------------- */

/* Every write of the guest to descriptor 1 or 2, to the vmm as
 * datagrams of [fd][bytes]. A vmm that stopped reading blocks this
 * process, never the vmm. */
static void
ctx_sink(void *arg, int fd, const void *buf, size_t len)
{
	const int *sock = arg;
	uint8_t d[1 + CTX_CHUNK];
	size_t n;

	while (len > 0) {
		n = len < CTX_CHUNK ? len : CTX_CHUNK;
		d[0] = fd == 2 ? 2 : 1;
		memcpy(d + 1, buf, n);
		if (write(*sock, d, n + 1) != (ssize_t)(n + 1))
			return;
		buf = (const uint8_t *)buf + n;
		len -= n;
	}
}

/* ---- lifetime --------------------------------------------------------- */

static void
ctx_close_fds(struct vmm_context *c)
{
	if (c->pidfd >= 0)
		close(c->pidfd);
	if (c->in_fd >= 0)
		close(c->in_fd);
	if (c->out_fd >= 0)
		close(c->out_fd);
	c->pidfd = c->in_fd = c->out_fd = -1;
}

static int put_all(int fd, const void *p, size_t len);

/* What the vm process wrote before it ended, into the cell in flight:
 * the last lines of a cell that crashes belong to its reply. */
static void
ctx_drain(struct vmm_context *c)
{
	uint8_t buf[1 + CTX_CHUNK];
	ssize_t n;
	size_t len;

	if (!c->busy || c->out_fd < 0)
		return;
	while ((n = read(c->out_fd, buf, sizeof(buf))) > 0) {
		len = (size_t)n - 1;
		if (c->out_len + c->err_len + len > c->output_max ||
		    put_all(buf[0] == 1 ? c->outfd : c->errfd, buf + 1, len) !=
		        0)
			return;
		if (buf[0] == 1)
			c->out_len += len;
		else
			c->err_len += len;
	}
}

/*
 * The interpreter's whole process tree: the vm process leads its own
 * process group (ctx_spawn) and every guest process is a host process
 * forked from it (host/vmm/proc.c), so the group is the tree. Before its
 * setpgid the vm process has forked nothing and the pid is enough.
 */
static void
ctx_kill_tree(pid_t pid)
{
	if (pid <= 0)
		return;
	kill(-pid, SIGKILL);
	kill(pid, SIGKILL);
}

/* Kill the interpreter and wait for it: a SIGKILLed vm process is gone
 * within milliseconds (its VM torn down by the kernel). */
static void
ctx_stop(struct vmm_context *c)
{
	if (c->pid > 0) {
		ctx_kill_tree(c->pid);
		waitpid(c->pid, NULL, 0);
	}
	ctx_drain(c);
	c->pid = 0;
	c->count = 0;
	ctx_close_fds(c);
}

/* In a vm process (of a run or a context): no context's descriptors. */
void
vmm_contexts_close(struct vmm_state *vs)
{
	size_t i;

	for (i = 0; i < VMM_CONTEXTS_MAX; i++) {
		struct vmm_context *c = &vs->ctxs[i];

		if (!c->used)
			continue;
		ctx_close_fds(c);
		if (c->busy) {
			close(c->outfd);
			close(c->errfd);
		}
	}
}

static int
ctx_spawn(struct proc_ctx *ctx, struct vmm_state *vs, struct vmm_context *c,
    struct sandbox *s, char *reason, size_t rlen)
{
	const struct image_command *cmd;
	struct vmm_file *fv = NULL;
	struct vmm_config cfg;
	struct vmm_result res;
	struct image *img;
	const char *argv[5], *envp[RUN_MAX_ENV + 1];
	int in[2] = { -1, -1 }, out[2] = { -1, -1 };
	size_t i, nenv = 0;
	pid_t pid;

	if ((img = vmm_image_get(ctx, vs, s->image)) == NULL) {
		strlcpy(reason, "the sandbox's image does not verify", rlen);
		return -1;
	}
	if ((cmd = image_command(img, ctx_program[c->language])) == NULL) {
		snprintf(reason, rlen, "the sandbox's image has no %s",
		    ctx_program[c->language]);
		return -1;
	}
	if ((fv = calloc(image_nfiles(img) + 1, sizeof(*fv))) == NULL)
		goto error;
	for (i = 0; i < image_nfiles(img); i++) {
		const struct image_file *f = image_file_at(img, i);

		fv[i].path = f->path;
		fv[i].data = f->data;
		fv[i].len = f->len;
		fv[i].mode = f->mode;
	}
	/* python -c DRIVER CWD; js -e DRIVER (Duktape has no files: no
	 * working directory). */
	argv[0] = cmd->argv0;
	argv[1] = c->language == CTX_LANG_JS ? "-e" : "-c";
	argv[2] = c->language == CTX_LANG_JS ? keep_driver_js : keep_driver_py;
	argv[3] = c->language == CTX_LANG_JS ? NULL : c->cwd;
	argv[4] = NULL;
	for (i = 0; i < s->env_len && nenv < RUN_MAX_ENV;
	     i += strlen(s->env + i) + 1)
		envp[nenv++] = s->env + i;
	envp[nenv] = NULL;
	memset(&cfg, 0, sizeof(cfg));
	cfg.elf = cmd->program->data;
	cfg.elf_len = cmd->program->len;
	cfg.argv = argv;
	cfg.envp = envp;
	cfg.files = fv;
	cfg.nfiles = image_nfiles(img);
	cfg.workspace_fd = s->ws_fd;
	cfg.memory = c->mem_max ? c->mem_max : image_memory(img);
	if (ctx->config != NULL && ctx->config->memory_max != 0 &&
	    cfg.memory > ctx->config->memory_max)
		cfg.memory = ctx->config->memory_max;
	cfg.workspace_max =
	    ctx->config != NULL ? ctx->config->workspace_max : 0;
	if (pipe2(in, O_CLOEXEC) == -1 ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, out) == -1)
		goto error;
	/* Room for a whole cell, so writing one never waits on the guest;
	 * the system's pipe-max-size may grant less (then cells are
	 * limited to what it grants). */
	(void)fcntl(in[1], F_SETPIPE_SZ, CTX_PIPE_SIZE);
	cfg.stdin_fd = in[0];
	cfg.output = ctx_sink;
	cfg.output_arg = &out[1];
	switch (pid = fork()) {
	case -1:
		goto error;
	case 0:
		/* Its own group, before the guest can fork: ctx_kill_tree. */
		setpgid(0, 0);
		close(in[1]);
		close(out[0]);
		memset(&res, 0, sizeof(res));
		vmm_vm_process(ctx, vs, &cfg, NULL, &res, s->id);
	}
	close(in[0]);
	close(out[1]);
	free(fv);
	c->pid = pid;
	c->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	c->in_fd = in[1];
	c->out_fd = out[0];
	c->count = 0;
	if (fcntl(c->in_fd, F_SETFL, O_NONBLOCK) == -1 ||
	    fcntl(c->out_fd, F_SETFL, O_NONBLOCK) == -1 || c->pidfd < 0) {
		ctx_stop(c);
		strlcpy(
		    reason, "the host could not start the interpreter", rlen);
		return -1;
	}
	log_info("context %s: interpreter started in sandbox %s, vm pid %d",
	    c->id, c->sbx, (int)pid);
	return 0;
error:
	log_warn("%s: context %s", __func__, c->id);
	for (i = 0; i < 2; i++) {
		if (in[i] != -1)
			close(in[i]);
		if (out[i] != -1)
			close(out[i]);
	}
	free(fv);
	strlcpy(reason, "the host could not start the interpreter", rlen);
	return -1;
}

/* ---- a cell's reply --------------------------------------------------- */

static void
cell_reply(struct proc_ctx *ctx, enum proc_id to, uint64_t reqid,
    uint32_t status, const char *reason, int fd, uint64_t out_len,
    uint64_t err_len, uint64_t ms)
{
	struct msg_vmm_run_done d;
	int rfd = fd;

	memset(&d, 0, sizeof(d));
	d.status = status;
	d.out_len = out_len;
	d.err_len = err_len;
	d.duration_ms = ms;
	strlcpy(d.reason, reason, sizeof(d.reason));
	if (rfd < 0)
		rfd = memfd_make_sealed("keep-out", NULL, 0);
	if (rfd < 0 || ctx->fd[to] < 0 ||
	    msg_send(ctx->fd[to], MSG_VMM_RUN_DONE, MSG_F_REPLY, reqid, &d,
	        sizeof(d), rfd) != MSG_OK)
		log_warnx("%s: reply for cell %llu lost", __func__,
		    (unsigned long long)reqid);
	if (rfd >= 0 && rfd != fd)
		close(rfd);
}

static int
put_all(int fd, const void *p, size_t len)
{
	/* fd is a memfd of ours: a short write is the host's failure. */
	const char *s = p;
	ssize_t n;

	while (len > 0) {
		if ((n = write(fd, s, len)) <= 0) {
			if (n == -1 && errno == EINTR)
				continue;
			return -1;
		}
		s += n;
		len -= (size_t)n;
	}
	return 0;
}

/*
 * End the cell in flight. name NULL: it ended as the driver said;
 * otherwise the host ended it, and an error line of ours (fixed text,
 * no escaping needed) says why and that the interpreter was restarted.
 */
static void
cell_finish(struct proc_ctx *ctx, struct vmm_context *c, uint32_t status,
    const char *name, const char *value)
{
	char line[512];
	uint64_t out_len = 0, err_len = 0;
	int n;

	if (!c->busy)
		return;
	c->busy = 0;
	if (name != NULL) {
		n = snprintf(line, sizeof(line),
		    "{\"type\":\"error\",\"name\":\"%s\",\"value\":\"%s; the "
		    "context's interpreter was restarted and its state is "
		    "lost\",\"traceback\":\"\"}\n",
		    name, value);
		if (n > 0 && (size_t)n < sizeof(line))
			(void)put_all(c->outfd, line, (size_t)n);
	}
	/* The front takes only a sealed memfd (lib/memfd.c). */
	if (vmm_join_output(c->outfd, c->errfd, &out_len, &err_len) != 0 ||
	    memfd_seal(c->outfd) == -1) {
		status = RUN_ERROR;
		out_len = err_len = 0;
	}
	cell_reply(ctx, c->from, c->reqid, status,
	    status == RUN_ERROR ? "the host lost the cell's output" : "",
	    c->outfd, out_len, err_len, mono_ms() - c->t0);
	close(c->outfd);
	close(c->errfd);
	c->outfd = c->errfd = -1;
}

/* The interpreter is gone (or is made so): the cell in flight, if any,
 * ends with an error; the next cell starts a fresh interpreter. */
static void
ctx_died(struct proc_ctx *ctx, struct vmm_context *c, uint32_t status,
    const char *name, const char *value)
{
	ctx_stop(c);
	cell_finish(ctx, c, status, name, value);
}

static void
ctx_remove(struct proc_ctx *ctx, struct vmm_context *c, const char *why)
{
	ctx_died(ctx, c, RUN_KILLED, "ContextDeleted", why);
	log_info("context %s removed: %s", c->id, why);
	memset(c, 0, sizeof(*c));
	c->pidfd = c->in_fd = c->out_fd = c->outfd = c->errfd = -1;
}

/* ---- events from the vm process --------------------------------------- */

void
vmm_context_event(
    struct proc_ctx *ctx, struct vmm_context *c, int fd, short revents)
{
	uint8_t buf[1 + CTX_CHUNK + 1];
	ssize_t n;
	size_t len;
	int wst;

	if (fd == c->pidfd) {
		if (waitpid(c->pid, &wst, WNOHANG) != c->pid)
			return;
		ctx_drain(c);
		c->pid = 0;
		log_info("context %s: interpreter ended (%s %d)", c->id,
		    WIFSIGNALED(wst) ? "signal" : "status",
		    WIFSIGNALED(wst) ? WTERMSIG(wst) : WEXITSTATUS(wst));
		ctx_died(ctx, c, RUN_FAULT, "ContextDied",
		    "the interpreter ended during the cell");
		return;
	}
	if (fd != c->out_fd)
		return;
	if ((n = read(fd, buf, sizeof(buf))) <= 0) {
		if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
			/* Its end closed: the pidfd says the rest. */
			close(c->out_fd);
			c->out_fd = -1;
		}
		(void)revents;
		return;
	}
	len = (size_t)n - 1;
	if (!c->busy || len > CTX_CHUNK)
		return; /* between cells: nobody asked */
	if (buf[0] == 1 && len == c->end_len &&
	    memcmp(buf + 1, c->end, len) == 0) {
		c->count++;
		cell_finish(ctx, c, RUN_EXITED, NULL, NULL);
		return;
	}
	/* The limit is on both together, as a run's. */
	if (c->out_len + c->err_len + len > c->output_max) {
		ctx_died(ctx, c, RUN_OUTPUT_LIMIT, "OutputLimit",
		    "the cell wrote more than its output limit");
		return;
	}
	if (put_all(buf[0] == 1 ? c->outfd : c->errfd, buf + 1, len) != 0) {
		ctx_died(ctx, c, RUN_ERROR, "HostError",
		    "the host could not keep the cell's output");
		return;
	}
	if (buf[0] == 1)
		c->out_len += len;
	else
		c->err_len += len;
}

/* Time limits, and contexts whose sandbox is gone (deleted, expired). */
void
vmm_contexts_tick(struct proc_ctx *ctx, struct vmm_state *vs)
{
	uint64_t now = mono_ms();
	size_t i;

	for (i = 0; i < VMM_CONTEXTS_MAX; i++) {
		struct vmm_context *c = &vs->ctxs[i];

		if (!c->used)
			continue;
		if (vmm_sandbox_find(vs, c->sbx, c->owner) == NULL)
			ctx_remove(ctx, c, "its sandbox is gone");
		else if (c->busy && now > c->deadline)
			ctx_died(ctx, c, RUN_TIMEOUT, "TimeoutError",
			    "the cell ran past its time limit");
	}
}

void
vmm_contexts_kill_all(struct vmm_state *vs)
{
	size_t i;

	for (i = 0; i < VMM_CONTEXTS_MAX; i++)
		if (vs->ctxs[i].used)
			ctx_kill_tree(vs->ctxs[i].pid);
}

/* ---- a cell ----------------------------------------------------------- */

static struct vmm_context *
ctx_find(
    struct vmm_state *vs, const char *sbx, const char *owner, const char *id)
{
	size_t i;

	for (i = 0; i < VMM_CONTEXTS_MAX; i++) {
		struct vmm_context *c = &vs->ctxs[i];

		if (c->used && strcmp(c->id, id) == 0 &&
		    strcmp(c->sbx, sbx) == 0 && strcmp(c->owner, owner) == 0)
			return c;
	}
	return NULL;
}

static void
put_u32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static uint32_t
get_u32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	    (uint32_t)p[3] << 24;
}

/*
 * The frame for the driver from the request memfd: its one argument
 * (the code) and its variables, each a u32 length and bytes, checked
 * against the memfd's size. Returns the frame's length, 0 when the
 * request is malformed.
 */
static size_t
cell_frame(const uint8_t *in, size_t inlen, uint32_t nenv, uint8_t *out,
    size_t cap, const uint8_t nonce[8])
{
	size_t at = 0, o = CTX_HDR_LEN, len;
	uint32_t i;

	if (cap < CTX_HDR_LEN)
		return 0;
	for (i = 0; i <= nenv; i++) {
		if (inlen - at < 4)
			return 0;
		len = get_u32(in + at);
		at += 4;
		if (inlen - at < len || memchr(in + at, '\0', len) != NULL ||
		    cap - o < len + 4)
			return 0;
		if (i > 0) { /* a variable: its length before it */
			put_u32(out + o, (uint32_t)len);
			o += 4;
		} else
			put_u32(out + 16, (uint32_t)len);
		memcpy(out + o, in + at, len);
		o += len;
		at += len;
	}
	if (at != inlen)
		return 0;
	memcpy(out, "KEEPCELL", 8);
	memcpy(out + 8, nonce, 8);
	put_u32(out + 20, nenv);
	return o;
}

void
vmm_context_cell(struct proc_ctx *ctx, struct vmm_state *vs,
    const struct msg *m, const struct msg_vmm_run *q, const struct grant *g,
    struct sandbox *s)
{
	struct vmm_context *c;
	uint8_t *in = MAP_FAILED, *frame = NULL, nonce[8];
	char reason[96] = "", hex[17];
	uint32_t st = RUN_REFUSED;
	uint64_t timeout;
	size_t flen = 0;
	ssize_t n;
	int room;

	if (memchr(q->context, '\0', sizeof(q->context)) == NULL ||
	    (c = ctx_find(vs, s->id, g->principal, q->context)) == NULL) {
		cell_reply(ctx, m->from, m->hdr.reqid, RUN_NOTFOUND,
		    "no such context in this sandbox", -1, 0, 0, 0);
		return;
	}
	if (c->busy) {
		cell_reply(ctx, m->from, m->hdr.reqid, RUN_REFUSED,
		    "the context is running another cell", -1, 0, 0, 0);
		return;
	}
	if (strcmp(q->command, ctx_program[c->language]) != 0 ||
	    q->nargs != 1 || q->stdin_len != 0 || q->input_len < 4) {
		strlcpy(reason, "a cell is code in the context's language",
		    sizeof(reason));
		goto refuse;
	}
	if ((in = mmap(NULL, q->input_len, PROT_READ, MAP_PRIVATE, m->fd, 0)) ==
	        MAP_FAILED ||
	    (frame = malloc(CTX_HDR_LEN + q->input_len)) == NULL) {
		st = RUN_ERROR;
		strlcpy(
		    reason, "the host could not read the cell", sizeof(reason));
		goto refuse;
	}
	randombytes_buf(nonce, sizeof(nonce));
	if ((flen = cell_frame(in, q->input_len, q->nenv, frame,
	         CTX_HDR_LEN + q->input_len, nonce)) == 0) {
		strlcpy(reason, "malformed cell", sizeof(reason));
		goto refuse;
	}
	if (c->pid == 0 &&
	    ctx_spawn(ctx, vs, c, s, reason, sizeof(reason)) != 0) {
		st = RUN_ERROR;
		goto refuse;
	}
	/* The whole frame goes into the pipe's room at once, or not at all:
	 * between cells the driver has read everything, so the pipe is
	 * empty and a frame that fits its size fits. */
	if ((room = fcntl(c->in_fd, F_GETPIPE_SZ)) > 0 && flen > (size_t)room) {
		strlcpy(reason, "the cell is too large", sizeof(reason));
		goto refuse;
	}
	if ((n = write(c->in_fd, frame, flen)) != (ssize_t)flen) {
		if (n > 0)
			ctx_stop(c); /* half a frame: the driver is lost */
		strlcpy(reason,
		    n > 0 || errno == EAGAIN ? "the cell is too large"
		                             : "the interpreter is not reading",
		    sizeof(reason));
		goto refuse;
	}
	if ((c->outfd = memfd_new("keep-cell-out")) == -1 ||
	    (c->errfd = memfd_new("keep-cell-err")) == -1) {
		if (c->outfd != -1)
			close(c->outfd);
		c->outfd = -1;
		ctx_stop(c);
		st = RUN_ERROR;
		strlcpy(reason, "the host could not take the cell's output",
		    sizeof(reason));
		goto refuse;
	}
	sodium_bin2hex(hex, sizeof(hex), nonce, sizeof(nonce));
	c->end_len = (size_t)snprintf(c->end, sizeof(c->end),
	    "{\"type\":\"end\",\"nonce\":\"%s\"}\n", hex);
	timeout = g->timeout_ms;
	if (ctx->config != NULL) {
		if (timeout == 0)
			timeout = ctx->config->timeout_default_ms;
		if (ctx->config->timeout_max_ms != 0 &&
		    timeout > ctx->config->timeout_max_ms)
			timeout = ctx->config->timeout_max_ms;
	}
	if (q->timeout_ms != 0 && (timeout == 0 || q->timeout_ms < timeout))
		timeout = q->timeout_ms;
	c->output_max = g->output_max ? g->output_max
	    : ctx->config != NULL && ctx->config->output_max
	    ? ctx->config->output_max
	    : CTX_OUTPUT_MAX;
	c->busy = 1;
	c->reqid = m->hdr.reqid;
	c->from = m->from;
	c->t0 = mono_ms();
	c->deadline = timeout ? c->t0 + timeout : UINT64_MAX;
	c->out_len = c->err_len = 0;
	s->runs++;
	goto done;
refuse:
	log_info("cell %llu for context %s refused: %s",
	    (unsigned long long)m->hdr.reqid, c->id, reason);
	cell_reply(ctx, m->from, m->hdr.reqid, st, reason, -1, 0, 0, 0);
done:
	if (in != MAP_FAILED)
		munmap(in, q->input_len);
	free(frame);
}

/* ---- create, list, delete, restart ------------------------------------ */

static void
ctx_info(const struct vmm_context *c, struct vmm_context_info *i)
{
	memset(i, 0, sizeof(*i));
	strlcpy(i->id, c->id, sizeof(i->id));
	strlcpy(i->cwd, c->cwd, sizeof(i->cwd));
	i->language = c->language;
	i->state = c->busy ? CTX_BUSY : c->pid > 0 ? CTX_IDLE : CTX_DEAD;
	i->execution_count = c->count;
	i->created_at = c->created_at;
}

/* A guest path for the driver to chdir to: absolute, printable, no
 * "..", or "" for the workspace's root. */
static int
ctx_cwd_ok(const char *cwd)
{
	size_t i;

	if (cwd[0] == '\0')
		return 1;
	if (cwd[0] != '/' || strstr(cwd, "/..") != NULL)
		return 0;
	for (i = 0; cwd[i] != '\0'; i++)
		if ((unsigned char)cwd[i] < 0x20 || cwd[i] == 0x7f)
			return 0;
	return 1;
}

static uint32_t
ctx_create(struct proc_ctx *ctx, struct vmm_state *vs,
    const struct msg_vmm_context *q, const struct grant *g, struct sandbox *s,
    struct msg_vmm_contexts *r)
{
	struct vmm_context *c = NULL;
	char reason[96];
	size_t i, mine = 0;

	if (!vmm_safe_name(q->context, sizeof(q->context)) ||
	    !ctx_cwd_ok(q->cwd) || q->language >= nitems(ctx_program))
		return SBX_E_INTERNAL;
	for (i = 0; i < VMM_CONTEXTS_MAX; i++) {
		if (!vs->ctxs[i].used) {
			if (c == NULL)
				c = &vs->ctxs[i];
			continue;
		}
		if (strcmp(vs->ctxs[i].id, q->context) == 0)
			return SBX_E_EXISTS;
		if (strcmp(vs->ctxs[i].owner, g->principal) == 0)
			mine++;
	}
	if (c == NULL || (q->max_contexts != 0 && mine >= q->max_contexts))
		return SBX_E_CTX_FULL;
	memset(c, 0, sizeof(*c));
	c->pidfd = c->in_fd = c->out_fd = c->outfd = c->errfd = -1;
	strlcpy(c->id, q->context, sizeof(c->id));
	strlcpy(c->sbx, s->id, sizeof(c->sbx));
	strlcpy(c->owner, g->principal, sizeof(c->owner));
	strlcpy(c->cwd, q->cwd, sizeof(c->cwd));
	c->language = q->language;
	c->created_at = (int64_t)time(NULL);
	c->mem_max = g->mem_max;
	if (ctx_spawn(ctx, vs, c, s, reason, sizeof(reason)) != 0) {
		log_warnx("context %s: %s", c->id, reason);
		memset(c, 0, sizeof(*c));
		c->pidfd = c->in_fd = c->out_fd = c->outfd = c->errfd = -1;
		return SBX_E_IMAGE;
	}
	c->used = 1;
	ctx_info(c, &r->c[0]);
	r->n = 1;
	return SBX_OK;
}

int
vmm_h_context(struct proc_ctx *ctx, const struct msg *m)
{
	struct vmm_state *vs = ctx->arg;
	struct msg_vmm_context q;
	struct msg_vmm_contexts *r;
	struct vmm_context *c;
	struct sandbox *s;
	struct grant g;
	uint32_t cap = CAP_EXEC;
	const char *target;
	char reason[96];
	size_t i;

	memcpy(&q, m->data, sizeof(q));
	if (memchr(q.sandbox, '\0', sizeof(q.sandbox)) == NULL ||
	    memchr(q.context, '\0', sizeof(q.context)) == NULL ||
	    memchr(q.cwd, '\0', sizeof(q.cwd)) == NULL ||
	    q.language >= nitems(ctx_program))
		return -1;
	if ((r = calloc(1, sizeof(*r))) == NULL)
		return -1;
	vmm_expire_sandboxes(vs);
	vmm_contexts_tick(ctx, vs);
	switch (m->hdr.type) {
	case MSG_VMM_CONTEXT_LIST:
		cap = CAP_SANDBOX_READ;
		target = q.sandbox;
		break;
	case MSG_VMM_CONTEXT_DELETE:
	case MSG_VMM_CONTEXT_RESTART:
		/* No program: the interpreter was decided at create, and
		 * every cell is decided again. */
		target = "";
		break;
	default:
		target = ctx_program[q.language];
	}
	if (vmm_check_grant(ctx, m, &q.grant, cap, target, &g) != 0)
		r->status = SBX_E_GRANT;
	else if ((s = vmm_sandbox_find(vs, q.sandbox, g.principal)) == NULL)
		r->status = vmm_not_found(vs);
	else if (m->hdr.type == MSG_VMM_CONTEXT_CREATE)
		r->status = ctx_create(ctx, vs, &q, &g, s, r);
	else if (m->hdr.type == MSG_VMM_CONTEXT_LIST) {
		for (i = 0; i < VMM_CONTEXTS_MAX && r->n < CTX_PAGE_MAX; i++)
			if (vs->ctxs[i].used &&
			    strcmp(vs->ctxs[i].sbx, s->id) == 0 &&
			    strcmp(vs->ctxs[i].owner, g.principal) == 0)
				ctx_info(&vs->ctxs[i], &r->c[r->n++]);
	} else if ((c = ctx_find(vs, s->id, g.principal, q.context)) == NULL)
		r->status = SBX_E_CTX_NOTFOUND;
	else if (m->hdr.type == MSG_VMM_CONTEXT_DELETE)
		ctx_remove(ctx, c, "deleted");
	else {
		ctx_died(ctx, c, RUN_KILLED, "ContextRestarted",
		    "the context was restarted");
		if (ctx_spawn(ctx, vs, c, s, reason, sizeof(reason)) != 0) {
			log_warnx("context %s: %s", c->id, reason);
			r->status = SBX_E_INTERNAL;
		} else {
			ctx_info(c, &r->c[0]);
			r->n = 1;
		}
	}
	memset(&q.grant, 0, sizeof(q.grant));
	msg_reply(ctx, m, MSG_VMM_CONTEXT_REPLY, r, sizeof(*r), -1);
	free(r);
	return 0;
}
