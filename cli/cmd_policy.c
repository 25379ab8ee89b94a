/*
 * keep policy check FILE...
 * keep policy fmt [-w] FILE
 * keep policy test FILE...
 * keep policy explain FILE PRINCIPAL CAPABILITY [TARGET]
 * keep policy who-can FILE CAPABILITY [TARGET]
 * keep policy table FILE
 * keep policy diff OLD NEW
 *
 * Exit 0 success, 1 errors / failed tests / a negative answer / any
 * difference (diff), 2 usage. Diagnostics go to standard error as
 * file:line:col: error|warning: message, the source line and a caret.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "cli/cmd.h"
#include "lang/lang.h"
#include "lib/fdio.h"
#include "lib/units.h"
#include "policy/policy.h"

struct loaded {
	char *text;
	size_t len;
	struct lang_file *f;
	struct policy *p;
};

static int
policy_usage_fp(FILE *fp)
{
	fprintf(fp,
	    "usage: keep policy check FILE...\n"
	    "       keep policy fmt [-w] FILE\n"
	    "       keep policy test FILE...\n"
	    "       keep policy explain FILE PRINCIPAL CAPABILITY [TARGET]\n"
	    "       keep policy who-can FILE CAPABILITY [TARGET]\n"
	    "       keep policy table FILE\n"
	    "       keep policy diff OLD NEW\n");
	return EXIT_USAGE;
}

/* The usage, on stdout when asked for (--help), else on stderr. */
static int
policy_usage(void)
{
	return policy_usage_fp(stderr);
}

static char *
read_file(const char *path, size_t *len)
{
	FILE *fp;
	char *buf;
	size_t n;

	if (strcmp(path, "-") == 0)
		fp = stdin;
	else if ((fp = fopen(path, "r")) == NULL) {
		fprintf(stderr, "keep policy: %s: %s\n", path, strerror(errno));
		return NULL;
	}
	if ((buf = malloc(LANG_TEXT_MAX + 1)) == NULL) {
		fprintf(stderr, "keep policy: out of memory\n");
		goto out;
	}
	n = fread(buf, 1, LANG_TEXT_MAX + 1, fp);
	if (ferror(fp)) {
		fprintf(stderr, "keep policy: %s: read error\n", path);
		free(buf);
		buf = NULL;
		goto out;
	}
	*len = n;
	buf[n < LANG_TEXT_MAX + 1 ? n : LANG_TEXT_MAX] = '\0';
out:
	if (fp != stdin)
		fclose(fp);
	return buf;
}

static void
print_diags(const struct lang_file *f)
{
	char buf[2048];
	size_t i;

	for (i = 0; i < f->ndiags; i++) {
		lang_diag_format(f, &f->diags[i], buf, sizeof(buf));
		fputs(buf, stderr);
	}
	if (f->nerrors + f->nwarnings > f->ndiags)
		fprintf(stderr, "%s: %zu more diagnostics not shown\n", f->name,
		    f->nerrors + f->nwarnings - f->ndiags);
}

static void
unload(struct loaded *l)
{
	policy_free(l->p);
	lang_free(l->f);
	free(l->text);
	memset(l, 0, sizeof(*l));
}

/*
 * Read the files of one policy with the loader keepd uses (lang/source.c:
 * in order, as one text whose positions map back to each file), parse,
 * check and (if compile) compile. Prints errors, and warnings too if
 * show_warnings. Returns 0, or -1 on errors.
 */
static int
load_set(const char *const *paths, size_t n, struct loaded *l, int compile,
    int show_warnings)
{
	const char *path = paths[0];
	char err[1200];
	int rc;

	memset(l, 0, sizeof(*l));
	if (lang_source_load(paths, n, &l->text, &l->len, err, sizeof(err)) !=
	    0) {
		fprintf(stderr, "keep policy: %s\n", err);
		return -1;
	}
	rc = lang_parse(path, l->text, l->len, &l->f);
	if (l->f == NULL) {
		fprintf(
		    stderr, "keep policy: %s: %s\n", path, lang_strerror(rc));
		unload(l);
		return -1;
	}
	if (rc == LANG_OK)
		rc = lang_check(l->f);
	if (rc != LANG_OK || show_warnings)
		print_diags(l->f);
	if (rc != LANG_OK) {
		unload(l);
		return -1;
	}
	if (compile && (rc = policy_compile(l->f, &l->p)) != POLICY_OK) {
		fprintf(
		    stderr, "keep policy: %s: %s\n", path, policy_strerror(rc));
		unload(l);
		return -1;
	}
	return 0;
}

