/*
 * Fuzz the egress hosts table (egress.hosts_file, host/egress/hosts.c).
 * Properties: nothing crashes or leaks; the first name of a table that
 * parses is found in it (egress_hosts_lookup: the table only, no DNS).
 * Also egress_resolv_parse on the same bytes.
 */
#include <sys/socket.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "host/egress/egress.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct egress_hosts *h = NULL;
	struct sockaddr_storage out[4];
	char name[EGRESS_HOST_MAX + 1], *p, *q;
	size_t line, n, len;

	(void)egress_resolv_parse((const char *)data, size, 53, out, 4, &n);
	if (n > 4)
		abort();
	if (egress_hosts_parse((const char *)data, size, &h, &line) != 0) {
		if (h != NULL)
			abort();
		return 0;
	}
	/* The first line with a name: look that name up in the table. */
	len = size < sizeof(name) - 1 ? size : sizeof(name) - 1;
	memcpy(name, data, len);
	name[len] = '\0';
	/* Fields are split on space, tab and CR, as the parser does. */
	if (name[0] != ' ' && name[0] != '\t' && name[0] != '\r' &&
	    (p = strpbrk(name, " \t\r")) != NULL) {
		p += strspn(p, " \t\r");
		q = p + strcspn(p, " \t\r\n#");
		*q = '\0';
		if (*p != '\0' && strchr(name, '#') == NULL &&
		    memchr(name, '\n', (size_t)(p - name)) == NULL &&
		    (size_t)(q - name) < len &&
		    egress_hosts_lookup(h, p, out, 4, &n) != 0)
			abort();
	}
	egress_hosts_free(h);
	return 0;
}
