/*
 * Sandboxes and runs at the vmm, which owns the workspaces.
 *
 * Sandboxes: MSG_VMM_SANDBOX_{CREATE,GET,DELETE} answered with
 * MSG_VMM_SANDBOX_INFO, MSG_VMM_SANDBOX_LIST with MSG_VMM_SANDBOX_PAGE.
 * Each carries the policy's grant for link vmm (cap sandbox:write or
 * sandbox:read, target the sandbox id, or "" for a list); the grant's
 * principal is the owner, and a sandbox is visible to its owner only.
 *
 * Runs: the front asks the vmm to run one command of a sandbox's image
 * (MSG_VMM_RUN) and the vmm answers when the guest is gone
 * (MSG_VMM_RUN_DONE). Both are fixed-width; the variable parts travel in
 * a sealed memfd:
 *
 *	request memfd:	nargs strings, then nenv "KEY=VALUE" strings, each
 *			a u32 length (little-endian) and that many bytes
 *			(no NUL inside), then stdin_len bytes of stdin.
 *	reply memfd:	out_len bytes of stdout, then err_len of stderr.
 *
 * The grant is the policy's for link vmm, cap exec, target the command
 * (the policy's exec allowlist names programs); its principal must own
 * the sandbox, and its limits (memory, timeout, output) bound the run.
 */
#ifndef KEEP_HOST_VMM_MSG_H
#define KEEP_HOST_VMM_MSG_H

#include <stdint.h>

#include "host/grant.h"
#include "host/msg.h"
#include "host/vmm/vmm.h"

