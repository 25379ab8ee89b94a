/*
 * Unit tests for the egress messages and the service step: exact-length
 * decoding, every truncation and extension refused, every field out of
 * place refused, and replies for refusals that never reach the network.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "host/egress/egress.h"
/* Compile the guest-side wrapper too; it is never called here. */
#define KEEP_GUEST
#include "host/egress/egress_abi.h"
#include "lib/util.h"

static const uint8_t secret[EGRESS_WEBHOOK_KEYBYTES] = { 9, 8, 7 };

static void
sample_rules(struct egress_rule *r)
{
	memset(r, 0, 2 * sizeof(*r));
	strlcpy(r[0].host, "api.github.com", sizeof(r[0].host));
	r[0].port = 443;
	strlcpy(r[1].host, "*.npmjs.org", sizeof(r[1].host));
	r[1].allow_http = 1;
}

static void
sample_fetch(
    struct egress_request *q, struct egress_rule *r, struct egress_header *h)
{
	sample_rules(r);
	h[0].name = "Accept";
	h[0].value = "application/json";
	h[1].name = "X-Empty";
	h[1].value = "";
	memset(q, 0, sizeof(*q));
	q->principal = "agent-b";
	q->method = "POST";
	q->url = "https://api.github.com/repos";
	q->url_len = strlen(q->url);
	q->headers = h;
	q->nheaders = 2;
	q->body = "a\0b";
	q->body_len = 3;
	q->rules = r;
	q->nrules = 2;
	egress_limits_default(&q->limits);
}

static void
sample_webhook(struct egress_webhook *w, struct egress_rule *r)
{
	sample_rules(r);
	memset(w, 0, sizeof(*w));
	w->principal = "agent-b";
	w->url = "https://hooks.npmjs.org/x";
	w->delivery_id = "run-42";
	w->body = "{\"ok\":true}";
	w->body_len = strlen(w->body);
	w->secret = secret;
	w->rules = r;
	w->nrules = 2;
	egress_limits_default(&w->limits);
	w->max_attempts = 3;
	w->backoff_ms = 1000;
	w->max_backoff_ms = 8000;
}

static void
test_fetch_roundtrip(void **state)
{
	struct egress_request q;
	struct egress_rule r[2];
	struct egress_header h[2];
	struct egress_decoded d;
	void *msg;
	size_t len;

	(void)state;
	sample_fetch(&q, r, h);
	assert_int_equal(egress_wire_encode_fetch(&q, &msg, &len), 0);
	assert_int_equal(egress_wire_decode(MSG_EGRESS_FETCH, msg, len, &d), 0);
	assert_string_equal(d.req.principal, "agent-b");
	assert_string_equal(d.req.method, "POST");
	assert_string_equal(d.req.url, q.url);
	assert_int_equal(d.req.url_len, q.url_len);
	assert_int_equal(d.req.nheaders, 2);
	assert_string_equal(d.req.headers[0].name, "Accept");
	assert_string_equal(d.req.headers[0].value, "application/json");
	assert_string_equal(d.req.headers[1].value, "");
	assert_int_equal(d.req.body_len, 3);
	assert_memory_equal(d.req.body, "a\0b", 3);
	assert_int_equal(d.req.nrules, 2);
	assert_string_equal(d.req.rules[1].host, "*.npmjs.org");
	assert_int_equal(d.req.rules[1].allow_http, 1);
	assert_int_equal(d.req.limits.timeout_ms, q.limits.timeout_ms);
	egress_wire_decoded_free(&d);
	/* Same bytes, wrong type. */
	assert_int_equal(
	    egress_wire_decode(MSG_EGRESS_WEBHOOK, msg, len, &d), EGRESS_E_MSG);
	egress_wire_decoded_free(&d);
	assert_int_equal(
	    egress_wire_decode(0x0599, msg, len, &d), EGRESS_E_MSG);
	egress_wire_decoded_free(&d);
	free(msg);
}

