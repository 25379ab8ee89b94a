/*
 * The vmm's egress relay for one run (docs/egress.md). A `keepd: vm`
 * process cannot reach the network, the policy or the egress process:
 * it has one socketpair to the vmm. A guest's KEEP_SYS_FETCH travels
 *
 *	vm  --MSG_VMM_FETCH (wire request)-->  vmm
 *	vmm --MSG_POLICY_DECIDE (egress, "host:port", the run's principal
 *	      and token caps, link egress)-->  policy  --decision-->  vmm
 *	vmm --MSG_EGRESS_FETCH (grant + request with the granted rule)-->
 *	      egress, which verifies the grant, fetches, audits
 *	egress --MSG_EGRESS_FETCH_REPLY--> vmm --MSG_VMM_FETCH_REPLY--> vm
 *
 * A denial is relayed to egress too, which verifies and audits it and
 * answers the refusal. The vmm cannot widen anything: the egress process
 * recomputes the grant's target from the rule it is sent.
 *
 * A guest's DNS query and TCP connect by name (docs/egress.md, "Names
 * and connections") travel the same way:
 *
 *	vm  --MSG_VMM_NET (resolve name, or connect name:port)-->  vmm
 *	vmm --MSG_POLICY_DECIDE (egress, "name:*" or "name:port")--> policy
 *	vmm --MSG_EGRESS_NAME (grant, name, port)--> egress, which verifies,
 *	      audits, and for a connect resolves, checks and connects
 *	egress --MSG_EGRESS_NAME_REPLY (+ socket)--> vmm --MSG_VMM_NET_REPLY
 *	      (+ socket)--> vm
 *
 * One request per run is in flight at a time: a vm process blocks on
 * its call, the run's processes take turns (a POSIX lock on the request
 * buffer), and the vmm reads the next request only once it answered the
 * last (vmm_egress_busy); a reply carries its request's id, so one to a
 * request given up on is dropped. Every function is called from the
 * vmm's loop.
 */
#ifndef KEEP_HOST_VMM_EGRESS_H
#define KEEP_HOST_VMM_EGRESS_H

#include <stddef.h>
#include <stdint.h>

#include "host/egress/egress.h"
#include "host/grant.h"
#include "host/msg.h"
#include "host/proc.h"

struct vmm_config;
struct vmm_result;
struct msg_vmm_run_caps;

/*
 * A connect's decision the policy let the run reuse (DECIDE_REUSE,
 * msg_policy_decision.reuse_ms; docs/egress.md, "Decisions reused"):
 * the next connect of the run to the same op, name and port takes it,
 * grant and all, to egress without asking the policy again, which
 * verifies the grant and checks the name's addresses as ever. At most
 * VMM_EGRESS_REUSE_MAX a run (the oldest goes), each for the policy's
 * reuse_ms and no later than VMM_EGRESS_REUSE_MARGIN_MS before its grant
 * expires; all dropped when a policy is loaded (MSG_POLICY_CHANGED) and
 * with the run. A run is one principal, token and sandbox, so those are
 * the same for every entry.
 */
#define VMM_EGRESS_REUSE_MAX 8
#define VMM_EGRESS_REUSE_MARGIN_MS 5000
struct vmm_egress_reuse {
	uint64_t until_ms; /* CLOCK_MONOTONIC; 0: the slot is empty */
	uint32_t op;
	uint16_t port;
	char host[EGRESS_HOST_MAX + 1];
	struct msg_policy_decision d;
};

struct vmm_egress_run {
	int fd; /* the vmm's end of the socketpair, -1 when none */
	int shm; /* memfd the vm process writes its request into, or -1 */
	char principal[GRANT_PRINCIPAL_MAX];
	uint32_t token_caps;
	char request_id[40]; /* the API request that started the run */
	char sandbox[72];
	uint64_t reqid; /* the decision or fetch in flight, 0 none */
	int stage; /* 0 idle, 1 waiting for the policy, 2 for egress */
	void *req; /* the vm's wire request while the policy decides */
	size_t len;
	char host[EGRESS_HOST_MAX + 1];
	uint16_t port;
	uint32_t op; /* 0 a fetch, else VMM_NET_RESOLVE, _CONNECT or
			_CONNECT_ADDR */
	uint64_t vm_reqid; /* the vm's id of its request, echoed */
	/* The run's secrets injected at egress: value and placeholder of
	 * one by name, 0; -1 when the run was not given it (NULL: none). */
	int (*secret_for_egress)(void *arg, const char *name,
	    const uint8_t **value, size_t *len, const char **placeholder);
	void *secret_arg;
	/* Decisions to reuse: VMM_EGRESS_REUSE_MAX slots, allocated with
	 * the first (NULL: none yet); reuse_next the slot to fill next. */
	struct vmm_egress_reuse *reuse;
	unsigned reuse_next;
	/* The run's direct link to egress (host/proc_egress.h,
	 * MSG_EGRESS_RUN): its id there (0: none), and the vm processes'
	 * end until the fork hands it over (-1: none). */
	uint64_t run_id;
	int direct_vm;
};

