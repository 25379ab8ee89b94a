/* Internals of the vmm process (host/proc_vmm*.c): its state and the
 * functions its files share. */
#ifndef KEEP_HOST_PROC_VMM_INT_H
#define KEEP_HOST_PROC_VMM_INT_H

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
#include "lib/clock.h"
#include "lib/log.h"
#include "lib/memfd.h"
#include "lib/tree.h"
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
	int stream; /* RUN_F_STREAM: its output goes out as it comes */
	uint64_t sent[2]; /* stdout, stderr bytes sent so far */
	char sbx[SBX_ID_MAX];
	char owner[GRANT_PRINCIPAL_MAX];
	char cmd[RUN_NAME_MAX];
	/* The values of the secrets it was given, redacted from its
	 * output (docs/secrets.md); raw[]: stdout, stderr bytes consumed
	 * when its output streams (sent[] counts what went out). */
	struct vmm_run_secrets *secrets;
	uint64_t raw[2];
	/* RUN_F_TERMINAL: its stdin is a pipe whose write end this is
	 * (-1 once the session ended); its size, in memory shared with
	 * the vm process (vmm_run clears res, so not there). */
	int term, term_fd;
	struct vmm_winsize *winsize;
};

/* The secrets of one run (host/proc_vmm_secrets.c). */
struct vmm_secret {
	char name[64];
	char principal[GRANT_PRINCIPAL_MAX];
	uint8_t value[4096];
	size_t len;
};
struct vmm_run_secrets {
	uint64_t reqid;
	size_t n;
	struct vmm_secret s[16];
};

#define VMM_CONTEXTS_MAX 32

/* A live context (host/proc_vmm_context.c): an interpreter in its own
 * `keepd: vm` process, idle between cells. */
struct vmm_context {
	int used;
	char id[CTX_ID_MAX];
	char sbx[SBX_ID_MAX];
	char owner[GRANT_PRINCIPAL_MAX];
	char cwd[CTX_CWD_MAX];
	uint32_t language; /* enum ctx_lang */
	int64_t created_at;
	uint64_t mem_max; /* the grant's at create, 0: the image's */
	uint64_t count; /* cells this interpreter ran */
	pid_t pid; /* 0: dead, the next cell starts one */
	int pidfd, in_fd, out_fd; /* cells in (a pipe); frames out */
	/* The cell in flight. */
	int busy;
	uint64_t reqid;
	enum proc_id from;
	uint64_t t0, deadline, output_max;
	char end[64]; /* its end line */
	size_t end_len;
	int outfd, errfd; /* memfds: the driver's lines, raw output */
	uint64_t out_len, err_len;
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
	struct vmm_context ctxs[VMM_CONTEXTS_MAX];
	/* docs/secrets.md: the key that opens stored secrets, and the
	 * secrets sent for the MSG_VMM_RUN that comes next. */
	struct msg_secret_key secret_key;
	int have_secret_key;
	struct vmm_run_secrets *pending_secrets;
};

int vmm_check_grant(struct proc_ctx *ctx, const struct msg *m,
    const struct grant *g, uint32_t cap, const char *target, struct grant *out);
int vmm_exists(const char *path);
void vmm_expire_sandboxes(struct vmm_state *vs);
struct image *vmm_image_get(
    struct proc_ctx *ctx, struct vmm_state *vs, const char *name);
void vmm_job_finish(struct proc_ctx *ctx, struct job *job);
/* Send the new output of RUN_F_STREAM runs; 1 if any is running. */
int vmm_stream_outputs(struct proc_ctx *ctx, struct vmm_state *vs);
/* SIGKILL a vm process and the guest processes it forked (its group). */
void vmm_kill_tree(pid_t pid);
uint32_t vmm_not_found(const struct vmm_state *vs);
void vmm_restore_start(struct proc_ctx *ctx, struct vmm_state *vs);
int vmm_safe_name(const char *s, size_t max);
struct sandbox *vmm_sandbox_find(
    struct vmm_state *vs, const char *id, const char *owner);
/* Live contexts (host/proc_vmm_context.c). */
int vmm_h_context(struct proc_ctx *ctx, const struct msg *m);
void vmm_context_cell(struct proc_ctx *ctx, struct vmm_state *vs,
    const struct msg *m, const struct msg_vmm_run *q, const struct grant *g,
    struct sandbox *s);
void vmm_context_event(
    struct proc_ctx *ctx, struct vmm_context *c, int fd, short revents);
void vmm_contexts_tick(struct proc_ctx *ctx, struct vmm_state *vs);
void vmm_contexts_close(struct vmm_state *vs);
void vmm_contexts_kill_all(struct vmm_state *vs);
int vmm_join_output(int outfd, int errfd, uint64_t *out_len, uint64_t *err_len);
void __attribute__((noreturn)) vmm_vm_process(struct proc_ctx *ctx,
    struct vmm_state *vs, struct vmm_config *cfg, int outfds[2],
    struct vmm_result *res, const char *id);
int vmm_h_create(struct proc_ctx *ctx, const struct msg *m);
int vmm_h_egress_decision(struct proc_ctx *ctx, const struct msg *m);
int vmm_h_egress_reply(struct proc_ctx *ctx, const struct msg *m);
int vmm_h_env(struct proc_ctx *ctx, const struct msg *m);
int vmm_h_file(struct proc_ctx *ctx, const struct msg *m);
int vmm_h_images(struct proc_ctx *ctx, const struct msg *m);
int vmm_h_kill(struct proc_ctx *ctx, const struct msg *m);
int vmm_h_list(struct proc_ctx *ctx, const struct msg *m);
int vmm_h_procs(struct proc_ctx *ctx, const struct msg *m);
int vmm_h_ref(struct proc_ctx *ctx, const struct msg *m);
int vmm_h_run(struct proc_ctx *ctx, const struct msg *m);
int vmm_h_run_caps(struct proc_ctx *ctx, const struct msg *m);
int vmm_h_store_reply(struct proc_ctx *ctx, const struct msg *m);
int vmm_h_system(struct proc_ctx *ctx, const struct msg *m);
/* Secrets (host/proc_vmm_secrets.c). */
int vmm_h_secret_key(struct proc_ctx *ctx, const struct msg *m);
int vmm_h_term_input(struct proc_ctx *ctx, const struct msg *m);
int vmm_h_run_secret(struct proc_ctx *ctx, const struct msg *m);
struct vmm_run_secrets *vmm_secrets_take(
    struct vmm_state *vs, uint64_t reqid, const char *principal);
void vmm_secrets_free(struct vmm_run_secrets *rs);
int vmm_secrets_expand(
    const struct vmm_run_secrets *rs, const char **envp, size_t n, char **bufs);
int vmm_secrets_stream(struct proc_ctx *ctx, struct job *j, int s, int fd);
int vmm_secrets_redact_output(struct job *j);

#endif
