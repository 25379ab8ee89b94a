/*
 * keep audit: verify, tail and export the audit log in the store's LMDB
 * environment, read-only, beside a running keepd (LMDB allows readers in
 * other processes). append and prune are the operator's writes: a manual
 * entry (also what the crash tests drive), and retention from a signed
 * checkpoint. See keep-audit(1).
 */
#include <sys/stat.h>

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cmd.h"
#include "host/store/store.h"
#include "lib/log.h"
#include "lib/units.h"
#include "token/paserk.h"
#include "token/token.h"

#define DEFAULT_DATA "/var/lib/keep"
#define TAIL_MAX 100000

struct audit_args {
	const char *data, *key, *principal, *action, *target, *decision, *rule,
	    *detail, *reqid, *since, *max_age, *max_entries, *jti;
	int follow;
	unsigned long lines, count;
	uint64_t map_size; /* append: fixed map size, no growth */
};

static const struct option audit_opts[] = {
	{ "data", required_argument, NULL, 'd' },
	{ "key", required_argument, NULL, 'k' },
	{ "principal", required_argument, NULL, 'p' },
	{ "action", required_argument, NULL, 'a' },
	{ "target", required_argument, NULL, 't' },
	{ "decision", required_argument, NULL, 'D' },
	{ "rule", required_argument, NULL, 'r' },
	{ "detail", required_argument, NULL, 'x' },
	{ "request-id", required_argument, NULL, 'R' },
	{ "jti", required_argument, NULL, 'j' },
	{ "since", required_argument, NULL, 's' },
	{ "max-age", required_argument, NULL, 'A' },
	{ "max-entries", required_argument, NULL, 'E' },
	{ "count", required_argument, NULL, 'c' },
	{ "follow", no_argument, NULL, 'f' },
	{ "lines", required_argument, NULL, 'n' },
	{ "map-size", required_argument, NULL, 'M' },
	{ NULL, 0, NULL, 0 },
};

static int
usage_fp(FILE *fp)
{
	fprintf(fp,
	    "usage: keep audit verify [--data DIR] [--key PUBLIC]\n"
	    "       keep audit tail [-f] [-n N] [--principal P] [--action A] "
	    "[--data DIR]\n"
	    "       keep audit export --since T [--data DIR]\n"
	    "       keep audit append --action A [--principal P] [--target T]\n"
	    "           [--decision allow|deny|info] [--rule R] [--detail D]\n"
	    "           [--request-id ID] [--jti J] [--count N] [--map-size "
	    "S]\n"
	    "           [--data DIR]\n"
	    "       keep audit prune --key SECRET (--max-age D | "
	    "--max-entries N) [--data DIR]\n");
	return EXIT_USAGE;
}

/* The usage, on stdout when asked for (--help), else on stderr. */
static int
usage(void)
{
	return usage_fp(stderr);
}

static int
parse_ulong(const char *s, unsigned long max, unsigned long *out)
{
	char *end;

	errno = 0;
	*out = strtoul(s, &end, 10);
	return errno == 0 && *s >= '0' && *s <= '9' && *end == '\0' &&
	    *out <= max;
}

static int
parse_args(int argc, char **argv, struct audit_args *a)
{
	int c;

	memset(a, 0, sizeof(*a));
	a->lines = 10;
	a->count = 1;
	optind = 1;
	while ((c = getopt_long(argc, argv, "fn:", audit_opts, NULL)) != -1) {
		switch (c) {
		case 'd':
			a->data = optarg;
			break;
		case 'k':
			a->key = optarg;
			break;
		case 'p':
			a->principal = optarg;
			break;
		case 'a':
			a->action = optarg;
			break;
		case 't':
			a->target = optarg;
			break;
		case 'D':
			a->decision = optarg;
			break;
		case 'r':
			a->rule = optarg;
			break;
		case 'x':
			a->detail = optarg;
			break;
		case 'R':
			a->reqid = optarg;
			break;
		case 'j':
			a->jti = optarg;
			break;
		case 's':
			a->since = optarg;
			break;
		case 'A':
			a->max_age = optarg;
			break;
		case 'E':
			a->max_entries = optarg;
			break;
		case 'c':
			if (!parse_ulong(optarg, 10000000, &a->count) ||
			    a->count == 0)
				return -1;
			break;
		case 'f':
			a->follow = 1;
			break;
		case 'M':
			if (units_parse_size(
			        optarg, strlen(optarg), &a->map_size) != 0 ||
			    a->map_size < 64 * 1024)
				return -1;
			break;
		case 'n':
			if (!parse_ulong(optarg, TAIL_MAX, &a->lines))
				return -1;
			break;
		default:
			return -1;
		}
	}
	return optind == argc ? 0 : -1;
}

