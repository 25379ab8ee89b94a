/*
 * keep token sign --secret-key KEY [--footer STR] [--implicit STR] PAYLOAD
 * keep token verify --public-key KEY [--implicit STR] [--no-claims]
 *                   [--audience AUD] TOKEN
 * keep token mint --key SECRET --sub PRINCIPAL --caps CAP[,CAP...]
 *                 --ttl DURATION [--sandbox ID] [--aud AUD] [--iss ISS]
 * keep token inspect TOKEN
 *
 * KEY is PASERK text or a file holding it. PAYLOAD or TOKEN "-" reads
 * standard input. verify prints the payload exactly as signed and exits 0,
 * or prints one line naming the reason and exits 1.
 */
#include <getopt.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cmd.h"
#include "lib/units.h"
#include "token/paseto.h"
#include "token/token.h"

static int
token_usage_fp(FILE *fp)
{
	fprintf(fp,
	    "usage: keep token sign --secret-key KEY [--footer STR] "
	    "[--implicit STR] PAYLOAD_JSON\n"
	    "       keep token verify --public-key KEY [--implicit STR] "
	    "[--no-claims] [--audience AUD] TOKEN\n"
	    "       keep token mint --key SECRET --sub PRINCIPAL --caps "
	    "CAP[,CAP...] --ttl DURATION [--sandbox ID] [--aud AUD] "
	    "[--iss ISS]\n"
	    "       keep token inspect TOKEN\n");
	return EXIT_USAGE;
}

/* The usage, on stdout when asked for (--help), else on stderr. */
static int
token_usage(void)
{
	return token_usage_fp(stderr);
}

/* The argument itself, or standard input for "-" (trailing newline
 * dropped). Returns a malloc'ed string or NULL. */
static char *
arg_or_stdin(const char *arg)
{
	char *buf;
	size_t n = 0, cap = PASETO_MAX_TOKEN * 2;

	if (strcmp(arg, "-") != 0)
		return strdup(arg);
	if ((buf = malloc(cap + 1)) == NULL)
		return NULL;
	n = fread(buf, 1, cap, stdin);
	if (n == cap && !feof(stdin)) {
		free(buf);
		return NULL;
	}
	if (n > 0 && buf[n - 1] == '\n')
		n--;
	buf[n] = '\0';
	return buf;
}

static int
fail(const char *verb, int rc)
{
	fprintf(stderr, "keep token %s: %s\n", verb, token_strerror(rc));
	return 1;
}

static const struct option token_opts[] = {
	{ "secret-key", required_argument, NULL, 's' },
	{ "public-key", required_argument, NULL, 'p' },
	{ "key", required_argument, NULL, 'k' },
	{ "footer", required_argument, NULL, 'f' },
	{ "implicit", required_argument, NULL, 'i' },
	{ "no-claims", no_argument, NULL, 'N' },
	{ "audience", required_argument, NULL, 'a' },
	{ "aud", required_argument, NULL, 'a' },
	{ "sub", required_argument, NULL, 'u' },
	{ "caps", required_argument, NULL, 'c' },
	{ "ttl", required_argument, NULL, 't' },
	{ "sandbox", required_argument, NULL, 'x' },
	{ "iss", required_argument, NULL, 'I' },
	{ NULL, 0, NULL, 0 },
};

struct token_args {
	const char *secret, *public, *footer, *implicit, *aud, *sub, *caps,
	    *ttl, *sandbox, *iss;
	int no_claims;
};

static int
parse_args(int argc, char **argv, struct token_args *a)
{
	int c;

	memset(a, 0, sizeof(*a));
	optind = 1;
	while ((c = getopt_long(argc, argv, "", token_opts, NULL)) != -1) {
		switch (c) {
		case 's':
		case 'k':
			a->secret = optarg;
			break;
		case 'p':
			a->public = optarg;
			break;
		case 'f':
			a->footer = optarg;
			break;
		case 'i':
			a->implicit = optarg;
			break;
		case 'N':
			a->no_claims = 1;
			break;
		case 'a':
			a->aud = optarg;
			break;
		case 'u':
			a->sub = optarg;
			break;
		case 'c':
			a->caps = optarg;
			break;
		case 't':
			a->ttl = optarg;
			break;
		case 'x':
			a->sandbox = optarg;
			break;
		case 'I':
			a->iss = optarg;
			break;
		default:
			return -1;
		}
	}
	return 0;
}

static int
token_sign(int argc, char **argv)
{
	struct token_args a;
	uint8_t sk[64];
	char *payload, *tok;
	int rc;

	if (parse_args(argc, argv, &a) || a.secret == NULL ||
	    optind != argc - 1)
		return token_usage();
	if ((rc = paserk_load_secret(a.secret, sk)) != 0)
		return fail("sign", rc);
	if ((payload = arg_or_stdin(argv[optind])) == NULL)
		return fail("sign", TOKEN_E_TOO_LARGE);
	rc = paseto_v4_sign(sk, (const uint8_t *)payload, strlen(payload),
	    (const uint8_t *)a.footer, a.footer ? strlen(a.footer) : 0,
	    (const uint8_t *)a.implicit, a.implicit ? strlen(a.implicit) : 0,
	    &tok);
	sodium_memzero(sk, sizeof(sk));
	free(payload);
	if (rc != 0)
		return fail("sign", rc);
	printf("%s\n", tok);
	free(tok);
	return 0;
}

