/* Unit tests for host/http: the strict request parser, the chunked
 * decoder and the response writer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "host/http/http.h"
#include "lib/util.h"

static int
parse(const char *s, struct http_request *req, int *status)
{
	struct http_limits lim;

	http_limits_default(&lim);
	return http_parse_head(s, strlen(s), &lim, req, status);
}

/* Expect a refusal with exactly this status. */
static void
refused(const char *s, int want)
{
	struct http_request req;
	int status;

	assert_int_equal(parse(s, &req, &status), HTTP_ERROR);
	assert_int_equal(status, want);
}

static void
test_simple_get(void **state)
{
	struct http_request req;
	int status;
	const char *s = "GET /v1/sandboxes?limit=5 HTTP/1.1\r\nHost: x\r\n"
	                "Authorization:  Bearer abc  \r\n\r\nNEXT";

	(void)state;
	assert_int_equal(parse(s, &req, &status), HTTP_OK);
	assert_int_equal(req.method, HTTP_GET);
	assert_int_equal(req.path_len, 13);
	assert_memory_equal(req.path, "/v1/sandboxes", 13);
	assert_int_equal(req.query_len, 7);
	assert_memory_equal(req.query, "limit=5", 7);
	assert_int_equal(req.nheaders, 2);
	assert_int_equal(req.head_len, strlen(s) - 4);
	assert_true(req.keep_alive);
	assert_int_equal(req.content_length, 0);
	{
		const struct http_header *h =
		    http_find_header(&req, "AUTHORIZATION");
		assert_non_null(h);
		assert_int_equal(h->valuelen, 10);
		assert_memory_equal(h->value, "Bearer abc", 10);
	}
}

/* Numbers in responses, written without printf. */
static void
test_putu(void **state)
{
	static const uint64_t v[] = { 0, 7, 10, 200, 65536, UINT64_MAX };
	static const char *const want[] = { "0", "7", "10", "200", "65536",
		"18446744073709551615" };
	struct http_buf b;
	size_t i;

	(void)state;
	for (i = 0; i < nitems(v); i++) {
		http_buf_init(&b);
		http_buf_putu(&b, v[i]);
		assert_int_equal(b.len, strlen(want[i]));
		assert_memory_equal(b.data, want[i], b.len);
		http_buf_free(&b);
	}
	http_buf_init(&b);
	http_response_begin(&b, 404, "application/json", 12, 1);
	http_buf_add(&b, "", 1);
	assert_string_equal(b.data,
	    "HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\n"
	    "Content-Length: 12\r\nConnection: close\r\n");
	http_buf_free(&b);
}

/* A request copied elsewhere reads the same from its new place. */
static void
test_request_move(void **state)
{
	static const char s[] = "POST /v1/x?y=1 HTTP/1.1\r\nHost: a\r\n"
	                        "Content-Length: 2\r\nX-K: v\r\n\r\nhi";
	char a[sizeof(s)], b[sizeof(s)];
	struct http_request req;
	const struct http_header *h;
	int status;
	size_t i;

	(void)state;
	memcpy(a, s, sizeof(s));
	assert_int_equal(parse(a, &req, &status), HTTP_OK);
	req.body = a + req.head_len;
	req.body_len = 2;
	memcpy(b, a, sizeof(a));
	memset(a, 'z', sizeof(a));
	http_request_move(&req, a, b);
	assert_memory_equal(req.path, "/v1/x", 5);
	assert_memory_equal(req.query, "y=1", 3);
	assert_memory_equal(req.method_str, "POST", 4);
	assert_memory_equal(req.body, "hi", 2);
	assert_non_null(h = http_find_header(&req, "x-k"));
	assert_memory_equal(h->value, "v", 1);
	for (i = 0; i < req.nheaders; i++)
		assert_true(req.headers[i].name >= b &&
		    req.headers[i].name < b + sizeof(b));
}