/* Every shorter and one longer length is refused. */
static void
check_exact(uint16_t type, const void *msg, size_t len)
{
	struct egress_decoded d;
	uint8_t *big;
	size_t n;

	for (n = 0; n < len; n++) {
		uint8_t *cut = malloc(n ? n : 1);

		assert_non_null(cut);
		memcpy(cut, msg, n);
		if (egress_wire_decode(type, cut, n, &d) != EGRESS_E_MSG)
			fail_msg("length %zu of %zu accepted", n, len);
		egress_wire_decoded_free(&d);
		free(cut);
	}
	big = calloc(1, len + 1);
	assert_non_null(big);
	memcpy(big, msg, len);
	assert_int_equal(
	    egress_wire_decode(type, big, len + 1, &d), EGRESS_E_MSG);
	egress_wire_decoded_free(&d);
	free(big);
}

static void
test_exact_lengths(void **state)
{
	struct egress_request q;
	struct egress_webhook w;
	struct egress_rule r[2];
	struct egress_header h[2];
	void *msg;
	size_t len;

	(void)state;
	sample_fetch(&q, r, h);
	assert_int_equal(egress_wire_encode_fetch(&q, &msg, &len), 0);
	check_exact(MSG_EGRESS_FETCH, msg, len);
	free(msg);
	sample_webhook(&w, r);
	assert_int_equal(egress_wire_encode_webhook(&w, &msg, &len), 0);
	check_exact(MSG_EGRESS_WEBHOOK, msg, len);
	free(msg);
}

typedef void (*mutate_fn)(uint8_t *msg);

static void
m_version(uint8_t *m)
{
	((struct egress_wire_fetch *)m)->version = 2;
}

static void
m_nrules0(uint8_t *m)
{
	((struct egress_wire_fetch *)m)->nrules = 0;
}

static void
m_limits_reserved(uint8_t *m)
{
	((struct egress_wire_fetch *)m)->limits.reserved = 1;
}

static void
m_timeout0(uint8_t *m)
{
	((struct egress_wire_fetch *)m)->limits.timeout_ms = 0;
}

static void
m_huge_response(uint8_t *m)
{
	((struct egress_wire_fetch *)m)->limits.max_response =
	    (uint64_t)EGRESS_WIRE_MAX_RESPONSE + 1;
}

static struct egress_wire_rule *
first_rule(uint8_t *m)
{
	return (
	    struct egress_wire_rule *)(m + sizeof(struct egress_wire_fetch));
}

static void
m_rule_unterminated(uint8_t *m)
{
	memset(first_rule(m)->host, 'a', sizeof(first_rule(m)->host));
}

static void
m_rule_garbage_after_nul(uint8_t *m)
{
	first_rule(m)->host[200] = 'x';
}

static void
m_rule_flag(uint8_t *m)
{
	first_rule(m)->allow_private = 2;
}

static void
m_rule_reserved(uint8_t *m)
{
	first_rule(m)->reserved = 7;
}

static void
m_rule_bad_host(uint8_t *m)
{
	memcpy(first_rule(m)->host, "a b", 4);
}

static uint8_t *
after_rules(uint8_t *m)
{
	return m + sizeof(struct egress_wire_fetch) +
	    2 * sizeof(struct egress_wire_rule);
}

static void
m_principal_nul(uint8_t *m)
{
	after_rules(m)[2] = '\0';
}

static void
m_principal_space(uint8_t *m)
{
	after_rules(m)[2] = ' ';
}

static void
m_method_nul(uint8_t *m)
{
	after_rules(m)[7] = '\0';
}

/* The header block's first name length grows into the value. */
static void
m_header_len(uint8_t *m)
{
	uint8_t *hb =
	    after_rules(m) + 7 + 4 + strlen("https://api.github.com/repos");
	uint16_t nl;

	memcpy(&nl, hb, 2);
	nl++;
	memcpy(hb, &nl, 2);
}

static void
m_nheaders(uint8_t *m)
{
	((struct egress_wire_fetch *)m)->nheaders = 1;
}

static void
m_nheaders_many(uint8_t *m)
{
	((struct egress_wire_fetch *)m)->nheaders = 1000;
}

static void
m_body_len(uint8_t *m)
{
	((struct egress_wire_fetch *)m)->body_len += 1;
}

static void
m_nrules_huge(uint8_t *m)
{
	((struct egress_wire_fetch *)m)->nrules = 0x40000000;
}

