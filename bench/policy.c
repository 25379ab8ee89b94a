/*
 * bench/policy: decision cost of the compiled evaluator.
 *
 * usage: policy [OUTDIR]
 *
 * For generated policies of 10 and 1,000 rules with 100 and 10,000
 * principals, with quota accounting off and on, it times 1,000,000
 * decisions on random (principal, capability) requests in batches of 100
 * and prints decisions per second and the p50 and p99 of the per-batch
 * cost of one decision (a single decision is too short to time alone).
 *
 * With OUTDIR it also writes, per policy, the same rules for Cedar
 * (R-P.cedar), the principal -> role map (R-P.entities.json) and the
 * requests (R-P.requests.json), which bench/policy_cedar.mjs replays.
 * Rules: roles of ten rules each; a rule allows (nine in ten) or denies
 * (one in ten) one capability to the role; each principal has one role.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/caps.h"
#include "policy/policy.h"

#define NREQ 100000
#define BATCH 100
#define ROUNDS 10

static uint64_t
rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

struct gen {
	char *keep;
	size_t klen;
	int *role_of; /* per principal */
	int nroles;
};

/* The keep text and, when out is set, the Cedar twin. */
static int
generate(int rules, int principals, int quota, struct gen *g, FILE *cedar,
    FILE *ents)
{
	size_t cap = (size_t)rules * 64 + (size_t)principals * 48 + 4096;
	uint64_t s = 0x2545f4914f6cdd1dull;
	int r, i, c, deny;

	g->nroles = (rules + 9) / 10;
	if ((g->keep = malloc(cap)) == NULL ||
	    (g->role_of = calloc(principals, sizeof(int))) == NULL)
		return -1;
	g->klen = 0;
	for (r = 0; r < g->nroles; r++) {
		g->klen += snprintf(
		    g->keep + g->klen, cap - g->klen, "role r%d {\n", r);
		if (quota)
			g->klen += snprintf(g->keep + g->klen, cap - g->klen,
			    "\trate read 1000000/s\n\trate write 1000000/s\n"
			    "\tbudget 4000000000000000000\n");
		for (i = 0; i < 10 && r * 10 + i < rules; i++) {
			c = rnd(&s) % CAP_COUNT;
			deny = rnd(&s) % 10 == 0;
			g->klen += snprintf(g->keep + g->klen, cap - g->klen,
			    "\t%s %s\n", deny ? "deny" : "allow", cap_name(c));
			if (cedar != NULL)
				fprintf(cedar,
				    "%s(principal in Role::\"r%d\", action == "
				    "Action::\"%s\", resource);\n",
				    deny ? "forbid" : "permit", r, cap_name(c));
		}
		g->klen += snprintf(g->keep + g->klen, cap - g->klen, "}\n");
	}
	if (ents != NULL)
		fprintf(ents, "[");
	for (i = 0; i < principals; i++) {
		g->role_of[i] = rnd(&s) % g->nroles;
		g->klen += snprintf(g->keep + g->klen, cap - g->klen,
		    "agent \"agent-%d\" : r%d\n", i, g->role_of[i]);
		if (ents != NULL)
			fprintf(ents, "%s%d", i ? "," : "", g->role_of[i]);
	}
	if (ents != NULL)
		fprintf(ents, "]\n");
	return 0;
}

