/*
 * Added certificates (docs/vmm.md "Added certificates"): the parent's
 * reading of guest.ca_file (host/guest_ca.c), the text check the vmm and
 * keep run make (vmm_ca_text_ok), and the VMM's overlay of the image's
 * CA bundles (vm_trust_apply, host/vmm/trust.c).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <sodium.h>

#include "host/guest_ca.h"
#include "host/vmm/vm_int.h"

/* A self-signed P-256 certificate made for this test by openssl. */
static const char cert[] =
    "-----BEGIN CERTIFICATE-----\n"
    "MIIBjjCCATOgAwIBAgIUeEPF0Naazo/cuxNeLxVVqH/z36swCgYIKoZIzj0EAwIw\n"
    "HDEaMBgGA1UEAwwRa2VlcCB1bml0IHRlc3QgQ0EwHhcNMjYxMjA2MDI0NTIyWhcN\n"
    "MzYxMjAzMDI0NTIyWjAcMRowGAYDVQQDDBFrZWVwIHVuaXQgdGVzdCBDQTBZMBMG\n"
    "ByqGSM49AgEGCCqGSM49AwEHA0IABJpddXLPPpFI8ULt4tMTl9lkErDwZ+kM5+T2\n"
    "0ClmIA3KmXt6ekd7DIaXgjKwXRSV9wnUodJGcMFwGWkaXy74bBejUzBRMB0GA1Ud\n"
    "DgQWBBSCUcXM2pGFxav3dYcy8xBalsAUrDAfBgNVHSMEGDAWgBSCUcXM2pGFxav3\n"
    "dYcy8xBalsAUrDAPBgNVHRMBAf8EBTADAQH/MAoGCCqGSM49BAMCA0kAMEYCIQDf\n"
    "xtLngCb2xefq7eoFikiENpuP7ZX3Lqndu9iMHiOpEQIhAO/XdEK0AxZsZHlPEtv6\n"
    "fl4Hrn9t9HX8Jl7KWpZRqAbg\n"
    "-----END CERTIFICATE-----\n";

static int
add(struct guest_ca *ca, const char *text, char *err, size_t errlen)
{
	return guest_ca_add(
	    ca, "t.pem", (const uint8_t *)text, strlen(text), err, errlen);
}

static void
test_guest_ca_add(void **state)
{
	static struct guest_ca ca;
	char err[256], buf[4096];
	size_t len;

	(void)state;
	memset(&ca, 0, sizeof(ca));
	/* Text between blocks, as in Debian's bundle, is dropped. */
	snprintf(buf, sizeof(buf), "# a comment\n%s\nmore text\n", cert);
	assert_int_equal(add(&ca, buf, err, sizeof(err)), 0);
	assert_int_equal(ca.count, 1);
	assert_int_equal(ca.len, strlen(cert));
	assert_memory_equal(ca.pem, cert, ca.len);
	assert_true(vmm_ca_text_ok(ca.pem, ca.len));
	len = ca.len;

	/* Each refusal names the block and leaves ca as it was. */
	snprintf(buf, sizeof(buf),
	    "%s-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
	    cert);
	assert_int_equal(add(&ca, buf, err, sizeof(err)), -1);
	assert_string_equal(
	    err, "t.pem: a block that is not a CERTIFICATE (block 2)");
	assert_int_equal(ca.len, len);
	assert_int_equal(ca.count, 1);
	assert_int_equal(add(&ca, "no PEM here\n", err, sizeof(err)), -1);
	assert_string_equal(err, "t.pem: no certificate (block 0)");
	assert_int_equal(add(&ca, "", err, sizeof(err)), -1);
	assert_int_equal(add(&ca,
	                     "-----BEGIN CERTIFICATE-----\nAAAA\n"
	                     "-----END CERTIFICATE-----\n",
	                     err, sizeof(err)),
	    -1);
	assert_string_equal(
	    err, "t.pem: a certificate OpenSSL does not read (block 1)");
	assert_int_equal(
	    add(&ca,
	        "-----BEGIN CERTIFICATE-----\nProc-Type: 4,ENCRYPTED\n"
	        "DEK-Info: AES-128-CBC,00000000000000000000000000000000\n\n"
	        "AAAA\n-----END CERTIFICATE-----\n",
	        err, sizeof(err)),
	    -1);
	assert_non_null(strstr(err, "PEM headers"));
	/* Half a block. */
	snprintf(buf, sizeof(buf), "%.*s", (int)(strlen(cert) / 2), cert);
	assert_int_equal(add(&ca, buf, err, sizeof(err)), -1);
	assert_int_equal(ca.len, len);

	/* The bound: certificates beyond 60 KiB in all are refused whole. */
	while (ca.len + strlen(cert) <= GUEST_CA_MAX)
		assert_int_equal(add(&ca, cert, err, sizeof(err)), 0);
	len = ca.len;
	assert_int_equal(add(&ca, cert, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "60 KiB"));
	assert_int_equal(ca.len, len);
	assert_true(vmm_ca_text_ok(ca.pem, ca.len));
}

