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
#include "host/vmmproc/vmm_int.h"
#include "lib/clock.h"

/* A sandbox id or image name: [A-Za-z0-9_-], 1..63, so it is also a safe
 * file name. */
int
vmm_safe_name(const char *s, size_t max)
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
int
vmm_check_grant(struct proc_ctx *ctx, const struct msg *m,
    const struct grant *g, uint32_t cap, const char *target, struct grant *out)
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

int
vmm_ctx_platform(const struct proc_ctx *ctx)
{
	if (ctx->config != NULL && ctx->config->platform == VMM_PLATFORM_KVM)
		return VMM_PLATFORM_KVM;
	return ctx->kvm_fd >= 0 ? VMM_PLATFORM_KVM : VMM_PLATFORM_TRAP;
}

static void
vmm_on_peer(struct proc_ctx *ctx, enum proc_id peer)
{
	if (peer == PROC_STORE)
		vmm_restore_start(ctx, ctx->arg);
	/* A new front knows nothing of the old one's watches. */
	if (peer == PROC_FRONT)
		vmm_watch_stop_all(ctx->arg);
}

/* The front's requests of one loop pass, served one by one as if each
 * had come alone; their replies go back together. */
static int
vmm_h_batch(struct proc_ctx *ctx, const struct msg *m)
{
	static struct msg_replies replies;

	return msg_batch_serve(ctx, m, MSG_VMM_BATCH_REPLY, &replies);
}

/*
 * MSG_CTL_GUEST_CA: the certificates every run's guest trusts beside its
 * image's (docs/vmm.md "Added certificates"). The parent read and
 * checked them (host/guest_ca.c); what comes here is still bounded and
 * checked as text (vmm_ca_text_ok) before a guest reads it, or nothing.
 */
