/*
 * The front: the TCP/TLS listener, HTTP/1.1, token verification (host/http/, host/api/ in phase 2). This skeleton answers the control messages and holds the listener the parent passed.
 */
#include "host/msg.h"
#include "host/proc.h"
#include "lib/log.h"

static const struct msg_handler front_handlers[] = {
	MSG_HANDLERS_COMMON,
};

int
front_main(struct proc_ctx *ctx)
{
	ctx->handlers = front_handlers;
	ctx->nhandlers = nitems(front_handlers);
	log_info("%s: ready", __func__);
	return proc_loop(ctx);
}