static int
token_verify_cmd(int argc, char **argv)
{
	struct token_args a;
	struct token_claims c;
	uint8_t pk[32], *m;
	size_t mlen;
	char *tok;
	int rc;

	if (parse_args(argc, argv, &a) || a.public == NULL ||
	    optind != argc - 1)
		return token_usage();
	if ((rc = paserk_load_public(a.public, pk)) != 0)
		return fail("verify", rc);
	if ((tok = arg_or_stdin(argv[optind])) == NULL)
		return fail("verify", TOKEN_E_TOO_LARGE);
	rc = paseto_v4_verify(pk, tok, strlen(tok), (const uint8_t *)a.implicit,
	    a.implicit ? strlen(a.implicit) : 0, &m, &mlen);
	free(tok);
	if (rc != 0)
		return fail("verify", rc);
	if (!a.no_claims) {
		rc = token_claims_parse(m, mlen, &c);
		if (rc == 0)
			rc = token_claims_check(
			    &c, (int64_t)time(NULL), 60, 0, a.aud);
		if (rc != 0) {
			free(m);
			return fail("verify", rc);
		}
	}
	fwrite(m, 1, mlen, stdout);
	putchar('\n');
	free(m);
	return 0;
}

static int
parse_caps(const char *list, cap_set_t *caps)
{
	const char *p = list;

	*caps = 0;
	while (*p != '\0') {
		size_t n = strcspn(p, ",");
		int id = cap_lookup(p, n);

		if (id < 0)
			return -1;
		*caps |= CAP_BIT(id);
		p += n;
		if (*p == ',')
			p++;
	}
	return *caps != 0 ? 0 : -1;
}

static int
token_mint_cmd(int argc, char **argv)
{
	struct token_args a;
	struct token_claims c;
	uint64_t ttl_ms;
	uint8_t sk[64];
	char *tok;
	int rc;

	if (parse_args(argc, argv, &a) || a.secret == NULL || a.sub == NULL ||
	    a.caps == NULL || a.ttl == NULL || optind != argc)
		return token_usage();
	memset(&c, 0, sizeof(c));
	if (parse_caps(a.caps, &c.caps) != 0) {
		fprintf(stderr, "keep token mint: unknown capability in '%s'\n",
		    a.caps);
		return 1;
	}
	if (units_parse_duration(a.ttl, strlen(a.ttl), &ttl_ms) != 0 ||
	    ttl_ms < 1000) {
		fprintf(stderr, "keep token mint: bad --ttl '%s'\n", a.ttl);
		return EXIT_USAGE;
	}
	if (strlcpy(c.sub, a.sub, sizeof(c.sub)) >= sizeof(c.sub) ||
	    strlcpy(c.aud, a.aud ? a.aud : "keep", sizeof(c.aud)) >=
	        sizeof(c.aud) ||
	    strlcpy(c.iss, a.iss ? a.iss : "keep", sizeof(c.iss)) >=
	        sizeof(c.iss) ||
	    (a.sandbox &&
	        strlcpy(c.sbx, a.sandbox, sizeof(c.sbx)) >= sizeof(c.sbx)))
		return fail("mint", TOKEN_E_INVAL);
	if ((rc = paserk_load_secret(a.secret, sk)) != 0)
		return fail("mint", rc);
	c.iat = (int64_t)time(NULL);
	c.exp = c.iat + (int64_t)(ttl_ms / 1000);
	token_new_jti(c.jti);
	rc = token_mint(sk, &c, &tok);
	sodium_memzero(sk, sizeof(sk));
	if (rc != 0)
		return fail("mint", rc);
	printf("%s\n", tok);
	free(tok);
	return 0;
}

static int
token_inspect(int argc, char **argv)
{
	char foot[PASETO_MAX_FOOTER + 1], *tok;
	uint8_t *m;
	size_t mlen, flen;
	int rc;

	if (argc != 2)
		return token_usage();
	if ((tok = arg_or_stdin(argv[1])) == NULL)
		return fail("inspect", TOKEN_E_TOO_LARGE);
	rc = paseto_v4_footer(tok, strlen(tok), foot, sizeof(foot), &flen);
	if (rc == 0)
		rc = paseto_v4_payload_unverified(tok, strlen(tok), &m, &mlen);
	free(tok);
	if (rc != 0)
		return fail("inspect", rc);
	printf("# NOT VERIFIED: decoded without checking the signature\n");
	printf("payload: %.*s\n", (int)mlen, (const char *)m);
	if (flen > 0)
		printf("footer: %.*s\n", (int)flen, foot);
	free(m);
	return 0;
}

int
cmd_token(int argc, char **argv)
{
	if (cli_wants_help(argc, argv)) {
		token_usage_fp(stdout);
		return 0;
	}
	if (argc < 2)
		return token_usage();
	if (sodium_init() < 0)
		return 1;
	if (strcmp(argv[1], "sign") == 0)
		return token_sign(argc - 1, argv + 1);
	if (strcmp(argv[1], "verify") == 0)
		return token_verify_cmd(argc - 1, argv + 1);
	if (strcmp(argv[1], "mint") == 0)
		return token_mint_cmd(argc - 1, argv + 1);
	if (strcmp(argv[1], "inspect") == 0)
		return token_inspect(argc - 1, argv + 1);
	return token_usage();
}