static void
test_incremental(void **state)
{
	const char *s =
	    "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\n";
	struct http_request req;
	struct http_limits lim;
	int status;

	(void)state;
	http_limits_default(&lim);
	/* Every proper prefix is "more", never an error. */
	for (size_t i = 0; i < strlen(s); i++)
		assert_int_equal(
		    http_parse_head(s, i, &lim, &req, &status), HTTP_MORE);
	assert_int_equal(
	    http_parse_head(s, strlen(s), &lim, &req, &status), HTTP_OK);
	assert_int_equal(req.content_length, 3);
	assert_int_equal(req.method, HTTP_POST);
}

static void
test_connection_semantics(void **state)
{
	struct http_request req;
	int status;

	(void)state;
	assert_int_equal(parse("GET / HTTP/1.1\r\nHost: a\r\nConnection: "
	                       "close\r\n\r\n",
	                     &req, &status),
	    HTTP_OK);
	assert_false(req.keep_alive);
	assert_int_equal(
	    parse("GET / HTTP/1.0\r\n\r\n", &req, &status), HTTP_OK);
	assert_false(req.keep_alive);
	assert_int_equal(
	    parse("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", &req,
	        &status),
	    HTTP_OK);
	assert_true(req.keep_alive);
	assert_int_equal(
	    parse("\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", &req, &status),
	    HTTP_OK);
	assert_int_equal(parse("POST / HTTP/1.1\r\nHost: a\r\nExpect: "
	                       "100-continue\r\nContent-Length: 1\r\n\r\n",
	                     &req, &status),
	    HTTP_OK);
	assert_true(req.expect_continue);
}