enum {
	MSG_VMM_SANDBOX_CREATE = MSG_VMM_BASE + 0x01, /* msg_vmm_sandbox_new */
	MSG_VMM_SANDBOX_GET = MSG_VMM_BASE + 0x02, /* msg_vmm_sandbox_ref */
	MSG_VMM_SANDBOX_DELETE = MSG_VMM_BASE + 0x03, /* msg_vmm_sandbox_ref */
	MSG_VMM_SANDBOX_INFO = MSG_VMM_BASE + 0x04, /* msg_vmm_sandbox_info */
	MSG_VMM_SANDBOX_LIST = MSG_VMM_BASE + 0x05, /* msg_vmm_sandbox_list */
	MSG_VMM_SANDBOX_PAGE = MSG_VMM_BASE + 0x06, /* msg_vmm_sandbox_page */
	MSG_VMM_SANDBOX_TTL = MSG_VMM_BASE + 0x07, /* msg_vmm_sandbox_ttl */
	/* E2B's pause and resume (docs/e2b.md): msg_vmm_sandbox_ref, the
	 * grant sandbox:write; answered with MSG_VMM_SANDBOX_INFO. */
	MSG_VMM_SANDBOX_PAUSE = MSG_VMM_BASE + 0x0c,
	MSG_VMM_SANDBOX_RESUME = MSG_VMM_BASE + 0x0d,
	MSG_VMM_FILE = MSG_VMM_BASE + 0x08, /* msg_vmm_file [+ memfd] */
	MSG_VMM_FILE_REPLY =
	    MSG_VMM_BASE + 0x09, /* msg_vmm_file_reply + memfd */
	MSG_VMM_ENV = MSG_VMM_BASE + 0x0a, /* msg_vmm_env */
	MSG_VMM_ENV_REPLY = MSG_VMM_BASE + 0x0b, /* msg_vmm_env (the result) */
	MSG_VMM_RUN = MSG_VMM_BASE + 0x10, /* front -> vmm + memfd */
	MSG_VMM_RUN_DONE = MSG_VMM_BASE + 0x11, /* vmm -> front + memfd */
	MSG_VMM_PROCS = MSG_VMM_BASE + 0x12, /* msg_vmm_sandbox_ref */
	MSG_VMM_PROCS_REPLY = MSG_VMM_BASE + 0x13, /* msg_vmm_procs */
	MSG_VMM_KILL = MSG_VMM_BASE + 0x14, /* msg_vmm_kill */
	MSG_VMM_KILL_REPLY = MSG_VMM_BASE + 0x15, /* msg_vmm_kill, status */
	MSG_VMM_BG_DONE = MSG_VMM_BASE + 0x16, /* vmm -> front: bg_done */
	MSG_VMM_IMAGE_LIST = MSG_VMM_BASE + 0x18, /* msg_vmm_image_ref */
	MSG_VMM_IMAGE_PUT = MSG_VMM_BASE + 0x19, /* msg_vmm_image_ref + memfd */
	MSG_VMM_IMAGE_DELETE = MSG_VMM_BASE + 0x1a, /* msg_vmm_image_ref */
	MSG_VMM_IMAGES = MSG_VMM_BASE + 0x1b, /* msg_vmm_images, the reply */
	MSG_VMM_SYSTEM = MSG_VMM_BASE + 0x1c, /* msg_vmm_sandbox_ref */
	MSG_VMM_SYSTEM_REPLY = MSG_VMM_BASE + 0x1d, /* msg_vmm_system */
	/* Egress (host/vmm_egress.h): the first two only on a run's own
	 * socketpair between the vmm and its `keepd: vm` process. */
	MSG_VMM_FETCH = MSG_VMM_BASE + 0x20, /* vm -> vmm: msg_egress_rep;
						 the request is in the run's
						 shared memfd */
	MSG_VMM_FETCH_REPLY = MSG_VMM_BASE + 0x21, /* vmm -> vm:
						       msg_egress_rep + memfd */
	/* A guest's names and connections (host/vmm_egress.h, docs/egress.md
	 * "Names and connections"), on the run's own socketpair too:
	 * msg_vmm_net, answered with msg_vmm_net_reply (+ the connected
	 * socket for a connect that succeeded). */
	MSG_VMM_NET = MSG_VMM_BASE + 0x34,
	MSG_VMM_NET_REPLY = MSG_VMM_BASE + 0x35,
	/* vm -> vmm, unanswered: msg_vmm_net_report, a connection through
	 * egress the vm process shut itself (TLS's server name, the bytes
	 * limit), for the audit log. */
	MSG_VMM_NET_REPORT = MSG_VMM_BASE + 0x3a,
	MSG_VMM_RUN_CAPS = MSG_VMM_BASE + 0x22, /* front -> vmm, just before
						   MSG_VMM_RUN, same reqid:
						   msg_vmm_run_caps */
	/* front -> vmm: requests of one pass of the front's loop (a batch,
	 * host/msg.h); the replies come back as batches too. */
	MSG_VMM_BATCH = MSG_VMM_BASE + 0x24,
	MSG_VMM_BATCH_REPLY = MSG_VMM_BASE + 0x25,
	MSG_VMM_RUN_OUTPUT = MSG_VMM_BASE + 0x26, /* vmm -> front: output so
	    far of a RUN_F_STREAM run, msg_vmm_run_output + bytes */
	/* Live contexts (below): front -> vmm msg_vmm_context, answered
	 * with MSG_VMM_CONTEXT_REPLY (msg_vmm_contexts). */
	MSG_VMM_CONTEXT_CREATE = MSG_VMM_BASE + 0x28,
	MSG_VMM_CONTEXT_LIST = MSG_VMM_BASE + 0x29,
	MSG_VMM_CONTEXT_DELETE = MSG_VMM_BASE + 0x2a,
	MSG_VMM_CONTEXT_RESTART = MSG_VMM_BASE + 0x2b,
	MSG_VMM_CONTEXT_REPLY = MSG_VMM_BASE + 0x2c,
	/* Watching a workspace directory (host/vmmproc/vmm_watch.c): */
	MSG_VMM_WATCH = MSG_VMM_BASE + 0x30, /* front -> vmm: msg_vmm_watch */
	MSG_VMM_WATCH_REPLY = MSG_VMM_BASE + 0x31, /* msg_vmm_watch_reply */
	/* vmm -> front, reqid = the watch's: msg_vmm_watch_events, then
	 * count entries */
	MSG_VMM_WATCH_EVENTS = MSG_VMM_BASE + 0x32,
	MSG_VMM_WATCH_STOP = MSG_VMM_BASE + 0x33, /* front -> vmm: _stop */
	/* Fork a context (from -> the new context), name a snapshot of one
	 * (context, name), list a context's snapshots (context); a create
	 * with a name restores that snapshot into the new context. */
	MSG_VMM_CONTEXT_FORK = MSG_VMM_BASE + 0x40,
	MSG_VMM_CONTEXT_SNAPSHOT = MSG_VMM_BASE + 0x41,
	MSG_VMM_CONTEXT_SNAPSHOTS = MSG_VMM_BASE + 0x42,
	MSG_VMM_CONTEXT_SNAPSHOT_DELETE = MSG_VMM_BASE + 0x43, /* name */
	MSG_VMM_RUN_SECRET = MSG_VMM_BASE + 0x50, /* front -> vmm, before
						     MSG_VMM_RUN, same reqid:
						     msg_vmm_run_secret */
	MSG_VMM_TERM_INPUT = MSG_VMM_BASE + 0x51, /* front -> vmm: a terminal
						     run's input, its reqid:
						     msg_vmm_term_input */
	MSG_VMM_PORT_OPEN = MSG_VMM_BASE + 0x58, /* front -> vmm:
						    msg_vmm_port */
	MSG_VMM_PORT_REPLY = MSG_VMM_BASE + 0x59 /* vmm -> front:
						    msg_vmm_port_reply [+ the
						    connected socket] */
};

