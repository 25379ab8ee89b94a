/*
 * Fuzz parse + check + compile + decide. Properties: never crash or leak;
 * a file that parses prints to text that parses to the same tree (the
 * printed forms are equal); the compiled evaluator agrees with the
 * reference evaluator on requests drawn from the input.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lang/lang.h"
#include "policy/policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
differential(const struct lang_file *f, const struct policy *p,
    const uint8_t *data, size_t size)
{
	static const char *const targets[] = { "", "node", "sh",
		"api.github.com:443", "x.npmjs.org:443", "evil.com",
		"a.example.com:8443", "10.1.2.3:5432", "[fd00::1]:443",
		"169.254.169.254:80", "ntp.test:123/udp", "10.1.2.3:53/udp" };
	struct policy_request req;
	struct policy_result a, b;
	uint32_t i;
	size_t k = 0;
	int cap, t;

	for (i = 0; i < p->npr && i < 16; i++)
		for (cap = 0; cap < CAP_COUNT; cap++) {
			t = size ? data[k++ % size] % 12 : 0;
			memset(&req, 0, sizeof(req));
			req.principal = p->pr[i].name;
			req.principal_len = p->pr[i].len;
			req.cap = cap;
			req.target = targets[t];
			req.target_len = strlen(targets[t]);
			policy_decide(p, NULL, 0, &req, &a);
			policy_ref_decide(f, &req, &b);
			if (a.allow != b.allow || a.rule != b.rule ||
			    a.reason != b.reason)
				abort();
		}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct lang_file *f = NULL, *g = NULL;
	struct policy *p = NULL;
	struct policy_quota *q;
	char *t1 = NULL, *t2 = NULL;
	size_t l1, l2;

	if (lang_parse("fuzz", (const char *)data, size, &f) != LANG_OK)
		goto out;
	if (lang_print_alloc(f, &t1, &l1) != LANG_OK)
		goto out;
	if (lang_parse("fuzz2", t1, l1, &g) != LANG_OK)
		abort(); /* printed text must parse */
	if (lang_print_alloc(g, &t2, &l2) != LANG_OK)
		goto out;
	if (l1 != l2 || memcmp(t1, t2, l1) != 0)
		abort(); /* parse -> print -> parse changed the tree */
	if (lang_check(f) != LANG_OK)
		goto out;
	if (policy_compile(f, &p) != POLICY_OK)
		goto out;
	differential(f, p, data, size);
	if ((q = policy_quota_new(p)) != NULL) {
		struct policy_request req;
		struct policy_result res;
		uint64_t now = 0;
		size_t i;
		for (i = 0; i < size && i < 64 && p->npr > 0; i++) {
			memset(&req, 0, sizeof(req));
			req.principal = p->pr[data[i] % p->npr].name;
			req.principal_len = p->pr[data[i] % p->npr].len;
			req.cap = data[i] % CAP_COUNT;
			now += (uint64_t)data[i] * 1000000;
			policy_decide(p, q, now, &req, &res);
		}
		policy_quota_free(q);
	}
out:
	policy_free(p);
	free(t1);
	free(t2);
	lang_free(f);
	lang_free(g);
	return 0;
}