static void
test_fetch_fields(void **state)
{
	static const mutate_fn muts[] = { m_version, m_nrules0,
		m_limits_reserved, m_timeout0, m_huge_response,
		m_rule_unterminated, m_rule_garbage_after_nul, m_rule_flag,
		m_rule_reserved, m_rule_bad_host, m_principal_nul,
		m_principal_space, m_method_nul, m_header_len, m_nheaders,
		m_nheaders_many, m_body_len, m_nrules_huge };
	struct egress_request q;
	struct egress_rule r[2];
	struct egress_header h[2];
	struct egress_decoded d;
	void *msg;
	size_t len, i;

	(void)state;
	sample_fetch(&q, r, h);
	assert_int_equal(egress_wire_encode_fetch(&q, &msg, &len), 0);
	for (i = 0; i < nitems(muts); i++) {
		uint8_t *copy = malloc(len);

		assert_non_null(copy);
		memcpy(copy, msg, len);
		muts[i](copy);
		if (egress_wire_decode(MSG_EGRESS_FETCH, copy, len, &d) !=
		    EGRESS_E_MSG)
			fail_msg("mutation %zu accepted", i);
		egress_wire_decoded_free(&d);
		free(copy);
	}
	free(msg);
}

static void
test_webhook_roundtrip(void **state)
{
	struct egress_webhook w;
	struct egress_rule r[2];
	struct egress_decoded d;
	struct egress_wire_webhook *h;
	void *msg;
	size_t len;

	(void)state;
	sample_webhook(&w, r);
	assert_int_equal(egress_wire_encode_webhook(&w, &msg, &len), 0);
	assert_int_equal(
	    egress_wire_decode(MSG_EGRESS_WEBHOOK, msg, len, &d), 0);
	assert_string_equal(d.webhook.url, w.url);
	assert_string_equal(d.webhook.delivery_id, "run-42");
	assert_string_equal(d.webhook.body, w.body);
	assert_memory_equal(d.webhook.secret, secret, sizeof(secret));
	assert_int_equal(d.webhook.max_attempts, 3);
	egress_wire_decoded_free(&d);
	h = msg;
	h->max_attempts = 0;
	assert_int_equal(
	    egress_wire_decode(MSG_EGRESS_WEBHOOK, msg, len, &d), EGRESS_E_MSG);
	egress_wire_decoded_free(&d);
	h->max_attempts = 11;
	assert_int_equal(
	    egress_wire_decode(MSG_EGRESS_WEBHOOK, msg, len, &d), EGRESS_E_MSG);
	egress_wire_decoded_free(&d);
	h->max_attempts = 3;
	h->reserved = 1;
	assert_int_equal(
	    egress_wire_decode(MSG_EGRESS_WEBHOOK, msg, len, &d), EGRESS_E_MSG);
	egress_wire_decoded_free(&d);
	free(msg);
}

