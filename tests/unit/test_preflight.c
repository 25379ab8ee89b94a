/* Unit tests for host/preflight.c: the production warnings of keepd -n
 * (no issuer key can verify, a principal holds admin, no policy). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "host/config.h"
#include "host/preflight.h"

/* A valid k4.public key (any key; generated once). */
#define PUBKEY "k4.public.sI11CYHQ5jsAYP4DuloZG-Zfj-1UfRUAX3z_w4Eo56o"

struct fixture {
	char dir[64];
	struct keepd_config cfg;
	char *out;
	size_t outlen;
};

static void
write_policy(struct fixture *fx, const char *name, const char *text)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", fx->dir, name);
	assert_non_null(f = fopen(path, "w"));
	fputs(text, f);
	fclose(f);
}

static int
run(struct fixture *fx)
{
	FILE *mem;
	int n;

	free(fx->out);
	fx->out = NULL;
	assert_non_null(mem = open_memstream(&fx->out, &fx->outlen));
	n = preflight_check(&fx->cfg, mem);
	fclose(mem);
	return n;
}

static int
setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));

	assert_non_null(fx);
	strcpy(fx->dir, "/tmp/keep-preflight.XXXXXX");
	assert_non_null(mkdtemp(fx->dir));
	config_defaults(&fx->cfg);
	strcpy(fx->cfg.policy_dir, fx->dir);
	*state = fx;
	return 0;
}

static int
teardown(void **state)
{
	struct fixture *fx = *state;
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", fx->dir);
	assert_int_equal(system(cmd), 0);
	free(fx->out);
	free(fx);
	return 0;
}

static void
test_clean(void **state)
{
	struct fixture *fx = *state;

	strcpy(fx->cfg.issuer_keys[0], PUBKEY);
	fx->cfg.nissuer_keys = 1;
	write_policy(fx, "a.policy",
	    "role r {\n\tallow sandbox:read\n}\nagent \"x\" : r\n");
	assert_int_equal(run(fx), 0);
	assert_string_equal(fx->out, "");
}

static void
test_no_issuer_key(void **state)
{
	struct fixture *fx = *state;

	write_policy(fx, "a.policy", "# nothing is allowed\n");
	assert_int_equal(run(fx), 1);
	assert_non_null(strstr(fx->out, "no issuer key"));
	assert_non_null(strstr(fx->out, "fix: keep key generate"));
}

static void
test_unreadable_issuer_key(void **state)
{
	struct fixture *fx = *state;

	strcpy(fx->cfg.issuer_keys[0], "/nonexistent/issuer.public");
	strcpy(fx->cfg.issuer_keys[1], PUBKEY);
	fx->cfg.nissuer_keys = 2;
	write_policy(fx, "a.policy", "# nothing is allowed\n");
	assert_int_equal(run(fx), 1);
	assert_non_null(strstr(fx->out, "/nonexistent/issuer.public"));
	assert_null(strstr(fx->out, "no issuer key"));
}

static void
test_admin_granted(void **state)
{
	struct fixture *fx = *state;

	strcpy(fx->cfg.issuer_keys[0], PUBKEY);
	fx->cfg.nissuer_keys = 1;
	/* Two files, read as one policy: the role in one, agents in the
	 * other; only the inheriting agents hold admin. */
	write_policy(fx, "10-roles.policy",
	    "role ops {\n\tallow admin, audit:read\n}\n"
	    "role reader {\n\tallow sandbox:read\n}\n");
	write_policy(fx, "20-agents.policy",
	    "agent \"alice\" : ops\nagent \"bob\" : reader\n"
	    "agent \"carol\" : ops\n");
	assert_int_equal(run(fx), 2);
	assert_non_null(strstr(fx->out, "admin to agent \"alice\""));
	assert_non_null(strstr(fx->out, "admin to agent \"carol\""));
	assert_null(strstr(fx->out, "\"bob\""));
}

static void
test_no_policy_and_broken_policy(void **state)
{
	struct fixture *fx = *state;

	strcpy(fx->cfg.issuer_keys[0], PUBKEY);
	fx->cfg.nissuer_keys = 1;
	assert_int_equal(run(fx), 1);
	assert_non_null(strstr(fx->out, "no *.policy file"));
	write_policy(fx, "a.policy", "role r {\n\tallow nosuch:cap\n}\n");
	assert_int_equal(run(fx), 1);
	assert_non_null(strstr(fx->out, "does not compile"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_clean, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_no_issuer_key, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_unreadable_issuer_key, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_admin_granted, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_no_policy_and_broken_policy, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
