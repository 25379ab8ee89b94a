/* Unit tests for host/config.c: golden cases (tests/config/NAME.yaml
 * beside NAME.out, the text `keepd -n -f` prints; `make host-golden`
 * regenerates them) and typed values from a full file. */
#include <glob.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "host/config.h"

static char *
slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf;
	size_t n;

	if (f == NULL)
		return NULL;
	buf = calloc(1, 65536);
	n = buf != NULL ? fread(buf, 1, 65535, f) : 0;
	fclose(f);
	if (buf != NULL)
		buf[n] = '\0';
	return buf;
}

/* What keepd -n prints for a file (host/keepd.c). */
static void
report(const char *path, char *out, size_t len)
{
	struct keepd_config cfg;
	struct config_diag diag;
	size_t i, used = 0;

	out[0] = '\0';
	if (config_load(path, &cfg, &diag) == CONFIG_OK) {
		snprintf(out, len, "configuration OK\n");
		return;
	}
	for (i = 0; i < diag.nerrors && i < CONFIG_ERRORS_MAX; i++)
		used += (size_t)snprintf(
		    out + used, len - used, "%s\n", diag.errors[i]);
	if (diag.nerrors > CONFIG_ERRORS_MAX)
		snprintf(out + used, len - used, "%s: %zu more errors\n", path,
		    diag.nerrors - CONFIG_ERRORS_MAX);
}

static void
test_golden(void **state)
{
	static char got[65536];
	char want_path[512], *want;
	glob_t g;
	size_t i;

	(void)state;
	assert_int_equal(glob("tests/config/*.yaml", 0, NULL, &g), 0);
	assert_true(g.gl_pathc >= 10);
	for (i = 0; i < g.gl_pathc; i++) {
		snprintf(want_path, sizeof(want_path), "%.*s.out",
		    (int)(strlen(g.gl_pathv[i]) - 5), g.gl_pathv[i]);
		want = slurp(want_path);
		if (want == NULL)
			fail_msg(
			    "%s: no golden file %s", g.gl_pathv[i], want_path);
		report(g.gl_pathv[i], got, sizeof(got));
		if (strcmp(got, want) != 0)
			fail_msg("%s:\n--- want\n%s--- got\n%s", g.gl_pathv[i],
			    want, got);
		free(want);
	}
	globfree(&g);
}

static void
test_values(void **state)
{
	struct keepd_config c;
	struct config_diag d;

	(void)state;
	assert_int_equal(
	    config_load("tests/config/full.yaml", &c, &d), CONFIG_OK);
	assert_string_equal(c.listen_address, "::1");
	assert_int_equal(c.listen_port, 443);
	assert_string_equal(c.tls_key, "/etc/keep/tls/key.pem");
	assert_string_equal(c.user, "keep-daemon");
	assert_int_equal(c.nissuer_keys, 2);
	assert_string_equal(c.issuer_keys[1], "/etc/keep/keys/issuer2.pub");
	assert_int_equal(c.nimage_keys, 1);
	assert_int_equal(c.token_max_ttl_ms, 3600000);
	assert_int_equal(c.token_clock_skew_ms, 0);
	assert_int_equal(c.max_request_body, 1024);
	assert_int_equal(c.memory_max, 64 << 20);
	assert_int_equal(c.workspace_max, 10ULL << 30);
	assert_int_equal(c.max_files, 4096);
	assert_int_equal(c.restart_backoff_max_ms, 3600000);
	assert_int_equal(c.max_connections_per_client, 3);
	assert_int_equal(c.unauthenticated_timeout_ms, 2000);
	assert_int_equal(c.max_replies_pending, 8 << 20);
	assert_int_equal(c.process_memory, 512 << 20);
	assert_string_equal(c.guest_ca_file, "/etc/keep/guest-ca.pem");
}