static void
bench(int rules, int principals, const char *outdir)
{
	static uint64_t batch_ns[NREQ / BATCH * ROUNDS];
	struct policy_request *req;
	struct policy_result res;
	struct policy_quota *q;
	struct policy *p;
	struct gen g;
	FILE *cedar = NULL, *ents = NULL, *reqs = NULL;
	char path[512], err[512], (*names)[24];
	uint64_t s = 42, t0, t1, total, allowed = 0;
	int quota, i, k, nb;

	for (quota = 0; quota < 2; quota++) {
		memset(&g, 0, sizeof(g));
		if (outdir != NULL && !quota) {
			snprintf(path, sizeof(path), "%s/%d-%d.cedar", outdir,
			    rules, principals);
			cedar = fopen(path, "w");
			snprintf(path, sizeof(path), "%s/%d-%d.entities.json",
			    outdir, rules, principals);
			ents = fopen(path, "w");
		}
		if (generate(rules, principals, quota, &g, cedar, ents) < 0) {
			fprintf(stderr, "out of memory\n");
			exit(1);
		}
		if (cedar != NULL)
			fclose(cedar);
		if (ents != NULL)
			fclose(ents);
		cedar = ents = NULL;
		if (policy_compile_text("bench", g.keep, g.klen, &p, err,
		        sizeof(err)) != POLICY_OK) {
			fprintf(stderr, "%s\n", err);
			exit(1);
		}
		q = quota ? policy_quota_new(p) : NULL;
		req = calloc(NREQ, sizeof(*req));
		names = calloc(NREQ, sizeof(*names));
		if (req == NULL || names == NULL || (quota && q == NULL)) {
			fprintf(stderr, "out of memory\n");
			exit(1);
		}
		if (outdir != NULL && !quota) {
			snprintf(path, sizeof(path), "%s/%d-%d.requests.json",
			    outdir, rules, principals);
			reqs = fopen(path, "w");
			if (reqs != NULL)
				fprintf(reqs, "[");
		}
		s = 42;
		for (i = 0; i < NREQ; i++) {
			int who = rnd(&s) % principals;
			snprintf(names[i], sizeof(names[i]), "agent-%d", who);
			req[i].principal = names[i];
			req[i].principal_len = strlen(names[i]);
			req[i].cap = rnd(&s) % CAP_COUNT;
			if (reqs != NULL && i < 20000) {
				/* with keep's answer, so the Cedar side can
				 * show that it decides the same */
				policy_decide(p, NULL, 0, &req[i], &res);
				fprintf(reqs, "%s[%d,\"%s\",%d]", i ? "," : "",
				    who, cap_name(req[i].cap), res.allow);
			}
		}
		if (reqs != NULL) {
			fprintf(reqs, "]\n");
			fclose(reqs);
			reqs = NULL;
		}
		/* warm up */
		for (i = 0; i < NREQ; i++) {
			policy_decide(p, q, now_ns(), &req[i], &res);
			allowed += res.allow;
		}
		nb = 0;
		total = 0;
		for (k = 0; k < ROUNDS; k++)
			for (i = 0; i < NREQ; i += BATCH) {
				int j;
				uint64_t clock = now_ns();
				t0 = now_ns();
				for (j = i; j < i + BATCH; j++) {
					policy_decide(
					    p, q, clock, &req[j], &res);
					allowed += res.allow;
				}
				t1 = now_ns();
				batch_ns[nb++] = t1 - t0;
				total += t1 - t0;
			}
		qsort(batch_ns, nb, sizeof(batch_ns[0]), cmp_u64);
		printf("keep  rules %5d  principals %6d  quota %-3s  "
		       "%11.0f decisions/s  p50 %6.1f ns  p99 %6.1f ns\n",
		    rules, principals, quota ? "on" : "off",
		    (double)nb * BATCH * 1e9 / (double)total,
		    (double)batch_ns[nb / 2] / BATCH,
		    (double)batch_ns[nb * 99 / 100] / BATCH);
		fflush(stdout);
		policy_quota_free(q);
		policy_free(p);
		free(req);
		free(names);
		free(g.keep);
		free(g.role_of);
	}
	if (allowed == 0)
		printf("(no request was allowed)\n");
}

int
main(int argc, char **argv)
{
	static const int rules[] = { 10, 1000 };
	static const int principals[] = { 100, 10000 };
	const char *outdir = argc > 1 ? argv[1] : NULL;
	size_t i, j;

	for (i = 0; i < 2; i++)
		for (j = 0; j < 2; j++)
			bench(rules[i], principals[j], outdir);
	return 0;
}
