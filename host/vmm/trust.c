/*
 * Certificates the operator added (vmm_config.ca_extra: keepd.yaml's
 * guest.ca_file and the appliance's CA) appended to the image's CA
 * bundles, so that OpenSSL, GnuTLS, curl, git, pip, requests and node
 * trust them as they trust the image's roots (docs/vmm.md "Added
 * certificates"). An image is signed and cannot change; the guest sees
 * each bundle as the image's bytes followed by the added ones.
 *
 * The run gets its own copy of the files' array in which each bundle
 * the image has is a buffer of this process: its bytes lie outside the
 * image mapping, so the guest's own answers (fastcall.c's index marks
 * such a file as not in the image) and the image's pages (imgmap.c)
 * leave it to the VMM's reads and copies, and stat gives its new size.
 * The image's bundle is checked against its hash before its bytes are
 * used.
 */
#include <stdlib.h>
#include <string.h>

#include "host/vmm/vm_int.h"

/* The bundles programs read, where Debian's and others' packages put
 * them; the image builder copies links, so each is a file of its own. */
static const char *const trust_paths[VM_TRUST_FILES] = {
	/* Debian's: curl, git (GnuTLS), python3-certifi and pip on Debian */
	"/etc/ssl/certs/ca-certificates.crt",
	/* OpenSSL's default CAfile on Debian (a link to the above):
	 * python's ssl, wget, openssl s_client */
	"/usr/lib/ssl/cert.pem",
	"/etc/ssl/cert.pem", /* Alpine's, and OpenSSL's where it is /etc/ssl */
	"/etc/pki/tls/certs/ca-bundle.crt", /* Fedora's, RHEL's */
	/* The added certificates alone, for a program that takes extra
	 * roots beside its own (node: NODE_EXTRA_CA_CERTS): an image that
	 * wants it has the file, empty. */
	VM_TRUST_ADDED,
};

int
vmm_ca_text_ok(const uint8_t *p, size_t len)
{
	static const char begin[] = "-----BEGIN CERTIFICATE-----",
	                  end[] = "-----END CERTIFICATE-----";
	size_t at = 0, n, i, blocks = 0;
	int in = 0; /* 0 outside a block, 1 after its BEGIN, 2 past a line */

	if (len == 0 || len > VMM_CA_EXTRA_MAX || p[len - 1] != '\n')
		return 0;
	while (at < len) {
		const uint8_t *line = p + at;

		for (n = 0; line[n] != '\n'; n++)
			;
		if (!in && n == sizeof(begin) - 1 &&
		    memcmp(line, begin, n) == 0)
			in = 1;
		else if (in == 2 && n == sizeof(end) - 1 &&
		    memcmp(line, end, n) == 0) {
			in = 0;
			blocks++;
		} else if (!in || n == 0 || n > 76)
			return 0;
		else {
			for (i = 0; i < n; i++)
				if (!((line[i] >= 'A' && line[i] <= 'Z') ||
				        (line[i] >= 'a' && line[i] <= 'z') ||
				        (line[i] >= '0' && line[i] <= '9') ||
				        line[i] == '+' || line[i] == '/' ||
				        line[i] == '='))
					return 0;
			in = 2;
		}
		at += n + 1;
	}
	return !in && blocks > 0;
}

int
vm_trust_apply(struct vm *vm, struct vmm_config *cfg, char *err, size_t errlen)
{
	const struct vmm_file *found[VM_TRUST_FILES];
	struct vmm_file *files;
	size_t i, k, any = 0;

	if (cfg->ca_extra == NULL || cfg->ca_extra_len == 0)
		return VMM_OK;
	if (!vmm_ca_text_ok(cfg->ca_extra, cfg->ca_extra_len)) {
		snprintf(err, errlen,
		    "added certificates: not PEM certificates of at most %d "
		    "bytes",
		    VMM_CA_EXTRA_MAX);
		return VMM_E_INVAL;
	}
	for (i = 0; i < VM_TRUST_FILES; i++) {
		found[i] =
		    vm_cfg_file(cfg, trust_paths[i], strlen(trust_paths[i]));
		any += found[i] != NULL;
	}
	if (!any)
		return VMM_OK;
	if (cfg->nfiles > SIZE_MAX / sizeof(*files) ||
	    (files = malloc(cfg->nfiles * sizeof(*files))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return VMM_E_NOMEM;
	}
	memcpy(files, cfg->files, cfg->nfiles * sizeof(*files));
	vm->trust_files = files;
	for (i = 0; i < VM_TRUST_FILES; i++) {
		const struct vmm_file *f = found[i];
		struct vmm_file *to;
		size_t len, sep;
		uint8_t *b;

		if (f == NULL)
			continue;
		if (vm_img_verify(vm, f) != 0) {
			snprintf(err, errlen,
			    "%s does not match its hash (tampered image)",
			    f->path);
			return VMM_E_ELF;
		}
		/* A bundle that does not end its last line gets one, or
		 * the first added line would join it. */
		sep = f->len > 0 && f->data[f->len - 1] != '\n';
		if (f->len > SIZE_MAX - 1 - cfg->ca_extra_len) {
			snprintf(err, errlen, "%s: too large", f->path);
			return VMM_E_NOMEM;
		}
		len = f->len + sep + cfg->ca_extra_len;
		/* The same bundle at two paths (Debian's, and OpenSSL's
		 * cert.pem) is one buffer. */
		for (k = 0, b = NULL; k < i && b == NULL; k++)
			if (found[k] != NULL && found[k]->len == f->len &&
			    memcmp(found[k]->data, f->data, f->len) == 0)
				b = vm->trust_bufs[k];
		if (b == NULL) {
			if ((b = malloc(len)) == NULL) {
				snprintf(err, errlen, "out of memory");
				return VMM_E_NOMEM;
			}
			memcpy(b, f->data, f->len);
			if (sep)
				b[f->len] = '\n';
			memcpy(
			    b + f->len + sep, cfg->ca_extra, cfg->ca_extra_len);
			vm->trust_bufs[i] = b;
		}
		to = &files[f - cfg->files];
		to->data = b;
		to->len = len;
		to->hash =
		    NULL; /* checked above; its bytes are this process's */
		to->pad = 0;
	}
	cfg->files = files;
	return VMM_OK;
}

void
vm_trust_free(struct vm *vm)
{
	size_t i;

	for (i = 0; i < VM_TRUST_FILES; i++) {
		free(vm->trust_bufs[i]);
		vm->trust_bufs[i] = NULL;
	}
	free(vm->trust_files);
	vm->trust_files = NULL;
}