static void
test_service(void **state)
{
	struct egress_ctx *ctx;
	struct egress_request q;
	struct egress_webhook w;
	struct egress_rule r[2];
	struct egress_header h[2];
	struct egress_decision d;
	const struct egress_wire_reply *rep;
	const uint8_t *rh, *rb;
	void *msg, *reply;
	size_t len, rlen;
	uint16_t rtype;
	unsigned char junk[16] = { 1 };

	(void)state;
	assert_int_equal(egress_ctx_new(NULL, &ctx), 0);
	/* Refused by the allowlist: answered without any network. */
	sample_fetch(&q, r, h);
	q.url = "https://evil.example/";
	q.url_len = strlen(q.url);
	assert_int_equal(egress_wire_encode_fetch(&q, &msg, &len), 0);
	assert_int_equal(egress_service_handle(ctx, MSG_EGRESS_FETCH, msg, len,
	                     &rtype, &reply, &rlen, &d),
	    0);
	assert_int_equal(rtype, MSG_EGRESS_FETCH_REPLY);
	assert_int_equal(
	    egress_wire_decode_reply(reply, rlen, &rep, &rh, &rb), 0);
	assert_int_equal(rep->error, EGRESS_E_NOT_ALLOWED);
	assert_int_equal(rep->allowed, 0);
	assert_string_equal(rep->host, "evil.example");
	assert_int_equal(rep->attempts, 1);
	assert_int_equal(d.error, EGRESS_E_NOT_ALLOWED);
	/* The reply's own checks. */
	assert_int_equal(
	    egress_wire_decode_reply(reply, rlen - 1, &rep, &rh, &rb),
	    EGRESS_E_MSG);
	free(reply);
	free(msg);
	/* The wildcard trap through the service. */
	q.url = "https://evilapi.github.com.attacker/";
	q.url_len = strlen(q.url);
	assert_int_equal(egress_wire_encode_fetch(&q, &msg, &len), 0);
	assert_int_equal(egress_service_handle(ctx, MSG_EGRESS_FETCH, msg, len,
	                     &rtype, &reply, &rlen, &d),
	    0);
	assert_int_equal(d.error, EGRESS_E_NOT_ALLOWED);
	free(reply);
	free(msg);
	/* A webhook to http where only https is allowed. */
	sample_webhook(&w, r);
	w.url = "http://api.github.com/hook";
	assert_int_equal(egress_wire_encode_webhook(&w, &msg, &len), 0);
	assert_int_equal(egress_service_handle(ctx, MSG_EGRESS_WEBHOOK, msg,
	                     len, &rtype, &reply, &rlen, &d),
	    0);
	assert_int_equal(rtype, MSG_EGRESS_WEBHOOK_REPLY);
	assert_int_equal(
	    egress_wire_decode_reply(reply, rlen, &rep, &rh, &rb), 0);
	assert_int_equal(rep->error, EGRESS_E_PORT_DENIED);
	assert_int_equal(rep->attempts, 1);
	free(reply);
	free(msg);
	/* Malformed: a reply that says so. Unknown type: no reply. */
	assert_int_equal(egress_service_handle(ctx, MSG_EGRESS_FETCH, junk,
	                     sizeof(junk), &rtype, &reply, &rlen, &d),
	    EGRESS_E_MSG);
	assert_non_null(reply);
	assert_int_equal(
	    egress_wire_decode_reply(reply, rlen, &rep, &rh, &rb), 0);
	assert_int_equal(rep->error, EGRESS_E_MSG);
	free(reply);
	assert_int_equal(egress_service_handle(ctx, 0x0777, junk, sizeof(junk),
	                     &rtype, &reply, &rlen, &d),
	    EGRESS_E_MSG);
	assert_null(reply);
	egress_ctx_free(ctx);
}

/* The server's hooks (host/proc_egress.c serves through them). */
struct hook_log {
	int admit_rc;
	int admitted, done;
	unsigned attempts;
	char principal[64];
};

static int
hook_admit(void *arg, struct egress_decoded *dec, struct egress_decision *d)
{
	struct hook_log *l = arg;

	l->admitted++;
	snprintf(l->principal, sizeof(l->principal), "%s", dec->req.principal);
	if (l->admit_rc == EGRESS_SERVICE_REFUSED) {
		d->error = EGRESS_E_NOT_ALLOWED;
		snprintf(d->detail, sizeof(d->detail), "grant: expired");
	}
	return l->admit_rc;
}

static void
hook_done(void *arg, const struct egress_decoded *dec,
    const struct egress_decision *d, unsigned attempts)
{
	struct hook_log *l = arg;

	l->done++;
	l->attempts = attempts;
}

