/*
 * keep-api-testserver: the real front (host/http + host/api) over the
 * in-memory fake backend, for the integration tests of `keep api` and for
 * bench/api. Not installed.
 *
 * usage: keep-api-testserver [-p PORT] [-P PORTFILE] [-t TOKEN]...
 *            [-s TOKEN:SUB:CAP,CAP...] [-e TOKEN] [-r SUB:N]
 *   -t  an admin token holding every capability
 *   -s  a token for SUB with the listed capabilities
 *   -e  an expired token
 *   -r  SUB gets 429 (Retry-After: 7) after N allowed decisions
 *   -c CERT -k KEY  serve TLS (PEM files, read before serving)
 *   -T MS  head, body and idle timeouts
 * With -p 0 the kernel picks the port; -P writes it to PORTFILE.
 */
#include <sys/socket.h>

#include <arpa/inet.h>
#include <err.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tls.h>
#include <unistd.h>

#include "tests/api_fake.h"
#include "host/http/front.h"
#include "lib/log.h"

static volatile int stop;

static void
on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static char *
slurp(const char *path, size_t *len)
{
	FILE *fp = fopen(path, "rb");
	char *buf;
	long n;

	if (fp == NULL || fseek(fp, 0, SEEK_END) != 0 || (n = ftell(fp)) < 0 ||
	    fseek(fp, 0, SEEK_SET) != 0 ||
	    (buf = malloc((size_t)n + 1)) == NULL) {
		if (fp != NULL)
			fclose(fp);
		return NULL;
	}
	*len = fread(buf, 1, (size_t)n, fp);
	fclose(fp);
	return buf;
}

static cap_set_t
parse_caps(const char *s)
{
	cap_set_t caps = 0;

	while (*s != '\0') {
		size_t n = strcspn(s, ",");
		int id = cap_lookup(s, n);
		if (id < 0)
			errx(2, "unknown capability in %s", s);
		caps |= CAP_BIT(id);
		s += n + (s[n] == ',');
	}
	return caps;
}

int
main(int argc, char **argv)
{
	struct sockaddr_in sin;
	socklen_t slen = sizeof(sin);
	struct api_backend be;
	struct front_limits lim;
	struct api_fake *fake;
	struct api *api;
	const char *portfile = NULL, *certfile = NULL, *keyfile = NULL;
	struct tls *tls = NULL;
	struct front *front;
	int ch, fd, one = 1, port = 8421;

	log_init(1, 0, "keep-api-testserver");
	if ((fake = api_fake_new(NULL, NULL)) == NULL)
		err(1, "api_fake_new");
	front_limits_default(&lim);
	while ((ch = getopt(argc, argv, "c:e:k:p:P:r:s:t:T:")) != -1) {
		char *a, *b;
		switch (ch) {
		case 'p':
			port = atoi(optarg);
			break;
		case 'c':
			certfile = optarg;
			break;
		case 'k':
			keyfile = optarg;
			break;
		case 'P':
			portfile = optarg;
			break;
		case 't':
			api_fake_add_token(
			    fake, optarg, "admin", CAP_ALL, NULL, 0);
			break;
		case 'e':
			api_fake_add_token(
			    fake, optarg, "expired", CAP_ALL, NULL, 1);
			break;
		case 's':
			if ((a = strchr(optarg, ':')) == NULL ||
			    (b = strchr(a + 1, ':')) == NULL)
				errx(2, "-s TOKEN:SUB:CAPS");
			*a++ = '\0';
			*b++ = '\0';
			api_fake_add_token(
			    fake, optarg, a, parse_caps(b), NULL, 0);
			break;
		case 'r':
			if ((a = strchr(optarg, ':')) == NULL)
				errx(2, "-r SUB:N");
			*a++ = '\0';
			api_fake_set_rate(fake, optarg, (unsigned)atoi(a), 7);
			break;
		case 'T':
			lim.head_timeout_ms = lim.body_timeout_ms =
			    lim.idle_timeout_ms = (uint64_t)atoi(optarg);
			break;
		default:
			fprintf(stderr,
			    "usage: keep-api-testserver [-p PORT] "
			    "[-P PORTFILE] [-t TOKEN] ...\n");
			return 2;
		}
	}
	if (certfile != NULL && keyfile != NULL) {
		char *cert, *key, msg[256];
		size_t certlen, keylen;

		/* As the parent would: read the files, hand over bytes. */
		if ((cert = slurp(certfile, &certlen)) == NULL ||
		    (key = slurp(keyfile, &keylen)) == NULL)
			err(1, "reading the certificate or key");
		tls = front_tls_server(
		    cert, certlen, key, keylen, msg, sizeof(msg));
		if (tls == NULL)
			errx(1, "tls: %s", msg);
		explicit_bzero(key, keylen);
		free(key);
		free(cert);
	}
	api_fake_backend(fake, &be);
	if ((api = api_new(&be, NULL)) == NULL)
		errx(1, "api_new");

	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		err(1, "socket");
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1)
		err(1, "bind 127.0.0.1:%d", port);
	if (listen(fd, 1024) == -1)
		err(1, "listen");
	getsockname(fd, (struct sockaddr *)&sin, &slen);
	if (portfile != NULL) {
		FILE *fp = fopen(portfile, "w");
		if (fp == NULL)
			err(1, "%s", portfile);
		fprintf(fp, "%d\n", ntohs(sin.sin_port));
		fclose(fp);
	}
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	signal(SIGPIPE, SIG_IGN);
	fprintf(stderr, "keep-api-testserver: listening on 127.0.0.1:%d\n",
	    ntohs(sin.sin_port));
	/* The loop by steps, so that deferred fake runs ("defer..." code)
	 * finish between them, as runs in the VMM would. */
	if ((front = front_new(fd, api, &lim, tls)) == NULL)
		err(1, "front_new");
	while (!stop) {
		if (front_step(front, 50) != 0)
			err(1, "front_step");
		api_fake_flush(fake);
	}
	front_free(front);
	if (tls != NULL)
		tls_free(tls);
	api_free(api);
	api_fake_free(fake);
	close(fd);
	return 0;
}