/*
 * Before the fork: make the socketpair and the request buffer (a memfd
 * both processes share: the vm process may not create one). *child_fd
 * is the vm process's end. caps is what the front sent for this run
 * (NULL: none, so no egress is granted). Returns 0 or -1 (errno set); r->fd is -1 on
 * failure.
 */
int vmm_egress_prepare(struct vmm_egress_run *r, const char *principal,
    const char *sandbox, const struct msg_vmm_run_caps *caps, int *child_fd);

/*
 * After vmm_egress_prepare: make the run's direct link to egress and
 * send egress its end, with who the run is; the vm's end is
 * r->direct_vm. Without it (no egress link, or a failure) the vm
 * process asks the vmm for every connect, as before.
 */
void vmm_egress_direct(struct proc_ctx *ctx, struct vmm_egress_run *r);

/* The vm process has its end of the direct link (or the fork failed):
 * the vmm's copy goes. */
void vmm_egress_direct_handed(struct vmm_egress_run *r);

/* In the vm process, after the fork: let cfg's fetch calls go over
 * child_fd, with requests written into r->shm, and connects whose
 * decision egress keeps over r->direct_vm. */
void vmm_egress_child(
    const struct vmm_egress_run *r, int child_fd, struct vmm_config *cfg);

/* In the vm process, its run over and its tree gone: mark res final and
 * close the socket, whose end wakes the vmm to answer at once rather
 * than when this process has finished exiting (host/vmmproc/vmm_run.c). */
void vmm_egress_child_done(struct vmm_result *res);

/* Whether r has a request in flight: its socket is then not read (the
 * next request waits there). */
static inline int
vmm_egress_busy(const struct vmm_egress_run *r)
{
	return r->stage != 0;
}

/* The run's vm process is gone: what it reported and the vmm has not
 * read yet (MSG_VMM_NET_REPORT only) is audited now. */
void vmm_egress_drain(struct proc_ctx *ctx, struct vmm_egress_run *r);

/* The run is over, its guest's egress byte counts in bytes: one audit
 * entry (egress.bytes) when it moved any. */
struct vmm_egress_bytes;
void vmm_egress_audit_bytes(struct proc_ctx *ctx,
    const struct vmm_egress_run *r, const struct vmm_egress_bytes *bytes);

/* A policy was loaded (MSG_POLICY_CHANGED): r reuses no decision made
 * before it. */
void vmm_egress_reuse_drop(struct vmm_egress_run *r);

/* The run is over: close and forget. */
void vmm_egress_close(struct vmm_egress_run *r);

/* r->fd is readable. Returns 0, or -1 when the vm side is gone or
 * misbehaved (r is closed). */
int vmm_egress_event(struct proc_ctx *ctx, struct vmm_egress_run *r);

/* The runs with a request in flight with this reqid: NULL if none. */
struct vmm_egress_run *vmm_egress_find(
    struct vmm_egress_run *const *runs, size_t n, uint64_t reqid);

/* MSG_POLICY_DECISION and MSG_EGRESS_FETCH_REPLY for run r (found by the
 * message's reqid). Return 0 or -1 (logged). */
int vmm_egress_decision(
    struct proc_ctx *ctx, struct vmm_egress_run *r, const struct msg *m);
int vmm_egress_reply(
    struct proc_ctx *ctx, struct vmm_egress_run *r, const struct msg *m);
/* MSG_EGRESS_NAME_REPLY for run r: passed on to the vm process. */
int vmm_egress_name_reply(
    struct proc_ctx *ctx, struct vmm_egress_run *r, const struct msg *m);

#endif
