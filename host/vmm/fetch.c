/*
 * KEEP_SYS_FETCH (guest/include/keep.h) in the `keepd: vm` process: copy
 * the guest's request out once, check every pointer and length, encode
 * it as an egress wire request and hand it to the run's relay
 * (vmm_config.fetch), then write the reply into the guest's buffers.
 *
 * The vm process decides nothing: the principal, the rule and the limits
 * in what it encodes are placeholders that the vmm replaces after the
 * policy's decision, and the egress process checks them against the
 * grant. What is checked here is only what protects this process and
 * gives the guest a precise error early.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "host/egress/egress.h"
#include "host/egress/egress_abi.h"
#include "host/vmm/vm_int.h"
#include "lib/util.h"

#define FETCH_HEADERS_MAX (64u << 10) /* request header block, bytes */

/* A guest buffer: NULL (and ok) when empty, else checked. */
static int
guest_buf(struct vm *vm, uint64_t addr, uint64_t len, void **out)
{
	*out = NULL;
	if (len == 0)
		return 0;
	if ((*out = vm_gptr(vm, addr, len)) == NULL)
		return -EFAULT;
	return 0;
}

/* "Name: value\r\n" lines into a table pointing into blob (modified). */
static int
split_headers(
    char *blob, size_t len, struct egress_header *hs, size_t max, size_t *n)
{
	char *p = blob, *end = blob + len, *eol, *colon, *v;

	*n = 0;
	while (p < end) {
		if ((eol = memchr(p, '\n', (size_t)(end - p))) == NULL)
			eol = end;
		if (eol > p && eol[-1] == '\r')
			eol[-1] = '\0';
		if (eol < end)
			*eol = '\0';
		else
			blob[len] = '\0';
		if (*p != '\0') {
			if (*n >= max || (colon = strchr(p, ':')) == NULL ||
			    colon == p)
				return -EINVAL;
			*colon = '\0';
			for (v = colon + 1; *v == ' ' || *v == '\t'; v++)
				;
			hs[*n].name = p;
			hs[*n].value = v;
			(*n)++;
		}
		p = eol + 1;
	}
	return 0;
}

static void
set_reason(struct keep_fetch *f, const char *a, const char *b)
{
	size_t i;

	strlcpy(f->reason, a, sizeof(f->reason));
	if (b != NULL && b[0] != '\0') {
		strlcat(f->reason, ": ", sizeof(f->reason));
		strlcat(f->reason, b, sizeof(f->reason));
	}
	/* ASCII only, as documented: the detail comes from libcurl. */
	for (i = 0; f->reason[i] != '\0'; i++)
		if ((unsigned char)f->reason[i] < 0x20 ||
		    (unsigned char)f->reason[i] > 0x7e)
			f->reason[i] = '?';
}