static void
test_defaults(void **state)
{
	struct keepd_config c;
	struct config_diag d;

	(void)state;
	assert_int_equal(config_parse("x", "", 0, &c, &d), CONFIG_OK);
	assert_string_equal(c.listen_address, "127.0.0.1");
	assert_int_equal(c.listen_port, 8421);
	assert_string_equal(c.state_dir, "/var/lib/keep");
	assert_string_equal(c.policy_dir, "/etc/keep/policy");
	assert_string_equal(c.user, "_keep");
	assert_int_equal(c.max_files, 1024);
	assert_int_equal(c.max_connections_per_client, 128);
	assert_int_equal(c.unauthenticated_timeout_ms, 10000);
	assert_int_equal(c.process_memory, 1 << 30);
	assert_int_equal(config_parse("x", "{}", 2, &c, &d), CONFIG_OK);
}

static void
test_errors(void **state)
{
	static const char many[] =
	    "a: 1\nb: 1\nc: 1\nd: 1\ne: 1\nf: 1\ng: 1\nh: 1\ni: 1\nj: 1\n"
	    "k: 1\nl: 1\nm: 1\nn: 1\no: 1\np: 1\nq: 1\nr: 1\n";
	struct keepd_config c;
	struct config_diag d;

	(void)state;
	/* More errors than are kept: all counted. */
	assert_int_equal(config_parse("m", many, sizeof(many) - 1, &c, &d),
	    CONFIG_ERR_INVALID);
	assert_int_equal(d.nerrors, 18);
	assert_string_equal(d.errors[0], "m:1:1: error: unknown key \"a\"");
	/* An embedded NUL in a key. */
	assert_int_equal(
	    config_parse("z", "us\0r: x\n", 8, &c, &d), CONFIG_ERR_INVALID);
	assert_int_equal(config_load("tests/config/nonexistent.yaml", &c, &d),
	    CONFIG_ERR_IO);
	assert_int_equal(config_load("tests/config", &c, &d), CONFIG_ERR_IO);
}

/* node: the sandbox id prefix of a box in a fleet, [a-z0-9]{1,16}. */
static void
test_node(void **state)
{
	static const char *const bad[] = { "node: Box1\n", "node: a-b\n",
		"node: \"\"\n", "node: a.b\n", "node: a1234567890123456\n",
		"node: [a]\n" };
	struct keepd_config c;
	struct config_diag d;
	size_t i;

	(void)state;
	assert_int_equal(config_parse("x", "", 0, &c, &d), CONFIG_OK);
	assert_string_equal(c.node, "");
	assert_int_equal(config_parse("x", "node: a1\n", 9, &c, &d), CONFIG_OK);
	assert_string_equal(c.node, "a1");
	assert_int_equal(
	    config_parse("x", "node: 0123456789abcdef\n", 23, &c, &d),
	    CONFIG_OK);
	assert_string_equal(c.node, "0123456789abcdef");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (config_parse("x", bad[i], strlen(bad[i]), &c, &d) !=
		    CONFIG_ERR_INVALID)
			fail_msg("accepted %s", bad[i]);
		assert_int_equal(d.nerrors, 1);
	}
}

/* ports.domain: the name a port's host name ends with. */
static void
test_ports_domain(void **state)
{
	static const char *const bad[] = { "ports:\n  domain: Keep.Test\n",
		"ports:\n  domain: a..b\n", "ports:\n  domain: .a\n",
		"ports:\n  domain: a.\n", "ports:\n  domain: -a.b\n",
		"ports:\n  domain: a-.b\n", "ports:\n  domain: a_b\n",
		"ports:\n  domain: \"\"\n", "ports:\n  other: x\n" };
	static const char good[] = "ports:\n  domain: 8421.sbx-1.keep.test\n";
	struct keepd_config c;
	struct config_diag d;

	(void)state;
	assert_int_equal(config_parse("x", "", 0, &c, &d), CONFIG_OK);
	assert_string_equal(c.ports_domain, "");
	assert_int_equal(
	    config_parse("x", good, strlen(good), &c, &d), CONFIG_OK);
	assert_string_equal(c.ports_domain, "8421.sbx-1.keep.test");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (config_parse("x", bad[i], strlen(bad[i]), &c, &d) !=
		    CONFIG_ERR_INVALID)
			fail_msg("accepted %s", bad[i]);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_golden),
		cmocka_unit_test(test_values),
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_node),
		cmocka_unit_test(test_ports_domain),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