static void
test_guest_ca_file(void **state)
{
	static struct guest_ca ca;
	char path[] = "/tmp/keep-guest-ca-XXXXXX", err[256];
	int fd;

	(void)state;
	memset(&ca, 0, sizeof(ca));
	assert_int_equal(
	    guest_ca_add_file(&ca, "/nonexistent/ca.pem", 1, err, sizeof(err)),
	    0);
	assert_int_equal(ca.len, 0);
	assert_int_equal(
	    guest_ca_add_file(&ca, "/nonexistent/ca.pem", 0, err, sizeof(err)),
	    -1);
	assert_non_null(strstr(err, "No such file"));
	assert_int_equal(
	    guest_ca_add_file(&ca, "/tmp", 0, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "not a regular file"));
	assert_true((fd = mkstemp(path)) >= 0);
	assert_int_equal(write(fd, cert, strlen(cert)), (ssize_t)strlen(cert));
	close(fd);
	assert_int_equal(guest_ca_add_file(&ca, path, 0, err, sizeof(err)), 0);
	assert_int_equal(ca.count, 1);
	/* A file over 256 KiB is refused before it is parsed. */
	assert_int_equal(truncate(path, GUEST_CA_FILE_MAX + 1), 0);
	assert_int_equal(guest_ca_add_file(&ca, path, 0, err, sizeof(err)), -1);
	assert_int_equal(ca.count, 1);
	unlink(path);
}

static void
test_ca_text_ok(void **state)
{
	static const char *const bad[] = {
		"",
		"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----",
		"x\n-----BEGIN CERTIFICATE-----\nAAAA\n-----END "
		"CERTIFICATE-----\n",
		"-----BEGIN CERTIFICATE-----\nAAAA\n",
		"-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n",
		"-----BEGIN CERTIFICATE-----\nAA A\n-----END "
		"CERTIFICATE-----\n",
		"-----BEGIN CERTIFICATE-----\nAAAA\n\n-----END "
		"CERTIFICATE-----\n",
		"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE "
		"KEY-----\n",
		"-----BEGIN CERTIFICATE-----\n-----BEGIN "
		"CERTIFICATE-----\nAAAA\n"
		"-----END CERTIFICATE-----\n",
		"-----BEGIN CERTIFICATE-----\nAAAA\n-----END "
		"CERTIFICATE-----\n\n",
		"-----BEGIN CERTIFICATE-----\r\nAAAA\n-----END "
		"CERTIFICATE-----\n",
	};
	static uint8_t big[VMM_CA_EXTRA_MAX + 4096];
	char line[200];
	size_t i, n = 0;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_false(
		    vmm_ca_text_ok((const uint8_t *)bad[i], strlen(bad[i])));
	assert_true(vmm_ca_text_ok((const uint8_t *)cert, strlen(cert)));
	memset(line, 'A', 77);
	snprintf(line + 77, sizeof(line) - 77, "\n");
	snprintf((char *)big, sizeof(big),
	    "-----BEGIN CERTIFICATE-----\n%s-----END CERTIFICATE-----\n", line);
	assert_false(vmm_ca_text_ok(big, strlen((char *)big)));
	while (n + strlen(cert) <= sizeof(big)) {
		memcpy(big + n, cert, strlen(cert));
		n += strlen(cert);
	}
	assert_true(n > VMM_CA_EXTRA_MAX);
	assert_false(vmm_ca_text_ok(big, n));
}

/* An image of four files, sorted, with an empty /etc/keep/ca.pem and the
 * same bundle at Debian's and OpenSSL's paths. */
