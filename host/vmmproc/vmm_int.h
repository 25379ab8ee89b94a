/* Internals of the vmm process (host/vmmproc/): its state and the
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
#include "host/ctx_journal.h"
#include "host/vmm/snapshot.h"
#include "host/grant.h"
#include "host/msg.h"
#include "host/proc.h"
#include "host/proc_egress.h"
#include "host/seccomp_filters.h"
#include "host/vm_confine.h"
#include "host/vmm_egress.h"
#include "host/store/store.h"
#include "host/store/store_wire.h"
#include "host/vmm/vmm.h"
#include "host/vmm/workspace.h"
#include "host/vmm_msg.h"
#include "image/image.h"
#include "lib/caps.h"
#include "lib/clock.h"
#include "lib/landlock.h"
#include "lib/log.h"
#include "lib/memfd.h"
#include "lib/tree.h"
#include "token/paserk.h"

#define VMM_SANDBOXES_MAX 256
#define VMM_JOBS_MAX 16
#define VMM_IMAGES_MAX 16
#define VMM_GRACE_MS 5000 /* past a run's own timeout, then SIGKILL */
/* A command's stdin stream (RUN_F_STDIN): what its pipe holds unread;
 * input past it is dropped and logged (vmm_h_term_input). */
#define VMM_STDIN_PIPE_SIZE (1024 * 1024)

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
	int forking; /* its workspace is being copied: not there yet */
	/* The count of what its workspace holds, shared by its runs
	 * (vmm_config.workspace_count): a memfd made at its first run,
	 * mapped only by its vm processes. */
	int has_count, count_fd;
	/* Its network (docs/vmm.md, "Sockets"): the user and network
	 * namespaces its vm processes join, made at its first run by the
	 * namespace maker (host/vm_confine.h) and held for its life, so
	 * that a server one run starts is there for the next. */
	int has_netns, netns_user, netns_net;
	/* Its port connector (host/vmmproc/vmm_port.c): a child in that
	 * network namespace, made at its first port request, that connects
	 * to a port on its loopback; port_fd is the vmm's end of its
	 * socketpair. */
	int has_port, port_fd;
	pid_t port_pid;
	/* Paused (E2B's pause): its contexts saved to their memory images,
	 * its commands ended; the next run or cell, or a resume, ends it. */
	int paused;
};

/* A sandbox's fork: a child of the vmm copies the workspace of the one
 * it forks, and the create is answered when it ends
 * (host/vmmproc/vmm_fork.c). The copy gets VMM_FORK_MS, within the front's
 * wait for an answer. */
#define VMM_FORKS_MAX 4
#define VMM_FORK_MS 4000
struct vmm_fork {
	int used;
	pid_t pid;
	int pidfd;
	uint64_t reqid;
	enum proc_id from;
	size_t sbx; /* the new sandbox: an index into vmm_state.sbx */
	char src[SBX_ID_MAX];
	uint64_t deadline; /* monotonic ms */
	/* The copy is done; the source's contexts may still be saving
	 * their memory images (fork_finish). */
	int copied;
};

struct loaded_image {
	char name[RUN_NAME_MAX];
	char path[RUN_NAME_MAX + 16];
	struct image *img;
	struct stat sb; /* the file before it was opened: a change reopens */
	size_t nfiles;
	/* Per file of an image with deferred hashes: the vmm hashed it and
	 * it matched, so runs skip the check. checked is the vmm's own
	 * writable view, never inherited (MADV_DONTFORK); checked_ro a view
	 * of the same sealed memfd that every process forked from the vmm
	 * shares and none can make writable, so a template's clones,
	 * forked from a holder made before the verdicts, read them live
	 * (vmmproc/vmm_images.c). Reads go through checked_ro, which every
	 * process has; only the vmm's writes through checked. */
	uint8_t *checked;
	const volatile uint8_t *checked_ro;
	pid_t checked_pid; /* the vmm: where checked is mapped */
	/* Per file, shared with the vm processes: one found it matched. A
	 * hint only; the vmm hashes the file itself before it sets checked
	 * (vmmproc/vmm_images.c). */
	volatile uint8_t *hints;
	/* The image's files as the VMM takes them, made once when the image
	 * is opened: a run passes them with checked as files_checked rather
	 * than copying 22,600 entries of the machine image at each start. */
	struct vmm_file *files;
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
	/* RUN_F_TERMINAL or RUN_F_STDIN: its stdin is a pipe whose write
	 * end this is (-1 once its input ended); a terminal's size, in
	 * memory shared with the vm process (vmm_run clears res, so not
	 * there). */
	int term, term_fd;
	struct vmm_winsize *winsize;
	/* Its result went out when its vm process said it was final
	 * (vmm_job_done_early); the process is reaped later. */
	int answered;
};

