/*
 * Egress: outbound HTTPS with libcurl, only with a grant (host/egress/ in phase 2). This skeleton answers the control messages.
 */
#include "host/msg.h"
#include "host/proc.h"
#include "lib/log.h"

static const struct msg_handler egress_handlers[] = {
	MSG_HANDLERS_COMMON,
};

int
egress_main(struct proc_ctx *ctx)
{
	ctx->handlers = egress_handlers;
	ctx->nhandlers = nitems(egress_handlers);
	log_info("%s: ready", __func__);
	return proc_loop(ctx);
}
