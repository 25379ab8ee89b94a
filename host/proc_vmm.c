/*
 * The vmm: holds /dev/kvm (passed by the parent, never opened here), the
 * images and the workspaces; forks one `keepd: vm` process per guest in
 * phase 2 (host/vmm/). This skeleton checks the KVM descriptor and answers
 * the control messages.
 */
#include <sys/ioctl.h>

#include <linux/kvm.h>

#include "host/msg.h"
#include "host/proc.h"
#include "lib/log.h"

static const struct msg_handler vmm_handlers[] = {
	MSG_HANDLERS_COMMON,
};

int
vmm_main(struct proc_ctx *ctx)
{
	int v;

	ctx->handlers = vmm_handlers;
	ctx->nhandlers = nitems(vmm_handlers);
	if (ctx->kvm_fd < 0)
		log_warnx("%s: no /dev/kvm: guests cannot run", __func__);
	else if ((v = ioctl(ctx->kvm_fd, KVM_GET_API_VERSION, 0)) !=
	    KVM_API_VERSION)
		log_warnx("%s: /dev/kvm API version %d, want %d", __func__, v,
		    KVM_API_VERSION);
	else
		log_info("%s: /dev/kvm API version %d", __func__, v);
	log_info("%s: ready", __func__);
	return proc_loop(ctx);
}
