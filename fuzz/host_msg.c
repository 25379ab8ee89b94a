/* Fuzz the message decoder and the grant verifier: any datagram from any
 * sender either decodes to a payload of exactly the declared size or is
 * refused; nothing is read outside the datagram. Input: byte 0 picks the
 * sender, byte 1 bit 0 says whether a descriptor came along, the rest is
 * the datagram. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "host/grant.h"
#include "host/msg.h"
#include "host/proc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int
h_none(struct proc_ctx *ctx, const struct msg *m)
{
	return 0;
}

static const struct msg_handler table[] = {
	MSG_HANDLERS_COMMON,
	{ MSG_POLICY_LOAD, PROC_BIT(PROC_PARENT),
	    sizeof(struct msg_policy_load), MSG_H_FD, h_none },
	{ MSG_POLICY_DECIDE, PROC_BIT(PROC_FRONT) | PROC_BIT(PROC_VMM),
	    sizeof(struct msg_policy_decide), 0, h_none },
	{ MSG_POLICY_DECISION, PROC_BIT(PROC_POLICY),
	    sizeof(struct msg_policy_decision), 0, h_none },
	{ MSG_FRONT_BASE, MSG_ANY_PROC, 512, MSG_H_VARIABLE, h_none },
};

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t key[GRANT_KEY_BYTES] = { 1, 2, 3 };
	const struct msg_handler *h;
	struct msg_policy_decision d;
	struct grant g;
	struct msg m;
	uint8_t *buf;
	size_t len;
	int rc;

	if (size < 2 || size > 2 + sizeof(struct msg_hdr) + MSG_MAX_PAYLOAD)
		return 0;
	len = size - 2;
	/* An exact-size copy, so ASan sees any over-read. */
	if ((buf = malloc(len ? len : 1)) == NULL)
		return 0;
	memcpy(buf, data + 2, len);
	rc = msg_decode(table, nitems(table),
	    (enum proc_id)(data[0] % (PROC_COUNT + 1)), buf, len, data[1] & 1,
	    &m, &h);
	if (rc == MSG_OK) {
		if (m.data + m.hdr.len != buf + len)
			abort();
		if (!(h->flags & MSG_H_VARIABLE) && m.hdr.len != h->size)
			abort();
		if (m.hdr.len > h->size)
			abort();
		if (m.hdr.type == MSG_POLICY_DECISION) {
			memcpy(&d, m.data, sizeof(d));
			rc = grant_verify(&d.grant, sizeof(d.grant), PROC_VMM,
			    key, 0, m.hdr.reqid, &g);
			/* Without the key nothing verifies. */
			if (rc == GRANT_OK || rc == GRANT_ERR_DENIED)
				abort();
		}
	}
	grant_verify(buf, len, PROC_STORE, key, 0, 0, &g);
	/* The same bytes as a batch's payload: every inner message found
	 * lies whole inside it. */
	{
		const uint8_t *inner;
		size_t off = 0, ilen;

		while (msg_batch_next(buf, len, &off, &inner, &ilen) == 1)
			if (inner < buf || inner + ilen > buf + len ||
			    ilen < sizeof(struct msg_hdr))
				abort();
	}
	free(buf);
	return 0;
}