/*
 * The environment directory: DIR itself when it holds data.mdb, else
 * DIR/db (keepd's layout: the store is chrooted to <state_dir>/db).
 */
static void
data_dir(const char *data, char *out, size_t outlen)
{
	struct stat sb;
	char p[4096];

	if (data == NULL)
		data = DEFAULT_DATA;
	snprintf(p, sizeof(p), "%s/data.mdb", data);
	if (stat(p, &sb) == 0) {
		snprintf(out, outlen, "%s", data);
		return;
	}
	snprintf(p, sizeof(p), "%s/db", data);
	if (stat(p, &sb) == 0 && S_ISDIR(sb.st_mode)) {
		snprintf(out, outlen, "%s", p);
		return;
	}
	snprintf(out, outlen, "%s", data);
}

static int
open_store(const struct audit_args *a, int readonly, struct store **st)
{
	struct store_config cfg = { 0, 0, readonly, 0, 0 };
	char dir[4096];
	int rc;

	data_dir(a->data, dir, sizeof(dir));
	/* A writer may need to grow the map as keepd's store would, unless
	 * told to stay in a fixed map. */
	if (!readonly && a->map_size != 0)
		cfg.map_size = cfg.map_max = a->map_size;
	else if (!readonly)
		cfg.map_max = 1ull << 34;
	if ((rc = store_open(dir, &cfg, st)) != STORE_OK) {
		fprintf(stderr, "keep audit: %s: %s\n", dir,
		    rc == STORE_E_NOTFOUND ? "no store here"
		                           : store_strerror(rc));
		return -1;
	}
	return 0;
}

static const char *
decision_name(uint32_t d)
{
	switch (d) {
	case STORE_DECISION_ALLOW:
		return "allow";
	case STORE_DECISION_DENY:
		return "deny";
	default:
		return "info";
	}
}

static int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void
time_text(int64_t ms, char out[32])
{
	char s[21];

	token_time_format(s, ms / 1000);
	/* "YYYY-MM-DDTHH:MM:SS.mmmZ" */
	snprintf(out, 32, "%.19s.%03dZ", s, (int)(ms % 1000));
}

static int
matches(const struct store_audit *e, const struct audit_args *a)
{
	return (a->principal == NULL ||
	           strcmp(a->principal, e->principal) == 0) &&
	    (a->action == NULL || strcmp(a->action, e->action) == 0);
}

/* An untrusted field for a terminal: escaped, "-" when empty. */
static const char *
field(char *buf, size_t len, const char *s)
{
	return s[0] == '\0' ? "-" : log_escape(buf, len, s, strlen(s));
}

static void
print_entry(const struct store_audit *e)
{
	char t[32], p[256], ac[256], tg[1024], r[1024], q[256], d[2048];

	time_text(e->time_ms, t);
	printf("%" PRIu64 " %s %s %s %s %s rule=%s req=%s", e->seq, t,
	    field(p, sizeof(p), e->principal), field(ac, sizeof(ac), e->action),
	    field(tg, sizeof(tg), e->target), decision_name(e->decision),
	    field(r, sizeof(r), e->rule), field(q, sizeof(q), e->request_id));
	/* Last, because it is free text (the policy hash, how a run ended). */
	if (e->detail[0] != '\0')
		printf(" detail=%s", field(d, sizeof(d), e->detail));
	putchar('\n');
}

/*
 * Call fn on every entry after *after (a seq), in order, one page per
 * transaction; *after moves on. Returns a STORE_E_* code.
 */
