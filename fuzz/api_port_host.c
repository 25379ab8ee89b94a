/*
 * Fuzz a port's host name (api_ports.c, api_port_host): a request head
 * whose Host may be "{port}-{id}.<ports.domain>[:port]". What it accepts
 * must be a port of 1 to 5 digits and a valid sandbox id, and the request
 * must then be answered like any other (the fake backend serves no ports).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/api_fuzz_env.h"
#include "host/api/api_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct http_limits lim;
	struct http_request req;
	char id[API_ID_MAX + 1], port[API_ID_MAX + 1];
	char *buf;
	size_t used = 0;
	long ri;
	int status;

	if (size > 16384 || (buf = malloc(size ? size : 1)) == NULL)
		return 0;
	memcpy(buf, data, size);
	/* The api, once, with a domain. */
	if (fuzz_api == NULL) {
		static const char ping[] = "GET /healthz HTTP/1.1\r\n\r\n";
		fuzz_api_one(ping, sizeof(ping) - 1, &used);
		api_set_ports_domain(fuzz_api, "sbx.keep.test");
	}
	http_limits_default(&lim);
	if (http_parse_head(buf, size, &lim, &req, &status) == HTTP_OK) {
		id[0] = port[0] = '\0';
		ri = api_port_host(fuzz_api, &req, id, port);
		if (ri >= 0) {
			size_t pl = strlen(port);

			if ((size_t)ri >= api_nroutes || pl == 0 || pl > 5 ||
			    strspn(port, "0123456789") != pl ||
			    !api_valid_id(id, strlen(id)))
				abort();
		} else if (ri != -1 && ri != -2)
			abort();
		fuzz_api_one(buf, size, &used);
	}
	free(buf);
	return 0;
}
