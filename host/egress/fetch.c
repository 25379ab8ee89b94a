/*
 * One outbound request with libcurl, every hop checked before DNS and
 * pinned after it. libcurl is told as little as possible and trusted for
 * nothing: it gets our canonical URL, one pre-resolved address, no proxy,
 * http/https only, no automatic redirects, and an opensocket callback
 * that refuses any address but the one we checked.
 */
#include <sys/socket.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <curl/curl.h>

#include "host/egress/egress_int.h"
#include "lib/log.h"

#define MAX_ADDRS 16
#define MAX_HEADERS 64
#define MAX_HEADER_NAME 256
#define MAX_HEADER_VALUE 8192

/* Everything one hop needs; lives on egress_fetch's stack. */
struct hop {
	struct sockaddr_storage pin;
	socklen_t pinlen;
	int pin_violation;
	uint64_t max_body, max_headers;
	int too_big;
	uint8_t *body;
	size_t body_len, body_cap;
	char *hdrs;
	size_t hdrs_len, hdrs_cap;
	char *location; /* absolute Location of a 3xx, from libcurl */
};

void
egress_response_free(struct egress_response *r)
{
	if (r == NULL)
		return;
	free(r->headers);
	free(r->body);
	memset(r, 0, sizeof(*r));
}

static void
hop_reset_buffers(struct hop *h)
{
	free(h->body);
	free(h->hdrs);
	h->body = NULL;
	h->hdrs = NULL;
	h->body_len = h->body_cap = h->hdrs_len = h->hdrs_cap = 0;
	free(h->location);
	h->location = NULL;
	h->too_big = 0;
	h->pin_violation = 0;
}

static int
grow(void *pp, size_t *cap, size_t need)
{
	void **p = pp, *np;
	size_t ncap = *cap ? *cap : 4096;

	while (ncap < need) {
		if (ncap > SIZE_MAX / 2)
			return -1;
		ncap *= 2;
	}
	if (ncap == *cap)
		return 0;
	if ((np = realloc(*p, ncap)) == NULL)
		return -1;
	*p = np;
	*cap = ncap;
	return 0;
}

static size_t
write_cb(char *ptr, size_t size, size_t nmemb, void *arg)
{
	struct hop *h = arg;
	size_t n = size * nmemb;

	if (n > h->max_body - h->body_len) {
		h->too_big = 1;
		return 0; /* curl aborts with CURLE_WRITE_ERROR */
	}
	if (grow(&h->body, &h->body_cap, h->body_len + n + 1) == -1)
		return 0;
	memcpy(h->body + h->body_len, ptr, n);
	h->body_len += n;
	h->body[h->body_len] = '\0';
	return n;
}

static size_t
header_cb(char *ptr, size_t size, size_t nitems_, void *arg)
{
	struct hop *h = arg;
	size_t n = size * nitems_;

	/* A new status line (after a 1xx) starts a new header block. */
	if (n >= 5 && memcmp(ptr, "HTTP/", 5) == 0)
		h->hdrs_len = 0;
	if (n > h->max_headers - h->hdrs_len) {
		h->too_big = 1;
		return 0;
	}
	if (grow(&h->hdrs, &h->hdrs_cap, h->hdrs_len + n + 1) == -1)
		return 0;
	memcpy(h->hdrs + h->hdrs_len, ptr, n);
	h->hdrs_len += n;
	h->hdrs[h->hdrs_len] = '\0';
	return n;
}