/* The secrets of one run (host/vmmproc/vmm_secrets.c). */
struct vmm_secret {
	char name[64];
	char principal[GRANT_PRINCIPAL_MAX];
	uint8_t value[4096];
	size_t len;
	/* The policy injects it at egress (GRANT_F_SECRET_EGRESS): the
	 * run's variables get this placeholder, never the value. */
	int at_egress;
	char placeholder[128];
};
struct vmm_run_secrets {
	uint64_t reqid;
	size_t n;
	struct vmm_secret s[16];
};

/* A template and its holder process (host/vmmproc/vmm_template.c). */
#define VMM_TEMPLATES_MAX 8
struct tpl_slot {
	int used;
	char image[RUN_NAME_MAX];
	char command[RUN_NAME_MAX]; /* the command it boots */
	uint64_t memory; /* guest memory: part of the key */
	/* The principal whose code wrote the template's memory, or "" when
	 * only the image's code ever ran in it (shared by everyone). */
	char owner[GRANT_PRINCIPAL_MAX];
	pid_t pid; /* the holder */
	pid_t spare_pid; /* its spare clone, a child of this process */
	pid_t cloned_pid; /* the last spare that took a run: now a job's */
	int fd; /* the vmm's end of the socketpair to it */
	int state;
	uint64_t request_max;
	uint64_t started_ms, failed_at_ms;
	/* vmm_state.guest_ca_gen it booted with: part of the key, so a
	 * reload's certificates reach the next clones. */
	uint32_t ca_gen;
};

/* Live contexts in all (issue 28's density: a thousand on one box), at
 * most CTX_PAGE_MAX of them in one sandbox, so its list is whole. Each
 * holds six descriptors of the vmm's (vmm_raise_nofile). */
#define VMM_CONTEXTS_MAX 1024

/* A live context (host/vmmproc/vmm_context.c): an interpreter in its own
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
	/* line_end: outfd's bytes up to its last newline. RUN_F_STREAM:
	 * its whole lines go to the front as they come (stream); sent:
	 * the bytes passed on, stream_at: when (monotonic ms). */
	uint64_t line_end, sent, stream_at;
	int stream;
	uint8_t *frame; /* the cell in flight's frame, kept for its journal */
	size_t frame_len;
	/* Its journal (host/ctx_journal.h, host/vmmproc/vmm_ctxdisk.c): the
	 * acknowledged cells a new interpreter runs again to resume. */
	int jfd;
	uint64_t jcells, jbytes;
	uint64_t pause_ms; /* idle time before a pause, 0: never */
	uint64_t disk_max; /* the principal's snapshot quota, 0: none */
	uint64_t last_used; /* monotonic ms: its last cell's end */
	/* Replaying its journal before the cell in flight. */
	uint64_t replay_left, replay_at, cell_timeout, replay_timeout;
	/* Its memory image (host/vmm/snapshot.h): mem_cells the cells the
	 * sealed one on disk holds (0: none), mem_bytes its size; saving:
	 * the vm process was asked to write one, until save_deadline;
	 * restoring: the vm process was started from one; can_save: it was
	 * given a file to save one into. */
	uint64_t mem_cells, mem_bytes, save_deadline;
	int saving, restoring, can_save;
	/* Its memory image is the one of the context it was forked from:
	 * the interpreter's PRNGs are reseeded before its first cell
	 * (reseed); moved: that context was in another sandbox, whose
	 * workspace this one's is a copy of (its files are found by path).
	 * Kept in the journal's `from` until the image is used. */
	int reseed, moved;
	/* A fork of this context waiting for its memory image (a save). */
	struct ctx_fork_wait *fork_wait;
};

#define VMM_SNAPSHOTS_MAX 64