/*
 * RUN_F_TERMINAL (with RUN_F_STREAM): an interactive run bound to a
 * terminal (docs/terminal.md). Its stdin is a pipe the vmm writes what
 * MSG_VMM_TERM_INPUT brings; its fds 0-2 are a terminal to the guest;
 * the vmm announces its start with an empty MSG_VMM_RUN_OUTPUT.
 */
#define RUN_F_TERMINAL 0x8u
/*
 * RUN_F_STDIN (with RUN_F_STREAM, never with RUN_F_BACKGROUND): a
 * command whose stdin is a pipe, not a terminal, fed as a terminal's
 * is (MSG_VMM_TERM_INPUT: data, then its end; a resize is ignored);
 * its output is stdout and stderr as any run's. stdin_len must be 0.
 */
#define RUN_F_STDIN 0x10u
enum term_input_kind { TERM_IN_DATA = 1, TERM_IN_RESIZE, TERM_IN_EOF };
struct msg_vmm_term_input {
	uint32_t kind; /* enum term_input_kind */
	uint16_t cols, rows; /* TERM_IN_RESIZE: 1..1000 */
	uint32_t len; /* TERM_IN_DATA: bytes of data used */
	uint32_t pad; /* 0 */
	uint8_t data[4096];
};

/*
 * One secret for the MSG_VMM_RUN that follows (docs/secrets.md): the
 * policy's grant (secret:read, target the name, minted for the vmm and
 * this request id) and the value as the store keeps it, sealed to the
 * secrets key, which only the vmm can open. At most SECRET_RUN_MAX per
 * run; the vmm forgets them once that run has started or been refused.
 */
#define RUN_SECRET_SEALED_MAX 4200 /* = STORE_SEALED_MAX */
struct msg_vmm_run_secret {
	struct grant grant;
	char name[64]; /* NUL-terminated, = the grant's target */
	uint32_t sealed_len; /* 1..RUN_SECRET_SEALED_MAX */
	uint32_t pad; /* 0 */
	uint8_t sealed[RUN_SECRET_SEALED_MAX];
};

/* The caps of the token that asked for the run: the vmm asks the policy
 * for the run's egress decisions with them (effective rights = token
 * caps & policy). A run without this message gets no egress. */
struct msg_vmm_run_caps {
	uint32_t token_caps; /* cap_set_t */
	uint32_t pad; /* 0 */
	char request_id[40]; /* the API request's, for the audit log; NUL */
};

#define RUN_MAX_ARGS 256
#define RUN_MAX_ENV 256
#define RUN_MAX_INPUT (8u << 20) /* whole request memfd */
/* Arguments and variables of a run, NULs included: they go on the guest's
 * stack, which is at least 2 MiB (docs/api.yaml: 413 above it). */
#define RUN_ARGS_BYTES_MAX (1u << 20)
#define RUN_NAME_MAX 64
#define RUN_CWD_MAX 1024 /* = FILE_PATH_MAX, a workspace path */
#define CTX_ID_MAX 32 /* "ctx-" and 20 base32 characters, NUL included */
#define SBX_ID_MAX 72 /* NUL included */
#define SBX_ENV_MAX 8192 /* "K=V\0" strings, total */
#define SBX_PAGE_MAX 100