static int
vmm_h_guest_ca(struct proc_ctx *ctx, const struct msg *m)
{
	struct vmm_state *vs = ctx->arg;
	size_t len = m->hdr.len;

	if (len > sizeof(vs->guest_ca) ||
	    (len > 0 && !vmm_ca_text_ok(m->data, len)))
		return -1;
	if (len == vs->guest_ca_len && memcmp(vs->guest_ca, m->data, len) == 0)
		return 0;
	memcpy(vs->guest_ca, m->data, len);
	vs->guest_ca_len = len;
	vs->guest_ca_gen++;
	log_info("%s: %zu bytes of added certificates", __func__, len);
	return 0;
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
	{ MSG_VMM_SANDBOX_PAUSE, PROC_BIT(PROC_FRONT),
	    sizeof(struct msg_vmm_sandbox_ref), 0, vmm_h_ref },
	{ MSG_VMM_SANDBOX_RESUME, PROC_BIT(PROC_FRONT),
	    sizeof(struct msg_vmm_sandbox_ref), 0, vmm_h_ref },
	{ MSG_VMM_SANDBOX_TTL, PROC_BIT(PROC_FRONT),
	    sizeof(struct msg_vmm_sandbox_ttl), 0, vmm_h_ttl },
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
	{ MSG_VMM_TERM_INPUT, PROC_BIT(PROC_FRONT),
	    sizeof(struct msg_vmm_term_input), 0, vmm_h_term_input },
	{ MSG_VMM_RUN_SECRET, PROC_BIT(PROC_FRONT),
	    sizeof(struct msg_vmm_run_secret), 0, vmm_h_run_secret },
	{ MSG_CTL_SECRET_KEY, PROC_BIT(PROC_PARENT),
	    sizeof(struct msg_secret_key), 0, vmm_h_secret_key },
	{ MSG_CTL_GUEST_CA, PROC_BIT(PROC_PARENT), VMM_CA_EXTRA_MAX,
	    MSG_H_VARIABLE, vmm_h_guest_ca },
	{ MSG_POLICY_DECISION, PROC_BIT(PROC_POLICY),
	    sizeof(struct msg_policy_decision), 0, vmm_h_egress_decision },
	{ MSG_POLICY_CHANGED, PROC_BIT(PROC_POLICY),
	    sizeof(struct msg_policy_changed), 0, vmm_h_policy_changed },
	{ MSG_EGRESS_FETCH_REPLY, PROC_BIT(PROC_EGRESS),
	    sizeof(struct msg_egress_rep), MSG_H_FD, vmm_h_egress_reply },
	{ MSG_EGRESS_NAME_REPLY, PROC_BIT(PROC_EGRESS),
	    sizeof(struct msg_egress_name_reply), 0, vmm_h_egress_name_reply },
	{ MSG_EGRESS_NAME_SOCKET, PROC_BIT(PROC_EGRESS),
	    sizeof(struct msg_egress_name_reply), MSG_H_FD,
	    vmm_h_egress_name_reply },
	{ MSG_VMM_PROCS, PROC_BIT(PROC_FRONT),
	    sizeof(struct msg_vmm_sandbox_ref), 0, vmm_h_procs },
	{ MSG_VMM_KILL, PROC_BIT(PROC_FRONT), sizeof(struct msg_vmm_kill), 0,
	    vmm_h_kill },
	{ MSG_VMM_SYSTEM, PROC_BIT(PROC_FRONT),
	    sizeof(struct msg_vmm_sandbox_ref), 0, vmm_h_system },
	{ MSG_VMM_PORT_OPEN, PROC_BIT(PROC_FRONT), sizeof(struct msg_vmm_port),
	    0, vmm_h_port },
	{ MSG_VMM_IMAGE_LIST, PROC_BIT(PROC_FRONT),
	    sizeof(struct msg_vmm_image_ref), 0, vmm_h_images },
	{ MSG_VMM_IMAGE_PUT, PROC_BIT(PROC_FRONT),
	    sizeof(struct msg_vmm_image_ref), MSG_H_FD, vmm_h_images },
	{ MSG_VMM_IMAGE_DELETE, PROC_BIT(PROC_FRONT),
	    sizeof(struct msg_vmm_image_ref), 0, vmm_h_images },
	{ MSG_STORE_REPLY, PROC_BIT(PROC_STORE), MSG_MAX_PAYLOAD,
	    MSG_H_VARIABLE, vmm_h_store_reply },
	{ MSG_VMM_CONTEXT_CREATE, PROC_BIT(PROC_FRONT),
	    sizeof(struct msg_vmm_context), 0, vmm_h_context },
	{ MSG_VMM_CONTEXT_LIST, PROC_BIT(PROC_FRONT),
	    sizeof(struct msg_vmm_context), 0, vmm_h_context },
	{ MSG_VMM_CONTEXT_DELETE, PROC_BIT(PROC_FRONT),
	    sizeof(struct msg_vmm_context), 0, vmm_h_context },
	{ MSG_VMM_CONTEXT_RESTART, PROC_BIT(PROC_FRONT),
	    sizeof(struct msg_vmm_context), 0, vmm_h_context },
	{ MSG_VMM_WATCH, PROC_BIT(PROC_FRONT), sizeof(struct msg_vmm_watch), 0,
	    vmm_h_watch },
	{ MSG_VMM_WATCH_STOP, PROC_BIT(PROC_FRONT),
	    sizeof(struct msg_vmm_watch_stop), 0, vmm_h_watch_stop },
	{ MSG_VMM_CONTEXT_FORK, PROC_BIT(PROC_FRONT),
	    sizeof(struct msg_vmm_context), 0, vmm_h_context },
	{ MSG_VMM_CONTEXT_SNAPSHOT, PROC_BIT(PROC_FRONT),
	    sizeof(struct msg_vmm_context), 0, vmm_h_context },
	{ MSG_VMM_CONTEXT_SNAPSHOTS, PROC_BIT(PROC_FRONT),
	    sizeof(struct msg_vmm_context), 0, vmm_h_context },
	{ MSG_VMM_CONTEXT_SNAPSHOT_DELETE, PROC_BIT(PROC_FRONT),
	    sizeof(struct msg_vmm_context), 0, vmm_h_context },
};

/* poll entries past the runs' are contexts' (who = CTX_WHO + index),
 * then watches' (WATCH_WHO + index). */
#define CTX_WHO (PROC_COUNT + 2 * VMM_JOBS_MAX)
#define WATCH_WHO (CTX_WHO + VMM_CONTEXTS_MAX)
/* and past those, template holders' (who = TPL_WHO + index), then
 * sandbox forks' copies (FORK_WHO + index). */