/* The last word on where a socket goes: only the address we checked. */
static curl_socket_t
opensocket_cb(void *arg, curlsocktype purpose, struct curl_sockaddr *a)
{
	struct hop *h = arg;

	if (purpose != CURLSOCKTYPE_IPCXN ||
	    !egress_addr_equal(
	        &a->addr, a->addrlen, (struct sockaddr *)&h->pin, h->pinlen)) {
		h->pin_violation = 1;
		return CURL_SOCKET_BAD;
	}
	return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

/* Headers libcurl or we set, or that change framing or hop behaviour. */
static const char *const forbidden[] = { "host", "content-length",
	"transfer-encoding", "connection", "keep-alive", "upgrade", "te",
	"trailer", "expect", "proxy-authorization", "proxy-connection" };

static int
is_tchar(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') ||
	    (c != '\0' && strchr("!#$%&'*+-.^_`|~", c));
}

static int
check_headers(const struct egress_header *hs, size_t n, uint64_t *bytes)
{
	size_t i, j, nl, vl;

	if (n > MAX_HEADERS)
		return EGRESS_E_HEADER;
	for (i = 0; i < n; i++) {
		if (hs[i].name == NULL || hs[i].value == NULL)
			return EGRESS_E_HEADER;
		nl = strnlen(hs[i].name, MAX_HEADER_NAME + 1);
		vl = strnlen(hs[i].value, MAX_HEADER_VALUE + 1);
		if (nl == 0 || nl > MAX_HEADER_NAME || vl > MAX_HEADER_VALUE)
			return EGRESS_E_HEADER;
		for (j = 0; j < nl; j++)
			if (!is_tchar((unsigned char)hs[i].name[j]))
				return EGRESS_E_HEADER;
		for (j = 0; j < vl; j++) {
			unsigned char c = (unsigned char)hs[i].value[j];

			if ((c < 0x20 && c != '\t') || c == 0x7f)
				return EGRESS_E_HEADER;
		}
		for (j = 0; j < nitems(forbidden); j++)
			if (strcasecmp(hs[i].name, forbidden[j]) == 0)
				return EGRESS_E_HEADER;
		if (strncasecmp(hs[i].name, "proxy-", 6) == 0)
			return EGRESS_E_HEADER;
		*bytes += nl + vl + 4;
	}
	return 0;
}

static int
has_header(const struct egress_header *hs, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcasecmp(hs[i].name, name) == 0)
			return 1;
	return 0;
}

static void
set_port(struct sockaddr_storage *ss, uint16_t port)
{
	if (ss->ss_family == AF_INET)
		((struct sockaddr_in *)ss)->sin_port = htons(port);
	else
		((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
}

static socklen_t
ss_len(const struct sockaddr_storage *ss)
{
	return ss->ss_family == AF_INET ? sizeof(struct sockaddr_in)
	                                : sizeof(struct sockaddr_in6);
}

/*
 * Step 3 for a parsed destination u allowed by rule: resolve (literals
 * are not), classify every address, and pin the first permitted one of
 * family prefer (AF_UNSPEC: the first) with u's port into *pin.
 */
int
egress_resolve_checked(struct egress_ctx *ctx, const struct egress_url *u,
    const struct egress_rule *rule, int prefer, struct sockaddr_storage *pin,
    socklen_t *pinlen, struct egress_decision *d)
{
	struct sockaddr_storage addrs[MAX_ADDRS];
	size_t n = 0, i, use = 0;
	int rc;

	memset(addrs, 0, sizeof(addrs));
	if (u->kind == EGRESS_HOST_IPV4) {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&addrs[0];

		s4->sin_family = AF_INET;
		if (inet_pton(AF_INET, u->host, &s4->sin_addr) != 1)
			return EGRESS_E_HOST;
		n = 1;
	} else if (u->kind == EGRESS_HOST_IPV6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&addrs[0];

		s6->sin6_family = AF_INET6;
		if (inet_pton(AF_INET6, u->host, &s6->sin6_addr) != 1)
			return EGRESS_E_HOST;
		n = 1;
	} else if ((rc = ctx->cfg.resolve(ctx->cfg.arg, u->host, u->port, addrs,
	                MAX_ADDRS, &n)) != 0 ||
	    n == 0 || n > MAX_ADDRS)
		return EGRESS_E_RESOLVE;
	/* One bad address taints the name: rebinding tricks mix them. */
	for (i = 0; i < n; i++) {
		int c;

		if (addrs[i].ss_family != AF_INET &&
		    addrs[i].ss_family != AF_INET6)
			return EGRESS_E_RESOLVE;
		c = egress_addr_classify(
		    (struct sockaddr *)&addrs[i], ss_len(&addrs[i]));
		if (egress_addr_permitted(c, rule) != 0) {
			d->addr_class = c;
			if (addrs[i].ss_family == AF_INET)
				inet_ntop(AF_INET,
				    &((struct sockaddr_in *)&addrs[i])
				         ->sin_addr,
				    d->addr, sizeof(d->addr));
			else
				inet_ntop(AF_INET6,
				    &((struct sockaddr_in6 *)&addrs[i])
				         ->sin6_addr,
				    d->addr, sizeof(d->addr));
			return EGRESS_E_ADDR_DENIED;
		}
	}
	for (i = n; i-- > 0;)
		if (addrs[i].ss_family == prefer)
			use = i;
	*pin = addrs[use];
	set_port(pin, u->port);
	*pinlen = ss_len(pin);
	d->addr_class = egress_addr_classify((struct sockaddr *)pin, *pinlen);
	if (pin->ss_family == AF_INET)
		inet_ntop(AF_INET, &((struct sockaddr_in *)pin)->sin_addr,
		    d->addr, sizeof(d->addr));
	else
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *)pin)->sin6_addr,
		    d->addr, sizeof(d->addr));
	return 0;
}

