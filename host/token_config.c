/*
 * The token verifier's settings, the same for every process that checks
 * tokens (the front on each request, the policy process on attenuation).
 */
#include <string.h>

#include "host/msg.h"
#include "host/proc.h"
#include "token/paserk.h"
#include "token/token.h"

int
proc_token_config(const struct proc_ctx *ctx, struct token_key *keys,
    struct token_verifier_config *vc)
{
	uint32_t i, n = 0;

	if (ctx->token_keys == NULL || ctx->config == NULL)
		return -1;
	for (i = 0; i < ctx->token_keys->n && i < MSG_PUBKEYS_MAX; i++)
		if (paserk_public_decode(keys[n].pk, ctx->token_keys->keys[i],
		        strlen(ctx->token_keys->keys[i])) == 0)
			n++;
	memset(vc, 0, sizeof(*vc));
	vc->keys = keys;
	vc->nkeys = n;
	vc->audience = "keep";
	vc->skew = (int64_t)(ctx->config->token_clock_skew_ms / 1000);
	vc->max_lifetime = (int64_t)(ctx->config->token_max_ttl_ms / 1000);
	return 0;
}