static int
load(const char *path, struct loaded *l, int compile, int show_warnings)
{
	return load_set(&path, 1, l, compile, show_warnings);
}

/* "file:line:col" of a position in what was loaded. */
static const char *
at(const struct loaded *l, uint32_t line, uint32_t col, char *buf, size_t len)
{
	lang_source_format(l->text, l->len, "policy", line, col, buf, len);
	return buf;
}

static int
do_check(int argc, char **argv)
{
	struct loaded l;

	if (argc < 1)
		return policy_usage();
	/* The files are one policy, as keepd loads its policy_dir: an agent
	 * defined in two of them is an error here as it is there. */
	if (load_set((const char *const *)argv, (size_t)argc, &l, 1, 1) < 0)
		return 1;
	unload(&l);
	return 0;
}

static int
do_fmt(int argc, char **argv)
{
	struct lang_file *f = NULL;
	char *text, *out, tmp[4096];
	size_t len, outlen;
	int write = 0, rc, fd;

	if (argc >= 1 && strcmp(argv[0], "-w") == 0) {
		write = 1;
		argc--;
		argv++;
	}
	if (argc != 1)
		return policy_usage();
	if ((text = read_file(argv[0], &len)) == NULL)
		return 1;
	rc = lang_parse(argv[0], text, len, &f);
	if (f == NULL || rc != LANG_OK) {
		if (f != NULL)
			print_diags(f);
		lang_free(f);
		free(text);
		return 1;
	}
	if ((rc = lang_print_alloc(f, &out, &outlen)) != LANG_OK) {
		fprintf(stderr, "keep policy: %s\n", lang_strerror(rc));
		lang_free(f);
		free(text);
		return 1;
	}
	rc = 0;
	if (!write) {
		fwrite(out, 1, outlen, stdout);
	} else if (outlen != len || memcmp(out, text, len) != 0) {
		/* Replace the file atomically: a half-written policy must
		 * never be what keepd loads. */
		if ((size_t)snprintf(tmp, sizeof(tmp), "%s.fmtXXXXXX",
		        argv[0]) >= sizeof(tmp) ||
		    (fd = mkstemp(tmp)) < 0) {
			fprintf(stderr,
			    "keep policy: %s: cannot create "
			    "temporary file\n",
			    argv[0]);
			rc = 1;
		} else {
			struct stat st;
			if (stat(argv[0], &st) == 0)
				fchmod(fd, st.st_mode & 07777);
			if (write_all(fd, out, outlen) < 0 || fsync(fd) < 0 ||
			    close(fd) < 0 || rename(tmp, argv[0]) < 0) {
				fprintf(stderr, "keep policy: %s: %s\n",
				    argv[0], strerror(errno));
				unlink(tmp);
				rc = 1;
			}
		}
	}
	free(out);
	lang_free(f);
	free(text);
	return rc;
}

/* The request for a principal, capability and optional target. */
static int
make_request(struct policy_request *req, const char *principal, const char *cap,
    const char *target)
{
	int id;

	memset(req, 0, sizeof(*req));
	if ((id = cap_lookup(cap, strlen(cap))) < 0) {
		fprintf(stderr, "keep policy: unknown capability '%s'\n", cap);
		return -1;
	}
	req->cap = id;
	req->principal = principal;
	req->principal_len = principal != NULL ? strlen(principal) : 0;
	req->target = target;
	req->target_len = target != NULL ? strlen(target) : 0;
	/* sandbox:read port:8000 is a request through the port with the
	 * caller's token, sandbox:read link:8000 one by a signed link. */
	if (id == CAP_SANDBOX_READ && target != NULL &&
	    (strncmp(target, "port:", 5) == 0 ||
	        strncmp(target, "link:", 5) == 0)) {
		char *end;
		unsigned long port = strtoul(target + 5, &end, 10);

		if (target[5] < '1' || target[5] > '9' || *end != '\0' ||
		    port > 65535) {
			fprintf(stderr,
			    "keep policy: bad port in '%s' (port:N or "
			    "link:N, N from 1 to 65535)\n",
			    target);
			return -1;
		}
		req->port = (uint16_t)port;
		req->link = target[0] == 'l';
		req->target = NULL;
		req->target_len = 0;
	}
	return 0;
}