/*
 * Steps 1-3 for one hop: parse, allowlist, resolve, classify every
 * address. On success h->pin holds the address to use.
 */
static int
check_hop(struct egress_ctx *ctx, const struct egress_request *req,
    const char *url, size_t url_len, struct egress_url *u, struct hop *h,
    struct egress_decision *d)
{
	size_t which;
	int rc;

	d->rule = -1;
	d->addr_class = -1;
	d->addr[0] = '\0';
	if ((rc = egress_url_parse(url, url_len, u)) != 0)
		return rc;
	strlcpy(d->host, u->host, sizeof(d->host));
	d->port = u->port;
	if ((rc = egress_allow_match(req->rules, req->nrules, u, &which)) != 0)
		return rc;
	d->rule = (int)which;
	return egress_resolve_checked(
	    ctx, u, &req->rules[which], AF_UNSPEC, &h->pin, &h->pinlen, d);
}

static int
map_curl(CURLcode cc, const struct hop *h)
{
	if (h->pin_violation)
		return EGRESS_E_PIN;
	if (h->too_big)
		return EGRESS_E_RESPONSE_SIZE;
	switch (cc) {
	case CURLE_OK:
		return 0;
	case CURLE_OPERATION_TIMEDOUT:
		return EGRESS_E_TIMEOUT;
	case CURLE_FILESIZE_EXCEEDED:
		return EGRESS_E_RESPONSE_SIZE;
	case CURLE_COULDNT_CONNECT:
	case CURLE_COULDNT_RESOLVE_HOST:
		return EGRESS_E_CONNECT;
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CIPHER:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_ISSUER_ERROR:
	case CURLE_SSL_INVALIDCERTSTATUS:
		return EGRESS_E_TLS;
	case CURLE_OUT_OF_MEMORY:
		return EGRESS_E_NOMEM;
	default:
		return EGRESS_E_TRANSFER;
	}
}

/* libcurl's progress callback: only the caller's tick, never an abort
 * (limits are enforced by the write callbacks and timeouts). */
static int
xferinfo_cb(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
    curl_off_t ulnow)
{
	struct egress_ctx *ctx = arg;

	(void)dltotal;
	(void)dlnow;
	(void)ultotal;
	(void)ulnow;
	ctx->cfg.tick(ctx->cfg.arg);
	return 0;
}

#define SETOPT(c, o, v)                                                        \
	do {                                                                   \
		if (curl_easy_setopt((c), (o), (v)) != CURLE_OK)               \
			goto setup_failed;                                     \
	} while (0)

