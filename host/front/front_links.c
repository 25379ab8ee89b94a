/*
 * Links to guests' ports (docs/architecture.md, "Ports"): a signed,
 * expiring credential that reaches one port of one sandbox without a
 * token. A link is a PASETO token the policy process mints from the
 * caller's own (an attenuation: its descendant, so revoking the caller's
 * token revokes it) with aud TOKEN_LINK_AUD, caps sandbox:read, sbx and
 * the claim port. The front's bearer verifier refuses it (another
 * audience); the link verifier here accepts only it. Whoever holds it is
 * treated as its issuer, marked as having come by link, and every
 * request is decided again: the policy must still let the issuer give
 * links to that port (so changing the policy closes them), the sandbox
 * must still be the issuer's (a deleted one is not found).
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "host/front/front_backend_int.h"
#include "host/proc.h"
#include "token/token.h"
#include "lib/log.h"
#include "lib/units.h"
#include "policy/policy.h"

static struct token_verifier *
link_verifier(struct front_backend *fb)
{
	struct proc_ctx *ctx = fb->ctx;
	struct token_verifier_config vc;
	struct token_key keys[MSG_PUBKEYS_MAX];

	if (fb->link_tv != NULL && fb->link_tv_keys == ctx->token_keys &&
	    fb->link_tv_config == ctx->config)
		return fb->link_tv;
	token_verifier_free(fb->link_tv);
	fb->link_tv = NULL;
	fb->link_tv_keys = ctx->token_keys;
	fb->link_tv_config = ctx->config;
	if (proc_token_config(ctx, keys, &vc) != 0)
		return NULL;
	vc.audience = TOKEN_LINK_AUD;
	/* The policy process that signs links shares this machine's clock:
	 * a link ends when it says, without the skew allowed to issuers
	 * elsewhere. */
	vc.skew = 0;
	/* A link's life is bounded by the policy (30 days at most), not
	 * by the operator's token lifetime; its issuer's token bounds it
	 * too, as its ancestor. */
	vc.max_lifetime = 30 * 24 * 3600;
	vc.cache_entries = 1024;
	vc.revoked = fb_revoked;
	vc.revoked_ctx = fb;
	if (token_verifier_new(&vc, &fb->link_tv) != 0)
		fb->link_tv = NULL;
	return fb->link_tv;
}

static int
fb_link_verify(void *arg, const char *tok, size_t len,
    struct api_principal *out, struct api_error *err)
{
	struct front_backend *fb = arg;
	struct token_verifier *tv;
	struct token_claims c;
	int rc;

	memset(out, 0, sizeof(*out));
	if ((tv = link_verifier(fb)) == NULL)
		return fb_fail(err, API_EUNAVAIL, "Not ready");
	rc = token_verify(tv, tok, len, &c);
	if (rc == TOKEN_E_REVOCATION_UNKNOWN) {
		err->retry_after = 1;
		return fb_fail(err, API_EUNAVAIL,
		    "Link revocation status unknown; try again");
	}
	/* Another audience: a bearer token, not a link at all. */
	if (rc == TOKEN_E_AUDIENCE)
		return fb_fail(err, API_EFORBIDDEN, "Not a link");
	/* Never the link itself in a log: only why it failed. */
	if (rc != 0) {
		log_info("link refused: %s", token_strerror(rc));
		return fb_fail(
		    err, API_EUNAUTH, "Invalid link: %s", token_strerror(rc));
	}
	if (c.port == 0 || c.sbx[0] == '\0' ||
	    c.caps != CAP_BIT(CAP_SANDBOX_READ) ||
	    strlen(c.sub) >= GRANT_PRINCIPAL_MAX) {
		sodium_memzero(&c, sizeof(c));
		return fb_fail(err, API_EUNAUTH, "Invalid link: not a link");
	}
	strlcpy(out->sub, c.sub, sizeof(out->sub));
	strlcpy(out->jti, c.jti, sizeof(out->jti));
	strlcpy(out->sbx, c.sbx, sizeof(out->sbx));
	for (size_t i = 0; i < c.nchain && i < TOKEN_CHAIN_MAX; i++) {
		if (i > 0)
			strlcat(out->chain, " ", sizeof(out->chain));
		strlcat(out->chain, c.chain[i], sizeof(out->chain));
	}
	out->caps = c.caps;
	out->exp = c.exp;
	out->via_link = 1;
	out->link_port = c.port;
	sodium_memzero(&c, sizeof(c));
	return API_OK;
}

/* The jti of a link just minted, read back by the link verifier. */
static void
link_jti(struct front_backend *fb, const char *tok, char *out, size_t len)
{
	struct token_verifier *tv = link_verifier(fb);
	struct token_claims c;

	strlcpy(out, "?", len);
	if (tv != NULL && token_verify(tv, tok, strlen(tok), &c) == 0)
		strlcpy(out, c.jti, len);
	sodium_memzero(&c, sizeof(c));
}