static int
walk(struct store *st, uint64_t *after,
    void (*fn)(const struct store_audit *, void *), void *arg)
{
	struct store_page *pg = calloc(1, sizeof(*pg));
	char cur[32];
	int rc = STORE_OK;

	if (pg == NULL)
		return STORE_E_NOMEM;
	for (;;) {
		snprintf(cur, sizeof(cur), "%" PRIu64, *after);
		rc = store_list(
		    st, STORE_DB_AUDIT, NULL, *after ? cur : NULL, 256, pg);
		if (rc != STORE_OK)
			break;
		for (size_t i = 0; i < pg->n; i++) {
			struct store_audit e;

			if (store_audit_decode(pg->rec[i], pg->len[i], &e) != 0)
				continue;
			fn(&e, arg);
			*after = e.seq;
		}
		store_page_free(pg);
		if (pg->next[0] == '\0')
			break;
	}
	free(pg);
	return rc;
}

/* ---- verify --------------------------------------------------------- */

static int
audit_verify(const struct audit_args *a)
{
	uint8_t pk[32];
	struct store_verify v;
	struct store *st;
	int rc;

	if (a->key != NULL && paserk_load_public(a->key, pk) != 0) {
		fprintf(stderr, "keep audit: %s: not a public key\n", a->key);
		return 1;
	}
	if (open_store(a, 1, &st) != 0)
		return 1;
	rc = store_audit_verify(st, a->key ? pk : NULL, &v);
	store_close(st);
	if (rc == STORE_E_CHAIN) {
		printf("audit log BROKEN at entry %" PRIu64 ": %s\n", v.bad_seq,
		    v.message);
		return 1;
	}
	if (rc != STORE_OK) {
		fprintf(stderr, "keep audit: %s\n", store_strerror(rc));
		return 1;
	}
	if (v.entries == 0)
		printf("audit log intact: empty");
	else
		printf("audit log intact: %" PRIu64 " entries (%" PRIu64
		       "..%" PRIu64 ")",
		    v.entries, v.first_seq, v.last_seq);
	if (v.checkpoint_seq)
		printf(", from a signed checkpoint at entry %" PRIu64,
		    v.checkpoint_seq);
	printf("\n");
	return 0;
}

/* ---- tail ----------------------------------------------------------- */

struct ring {
	const struct audit_args *a;
	struct store_audit *e; /* a->lines slots */
	void **mem;
	size_t n, next;
};

static void
ring_add(const struct store_audit *e, void *arg)
{
	struct ring *r = arg;
	void *rec;
	size_t len;

	if (!matches(e, r->a) || r->a->lines == 0)
		return;
	/* Keep a private copy: the page is freed after the walk step. */
	if (store_audit_encode(e, &rec, &len) != STORE_OK)
		return;
	free(r->mem[r->next]);
	r->mem[r->next] = rec;
	(void)store_audit_decode(rec, len, &r->e[r->next]);
	r->next = (r->next + 1) % r->a->lines;
	if (r->n < r->a->lines)
		r->n++;
}

static void
print_match(const struct store_audit *e, void *arg)
{
	if (matches(e, arg)) {
		print_entry(e);
		fflush(stdout);
	}
}

static volatile sig_atomic_t stop;

static void
on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int
audit_tail(const struct audit_args *a)
{
	struct ring r = { a, NULL, NULL, 0, 0 };
	uint64_t after = 0;
	struct store *st;
	size_t slots = a->lines ? a->lines : 1;
	int rc;

	if (open_store(a, 1, &st) != 0)
		return 1;
	r.e = calloc(slots, sizeof(*r.e));
	r.mem = calloc(slots, sizeof(*r.mem));
	if (r.e == NULL || r.mem == NULL) {
		store_close(st);
		return 1;
	}
	/* Unfiltered, only the last entries need reading. */
	if (a->principal == NULL && a->action == NULL &&
	    store_audit_head(st, &after, NULL) == STORE_OK)
		after = after > a->lines ? after - a->lines : 0;
	else
		after = 0;
	rc = walk(st, &after, ring_add, &r);
	for (size_t i = 0; i < r.n; i++)
		print_entry(&r.e[(r.next + slots - r.n + i) % slots]);
	fflush(stdout);
	for (size_t i = 0; i < slots; i++)
		free(r.mem[i]);
	free(r.e);
	free(r.mem);
	if (a->follow && rc == STORE_OK) {
		signal(SIGINT, on_signal);
		signal(SIGTERM, on_signal);
		while (!stop && rc == STORE_OK) {
			/* Each poll is its own short read transaction. */
			usleep(250 * 1000);
			rc = walk(st, &after, print_match, (void *)a);
		}
	}
	store_close(st);
	if (rc != STORE_OK) {
		fprintf(stderr, "keep audit: %s\n", store_strerror(rc));
		return 1;
	}
	return 0;
}