/* Status of a sandbox reply: 0 or one of these. */
enum sbx_status {
	SBX_OK = 0,
	SBX_E_NOTFOUND, /* no such sandbox for this owner */
	SBX_E_EXISTS, /* the id is taken */
	SBX_E_IMAGE, /* no such image, or it does not verify */
	SBX_E_FULL, /* at the configured maximum of sandboxes */
	SBX_E_GRANT, /* the grant does not authorize it */
	SBX_E_INTERNAL, /* the host could not do it (logged) */
	SBX_E_RESTORING, /* not found yet: the vmm is still reading the store */
	SBX_E_QUOTA, /* the principal holds its policy's `sandboxes` already */
	SBX_E_CTX_NOTFOUND, /* no such context in this sandbox */
	SBX_E_CTX_FULL, /* at the principal's or the vmm's context limit */
	SBX_E_SNAP_NOTFOUND, /* no such snapshot in this sandbox */
	SBX_E_SNAP_EXISTS, /* the snapshot's name is taken */
	SBX_E_SNAP_FULL, /* at the principal's snapshots quota or the vmm's */
	SBX_E_FORK_BUSY, /* as many forks in progress as the vmm copies */
	SBX_E_FORK_TOOBIG, /* the workspace is too large to copy (its quota,
			      names, depth or the time allowed) */
	SBX_E_ISOLATION, /* the policy's isolation kvm, on a box that runs
			   its guests on the trap platform */
	SBX_E_PAUSED /* a pause of a sandbox paused already */
};

struct msg_vmm_sandbox_new {
	struct grant grant; /* sandbox:write, target = id */
	char id[SBX_ID_MAX];
	char image[RUN_NAME_MAX];
	uint64_t ttl_s;
	uint32_t env_len; /* bytes used in env[] */
	/* A fork: the policy's `contexts` quota of the caller (0: none),
	 * which the source's contexts, carried along, must fit. */
	uint32_t contexts_max;
	/* SBX_NEW_*: what the new workspace holds before any run. */
	uint32_t flags;
	uint32_t pad; /* 0 */
	char env[SBX_ENV_MAX]; /* "K=V\0" strings */
	/* A fork: the caller's sandbox whose workspace the new one starts
	 * with a copy of (its image is the same); "" for a new sandbox.
	 * The reply comes once the copy is done (VMM_FORK_MS at most). */
	char from[SBX_ID_MAX];
};

/* E2B's layout (docs/e2b.md): the workspace holds home/user (mode 0755),
 * the directory E2B's commands, cells and relative paths start in. */
#define SBX_NEW_HOME_USER 0x1u
#define SBX_NEW_FLAGS SBX_NEW_HOME_USER

struct msg_vmm_sandbox_ref {
	struct grant grant; /* sandbox:read or :write, target = id */
	char id[SBX_ID_MAX];
};

/* A sandbox's new end: ttl_s (1 to SBX_TTL_MAX) from now, sooner or
 * later than its old one; answered with MSG_VMM_SANDBOX_INFO. */
#define SBX_TTL_MAX (30u * 24 * 3600)
struct msg_vmm_sandbox_ttl {
	struct grant grant; /* sandbox:write, target = id */
	char id[SBX_ID_MAX];
	uint32_t ttl_s;
	uint32_t pad; /* 0 */
};

struct msg_vmm_sandbox_info {
	uint32_t status; /* enum sbx_status */
	uint32_t paused; /* 1: paused (MSG_VMM_SANDBOX_PAUSE), else 0 */
	char id[SBX_ID_MAX];
	char image[RUN_NAME_MAX];
	int64_t created_at, expires_at; /* unix seconds */
};

/*
 * Files in a sandbox's workspace, for the API's files/ routes. The grant
 * is artifact:read (read, list, exists) or artifact:write (write, remove,
 * mkdir, move) on the sandbox id; paths are confined to the workspace as the
 * guest's are (host/vmm/workspace.h). Every request and every reply
 * carries a memfd, empty when there is nothing in it: a write's bytes
 * (exactly len), a read's bytes, a list's struct vmm_dirent records.
 */
enum vmm_file_op {
	FILE_READ = 1,
	FILE_WRITE,
	FILE_LIST,
	FILE_EXISTS,
	FILE_REMOVE,
	FILE_MKDIR,
	FILE_MOVE /* path to the memfd's len bytes (a path, no NUL); the
		     reply's memfd holds the moved entry's vmm_dirent */
};
#define FILE_PATH_MAX 1024
#define FILE_READ_MAX (32u << 20)
#define FILE_LIST_MAX 10000

struct msg_vmm_file {
	struct grant grant;
	char id[SBX_ID_MAX];
	uint32_t op; /* enum vmm_file_op */
	uint32_t pad;
	uint64_t len; /* FILE_WRITE: bytes in the memfd */
	char path[FILE_PATH_MAX]; /* NUL-terminated */
};

struct msg_vmm_file_reply {
	uint32_t status; /* enum sbx_status */
	int32_t error; /* an errno from the workspace, 0 if none */
	uint64_t len; /* bytes (read) or entries (list) in the memfd */
	uint32_t exists; /* FILE_EXISTS */
	uint32_t pad;
};