/*
 * POST /v1/sandboxes/{id}/links: the route decided sandbox:read on the
 * sandbox; here the vmm says it is the caller's, the policy whether the
 * caller may give links to the port and for how long (a dry run with
 * DECIDE_LINK, audited whatever it says), and the policy process mints
 * the link, checking all of it again itself.
 */
static int
fb_port_link(void *arg, const struct api_call *call, const char *id,
    unsigned port, int64_t ttl_s, struct api_link *out, struct api_error *err)
{
	struct front_backend *fb = arg;
	struct fb_authz *a = call->authz;
	struct msg_policy_decision d;
	struct api_sandbox sb;
	struct api_token tok;
	char target[8], life[32], detail[API_MSG_MAX + 160];
	int64_t now = (int64_t)time(NULL), exp = now + ttl_s;
	int rc;

	memset(out, 0, sizeof(*out));
	if (a == NULL || a->link != PROC_VMM || port == 0 || port > 65535 ||
	    ttl_s < 0 || call->who->via_link)
		return fb_fail(err, API_EINTERNAL, "Internal error");
	memset(&sb, 0, sizeof(sb));
	rc = fb->ops.sandbox_get(fb, call, id, &sb, err);
	fb_kv_free(sb.metadata, sb.nmetadata);
	if (rc != API_OK)
		return rc;
	snprintf(target, sizeof(target), "%u", port);
	rc = fb_decide(fb, call->who, CAP_SANDBOX_READ, PROC_VMM, target,
	    a->reqid, DECIDE_PORT | DECIDE_LINK | DECIDE_DRY_RUN, &d, err);
	if (rc != API_OK)
		return rc;
	if (d.grant.decision != GRANT_ALLOW) {
		fb_audit_decision(fb, call, target, &d);
		if (d.reason == POLICY_R_TARGET)
			return fb_fail(err, API_EFORBIDDEN,
			    "Port %u may not be reached by link for %s by the "
			    "policy (an expose rule that says 'link' names "
			    "the ports a principal may give links to)",
			    port, call->who->sub);
		return fb_refusal(&d, CAP_SANDBOX_READ, err);
	}
	/* No ttl asked: an hour, or less if the rule or the caller's
	 * token ends sooner. */
	if (ttl_s == 0) {
		ttl_s = 3600;
		if ((uint64_t)ttl_s * 1000 > d.link_ms)
			ttl_s = (int64_t)(d.link_ms / 1000);
		if (call->who->exp != 0 && now + ttl_s > call->who->exp)
			ttl_s = call->who->exp - now;
		if (ttl_s <= 0)
			return fb_fail(err, API_EFORBIDDEN,
			    "The token asking for a link has expired");
		exp = now + ttl_s;
	}
	if ((uint64_t)ttl_s * 1000 > d.link_ms) {
		units_format_duration(life, sizeof(life), d.link_ms);
		snprintf(detail, sizeof(detail),
		    "refused: port %u, ttl %llds: the rule allows %s", port,
		    (long long)ttl_s, life);
		fb_audit_outcome(fb, call, "port.link", id, 0,
		    d.where[0] != '\0' ? d.where : "", detail, NULL);
		return fb_fail(err, API_EFORBIDDEN,
		    "A link to port %u lasts at most %s by the policy (%s)",
		    port, life, d.where[0] != '\0' ? d.where : "expose");
	}
	if (call->who->exp != 0 && exp > call->who->exp) {
		fb_audit_outcome(fb, call, "port.link", id, 0, "token",
		    "refused: the link would outlive the token asking", NULL);
		return fb_fail(err, API_EFORBIDDEN,
		    "A link cannot outlive the token that asks for it (it "
		    "expires in %llds)",
		    (long long)(call->who->exp - now));
	}
	memset(&tok, 0, sizeof(tok));
	rc = fb_mint_port(
	    fb, call, CAP_BIT(CAP_SANDBOX_READ), exp, id, port, &tok, err);
	if (rc != API_OK) {
		snprintf(detail, sizeof(detail), "refused: port %u: %s", port,
		    err->message);
		fb_audit_outcome(
		    fb, call, "port.link", id, 0, "token", detail, NULL);
		return rc;
	}
	link_jti(fb, tok.token, out->jti, sizeof(out->jti));
	/* The link's id and life, never the link: it is a credential. */
	snprintf(detail, sizeof(detail),
	    "minted: link %s to port %u, expires %lld", out->jti, port,
	    (long long)tok.expires_at);
	/* A credential is given out only once its entry is committed. */
	rc = fb_audit_outcome(fb, call, "port.link", id, 1,
	    d.where[0] != '\0' ? d.where : "", detail, err);
	if (rc != API_OK) {
		sodium_memzero(&tok, sizeof(tok));
		return rc;
	}
	strlcpy(out->token, tok.token, sizeof(out->token));
	out->expires_at = tok.expires_at;
	sodium_memzero(&tok, sizeof(tok));
	return API_OK;
}

void
fb_link_ops(struct api_backend *ops)
{
	ops->link_verify = fb_link_verify;
	ops->port_link = fb_port_link;
}
