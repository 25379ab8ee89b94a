/*
 * The appliance CA (docs/egress.md, "Secrets injected at egress"): a
 * P-256 key and a self-signed CA certificate, made once by the parent
 * under <state_dir>/keys/, and the leaf certificates the egress process
 * signs with it for the names whose TLS it terminates. OpenSSL's X509
 * functions; nothing of a guest's reaches this file but a host name the
 * policy and egress_url_parse already accepted.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sodium.h>

#include "host/egress/appca.h"

static EVP_PKEY *
p256_key(void)
{
	return EVP_EC_gen("P-256");
}

static int
add_ext(X509 *issuer, X509 *cert, int nid, const char *value)
{
	X509V3_CTX v3;
	X509_EXTENSION *ext;
	int rc;

	X509V3_set_ctx(&v3, issuer, cert, NULL, NULL, 0);
	if ((ext = X509V3_EXT_conf_nid(NULL, &v3, nid, value)) == NULL)
		return -1;
	rc = X509_add_ext(cert, ext, -1) == 1 ? 0 : -1;
	X509_EXTENSION_free(ext);
	return rc;
}

static int
random_serial(X509 *x)
{
	unsigned char b[16];
	BIGNUM *bn;
	int rc = -1;

	randombytes_buf(b, sizeof(b));
	b[0] &= 0x7f; /* positive */
	if ((bn = BN_bin2bn(b, sizeof(b), NULL)) != NULL &&
	    BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) != NULL)
		rc = 0;
	BN_free(bn);
	return rc;
}

/* PEM of a certificate or private key into a malloc'd buffer. */
static char *
to_pem(X509 *x, EVP_PKEY *k, size_t *len)
{
	BIO *b = BIO_new(BIO_s_mem());
	char *data = NULL, *out = NULL;
	long n = 0;

	if (b == NULL)
		return NULL;
	if ((x != NULL ? PEM_write_bio_X509(b, x)
	               : PEM_write_bio_PrivateKey(
	                     b, k, NULL, NULL, 0, NULL, NULL)) == 1 &&
	    (n = BIO_get_mem_data(b, &data)) > 0 &&
	    (out = malloc((size_t)n + 1)) != NULL) {
		memcpy(out, data, (size_t)n);
		out[n] = '\0';
		*len = (size_t)n;
	}
	/* A key's PEM is not left in the BIO's freed memory. */
	if (k != NULL && data != NULL && n > 0)
		OPENSSL_cleanse(data, (size_t)n);
	BIO_free(b);
	return out;
}

static int
write_file(const char *path, const char *data, size_t len, mode_t mode)
{
	char tmp[4096];
	int fd, rc = -1;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
		return -1;
	(void)unlink(tmp);
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)) ==
	    -1)
		return -1;
	if (write(fd, data, len) == (ssize_t)len && fsync(fd) == 0)
		rc = 0;
	close(fd);
	if (rc == 0 && rename(tmp, path) != 0)
		rc = -1;
	if (rc != 0)
		(void)unlink(tmp);
	return rc;
}

int
egress_appca_ensure(const char *key_path, const char *cert_path)
{
	struct stat st;
	EVP_PKEY *k = NULL;
	X509 *x = NULL;
	X509_NAME *n;
	char cn[64], *kp = NULL, *cp = NULL;
	uint8_t r[8];
	size_t kl = 0, cl = 0;
	int rc = -1;

	/* Both there: done. One of them: refused, never overwritten (an
	 * operator's key, or a certificate images already trust). */
	if (stat(key_path, &st) == 0 || stat(cert_path, &st) == 0)
		return stat(key_path, &st) == 0 && stat(cert_path, &st) == 0
		    ? 0
		    : -1;
	if ((k = p256_key()) == NULL || (x = X509_new()) == NULL ||
	    X509_set_version(x, 2) != 1 || random_serial(x) != 0 ||
	    X509_gmtime_adj(X509_getm_notBefore(x), -3600) == NULL ||
	    X509_gmtime_adj(X509_getm_notAfter(x), 10L * 366 * 86400) == NULL ||
	    X509_set_pubkey(x, k) != 1)
		goto out;
	randombytes_buf(r, sizeof(r));
	snprintf(cn, sizeof(cn), "keep appliance CA %02x%02x%02x%02x%02x%02x",
	    r[0], r[1], r[2], r[3], r[4], r[5]);
	n = X509_get_subject_name(x);
	if (X509_NAME_add_entry_by_txt(n, "O", MBSTRING_ASC,
	        (const unsigned char *)"keep", -1, -1, 0) != 1 ||
	    X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC,
	        (const unsigned char *)cn, -1, -1, 0) != 1 ||
	    X509_set_issuer_name(x, n) != 1 ||
	    add_ext(x, x, NID_basic_constraints,
	        "critical,CA:TRUE,pathlen:0") != 0 ||
	    add_ext(x, x, NID_key_usage, "critical,keyCertSign,cRLSign") != 0 ||
	    add_ext(x, x, NID_subject_key_identifier, "hash") != 0 ||
	    X509_sign(x, k, EVP_sha256()) == 0 ||
	    (kp = to_pem(NULL, k, &kl)) == NULL ||
	    (cp = to_pem(x, NULL, &cl)) == NULL)
		goto out;
	/* The key first: a certificate without its key would be trusted
	 * by the images and useless. */
	if (write_file(key_path, kp, kl, 0600) != 0 ||
	    write_file(cert_path, cp, cl, 0644) != 0)
		goto out;
	rc = 0;