struct vmm_dirent {
	char name[256]; /* NUL-terminated */
	char type[8]; /* "file", "dir", "link", "other" */
	uint64_t size;
	int64_t mtime;
};

/*
 * A sandbox's environment: the variables every run in it starts with
 * (a run's own come first and win). env holds "K=V\0" strings. GET needs
 * sandbox:read, the others sandbox:write; the reply holds the set after
 * the operation.
 */
enum vmm_env_op {
	ENV_GET = 1,
	ENV_REPLACE, /* the whole set */
	ENV_MERGE, /* add or overwrite these */
	ENV_DELETE, /* remove these names (env holds "K\0" strings) */
	ENV_CLEAR /* remove all */
};

struct msg_vmm_env {
	struct grant grant;
	char id[SBX_ID_MAX];
	uint32_t op; /* enum vmm_env_op; in a reply: enum sbx_status */
	uint32_t env_len;
	char env[SBX_ENV_MAX];
};

/*
 * A watch of a directory of a sandbox's workspace and what is under it
 * (docs/api.yaml, files/watch). The grant is artifact:read on the
 * sandbox id; the watch is the request's reqid from then on. Bounds: at
 * most WATCH_MAX watches (WATCH_PER_SANDBOX a sandbox), WATCH_DIRS_MAX
 * directories each, WATCH_RATE events a second each (the rest are
 * counted as dropped); events on one path within WATCH_FLUSH_MS are
 * coalesced into one.
 */
#define WATCH_MAX 32
#define WATCH_PER_SANDBOX 4
#define WATCH_DIRS_MAX 64
#define WATCH_DEPTH_MAX 8
#define WATCH_RATE 200
#define WATCH_FLUSH_MS 100
#define WATCH_PENDING_MAX 256

struct msg_vmm_watch {
	struct grant grant;
	char id[SBX_ID_MAX];
	char path[FILE_PATH_MAX]; /* NUL-terminated */
};

struct msg_vmm_watch_reply {
	uint32_t status; /* enum sbx_status */
	int32_t error; /* an errno: ENOENT, ENOTDIR, EMFILE (too many) */
};

enum watch_kind { WATCH_CREATED = 1, WATCH_MODIFIED, WATCH_DELETED };
enum watch_end {
	WATCH_GOING = 0, /* more will come */
	WATCH_END_SANDBOX, /* the sandbox was deleted or expired */
	WATCH_END_DIR, /* the watched directory was deleted or moved */
	WATCH_END_STOPPED /* the front asked (its client went) */
};

/* Then count times: u8 kind (enum watch_kind), u8 is_dir, u16 len, len
 * bytes of path (absolute in the workspace, no NUL); nothing after. */
struct msg_vmm_watch_events {
	uint32_t count;
	uint32_t dropped; /* events not sent (rate, overflow) since the last */
	uint32_t end; /* enum watch_end */
	uint32_t pad;
};

struct msg_vmm_watch_stop {
	uint64_t watch;
};

/* host/watch_wire.c. A whole MSG_VMM_WATCH_EVENTS payload: 0 with *h
 * when every entry is in bounds (a known kind, a path that starts with
 * '/', without NUL, shorter than FILE_PATH_MAX) and nothing follows the
 * last, else -1. Then watch_events_entry walks the entries from offset
 * sizeof(*h), returning the next entry's offset. */
int watch_events_check(
    const uint8_t *p, size_t len, struct msg_vmm_watch_events *h);
size_t watch_events_entry(const uint8_t *p, size_t off, uint8_t *kind,
    int *is_dir, const char **path, size_t *n);

/* The vmm's events of one watch waiting to go (host/watch_wire.c):
 * watch_batch_add coalesces an event on a path already waiting (a new
 * file's writes stay its creation), counts as dropped what is over
 * WATCH_RATE in the current second or WATCH_PENDING_MAX, and sets
 * flush_at WATCH_FLUSH_MS after the first event waits. */
struct watch_pending {
	uint8_t kind; /* enum watch_kind */
	uint8_t is_dir;
	char path[FILE_PATH_MAX];
};
struct watch_batch {
	size_t npend;
	struct watch_pending pend[WATCH_PENDING_MAX];
	uint32_t dropped;
	uint64_t flush_at; /* monotonic ms; 0: nothing waits */
	uint64_t second; /* the rate's current second */
	uint32_t in_second;
};
void watch_batch_add(struct watch_batch *, uint8_t kind, int is_dir,
    const char *path, uint64_t now_ms);