static int
do_test(int argc, char **argv)
{
	const struct lang_decl *d;
	const struct lang_expect *e;
	struct policy_request req;
	struct policy_result res, ref;
	struct loaded l;
	char target[LANG_STR_MAX + 16], pos[1100], rpos[1100];
	int passed = 0, failed = 0, ok;

	if (argc < 1)
		return policy_usage();
	/* One policy, its tests included, from all the files at once. */
	if (load_set((const char *const *)argv, (size_t)argc, &l, 1, 0) < 0)
		failed++;
	else {
		for (d = l.f->decls; d != NULL; d = d->next) {
			if (d->kind != LANG_D_TEST)
				continue;
			ok = 1;
			for (e = d->expects; e != NULL; e = e->next) {
				if (e->has_port)
					snprintf(target, sizeof(target),
					    "%s:%u", e->target, e->port);
				else
					snprintf(target, sizeof(target), "%s",
					    e->target != NULL ? e->target : "");
				make_request(
				    &req, e->principal, cap_name(e->cap), NULL);
				req.target = target;
				req.target_len = strlen(target);
				policy_decide(l.p, NULL, 0, &req, &res);
				policy_ref_decide(l.f, &req, &ref);
				if (res.allow != ref.allow ||
				    res.rule != ref.rule) {
					fprintf(stderr,
					    "%s: internal error: "
					    "compiled and reference "
					    "evaluators disagree\n",
					    at(&l, e->loc.line, e->loc.col, pos,
					        sizeof(pos)));
					ok = 0;
				}
				if (res.allow == e->allow)
					continue;
				ok = 0;
				printf("%s: test \"%s\": expected %s, "
				       "got %s (%s",
				    at(&l, e->loc.line, e->loc.col, pos,
				        sizeof(pos)),
				    d->name, e->allow ? "allow" : "deny",
				    res.allow ? "allow" : "deny",
				    policy_reason_name(res.reason));
				if (res.rule != 0)
					printf(", rule %u at %s", res.rule,
					    at(&l, res.line, 0, rpos,
					        sizeof(rpos)));
				printf(")\n");
			}
			if (ok)
				passed++;
			else
				failed++;
		}
		unload(&l);
	}
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}

/* Where rule id lives: its declaration and statement. */
static int
find_rule(const struct lang_file *f, uint32_t rule, const struct lang_decl **dp,
    const struct lang_stmt **sp, const struct lang_item **ip)
{
	const struct lang_decl *d;
	const struct lang_stmt *s;
	size_t i;

	for (d = f->decls; d != NULL; d = d->next)
		for (s = d->stmts; s != NULL; s = s->next)
			for (i = 0; i < s->nitems; i++)
				if (s->items[i].rule == rule) {
					*dp = d;
					*sp = s;
					*ip = &s->items[i];
					return 0;
				}
	return -1;
}

static void
print_source_line(const struct loaded *l, uint32_t line)
{
	const char *p = l->text, *end = l->text + l->len, *nl;
	uint32_t n = 1;

	while (n < line && p < end && (nl = memchr(p, '\n', end - p)) != NULL) {
		p = nl + 1;
		n++;
	}
	if (n != line)
		return;
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	nl = memchr(p, '\n', end - p);
	printf("    %.*s\n", (int)((nl != NULL ? nl : end) - p), p);
}