/* ---- export --------------------------------------------------------- */

static json_t *
jstr(const char *s)
{
	json_t *j = json_string(s);
	char buf[2048];

	/* Not UTF-8: escaped, so the line stays valid JSON. */
	if (j == NULL)
		j = json_string(log_escape(buf, sizeof(buf), s, strlen(s)));
	return j;
}

static void
hex(const uint8_t *b, size_t n, char *out)
{
	sodium_bin2hex(out, 2 * n + 1, b, n);
}

struct export_arg {
	int64_t since_ms;
	int err;
};

static void
export_one(const struct store_audit *e, void *arg)
{
	struct export_arg *x = arg;
	char t[32], prev[65], h[65];
	json_t *o;
	char *line;

	if (e->time_ms < x->since_ms || x->err)
		return;
	time_text(e->time_ms, t);
	hex(e->prev, 32, prev);
	hex(e->hash, 32, h);
	o = json_pack("{s:I,s:s,s:I,s:o,s:o,s:o,s:o,s:o,s:s,s:o,s:o,s:s,s:s}",
	    "seq", (json_int_t)e->seq, "time", t, "time_ms",
	    (json_int_t)e->time_ms, "request_id", jstr(e->request_id),
	    "principal", jstr(e->principal), "jti", jstr(e->jti), "action",
	    jstr(e->action), "target", jstr(e->target), "decision",
	    decision_name(e->decision), "rule", jstr(e->rule), "detail",
	    jstr(e->detail), "prev", prev, "hash", h);
	if (o != NULL && e->client_request_id != NULL &&
	    e->client_request_id[0] != '\0')
		json_object_set_new(
		    o, "client_request_id", jstr(e->client_request_id));
	if (o == NULL ||
	    (line = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER)) ==
	        NULL) {
		x->err = 1;
		json_decref(o);
		return;
	}
	if (puts(line) == EOF)
		x->err = 1;
	free(line);
	json_decref(o);
}

/* RFC 3339, "@<unix seconds>", or a duration meaning that long ago. */
static int
parse_since(const char *s, int64_t *ms)
{
	uint64_t d;
	int64_t t;

	if (s[0] == '@') {
		unsigned long v;

		if (!parse_ulong(s + 1, (unsigned long)INT64_MAX / 1000, &v))
			return -1;
		*ms = (int64_t)v * 1000;
		return 0;
	}
	if (token_time_parse(s, strlen(s), &t) == 0) {
		*ms = t * 1000;
		return 0;
	}
	if (units_parse_duration(s, strlen(s), &d) == 0 &&
	    d <= (uint64_t)now_ms()) {
		*ms = now_ms() - (int64_t)d;
		return 0;
	}
	return -1;
}

static int
audit_export(const struct audit_args *a)
{
	struct export_arg x = { 0, 0 };
	uint64_t after = 0;
	struct store *st;
	int rc;

	if (a->since == NULL || parse_since(a->since, &x.since_ms) != 0) {
		fprintf(stderr,
		    "keep audit: --since wants an RFC 3339 time, "
		    "@SECONDS or a duration such as 24h\n");
		return EXIT_USAGE;
	}
	if (open_store(a, 1, &st) != 0)
		return 1;
	rc = walk(st, &after, export_one, &x);
	store_close(st);
	if (fflush(stdout) != 0)
		x.err = 1;
	if (rc != STORE_OK || x.err) {
		fprintf(stderr, "keep audit: %s\n",
		    rc ? store_strerror(rc) : "write error");
		return 1;
	}
	return 0;
}

