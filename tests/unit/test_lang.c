/* Unit tests for lang/: parser, diagnostics, checks, printer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lang/lang.h"

struct fx {
	struct lang_file *f;
};

static int
setup(void **state)
{
	struct fx *fx = calloc(1, sizeof(*fx));

	if (fx == NULL)
		return -1;
	*state = fx;
	return 0;
}

static int
teardown(void **state)
{
	struct fx *fx = *state;

	lang_free(fx->f);
	free(fx);
	return 0;
}

/* Parse and check s; returns the check (or parse) result. */
static int
load(struct fx *fx, const char *s)
{
	int rc;

	lang_free(fx->f);
	fx->f = NULL;
	rc = lang_parse("t.policy", s, strlen(s), &fx->f);
	assert_non_null(fx->f);
	if (rc == LANG_OK)
		rc = lang_check(fx->f);
	return rc;
}

/* Whether some diagnostic has this severity, position and text. */
static int
has_diag(const struct lang_file *f, enum lang_sev sev, uint32_t line,
    uint32_t col, const char *sub)
{
	size_t i;

	for (i = 0; i < f->ndiags; i++)
		if (f->diags[i].sev == sev && f->diags[i].loc.line == line &&
		    f->diags[i].loc.col == col &&
		    strstr(f->diags[i].msg, sub) != NULL)
			return 1;
	return 0;
}

static void
test_minimal(void **state)
{
	struct fx *fx = *state;
	const struct lang_decl *d;

	assert_int_equal(load(fx,
	                     "role r { allow artifact:read }\n"
	                     "agent \"a\" : r\n"),
	    LANG_OK);
	assert_int_equal(fx->f->ndiags, 0);
	assert_int_equal(fx->f->ndecls, 2);
	d = lang_find(fx->f, LANG_D_AGENT, "a");
	assert_non_null(d);
	assert_int_equal(d->nparents, 1);
	assert_string_equal(d->parents[0].name, "r");
	assert_int_equal(d->parents[0].idx, 0);
	assert_int_equal(fx->f->nrules, 1);
}

static void
test_empty_and_comments(void **state)
{
	struct fx *fx = *state;

	assert_int_equal(load(fx, ""), LANG_OK);
	assert_int_equal(load(fx, "# nothing\n\n   # else\n"), LANG_OK);
	assert_int_equal(fx->f->end.n, 2);
}

static void
test_unknown_cap(void **state)
{
	struct fx *fx = *state;

	assert_int_equal(
	    load(fx, "role r {\n\tallow artifact:reed\n}\n"), LANG_E_SYNTAX);
	assert_true(has_diag(
	    fx->f, LANG_ERROR, 2, 8, "unknown capability 'artifact:reed'"));
	/* blanks inside a capability are not allowed */
	assert_int_equal(
	    load(fx, "role r { allow artifact : read }"), LANG_E_SYNTAX);
}

static void
test_diag_format(void **state)
{
	struct fx *fx = *state;
	char buf[512];

	assert_int_equal(
	    load(fx, "agent \"a\" {\n\tmemory 12Q\n}\n"), LANG_E_SYNTAX);
	assert_int_equal(fx->f->ndiags, 1);
	lang_diag_format(fx->f, &fx->f->diags[0], buf, sizeof(buf));
	assert_string_equal(buf,
	    "t.policy:2:9: error: bad size '12Q' (write e.g. 128M, 64K, 1G)\n"
	    "\tmemory 12Q\n"
	    "\t       ^\n");
	/* truncation never overruns */
	assert_true(lang_diag_format(fx->f, &fx->f->diags[0], buf, 10) > 10);
	assert_int_equal(strlen(buf), 9);
}

static void
test_recovery_reports_all(void **state)
{
	struct fx *fx = *state;

	assert_int_equal(load(fx,
	                     "role r {\n"
	                     "\tallow bogus\n"
	                     "\tbudget lots\n"
	                     "\tallow admin\n"
	                     "}\n"
	                     "agent \"a b\"\n"
	                     "agent \"ok\" : r\n"),
	    LANG_E_SYNTAX);
	assert_true(has_diag(fx->f, LANG_ERROR, 2, 8, "bogus"));
	assert_true(has_diag(fx->f, LANG_ERROR, 3, 9, "expected budget"));
	assert_true(has_diag(fx->f, LANG_ERROR, 6, 7, "agent names"));
	assert_int_equal(fx->f->nerrors, 3);
}