static void
print_limits(const struct policy_limits *lim)
{
	char b[64];
	int c, any = 0;

	static const char *const kind[2] = { "read", "write" };
	for (c = 0; c < 2; c++)
		if (lim->rate_count[c])
			printf("%srate %s %llu/%llus",
			    any++ ? ", " : "  limits: ", kind[c],
			    (unsigned long long)lim->rate_count[c],
			    (unsigned long long)lim->rate_period_ms[c] / 1000);
	if (lim->concurrent)
		printf("%sconcurrent %u",
		    any++ ? ", " : "  limits: ", lim->concurrent);
	if (lim->budget != POLICY_UNLIMITED)
		printf("%sbudget %llu", any++ ? ", " : "  limits: ",
		    (unsigned long long)lim->budget);
	if (lim->mem_max) {
		units_format_size(b, sizeof(b), lim->mem_max);
		printf("%smemory %s", any++ ? ", " : "  limits: ", b);
	}
	if (lim->timeout_ms) {
		units_format_duration(b, sizeof(b), lim->timeout_ms);
		printf("%stimeout %s", any++ ? ", " : "  limits: ", b);
	}
	if (lim->output_max) {
		units_format_size(b, sizeof(b), lim->output_max);
		printf("%soutput %s", any++ ? ", " : "  limits: ", b);
	}
	if (lim->egress_max) {
		units_format_size(b, sizeof(b), lim->egress_max);
		printf("%segress bytes %s", any++ ? ", " : "  limits: ", b);
	}
	if (lim->egress_budget) {
		units_format_size(b, sizeof(b), lim->egress_budget);
		printf("%segress budget %s/%s", any++ ? ", " : "  limits: ", b,
		    lim->egress_budget_ms == 1000          ? "s"
		        : lim->egress_budget_ms == 60000   ? "min"
		        : lim->egress_budget_ms == 3600000 ? "h"
		                                           : "day");
	}
	if (lim->isolation == POLICY_ISO_KVM)
		printf("%sisolation kvm", any++ ? ", " : "  limits: ");
	if (lim->lock_writes)
		printf("%slock writes", any++ ? ", " : "  limits: ");
	if (lim->sandboxes)
		printf("%ssandboxes %u",
		    any++ ? ", " : "  limits: ", lim->sandboxes);
	if (lim->contexts)
		printf("%scontexts %u",
		    any++ ? ", " : "  limits: ", lim->contexts);
	if (lim->pause_ms) {
		units_format_duration(b, sizeof(b), lim->pause_ms);
		printf("%spause %s", any++ ? ", " : "  limits: ", b);
	}
	if (lim->snapshots_max) {
		units_format_size(b, sizeof(b), lim->snapshots_max);
		printf("%ssnapshots %s", any++ ? ", " : "  limits: ", b);
	}
	for (c = 0; c < CAP_COUNT; c++)
		if (lim->cost[c] != 1)
			printf("%scost %s %u",
			    any++ ? ", " : "  limits: ", cap_name(c),
			    lim->cost[c]);
	if (any)
		printf("\n");
}

static const char *
decl_label(const struct lang_decl *d, char *buf, size_t len)
{
	switch (d->kind) {
	case LANG_D_ROLE:
		snprintf(buf, len, "role %s", d->name);
		break;
	case LANG_D_AGENT:
		snprintf(buf, len, "agent \"%s\"", d->name);
		break;
	case LANG_D_DENY:
		if (d->for_kind == LANG_FOR_ALL)
			snprintf(buf, len, "deny for all");
		else
			snprintf(buf, len, "deny for %s %s%s%s",
			    d->for_kind == LANG_FOR_AGENT ? "agent" : "role",
			    d->for_kind == LANG_FOR_AGENT ? "\"" : "",
			    d->for_ref.name,
			    d->for_kind == LANG_FOR_AGENT ? "\"" : "");
		break;
	default:
		snprintf(buf, len, "test");
		break;
	}
	return buf;
}

static int
do_explain(int argc, char **argv)
{
	const struct lang_decl *d;
	const struct lang_stmt *s;
	const struct lang_item *it;
	struct policy_request req;
	struct policy_result res;
	struct loaded l;
	char label[128], pos[1100];

	if (argc < 3 || argc > 4)
		return policy_usage();
	if (make_request(&req, argv[1], argv[2], argc == 4 ? argv[3] : NULL) <
	    0)
		return EXIT_USAGE;
	if (load(argv[0], &l, 1, 0) < 0)
		return 1;
	policy_decide(l.p, NULL, 0, &req, &res);
	printf("%s: agent \"%s\" %s%s%s\n", res.allow ? "allow" : "deny",
	    argv[1], argv[2], argc == 4 ? " " : "", argc == 4 ? argv[3] : "");
	if (res.rule != 0 && find_rule(l.f, res.rule, &d, &s, &it) == 0) {
		printf("  by rule %u at %s, in %s:\n", res.rule,
		    at(&l, it->loc.line, it->loc.col, pos, sizeof(pos)),
		    decl_label(d, label, sizeof(label)));
		print_source_line(&l, it->loc.line);
	} else
		printf("  %s\n", policy_reason_name(res.reason));
	if (res.allow && req.link) {
		char life[32];

		units_format_duration(life, sizeof(life), res.link_ms);
		printf(
		    "  a link to port %u lasts at most %s\n", req.port, life);
	}
	if (res.limits != NULL && res.allow)
		print_limits(res.limits);
	unload(&l);
	return res.allow ? 0 : 1;
}

