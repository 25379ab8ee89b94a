/*
 * The appliance CA (host/egress/appca.c; docs/egress.md, "Secrets
 * injected at egress"). Functions return 0 or -1.
 */
#ifndef KEEP_HOST_EGRESS_APPCA_H
#define KEEP_HOST_EGRESS_APPCA_H

#include <stddef.h>

/*
 * Parent side, at start: make the CA (a P-256 key, mode 0600, and a
 * self-signed certificate valid ten years, CA:TRUE, pathlen 0, mode
 * 0644) unless both files exist (0). Never overwrites one: with only
 * one of them there, -1.
 */
int egress_appca_ensure(const char *key_path, const char *cert_path);

/* Whether the PEM certificate and key belong together. */
int egress_appca_check(
    const void *ca_pem, size_t ca_len, const void *key_pem, size_t key_len);

/*
 * A leaf for `name` (a P-256 key, valid 7 days, SAN DNS:name,
 * serverAuth) signed by the CA: PEM certificate and key, malloc'd (the
 * caller zeroes the key before freeing it).
 */
int egress_appca_leaf(const void *ca_pem, size_t ca_len, const void *key_pem,
    size_t key_len, const char *name, char **cert, size_t *cert_len, char **key,
    size_t *leaf_key_len);

#endif