out:
	if (kp != NULL) {
		sodium_memzero(kp, kl);
		free(kp);
	}
	free(cp);
	X509_free(x);
	EVP_PKEY_free(k);
	return rc;
}

static X509 *
read_cert(const void *pem, size_t len)
{
	BIO *b = BIO_new_mem_buf(pem, (int)len);
	X509 *x = b != NULL ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;

	BIO_free(b);
	return x;
}

static EVP_PKEY *
read_key(const void *pem, size_t len)
{
	BIO *b = BIO_new_mem_buf(pem, (int)len);
	EVP_PKEY *k =
	    b != NULL ? PEM_read_bio_PrivateKey(b, NULL, NULL, NULL) : NULL;

	BIO_free(b);
	return k;
}

int
egress_appca_check(
    const void *ca_pem, size_t ca_len, const void *key_pem, size_t key_len)
{
	X509 *ca = NULL;
	EVP_PKEY *k = NULL;
	int rc = -1;

	if (ca_len == 0 || ca_len > (1u << 20) || key_len == 0 ||
	    key_len > (1u << 20))
		return -1;
	if ((ca = read_cert(ca_pem, ca_len)) != NULL &&
	    (k = read_key(key_pem, key_len)) != NULL &&
	    X509_check_private_key(ca, k) == 1)
		rc = 0;
	X509_free(ca);
	EVP_PKEY_free(k);
	return rc;
}

int
egress_appca_leaf(const void *ca_pem, size_t ca_len, const void *key_pem,
    size_t key_len, const char *name, char **cert, size_t *cert_len, char **key,
    size_t *key_len_out)
{
	X509 *ca = NULL, *x = NULL;
	EVP_PKEY *cak = NULL, *k = NULL;
	char san[300];
	int rc = -1;

	*cert = *key = NULL;
	if (strlen(name) == 0 || strlen(name) > 253 ||
	    snprintf(san, sizeof(san), "DNS:%s", name) >= (int)sizeof(san) ||
	    (ca = read_cert(ca_pem, ca_len)) == NULL ||
	    (cak = read_key(key_pem, key_len)) == NULL ||
	    (k = p256_key()) == NULL || (x = X509_new()) == NULL ||
	    X509_set_version(x, 2) != 1 || random_serial(x) != 0 ||
	    X509_gmtime_adj(X509_getm_notBefore(x), -3600) == NULL ||
	    X509_gmtime_adj(X509_getm_notAfter(x), 7L * 86400) == NULL ||
	    X509_set_pubkey(x, k) != 1 ||
	    /* The name is in the SAN; a CN holds at most 64 bytes. */
	    (strlen(name) <= 64 &&
	        X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN",
	            MBSTRING_ASC, (const unsigned char *)name, -1, -1,
	            0) != 1) ||
	    X509_set_issuer_name(x, X509_get_subject_name(ca)) != 1 ||
	    add_ext(ca, x, NID_basic_constraints, "critical,CA:FALSE") != 0 ||
	    add_ext(ca, x, NID_key_usage, "critical,digitalSignature") != 0 ||
	    add_ext(ca, x, NID_ext_key_usage, "serverAuth") != 0 ||
	    add_ext(ca, x, NID_subject_alt_name, san) != 0 ||
	    add_ext(ca, x, NID_authority_key_identifier, "keyid:always") != 0 ||
	    X509_sign(x, cak, EVP_sha256()) == 0 ||
	    (*cert = to_pem(x, NULL, cert_len)) == NULL ||
	    (*key = to_pem(NULL, k, key_len_out)) == NULL)
		goto out;
	rc = 0;
out:
	if (rc != 0) {
		free(*cert);
		*cert = NULL;
		if (*key != NULL) {
			sodium_memzero(*key, *key_len_out);
			free(*key);
			*key = NULL;
		}
	}
	X509_free(ca);
	X509_free(x);
	EVP_PKEY_free(cak);
	EVP_PKEY_free(k);
	return rc;
}