/* A named snapshot of a context (docs/contexts.md): its journal's copy. */
struct vmm_snapshot {
	int used;
	struct ctx_journal_head h;
	uint64_t cells, bytes;
	/* Its memory image (contexts/SBX/snap-NAME.mem): the cells it
	 * holds (0: none) and its size. */
	uint64_t mem_cells, mem_bytes;
};

/* A principal's `egress budget` (host/vmmproc/vmm_budget.c). */
#define VMM_BUDGETS_MAX 256
struct vmm_budget {
	int used;
	/* memfd of the shared struct vmm_egress_budget, mapped only for a
	 * moment here: a child of the vmm inherits no principal's page */
	int fd;
	uint64_t last_ms; /* its last run's start: the oldest goes first */
	char principal[GRANT_PRINCIPAL_MAX];
};

struct vmm_state {
	struct sandbox sbx[VMM_SANDBOXES_MAX];
	struct loaded_image images[VMM_IMAGES_MAX];
	uint64_t settle_at; /* vmm_images_settle's next look, mono_ms */
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
	struct vmm_watch *watches[WATCH_MAX]; /* host/vmmproc/vmm_watch.c */
	struct tpl_slot templates[VMM_TEMPLATES_MAX];
	struct vmm_context ctxs[VMM_CONTEXTS_MAX];
	struct vmm_snapshot snaps[VMM_SNAPSHOTS_MAX];
	/* docs/secrets.md: the key that opens stored secrets, and the
	 * secrets sent for the MSG_VMM_RUN that comes next. */
	struct msg_secret_key secret_key;
	int have_secret_key;
	/* MSG_CTL_GUEST_CA: the certificates every run's guest trusts
	 * beside its image's (vmm_config.ca_extra), guest_ca_len bytes of
	 * PEM; 0: none. */
	uint8_t guest_ca[VMM_CA_EXTRA_MAX];
	size_t guest_ca_len;
	uint32_t guest_ca_gen; /* counts changes of guest_ca */
	struct vmm_run_secrets *pending_secrets;
	struct vmm_fork forks[VMM_FORKS_MAX];
	struct vmm_budget budgets[VMM_BUDGETS_MAX];
};

/* The budget of the grant's principal, its parameters the grant's: the
 * descriptor to map in the run's vm process (the table keeps it), or -1
 * when the grant gives none or it could not be made (logged; the run
 * then has none). */
int vmm_budget_fd(struct vmm_state *vs, const struct grant *g);
/* In a forked child: every budget's descriptor closed but keep (-1:
 * all). */
void vmm_budgets_close(struct vmm_state *vs, int keep);
struct vmm_egress_budget *vmm_budget_map(int fd);

/* The platform the parent resolved (VMM_PLATFORM_KVM or _TRAP), and
 * the refusal of every run where KVM is required and /dev/kvm did not
 * open (the front answers it with 503). */
int vmm_ctx_platform(const struct proc_ctx *ctx);
#define VMM_NO_KVM_REASON                                                      \
	"unavailable: platform kvm needs /dev/kvm; set auto or trap"

int vmm_check_grant(struct proc_ctx *ctx, const struct msg *m,
    const struct grant *g, uint32_t cap, const char *target, struct grant *out);
int vmm_exists(const char *path);
void vmm_expire_sandboxes(struct vmm_state *vs);
struct image *vmm_image_get(
    struct proc_ctx *ctx, struct vmm_state *vs, const char *name);
/* In a vm process or a template holder, after the fork: every image but
 * the one mapped at keep unmapped and its descriptor closed, so a run
 * reaches no other principal's uploaded image (NULL: none kept). */
void vmm_images_shed(struct vmm_state *vs, const uint8_t *keep);
/* Check one of img's files against its hash once per vmm life: 0, or
 * IMAGE_E_HASH. */
int vmm_image_file_check(
    struct vmm_state *vs, const struct image *img, const struct image_file *f);
/* img's files for a vmm_config (extra zeroed entries after them), each
 * with its hash unless the vmm checked it already; *hints, the map a vm
 * process marks the files it checked in. NULL when out of memory. */
struct vmm_file *vmm_image_files(struct vmm_state *vs, const struct image *img,
    size_t extra, volatile uint8_t **hints);