struct msg_vmm_sandbox_list {
	struct grant grant; /* sandbox:read, target = "" (the list route's) */
	char cursor[SBX_ID_MAX]; /* "" from the start; list ids above it */
	uint32_t limit; /* 1..SBX_PAGE_MAX */
	uint32_t pad;
};

struct msg_vmm_sandbox_page {
	uint32_t status;
	uint32_t n;
	char next[SBX_ID_MAX]; /* "" at the end */
	struct msg_vmm_sandbox_info items[SBX_PAGE_MAX];
};

struct msg_vmm_run {
	struct grant grant;
	char sandbox[72]; /* NUL-terminated, = the grant's target */
	char image[RUN_NAME_MAX]; /* NUL-terminated image name */
	char command[RUN_NAME_MAX]; /* NUL-terminated manifest command */
	uint32_t nargs; /* argv[1..], not the command */
	uint32_t nenv;
	uint64_t stdin_len;
	uint64_t input_len; /* size of the memfd */
	uint64_t timeout_ms; /* asked for; the grant's limit caps it */
	uint32_t flags; /* RUN_F_* */
	uint32_t pad;
	char context[CTX_ID_MAX]; /* RUN_F_CONTEXT: NUL-terminated; else 0 */
	/* The guest's first working directory: "" for the workspace's
	 * root, else an absolute guest path, NUL-terminated, that must be
	 * a directory of the sandbox's workspace (RUN_NOCWD otherwise, as
	 * a spawn's chdir would fail); never with RUN_F_CONTEXT, whose
	 * cwd is the context's. */
	char cwd[RUN_CWD_MAX];
};

/*
 * A background run is answered at once with RUN_STARTED and its pid (an
 * empty memfd); when it ends the vmm tells the front with
 * MSG_VMM_BG_DONE (not a reply), so the concurrency slot is given back.
 * Every run, foreground or not, is in its sandbox's process table (the
 * last SBX_PROCS_MAX), which MSG_VMM_PROCS reads; MSG_VMM_KILL stops a
 * running one (the grant: exec, no target: killing names no program).
 */
#define RUN_F_BACKGROUND 0x1u
/*
 * RUN_F_STREAM: a foreground run whose client reads its output as it
 * comes (text/event-stream): the vmm announces the run's start with an
 * empty MSG_VMM_RUN_OUTPUT, then, while it runs, sends what its
 * program wrote since the last time, at most every VMM_STREAM_MS, as
 * MSG_VMM_RUN_OUTPUT (not a reply, the run's reqid, before its
 * MSG_VMM_RUN_DONE on the same link). MSG_VMM_RUN_DONE still carries the
 * whole output; the front drops what it has already passed on.
 */
#define RUN_F_STREAM 0x2u
#define VMM_STREAM_MS 100
struct msg_vmm_run_output {
	uint32_t stream; /* 1 stdout, 2 stderr */
	uint32_t pad0;
	uint64_t offset; /* of the first byte in the stream */
	/* A run's start (no bytes): its pid, as MSG_VMM_KILL takes it and
	 * the sandbox's process list shows it; 0 in every other piece. */
	uint64_t run_pid;
	/* then the bytes */
};

/*
 * Live contexts (docs/contexts.md): an interpreter that stays up in its
 * own `keepd: vm` process between cells. A cell is a MSG_VMM_RUN with
 * RUN_F_CONTEXT and the context's id: one argument (the code), nenv
 * variables for that cell, no stdin. Its MSG_VMM_RUN_DONE carries the
 * driver's JSON lines as "stdout" (out_len) and the raw output of
 * descriptors 1 and 2 as "stderr" (err_len). A context that is not the
 * caller's, or gone, is RUN_NOTFOUND; one busy with a cell is
 * RUN_REFUSED. A cell with RUN_F_STREAM streams as a run does, but its
 * pieces (stream 1, offsets in the driver's lines) are whole lines of
 * the driver's only, as they come: never its raw output, nothing of
 * the journal's cells run again first, not its end line; its
 * MSG_VMM_RUN_DONE, which comes once it is journaled, still carries
 * everything.
 *
 * Grants: create is exec of the interpreter's command ("python", "js"),
 * as a run of it would be; restart and delete are exec without a target
 * (as kill); list is sandbox:read of the sandbox.
 */
#define RUN_F_CONTEXT 0x4u
#define CTX_PAGE_MAX 32 /* contexts per sandbox */
#define CTX_CWD_MAX 256

