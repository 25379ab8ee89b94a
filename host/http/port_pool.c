/*
 * Kept connections to sandboxes' ports (host/http/port_pool.h). A small
 * array searched whole: it holds at most a few dozen.
 */
#include <sys/socket.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host/api/api.h"
#include "host/http/port_pool.h"

struct kept {
	int fd; /* -1: a free slot */
	uint64_t since;
	char key[API_PIPE_KEY_MAX];
};

struct port_pool {
	unsigned max, n;
	struct kept *k;
};

struct port_pool *
port_pool_new(unsigned max)
{
	struct port_pool *p;

	if (max == 0 || (p = calloc(1, sizeof(*p))) == NULL)
		return NULL;
	if ((p->k = calloc(max, sizeof(*p->k))) == NULL) {
		free(p);
		return NULL;
	}
	p->max = max;
	for (unsigned i = 0; i < max; i++)
		p->k[i].fd = -1;
	return p;
}

static void
drop(struct port_pool *p, struct kept *k)
{
	close(k->fd);
	k->fd = -1;
	p->n--;
}

void
port_pool_free(struct port_pool *p)
{
	if (p == NULL)
		return;
	for (unsigned i = 0; i < p->max; i++)
		if (p->k[i].fd >= 0)
			drop(p, &p->k[i]);
	free(p->k);
	free(p);
}

void
port_pool_put(struct port_pool *p, int fd, const char *key, uint64_t now)
{
	struct kept *slot = NULL, *oldest = NULL;

	if (strlen(key) >= sizeof(p->k[0].key)) {
		close(fd);
		return;
	}
	for (unsigned i = 0; i < p->max && slot == NULL; i++) {
		struct kept *k = &p->k[i];

		if (k->fd < 0)
			slot = k;
		else if (oldest == NULL || k->since < oldest->since)
			oldest = k;
	}
	if (slot == NULL) {
		drop(p, oldest);
		slot = oldest;
	}
	slot->fd = fd;
	slot->since = now;
	strlcpy(slot->key, key, sizeof(slot->key));
	p->n++;
}

/* Nothing has come from the server since its last answer: no end, no
 * byte (which would be no answer to anything we asked). */
static int
looks_open(int fd)
{
	char c;
	ssize_t n;

	do
		n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
	while (n == -1 && errno == EINTR);
	return n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

int
port_pool_take(struct port_pool *p, const char *key)
{
	for (;;) {
		struct kept *best = NULL;
		int fd;

		for (unsigned i = 0; i < p->max; i++) {
			struct kept *k = &p->k[i];

			if (k->fd >= 0 && strcmp(k->key, key) == 0 &&
			    (best == NULL || k->since >= best->since))
				best = k;
		}
		if (best == NULL)
			return -1;
		if (!looks_open(best->fd)) {
			drop(p, best);
			continue;
		}
		fd = best->fd;
		best->fd = -1;
		p->n--;
		return fd;
	}
}

void
port_pool_expire(struct port_pool *p, uint64_t now, uint64_t idle_ms)
{
	for (unsigned i = 0; i < p->max; i++)
		if (p->k[i].fd >= 0 && now - p->k[i].since >= idle_ms)
			drop(p, &p->k[i]);
}

unsigned
port_pool_count(const struct port_pool *p)
{
	return p->n;
}
