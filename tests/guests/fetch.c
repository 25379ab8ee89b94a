/*
 * One KEEP_SYS_FETCH from a guest: fetch METHOD URL [BODY [HEADER-LINE]].
 * Prints "ret=<r> status=<s> error=<e> reason=<reason>" and, when the
 * call succeeded, "body=<the response body>" on its own line. Exits 0
 * when a response came back, 1 otherwise.
 */
#include <stdio.h>
#include <string.h>

#include "../../guest/include/keep.h"

static char body[1 << 20], headers[16384];

int
main(int argc, char **argv)
{
	struct keep_fetch f;
	char hdr[512] = "";
	long r;

	if (argc < 3) {
		fprintf(stderr, "usage: fetch METHOD URL [BODY [HEADER]]\n");
		return 2;
	}
	memset(&f, 0, sizeof(f));
	f.version = KEEP_FETCH_VERSION;
	f.size = sizeof(f);
	f.method = (uint64_t)(uintptr_t)argv[1];
	f.method_len = (uint32_t)strlen(argv[1]);
	f.url = (uint64_t)(uintptr_t)argv[2];
	f.url_len = (uint32_t)strlen(argv[2]);
	if (argc > 3) {
		f.req_body = (uint64_t)(uintptr_t)argv[3];
		f.req_body_len = strlen(argv[3]);
	}
	if (argc > 4) {
		snprintf(hdr, sizeof(hdr), "%s\r\n", argv[4]);
		f.req_headers = (uint64_t)(uintptr_t)hdr;
		f.req_headers_len = strlen(hdr);
	}
	f.resp_headers = (uint64_t)(uintptr_t)headers;
	f.resp_headers_cap = sizeof(headers);
	f.resp_body = (uint64_t)(uintptr_t)body;
	f.resp_body_cap = sizeof(body) - 1;
	r = keep_fetch(&f);
	printf("ret=%ld status=%u error=%d reason=%s\n", r, f.status, f.error,
	    f.reason);
	if (r == 0) {
		body[f.resp_body_len < sizeof(body) ? f.resp_body_len : 0] =
		    '\0';
		printf("body=%s\n", body);
	}
	return r == 0 ? 0 : 1;
}
