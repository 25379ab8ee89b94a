/*
 * The front's api_backend: the ops of host/api/api.h carried out over the
 * front's links. Tokens are verified here (public keys only, with the
 * verified-token cache); every decision is the policy process's, asked
 * for with MSG_POLICY_DECIDE, and its grant travels with the operation to
 * the process that performs it (docs/architecture.md, "Request path").
 *
 * Each request runs in a task (lib/task.h): a call to another process
 * suspends it until the reply (bounded by FRONT_CALL_TIMEOUT_MS), and the
 * loop serves other requests meanwhile, so many requests are in flight at
 * the policy process and the vmm at once. Runs are deferred: the vmm
 * answers later and front_backend_handlers resumes the request.
 */
#ifndef KEEP_HOST_FRONT_BACKEND_H
#define KEEP_HOST_FRONT_BACKEND_H

#include <stddef.h>

#include "host/api/api.h"
#include "host/proc.h"

#define FRONT_CALL_TIMEOUT_MS 5000

struct front_backend;

/* NULL on allocation failure. ctx must outlive it. */
struct front_backend *front_backend_new(struct proc_ctx *ctx);
/* Before api_free: answer every run still waiting. */
void front_backend_stop(struct front_backend *);
void front_backend_free(struct front_backend *);
const struct api_backend *front_backend_ops(struct front_backend *);

/* From the event loop: reply to the runs that have finished. */
void front_backend_resume(struct front_backend *);
/* After each pass of the event loop: the audit entries go out once the
 * oldest has waited FB_AUDIT_DELAY_MS. front_backend_flush_in gives the
 * milliseconds until then (-1: none waits), for the loop's timeout. */
void front_backend_flush(struct front_backend *);
int front_backend_flush_in(struct front_backend *);

/* A link is readable: deliver the replies tasks wait for, dispatch the
 * rest. -1 when the parent's link is gone (the front must leave). */
int front_backend_link_event(struct front_backend *, enum proc_id peer);

/* A peer link closed: fail what waits on it. */
void front_backend_link_down(struct front_backend *, enum proc_id peer);

#endif
