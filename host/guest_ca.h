/*
 * Certificates the guests trust beside their image's roots (docs/vmm.md
 * "Added certificates"): keepd.yaml's guest.ca_file, the appliance's CA
 * (<state_dir>/keys/appliance-ca.pem) when it exists, and keep run's
 * --ca-file. Each file is PEM; every block must be a certificate that
 * OpenSSL parses, and what the guests get is OpenSSL's own PEM of each
 * (no comments, no other bytes of the file), at most GUEST_CA_MAX bytes
 * in all.
 */
#ifndef KEEP_HOST_GUEST_CA_H
#define KEEP_HOST_GUEST_CA_H

#include <stddef.h>
#include <stdint.h>

#include "host/vmm/vmm.h"

#define GUEST_CA_MAX VMM_CA_EXTRA_MAX /* the PEM the guests get */
#define GUEST_CA_FILE_MAX (256 * 1024) /* one file as read */

struct guest_ca {
	uint8_t pem[GUEST_CA_MAX];
	size_t len;
	unsigned count; /* certificates */
};

/*
 * Append the certificates of len bytes of PEM text (name is for
 * messages) to ca. 0, or -1 with err set ("NAME: ...") and ca as it
 * was: a block that is not a CERTIFICATE (a key, say) or has headers, a
 * certificate OpenSSL does not parse, no certificate at all, or more
 * than GUEST_CA_MAX bytes in ca.
 */
int guest_ca_add(struct guest_ca *ca, const char *name, const uint8_t *text,
    size_t len, char *err, size_t errlen);

/*
 * guest_ca_add of the file at path (a regular file, at most
 * GUEST_CA_FILE_MAX bytes). With optional, a file that does not exist
 * is 0 and adds nothing.
 */
int guest_ca_add_file(struct guest_ca *ca, const char *path, int optional,
    char *err, size_t errlen);

#endif