/* The same made once per opened image, hashes kept: pass *checked as
 * vmm_config.files_checked (the vmm's verdicts, read-only and live in
 * every process forked after the image was opened). Owned by the
 * image's slot (valid until it is shed or reopened); NULL when img is
 * not one the vmm loaded. */
const struct vmm_file *vmm_image_files_shared(struct vmm_state *vs,
    const struct image *img, volatile uint8_t **hints,
    const volatile uint8_t **checked);
/* Hash, within a budget, the files vm processes found matching, so later
 * runs skip them. */
void vmm_images_settle(struct vmm_state *vs);
void vmm_job_finish(struct proc_ctx *ctx, struct job *job);
/* The job's vm process closed its egress socket: answer now if it said
 * its result is final. */
void vmm_job_done_early(struct proc_ctx *ctx, struct job *job);
/* Send the new output of RUN_F_STREAM runs; 1 if any is running. */
int vmm_stream_outputs(struct proc_ctx *ctx, struct vmm_state *vs);
/* Send the new whole lines of RUN_F_STREAM cells; 1 if any is running
 * (host/vmmproc/vmm_context.c). */
int vmm_contexts_stream(struct proc_ctx *ctx, struct vmm_state *vs);
/* SIGKILL a vm process and the guest processes it forked (its group). */
void vmm_kill_tree(pid_t pid);
uint32_t vmm_not_found(const struct vmm_state *vs);
void vmm_restore_start(struct proc_ctx *ctx, struct vmm_state *vs);
int vmm_safe_name(const char *s, size_t max);
struct sandbox *vmm_sandbox_find(
    struct vmm_state *vs, const char *id, const char *owner);
/* Live contexts (host/vmmproc/vmm_context.c). */
int vmm_h_context(struct proc_ctx *ctx, const struct msg *m);
void vmm_context_cell(struct proc_ctx *ctx, struct vmm_state *vs,
    const struct msg *m, const struct msg_vmm_run *q, const struct grant *g,
    struct sandbox *s);
void vmm_context_event(struct proc_ctx *ctx, struct vmm_state *vs,
    struct vmm_context *c, int fd, short revents);
void vmm_contexts_tick(struct proc_ctx *ctx, struct vmm_state *vs);
void vmm_contexts_close(struct vmm_state *vs);
void vmm_contexts_kill_all(struct vmm_state *vs);
int vmm_context_adopt(struct vmm_state *vs, const struct ctx_journal_head *h,
    int fd, uint64_t cells, uint64_t bytes);
int vmm_snapshot_adopt(struct vmm_state *vs, const struct ctx_journal_head *h,
    uint64_t cells, uint64_t bytes);
/* Contexts on disk (host/vmmproc/vmm_ctxdisk.c). */
int vmm_ctxdisk_create(const struct ctx_journal_head *h, int src_fd,
    uint64_t src_bytes, int keep_open);
int vmm_ctxdisk_append(
    int fd, uint64_t *bytes, const uint8_t *payload, size_t len);
int vmm_ctxdisk_read(int fd, uint64_t *at, uint8_t **payload, size_t *len);
int vmm_ctxdisk_reset(int fd, uint64_t *bytes);
void vmm_ctxdisk_unlink(const char *sbx, int kind, const char *name);
int vmm_ctxdisk_open(const char *sbx, int kind, const char *name);
int vmm_ctxdisk_mem_out(const char *sbx, const char *id);
uint64_t vmm_ctxdisk_mem_seal(
    const char *sbx, const char *id, uint64_t cells, const uint8_t image[32]);
int vmm_ctxdisk_mem_in(const char *sbx, const char *id, uint64_t cells,
    const uint8_t image[32], uint64_t *size);
void vmm_ctxdisk_mem_unlink(const char *sbx, const char *id, int tmp_too);
int vmm_ctxdisk_mem_link(
    const char *sbx, const char *id, const char *to_sbx, const char *to_id);
int vmm_ctxdisk_set_from(const char *sbx, const char *id, const char *from);
void vmm_contexts_sandbox_gone(const char *sbx);
void vmm_contexts_adopt(struct vmm_state *vs);
/* A sandbox's fork (vmmproc/vmm_fork.c) takes src's contexts along: check
 * they fit, ask the idle ones to save their memory, whether any still
 * saves, and the copies into dst. */
