/*
 * Fuzz the egress message decoders. The first byte picks the message
 * type. Property: a message that decodes re-encodes to the same bytes
 * (the format is canonical), and nothing crashes, leaks or over-reads.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "host/egress/egress.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint16_t types[] = { MSG_EGRESS_FETCH, MSG_EGRESS_WEBHOOK,
		MSG_EGRESS_FETCH_REPLY };
	const struct egress_wire_reply *rep;
	const uint8_t *rh, *rb;
	struct egress_decoded d;
	uint16_t type;
	uint8_t *msg;
	void *out;
	size_t outlen;
	int rc;

	if (size < 1)
		return 0;
	type = types[data[0] % 3];
	/* An exact-size copy so that an over-read faults under ASan. */
	if ((msg = malloc(size - 1 ? size - 1 : 1)) == NULL)
		return 0;
	memcpy(msg, data + 1, size - 1);
	if (type == MSG_EGRESS_FETCH_REPLY) {
		(void)egress_wire_decode_reply(msg, size - 1, &rep, &rh, &rb);
		free(msg);
		return 0;
	}
	if (egress_wire_decode(type, msg, size - 1, &d) == 0) {
		if (type == MSG_EGRESS_FETCH)
			rc = egress_wire_encode_fetch(&d.req, &out, &outlen);
		else
			rc = egress_wire_encode_webhook(
			    &d.webhook, &out, &outlen);
		if (rc != 0 || outlen != size - 1 ||
		    memcmp(out, msg, outlen) != 0)
			abort();
		free(out);
	}
	egress_wire_decoded_free(&d);
	free(msg);
	return 0;
}
