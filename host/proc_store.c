/*
 * The store: the LMDB environment (host/store/ in phase 2). This skeleton runs chrooted in the data directory and answers the control messages.
 */
#include "host/msg.h"
#include "host/proc.h"
#include "lib/log.h"

static const struct msg_handler store_handlers[] = {
	MSG_HANDLERS_COMMON,
};

int
store_main(struct proc_ctx *ctx)
{
	ctx->handlers = store_handlers;
	ctx->nhandlers = nitems(store_handlers);
	log_info("%s: ready", __func__);
	return proc_loop(ctx);
}