static int
do_who_can(int argc, char **argv)
{
	struct policy_request req;
	struct policy_result res;
	struct loaded l;
	char pos[1100];
	uint32_t i;
	int n = 0;

	if (argc < 2 || argc > 3)
		return policy_usage();
	if (make_request(&req, NULL, argv[1], argc == 3 ? argv[2] : NULL) < 0)
		return EXIT_USAGE;
	if (load(argv[0], &l, 1, 0) < 0)
		return 1;
	for (i = 0; i < l.p->npr; i++) {
		req.principal = l.p->pr[i].name;
		req.principal_len = l.p->pr[i].len;
		policy_decide(l.p, NULL, 0, &req, &res);
		if (res.allow) {
			printf("%s\t(rule %u, %s)\n", l.p->pr[i].name, res.rule,
			    at(&l, res.line, 0, pos, sizeof(pos)));
			n++;
		}
	}
	unload(&l);
	return n > 0 ? 0 : 1;
}

/* An entry's ` inject "S" as "H"`, or "" (a diff must show it: it
 * decides where a secret's value goes). */
static const char *
inject_text(const struct policy_egress *e, char *buf, size_t len)
{
	if (e->inject_secret == NULL)
		return "";
	snprintf(buf, len, " inject \"%s\" as \"%s\"", e->inject_secret,
	    e->inject_header);
	return buf;
}

static void
table_row_limits(const struct policy_limits *lim)
{
	char b[64];
	int c;

	for (c = 0; c < 2; c++) {
		if (lim->rate_count[c]) {
			snprintf(b, sizeof(b), "%llu/%llus",
			    (unsigned long long)lim->rate_count[c],
			    (unsigned long long)lim->rate_period_ms[c] / 1000);
			printf(" %-11s", b);
		} else
			printf(" %-11s", "-");
	}
	if (lim->concurrent)
		printf(" %-5u", lim->concurrent);
	else
		printf(" %-5s", "-");
	if (lim->budget != POLICY_UNLIMITED)
		printf(" %-10llu", (unsigned long long)lim->budget);
	else
		printf(" %-10s", "-");
	units_format_size(b, sizeof(b), lim->mem_max);
	printf(" %-7s", lim->mem_max ? b : "-");
	units_format_duration(b, sizeof(b), lim->timeout_ms);
	printf(" %-7s", lim->timeout_ms ? b : "-");
	units_format_size(b, sizeof(b), lim->output_max);
	printf(" %-7s", lim->output_max ? b : "-");
	printf(" %s", lim->lock_writes ? "yes" : "-");
}

