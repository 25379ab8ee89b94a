/*
 * The production checks of keepd -n (see preflight.h): a token must be
 * able to verify, and no principal may hold `admin` unnoticed. The policy
 * is read as the parent sends it to the policy process: every *.policy
 * in policy_dir, in name order, concatenated.
 */
#include <glob.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "host/msg.h"
#include "host/preflight.h"
#include "lib/caps.h"
#include "policy/policy.h"
#include "token/paserk.h"

static int
check_issuer_keys(const struct keepd_config *cfg, FILE *out)
{
	uint8_t pk[32];
	size_t i, usable = 0;
	int warnings = 0;

	for (i = 0; i < cfg->nissuer_keys; i++) {
		if (paserk_load_public(cfg->issuer_keys[i], pk) == 0) {
			usable++;
			continue;
		}
		fprintf(out,
		    "keepd: warning: tokens.issuer_keys: %s is not a readable "
		    "k4.public key; it is skipped\n",
		    cfg->issuer_keys[i]);
		warnings++;
	}
	if (usable == 0) {
		fprintf(out,
		    "keepd: warning: no issuer key: no token can verify, every "
		    "API request will be refused (401)\n"
		    "keepd:   fix: keep key generate --out /etc/keep/keys "
		    "--name "
		    "issuer, then list\n"
		    "keepd:   /etc/keep/keys/issuer.public under "
		    "tokens.issuer_keys in the configuration\n");
		warnings++;
	}
	return warnings;
}

/* Append every *.policy of dir to a malloc'd buffer; NULL if none. */
static char *
read_policy_dir(const char *dir, size_t *len, size_t *nfiles)
{
	char pattern[CONFIG_PATH_MAX + 16], *text = NULL, *grown;
	glob_t g;
	size_t i, n;
	FILE *fp;

	*len = 0;
	*nfiles = 0;
	snprintf(pattern, sizeof(pattern), "%s/*.policy", dir);
	memset(&g, 0, sizeof(g));
	if (glob(pattern, 0, NULL, &g) != 0)
		goto out;
	for (i = 0; i < g.gl_pathc; i++) {
		if ((fp = fopen(g.gl_pathv[i], "r")) == NULL)
			continue;
		for (;;) {
			if (*len + 8192 > MSG_POLICY_MAX_TEXT)
				break;
			if ((grown = realloc(text, *len + 8192 + 1)) == NULL)
				break;
			text = grown;
			if ((n = fread(text + *len, 1, 8192, fp)) == 0)
				break;
			*len += n;
		}
		fclose(fp);
		(*nfiles)++;
	}
	if (text != NULL)
		text[*len] = '\0';
out:
	globfree(&g);
	return text;
}

static int
check_policy(const struct keepd_config *cfg, FILE *out)
{
	struct policy *p = NULL;
	struct policy_result res;
	char err[512], *text;
	size_t len, nfiles;
	uint32_t i;
	int warnings = 0;

	text = read_policy_dir(cfg->policy_dir, &len, &nfiles);
	if (nfiles == 0) {
		fprintf(out,
		    "keepd: warning: no *.policy file in %s: every request "
		    "is denied\n",
		    cfg->policy_dir);
		free(text);
		return 1;
	}
	if (policy_compile_text(cfg->policy_dir, text != NULL ? text : "", len,
	        &p, err, sizeof(err)) != POLICY_OK) {
		fprintf(out,
		    "keepd: warning: the policy in %s does not compile; keepd "
		    "denies every request until it does:\n%s%s"
		    "keepd:   fix: keep policy check %s/*.policy\n",
		    cfg->policy_dir, err,
		    err[0] != '\0' && err[strlen(err) - 1] == '\n' ? "" : "\n",
		    cfg->policy_dir);
		free(text);
		return 1;
	}
	for (i = 0; i < p->npr; i++) {
		policy_decide_index(p, (int)i, CAP_ADMIN, &res);
		if (!res.allow)
			continue;
		fprintf(out,
		    "keepd: warning: the policy grants admin to agent \"%s\" "
		    "(line %u of the policy files in %s, in name order)\n"
		    "keepd:   fix: remove `admin` from its allow rules unless "
		    "this principal administers the appliance;\n"
		    "keepd:   see keep policy who-can FILE admin\n",
		    p->pr[i].name, res.line, cfg->policy_dir);
		warnings++;
	}
	policy_free(p);
	free(text);
	return warnings;
}

int
preflight_check(const struct keepd_config *cfg, FILE *out)
{
	return check_issuer_keys(cfg, out) + check_policy(cfg, out);
}
