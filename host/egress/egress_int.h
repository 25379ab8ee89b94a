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

#endif