static int
do_table(int argc, char **argv)
{
	const struct policy_principal *pr;
	struct loaded l;
	uint32_t i, k;
	int c, w = 5;

	if (argc != 1)
		return policy_usage();
	if (load(argv[0], &l, 1, 0) < 0)
		return 1;
	for (i = 0; i < l.p->npr; i++)
		if ((int)l.p->pr[i].len > w)
			w = l.p->pr[i].len;
	printf("%-*s", w, "agent");
	for (c = 0; c < CAP_COUNT; c++)
		printf(" %2d", c + 1);
	printf("  %-11s %-11s %-5s %-10s %-7s %-7s %-7s %s\n", "read-rate",
	    "write-rate", "conc", "budget", "memory", "timeout", "output",
	    "lock");
	for (i = 0; i < l.p->npr; i++) {
		pr = &l.p->pr[i];
		printf("%-*s", w, pr->name);
		for (c = 0; c < CAP_COUNT; c++)
			printf("  %c",
			    (pr->allow & CAP_BIT(c))      ? 'A'
			        : (pr->deny & CAP_BIT(c)) ? 'D'
			                                  : '.');
		printf(" ");
		table_row_limits(&pr->lim);
		printf("\n");
		for (k = 0; k < pr->nexec; k++)
			printf("%-*s   exec \"%s\"\n", w, "",
			    l.p->execs[pr->exec_off + k].name);
		for (k = 0; k < pr->nsecret; k++)
			printf("%-*s   secret \"%s\"\n", w, "",
			    l.p->secrets[pr->secret_off + k].name);
		for (k = 0; k < pr->negress; k++) {
			const struct policy_egress *e =
			    &l.p->egress[pr->egress_off + k];
			char inj[160];

			if (e->port)
				printf("%-*s   egress \"%s\":%u%s%s%s%s\n", w,
				    "", e->host, e->port,
				    e->http ? " http" : "",
				    e->private_ ? " private" : "",
				    e->udp ? " udp" : "",
				    inject_text(e, inj, sizeof(inj)));
			else
				printf("%-*s   egress \"%s\":*%s%s%s\n", w, "",
				    e->host, e->http ? " http" : "",
				    e->private_ ? " private" : "",
				    e->udp ? " udp" : "");
		}
	}
	printf("\nA allow, D explicit deny, . default deny\n");
	for (c = 0; c < CAP_COUNT; c++)
		printf("%2d %s\n", c + 1, cap_name(c));
	unload(&l);
	return 0;
}

static void
caps_list(cap_set_t s, char *buf, size_t len)
{
	int c;

	buf[0] = '\0';
	for (c = 0; c < CAP_COUNT; c++)
		if (s & CAP_BIT(c)) {
			if (buf[0] != '\0')
				strlcat(buf, ", ", len);
			strlcat(buf, cap_name(c), len);
		}
	if (buf[0] == '\0')
		strlcpy(buf, "nothing", len);
}

static void
limit_text(const struct policy_limits *l, int field, char *b, size_t len)
{
	switch (field) {
	case 0:
	case 1:
		if (l->rate_count[field] == 0)
			snprintf(b, len, "none");
		else
			snprintf(b, len, "%llu per %llums",
			    (unsigned long long)l->rate_count[field],
			    (unsigned long long)l->rate_period_ms[field]);
		break;
	case 2:
		if (l->concurrent == 0)
			snprintf(b, len, "none");
		else
			snprintf(b, len, "%u", l->concurrent);
		break;
	case 3:
		if (l->budget == POLICY_UNLIMITED)
			snprintf(b, len, "none");
		else
			snprintf(b, len, "%llu", (unsigned long long)l->budget);
		break;
	case 4:
	case 6: {
		uint64_t v = field == 4 ? l->mem_max : l->output_max;
		if (v == 0)
			snprintf(b, len, "none");
		else
			units_format_size(b, len, v);
		break;
	}
	case 5:
		if (l->timeout_ms == 0)
			snprintf(b, len, "none");
		else
			units_format_duration(b, len, l->timeout_ms);
		break;
	case 7:
		snprintf(b, len, "%s", l->lock_writes ? "yes" : "no");
		break;
	default:
		snprintf(b, len, "%u", l->cost[field - 8]);
		break;
	}
}

/* Whether two optional names are equal (both NULL, or the same). */
static int
opt_eq(const char *a, const char *b)
{
	return (a == NULL && b == NULL) ||
	    (a != NULL && b != NULL && strcmp(a, b) == 0);
}

static int
egress_eq(const struct policy_egress *a, const struct policy_egress *b)
{
	return strcmp(a->host, b->host) == 0 && a->port == b->port &&
	    a->http == b->http && a->private_ == b->private_ &&
	    opt_eq(a->inject_secret, b->inject_secret) &&
	    opt_eq(a->inject_header, b->inject_header) && a->udp == b->udp;
}

/* An expose element as the policy would say it: "8000", "3000-3999",
 * "*", with " link" and its bound. */
