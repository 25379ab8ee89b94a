/*
 * Fuzz each route's JSON body handling: the first byte picks a route that
 * takes a body, the rest is the body, sent with an admin token to sandbox
 * sbx-1. Strict JSON, unknown fields, wrong types, deep nesting, huge
 * numbers and invalid UTF-8 must all end in a clean reply.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/api_fuzz_env.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const targets[] = {
	"POST /v1/sandboxes",
	"POST /v1/sandboxes/sbx-1/execute",
	"POST /v1/sandboxes/sbx-1/execute/background",
	"POST /v1/sandboxes/sbx-1/execute/async",
	"POST /v1/sandboxes/sbx-1/commands/run",
	"POST /v1/sandboxes/sbx-1/commands/background",
	"PUT /v1/sandboxes/sbx-1/env",
	"PATCH /v1/sandboxes/sbx-1/env",
	"POST /v1/tokens",
	"POST /v1/policy/check",
	"POST /v1/sandboxes/sbx-1/files/write?path=f",
	"POST /v1/images",
	"POST /v1/tokens/revoke",
	"POST /v1/sandboxes/sbx-1/lock",
	"POST /v1/sandboxes/sbx-1/commands/input",
};

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char head[256];
	char *buf;
	size_t hl, used;

	if (size < 1 || size > 65536)
		return 0;
	hl = (size_t)snprintf(head, sizeof(head),
	    "%s HTTP/1.1\r\nHost: f\r\nAuthorization: Bearer t\r\n"
	    "Accept: %s\r\nContent-Length: %zu\r\n\r\n",
	    targets[data[0] % (sizeof(targets) / sizeof(targets[0]))],
	    data[0] & 0x80 ? "text/event-stream" : "*/*", size - 1);
	if ((buf = malloc(hl + size - 1)) == NULL)
		return 0;
	memcpy(buf, head, hl);
	memcpy(buf + hl, data + 1, size - 1);
	fuzz_api_one(buf, hl + size - 1, &used);
	free(buf);
	return 0;
}
