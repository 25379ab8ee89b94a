/*
 * The egress context: configuration, the CA bundle, the injected clock,
 * sleep and resolver, and per-principal request counters. No globals, so
 * tests run several contexts side by side.
 */
#include <sys/socket.h>

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>

#include "host/egress/egress_int.h"
#include "lib/clock.h"
#include "lib/log.h"

static uint64_t
sys_clock(void *arg)
{
	(void)arg;
	return mono_ms();
}

static uint64_t
sys_wallclock(void *arg)
{
	(void)arg;
	return (uint64_t)time(NULL);
}

static void
sys_sleep(void *arg, uint64_t ms)
{
	struct timespec ts = { (time_t)(ms / 1000),
		(long)(ms % 1000) * 1000000 };

	(void)arg;
	while (nanosleep(&ts, &ts) == -1)
		;
}

int
egress_sys_resolve(void *arg, const char *host, uint16_t port,
    struct sockaddr_storage *out, size_t max, size_t *n)
{
	struct addrinfo hints, *res, *ai;

	(void)arg;
	(void)port;
	*n = 0;
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	if (getaddrinfo(host, NULL, &hints, &res) != 0)
		return EGRESS_E_RESOLVE;
	for (ai = res; ai != NULL && *n < max; ai = ai->ai_next) {
		if ((ai->ai_family != AF_INET && ai->ai_family != AF_INET6) ||
		    ai->ai_addrlen > sizeof(*out))
			continue;
		memset(&out[*n], 0, sizeof(out[*n]));
		memcpy(&out[*n], ai->ai_addr, ai->ai_addrlen);
		(*n)++;
	}
	freeaddrinfo(res);
	return *n > 0 ? 0 : EGRESS_E_RESOLVE;
}

int
egress_ctx_new(const struct egress_config *cfg, struct egress_ctx **out)
{
	struct egress_ctx *ctx;

	*out = NULL;
	if ((ctx = calloc(1, sizeof(*ctx))) == NULL)
		return EGRESS_E_NOMEM;
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		free(ctx);
		return EGRESS_E_INTERNAL;
	}
	if (cfg != NULL)
		ctx->cfg = *cfg;
	ctx->cfg.ca_blob = NULL;
	ctx->cfg.ca_path = NULL;
	if (cfg != NULL && cfg->ca_blob != NULL && cfg->ca_blob_len > 0) {
		if ((ctx->ca_blob = malloc(cfg->ca_blob_len)) == NULL)
			goto nomem;
		memcpy(ctx->ca_blob, cfg->ca_blob, cfg->ca_blob_len);
		ctx->ca_blob_len = cfg->ca_blob_len;
	}
	if (cfg != NULL && cfg->ca_path != NULL &&
	    (ctx->ca_path = strdup(cfg->ca_path)) == NULL)
		goto nomem;
	/* libcurl+OpenSSL would write TLS secrets where this points. */
	if (getenv("SSLKEYLOGFILE") != NULL)
		log_warnx("%s: SSLKEYLOGFILE is set; egress TLS keys may be "
		          "logged",
		    __func__);
	if (ctx->cfg.resolve == NULL)
		ctx->cfg.resolve = egress_sys_resolve;
	if (ctx->cfg.clock == NULL)
		ctx->cfg.clock = sys_clock;
	if (ctx->cfg.wallclock == NULL)
		ctx->cfg.wallclock = sys_wallclock;
	if (ctx->cfg.sleep == NULL)
		ctx->cfg.sleep = sys_sleep;
	*out = ctx;
	return 0;
nomem:
	egress_ctx_free(ctx);
	return EGRESS_E_NOMEM;
}

void
egress_ctx_free(struct egress_ctx *ctx)
{
	size_t i;

	if (ctx == NULL)
		return;
	for (i = 0; i < ctx->nprincipals; i++)
		free(ctx->principals[i].name);
	free(ctx->principals);
	free(ctx->ca_blob);
	free(ctx->ca_path);
	free(ctx);
	curl_global_cleanup();
}

static struct egress_principal *
principal_find(struct egress_ctx *ctx, const char *name)
{
	size_t i;

	for (i = 0; i < ctx->nprincipals; i++)
		if (strcmp(ctx->principals[i].name, name) == 0)
			return &ctx->principals[i];
	return NULL;
}

int
egress_principal_acquire(
    struct egress_ctx *ctx, const char *principal, unsigned max)
{
	struct egress_principal *p, *np;

	if (principal == NULL)
		principal = "";
	if ((p = principal_find(ctx, principal)) == NULL) {
		/* Reuse a slot whose count went back to zero. */
		for (size_t i = 0; i < ctx->nprincipals && p == NULL; i++)
			if (ctx->principals[i].count == 0) {
				char *s = strdup(principal);

				if (s == NULL)
					return EGRESS_E_NOMEM;
				free(ctx->principals[i].name);
				ctx->principals[i].name = s;
				p = &ctx->principals[i];
			}
	}
	if (p == NULL) {
		np = reallocarray(
		    ctx->principals, ctx->nprincipals + 1, sizeof(*np));
		if (np == NULL)
			return EGRESS_E_NOMEM;
		ctx->principals = np;
		p = &np[ctx->nprincipals];
		if ((p->name = strdup(principal)) == NULL)
			return EGRESS_E_NOMEM;
		p->count = 0;
		ctx->nprincipals++;
	}
	if (max != 0 && p->count >= max)
		return EGRESS_E_CONCURRENCY;
	p->count++;
	return 0;
}

void
egress_principal_release(struct egress_ctx *ctx, const char *principal)
{
	struct egress_principal *p;

	if (principal == NULL)
		principal = "";
	if ((p = principal_find(ctx, principal)) != NULL && p->count > 0)
		p->count--;
}

unsigned
egress_principal_count(struct egress_ctx *ctx, const char *principal)
{
	struct egress_principal *p;

	if (principal == NULL)
		principal = "";
	p = principal_find(ctx, principal);
	return p ? p->count : 0;
}