static void
expose_text(const struct policy_expose *x, char *b, size_t len)
{
	char life[32];
	int n;

	if (x->port == 0)
		n = snprintf(b, len, "*");
	else if (x->last > x->port)
		n = snprintf(b, len, "%u-%u", x->port, x->last);
	else
		n = snprintf(b, len, "%u", x->port);
	if (x->link_ms != 0 && n >= 0 && (size_t)n < len) {
		units_format_duration(life, sizeof(life), x->link_ms);
		snprintf(b + n, len - (size_t)n, " link %s", life);
	}
}

static int
diff_lists(const struct policy *a, const struct policy_principal *pa,
    const struct policy *b, const struct policy_principal *pb, const char *sign)
{
	uint32_t i, k;
	int n = 0;

	for (i = 0; i < pa->nexec; i++) {
		const char *name = a->execs[pa->exec_off + i].name;
		for (k = 0; k < pb->nexec; k++)
			if (strcmp(b->execs[pb->exec_off + k].name, name) == 0)
				break;
		if (k == pb->nexec) {
			printf("agent \"%s\": exec \"%s\" %s\n", pa->name, name,
			    sign);
			n++;
		}
	}
	for (i = 0; i < pa->nsecret; i++) {
		const char *name = a->secrets[pa->secret_off + i].name;
		for (k = 0; k < pb->nsecret; k++)
			if (strcmp(b->secrets[pb->secret_off + k].name, name) ==
			    0)
				break;
		if (k == pb->nsecret) {
			printf("agent \"%s\": secret \"%s\" %s\n", pa->name,
			    name, sign);
			n++;
		}
	}
	for (i = 0; i < pa->negress; i++) {
		const struct policy_egress *e = &a->egress[pa->egress_off + i];
		for (k = 0; k < pb->negress; k++)
			if (egress_eq(&b->egress[pb->egress_off + k], e))
				break;
		if (k == pb->negress) {
			char inj[160];

			if (e->port)
				printf("agent \"%s\": egress \"%s\":%u%s%s%s%s "
				       "%s\n",
				    pa->name, e->host, e->port,
				    e->http ? " http" : "",
				    e->private_ ? " private" : "",
				    e->udp ? " udp" : "",
				    inject_text(e, inj, sizeof(inj)), sign);
			else
				printf("agent \"%s\": egress \"%s\":*%s%s%s "
				       "%s\n",
				    pa->name, e->host, e->http ? " http" : "",
				    e->private_ ? " private" : "",
				    e->udp ? " udp" : "", sign);
			n++;
		}
	}
	for (i = 0; i < pa->nexpose; i++) {
		const struct policy_expose *x = &a->expose[pa->expose_off + i];
		char t[64];

		for (k = 0; k < pb->nexpose; k++) {
			const struct policy_expose *y =
			    &b->expose[pb->expose_off + k];
			if (x->port == y->port && x->last == y->last &&
			    x->link_ms == y->link_ms)
				break;
		}
		if (k == pb->nexpose) {
			expose_text(x, t, sizeof(t));
			printf(
			    "agent \"%s\": expose %s %s\n", pa->name, t, sign);
			n++;
		}
	}
	return n;
}