/* One transfer to the address in h->pin. */
static int
run_hop(struct egress_ctx *ctx, const struct egress_url *u, const char *method,
    const struct egress_header *hs, size_t nhs, const void *body,
    size_t body_len, uint32_t timeout_ms, uint32_t connect_ms, struct hop *h,
    long *status, struct egress_decision *d)
{
	char url[EGRESS_URL_MAX + 300], resolve[EGRESS_HOST_MAX + 80];
	char errbuf[CURL_ERROR_SIZE] = "";
	struct curl_slist *rl = NULL, *hl = NULL, *t;
	struct curl_blob blob;
	CURL *c;
	CURLcode cc;
	int rc = EGRESS_E_INTERNAL;

	if (egress_url_format(u, url, sizeof(url)) != 0)
		return EGRESS_E_URL;
	if ((c = curl_easy_init()) == NULL)
		return EGRESS_E_NOMEM;
	if (u->kind == EGRESS_HOST_NAME) {
		snprintf(resolve, sizeof(resolve),
		    h->pin.ss_family == AF_INET6 ? "%s:%u:[%s]" : "%s:%u:%s",
		    u->host, (unsigned)u->port, d->addr);
		if ((rl = curl_slist_append(NULL, resolve)) == NULL)
			goto nomem;
		SETOPT(c, CURLOPT_RESOLVE, rl);
	}
	for (size_t i = 0; i < nhs; i++) {
		char line[MAX_HEADER_NAME + MAX_HEADER_VALUE + 4];

		/* "Name:" would make libcurl drop the header; "Name;" sends
		 * it empty. */
		if (hs[i].value[0] == '\0')
			snprintf(line, sizeof(line), "%s;", hs[i].name);
		else
			snprintf(line, sizeof(line), "%s: %s", hs[i].name,
			    hs[i].value);
		if ((t = curl_slist_append(hl, line)) == NULL)
			goto nomem;
		hl = t;
	}
	/* No 100-continue round trip, and no form-encoded default type. */
	if ((t = curl_slist_append(hl, "Expect:")) == NULL)
		goto nomem;
	hl = t;
	if (!has_header(hs, nhs, "Content-Type")) {
		if ((t = curl_slist_append(hl, "Content-Type:")) == NULL)
			goto nomem;
		hl = t;
	}

	SETOPT(c, CURLOPT_URL, url);
	SETOPT(c, CURLOPT_PROTOCOLS_STR, "http,https");
	SETOPT(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
	SETOPT(c, CURLOPT_FOLLOWLOCATION, 0L);
	/* Ignore http_proxy, HTTPS_PROXY, ALL_PROXY, NO_PROXY. */
	SETOPT(c, CURLOPT_PROXY, "");
	SETOPT(c, CURLOPT_NOPROXY, "*");
	SETOPT(c, CURLOPT_NETRC, (long)CURL_NETRC_IGNORED);
	SETOPT(c, CURLOPT_NOSIGNAL, 1L);
	SETOPT(c, CURLOPT_FORBID_REUSE, 1L);
	SETOPT(c, CURLOPT_FRESH_CONNECT, 1L);
	SETOPT(c, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	SETOPT(c, CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2);
	SETOPT(c, CURLOPT_SSL_VERIFYPEER, 1L);
	SETOPT(c, CURLOPT_SSL_VERIFYHOST, 2L);
	if (ctx->ca_blob != NULL) {
		blob.data = ctx->ca_blob;
		blob.len = ctx->ca_blob_len;
		blob.flags = CURL_BLOB_COPY;
		/* Only the configured bundle, not the system one too. */
		SETOPT(c, CURLOPT_CAINFO, NULL);
		SETOPT(c, CURLOPT_CAPATH, NULL);
		SETOPT(c, CURLOPT_CAINFO_BLOB, &blob);
	} else if (ctx->ca_path != NULL) {
		SETOPT(c, CURLOPT_CAPATH, NULL);
		SETOPT(c, CURLOPT_CAINFO, ctx->ca_path);
	}
	SETOPT(c, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
	SETOPT(c, CURLOPT_CONNECTTIMEOUT_MS, (long)connect_ms);
	SETOPT(c, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)h->max_body);
	SETOPT(c, CURLOPT_USERAGENT, "keep-egress/1");
	SETOPT(c, CURLOPT_HTTPHEADER, hl);
	SETOPT(c, CURLOPT_OPENSOCKETFUNCTION, opensocket_cb);
	SETOPT(c, CURLOPT_OPENSOCKETDATA, h);
	SETOPT(c, CURLOPT_WRITEFUNCTION, write_cb);
	SETOPT(c, CURLOPT_WRITEDATA, h);
	SETOPT(c, CURLOPT_HEADERFUNCTION, header_cb);
	if (ctx->cfg.tick != NULL) {
		SETOPT(c, CURLOPT_XFERINFOFUNCTION, xferinfo_cb);
		SETOPT(c, CURLOPT_XFERINFODATA, ctx);
		SETOPT(c, CURLOPT_NOPROGRESS, 0L);
	}
	SETOPT(c, CURLOPT_HEADERDATA, h);
	SETOPT(c, CURLOPT_ERRORBUFFER, errbuf);
	if (strcmp(method, "HEAD") == 0)
		SETOPT(c, CURLOPT_NOBODY, 1L);
	else if (strcmp(method, "GET") != 0 || body_len > 0) {
		SETOPT(c, CURLOPT_CUSTOMREQUEST, method);
		SETOPT(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len);
		SETOPT(c, CURLOPT_POSTFIELDS, body_len ? body : "");
	}

	cc = curl_easy_perform(c);
	rc = map_curl(cc, h);
	if (rc != 0) {
		strlcpy(d->detail, errbuf[0] ? errbuf : curl_easy_strerror(cc),
		    sizeof(d->detail));
	} else {
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
		d->bytes_out += body_len;
	}
	d->bytes_in += h->body_len;
	if (rc == 0 && *status >= 300 && *status < 400) {
		char *loc = NULL;

		if (curl_easy_getinfo(c, CURLINFO_REDIRECT_URL, &loc) ==
		        CURLE_OK &&
		    loc != NULL)
			strlcpy(url, loc, sizeof(url));
		else
			url[0] = '\0';
		free(h->location);
		h->location = url[0] ? strdup(url) : NULL;
	}
	goto out;
nomem:
	rc = EGRESS_E_NOMEM;
	goto out;
setup_failed:
	rc = EGRESS_E_INTERNAL;
out:
	curl_easy_cleanup(c);
	curl_slist_free_all(rl);
	curl_slist_free_all(hl);
	return rc;
}

static int
redirect_status(long st)
{
	return st == 301 || st == 302 || st == 303 || st == 307 || st == 308;
}

int
egress_fetch(struct egress_ctx *ctx, const struct egress_request *req,
    struct egress_response *resp, struct egress_decision *d)
{
	struct hop h;
	struct egress_url u, prev;
	const char *method = req->method;
	const struct egress_header *hs = req->headers;
	size_t nhs = req->nheaders, body_len = req->body_len;
	const void *body = req->body;
	const char *url = req->url;
	size_t url_len = req->url_len;
	uint64_t start, now, deadline, reqbytes;
	long status = 0;
	char *owned_url = NULL;
	int rc, counted = 0;

	memset(d, 0, sizeof(*d));
	memset(resp, 0, sizeof(*resp));
	memset(&h, 0, sizeof(h));
	d->rule = -1;
	d->addr_class = -1;
	start = ctx->cfg.clock(ctx->cfg.arg);
	deadline = start + req->limits.timeout_ms;
	h.max_body = req->limits.max_response;
	h.max_headers = req->limits.max_resp_headers;

	if ((rc = egress_method_check(method)) != 0)
		goto done;
	reqbytes = url_len + body_len;
	if ((rc = check_headers(hs, nhs, &reqbytes)) != 0)
		goto done;
	if (reqbytes > req->limits.max_request) {
		rc = EGRESS_E_REQUEST_SIZE;
		goto done;
	}
	if ((rc = egress_principal_acquire(
	         ctx, req->principal, req->limits.max_concurrent)) != 0)
		goto done;
	counted = 1;
	for (;;) {
		uint32_t left, conn;

		hop_reset_buffers(&h);
		d->allowed = 0;
		if ((rc = check_hop(ctx, req, url, url_len, &u, &h, d)) != 0)
			break;
		now = ctx->cfg.clock(ctx->cfg.arg);
		if (now >= deadline) {
			rc = EGRESS_E_TIMEOUT;
			break;
		}
		left = (uint32_t)(deadline - now);
		conn = req->limits.connect_timeout_ms;
		if (conn == 0 || conn > left)
			conn = left;
		rc = run_hop(ctx, &u, method, hs, nhs, body, body_len, left,
		    conn, &h, &status, d);
		d->allowed = 1;
		if (rc != 0)
			break;
		d->status = status;
		if (!redirect_status(status) || req->limits.max_redirects == 0)
			break;
		if (d->redirects >= req->limits.max_redirects ||
		    h.location == NULL) {
			rc = EGRESS_E_REDIRECT;
			break;
		}
		d->redirects++;
		/* 303, and 301/302 after POST, become a GET without body. */
		if (status == 303 ||
		    ((status == 301 || status == 302) &&
		        strcmp(method, "POST") == 0)) {
			if (strcmp(method, "HEAD") != 0)
				method = "GET";
			body = NULL;
			body_len = 0;
		}
		/* Caller's headers (credentials) stay with the first origin. */
		prev = u;
		if (egress_url_parse(h.location, strlen(h.location), &u) != 0 ||
		    u.scheme != prev.scheme || u.port != prev.port ||
		    strcmp(u.host, prev.host) != 0) {
			hs = NULL;
			nhs = 0;
		}
		/* The next hop's URL is the Location; we own that string. */
		free(owned_url);
		owned_url = h.location;
		h.location = NULL;
		url = owned_url;
		url_len = strlen(url);
	}
done:
	/* Never NULL on success, and NUL-terminated, for callers' ease. */
	if (rc == 0 && h.body == NULL && (h.body = calloc(1, 1)) == NULL)
		rc = EGRESS_E_NOMEM;
	if (rc == 0 && h.hdrs == NULL && (h.hdrs = calloc(1, 1)) == NULL)
		rc = EGRESS_E_NOMEM;
	d->error = rc;
	d->elapsed_ms = ctx->cfg.clock(ctx->cfg.arg) - start;
	if (rc == 0) {
		resp->status = status;
		resp->body = h.body;
		resp->body_len = h.body_len;
		resp->headers = h.hdrs;
		resp->headers_len = h.hdrs_len;
		h.body = NULL;
		h.hdrs = NULL;
	}
	hop_reset_buffers(&h);
	free(owned_url);
	if (counted)
		egress_principal_release(ctx, req->principal);
	return rc;
}

void
egress_decision_format(
    const struct egress_decision *d, char *buf, size_t buflen)
{
	char host[EGRESS_HOST_MAX * 4 + 1], detail[sizeof(d->detail) * 4 + 1];

	if (buflen == 0)
		return;
	log_escape(
	    host, sizeof(host), d->host, strnlen(d->host, sizeof(d->host)));
	log_escape(detail, sizeof(detail), d->detail,
	    strnlen(d->detail, sizeof(d->detail)));
	snprintf(buf, buflen,
	    "egress %s host=%s port=%u addr=%s class=%s rule=%d status=%ld "
	    "out=%llu in=%llu ms=%llu redirects=%u reason=\"%s\"%s%s%s",
	    d->allowed ? "allow" : "deny", host[0] ? host : "-",
	    (unsigned)d->port, d->addr[0] ? d->addr : "-",
	    d->addr_class < 0 ? "-" : egress_addr_class_name(d->addr_class),
	    d->rule, d->status, (unsigned long long)d->bytes_out,
	    (unsigned long long)d->bytes_in, (unsigned long long)d->elapsed_ms,
	    d->redirects, egress_strerror(d->error),
	    detail[0] ? " detail=\"" : "", detail, detail[0] ? "\"" : "");
}