static void
test_cycle_and_depth(void **state)
{
	struct fx *fx = *state;
	char buf[8192];
	size_t n = 0;
	int i;

	assert_int_equal(load(fx,
	                     "role a : b { allow admin }\n"
	                     "role b : a { allow admin }\n"
	                     "agent \"x\" : a\n"),
	    LANG_E_SYNTAX);
	assert_true(has_diag(fx->f, LANG_ERROR, 2, 10, "inherits from itself"));
	/* a chain of LANG_DEPTH_MAX + 2 roles is refused */
	n += snprintf(buf + n, sizeof(buf) - n, "role r0 { allow admin }\n");
	for (i = 1; i < LANG_DEPTH_MAX + 2; i++)
		n += snprintf(buf + n, sizeof(buf) - n,
		    "role r%d : r%d { allow admin }\n", i, i - 1);
	n += snprintf(buf + n, sizeof(buf) - n, "agent \"x\" : r%d\n",
	    LANG_DEPTH_MAX + 1);
	assert_int_equal(load(fx, buf), LANG_E_SYNTAX);
	assert_true(fx->f->nerrors >= 1);
}

static void
test_warnings(void **state)
{
	struct fx *fx = *state;

	assert_int_equal(load(fx,
	                     "role unused { allow admin }\n"
	                     "role r { allow artifact:read, admin }\n"
	                     "agent \"a\" : r, ghost\n"
	                     "deny admin for role r\n"
	                     "deny schedule:write for all\n"),
	    LANG_OK);
	assert_true(has_diag(fx->f, LANG_WARNING, 1, 1, "never used"));
	assert_true(has_diag(fx->f, LANG_WARNING, 2, 31, "shadowed"));
	assert_true(has_diag(fx->f, LANG_WARNING, 3, 16, "unknown role"));
	assert_true(has_diag(fx->f, LANG_WARNING, 5, 6, "denies nothing"));
	assert_int_equal(fx->f->nwarnings, 4);
	assert_int_equal(fx->f->nerrors, 0);
}

static void
test_duplicates(void **state)
{
	struct fx *fx = *state;

	assert_int_equal(
	    load(fx, "agent \"a\" { budget 1\n budget 2 }\n"), LANG_E_SYNTAX);
	assert_true(has_diag(fx->f, LANG_ERROR, 2, 2, "set twice"));
	assert_int_equal(load(fx,
	                     "agent \"a\" { rate read 1/s\n"
	                     "rate write 1/s\ncost admin 3\n"
	                     "cost exec 4 }\n"),
	    LANG_OK);
	assert_int_equal(
	    load(fx, "role r {}\nrole r {}\nagent \"a\" : r\n"), LANG_E_SYNTAX);
	assert_true(has_diag(fx->f, LANG_ERROR, 2, 1, "defined twice"));
}

static void
test_values(void **state)
{
	struct fx *fx = *state;
	const struct lang_decl *d;
	const struct lang_stmt *s;

	assert_int_equal(load(fx,
	                     "agent \"a\" {\n"
	                     "rate read 100/min\n"
	                     "memory 128M\n"
	                     "timeout 30s\n"
	                     "egress \"API.github.com\", \"*.x.org\":* http "
	                     "private, \"10.0.0.1\":8080\n"
	                     "exec \"node\", \"pnpm\"\n"
	                     "egress budget 10G/h\n"
	                     "}\n"),
	    LANG_OK);
	d = lang_find(fx->f, LANG_D_AGENT, "a");
	s = d->stmts;
	assert_int_equal(s->kind, LANG_S_RATE);
	assert_int_equal(s->value, 100);
	assert_int_equal(s->period_ms, 60000);
	s = s->next;
	assert_int_equal(s->value, 128u << 20);
	s = s->next;
	assert_int_equal(s->value, 30000);
	s = s->next;
	assert_int_equal(s->nitems, 3);
	assert_string_equal(s->items[0].str, "api.github.com");
	assert_int_equal(s->items[0].port, 443);
	assert_int_equal(s->items[1].port, 0);
	assert_int_equal(s->items[1].http, 1);
	assert_int_equal(s->items[1].private_, 1);
	assert_int_equal(s->items[2].port, 8080);
	s = s->next;
	assert_int_equal(s->nitems, 2);
	assert_int_equal(s->items[1].rule, 5);
	s = s->next;
	assert_int_equal(s->kind, LANG_S_EGRESS_BUDGET);
	assert_int_equal(s->value, 10ull << 30);
	assert_int_equal(s->period_ms, 3600000);
}