static int
diff_principal(const struct policy *a, const struct policy_principal *pa,
    const struct policy *b, const struct policy_principal *pb)
{
	static const char *const fields[8] = { "rate read", "rate write",
		"concurrent", "budget", "memory", "timeout", "output",
		"lock writes" };
	char x[64], y[64];
	int c, n = 0;

	for (c = 0; c < CAP_COUNT; c++)
		if ((pa->allow ^ pb->allow) & CAP_BIT(c)) {
			printf("agent \"%s\": %s: %s -> %s\n", pa->name,
			    cap_name(c),
			    pa->allow & CAP_BIT(c) ? "allow" : "deny",
			    pb->allow & CAP_BIT(c) ? "allow" : "deny");
			n++;
		}
	for (c = 0; c < 8 + CAP_COUNT; c++) {
		limit_text(&pa->lim, c, x, sizeof(x));
		limit_text(&pb->lim, c, y, sizeof(y));
		if (strcmp(x, y) == 0)
			continue;
		if (c < 8)
			printf("agent \"%s\": %s: %s -> %s\n", pa->name,
			    fields[c], x, y);
		else
			printf("agent \"%s\": cost %s: %s -> %s\n", pa->name,
			    cap_name(c - 8), x, y);
		n++;
	}
	if (pa->lim.sandboxes != pb->lim.sandboxes) {
		snprintf(x, sizeof(x), "%u", pa->lim.sandboxes);
		snprintf(y, sizeof(y), "%u", pb->lim.sandboxes);
		printf("agent \"%s\": sandboxes: %s -> %s\n", pa->name,
		    pa->lim.sandboxes ? x : "none",
		    pb->lim.sandboxes ? y : "none");
		n++;
	}
	if (pa->lim.contexts != pb->lim.contexts) {
		snprintf(x, sizeof(x), "%u", pa->lim.contexts);
		snprintf(y, sizeof(y), "%u", pb->lim.contexts);
		printf("agent \"%s\": contexts: %s -> %s\n", pa->name,
		    pa->lim.contexts ? x : "none",
		    pb->lim.contexts ? y : "none");
		n++;
	}
	if (pa->lim.pause_ms != pb->lim.pause_ms) {
		units_format_duration(x, sizeof(x), pa->lim.pause_ms);
		units_format_duration(y, sizeof(y), pb->lim.pause_ms);
		printf("agent \"%s\": pause: %s -> %s\n", pa->name,
		    pa->lim.pause_ms ? x : "never",
		    pb->lim.pause_ms ? y : "never");
		n++;
	}
	if (pa->lim.snapshots_max != pb->lim.snapshots_max) {
		units_format_size(x, sizeof(x), pa->lim.snapshots_max);
		units_format_size(y, sizeof(y), pb->lim.snapshots_max);
		printf("agent \"%s\": snapshots: %s -> %s\n", pa->name,
		    pa->lim.snapshots_max ? x : "none",
		    pb->lim.snapshots_max ? y : "none");
		n++;
	}
	n += diff_lists(a, pa, b, pb, "removed");
	n += diff_lists(b, pb, a, pa, "added");
	return n;
}

static int
do_diff(int argc, char **argv)
{
	struct loaded a, b;
	char caps[512];
	uint32_t i = 0, k = 0;
	int n = 0, cmp;

	if (argc != 2)
		return policy_usage();
	if (load(argv[0], &a, 1, 0) < 0)
		return EXIT_USAGE;
	if (load(argv[1], &b, 1, 0) < 0) {
		unload(&a);
		return EXIT_USAGE;
	}
	/* Both principal arrays are sorted by name: merge them. */
	while (i < a.p->npr || k < b.p->npr) {
		if (i == a.p->npr)
			cmp = 1;
		else if (k == b.p->npr)
			cmp = -1;
		else
			cmp = strcmp(a.p->pr[i].name, b.p->pr[k].name);
		if (cmp < 0) {
			caps_list(a.p->pr[i].allow, caps, sizeof(caps));
			printf("agent \"%s\": removed (was allowed %s)\n",
			    a.p->pr[i].name, caps);
			i++;
			n++;
		} else if (cmp > 0) {
			caps_list(b.p->pr[k].allow, caps, sizeof(caps));
			printf("agent \"%s\": added (allowed %s)\n",
			    b.p->pr[k].name, caps);
			k++;
			n++;
		} else {
			n += diff_principal(a.p, &a.p->pr[i], b.p, &b.p->pr[k]);
			i++;
			k++;
		}
	}
	unload(&a);
	unload(&b);
	return n > 0 ? 1 : 0;
}

int
cmd_policy(int argc, char **argv)
{
	const char *verb;

	if (cli_wants_help(argc, argv)) {
		policy_usage_fp(stdout);
		return 0;
	}
	if (argc < 2)
		return policy_usage();
	verb = argv[1];
	argc -= 2;
	argv += 2;
	if (strcmp(verb, "check") == 0)
		return do_check(argc, argv);
	if (strcmp(verb, "fmt") == 0)
		return do_fmt(argc, argv);
	if (strcmp(verb, "test") == 0)
		return do_test(argc, argv);
	if (strcmp(verb, "explain") == 0)
		return do_explain(argc, argv);
	if (strcmp(verb, "who-can") == 0)
		return do_who_can(argc, argv);
	if (strcmp(verb, "table") == 0)
		return do_table(argc, argv);
	if (strcmp(verb, "diff") == 0)
		return do_diff(argc, argv);
	return policy_usage();
}
