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
 * file collects them into the cell's reply; a client that reads the
 * lines as they come (RUN_F_STREAM) gets each whole one as it is kept.
 * Nothing of it is parsed here beyond the end line and the newlines:
 * the front decodes the lines as untrusted JSON.
 *
 * Every cell the driver ends is acknowledged: appended to the context's
 * journal and fsynced before the reply (host/vmmproc/vmm_ctxdisk.c). A cell
 * past its time limit, past its output limit, or whose interpreter dies
 * is answered with an error line of our own and is not journaled; the
 * interpreter is gone. So is a context's that was idle past its policy's
 * pause time, or that a restarted vmm adopted from disk: in each case
 * the next cell first runs the journal's cells again in a new
 * interpreter (their output dropped), which brings back the state of the
 * last acknowledged cell (docs/contexts.md says what that does and does
 * not restore).
 */
#include "host/vmmproc/vmm_int.h"
#include "lib/fdio.h"

#define CTX_CHUNK 32768 /* bytes of guest output per datagram */
#define CTX_PIPE_SIZE (1u << 20) /* asked for the cell pipe */
#define CTX_OUTPUT_MAX (16u << 20) /* a cell's output without a limit */
#define CTX_HDR_LEN 24 /* "KEEPCELL", nonce[8], u32 code, u32 nenv */
#define CTX_SAVE_MS 10000 /* a pausing interpreter's time to save itself */
/* A fork waits this long for its source's memory image, then takes the
 * journal only: within the front's call timeout (FRONT_CALL_TIMEOUT_MS). */
#define CTX_FORK_WAIT_MS 3000
/* A context journal's `from` while its memory image is a fork's (its
 * PRNGs to be reseeded): names never begin with '~'. */
#define CTX_FROM_FORK "~fork"
#define CTX_FROM_FORK_MOVED "~fork-moved"

/* A fork of a context, waiting for that context to save its memory
 * image: the request, answered by ctx_fork_settle. */
struct ctx_fork_wait {
	uint32_t type; /* MSG_VMM_CONTEXT_FORK or _SNAPSHOT */
	enum proc_id from;
	uint64_t reqid;
	struct msg_vmm_context q;
	struct grant g;
	uint64_t deadline;
};

/* build/gen/context_drivers.c, from image/stock/keep_driver.{py,js} */
extern const char keep_driver_py[];
extern const char keep_driver_js[];

static void ctx_fork_settle(struct proc_ctx *ctx, struct vmm_state *vs,
    struct vmm_context *c, int gone);

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

static void
ctx_init_fds(struct vmm_context *c)
{
	c->pidfd = c->in_fd = c->out_fd = c->outfd = c->errfd = c->jfd = -1;
}

/* One write of the guest, kept for the cell in flight: counted, and
 * for the driver's lines, where the last whole one ends. */
static void
ctx_count(struct vmm_context *c, int fd, const uint8_t *p, size_t len)
{
	const uint8_t *nl;

	if (fd != 1) {
		c->err_len += len;
		return;
	}
	if ((nl = memrchr(p, '\n', len)) != NULL)
		c->line_end = c->out_len + (uint64_t)(nl - p) + 1;
	c->out_len += len;
}

/* What the vm process wrote before it ended, into the cell in flight:
 * the last lines of a cell that crashes belong to its reply. */
static void
ctx_drain(struct vmm_context *c)
{
	uint8_t buf[1 + CTX_CHUNK];
	ssize_t n;
	size_t len;

	/* A pausing interpreter's writes are nobody's, even with a cell
	 * waiting for it (ctx_start_waiting). */
	if (!c->busy || c->saving || c->out_fd < 0)
		return;
	while ((n = read(c->out_fd, buf, sizeof(buf))) > 0) {
		len = (size_t)n - 1;
		if (c->replay_left > 0)
			continue; /* a replayed cell's: nobody's */
		if (c->out_len + c->err_len + len > c->output_max ||
		    write_all(
		        buf[0] == 1 ? c->outfd : c->errfd, buf + 1, len) != 0)
			return;
		ctx_count(c, buf[0], buf + 1, len);
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
	c->replay_left = 0;
	c->saving = c->restoring = 0;
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
		if (c->jfd >= 0)
			close(c->jfd);
		if (c->busy) {
			close(c->outfd);
			close(c->errfd);
		}
	}
}

/*
 * What a memory image was taken on: the image's name, size and last and
 * first pages (its signature and its header), hashed. Another image
 * under the same name has another signature.
 */
static void
ctx_image_id(const struct image *img, uint8_t id[32])
{
	crypto_generichash_state h;
	const uint8_t *b;
	size_t len, part;
	uint64_t n;

	b = image_bytes(img, &len);
	n = len;
	part = len < 4096 ? len : 4096;
	crypto_generichash_init(&h, NULL, 0, 32);
	crypto_generichash_update(
	    &h, (const uint8_t *)image_name(img), strlen(image_name(img)) + 1);
	crypto_generichash_update(&h, (const uint8_t *)&n, sizeof(n));
	crypto_generichash_update(&h, b + len - part, part);
	crypto_generichash_update(&h, b, part);
	crypto_generichash_final(&h, id, 32);
}

