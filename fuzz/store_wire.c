/*
 * Fuzz the store's service step: every message decoder, then the store
 * itself behind it. Byte 0 picks the message type (or the reply decoder),
 * byte 1 the sender; the rest is the payload. The store is a scratch
 * environment opened once with MDB_NOSYNC (fuzzing only), and grants are
 * accepted when their decision is allow, so inputs reach the writes.
 * Properties: nothing crashes, leaks or over-reads, every reply the
 * service makes decodes, and every accepted request got a reply.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host/proc.h"
#include "host/store/store_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64];
static struct store *st;

static void
cleanup(void)
{
	char p[128];

	store_close(st);
	snprintf(p, sizeof(p), "%s/data.mdb", dir);
	unlink(p);
	snprintf(p, sizeof(p), "%s/lock.mdb", dir);
	unlink(p);
	rmdir(dir);
}

static int
accept_allow(
    void *arg, const struct grant *wire, uint64_t reqid, struct grant *out)
{
	(void)arg;
	(void)reqid;
	*out = *wire;
	out->principal[sizeof(out->principal) - 1] = '\0';
	return wire->decision == GRANT_ALLOW ? GRANT_OK : GRANT_ERR_DENIED;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint16_t types[] = { MSG_STORE_PUT, MSG_STORE_GET,
		MSG_STORE_LIST, MSG_STORE_DELETE, MSG_STORE_AUDIT,
		MSG_STORE_COUNTER, MSG_STORE_REVOKED, MSG_STORE_REPLY };
	struct store_service svc;
	struct store_wire_reply h;
	char next[STORE_CURSOR_MAX];
	uint16_t type, rtype;
	uint8_t *msg;
	void *reply;
	size_t len, rlen;
	int rc;

	if (st == NULL) {
		struct store_config cfg = { 1 << 20, 64 << 20, 0, 0, 1 };

		strcpy(dir, "/tmp/fuzz_store.XXXXXX");
		if (mkdtemp(dir) == NULL || store_open(dir, &cfg, &st) != 0)
			abort();
		atexit(cleanup);
	}
	if (size < 2)
		return 0;
	type = types[data[0] % (sizeof(types) / sizeof(types[0]))];
	len = size - 2;
	/* An exact-size copy so that an over-read faults under ASan. */
	if ((msg = malloc(len ? len : 1)) == NULL)
		return 0;
	memcpy(msg, data + 2, len);
	if (type == MSG_STORE_REPLY) {
		if (store_wire_reply_decode(msg, len, &h, next) == STORE_OK) {
			for (uint32_t i = 0; i < h.count; i++) {
				const void *r;
				size_t rl;

				if (store_wire_reply_record(
				        msg, len, i, &r, &rl) != STORE_OK)
					abort();
			}
		}
		free(msg);
		return 0;
	}
	memset(&svc, 0, sizeof(svc));
	svc.st = st;
	svc.verify = accept_allow;
	rc = store_service_handle(&svc, type, data[1] % PROC_COUNT, 1, msg, len,
	    &rtype, &reply, &rlen);
	if (rc != STORE_E_NOMEM && reply == NULL)
		abort();
	if (reply != NULL &&
	    (rtype != MSG_STORE_REPLY ||
	        store_wire_reply_decode(reply, rlen, &h, next) != STORE_OK))
		abort();
	free(reply);
	free(msg);
	return 0;
}
