/* Internal to host/egress/: the context's layout. */
#ifndef KEEP_EGRESS_INT_H
#define KEEP_EGRESS_INT_H

#include "host/egress/egress.h"

struct egress_principal {
	char *name;
	unsigned count;
};

struct egress_ctx {
	struct egress_config cfg; /* ca_* cleared; owned copies below */
	void *ca_blob;
	size_t ca_blob_len;
	char *ca_path;
	struct egress_principal *principals;
	size_t nprincipals;
};

/* Resolution and the address checks for one destination (fetch.c):
 * 0 and *pin, or EGRESS_E_HOST, EGRESS_E_RESOLVE, EGRESS_E_ADDR_DENIED
 * (d->addr and d->addr_class say which). */
int egress_resolve_checked(struct egress_ctx *ctx, const struct egress_url *u,
    const struct egress_rule *rule, int prefer, struct sockaddr_storage *pin,
    socklen_t *pinlen, struct egress_decision *d);

#endif