static void
test_service_hooks(void **state)
{
	struct egress_ctx *ctx;
	struct egress_request q;
	struct egress_rule r[2];
	struct egress_header h[2];
	struct egress_decision d;
	const struct egress_wire_reply *rep;
	const uint8_t *rh, *rb;
	struct hook_log l;
	struct egress_service_hooks hooks = { hook_admit, hook_done, &l };
	void *msg, *reply;
	size_t len, rlen;
	uint16_t rtype;
	unsigned char junk[16] = { 1 };

	(void)state;
	assert_int_equal(egress_ctx_new(NULL, &ctx), 0);
	sample_fetch(&q, r, h);
	q.url = "https://evil.example/";
	q.url_len = strlen(q.url);
	assert_int_equal(egress_wire_encode_fetch(&q, &msg, &len), 0);
	/* Refused by the server (its grant check): no transfer, the reply
	 * carries its decision, done is not told. */
	memset(&l, 0, sizeof(l));
	l.admit_rc = EGRESS_SERVICE_REFUSED;
	assert_int_equal(egress_service_run(ctx, &hooks, MSG_EGRESS_FETCH, msg,
	                     len, &rtype, &reply, &rlen, &d),
	    0);
	assert_int_equal(l.admitted, 1);
	assert_int_equal(l.done, 0);
	assert_string_equal(l.principal, q.principal);
	assert_int_equal(
	    egress_wire_decode_reply(reply, rlen, &rep, &rh, &rb), 0);
	assert_int_equal(rep->error, EGRESS_E_NOT_ALLOWED);
	assert_int_equal(rep->attempts, 0);
	assert_string_equal(rep->detail, "grant: expired");
	free(reply);
	/* Served elsewhere (a worker): no reply here. */
	memset(&l, 0, sizeof(l));
	l.admit_rc = EGRESS_SERVICE_ELSEWHERE;
	assert_int_equal(egress_service_run(ctx, &hooks, MSG_EGRESS_FETCH, msg,
	                     len, &rtype, &reply, &rlen, &d),
	    0);
	assert_null(reply);
	assert_int_equal(l.done, 0);
	/* Admitted: the transfer's own checks run (the allowlist refuses
	 * it) and done is told, with the attempts. */
	memset(&l, 0, sizeof(l));
	assert_int_equal(egress_service_run(ctx, &hooks, MSG_EGRESS_FETCH, msg,
	                     len, &rtype, &reply, &rlen, &d),
	    0);
	assert_int_equal(l.done, 1);
	assert_int_equal(l.attempts, 1);
	assert_int_equal(d.error, EGRESS_E_NOT_ALLOWED);
	free(reply);
	free(msg);
	/* Malformed: the hooks are not asked; the reply says so. */
	memset(&l, 0, sizeof(l));
	assert_int_equal(egress_service_run(ctx, &hooks, MSG_EGRESS_FETCH, junk,
	                     sizeof(junk), &rtype, &reply, &rlen, &d),
	    EGRESS_E_MSG);
	assert_int_equal(l.admitted + l.done, 0);
	assert_int_equal(
	    egress_wire_decode_reply(reply, rlen, &rep, &rh, &rb), 0);
	assert_string_equal(rep->detail, "malformed");
	free(reply);
	egress_ctx_free(ctx);
}

static void
test_encode_refuses(void **state)
{
	struct egress_request q;
	struct egress_rule r[2];
	struct egress_header h[2];
	void *msg;
	size_t len;

	(void)state;
	sample_fetch(&q, r, h);
	q.principal = NULL;
	assert_int_equal(
	    egress_wire_encode_fetch(&q, &msg, &len), EGRESS_E_MSG);
	assert_null(msg);
	sample_fetch(&q, r, h);
	memset(r[0].host, 'a', sizeof(r[0].host));
	assert_int_equal(
	    egress_wire_encode_fetch(&q, &msg, &len), EGRESS_E_MSG);
	assert_null(msg);
}

static void
test_errno(void **state)
{
	int e;

	(void)state;
	assert_int_equal(egress_errno(0), 0);
	assert_int_equal(egress_errno(EGRESS_E_NOT_ALLOWED), -EACCES);
	assert_int_equal(egress_errno(EGRESS_E_ADDR_DENIED), -EACCES);
	assert_int_equal(egress_errno(EGRESS_E_RESPONSE_SIZE), -EMSGSIZE);
	assert_int_equal(egress_errno(EGRESS_E_TIMEOUT), -ETIMEDOUT);
	assert_int_equal(egress_errno(EGRESS_E_TLS), -EIO);
	for (e = EGRESS_E_BASE + 1; e < EGRESS_E_LAST; e++)
		assert_true(egress_errno(e) < 0);
	assert_int_equal(sizeof(struct keep_fetch), 256);
	assert_non_null((void *)keep_fetch);
	assert_int_equal(KEEP_FETCH_REASON_MAX, 128);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fetch_roundtrip),
		cmocka_unit_test(test_exact_lengths),
		cmocka_unit_test(test_fetch_fields),
		cmocka_unit_test(test_webhook_roundtrip),
		cmocka_unit_test(test_service),
		cmocka_unit_test(test_service_hooks),
		cmocka_unit_test(test_encode_refuses),
		cmocka_unit_test(test_errno),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