static void
test_bad_names(void **state)
{
	struct fx *fx = *state;
	static const char *const bad[] = {
		"agent \"a\" { exec \"/bin/sh\" }",
		"agent \"a\" { exec \"sh -c\" }",
		"agent \"a\" { exec \"a;b\" }",
		"agent \"a\" { exec \"..\" }",
		"agent \"a\" { egress \"*.\" }",
		"agent \"a\" { egress \"a..b\" }",
		"agent \"a\" { egress \"-a.com\" }",
		"agent \"a\" { egress \"a.com\":0 }",
		"agent \"a\" { egress \"a.com\":65536 }",
		"agent \"a\" { rate read 5/fortnight }",
		"agent \"a\" { egress bytes 5T }",
		"agent \"a\" { egress budget 10G }",
		"agent \"a\" { egress budget 10G/week }",
		"agent \"a\" { egress budget 5T/day }",
		"agent \"a\" { egress budget 0/day }",
		"agent \"a\" { egress budget \"x\":443 }",
		"agent \"\"",
		"agent \"a\\\"\"",
		"agent \"a\" { allow }",
		"agent \"a\" { frobnicate }",
		"role { }",
		"deny admin",
		"deny admin for everyone",
		"test \"t\" { expect allow agent \"a\" }",
		"agent \"a\" {",
		"\"x",
		"role r { { } }",
	};
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(load(fx, bad[i]), LANG_E_SYNTAX);
		assert_true(fx->f->nerrors > 0);
		assert_true(fx->f->diags[0].loc.line >= 1);
	}
}

static void
test_nul_and_binary(void **state)
{
	struct fx *fx = *state;
	static const char text[] = "role r { allow admin }\0agent \"a\" : r";

	lang_free(fx->f);
	fx->f = NULL;
	assert_int_equal(
	    lang_parse("t", text, sizeof(text) - 1, &fx->f), LANG_E_SYNTAX);
	assert_true(fx->f->nerrors > 0);
}

static void
print_of(const char *src, char **out)
{
	struct lang_file *f = NULL;
	size_t len;

	assert_int_equal(lang_parse("p", src, strlen(src), &f), LANG_OK);
	assert_int_equal(lang_print_alloc(f, out, &len), LANG_OK);
	assert_int_equal(strlen(*out), len);
	lang_free(f);
}