static void
test_framing_refusals(void **state)
{
	(void)state;
	/* Duplicate and conflicting framing. */
	refused("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n"
	        "Content-Length: 1\r\n\r\n",
	    400);
	refused(
	    "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1, 1\r\n\r\n", 400);
	refused(
	    "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: +1\r\n\r\n", 400);
	refused("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n"
	        "Transfer-Encoding: chunked\r\n\r\n",
	    400);
	refused("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n"
	        "Transfer-Encoding: chunked\r\n\r\n",
	    400);
	refused("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, "
	        "chunked\r\n\r\n",
	    501);
	refused("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400);
	refused("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: "
	        "99999999999999999999\r\n\r\n",
	    400);
	refused("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 2000000\r\n\r\n",
	    413);
	refused("POST / HTTP/1.1\r\nHost: a\r\nExpect: 200-ok\r\n\r\n", 417);
	/* Two credentials, as two Hosts, are refused. */
	refused("GET / HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer x\r\n"
	        "authorization: Bearer y\r\n\r\n",
	    400);
}

static void
test_syntax_refusals(void **state)
{
	(void)state;
	refused("GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n b\r\n\r\n", 400);
	refused("GET / HTTP/1.1\r\nHost: a\r\nX : a\r\n\r\n", 400);
	refused("GET / HTTP/1.1\r\nHost: a\r\nX: a\rb\r\n\r\n", 400);
	refused("GET / HTTP/1.1\nHost: a\r\n\r\n", 400);
	refused("GET / HTTP/1.1\r\nHost: a\n\r\n", 400);
	refused("GET  / HTTP/1.1\r\nHost: a\r\n\r\n", 400);
	refused("GET / HTTP/1.1 \r\nHost: a\r\n\r\n", 400);
	refused("G(T / HTTP/1.1\r\nHost: a\r\n\r\n", 400);
	refused("GET http://a/ HTTP/1.1\r\nHost: a\r\n\r\n", 400);
	refused("GET /a#b HTTP/1.1\r\nHost: a\r\n\r\n", 400);
	refused("GET /a\"b HTTP/1.1\r\nHost: a\r\n\r\n", 400);
	refused("GET * HTTP/1.1\r\nHost: a\r\n\r\n", 400);
	refused("GET / HTTP/2.0\r\nHost: a\r\n\r\n", 505);
	refused("GET / HTTX/1.1\r\nHost: a\r\n\r\n", 400);
	refused("GET / HTTP/1.1\r\n\r\n", 400);
	refused("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400);
	refused("GET / HTTP/1.1\r\nHost: a\r\n: empty\r\n\r\n", 400);
	{
		char s[64] = "GET / HTTP/1.1\r\nHost: a\r\nX: a";
		struct http_request req;
		struct http_limits lim;
		int status;
		size_t n = strlen(s);

		http_limits_default(&lim);
		memcpy(s + n, "\0b\r\n\r\n", 6);
		assert_int_equal(
		    http_parse_head(s, n + 6, &lim, &req, &status), HTTP_ERROR);
		assert_int_equal(status, 400);
	}
}

static void
test_limits(void **state)
{
	struct http_request req;
	struct http_limits lim;
	char *big;
	int status;

	(void)state;
	http_limits_default(&lim);
	lim.max_headers = 2;
	assert_int_equal(http_parse_head("GET / HTTP/1.1\r\nHost: a\r\nA: "
	                                 "1\r\nB: 2\r\n\r\n",
	                     41, &lim, &req, &status),
	    HTTP_ERROR);
	assert_int_equal(status, 431);

	http_limits_default(&lim);
	big = malloc(20000);
	assert_non_null(big);
	memcpy(big, "GET /", 5);
	memset(big + 5, 'a', 19995);
	/* A never-ending request line is refused before it is complete. */
	assert_int_equal(
	    http_parse_head(big, 20000, &lim, &req, &status), HTTP_ERROR);
	assert_int_equal(status, 414);
	memcpy(big, "GET / HTTP/1.1\r\nX: ", 19);
	memset(big + 19, 'a', 19981);
	assert_int_equal(
	    http_parse_head(big, 20000, &lim, &req, &status), HTTP_ERROR);
	assert_int_equal(status, 431);
	free(big);
}

static int
dechunk(const char *in, uint64_t max, char *out, size_t *outlen, int *status,
    size_t step)
{
	struct http_chunked c;
	char buf[512];
	size_t n = strlen(in), fed = 0, len = 0, w = 0;
	int rc = HTTP_MORE;

	/* buf holds decoded bytes [0, w) then raw bytes [w, len), as in the
	 * front; input arrives `step` bytes at a time, as from a socket. */
	http_chunked_init(&c);
	while (rc == HTTP_MORE && fed < n) {
		size_t add = n - fed < step ? n - fed : step, r = w, ww = w;

		memcpy(buf + len, in + fed, add);
		fed += add;
		len += add;
		rc = http_chunked_decode(&c, buf, len, &r, &ww, max, status);
		if (rc == HTTP_ERROR)
			return rc;
		memmove(buf + ww, buf + r, len - r);
		len = ww + (len - r);
		w = ww;
	}
	memcpy(out, buf, w);
	*outlen = w;
	return rc;
}

static void
test_chunked(void **state)
{
	char out[512];
	size_t n;
	int status;

	(void)state;
	for (size_t step = 1; step < 40; step += 7) {
		assert_int_equal(
		    dechunk("5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n", 1000, out,
		        &n, &status, step),
		    HTTP_OK);
		assert_int_equal(n, 11);
		assert_memory_equal(out, "hello world", 11);
	}
	assert_int_equal(dechunk("A\r\n0123456789\r\n0\r\n\r\n", 1000, out, &n,
	                     &status, 100),
	    HTTP_OK);
	assert_int_equal(n, 10);
	/* Extensions, trailers, bad sizes, missing CRLFs, over the limit. */
	assert_int_equal(
	    dechunk("5;x=y\r\nhello\r\n0\r\n\r\n", 1000, out, &n, &status, 100),
	    HTTP_ERROR);
	assert_int_equal(dechunk("5\r\nhello\r\n0\r\nX: y\r\n\r\n", 1000, out,
	                     &n, &status, 100),
	    HTTP_ERROR);
	assert_int_equal(
	    dechunk("g\r\n", 1000, out, &n, &status, 100), HTTP_ERROR);
	assert_int_equal(
	    dechunk("\r\n", 1000, out, &n, &status, 100), HTTP_ERROR);
	assert_int_equal(
	    dechunk("5\r\nhelloX\r\n", 1000, out, &n, &status, 100),
	    HTTP_ERROR);
	assert_int_equal(
	    dechunk("5\nhello", 1000, out, &n, &status, 100), HTTP_ERROR);
	assert_int_equal(
	    dechunk("ffffffffffffffff\r\n", 1000, out, &n, &status, 100),
	    HTTP_ERROR);
	assert_int_equal(status, 413);
	assert_int_equal(
	    dechunk("5\r\nhello\r\n5\r\nhello\r\n", 8, out, &n, &status, 100),
	    HTTP_ERROR);
	assert_int_equal(status, 413);
	assert_int_equal(
	    dechunk("5\r\nhel", 1000, out, &n, &status, 100), HTTP_MORE);
}

static void
test_response(void **state)
{
	struct http_buf b;
	const char *want = "HTTP/1.1 404 Not Found\r\nContent-Type: "
	                   "application/json\r\nContent-Length: 2\r\n"
	                   "Connection: close\r\nX-Request-Id: r1\r\n\r\n{}";

	(void)state;
	http_buf_init(&b);
	http_response_begin(&b, 404, "application/json", 2, 1);
	http_response_header(&b, "X-Request-Id", "r1");
	http_response_header(&b, "X-Evil", "a\r\nSet-Cookie: x");
	http_response_body(&b, "{}", 2, 0);
	assert_false(b.oom);
	assert_int_equal(b.len, strlen(want));
	assert_memory_equal(b.data, want, b.len);
	http_buf_consume(&b, 9);
	assert_memory_equal(b.data, "404", 3);
	http_buf_free(&b);
	assert_string_equal(http_reason(429), "Too Many Requests");
}

/* E2B's credentials and sandbox (docs/e2b.md) come once each, as
 * Authorization: which of two a proxy checked is unknown. */
static void
test_e2b_once(void **state)
{
	struct http_request req;
	int status;

	(void)state;
	refused("GET / HTTP/1.1\r\nHost: t\r\nX-API-KEY: a\r\n"
	        "X-Api-Key: a\r\n\r\n",
	    400);
	refused("GET / HTTP/1.1\r\nHost: t\r\nX-Access-Token: a\r\n"
	        "x-access-token: b\r\n\r\n",
	    400);
	refused("GET / HTTP/1.1\r\nHost: t\r\nE2B-Traffic-Access-Token: a"
	        "\r\nE2B-Traffic-Access-Token: a\r\n\r\n",
	    400);
	refused("GET / HTTP/1.1\r\nHost: t\r\nE2b-Sandbox-Id: a\r\n"
	        "E2b-Sandbox-Id: b\r\n\r\n",
	    400);
	assert_int_equal(parse("GET / HTTP/1.1\r\nHost: t\r\nX-API-KEY: a\r\n"
	                       "X-Access-Token: a\r\nE2b-Sandbox-Id: s\r\n"
	                       "E2B-Traffic-Access-Token: a\r\n\r\n",
	                     &req, &status),
	    HTTP_OK);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_simple_get),
		cmocka_unit_test(test_incremental),
		cmocka_unit_test(test_request_move),
		cmocka_unit_test(test_putu),
		cmocka_unit_test(test_connection_semantics),
		cmocka_unit_test(test_framing_refusals),
		cmocka_unit_test(test_syntax_refusals),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_chunked),
		cmocka_unit_test(test_response),
		cmocka_unit_test(test_e2b_once),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
