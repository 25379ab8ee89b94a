/* Shared set-up for the API harnesses: one fake backend and api for the
 * whole run, an admin token "t" and one sandbox "sbx-1". */
#ifndef KEEP_FUZZ_API_ENV_H
#define KEEP_FUZZ_API_ENV_H

#include <stdlib.h>
#include <string.h>

#include "host/api/api.h"
#include "tests/api_fake.h"

static struct api *fuzz_api;

static int64_t
fuzz_clock_s(void *arg)
{
	(void)arg;
	return 1700000000;
}

static uint64_t
fuzz_clock_ms(void *arg)
{
	(void)arg;
	return 1700000000000ULL;
}

/* Handle one request held in buf[0..len); returns the close flag or -1. */
static int
fuzz_api_one(const char *buf, size_t len, size_t *used)
{
	static struct api_backend be;
	static struct api_fake *fake;
	struct http_limits lim;
	struct http_request req;
	struct http_buf out;
	int status, rc;

	if (fuzz_api == NULL) {
		struct api_config cfg;

		fake = api_fake_new(fuzz_clock_s, NULL);
		api_fake_backend(fake, &be);
		api_fake_add_token(fake, "t", "admin", CAP_ALL, NULL, 0);
		api_fake_add_token(fake, "s", "scoped", CAP_ALL, "sbx-1", 0);
		memset(&cfg, 0, sizeof(cfg));
		cfg.now_ms = fuzz_clock_ms;
		cfg.idem_max = 64;
		fuzz_api = api_new(&be, &cfg);
		if (fuzz_api == NULL)
			abort();
		{
			static const char mk[] =
			    "POST /v1/sandboxes HTTP/1.1\r\nHost: f\r\n"
			    "Authorization: Bearer t\r\nContent-Length: 15\r\n"
			    "\r\n{\"image\":\"js\"}";
			size_t u;
			fuzz_api_one(mk, sizeof(mk) - 1, &u);
		}
	}
	http_limits_default(&lim);
	lim.max_body = 65536;
	http_buf_init(&out);
	rc = http_parse_head(buf, len, &lim, &req, &status);
	if (rc == HTTP_ERROR) {
		api_refuse(fuzz_api, status, &out);
		http_buf_free(&out);
		return -1;
	}
	if (rc == HTTP_MORE || req.chunked ||
	    req.content_length > len - req.head_len) {
		http_buf_free(&out);
		return -1;
	}
	req.body = buf + req.head_len;
	req.body_len = (size_t)req.content_length;
	*used = req.head_len + req.body_len;
	rc = api_handle(fuzz_api, &req, &out);
	if (out.len < 12 || memcmp(out.data, "HTTP/1.1 ", 9) != 0)
		abort();
	http_buf_free(&out);
	return rc;
}

#endif