static void
test_print_round_trip(void **state)
{
	static const char src[] =
	    "# head\n"
	    "role   reader{allow artifact:read,agent-run:read;"
	    "rate read 100/min   # fast\n"
	    "# before budget\n"
	    "budget 10\n# end of reader\n}\n"
	    "agent \"a\":reader{memory 128M; timeout 90s; output 1M;lock "
	    "writes\negress \"x.com\":* http, \"y.com\" private\n"
	    "cost artifact:read 5 concurrent 2}\n"
	    "agent \"b\" : reader # short\n"
	    "agent \"c\" : reader\n"
	    "deny   admin   for   all\n"
	    "deny admin for agent \"b\"\n"
	    "test \"t\" { expect allow agent \"a\" egress \"x.com\":80\n"
	    "expect deny agent \"b\" admin }\n"
	    "# tail\n";
	static const char want[] =
	    "# head\n"
	    "role reader {\n"
	    "\tallow artifact:read, agent-run:read\n"
	    "\trate read 100/min # fast\n"
	    "\t# before budget\n"
	    "\tbudget 10\n"
	    "\t# end of reader\n"
	    "}\n"
	    "\n"
	    "agent \"a\" : reader {\n"
	    "\tmemory 128M\n"
	    "\ttimeout 90s\n"
	    "\toutput 1M\n"
	    "\tlock writes\n"
	    "\tegress \"x.com\":* http, \"y.com\":443 private\n"
	    "\tcost artifact:read 5\n"
	    "\tconcurrent 2\n"
	    "}\n"
	    "\n"
	    "agent \"b\" : reader # short\n"
	    "agent \"c\" : reader\n"
	    "\n"
	    "deny admin for all\n"
	    "deny admin for agent \"b\"\n"
	    "\n"
	    "test \"t\" {\n"
	    "\texpect allow agent \"a\" egress \"x.com\":80\n"
	    "\texpect deny agent \"b\" admin\n"
	    "}\n"
	    "\n"
	    "# tail\n";
	char *one, *two;

	print_of(src, &one);
	assert_string_equal(one, want);
	print_of(one, &two);
	assert_string_equal(one, two);
	free(one);
	free(two);
}

static void
test_too_big(void **state)
{
	struct lang_file *f = NULL;

	assert_int_equal(
	    lang_parse("big", NULL, (size_t)LANG_TEXT_MAX + 1, &f), LANG_E_ARG);
	assert_null(f);
	assert_int_equal(lang_parse("big", "x", (size_t)LANG_TEXT_MAX + 1, &f),
	    LANG_E_TOOBIG);
	assert_non_null(f);
	assert_int_equal(f->nerrors, 1);
	lang_free(f);
	assert_string_equal(
	    lang_strerror(LANG_E_TOOBIG), "policy text too large");
	assert_string_equal(lang_strerror(12345), "unknown error");
}

/* Shapes meant to exhaust the stack or the CPU end in a diagnostic. */
static void
test_hostile_shapes(void **state)
{
	struct fx *fx = *state;
	size_t cap = 16u << 20, n = 0;
	char *buf = malloc(cap);
	int i;

	assert_non_null(buf);
	/* a chain far deeper than the limit: no recursion that deep */
	for (i = 0; i < 200000; i++)
		n +=
		    snprintf(buf + n, cap - n, "role r%d : r%d {}\n", i, i + 1);
	n += snprintf(buf + n, cap - n, "role r200000 {}\nagent \"a\" : r0\n");
	assert_int_equal(load(fx, buf), LANG_E_SYNTAX);
	assert_true(fx->f->nerrors >= 1);
	assert_non_null(strstr(fx->f->diags[0].msg, "deeper than"));
	/* a wide fan-in: every agent inherits 20,000 roles */
	n = 0;
	n += snprintf(buf + n, cap - n, "role hub");
	for (i = 0; i < 20000; i++)
		n += snprintf(buf + n, cap - n, "%s w%d", i ? "," : " :", i);
	n += snprintf(buf + n, cap - n, " {}\n");
	for (i = 0; i < 20000; i++)
		n +=
		    snprintf(buf + n, cap - n, "role w%d { allow admin }\n", i);
	for (i = 0; i < 5000; i++)
		n += snprintf(buf + n, cap - n, "agent \"a%d\" : hub\n", i);
	assert_int_equal(load(fx, buf), LANG_E_SYNTAX);
	assert_int_equal(fx->f->nerrors, 1);
	assert_non_null(
	    strstr(fx->f->diags[fx->f->ndiags - 1].msg, "too complex"));
	free(buf);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_minimal, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_empty_and_comments, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_unknown_cap, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_diag_format, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_recovery_reports_all, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_cycle_and_depth, setup, teardown),
		cmocka_unit_test_setup_teardown(test_warnings, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_duplicates, setup, teardown),
		cmocka_unit_test_setup_teardown(test_values, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_bad_names, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_nul_and_binary, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_hostile_shapes, setup, teardown),
		cmocka_unit_test(test_print_round_trip),
		cmocka_unit_test(test_too_big),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
