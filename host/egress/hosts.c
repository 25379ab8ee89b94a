/*
 * A static hosts table consulted before DNS. The egress process runs in
 * an empty chroot where /etc/hosts does not exist; the parent sends this
 * table instead (egress.hosts_file), which is how the tests give loopback
 * addresses to names without touching the system resolver.
 */
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "host/egress/egress.h"

#define HOSTS_MAX 256

struct egress_host_entry {
	char name[EGRESS_HOST_MAX + 1];
	struct sockaddr_storage ss;
};

struct egress_hosts {
	struct egress_host_entry e[HOSTS_MAX];
	size_t n;
};

static int
parse_addr(const char *s, struct sockaddr_storage *ss)
{
	struct sockaddr_in *in4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, s, &in4->sin_addr) == 1) {
		in4->sin_family = AF_INET;
		return 0;
	}
	if (inet_pton(AF_INET6, s, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		return 0;
	}
	return -1;
}

static int
valid_name(const char *s, size_t n)
{
	size_t i;

	if (n == 0 || n > EGRESS_HOST_MAX)
		return 0;
	for (i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') ||
		        (s[i] >= 'A' && s[i] <= 'Z') ||
		        (s[i] >= '0' && s[i] <= '9') || s[i] == '-' ||
		        s[i] == '.'))
			return 0;
	return 1;
}

int
egress_hosts_parse(
    const char *text, size_t len, struct egress_hosts **out, size_t *line)
{
	struct egress_hosts *h;
	struct sockaddr_storage ss;
	char buf[512], *tok, *save, *hash;
	size_t off = 0, ln = 0, l;
	const char *nl;
	int have_addr;

	*out = NULL;
	*line = 0;
	if ((h = calloc(1, sizeof(*h))) == NULL)
		return EGRESS_E_NOMEM;
	while (off < len) {
		ln++;
		nl = memchr(text + off, '\n', len - off);
		l = nl ? (size_t)(nl - (text + off)) : len - off;
		if (l >= sizeof(buf) || memchr(text + off, '\0', l) != NULL)
			goto bad;
		memcpy(buf, text + off, l);
		buf[l] = '\0';
		off += l + (nl != NULL);
		if ((hash = strchr(buf, '#')) != NULL)
			*hash = '\0';
		have_addr = 0;
		for (tok = strtok_r(buf, " \t\r", &save); tok != NULL;
		     tok = strtok_r(NULL, " \t\r", &save)) {
			if (!have_addr) {
				if (parse_addr(tok, &ss) != 0)
					goto bad;
				have_addr = 1;
				continue;
			}
			if (!valid_name(tok, strlen(tok)) || h->n >= HOSTS_MAX)
				goto bad;
			strlcpy(h->e[h->n].name, tok, sizeof(h->e[h->n].name));
			h->e[h->n].ss = ss;
			h->n++;
		}
	}
	*out = h;
	return 0;
bad:
	*line = ln;
	free(h);
	return EGRESS_E_MSG;
}

void
egress_hosts_free(struct egress_hosts *h)
{
	free(h);
}

int
egress_hosts_lookup(const struct egress_hosts *h, const char *host,
    struct sockaddr_storage *out, size_t max, size_t *n)
{
	size_t i;

	*n = 0;
	for (i = 0; h != NULL && i < h->n && *n < max; i++)
		if (strcasecmp(h->e[i].name, host) == 0)
			out[(*n)++] = h->e[i].ss;
	return *n > 0 ? 0 : EGRESS_E_RESOLVE;
}

int
egress_hosts_resolve(void *arg, const char *host, uint16_t port,
    struct sockaddr_storage *out, size_t max, size_t *n)
{
	const struct egress_hosts *h = arg;

	if (egress_hosts_lookup(h, host, out, max, n) == 0)
		return 0;
	return egress_sys_resolve(NULL, host, port, out, max, n);
}

int
egress_resolv_parse(const char *text, size_t len, uint16_t port,
    struct sockaddr_storage *out, size_t max, size_t *n)
{
	char line[256], *tok, *save;
	const char *nl;
	size_t off = 0, l;
	struct sockaddr_in *in4;

	*n = 0;
	while (off < len && *n < max) {
		nl = memchr(text + off, '\n', len - off);
		l = nl ? (size_t)(nl - (text + off)) : len - off;
		if (l < sizeof(line) && memchr(text + off, '\0', l) == NULL) {
			memcpy(line, text + off, l);
			line[l] = '\0';
			tok = strtok_r(line, " \t\r", &save);
			if (tok != NULL && strcmp(tok, "nameserver") == 0 &&
			    (tok = strtok_r(NULL, " \t\r", &save)) != NULL) {
				memset(&out[*n], 0, sizeof(out[*n]));
				in4 = (struct sockaddr_in *)&out[*n];
				if (inet_pton(AF_INET, tok, &in4->sin_addr) ==
				    1) {
					in4->sin_family = AF_INET;
					in4->sin_port = htons(port);
					(*n)++;
				}
			}
		}
		off += l + (nl != NULL);
	}
	return 0;
}