enum ctx_lang { CTX_LANG_PYTHON = 0, CTX_LANG_JS = 1 };

enum ctx_state {
	CTX_IDLE = 0, /* waiting for a cell (or still starting) */
	CTX_BUSY, /* running a cell */
	CTX_DEAD, /* its interpreter ended; the next cell starts a new one */
	CTX_PAUSED /* no interpreter: the next cell resumes from its journal */
};

struct msg_vmm_context {
	struct grant grant;
	char sandbox[SBX_ID_MAX]; /* NUL-terminated */
	char context[CTX_ID_MAX]; /* create: the new id; list: "" */
	char cwd[CTX_CWD_MAX]; /* create: the guest path, NUL-terminated */
	uint32_t language; /* enum ctx_lang */
	uint32_t max_contexts; /* create: the principal's quota, 0: none */
	uint32_t pad;
	uint64_t pause_ms; /* create: idle time before a pause, 0: never */
	uint64_t disk_max; /* create: the snapshot quota (bytes), 0: none */
	char from[CTX_ID_MAX]; /* fork: the context forked */
	char name[CTX_ID_MAX]; /* snapshot: its name; create: restore it */
};

struct vmm_context_info {
	char id[CTX_ID_MAX];
	char cwd[CTX_CWD_MAX];
	uint32_t language; /* enum ctx_lang */
	uint32_t state; /* enum ctx_state */
	uint64_t execution_count;
	int64_t created_at; /* unix seconds */
	/* A snapshot (id is its name): the context it was taken from, the
	 * bytes its journal holds. */
	char from[CTX_ID_MAX];
	uint64_t bytes;
};

struct msg_vmm_contexts {
	uint32_t status; /* enum sbx_status; SBX_E_CTX_* for contexts */
	uint32_t n;
	struct vmm_context_info c[CTX_PAGE_MAX];
};

/*
 * Images: the operator's in images/ (root-owned, read-only to the vmm)
 * and the API's uploads in uploads/ (the vmm's). An upload must verify
 * against the trusted image keys, may not take an operator image's name,
 * and replaces an upload of the same name. Only uploads can be deleted.
 * Grants: image:read (list) or image:write (put: no target; delete: the
 * name).
 */
#define VMM_IMAGE_LIST_MAX 32
#define VMM_IMAGE_MAX_BYTES (64u << 20)

struct msg_vmm_image_ref {
	struct grant grant;
	char name[RUN_NAME_MAX]; /* delete: NUL-terminated; else "" */
	uint64_t size; /* put: bytes in the memfd */
};

struct vmm_image_info {
	char name[RUN_NAME_MAX];
	char version[RUN_NAME_MAX];
	char digest[72]; /* BLAKE2b-256 of the signed bytes, hex */
	uint64_t size;
	char languages[64]; /* "python", "javascript", "" */
	uint32_t uploaded; /* 1: from the API */
	uint32_t pad;
};

struct msg_vmm_images {
	uint32_t status; /* enum sbx_status; SBX_E_EXISTS: an operator name */
	uint32_t n;
	char reason[128]; /* why an upload was refused */
	struct vmm_image_info im[VMM_IMAGE_LIST_MAX];
};
#define SBX_PROCS_MAX 32

enum run_status {
	RUN_EXITED = 0, /* exit_code is the guest's */
	RUN_FAULT, /* the guest faulted (reason names the vector) */
	RUN_TIMEOUT, /* killed at its time limit */
	RUN_OUTPUT_LIMIT, /* killed at its output limit */
	RUN_REFUSED, /* not started: grant, image or command refused */
	RUN_ERROR, /* the host could not run it */
	RUN_STARTED, /* background: running, pid set */
	RUN_KILLED, /* stopped by MSG_VMM_KILL */
	RUN_NOSANDBOX, /* not started: no such sandbox of the principal's */
	RUN_NOTFOUND, /* a cell for a context that does not exist */
	RUN_NOCWD /* not started: its cwd is no directory of the workspace */
};

#define RUN_EGRESS_MAX 264