static void
test_trust_apply(void **state)
{
	static const uint8_t bundle[] = "ORIGINAL ROOTS", other[] = "x\n";
	uint8_t hash[32], wrong[32];
	struct vmm_file files[] = {
		{ "/etc/keep/ca.pem", (const uint8_t *)"", 0, 0644, NULL, 0 },
		{ "/etc/ssl/certs/ca-certificates.crt", bundle,
		    sizeof(bundle) - 1, 0644, hash, 0 },
		{ "/usr/bin/x", other, 2, 0755, NULL, 0 },
		{ "/usr/lib/ssl/cert.pem", bundle, sizeof(bundle) - 1, 0644,
		    NULL, 0 },
	};
	struct vmm_file saved[4];
	struct vmm_config cfg;
	struct vm vm;
	char err[160];
	size_t clen = strlen(cert);

	(void)state;
	crypto_generichash(
	    hash, sizeof(hash), bundle, sizeof(bundle) - 1, NULL, 0);
	memcpy(saved, files, sizeof(files));
	memset(&cfg, 0, sizeof(cfg));
	cfg.files = files;
	cfg.nfiles = 4;
	cfg.files_sorted = 1;
	memset(&vm, 0, sizeof(vm));
	vm.cfg = &cfg;

	/* Nothing added: nothing copied. */
	assert_int_equal(vm_trust_apply(&vm, &cfg, err, sizeof(err)), VMM_OK);
	assert_ptr_equal(cfg.files, files);

	/* Not certificates: refused. */
	cfg.ca_extra = (const uint8_t *)"junk\n";
	cfg.ca_extra_len = 5;
	assert_int_equal(
	    vm_trust_apply(&vm, &cfg, err, sizeof(err)), VMM_E_INVAL);
	assert_ptr_equal(cfg.files, files);

	cfg.ca_extra = (const uint8_t *)cert;
	cfg.ca_extra_len = clen;
	assert_int_equal(vm_trust_apply(&vm, &cfg, err, sizeof(err)), VMM_OK);
	assert_ptr_not_equal(cfg.files, files);
	assert_memory_equal(files, saved, sizeof(files)); /* the caller's */
	/* The bundle: its bytes, a newline, the certificate. */
	assert_int_equal(cfg.files[1].len, sizeof(bundle) - 1 + 1 + clen);
	assert_memory_equal(cfg.files[1].data, bundle, sizeof(bundle) - 1);
	assert_int_equal(cfg.files[1].data[sizeof(bundle) - 1], '\n');
	assert_memory_equal(cfg.files[1].data + sizeof(bundle), cert, clen);
	assert_null(cfg.files[1].hash);
	/* The same bytes at OpenSSL's path: the same buffer. */
	assert_ptr_equal(cfg.files[3].data, cfg.files[1].data);
	assert_int_equal(cfg.files[3].len, cfg.files[1].len);
	/* /etc/keep/ca.pem: the certificate alone. */
	assert_int_equal(cfg.files[0].len, clen);
	assert_memory_equal(cfg.files[0].data, cert, clen);
	/* Anything else is the image's. */
	assert_memory_equal(&cfg.files[2], &files[2], sizeof(files[2]));
	vm_trust_free(&vm);
	assert_null(vm.trust_files);

	/* A bundle that does not match its hash refuses the boot. */
	memset(wrong, 0, sizeof(wrong));
	files[1].hash = wrong;
	cfg.files = files;
	memset(&vm, 0, sizeof(vm));
	vm.cfg = &cfg;
	assert_int_equal(
	    vm_trust_apply(&vm, &cfg, err, sizeof(err)), VMM_E_ELF);
	assert_string_equal(err,
	    "/etc/ssl/certs/ca-certificates.crt does not match its hash "
	    "(tampered image)");
	vm_trust_free(&vm);

	/* An image with none of the files: nothing copied. */
	cfg.files = &files[2];
	cfg.nfiles = 1;
	memset(&vm, 0, sizeof(vm));
	vm.cfg = &cfg;
	assert_int_equal(vm_trust_apply(&vm, &cfg, err, sizeof(err)), VMM_OK);
	assert_ptr_equal(cfg.files, &files[2]);
	assert_null(vm.trust_files);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_guest_ca_add),
		cmocka_unit_test(test_guest_ca_file),
		cmocka_unit_test(test_ca_text_ok),
		cmocka_unit_test(test_trust_apply),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
