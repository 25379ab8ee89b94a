/*
 * Fuzz the egress hosts table (egress.hosts_file, host/egress/hosts.c).
 * Properties: nothing crashes or leaks; a table that parses answers a
 * lookup of any name without touching DNS when the name is in it (the
 * first name of the input, if it parsed, must resolve from the table).
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

	if (egress_hosts_parse((const char *)data, size, &h, &line) != 0) {
		if (h != NULL)
			abort();
		return 0;
	}
	/* The first line with a name: look that name up in the table. */
	len = size < sizeof(name) - 1 ? size : sizeof(name) - 1;
	memcpy(name, data, len);
	name[len] = '\0';
	if (name[0] != ' ' && name[0] != '\t' &&
	    (p = strpbrk(name, " \t")) != NULL) {
		p += strspn(p, " \t");
		q = p + strcspn(p, " \t\r\n#");
		*q = '\0';
		if (*p != '\0' && strchr(name, '#') == NULL &&
		    memchr(name, '\n', (size_t)(p - name)) == NULL &&
		    (size_t)(q - name) < len &&
		    egress_hosts_resolve(h, p, 443, out, 4, &n) != 0)
			abort();
	}
	egress_hosts_free(h);
	return 0;
}