struct msg_vmm_run_done {
	uint32_t status; /* enum run_status */
	int32_t exit_code;
	uint64_t out_len, err_len; /* bytes in the memfd */
	uint64_t duration_ms;
	uint64_t boot_us;
	uint64_t pid; /* the run's number in its sandbox's process table */
	uint32_t limits; /* RUN_LIMIT_*: limits its process tree met */
	uint32_t pad;
	char reason[64]; /* NUL-terminated, "" when exited */
	/* RUN_LIMIT_EGRESS: the first destination refused ("name",
	 * "name:port", "address:port"), NUL-terminated; "" unknown. */
	char egress[RUN_EGRESS_MAX];
	/* Bytes the run's guest sent and received through egress. */
	uint64_t egress_out, egress_in;
};
/* A fork refused at the process limit; a mapping or fork refused at the
 * memory limit (docs/vmm.md, "Limits and how a run ends"). */
#define RUN_LIMIT_PROCESSES 0x1u
#define RUN_LIMIT_MEMORY 0x2u
/* A socket's destination outside the sandbox refused (EACCES). */
#define RUN_LIMIT_EGRESS 0x4u

/* A sandbox's usage since the vmm started (GET .../system). */
struct msg_vmm_system {
	uint32_t status; /* enum sbx_status */
	uint32_t pad;
	uint64_t runs;
	uint64_t cpu_ms; /* guest time of its runs */
	uint64_t memory_bytes; /* the most guest memory one run touched */
	uint64_t workspace_bytes; /* what its workspace holds now */
};

struct vmm_proc {
	uint64_t pid;
	char cmd[RUN_NAME_MAX]; /* NUL-terminated */
	uint32_t status; /* enum run_status; RUN_STARTED while running */
	int32_t exit_code;
	int64_t started_at; /* unix seconds */
	uint32_t background; /* 1: started by execute/commands background */
	uint32_t pad0;
};

struct msg_vmm_procs {
	uint32_t status; /* enum sbx_status */
	uint32_t n;
	struct vmm_proc p[SBX_PROCS_MAX]; /* oldest first */
};

struct msg_vmm_kill {
	struct grant grant; /* exec, target "" */
	char id[SBX_ID_MAX];
	uint64_t pid;
	uint32_t status; /* reply: enum sbx_status */
	uint32_t sig; /* SIGKILL (or 0); SIGTERM, SIGINT, SIGHUP first */
};

struct msg_vmm_bg_done {
	char principal[GRANT_PRINCIPAL_MAX];
	char id[SBX_ID_MAX];
	char cmd[RUN_NAME_MAX];
	uint64_t pid;
	uint32_t status; /* enum run_status */
	int32_t exit_code;
	uint64_t duration_ms;
};

/*
 * A port into a sandbox (docs/architecture.md, "Ports"): the vmm, which
 * holds the sandbox's namespaces, forks a child that joins them and
 * connects to 127.0.0.1:port there, and hands the connected socket to
 * the front, which only moves bytes. The front never joins a namespace.
 */
struct msg_vmm_port {
	struct grant grant; /* sandbox:read, target = id */
	char id[SBX_ID_MAX];
	uint32_t port; /* 1..65535 */
	uint32_t pad;
};

enum port_status {
	PORT_OK = 0,
	PORT_E_REFUSED = 100, /* nothing listens there (or no netns yet) */
	PORT_E_UNREACHABLE /* the child could not join or connect */
};

struct msg_vmm_port_reply {
	uint32_t status; /* enum sbx_status, or enum port_status */
	int32_t err; /* errno of the connect, for the front's message */
};

/* MSG_VMM_NET: may the guest resolve name (VMM_NET_RESOLVE, port 0), or
 * a connection to name:port (VMM_NET_CONNECT) or to an address by an
 * address rule (VMM_NET_CONNECT_ADDR, name "10.1.2.3" or "[fd00::1]"),
 * host/vmm/vmm.h. */
#define VMM_NET_NAME_MAX 256

struct msg_vmm_net {
	uint32_t op;
	uint16_t port;
	uint16_t pad;
	char name[VMM_NET_NAME_MAX]; /* NUL-terminated, zero-padded */
};

/* error: 0 or the positive errno the guest gets; refused: 1 when the
 * policy or egress's checks refused it (the run's result then says
 * "egress"), 0 for a failure of the network's own. */
struct msg_vmm_net_reply {
	int32_t error;
	uint32_t refused;
};

/* MSG_VMM_NET_REPORT: why (VMM_NET_TLS_NAME ... VMM_NET_BUDGET,
 * host/vmm/vmm.h), the connection's name and port, and the server name
 * its ClientHello asked for ("" none). Strings NUL-terminated. */
struct msg_vmm_net_report {
	uint32_t why;
	uint16_t port;
	uint16_t pad;
	char name[VMM_NET_NAME_MAX];
	char sni[VMM_NET_NAME_MAX];
};

#endif