static int
ctx_spawn(struct proc_ctx *ctx, struct vmm_state *vs, struct vmm_context *c,
    struct sandbox *s, char *reason, size_t rlen)
{
	uint8_t image_id[32];
	uint64_t mem_size = 0;
	int mem_in = -1, mem_out = -1;
	const struct image_command *cmd;
	struct vmm_file *fv = NULL;
	size_t image_len;
	volatile uint8_t *hints;
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
	/* Checked as for a run: the program here, each file the guest
	 * opens by the VMM (an image with deferred hashes). */
	if (vmm_image_file_check(vs, img, cmd->program) != 0) {
		strlcpy(reason, "the program does not match its hash", rlen);
		return -1;
	}
	if ((fv = vmm_image_files(vs, img, 1, &hints)) == NULL)
		goto error;
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
	cfg.files_sorted = image_files_sorted(img); /* fv is in its order */
	cfg.file_hints = hints;
	cfg.image_fd = image_fd(img, &cfg.image_map, &image_len);
	cfg.image_map_len = image_len;
	cfg.ca_extra = vs->guest_ca;
	cfg.ca_extra_len = vs->guest_ca_len;
	cfg.no_pagemap = 1;
	cfg.workspace_fd = s->ws_fd;
	cfg.memory = c->mem_max ? c->mem_max : image_memory(img);
	if (ctx->config != NULL && ctx->config->memory_max != 0 &&
	    cfg.memory > ctx->config->memory_max)
		cfg.memory = ctx->config->memory_max;
	cfg.workspace_max =
	    ctx->config != NULL ? ctx->config->workspace_max : 0;
	/* A context saves its memory when it pauses or is forked, and one
	 * with an image of all its acknowledged cells starts from it. */
	ctx_image_id(img, image_id);
	if (c->mem_cells != 0 && c->mem_cells == c->jcells && c->jfd >= 0)
		mem_in = vmm_ctxdisk_mem_in(
		    c->sbx, c->id, c->jcells, image_id, &mem_size);
	mem_out = vmm_ctxdisk_mem_out(c->sbx, c->id);
	cfg.snap_save = mem_out >= 0;
	cfg.snap_out_fd = mem_out;
	cfg.snap_restore = mem_in >= 0;
	cfg.snap_in_fd = mem_in;
	cfg.snap_moved = mem_in >= 0 && c->moved;
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
	(void)vmm_sandbox_count_fd(s);
	vmm_sandbox_netns(ctx, s);
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
	c->restoring = mem_in >= 0;
	c->can_save = mem_out >= 0;
	if (mem_in >= 0) {
		/* Its interpreter holds the acknowledged cells already. The
		 * image is used up: the journal stays the state on disk,
		 * and the next pause writes a new one. */
		close(mem_in);
		c->count = c->jcells;
		vmm_ctxdisk_mem_unlink(c->sbx, c->id, 0);
		log_info("context %s: resuming from its memory image "
		         "(%llu KiB, %llu cells)",
		    c->id, (unsigned long long)(mem_size >> 10),
		    (unsigned long long)c->jcells);
	} else if (c->mem_cells != 0) {
		log_info("context %s: its memory image does not fit (another "
		         "image?): resuming from its journal",
		    c->id);
		vmm_ctxdisk_mem_unlink(c->sbx, c->id, 0);
	}
	/* A fork's image is used (or not): its mark goes. A fresh
	 * interpreter running the journal draws fresh seeds itself. */
	if (c->reseed || c->moved)
		(void)vmm_ctxdisk_set_from(c->sbx, c->id, "");
	c->moved = 0;
	if (mem_in < 0)
		c->reseed = 0;
	c->mem_cells = c->mem_bytes = 0;
	if (mem_out >= 0)
		close(mem_out);
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
	if (mem_in >= 0)
		close(mem_in);
	if (mem_out >= 0)
		close(mem_out);
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

/* A streaming cell's start, before anything of it (a replay, its
 * lines, its end): its client's head goes out now. */
static void
cell_started(struct proc_ctx *ctx, struct vmm_context *c)
{
	struct msg_vmm_run_output h;

	memset(&h, 0, sizeof(h));
	h.stream = 1;
	if (ctx->fd[c->from] < 0 ||
	    msg_send(ctx->fd[c->from], MSG_VMM_RUN_OUTPUT, 0, c->reqid, &h,
	        sizeof(h), -1) != MSG_OK)
		log_warnx("cell %llu: its start not told",
		    (unsigned long long)c->reqid);
}

/*
 * A streaming cell's whole lines, to the front as they come: what the
 * driver wrote up to its last newline past what went out, read back
 * from the cell's memfd, so only what passed the output limit, outside
 * a replay and not the end line (vmm_context_event) leaves, whole lines
 * only. The front decodes each as untrusted and holds
 * number_of_executions for the reply, which comes after the journal.
 * A line after a quiet spell goes at once; a chatty cell's go together
 * every VMM_STREAM_MS, a few messages of at most CTX_CHUNK a cell a
 * pass, so none holds the loop.
 */
int
vmm_contexts_stream(struct proc_ctx *ctx, struct vmm_state *vs)
{
	struct {
		struct msg_vmm_run_output h;
		uint8_t data[CTX_CHUNK];
	} m;
	uint64_t now = mono_ms(), n;
	ssize_t got;
	size_t i;
	int k, streaming = 0;

	for (i = 0; i < VMM_CONTEXTS_MAX; i++) {
		struct vmm_context *c = &vs->ctxs[i];

		if (!c->used || !c->busy || !c->stream || c->outfd < 0 ||
		    ctx->fd[c->from] < 0)
			continue;
		streaming = 1;
		if (c->line_end <= c->sent ||
		    now < c->stream_at + VMM_STREAM_MS)
			continue;
		for (k = 0; k < 8 && c->sent < c->line_end; k++) {
			n = c->line_end - c->sent;
			if (n > sizeof(m.data))
				n = sizeof(m.data);
			if ((got = pread(c->outfd, m.data, (size_t)n,
			         (off_t)c->sent)) <= 0)
				break;
			memset(&m.h, 0, sizeof(m.h));
			m.h.stream = 1;
			m.h.offset = c->sent;
			m.h.pad0 = 0;
			m.h.run_pid = 0;
			if (msg_send(ctx->fd[c->from], MSG_VMM_RUN_OUTPUT, 0,
			        c->reqid, &m, sizeof(m.h) + (size_t)got,
			        -1) != MSG_OK)
				break;
			c->sent += (uint64_t)got;
		}
		/* Caught up: the next line waits out the spell. */
		if (c->sent >= c->line_end)
			c->stream_at = now;
	}
	return streaming;
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
	const char *why = value;
	uint64_t out_len = 0, err_len = 0;
	int n;

	if (!c->busy)
		return;
	c->busy = 0;
	free(c->frame);
	c->frame = NULL;
	c->frame_len = 0;
	if (name != NULL) {
		/* A line the driver had not ended (a cell stopped while it
		 * wrote) would swallow ours. */
		n = snprintf(line, sizeof(line),
		    "%s{\"type\":\"error\",\"name\":\"%s\",\"value\":\"%s\","
		    "\"traceback\":\"\"}\n",
		    c->out_len != c->line_end ? "\n" : "", name, value);
		if (n > 0 && (size_t)n < sizeof(line))
			(void)write_all(c->outfd, line, (size_t)n);
	}
	/* The front takes only a sealed memfd (lib/memfd.c). */
	if (vmm_join_output(c->outfd, c->errfd, &out_len, &err_len) != 0 ||
	    memfd_seal(c->outfd) == -1) {
		status = RUN_ERROR;
		out_len = err_len = 0;
		why = NULL;
	}
	/* A host error's reply says which (the journal, the interpreter's
	 * pipe, ...): its output, with the same words, is not sent. */
	if (status == RUN_ERROR && name != NULL && why != NULL)
		log_warnx("context %s: %s", c->id, why);
	cell_reply(ctx, c->from, c->reqid, status,
	    status != RUN_ERROR ? ""
	        : why != NULL && name != NULL
	        ? why
	        : "the host lost the cell's output",
	    c->outfd, out_len, err_len, mono_ms() - c->t0);
	close(c->outfd);
	close(c->errfd);
	c->outfd = c->errfd = -1;
}

/* The interpreter is gone (or is made so): the cell in flight, if any,
 * ends with an error whose value is said in full. */
static void
ctx_died(struct proc_ctx *ctx, struct vmm_context *c, uint32_t status,
    const char *name, const char *value)
{
	ctx_stop(c);
	cell_finish(ctx, c, status, name, value);
}

/* The cell in flight went wrong: the interpreter is stopped, and the
 * reply says what the context is now. No quotes or backslashes in what:
 * it goes into JSON as it is. */
static void
ctx_lost(struct proc_ctx *ctx, struct vmm_context *c, uint32_t status,
    const char *name, const char *what)
{
	char v[320];

	if (c->replay_left > 0)
		snprintf(v, sizeof(v),
		    "%s while bringing back acknowledged cell %llu of %llu; "
		    "the cell did not run; the context is paused with its "
		    "journal, tried again at the next cell (restart it to "
		    "start empty)",
		    what, (unsigned long long)(c->jcells - c->replay_left + 1),
		    (unsigned long long)c->jcells);
	else if (c->jfd >= 0)
		snprintf(v, sizeof(v),
		    "%s; the context is back at its last acknowledged cell "
		    "(%llu): its interpreter was stopped and the next cell "
		    "runs the %llu acknowledged cells again first",
		    what, (unsigned long long)c->jcells,
		    (unsigned long long)c->jcells);
	else
		snprintf(v, sizeof(v),
		    "%s; the context's interpreter was restarted and its "
		    "state is lost",
		    what);
	if (c->replay_left > 0)
		name = "RestoreFailed";
	ctx_died(ctx, c, status, name, v);
}

static void
ctx_remove(struct proc_ctx *ctx, struct vmm_context *c, const char *why,
    int unlink_journal)
{
	char v[96];

	snprintf(v, sizeof(v), "the context was removed: %s", why);
	ctx_fork_settle(ctx, NULL, c, 1);
	ctx_died(ctx, c, RUN_KILLED, "ContextDeleted", v);
	log_info("context %s removed: %s", c->id, why);
	if (c->jfd >= 0)
		close(c->jfd);
	if (unlink_journal) {
		vmm_ctxdisk_unlink(c->sbx, CTX_JOURNAL_CONTEXT, c->id);
		vmm_ctxdisk_mem_unlink(c->sbx, c->id, 1);
	}
	memset(c, 0, sizeof(*c));
	ctx_init_fds(c);
}

/* The frame for payload p (a journal record's), with a fresh nonce and
 * the end line to wait for. malloc'd. */
static uint8_t *
ctx_frame_for(struct vmm_context *c, const uint8_t *p, size_t len)
{
	uint8_t *f, nonce[8];
	char hex[17];

	if ((f = malloc(16 + len)) == NULL)
		return NULL;
	randombytes_buf(nonce, sizeof(nonce));
	memcpy(f, "KEEPCELL", 8);
	memcpy(f + 8, nonce, 8);
	memcpy(f + 16, p, len);
	sodium_bin2hex(hex, sizeof(hex), nonce, sizeof(nonce));
	c->end_len = (size_t)snprintf(c->end, sizeof(c->end),
	    "{\"type\":\"end\",\"nonce\":\"%s\"}\n", hex);
	return f;
}

static int
ctx_write_frame(struct vmm_context *c, const uint8_t *f, size_t len)
{
	int room = fcntl(c->in_fd, F_GETPIPE_SZ);

	if (room > 0 && len > (size_t)room)
		return -1;
	return write(c->in_fd, f, len) == (ssize_t)len ? 0 : -1;
}

/*
 * A fork's interpreter, restored from the memory of the context it
 * forked, holds that one's PRNG states: before its first cell the driver
 * reseeds them (KEEPSEED, image/stock/keep_driver.py). Duktape has no
 * way to reseed Math.random: a js fork draws what its source draws
 * (docs/contexts.md).
 */
static int
ctx_write_seed(struct vmm_context *c)
{
	uint8_t f[CTX_HDR_LEN];

	c->reseed = 0;
	if (c->language != CTX_LANG_PYTHON)
		return 0;
	memset(f, 0, sizeof(f));
	memcpy(f, "KEEPSEED", 8);
	randombytes_buf(f + 8, 8);
	return ctx_write_frame(c, f, sizeof(f));
}

/* Each step has its own time limit: the cell its own (what the request
 * asked, within the policy's); a journal's cell run again the policy's,
 * as each of them once ran within it (a request's shorter limit is for
 * its own cell, not for bringing the context back). */
static void
ctx_arm(struct vmm_context *c)
{
	uint64_t now = mono_ms(),
	         t = c->replay_left > 0 ? c->replay_timeout : c->cell_timeout;

	c->deadline = t ? now + t : UINT64_MAX;
}

/*
 * The next step of a cell: the next journal record to run again, or,
 * once none is left, the cell itself (its frame made when it came).
 */
static void
ctx_step(struct proc_ctx *ctx, struct vmm_context *c)
{
	uint8_t *p = NULL, *f;
	size_t len;
	int rc;

	if (c->replay_left == 0) {
		/* The cell's own nonce is in its frame. */
		char hex[17];

		sodium_bin2hex(hex, sizeof(hex), c->frame + 8, 8);
		c->end_len = (size_t)snprintf(c->end, sizeof(c->end),
		    "{\"type\":\"end\",\"nonce\":\"%s\"}\n", hex);
		ctx_arm(c);
		if (c->reseed && ctx_write_seed(c) != 0) {
			ctx_lost(ctx, c, RUN_ERROR, "HostError",
			    "the interpreter did not take its seed");
			return;
		}
		if (ctx_write_frame(c, c->frame, c->frame_len) != 0)
			ctx_lost(ctx, c, RUN_ERROR, "HostError",
			    "the interpreter did not take the cell");
		return;
	}
	if (vmm_ctxdisk_read(c->jfd, &c->replay_at, &p, &len) != 0 ||
	    (f = ctx_frame_for(c, p, len)) == NULL) {
		free(p);
		ctx_lost(ctx, c, RUN_ERROR, "HostError",
		    "the host could not read the journal");
		return;
	}
	free(p);
	ctx_arm(c);
	rc = ctx_write_frame(c, f, 16 + len);
	free(f);
	if (rc != 0)
		ctx_lost(ctx, c, RUN_ERROR, "HostError",
		    "the interpreter did not take a journal's cell");
}

/* The driver ended the cell in flight: acknowledge it (journal, then
 * reply), or go on with the replay. */
static void
ctx_cell_done(struct proc_ctx *ctx, struct vmm_context *c)
{
	c->count++;
	c->restoring = 0;
	if (c->replay_left > 0) {
		c->replay_left--;
		ctx_step(ctx, c);
		return;
	}
	if (c->jfd >= 0) {
		if (vmm_ctxdisk_append(c->jfd, &c->jbytes, c->frame + 16,
		        c->frame_len - 16) != 0) {
			ctx_lost(ctx, c, RUN_ERROR, "HostError",
			    "the host could not record the cell");
			return;
		}
		c->jcells++;
	}
	c->last_used = mono_ms();
	cell_finish(ctx, c, RUN_EXITED, NULL, NULL);
}

/*
 * Make ready for the cell of flen bytes: an interpreter if there is none
 * (from the context's memory image, if it has one). 0, or a RUN_*
 * status with reason.
 */
static uint32_t
ctx_start(struct proc_ctx *ctx, struct vmm_state *vs, struct vmm_context *c,
    struct sandbox *s, size_t flen, char *reason, size_t rlen)
{
	int room;