int64_t
vm_keep_fetch(struct vm *vm, uint64_t addr, uint64_t size)
{
	struct keep_fetch k, *gf;
	struct egress_request req;
	struct egress_header hs[EGRESS_WIRE_MAX_HEADERS];
	struct egress_rule rule;
	struct egress_url u;
	const struct egress_wire_reply *rh;
	const uint8_t *rhead, *rbody;
	void *method, *url, *hdrs, *body, *oh, *ob, *wire = NULL, *reply = NULL;
	char m[EGRESS_WIRE_MAX_METHOD + 1], *hblob = NULL, *ublob = NULL;
	size_t wlen = 0, rlen = 0, nh = 0;
	int64_t ret;

	if (size != sizeof(k))
		return -EINVAL;
	if ((gf = vm_gptr(vm, addr, sizeof(k))) == NULL)
		return -EFAULT;
	/* One copy: the guest cannot change what was checked. */
	memcpy(&k, gf, sizeof(k));
	memset(
	    &gf->status, 0, sizeof(*gf) - offsetof(struct keep_fetch, status));
	if (k.version != KEEP_FETCH_VERSION || k.size != sizeof(k) ||
	    k.reserved != 0 || k.method_len == 0 ||
	    k.method_len > EGRESS_WIRE_MAX_METHOD || k.url_len == 0 ||
	    k.url_len > EGRESS_URL_MAX ||
	    k.req_headers_len > FETCH_HEADERS_MAX ||
	    k.req_body_len > EGRESS_WIRE_MAX_BODY) {
		set_reason(gf, "invalid request", NULL);
		return -EINVAL;
	}
	if (guest_buf(vm, k.method, k.method_len, &method) != 0 ||
	    guest_buf(vm, k.url, k.url_len, &url) != 0 ||
	    guest_buf(vm, k.req_headers, k.req_headers_len, &hdrs) != 0 ||
	    guest_buf(vm, k.req_body, k.req_body_len, &body) != 0 ||
	    guest_buf(vm, k.resp_headers, k.resp_headers_cap, &oh) != 0 ||
	    guest_buf(vm, k.resp_body, k.resp_body_cap, &ob) != 0) {
		set_reason(gf, "bad address", NULL);
		return -EFAULT;
	}
	memcpy(m, method, k.method_len);
	m[k.method_len] = '\0';
	if ((ublob = malloc(k.url_len + 1)) == NULL ||
	    (hblob = malloc(k.req_headers_len + 1)) == NULL) {
		ret = -ENOMEM;
		goto out;
	}
	memcpy(ublob, url, k.url_len);
	ublob[k.url_len] = '\0';
	if (k.req_headers_len > 0)
		memcpy(hblob, hdrs, k.req_headers_len);
	hblob[k.req_headers_len] = '\0';
	if (strlen(m) != k.method_len || egress_method_check(m) != 0 ||
	    memchr(hblob, '\0', k.req_headers_len) != NULL ||
	    split_headers(hblob, k.req_headers_len, hs, nitems(hs), &nh) != 0 ||
	    egress_url_parse(ublob, k.url_len, &u) != 0) {
		set_reason(
		    gf, "invalid request", "method, URL or headers malformed");
		ret = -EINVAL;
		goto out;
	}
	/* Placeholders: the vmm puts the granted rule and the principal. */
	memset(&rule, 0, sizeof(rule));
	strlcpy(rule.host, u.host, sizeof(rule.host));
	rule.port = u.port;
	memset(&req, 0, sizeof(req));
	req.principal = "guest";
	req.method = m;
	req.url = ublob;
	req.url_len = k.url_len;
	req.headers = hs;
	req.nheaders = nh;
	req.body = body;
	req.body_len = k.req_body_len;
	req.rules = &rule;
	req.nrules = 1;
	egress_limits_default(&req.limits);
	req.limits.max_request =
	    (uint64_t)EGRESS_WIRE_MAX_BODY + FETCH_HEADERS_MAX + EGRESS_URL_MAX;
	req.limits.max_response = EGRESS_WIRE_MAX_RESPONSE;
	req.limits.max_resp_headers = 1u << 20;
	req.limits.timeout_ms = EGRESS_WIRE_MAX_TIMEOUT_MS;
	if (k.timeout_ms != 0 && k.timeout_ms < req.limits.timeout_ms)
		req.limits.timeout_ms = k.timeout_ms;
	if (req.limits.connect_timeout_ms > req.limits.timeout_ms)
		req.limits.connect_timeout_ms = req.limits.timeout_ms;
	if (egress_wire_encode_fetch(&req, &wire, &wlen) != 0) {
		set_reason(gf, "invalid request", "method or headers refused");
		ret = -EINVAL;
		goto out;
	}
	if (vm->cfg->fetch == NULL) {
		set_reason(gf, "not allowed", "no egress for this run");
		gf->error = EGRESS_E_NOT_ALLOWED;
		ret = -EACCES;
		goto out;
	}
	/* A whole transfer through the vmm and egress: the stub sleeps
	 * meanwhile rather than spin (sys_socket.c, relay_net). */
	vm_trap_blocking(vm);
	if (vm->cfg->fetch(vm->cfg->fetch_arg, wire, wlen, &reply, &rlen) !=
	        0 ||
	    egress_wire_decode_reply(reply, rlen, &rh, &rhead, &rbody) != 0) {
		set_reason(gf, "egress unavailable", NULL);
		gf->error = EGRESS_E_INTERNAL;
		ret = -EIO;
		goto out;
	}
	gf->status = rh->status;
	gf->error = rh->error;
	gf->resp_headers_len = rh->headers_len;
	gf->resp_body_len = rh->body_len;
	if (rh->error != 0) {
		set_reason(gf, egress_strerror(rh->error), rh->detail);
		ret = egress_errno(rh->error);
		if (ret == 0)
			ret = -EIO;
		goto out;
	}
	if (oh != NULL)
		memcpy(oh, rhead,
		    rh->headers_len < k.resp_headers_cap ? rh->headers_len
		                                         : k.resp_headers_cap);
	if (ob != NULL)
		memcpy(ob, rbody,
		    rh->body_len < k.resp_body_cap ? rh->body_len
		                                   : k.resp_body_cap);
	if (rh->headers_len > k.resp_headers_cap ||
	    rh->body_len > k.resp_body_cap) {
		set_reason(
		    gf, "response larger than the guest's buffers", NULL);
		ret = -EMSGSIZE;
		goto out;
	}
	ret = 0;
out:
	free(wire);
	free(reply);
	free(ublob);
	free(hblob);
	return ret;
}
