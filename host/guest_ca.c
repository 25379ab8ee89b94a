/*
 * The certificates guests trust beside their image's (guest_ca.h): read
 * with OpenSSL's PEM and X.509 parsers, written again as OpenSSL's PEM.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "host/guest_ca.h"

/* The next PEM block of in: 1 with it, 0 at the end of the text, -1 when
 * what is there is not PEM. */
static int
next_block(BIO *in, char **name, char **header, unsigned char **data, long *len)
{
	unsigned long e;

	ERR_clear_error();
	if (PEM_read_bio(in, name, header, data, len) == 1)
		return 1;
	e = ERR_peek_last_error();
	ERR_clear_error();
	/* No further "-----BEGIN": the end (text between blocks, as in
	 * Debian's bundle, is allowed). */
	return ERR_GET_LIB(e) == ERR_LIB_PEM &&
	        ERR_GET_REASON(e) == PEM_R_NO_START_LINE
	    ? 0
	    : -1;
}

int
guest_ca_add(struct guest_ca *ca, const char *name, const uint8_t *text,
    size_t len, char *err, size_t errlen)
{
	BIO *in = NULL, *out = NULL;
	char *bname = NULL, *header = NULL;
	unsigned char *data = NULL;
	const unsigned char *p;
	const char *why = NULL;
	X509 *x = NULL;
	BUF_MEM *bm;
	unsigned n = 0;
	long dlen;
	int r;

	if (len > GUEST_CA_FILE_MAX || len > INT32_MAX) {
		snprintf(err, errlen, "%s: more than %d bytes", name,
		    GUEST_CA_FILE_MAX);
		return -1;
	}
	if ((in = BIO_new_mem_buf(text, (int)len)) == NULL ||
	    (out = BIO_new(BIO_s_mem())) == NULL) {
		why = "out of memory";
		goto done;
	}
	while ((r = next_block(in, &bname, &header, &data, &dlen)) == 1) {
		n++;
		if (strcmp(bname, PEM_STRING_X509) != 0)
			why = "a block that is not a CERTIFICATE";
		else if (header[0] != '\0')
			why = "a certificate with PEM headers";
		else if ((p = data, x = d2i_X509(NULL, &p, dlen)) == NULL ||
		    p != data + dlen)
			why = "a certificate OpenSSL does not read";
		else if (PEM_write_bio_X509(out, x) != 1)
			why = "out of memory";
		X509_free(x);
		x = NULL;
		OPENSSL_free(bname);
		OPENSSL_free(header);
		OPENSSL_free(data);
		bname = header = NULL;
		data = NULL;
		if (why != NULL)
			goto done;
	}
	if (r < 0)
		why = "not PEM";
	else if (n == 0)
		why = "no certificate";
	else if (BIO_get_mem_ptr(out, &bm) != 1 ||
	    bm->length > GUEST_CA_MAX - ca->len)
		why = "the certificates come to more than the 60 KiB guests "
		      "are given";
	else {
		memcpy(ca->pem + ca->len, bm->data, bm->length);
		ca->len += bm->length;
		ca->count += n;
	}
done:
	BIO_free(in);
	BIO_free(out);
	ERR_clear_error();
	if (why != NULL) {
		snprintf(err, errlen, "%s: %s (block %u)", name, why, n);
		return -1;
	}
	return 0;
}

int
guest_ca_add_file(struct guest_ca *ca, const char *path, int optional,
    char *err, size_t errlen)
{
	struct stat sb;
	uint8_t *buf;
	ssize_t got;
	size_t len = 0;
	int fd, rc;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY)) == -1) {
		if (optional && errno == ENOENT)
			return 0;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &sb) == -1 || !S_ISREG(sb.st_mode) ||
	    sb.st_size > GUEST_CA_FILE_MAX) {
		close(fd);
		snprintf(err, errlen,
		    "%s: not a regular file of at most %d bytes", path,
		    GUEST_CA_FILE_MAX);
		return -1;
	}
	if ((buf = malloc(GUEST_CA_FILE_MAX + 1)) == NULL) {
		close(fd);
		snprintf(err, errlen, "%s: out of memory", path);
		return -1;
	}
	/* One byte more than the bound: a file that grew is refused. */
	while (len <= GUEST_CA_FILE_MAX &&
	    (got = read(fd, buf + len, GUEST_CA_FILE_MAX + 1 - len)) != 0) {
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			snprintf(err, errlen, "%s: %s", path, strerror(errno));
			close(fd);
			free(buf);
			return -1;
		}
		len += (size_t)got;
	}
	close(fd);
	rc = guest_ca_add(ca, path, buf, len, err, errlen);
	free(buf);
	return rc;
}