	if (c->pid == 0 && ctx_spawn(ctx, vs, c, s, reason, rlen) != 0)
		return RUN_ERROR;
	/* A frame goes into the pipe's room at once, or not at all:
	 * between cells the driver has read everything, so the pipe is
	 * empty and a frame that fits its size fits. */
	if ((room = fcntl(c->in_fd, F_GETPIPE_SZ)) > 0 &&
	    flen + CTX_HDR_LEN > (size_t)room) {
		strlcpy(reason, "the cell is too large", rlen);
		return RUN_REFUSED;
	}
	return 0;
}

/* Send the cell in flight; a new interpreter first runs the journal's
 * cells again. */
static void
ctx_go(struct proc_ctx *ctx, struct vmm_context *c)
{
	if (c->count == 0 && c->jcells > 0 && c->jfd >= 0) {
		c->replay_left = c->jcells;
		c->replay_at = sizeof(struct ctx_journal_head);
		log_info("context %s: resuming, %llu cells to run again", c->id,
		    (unsigned long long)c->jcells);
	}
	ctx_step(ctx, c);
}

/* The cell that waited for the interpreter to save itself (or for one
 * that could not take its memory image) starts now. */
static void
ctx_start_waiting(
    struct proc_ctx *ctx, struct vmm_state *vs, struct vmm_context *c)
{
	struct sandbox *s;
	char reason[96] = "";

	if (!c->busy)
		return;
	/* A sandbox gone meanwhile: the next tick removes the context. */
	if ((s = vmm_sandbox_find(vs, c->sbx, c->owner)) == NULL)
		return;
	if (ctx_start(ctx, vs, c, s, c->frame_len, reason, sizeof(reason)) !=
	    0) {
		ctx_died(ctx, c, RUN_ERROR, "HostError", reason);
		return;
	}
	ctx_go(ctx, c);
}

/* ---- pausing: the memory image ---------------------------------------- */

/* What a principal's journals, memory images and snapshots hold on
 * disk. */
static uint64_t
ctx_disk_used(const struct vmm_state *vs, const char *owner)
{
	uint64_t sum = 0;
	size_t i;

	for (i = 0; i < VMM_CONTEXTS_MAX; i++)
		if (vs->ctxs[i].used && strcmp(vs->ctxs[i].owner, owner) == 0)
			sum += vs->ctxs[i].jbytes + vs->ctxs[i].mem_bytes;
	for (i = 0; i < VMM_SNAPSHOTS_MAX; i++)
		if (vs->snaps[i].used &&
		    strcmp(vs->snaps[i].h.owner, owner) == 0)
			sum += vs->snaps[i].bytes + vs->snaps[i].mem_bytes;
	return sum;
}

/* Ask an idle interpreter to save itself and end (host/vmm/snapshot.c);
 * it has CTX_SAVE_MS. */
static void
ctx_pause(struct vmm_context *c)
{
	if (kill(c->pid, SIGUSR1) == -1) {
		ctx_stop(c);
		return;
	}
	c->saving = 1;
	c->save_deadline = mono_ms() + CTX_SAVE_MS;
	log_info("context %s idle for %llu ms: it saves its memory image",
	    c->id, (unsigned long long)c->pause_ms);
}

/* The pausing interpreter ended (wst from waitpid): sealed, its image
 * is the context's state until the next cell; else its journal is. */
static void
ctx_paused(
    struct proc_ctx *ctx, struct vmm_state *vs, struct vmm_context *c, int wst)
{
	struct sandbox *s = vmm_sandbox_find(vs, c->sbx, c->owner);
	struct image *img;
	uint8_t image_id[32];
	uint64_t size = 0, count = c->count;
	const char *why = NULL;

