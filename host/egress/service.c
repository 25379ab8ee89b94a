/*
 * The request -> reply step (egress_service_run): decode, ask the
 * server's admit hook, run the fetch or webhook, tell its done hook,
 * encode the reply. The egress process serves every request through it;
 * egress_service_handle is the same without hooks. Apart from wire.c so
 * the codec links without libcurl.
 */
#include <stdlib.h>
#include <string.h>

#include "host/egress/egress_int.h"

int
egress_service_run(struct egress_ctx *ctx,
    const struct egress_service_hooks *hooks, uint16_t type, const void *msg,
    size_t len, uint16_t *reply_type, void **reply, size_t *reply_len,
    struct egress_decision *d)
{
	struct egress_decoded dec;
	struct egress_response resp;
	unsigned attempts = 0;
	int rc, frc = 0, mrc, admit = 0;

	*reply = NULL;
	*reply_len = 0;
	*reply_type = 0;
	memset(d, 0, sizeof(*d));
	d->rule = -1;
	d->addr_class = -1;
	memset(&resp, 0, sizeof(resp));
	if (type == MSG_EGRESS_FETCH)
		*reply_type = MSG_EGRESS_FETCH_REPLY;
	else if (type == MSG_EGRESS_WEBHOOK)
		*reply_type = MSG_EGRESS_WEBHOOK_REPLY;
	else
		return EGRESS_E_MSG;
	rc = egress_wire_decode(type, msg, len, &dec);
	if (rc == 0 && hooks != NULL && hooks->admit != NULL)
		admit = hooks->admit(hooks->arg, &dec, d);
	if (rc != 0) {
		d->error = rc;
		strlcpy(d->detail, "malformed", sizeof(d->detail));
	} else if (admit == EGRESS_SERVICE_ELSEWHERE) {
		/* Served by another process, which replies itself. */
		egress_wire_decoded_free(&dec);
		return 0;
	} else if (admit != 0) {
		/* Refused by the server before any transfer: d says why. */
	} else if (type == MSG_EGRESS_FETCH) {
		attempts = 1;
		frc = egress_fetch(ctx, &dec.req, &resp, d);
	} else {
		frc = egress_webhook_deliver(ctx, &dec.webhook, &attempts, d);
		if (frc != 0 && d->error == 0)
			d->error = frc;
	}
	if (rc == 0 && admit == 0 && hooks != NULL && hooks->done != NULL)
		hooks->done(hooks->arg, &dec, d, attempts);
	egress_wire_decoded_free(&dec);
	/* A webhook's body is not passed back; a fetch's is. */
	mrc = egress_wire_encode_reply(d, attempts,
	    (rc == 0 && admit == 0 && frc == 0 && type == MSG_EGRESS_FETCH)
	        ? &resp
	        : NULL,
	    reply, reply_len);
	egress_response_free(&resp);
	if (mrc != 0)
		return mrc;
	return rc;
}

int
egress_service_handle(struct egress_ctx *ctx, uint16_t type, const void *msg,
    size_t len, uint16_t *reply_type, void **reply, size_t *reply_len,
    struct egress_decision *d)
{
	return egress_service_run(
	    ctx, NULL, type, msg, len, reply_type, reply, reply_len, d);
}