/* ---- append and prune ----------------------------------------------- */

static int
audit_append(const struct audit_args *a)
{
	struct store_audit e;
	struct store *st;
	uint64_t seq;
	int rc = STORE_OK;

	memset(&e, 0, sizeof(e));
	if (a->action == NULL)
		return usage();
	e.action = a->action;
	e.principal = a->principal ? a->principal : "operator";
	e.target = a->target ? a->target : "";
	e.rule = a->rule ? a->rule : "";
	e.detail = a->detail ? a->detail : "";
	e.request_id = a->reqid ? a->reqid : "";
	e.jti = a->jti ? a->jti : "";
	if (a->decision == NULL || strcmp(a->decision, "info") == 0)
		e.decision = STORE_DECISION_INFO;
	else if (strcmp(a->decision, "allow") == 0)
		e.decision = STORE_DECISION_ALLOW;
	else if (strcmp(a->decision, "deny") == 0)
		e.decision = STORE_DECISION_DENY;
	else
		return usage();
	if (open_store(a, 0, &st) != 0)
		return 1;
	/* One transaction per entry; the seq is printed once committed, so
	 * a reader of stdout knows exactly what was acknowledged. */
	for (unsigned long i = 0; i < a->count && rc == STORE_OK; i++) {
		e.time_ms = now_ms();
		if ((rc = store_audit_append(st, &e, 1, &seq)) == STORE_OK) {
			printf("%" PRIu64 "\n", seq);
			fflush(stdout);
		}
	}
	store_close(st);
	if (rc != STORE_OK) {
		fprintf(stderr, "keep audit: append: %s\n", store_strerror(rc));
		return 1;
	}
	return 0;
}

static int
audit_prune(const struct audit_args *a)
{
	uint64_t age = 0, removed;
	unsigned long max = 0;
	uint8_t sk[64];
	struct store *st;
	int rc;

	if (a->key == NULL || (a->max_age == NULL && a->max_entries == NULL))
		return usage();
	if (a->max_age != NULL &&
	    (units_parse_duration(a->max_age, strlen(a->max_age), &age) != 0 ||
	        age == 0))
		return usage();
	if (a->max_entries != NULL &&
	    (!parse_ulong(a->max_entries, (unsigned long)1e12, &max) ||
	        max == 0))
		return usage();
	if (paserk_load_secret(a->key, sk) != 0) {
		fprintf(stderr, "keep audit: %s: not a usable secret key\n",
		    a->key);
		return 1;
	}
	if (open_store(a, 0, &st) != 0) {
		sodium_memzero(sk, sizeof(sk));
		return 1;
	}
	rc = store_audit_prune(st, now_ms(), age, max, sk, &removed);
	sodium_memzero(sk, sizeof(sk));
	store_close(st);
	if (rc != STORE_OK) {
		fprintf(stderr, "keep audit: prune: %s\n", store_strerror(rc));
		return 1;
	}
	printf("removed %" PRIu64 " entries\n", removed);
	return 0;
}

int
cmd_audit(int argc, char **argv)
{
	struct audit_args a;
	const char *sub;

	if (cli_wants_help(argc, argv)) {
		usage_fp(stdout);
		return 0;
	}
	if (argc < 2)
		return usage();
	sub = argv[1];
	if (parse_args(argc - 1, argv + 1, &a) != 0)
		return usage();
	if (sodium_init() < 0) {
		fprintf(stderr, "keep audit: libsodium failed to start\n");
		return 1;
	}
	if (strcmp(sub, "verify") == 0)
		return audit_verify(&a);
	if (strcmp(sub, "tail") == 0)
		return audit_tail(&a);
	if (strcmp(sub, "export") == 0)
		return audit_export(&a);
	if (strcmp(sub, "append") == 0)
		return audit_append(&a);
	if (strcmp(sub, "prune") == 0)
		return audit_prune(&a);
	return usage();
}