	/* Anything the guest forked is gone with it. */
	kill(-c->pid, SIGKILL);
	c->pid = 0;
	ctx_stop(c);
	if (!WIFEXITED(wst) || WEXITSTATUS(wst) != VMM_EXIT_SAVED)
		why = WIFEXITED(wst) && WEXITSTATUS(wst) == VMM_EXIT_UNSAVED
		    ? "its state cannot be saved (the vm log says why)"
		    : "it did not save itself";
	else if (count != c->jcells)
		why = "it holds cells its journal does not";
	else if (s == NULL || (img = vmm_image_get(ctx, vs, s->image)) == NULL)
		why = "its image is gone";
	else {
		ctx_image_id(img, image_id);
		if ((size = vmm_ctxdisk_mem_seal(
		         c->sbx, c->id, c->jcells, image_id)) == 0)
			why = "its image is not whole";
		else if (c->disk_max != 0 &&
		    ctx_disk_used(vs, c->owner) + size > c->disk_max)
			why = "its image would pass the snapshot quota";
	}
	if (why != NULL) {
		vmm_ctxdisk_mem_unlink(c->sbx, c->id, 1);
		c->mem_cells = c->mem_bytes = 0;
		log_info("context %s paused after %llu ms idle; it resumes "
		         "from its journal: %s (%s %d)",
		    c->id, (unsigned long long)c->pause_ms, why,
		    WIFSIGNALED(wst) ? "signal" : "status",
		    WIFSIGNALED(wst) ? WTERMSIG(wst) : WEXITSTATUS(wst));
	} else {
		c->mem_cells = c->jcells;
		c->mem_bytes = size;
		log_info("context %s paused after %llu ms idle: its memory "
		         "image (%llu KiB) is on disk",
		    c->id, (unsigned long long)c->pause_ms,
		    (unsigned long long)(size >> 10));
	}
	ctx_fork_settle(ctx, vs, c, 0);
	vmm_forks_saved(ctx, vs);
	ctx_start_waiting(ctx, vs, c);
}

/* The interpreter started from a memory image could not take it (a
 * cell waits): start a fresh one, which runs the journal first. */
static void
ctx_restore_failed(
    struct proc_ctx *ctx, struct vmm_state *vs, struct vmm_context *c)
{
	log_warnx("context %s: its memory image could not be restored; "
	          "resuming from its journal",
	    c->id);
	ctx_stop(c);
	ctx_start_waiting(ctx, vs, c);
}

/* ---- events from the vm process --------------------------------------- */

void
vmm_context_event(struct proc_ctx *ctx, struct vmm_state *vs,
    struct vmm_context *c, int fd, short revents)
{
	uint8_t buf[1 + CTX_CHUNK + 1];
	ssize_t n;
	size_t len;
	int wst;