#define TPL_WHO (WATCH_WHO + WATCH_MAX)
#define FORK_WHO (TPL_WHO + VMM_TEMPLATES_MAX)

static int
vmm_loop(struct proc_ctx *ctx, struct vmm_state *vs)
{
	struct pollfd pfd[PROC_COUNT + 2 * VMM_JOBS_MAX + 2 * VMM_CONTEXTS_MAX +
	    WATCH_MAX + VMM_TEMPLATES_MAX + VMM_FORKS_MAX];
	int who[PROC_COUNT + 2 * VMM_JOBS_MAX + 2 * VMM_CONTEXTS_MAX +
	    WATCH_MAX + VMM_TEMPLATES_MAX + VMM_FORKS_MAX];
	uint8_t *buf;
	size_t n, i;
	uint64_t now;
	int streaming = 0, timeout, due;

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
				/* One request at a time: the next waits in
				 * the socket (a hang-up still shows). */
				pfd[n].events =
				    vmm_egress_busy(&vs->jobs[i].egress)
				    ? 0
				    : POLLIN;
				who[n++] = PROC_COUNT + VMM_JOBS_MAX + (int)i;
			}
		/* Template holders report their boot and their spares
		 * (vmmproc/vmm_template.c). */
		for (i = 0; i < VMM_TEMPLATES_MAX; i++)
			if (vmm_template_pollfd(vs, i) >= 0) {
				pfd[n].fd = vmm_template_pollfd(vs, i);
				pfd[n].events = POLLIN;
				who[n++] = TPL_WHO + (int)i;
			}
		for (i = 0; i < VMM_FORKS_MAX; i++)
			if (vmm_fork_pollfd(vs, i) >= 0) {
				pfd[n].fd = vmm_fork_pollfd(vs, i);
				pfd[n].events = POLLIN;
				who[n++] = FORK_WHO + (int)i;
			}
		/* A live context: its interpreter's end and its output. */
		for (i = 0; i < VMM_CONTEXTS_MAX; i++) {
			struct vmm_context *c = &vs->ctxs[i];

			if (!c->used)
				continue;
			if (c->pidfd >= 0) {
				pfd[n].fd = c->pidfd;
				pfd[n].events = POLLIN;
				who[n++] = CTX_WHO + (int)i;
			}
			if (c->out_fd >= 0) {
				pfd[n].fd = c->out_fd;
				pfd[n].events = POLLIN;
				who[n++] = CTX_WHO + (int)i;
			}
		}
		for (i = 0; i < WATCH_MAX; i++)
			if (vmm_watch_fd(vs, i) >= 0) {
				pfd[n].fd = vmm_watch_fd(vs, i);
				pfd[n].events = POLLIN;
				who[n++] = WATCH_WHO + (int)i;
			}
		for (i = 0; i < n; i++)
			pfd[i].revents = 0;
		/* Streaming runs' output (and cells' lines, past a quiet
		 * spell at once) goes out every VMM_STREAM_MS; a watch's
		 * events every WATCH_FLUSH_MS. */
		timeout = streaming ? VMM_STREAM_MS : 1000;
		if ((due = vmm_watch_tick(ctx, vs)) >= 0 && due < timeout)
			timeout = due;
		if (poll(pfd, n, timeout) == -1 && errno != EINTR)
			fatal("%s: poll", __func__);
		for (i = 0; i < n && !ctx->quit; i++) {
			if (pfd[i].revents == 0)
				continue;
			if (who[i] >= FORK_WHO)
				vmm_fork_event(
				    ctx, vs, (size_t)(who[i] - FORK_WHO));
			else if (who[i] >= TPL_WHO)
				vmm_template_event(
				    vs, (size_t)(who[i] - TPL_WHO));
			else if (who[i] >= WATCH_WHO)
				vmm_watch_event(
				    ctx, vs, (size_t)(who[i] - WATCH_WHO));
			else if (who[i] >= CTX_WHO)
				vmm_context_event(ctx, vs,
				    &vs->ctxs[who[i] - CTX_WHO], pfd[i].fd,
				    pfd[i].revents);
			else if (who[i] >= PROC_COUNT + VMM_JOBS_MAX) {
				struct job *j = &vs->jobs[who[i] - PROC_COUNT -
				    VMM_JOBS_MAX];

				/* vmm_job_finish above may have ended it. */
				if (j->used && j->egress.fd == pfd[i].fd &&
				    vmm_egress_event(ctx, &j->egress) != 0)
					vmm_job_done_early(ctx, j);
			} else if (who[i] >= PROC_COUNT)
				vmm_job_finish(
				    ctx, &vs->jobs[who[i] - PROC_COUNT]);
			else if (proc_link_event(ctx, (enum proc_id)who[i], buf,
			             MSG_BUFSZ) == -1)
				ctx->quit = 1;
		}
		/* A vm process past its time limit and grace is killed; its
		 * pidfd then reports it. */
		now = mono_ms();
		for (i = 0; i < VMM_JOBS_MAX; i++)
			if (vs->jobs[i].used && now > vs->jobs[i].deadline) {
				vmm_kill_tree(vs->jobs[i].pid);
				vs->jobs[i].deadline = UINT64_MAX;
			}
		vmm_forks_tick(ctx, vs);
		vmm_images_settle(vs);
		vmm_expire_sandboxes(vs);
		streaming = vmm_stream_outputs(ctx, vs);
		streaming |= vmm_contexts_stream(ctx, vs);
		vmm_contexts_tick(ctx, vs);
	}
	vmm_watch_stop_all(vs);
	for (i = 0; i < VMM_JOBS_MAX; i++)
		if (vs->jobs[i].used)
			vmm_kill_tree(vs->jobs[i].pid);
	vmm_contexts_kill_all(vs);
	vmm_forks_kill_all(vs);
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
	/* Each run's vm process, each template holder and each port
	 * connector install these:
	 * compiled once here, inherited by the forks. */
	if (seccomp_filter_prepare(&seccomp_vm, SCF_NO_SOCKETS) == -1 ||
	    seccomp_filter_prepare(&seccomp_vm, SCF_NO_SOCKETS | SCF_VM_NET) ==
	        -1 ||
	    seccomp_filter_prepare(&seccomp_template, VMM_TEMPLATE_SCF) == -1 ||
	    seccomp_filter_prepare(
	        &seccomp_port_connector, SCF_NO_SOCKETS | SCF_VM_NET) == -1)
		log_warn("%s: seccomp filters compiled at each use", __func__);
	ctx->on_peer = vmm_on_peer;
	for (i = 0; i < VMM_SANDBOXES_MAX; i++)
		vs.sbx[i].ws_fd = -1;
	if (ctx->kvm_fd < 0 && vmm_ctx_platform(ctx) == VMM_PLATFORM_KVM)
		log_warnx("%s: platform kvm and no /dev/kvm: guests cannot run",
		    __func__);
	else if (ctx->kvm_fd < 0) {
		/* The stub and the CPUID, once, for every vm process. */
		if (vmm_prepare_trap() != VMM_OK)
			log_warn("%s: the trap platform", __func__);
		else
			log_info("%s: platform trap: guests run under "
			         "seccomp traps, no KVM",
			    __func__);
	} else if ((v = ioctl(ctx->kvm_fd, KVM_GET_API_VERSION, 0)) !=
	    KVM_API_VERSION)
		log_warnx("%s: /dev/kvm API version %d, want %d", __func__, v,
		    KVM_API_VERSION);
	else if (vmm_prepare(ctx->kvm_fd) != VMM_OK)
		log_warn("%s: KVM_GET_SUPPORTED_CPUID", __func__);
	else
		log_info("%s: /dev/kvm API version %d", __func__, v);
	/* docs/threat-model.md: what each ABI leaves open. */
	if ((v = landlock_abi()) >= 6)
		log_info("%s: Landlock ABI %d: vm processes confined to their "
		         "workspace, signals scoped",
		    __func__, v);
	else
		log_warnx("%s: Landlock ABI %d (want 6): vm processes %s",
		    __func__, v,
		    v > 0 ? "confined to their workspace, signals not scoped"
		          : "not confined beyond chroot and seccomp");
	/* A restarted vmm has its store link from the start; a first one
	 * may get it later (vmm_on_peer). */
	if (ctx->fd[PROC_STORE] >= 0)
		vmm_on_peer(ctx, PROC_STORE);
	log_info("%s: ready", __func__);
	return vmm_loop(ctx, &vs);
}
