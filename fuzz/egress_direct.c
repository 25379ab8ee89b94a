/*
 * Fuzz what a vm process may send egress on its run's direct link
 * (host/egress_runs.c, egress_direct_parse) and the table lookup a
 * datagram that parses leads to. Properties: nothing crashes or reads
 * outside the datagram; a parsed request names a connect op, a port and
 * a NUL-terminated name; the lookup finds the one decision kept, for
 * exactly its op, name and port, and nothing in a slot that is free.
 * Input: the datagram (header and request), as read from the link.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "host/egress_runs.h"
#include "host/vmm/vmm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct egress_runs runs;

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct msg_egress_run m;
	struct msg_egress_name kept;
	struct msg_egress_direct q;
	const struct msg_egress_name *k;
	struct msg_hdr h;

	if (egress_direct_parse(data, size, &h, &q) != 0)
		return 0;
	if (q.op < VMM_NET_CONNECT || q.op > VMM_NET_UDP_ADDR || q.port == 0 ||
	    memchr(q.name, '\0', sizeof(q.name)) == NULL)
		abort();
	/* A table whose one run keeps one decision: reuse.test:443. The
	 * run's descriptor is a number nothing uses (-1 would mark the
	 * slot free), not closed by the table since nothing drops it. */
	egress_runs_init(&runs);
	egress_runs_changed(&runs, 1);
	memset(&m, 0, sizeof(m));
	m.run = 1;
	strcpy(m.principal, "alice");
	strcpy(m.sandbox, "sbx-1");
	runs.run[0].fd = 1 << 20;
	runs.run[0].run = m.run;
	strcpy(runs.run[0].principal, m.principal);
	strcpy(runs.run[0].sandbox, m.sandbox);
	memset(&kept, 0, sizeof(kept));
	kept.op = VMM_NET_CONNECT;
	kept.port = 443;
	strcpy(kept.name, "reuse.test");
	strcpy(kept.principal, "alice");
	strcpy(kept.sandbox, "sbx-1");
	kept.grant.expires = 1ull << 62;
	kept.reuse_ms = 10000;
	kept.generation = 1;
	kept.run = 1;
	egress_runs_keep(&runs, &kept, 1, 1);
	k = egress_runs_find(&runs, 0, q.op, q.name, q.port, 2, 2);
	if ((k != NULL) !=
	    (q.op == VMM_NET_CONNECT && q.port == 443 &&
	        strcmp(q.name, "reuse.test") == 0))
		abort();
	if (egress_runs_find(&runs, 1, q.op, q.name, q.port, 2, 2) != NULL)
		abort();
	return 0;
}