uint32_t vmm_contexts_fork_check(const struct vmm_state *vs,
    const struct sandbox *src, uint32_t contexts_max);
void vmm_contexts_fork_prepare(struct vmm_state *vs, const struct sandbox *src);
int vmm_contexts_saving(const struct vmm_state *vs, const char *sbx);
void vmm_contexts_fork_sandbox(struct proc_ctx *ctx, struct vmm_state *vs,
    const char *src_sbx, const struct sandbox *dst);
int vmm_join_output(int outfd, int errfd, uint64_t *out_len, uint64_t *err_len);
/* Send MSG_VMM_RUN_DONE for a run with its output, outfd, or an empty
 * sealed memfd when it has none (-1): the reply always carries one.
 * what ("run") names it in the log should it be lost. */
void vmm_run_done_send(struct proc_ctx *ctx, enum proc_id to, uint64_t reqid,
    const struct msg_vmm_run_done *d, int outfd, const char *what);
void __attribute__((noreturn)) vmm_vm_process(struct proc_ctx *ctx,
    struct vmm_state *vs, struct vmm_config *cfg, int outfds[2],
    struct vmm_result *res, const char *id);
int vmm_h_create(struct proc_ctx *ctx, const struct msg *m);
int vmm_h_egress_decision(struct proc_ctx *ctx, const struct msg *m);
int vmm_h_egress_reply(struct proc_ctx *ctx, const struct msg *m);
int vmm_h_egress_name_reply(struct proc_ctx *ctx, const struct msg *m);
int vmm_h_policy_changed(struct proc_ctx *ctx, const struct msg *m);
int vmm_h_env(struct proc_ctx *ctx, const struct msg *m);
int vmm_h_file(struct proc_ctx *ctx, const struct msg *m);
int vmm_h_images(struct proc_ctx *ctx, const struct msg *m);
int vmm_h_kill(struct proc_ctx *ctx, const struct msg *m);
int vmm_h_list(struct proc_ctx *ctx, const struct msg *m);
int vmm_h_procs(struct proc_ctx *ctx, const struct msg *m);
int vmm_h_ref(struct proc_ctx *ctx, const struct msg *m);
int vmm_h_ttl(struct proc_ctx *ctx, const struct msg *m);
int vmm_h_run(struct proc_ctx *ctx, const struct msg *m);
int vmm_h_run_caps(struct proc_ctx *ctx, const struct msg *m);
int vmm_h_store_reply(struct proc_ctx *ctx, const struct msg *m);
int vmm_h_system(struct proc_ctx *ctx, const struct msg *m);
/* vmm_port.c: a connected socket to a port in a sandbox's netns. */
int vmm_h_port(struct proc_ctx *ctx, const struct msg *m);
/* End s's port connector, if it has one (its sandbox deleted, expired
 * or paused). */
void vmm_port_stop(struct sandbox *s);
/* In a child of the vmm: close every sandbox's connector socket. */
void vmm_port_close_all(struct vmm_state *vs);
/* Secrets (host/vmmproc/vmm_secrets.c). */
int vmm_h_secret_key(struct proc_ctx *ctx, const struct msg *m);
int vmm_h_term_input(struct proc_ctx *ctx, const struct msg *m);
int vmm_h_run_secret(struct proc_ctx *ctx, const struct msg *m);
struct vmm_run_secrets *vmm_secrets_take(
    struct vmm_state *vs, uint64_t reqid, const char *principal);
void vmm_secrets_free(struct vmm_run_secrets *rs);
int vmm_secrets_for_egress(void *job, const char *name, const uint8_t **value,
    size_t *len, const char **placeholder);
int vmm_secrets_expand(
    const struct vmm_run_secrets *rs, const char **envp, size_t n, char **bufs);
int vmm_secrets_stream(struct proc_ctx *ctx, struct job *j, int s, int fd);
int vmm_secrets_redact_output(struct job *j);

/* host/vmmproc/vmm_watch.c: files/watch. */
struct vmm_watch;
int vmm_h_watch(struct proc_ctx *ctx, const struct msg *m);
int vmm_h_watch_stop(struct proc_ctx *ctx, const struct msg *m);
/* The inotify descriptor of watch i, or -1. */
int vmm_watch_fd(const struct vmm_state *vs, size_t i);
void vmm_watch_event(struct proc_ctx *ctx, struct vmm_state *vs, size_t i);
/* Each pass of the loop: flush what is due, end the watches of sandboxes
 * that are gone. Returns the ms until the next flush (-1: none). */
