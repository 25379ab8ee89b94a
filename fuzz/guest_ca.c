/*
 * Fuzz the added certificates' checks (docs/vmm.md "Added
 * certificates"): guest_ca_add (host/guest_ca.c: OpenSSL's PEM and X.509
 * parsers over an operator's file) and vmm_ca_text_ok (host/vmm/trust.c:
 * the text check the vmm and keep run make). Whatever guest_ca_add
 * takes, vmm_ca_text_ok must take too (the vmm would refuse it else), it
 * stays within GUEST_CA_MAX, and a refusal leaves what was there.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "host/guest_ca.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct guest_ca ca;
	char err[512];

	memset(&ca, 0, sizeof(ca));
	if (guest_ca_add(&ca, "fuzz", data, size, err, sizeof(err)) != 0) {
		if (ca.len != 0 || ca.count != 0 ||
		    memchr(err, 0, sizeof(err)) == NULL)
			abort();
		return 0;
	}
	if (ca.count == 0 || ca.len == 0 || ca.len > GUEST_CA_MAX ||
	    !vmm_ca_text_ok(ca.pem, ca.len))
		abort();
	return 0;
}
