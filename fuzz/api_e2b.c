/*
 * Fuzz the bodies of E2B's routes (host/api/api_e2b.c, api_e2b_rpc.c)
 * as E2B's SDK sends them: the first byte picks a route, the rest is
 * the body, sent with E2B's headers (X-API-KEY, or E2b-Sandbox-Id and
 * X-Access-Token for sandbox sbx-1) and the route's Content-Type: JSON,
 * multipart/form-data with boundary XyZ (files), an enveloped Connect
 * message (process.Process/Start, WatchDir), JSON for the unary Connect
 * methods (SendInput's pty and stdin, CloseStdin, Update, SendSignal).
 * Every body must end in a clean reply.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/api_fuzz_env.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const struct {
	const char *line;
	int sandbox; /* a sandbox's route: its headers */
	const char *ctype;
} targets[] = {
	{ "POST /e2b/v2/sandboxes", 0, "application/json" },
	{ "POST /e2b/execute", 1, "application/json" },
	{ "POST /e2b/contexts", 1, "application/json" },
	{ "POST /e2b/files?path=%2Fd%2Fa", 1,
	    "multipart/form-data; boundary=XyZ" },
	{ "POST /e2b/files", 1, "multipart/form-data; boundary=XyZ" },
	{ "POST /e2b/filesystem.Filesystem/ListDir", 1, "application/json" },
	{ "POST /e2b/filesystem.Filesystem/Stat", 1, "application/json" },
	{ "POST /e2b/filesystem.Filesystem/MakeDir", 1, "application/json" },
	{ "POST /e2b/filesystem.Filesystem/Remove", 1, "application/json" },
	{ "POST /e2b/process.Process/Start", 1, "application/connect+json" },
	{ "POST /e2b/contexts/ctx-1/restart", 1, "application/json" },
	{ "POST /e2b/process.Process/SendInput", 1, "application/json" },
	{ "POST /e2b/process.Process/Update", 1, "application/json" },
	{ "POST /e2b/process.Process/SendSignal", 1, "application/json" },
	{ "POST /e2b/sandboxes/sbx-1/timeout", 0, "application/json" },
	{ "POST /e2b/filesystem.Filesystem/WatchDir", 1,
	    "application/connect+json" },
	{ "POST /e2b/process.Process/CloseStdin", 1, "application/json" },
	{ "POST /e2b/process.Process/Connect", 1, "application/connect+json" },
};

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char head[512];
	char *buf;
	size_t hl, used, t;

	if (size < 1 || size > 65536)
		return 0;
	t = data[0] % (sizeof(targets) / sizeof(targets[0]));
	hl = (size_t)snprintf(head, sizeof(head),
	    "%s HTTP/1.1\r\nHost: f\r\n%s\r\nContent-Type: %s\r\n"
	    "Connect-Timeout-Ms: 1000\r\nContent-Length: %zu\r\n\r\n",
	    targets[t].line,
	    targets[t].sandbox ? "E2b-Sandbox-Id: sbx-1\r\nX-Access-Token: t"
	                       : "X-API-KEY: t",
	    targets[t].ctype, size - 1);
	if ((buf = malloc(hl + size - 1)) == NULL)
		return 0;
	memcpy(buf, head, hl);
	memcpy(buf + hl, data + 1, size - 1);
	fuzz_api_one(buf, hl + size - 1, &used);
	free(buf);
	return 0;
}