int vmm_watch_tick(struct proc_ctx *ctx, struct vmm_state *vs);
/* The front restarted: its watches are gone. */
void vmm_watch_stop_all(struct vmm_state *vs);
/* Templates (host/vmmproc/vmm_template.c). vmm_template_clone starts the
 * run cfg describes as a clone of the image's template for command when
 * one is ready for this principal (in its sandbox's network namespace,
 * ns_user and ns_net, when they are not -1): the clone's host pid (a child of
 * this process; job->res is replaced by a page it shares), or 0 when the
 * run must boot cold (no template, still booting, the request too large,
 * the holder failing). count_fd: the sandbox's shared quota count
 * (vmm_sandbox_count_fd); -1 boots cold. budget_fd: its principal's
 * egress budget (vmm_budget_fd), -1 none. */
pid_t vmm_template_clone(struct proc_ctx *ctx, struct vmm_state *vs,
    const struct image *img, const char *image_name, const char *command,
    const char *principal, const char *sbx_id, const struct vmm_config *cfg,
    struct job *job, const int outfds[2], int efd, int count_fd, int ns_user,
    int ns_net, int budget_fd);
/* A holder's filter: its clones join their sandbox's network namespace
 * (host/vm_confine.h) and make sockets there. */
#define VMM_TEMPLATE_SCF (SCF_VM_NET | SCF_VM_NETNS)
/* The vmm's loop: the descriptor to poll for holder i (-1: none), and
 * what it reported (a booting template's ready or failed). */
int vmm_template_pollfd(const struct vmm_state *vs, size_t i);
void vmm_template_event(struct vmm_state *vs, size_t i);

/* ---- vmmproc/vmm_fork.c: a sandbox's fork with its workspace ---- */

/* Start copying src's workspace into s's (both in vs->sbx; s just made,
 * its workspace empty) for the create request m, src's contexts to come
 * along within their owner's contexts_max (0: none): SBX_OK when the
 * copy runs (the answer comes from vmm_fork_event), else why not. */
uint32_t vmm_fork_start(struct proc_ctx *ctx, struct vmm_state *vs,
    const struct msg *m, const struct sandbox *src, struct sandbox *s,
    uint32_t contexts_max);
int vmm_fork_pollfd(const struct vmm_state *vs, size_t i);
/* Fork i's copy ended: answer its create (once the contexts come). */
void vmm_fork_event(struct proc_ctx *ctx, struct vmm_state *vs, size_t i);
/* A context ended its save: forks that waited for it go on. */
void vmm_forks_saved(struct proc_ctx *ctx, struct vmm_state *vs);
/* Copies past their time are killed (their pidfd then reports); forks
 * past their time stop waiting for saves. */
void vmm_forks_tick(struct proc_ctx *ctx, struct vmm_state *vs);
void vmm_forks_kill_all(struct vmm_state *vs);
/* The sandbox's INFO reply (vmmproc/vmm_sandbox.c), and its removal with
 * its workspace. */
void vmm_sandbox_info(struct msg_vmm_sandbox_info *r, const struct sandbox *s);
void vmm_sandbox_discard(struct vmm_state *vs, struct sandbox *s);
/* s's shared count's memfd, made now if need be; -1 if it cannot be. */
int vmm_sandbox_count_fd(struct sandbox *s);
/* Its namespaces, made now if they are not yet (nothing when the maker
 * cannot: its vm processes then try one of their own each). */
void vmm_sandbox_netns(struct proc_ctx *ctx, struct sandbox *s);
/* That count mapped in a vm process; NULL: the run counts alone. */
uint64_t *vmm_count_map(int fd);
/* Kill the templates of an image that changed or went away. */
void vmm_templates_forget(struct vmm_state *vs, const char *image);
/* In a forked child: close the links to the holders. */
void vmm_templates_close(struct vmm_state *vs);
/* Whether a template written by owner ("" for none) may serve principal. */
int vmm_template_usable(const char *owner, const char *principal);

#endif