	if (fd == c->pidfd) {
		if (waitpid(c->pid, &wst, WNOHANG) != c->pid)
			return;
		if (c->saving) {
			ctx_paused(ctx, vs, c, wst);
			return;
		}
		if (c->restoring && c->busy && WIFEXITED(wst) &&
		    WEXITSTATUS(wst) == VMM_EXIT_RESTORE_FAILED) {
			c->pid = 0;
			ctx_restore_failed(ctx, vs, c);
			return;
		}
		ctx_drain(c);
		c->pid = 0;
		log_info("context %s: interpreter ended (%s %d)", c->id,
		    WIFSIGNALED(wst) ? "signal" : "status",
		    WIFSIGNALED(wst) ? WTERMSIG(wst) : WEXITSTATUS(wst));
		ctx_lost(ctx, c, RUN_FAULT, "ContextDied",
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
		ctx_cell_done(ctx, c);
		return;
	}
	if (c->replay_left > 0)
		return; /* a replayed cell's output: nobody's */
	/* The limit is on both together, as a run's. */
	if (c->out_len + c->err_len + len > c->output_max) {
		ctx_lost(ctx, c, RUN_OUTPUT_LIMIT, "OutputLimit",
		    "the cell wrote more than its output limit");
		return;
	}
	if (write_all(buf[0] == 1 ? c->outfd : c->errfd, buf + 1, len) != 0) {
		ctx_lost(ctx, c, RUN_ERROR, "HostError",
		    "the host could not keep the cell's output");
		return;
	}
	ctx_count(c, buf[0], buf + 1, len);
}

/* Time limits, and contexts whose sandbox is gone (deleted, expired). */
void
vmm_contexts_tick(struct proc_ctx *ctx, struct vmm_state *vs)
{
	uint64_t now = mono_ms();
	size_t i;

	/* A snapshot's file went with its sandbox's directory. */
	for (i = 0; i < VMM_SNAPSHOTS_MAX; i++)
		if (vs->snaps[i].used &&
		    vmm_sandbox_find(
		        vs, vs->snaps[i].h.sbx, vs->snaps[i].h.owner) == NULL)
			memset(&vs->snaps[i], 0, sizeof(vs->snaps[i]));
	for (i = 0; i < VMM_CONTEXTS_MAX; i++) {
		struct vmm_context *c = &vs->ctxs[i];

		if (!c->used)
			continue;
		if (vmm_sandbox_find(vs, c->sbx, c->owner) == NULL)
			ctx_remove(ctx, c, "its sandbox is gone", 1);
		else if (c->busy && now > c->deadline)
			ctx_lost(ctx, c, RUN_TIMEOUT, "TimeoutError",
			    "the cell ran past its time limit");
		else if (c->saving && now > c->save_deadline) {
			log_warnx("context %s: did not save itself in time; it "
			          "resumes from its journal",
			    c->id);
			ctx_stop(c);
			vmm_ctxdisk_mem_unlink(c->sbx, c->id, 1);
			ctx_fork_settle(ctx, vs, c, 0);
			vmm_forks_saved(ctx, vs);
			ctx_start_waiting(ctx, vs, c);
		} else if (c->fork_wait != NULL &&
		    now > c->fork_wait->deadline) {
			/* The fork takes the journal; the save goes on, for
			 * this context alone. */
			ctx_fork_settle(ctx, vs, c, 0);
		} else if (!c->busy && !c->saving && c->pid > 0 &&
		    c->jfd >= 0 && c->pause_ms != 0 &&
		    now - c->last_used >= c->pause_ms) {
			/* Its state is its journal, and its memory image if
			 * it saves one: the VM can go. */
			if (c->can_save && c->jcells > 0 &&
			    c->count == c->jcells)
				ctx_pause(c);
			else {
				ctx_stop(c);
				log_info("context %s paused after %llu ms idle",
				    c->id, (unsigned long long)c->pause_ms);
			}
		}
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

/* A cell's time limit: the grant's, else keepd.yaml's default, capped
 * by its maximum, and by what the request asked (q NULL: none); 0: no
 * limit. */
static uint64_t
cell_timeout(
    struct proc_ctx *ctx, const struct grant *g, const struct msg_vmm_run *q)
{
	uint64_t timeout = g->timeout_ms;

	if (ctx->config != NULL) {
		if (timeout == 0)
			timeout = ctx->config->timeout_default_ms;
		if (ctx->config->timeout_max_ms != 0 &&
		    timeout > ctx->config->timeout_max_ms)
			timeout = ctx->config->timeout_max_ms;
	}
	if (q != NULL && q->timeout_ms != 0 &&
	    (timeout == 0 || q->timeout_ms < timeout))
		timeout = q->timeout_ms;
	return timeout;
}

void
vmm_context_cell(struct proc_ctx *ctx, struct vmm_state *vs,
    const struct msg *m, const struct msg_vmm_run *q, const struct grant *g,
    struct sandbox *s)
{
	struct vmm_context *c;
	uint8_t *in = MAP_FAILED, *frame = NULL, nonce[8];
	char reason[96] = "";
	uint32_t st = RUN_REFUSED;
	size_t flen = 0;

	if (memchr(q->context, '\0', sizeof(q->context)) == NULL ||
	    (c = ctx_find(vs, s->id, g->principal, q->context)) == NULL) {
		/* Contexts are adopted once every sandbox is back: until
		 * then the front answers "restoring" with 503. */
		if (vs->restore != NULL)
			cell_reply(ctx, m->from, m->hdr.reqid, RUN_REFUSED,
			    "restoring: the context is not back yet", -1, 0, 0,
			    0);
		else
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
	if (c->disk_max != 0 &&
	    ctx_disk_used(vs, c->owner) + CTX_JOURNAL_REC_HDR + flen - 16 >
	        c->disk_max) {
		strlcpy(reason,
		    "the snapshot quota is reached (snapshots in the policy)",
		    sizeof(reason));
		goto refuse;
	}
	/* A cell for an interpreter that is saving itself waits for it to
	 * end (ctx_paused): the vmm's loop goes on meanwhile. */
	if (!c->saving &&
	    (st = ctx_start(ctx, vs, c, s, flen, reason, sizeof(reason))) != 0)
		goto refuse;
	if ((c->outfd = memfd_new("keep-cell-out")) == -1 ||
	    (c->errfd = memfd_new("keep-cell-err")) == -1) {
		if (c->outfd != -1)
			close(c->outfd);
		c->outfd = -1;
		st = RUN_ERROR;
		strlcpy(reason, "the host could not take the cell's output",
		    sizeof(reason));
		goto refuse;
	}
	c->cell_timeout = cell_timeout(ctx, g, q);
	c->replay_timeout = cell_timeout(ctx, g, NULL);
	c->output_max = g->output_max ? g->output_max
	    : ctx->config != NULL && ctx->config->output_max
	    ? ctx->config->output_max
	    : CTX_OUTPUT_MAX;
	c->busy = 1;
	c->reqid = m->hdr.reqid;
	c->from = m->from;
	c->out_len = c->err_len = c->line_end = 0;
	c->frame = frame;
	c->frame_len = flen;
	frame = NULL;
	c->t0 = mono_ms();
	c->stream = (q->flags & RUN_F_STREAM) != 0;
	c->sent = c->stream_at = 0;
	if (c->stream)
		cell_started(ctx, c);
	if (c->saving) {
		/* The save has its own deadline; the cell's starts with it. */
		c->deadline = UINT64_MAX;
		log_info("cell %llu for context %s waits for it to pause",
		    (unsigned long long)m->hdr.reqid, c->id);
	} else
		ctx_go(ctx, c);
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
	i->state = c->busy ? CTX_BUSY
	    : c->pid > 0   ? CTX_IDLE
	    : c->jfd >= 0  ? CTX_PAUSED
	                   : CTX_DEAD;
	i->execution_count = c->pid > 0 ? c->count : c->jcells;
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

static void
ctx_head(const struct vmm_context *c, struct ctx_journal_head *h)
{
	memset(h, 0, sizeof(*h));
	memcpy(h->magic, CTX_JOURNAL_MAGIC, 8);
	strlcpy(h->name, c->id, sizeof(h->name));
	strlcpy(h->sbx, c->sbx, sizeof(h->sbx));
	strlcpy(h->owner, c->owner, sizeof(h->owner));
	strlcpy(h->cwd, c->cwd, sizeof(h->cwd));
	h->language = c->language;
	h->kind = CTX_JOURNAL_CONTEXT;
	h->created_at = c->created_at;
	h->mem_max = c->mem_max;
	h->pause_ms = c->pause_ms;
	h->disk_max = c->disk_max;
	if (c->reseed)
		strlcpy(h->from, c->moved ? CTX_FROM_FORK_MOVED : CTX_FROM_FORK,
		    sizeof(h->from));
}

/*
 * The context's journal on disk: a copy of src's first src_bytes (its
 * cells) for a fork or a restored snapshot, else empty. A context whose
 * journal cannot be written still runs, without persistence (its list
 * entry and every lost cell's reply say so: "dead", "state is lost").
 */
static void
ctx_journal_open(
    struct vmm_context *c, int src_fd, uint64_t src_bytes, uint64_t cells)
{
	struct ctx_journal_head h;

	ctx_head(c, &h);
	c->jfd = vmm_ctxdisk_create(&h, src_fd, src_bytes, 1);
	c->jbytes = c->jfd >= 0 ? (src_fd >= 0 ? src_bytes : sizeof(h)) : 0;
	c->jcells = c->jfd >= 0 ? cells : 0;
	c->last_used = mono_ms();
	if (c->jfd < 0)
		log_warnx("context %s: no journal: it will not survive its "
		          "interpreter",
		    c->id);
}

/* The name a memory image has on disk beside its journal: a context's
 * id, or "snap-NAME" for a named snapshot's. */
static void
snap_file_id(char *out, size_t len, const char *name)
{
	snprintf(out, len, "snap-%s", name);
}

/*
 * Give context n (just made, with a copy of a journal of `cells` cells)
 * the memory image `file` of sandbox sbx (a context's, or a named
 * snapshot's) of `bytes`: linked in, and marked in n's journal so that
 * n's PRNGs are reseeded, even after a restart. Without it (none, the
 * quota, the disk), n resumes from its journal. what names the source
 * in the log.
 */
static void
ctx_give_image(struct vmm_state *vs, const char *sbx, const char *file,
    uint64_t bytes, uint64_t cells, const char *what, struct vmm_context *n)
{
	if (cells == 0 || cells != n->jcells)
		return;
	if (n->disk_max != 0 &&
	    ctx_disk_used(vs, n->owner) + bytes > n->disk_max) {
		log_info("context %s: its memory image would pass the snapshot "
		         "quota: it resumes from its journal",
		    n->id);
		return;
	}
	n->reseed = 1;
	n->moved = strcmp(sbx, n->sbx) != 0;
	if (vmm_ctxdisk_set_from(n->sbx, n->id,
	        n->moved ? CTX_FROM_FORK_MOVED : CTX_FROM_FORK) != 0 ||
	    vmm_ctxdisk_mem_link(sbx, file, n->sbx, n->id) != 0) {
		/* Unmarked, a restarted vmm would not reseed it: no image. */
		(void)vmm_ctxdisk_set_from(n->sbx, n->id, "");
		n->reseed = n->moved = 0;
		return;
	}
	n->mem_cells = cells;
	n->mem_bytes = bytes;
	log_info("context %s%s%s: from %s with its memory image (%llu KiB)",
	    n->id, n->moved ? " of sandbox " : "", n->moved ? n->sbx : "", what,
	    (unsigned long long)(bytes >> 10));
}

/* A fork n of context c gets c's memory image, if it has one of all its
 * acknowledged cells. */
static void
ctx_fork_image(
    struct vmm_state *vs, const struct vmm_context *c, struct vmm_context *n)
{
	char what[CTX_ID_MAX + 16];

	if (c->mem_cells != c->jcells)
		return;
	snprintf(what, sizeof(what), "a fork of %s", c->id);
	ctx_give_image(vs, c->sbx, c->id, c->mem_bytes, c->mem_cells, what, n);
}

/* A journal found on disk by a restarted vmm: a paused context. */
int
vmm_context_adopt(struct vmm_state *vs, const struct ctx_journal_head *h,
    int fd, uint64_t cells, uint64_t bytes)
{
	struct vmm_context *c = NULL;
	size_t i;
	int mfd;

	for (i = 0; i < VMM_CONTEXTS_MAX; i++) {
		if (!vs->ctxs[i].used && c == NULL)
			c = &vs->ctxs[i];
		else if (vs->ctxs[i].used &&
		    strcmp(vs->ctxs[i].id, h->name) == 0 &&
		    strcmp(vs->ctxs[i].sbx, h->sbx) == 0)
			return -1;
	}
	if (c == NULL || !ctx_cwd_ok(h->cwd))
		return -1;
	memset(c, 0, sizeof(*c));
	ctx_init_fds(c);
	strlcpy(c->id, h->name, sizeof(c->id));
	strlcpy(c->sbx, h->sbx, sizeof(c->sbx));
	strlcpy(c->owner, h->owner, sizeof(c->owner));
	strlcpy(c->cwd, h->cwd, sizeof(c->cwd));
	c->language = h->language;
	c->created_at = h->created_at;
	c->mem_max = h->mem_max;
	c->pause_ms = h->pause_ms;
	c->disk_max = h->disk_max;
	c->jfd = fd;
	c->jcells = cells;
	c->jbytes = bytes;
	c->used = 1;
	/* Its memory image, if it holds exactly the journal's cells (the
	 * image it was taken on is checked when it is used). */
	if (cells > 0 &&
	    (mfd = vmm_ctxdisk_mem_in(
	         c->sbx, c->id, cells, NULL, &c->mem_bytes)) >= 0) {
		close(mfd);
		c->mem_cells = cells;
		c->moved = strcmp(h->from, CTX_FROM_FORK_MOVED) == 0;
		c->reseed = c->moved || strcmp(h->from, CTX_FROM_FORK) == 0;
	} else {
		vmm_ctxdisk_mem_unlink(c->sbx, c->id, 1);
		c->mem_bytes = 0;
	}
	log_info("context %s in sandbox %s adopted, paused (%llu cells%s)",
	    c->id, c->sbx, (unsigned long long)cells,
	    c->mem_cells ? ", a memory image" : "");
	return 0;
}

int
vmm_snapshot_adopt(struct vmm_state *vs, const struct ctx_journal_head *h,
    uint64_t cells, uint64_t bytes)
{
	size_t i;

	char file[CTX_ID_MAX + 8];
	int mfd;

	for (i = 0; i < VMM_SNAPSHOTS_MAX; i++)
		if (!vs->snaps[i].used) {
			struct vmm_snapshot *n = &vs->snaps[i];

			memset(n, 0, sizeof(*n));
			n->used = 1;
			n->h = *h;
			n->cells = cells;
			n->bytes = bytes;
			/* Its memory image, if it holds its cells. */
			snap_file_id(file, sizeof(file), h->name);
			if (cells > 0 &&
			    (mfd = vmm_ctxdisk_mem_in(h->sbx, file, cells, NULL,
			         &n->mem_bytes)) >= 0) {
				close(mfd);
				n->mem_cells = cells;
			} else {
				vmm_ctxdisk_mem_unlink(h->sbx, file, 1);
				n->mem_bytes = 0;
			}
			return 0;
		}
	return -1;
}

/*
 * A new context: fresh (src NULL: its interpreter starts now), or a copy
 * of a journal (a fork's context, a snapshot) that is paused and resumes
 * at its first cell, as any paused context does.
 */
static uint32_t
ctx_create(struct proc_ctx *ctx, struct vmm_state *vs,
    const struct msg_vmm_context *q, const struct grant *g, struct sandbox *s,
    const struct ctx_journal_head *src, int src_fd, uint64_t src_bytes,
    uint64_t src_cells, struct msg_vmm_contexts *r)
{
	struct vmm_context *c = NULL;
	char reason[96];
	size_t i, mine = 0, here = 0;

	if (!vmm_safe_name(q->context, sizeof(q->context)) ||
	    !ctx_cwd_ok(q->cwd) || q->language >= nitems(ctx_program))
		return SBX_E_INTERNAL;
	for (i = 0; i < VMM_CONTEXTS_MAX; i++) {
		if (!vs->ctxs[i].used) {
			if (c == NULL)
				c = &vs->ctxs[i];
			continue;
		}
		/* Ids are unique in a sandbox: a forked sandbox's contexts
		 * keep theirs. */
		if (strcmp(vs->ctxs[i].id, q->context) == 0 &&
		    strcmp(vs->ctxs[i].sbx, s->id) == 0)
			return SBX_E_EXISTS;
		if (strcmp(vs->ctxs[i].owner, g->principal) == 0)
			mine++;
		if (strcmp(vs->ctxs[i].sbx, s->id) == 0)
			here++;
	}
	if (c == NULL || here >= CTX_PAGE_MAX ||
	    (q->max_contexts != 0 && mine >= q->max_contexts))
		return SBX_E_CTX_FULL;
	if (src != NULL && q->disk_max != 0 &&
	    ctx_disk_used(vs, g->principal) + src_bytes > q->disk_max)
		return SBX_E_SNAP_FULL;
	memset(c, 0, sizeof(*c));
	ctx_init_fds(c);
	strlcpy(c->id, q->context, sizeof(c->id));
	strlcpy(c->sbx, s->id, sizeof(c->sbx));
	strlcpy(c->owner, g->principal, sizeof(c->owner));
	strlcpy(c->cwd, src != NULL ? src->cwd : q->cwd, sizeof(c->cwd));
	c->language = src != NULL ? src->language : q->language;
	c->created_at = (int64_t)time(NULL);
	c->mem_max = g->mem_max;
	c->pause_ms = q->pause_ms;
	c->disk_max = q->disk_max;
	if (src != NULL) {
		ctx_journal_open(c, src_fd, src_bytes, src_cells);
		if (c->jfd < 0) {
			memset(c, 0, sizeof(*c));
			ctx_init_fds(c);
			return SBX_E_INTERNAL;
		}
		log_info("context %s: %llu cells of %s %s", c->id,
		    (unsigned long long)src_cells,
		    src->kind == CTX_JOURNAL_SNAPSHOT ? "snapshot" : "context",
		    src->name);
	} else {
		if (ctx_spawn(ctx, vs, c, s, reason, sizeof(reason)) != 0) {
			log_warnx("context %s: %s", c->id, reason);
			memset(c, 0, sizeof(*c));
			ctx_init_fds(c);
			return SBX_E_IMAGE;
		}
		ctx_journal_open(c, -1, 0, 0);
	}
	c->used = 1;
	ctx_info(c, &r->c[0]);
	r->n = 1;
	return SBX_OK;
}

static struct vmm_snapshot *
snap_find(
    struct vmm_state *vs, const char *sbx, const char *owner, const char *name)
{
	size_t i;

	for (i = 0; i < VMM_SNAPSHOTS_MAX; i++) {
		struct vmm_snapshot *n = &vs->snaps[i];

		if (n->used && strcmp(n->h.sbx, sbx) == 0 &&
		    strcmp(n->h.owner, owner) == 0 &&
		    strcmp(n->h.name, name) == 0)
			return n;
	}
	return NULL;
}

static void
snap_info(const struct vmm_snapshot *n, struct vmm_context_info *i)
{
	memset(i, 0, sizeof(*i));
	strlcpy(i->id, n->h.name, sizeof(i->id));
	strlcpy(i->from, n->h.from, sizeof(i->from));
	strlcpy(i->cwd, n->h.cwd, sizeof(i->cwd));
	i->language = n->h.language;
	i->state = CTX_PAUSED;
	i->execution_count = n->cells;
	i->created_at = n->h.created_at;
	i->bytes = n->bytes + n->mem_bytes;
}

/* A named copy of the context's journal, now: its acknowledged cells. */
static uint32_t
ctx_snapshot(struct vmm_state *vs, const struct msg_vmm_context *q,
    struct vmm_context *c, struct msg_vmm_contexts *r)
{
	struct vmm_snapshot *n = NULL;
	char file[CTX_ID_MAX + 8];
	size_t i;

	if (!vmm_safe_name(q->name, sizeof(q->name)))
		return SBX_E_INTERNAL;
	if (snap_find(vs, c->sbx, c->owner, q->name) != NULL)
		return SBX_E_SNAP_EXISTS;
	for (i = 0; i < VMM_SNAPSHOTS_MAX && n == NULL; i++)
		if (!vs->snaps[i].used)
			n = &vs->snaps[i];
	if (n == NULL ||
	    (c->disk_max != 0 &&
	        ctx_disk_used(vs, c->owner) + c->jbytes > c->disk_max))
		return SBX_E_SNAP_FULL;
	if (c->jfd < 0)
		return SBX_E_INTERNAL;
	memset(n, 0, sizeof(*n));
	ctx_head(c, &n->h);
	n->h.kind = CTX_JOURNAL_SNAPSHOT;
	strlcpy(n->h.name, q->name, sizeof(n->h.name));
	strlcpy(n->h.from, c->id, sizeof(n->h.from));
	n->h.created_at = (int64_t)time(NULL);
	if (vmm_ctxdisk_create(&n->h, c->jfd, c->jbytes, 0) != 0)
		return SBX_E_INTERNAL;
	n->cells = c->jcells;
	n->bytes = c->jbytes;
	n->used = 1;
	snap_file_id(file, sizeof(file), q->name);
	if (c->mem_cells != 0 && c->mem_cells == c->jcells &&
	    (c->disk_max == 0 ||
	        ctx_disk_used(vs, c->owner) + c->mem_bytes <= c->disk_max) &&
	    vmm_ctxdisk_mem_link(c->sbx, c->id, c->sbx, file) == 0) {
		n->mem_cells = c->mem_cells;
		n->mem_bytes = c->mem_bytes;
	}
	log_info("context %s: snapshot %s (%llu cells%s)", c->id, q->name,
	    (unsigned long long)n->cells,
	    n->mem_cells ? ", its memory image" : "");
	snap_info(n, &r->c[0]);
	r->n = 1;
	return SBX_OK;
}

/* Restore a snapshot into a new context. */
static uint32_t
ctx_restore(struct proc_ctx *ctx, struct vmm_state *vs,
    const struct msg_vmm_context *q, const struct grant *g, struct sandbox *s,
    struct msg_vmm_contexts *r)
{
	struct vmm_snapshot *n;
	struct vmm_context *c;
	char file[CTX_ID_MAX + 8], what[CTX_ID_MAX + 16];
	uint32_t st;
	int fd;

	if ((n = snap_find(vs, s->id, g->principal, q->name)) == NULL)
		return SBX_E_SNAP_NOTFOUND;
	if ((fd = vmm_ctxdisk_open(s->id, CTX_JOURNAL_SNAPSHOT, n->h.name)) ==
	    -1)
		return SBX_E_INTERNAL;
	st = ctx_create(ctx, vs, q, g, s, &n->h, fd, n->bytes, n->cells, r);
	close(fd);
	if (st == SBX_OK && n->mem_cells != 0 &&
	    (c = ctx_find(vs, s->id, g->principal, q->context)) != NULL) {
		snap_file_id(file, sizeof(file), n->h.name);
		snprintf(what, sizeof(what), "snapshot %s", n->h.name);
		ctx_give_image(
		    vs, s->id, file, n->mem_bytes, n->mem_cells, what, c);
	}
	return st;
}

/* ---- fork --------------------------------------------------------- */

/*
 * A fork of c into a new context (q->context) of sandbox s, now: a copy
 * of c's journal and, when c has a sealed memory image of all its
 * acknowledged cells, that image linked in as the fork's (marked in the
 * fork's journal so that its PRNGs are reseeded, even after a restart).
 * Without one the fork resumes from its journal.
 */
static uint32_t
ctx_fork_now(struct proc_ctx *ctx, struct vmm_state *vs, struct vmm_context *c,
    const struct msg_vmm_context *q, const struct grant *g, struct sandbox *s,
    struct msg_vmm_contexts *r)
{
	struct ctx_journal_head h;
	struct vmm_context *n;
	uint32_t st;

	if (c->jfd < 0)
		return SBX_E_INTERNAL;
	ctx_head(c, &h);
	if ((st = ctx_create(ctx, vs, q, g, s, &h, c->jfd, c->jbytes, c->jcells,
	         r)) != SBX_OK)
		return st;
	if ((n = ctx_find(vs, s->id, g->principal, q->context)) != NULL)
		ctx_fork_image(vs, c, n);
	return SBX_OK;
}

/*
 * A fork of a live, idle context waits for its memory image: the context
 * is asked to save itself (as at a pause; it resumes from that image at
 * its next cell) and the fork is answered when the save ends, or after
 * CTX_FORK_WAIT_MS with the journal alone. 1 when the fork waits.
 */
static int
ctx_fork_wait(struct vmm_context *c, const struct msg *m,
    const struct msg_vmm_context *q, const struct grant *g)
{
	struct ctx_fork_wait *w;

	if (!c->saving &&
	    (c->pid <= 0 || c->busy || !c->can_save || c->jcells == 0 ||
	        c->count != c->jcells))
		return 0;
	if ((w = calloc(1, sizeof(*w))) == NULL)
		return 0;
	if (!c->saving) {
		ctx_pause(c);
		if (!c->saving) {
			free(w);
			return 0;
		}
	}
	w->type = m->hdr.type;
	w->from = m->from;
	w->reqid = m->hdr.reqid;
	w->q = *q;
	w->g = *g;
	w->deadline = mono_ms() + CTX_FORK_WAIT_MS;
	c->fork_wait = w;
	return 1;
}

/* Answer the fork waiting for c, if any: with c's state as it is now
 * (its image, when the save ended well), or not found when c is gone
 * (vs may then be NULL). */
static void
ctx_fork_settle(
    struct proc_ctx *ctx, struct vmm_state *vs, struct vmm_context *c, int gone)
{
	struct ctx_fork_wait *w = c->fork_wait;
	struct msg_vmm_contexts *r;
	struct sandbox *s;

	if (w == NULL)
		return;
	c->fork_wait = NULL;
	if ((r = calloc(1, sizeof(*r))) != NULL) {
		if (gone || vs == NULL)
			r->status = SBX_E_CTX_NOTFOUND;
		else if ((s = vmm_sandbox_find(
		              vs, w->q.sandbox, w->g.principal)) == NULL)
			r->status = SBX_E_NOTFOUND;
		else if (w->type == MSG_VMM_CONTEXT_SNAPSHOT)
			r->status = ctx_snapshot(vs, &w->q, c, r);
		else
			r->status =
			    ctx_fork_now(ctx, vs, c, &w->q, &w->g, s, r);
		if (ctx->fd[w->from] < 0 ||
		    msg_send(ctx->fd[w->from], MSG_VMM_CONTEXT_REPLY,
		        MSG_F_REPLY, w->reqid, r, sizeof(*r), -1) != MSG_OK)
			log_warnx("%s: reply for the fork of %s lost", __func__,
			    c->id);
		free(r);
	}
	sodium_memzero(w, sizeof(*w));
	free(w);
}

/* ---- a sandbox's fork (vmmproc/vmm_fork.c) ------------------------------ */

/* Whether the contexts of sandbox src fit once more, in the vmm and in
 * their owner's `contexts` quota (0: none) and `snapshots` quota. */
uint32_t
vmm_contexts_fork_check(const struct vmm_state *vs, const struct sandbox *src,
    uint32_t contexts_max)
{
	size_t i, theirs = 0, mine = 0, free_slots = 0;
	uint64_t disk = 0, disk_max = 0;

	for (i = 0; i < VMM_CONTEXTS_MAX; i++) {
		const struct vmm_context *c = &vs->ctxs[i];

		if (!c->used) {
			free_slots++;
			continue;
		}
		if (strcmp(c->owner, src->owner) != 0)
			continue;
		mine++;
		if (strcmp(c->sbx, src->id) == 0) {
			theirs++;
			disk += c->jbytes + c->mem_bytes;
			disk_max = c->disk_max;
		}
	}
	if (theirs > free_slots ||
	    (contexts_max != 0 && mine + theirs > contexts_max))
		return SBX_E_CTX_FULL;
	if (disk_max != 0 && ctx_disk_used(vs, src->owner) + disk > disk_max)
		return SBX_E_SNAP_FULL;
	return SBX_OK;
}

/* Ask the idle contexts of src to save their memory images, so the
 * fork's contexts start from them (as a context's fork does). */
void
vmm_contexts_fork_prepare(struct vmm_state *vs, const struct sandbox *src)
{
	size_t i;

	for (i = 0; i < VMM_CONTEXTS_MAX; i++) {
		struct vmm_context *c = &vs->ctxs[i];

		if (c->used && strcmp(c->sbx, src->id) == 0 &&
		    strcmp(c->owner, src->owner) == 0 && !c->saving &&
		    c->pid > 0 && !c->busy && c->can_save && c->jcells > 0 &&
		    c->count == c->jcells)
			ctx_pause(c);
	}
}

/* Whether a context of sandbox sbx is still saving its image. */
int
vmm_contexts_saving(const struct vmm_state *vs, const char *sbx)
{
	size_t i;

	for (i = 0; i < VMM_CONTEXTS_MAX; i++)
		if (vs->ctxs[i].used && vs->ctxs[i].saving &&
		    strcmp(vs->ctxs[i].sbx, sbx) == 0)
			return 1;
	return 0;
}

/*
 * The forked sandbox dst gets each context of src_sbx, with its id: a
 * copy of its journal and, when it has a sealed memory image, that
 * image (its workspace files found by path in dst's copy of the
 * workspace). Contexts are paused; a cell in flight is not part of the
 * fork. A context that cannot be copied (no room, the disk) is logged
 * and left out.
 */
void
vmm_contexts_fork_sandbox(struct proc_ctx *ctx, struct vmm_state *vs,
    const char *src_sbx, const struct sandbox *dst)
{
	struct vmm_context *c, *n;
	size_t i, k;

	(void)ctx;
	for (i = 0; i < VMM_CONTEXTS_MAX; i++) {
		c = &vs->ctxs[i];
		if (!c->used || strcmp(c->sbx, src_sbx) != 0 ||
		    strcmp(c->owner, dst->owner) != 0 || c->jfd < 0)
			continue;
		for (n = NULL, k = 0; k < VMM_CONTEXTS_MAX && n == NULL; k++)
			if (!vs->ctxs[k].used)
				n = &vs->ctxs[k];
		if (n == NULL) {
			log_warnx("sandbox %s: its fork has no room for "
			          "context %s",
			    src_sbx, c->id);
			continue;
		}
		memset(n, 0, sizeof(*n));
		ctx_init_fds(n);
		strlcpy(n->id, c->id, sizeof(n->id));
		strlcpy(n->sbx, dst->id, sizeof(n->sbx));
		strlcpy(n->owner, c->owner, sizeof(n->owner));
		strlcpy(n->cwd, c->cwd, sizeof(n->cwd));
		n->language = c->language;
		n->created_at = (int64_t)time(NULL);
		n->mem_max = c->mem_max;
		n->pause_ms = c->pause_ms;
		n->disk_max = c->disk_max;
		ctx_journal_open(n, c->jfd, c->jbytes, c->jcells);
		if (n->jfd < 0) {
			memset(n, 0, sizeof(*n));
			ctx_init_fds(n);
			continue;
		}
		n->used = 1;
		ctx_fork_image(vs, c, n);
		log_info("context %s of sandbox %s: %llu cells of the one of "
		         "sandbox %s",
		    n->id, n->sbx, (unsigned long long)n->jcells, src_sbx);
	}
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
	int waits = 0;

	memcpy(&q, m->data, sizeof(q));
	if (memchr(q.sandbox, '\0', sizeof(q.sandbox)) == NULL ||
	    memchr(q.context, '\0', sizeof(q.context)) == NULL ||
	    memchr(q.cwd, '\0', sizeof(q.cwd)) == NULL ||
	    memchr(q.from, '\0', sizeof(q.from)) == NULL ||
	    memchr(q.name, '\0', sizeof(q.name)) == NULL ||
	    q.language >= nitems(ctx_program))
		return -1;
	if ((r = calloc(1, sizeof(*r))) == NULL)
		return -1;
	vmm_expire_sandboxes(vs);
	vmm_contexts_tick(ctx, vs);
	switch (m->hdr.type) {
	case MSG_VMM_CONTEXT_LIST:
	case MSG_VMM_CONTEXT_SNAPSHOTS:
		cap = CAP_SANDBOX_READ;
		target = q.sandbox;
		break;
	case MSG_VMM_CONTEXT_DELETE:
	case MSG_VMM_CONTEXT_RESTART:
	case MSG_VMM_CONTEXT_FORK:
	case MSG_VMM_CONTEXT_SNAPSHOT:
	case MSG_VMM_CONTEXT_SNAPSHOT_DELETE:
		/* No program: the interpreter was decided at create, and
		 * every cell is decided again. */
		target = "";
		break;
	default:
		/* A restored snapshot's language is the snapshot's. */
		target = q.name[0] != '\0' ? "" : ctx_program[q.language];
	}
	if (vmm_check_grant(ctx, m, &q.grant, cap, target, &g) != 0)
		r->status = SBX_E_GRANT;
	else if ((s = vmm_sandbox_find(vs, q.sandbox, g.principal)) == NULL)
		r->status = vmm_not_found(vs);
	/* A sandbox comes back from the store before its contexts and
	 * snapshots (vmm_contexts_adopt, once all are back): until then a
	 * context or snapshot not found may only not be back yet, and a
	 * list would be partial. */
	else if (vs->restore != NULL)
		r->status = SBX_E_RESTORING;
	/* The policy's isolation kvm: no context starts on the trap
	 * platform (its cells are refused in vmm_h_run). */
	else if ((g.flags & GRANT_F_KVM) &&
	    vmm_ctx_platform(ctx) != VMM_PLATFORM_KVM &&
	    (m->hdr.type == MSG_VMM_CONTEXT_CREATE ||
	        m->hdr.type == MSG_VMM_CONTEXT_FORK ||
	        m->hdr.type == MSG_VMM_CONTEXT_RESTART))
		r->status = SBX_E_ISOLATION;
	else if (m->hdr.type == MSG_VMM_CONTEXT_CREATE && q.name[0] != '\0')
		r->status = ctx_restore(ctx, vs, &q, &g, s, r);
	else if (m->hdr.type == MSG_VMM_CONTEXT_CREATE)
		r->status = ctx_create(ctx, vs, &q, &g, s, NULL, -1, 0, 0, r);
	else if (m->hdr.type == MSG_VMM_CONTEXT_FORK) {
		if ((c = ctx_find(vs, s->id, g.principal, q.from)) == NULL)
			r->status = SBX_E_CTX_NOTFOUND;
		else if (c->fork_wait != NULL)
			r->status = SBX_E_FORK_BUSY;
		else if (ctx_fork_wait(c, m, &q, &g))
			waits = 1; /* answered by ctx_fork_settle */
		else
			r->status = ctx_fork_now(ctx, vs, c, &q, &g, s, r);
	} else if (m->hdr.type == MSG_VMM_CONTEXT_SNAPSHOT_DELETE) {
		struct vmm_snapshot *n =
		    snap_find(vs, s->id, g.principal, q.name);

		/* Under the context it was taken from, as listed. */
		if (n == NULL || strcmp(n->h.from, q.context) != 0)
			r->status = SBX_E_SNAP_NOTFOUND;
		else {
			char file[CTX_ID_MAX + 8];

			vmm_ctxdisk_unlink(
			    s->id, CTX_JOURNAL_SNAPSHOT, n->h.name);
			snap_file_id(file, sizeof(file), n->h.name);
			vmm_ctxdisk_mem_unlink(s->id, file, 0);
			log_info("snapshot %s of sandbox %s deleted", n->h.name,
			    s->id);
			memset(n, 0, sizeof(*n));
		}
	} else if (m->hdr.type == MSG_VMM_CONTEXT_SNAPSHOTS) {
		for (i = 0; i < VMM_SNAPSHOTS_MAX && r->n < CTX_PAGE_MAX; i++)
			if (vs->snaps[i].used &&
			    strcmp(vs->snaps[i].h.sbx, s->id) == 0 &&
			    strcmp(vs->snaps[i].h.owner, g.principal) == 0 &&
			    (q.context[0] == '\0' ||
			        strcmp(vs->snaps[i].h.from, q.context) == 0))
				snap_info(&vs->snaps[i], &r->c[r->n++]);
	} else if (m->hdr.type == MSG_VMM_CONTEXT_LIST) {
		for (i = 0; i < VMM_CONTEXTS_MAX && r->n < CTX_PAGE_MAX; i++)
			if (vs->ctxs[i].used &&
			    strcmp(vs->ctxs[i].sbx, s->id) == 0 &&
			    strcmp(vs->ctxs[i].owner, g.principal) == 0)
				ctx_info(&vs->ctxs[i], &r->c[r->n++]);
	} else if ((c = ctx_find(vs, s->id, g.principal, q.context)) == NULL)
		r->status = SBX_E_CTX_NOTFOUND;
	else if (m->hdr.type == MSG_VMM_CONTEXT_DELETE)
		ctx_remove(ctx, c, "deleted", 1);
	else if (m->hdr.type == MSG_VMM_CONTEXT_SNAPSHOT) {
		/* A snapshot of an idle context holds its memory too: it
		 * waits for the image, as a fork does. */
		if (c->fork_wait != NULL)
			r->status = SBX_E_FORK_BUSY;
		else if (ctx_fork_wait(c, m, &q, &g))
			waits = 1;
		else
			r->status = ctx_snapshot(vs, &q, c, r);
	} else {
		/* A fork asked before the restart has the state before it. */
		ctx_fork_settle(ctx, vs, c, 0);
		ctx_died(ctx, c, RUN_KILLED, "ContextRestarted",
		    "the context was restarted: its state is lost");
		if (c->jfd >= 0 && vmm_ctxdisk_reset(c->jfd, &c->jbytes) != 0) {
			/* A journal that cannot be emptied would bring the
			 * old state back: the context goes without one. */
			log_warn("context %s: journal", c->id);
			close(c->jfd);
			c->jfd = -1;
			vmm_ctxdisk_unlink(c->sbx, CTX_JOURNAL_CONTEXT, c->id);
		}
		c->jcells = 0;
		vmm_ctxdisk_mem_unlink(c->sbx, c->id, 1);
		c->mem_cells = c->mem_bytes = 0;
		if (ctx_spawn(ctx, vs, c, s, reason, sizeof(reason)) != 0) {
			log_warnx("context %s: %s", c->id, reason);
			r->status = SBX_E_INTERNAL;
		} else {
			ctx_info(c, &r->c[0]);
			r->n = 1;
		}
	}
	memset(&q.grant, 0, sizeof(q.grant));
	if (!waits)
		msg_reply(ctx, m, MSG_VMM_CONTEXT_REPLY, r, sizeof(*r), -1);
	free(r);
	return 0;
}
