/*
 * The egress process's table of runs' direct links (host/egress_runs.h).
 */
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "host/egress_runs.h"
#include "host/vmm/vmm.h"

void
egress_runs_init(struct egress_runs *t)
{
	size_t i;

	memset(t, 0, sizeof(*t));
	for (i = 0; i < EGRESS_RUNS_MAX; i++)
		t->run[i].fd = -1;
}

static int
terminated(const char *s, size_t cap)
{
	return memchr(s, '\0', cap) != NULL;
}

int
egress_runs_add(struct egress_runs *t, const struct msg_egress_run *m, int fd)
{
	struct egress_run *r = NULL;
	size_t i;

	if (m->run == 0 || !terminated(m->principal, sizeof(m->principal)) ||
	    !terminated(m->sandbox, sizeof(m->sandbox)) ||
	    !terminated(m->request_id, sizeof(m->request_id)))
		goto refuse;
	for (i = 0; i < EGRESS_RUNS_MAX; i++) {
		if (t->run[i].fd >= 0 && t->run[i].run == m->run)
			goto refuse;
		if (t->run[i].fd < 0 && r == NULL)
			r = &t->run[i];
	}
	if (r == NULL)
		goto refuse;
	memset(r, 0, sizeof(*r));
	r->fd = fd;
	r->run = m->run;
	strlcpy(r->principal, m->principal, sizeof(r->principal));
	strlcpy(r->sandbox, m->sandbox, sizeof(r->sandbox));
	strlcpy(r->request_id, m->request_id, sizeof(r->request_id));
	return 0;
refuse:
	close(fd);
	return -1;
}

void
egress_runs_drop(struct egress_runs *t, size_t i)
{
	struct egress_run *r = &t->run[i];

	if (r->fd >= 0)
		close(r->fd);
	sodium_memzero(r, sizeof(*r));
	r->fd = -1;
}

void
egress_runs_drop_all(struct egress_runs *t)
{
	size_t i;

	for (i = 0; i < EGRESS_RUNS_MAX; i++)
		if (t->run[i].fd >= 0)
			egress_runs_drop(t, i);
}

void
egress_runs_changed(struct egress_runs *t, uint64_t generation)
{
	size_t i;

	for (i = 0; i < EGRESS_RUNS_MAX; i++)
		if (t->run[i].fd >= 0)
			sodium_memzero(t->run[i].kept, sizeof(t->run[i].kept));
	t->generation = (uint32_t)generation;
	t->generation_known = 1;
}

int
egress_direct_parse(const uint8_t *buf, size_t n, struct msg_hdr *h,
    struct msg_egress_direct *q)
{
	if (n != sizeof(*h) + sizeof(*q))
		return -1;
	memcpy(h, buf, sizeof(*h));
	memcpy(q, buf + sizeof(*h), sizeof(*q));
	if (h->type != MSG_EGRESS_DIRECT || h->flags != 0 || h->pad != 0 ||
	    h->len != sizeof(*q))
		return -1;
	if (q->op < VMM_NET_CONNECT || q->op > VMM_NET_UDP_ADDR ||
	    q->port == 0 || q->pad != 0 ||
	    !terminated(q->name, sizeof(q->name)) || q->name[0] == '\0')
		return -1;
	return 0;
}

static int
same_destination(const struct msg_egress_name *a, uint32_t op, const char *name,
    uint16_t port)
{
	return a->op == op && a->port == port && strcmp(a->name, name) == 0;
}

void
egress_runs_keep(struct egress_runs *t, const struct msg_egress_name *q,
    uint64_t now_ms, uint64_t real_ms)
{
	struct egress_run *r = NULL;
	struct egress_run_kept *k;
	uint64_t ms = q->reuse_ms, left;
	size_t i;
	unsigned j;

	if (q->run == 0 || ms == 0 || !t->generation_known ||
	    q->generation != t->generation || q->op == VMM_NET_RESOLVE ||
	    q->grant.expires <= real_ms + EGRESS_RUN_MARGIN_MS)
		return;
	for (i = 0; i < EGRESS_RUNS_MAX && r == NULL; i++)
		if (t->run[i].fd >= 0 && t->run[i].run == q->run)
			r = &t->run[i];
	/* Only the run's own: its principal, sandbox and request as the
	 * link was made for (the audit names them from q). */
	if (r == NULL || strcmp(r->principal, q->principal) != 0 ||
	    strcmp(r->sandbox, q->sandbox) != 0 ||
	    strcmp(r->request_id, q->request_id) != 0)
		return;
	left = q->grant.expires - real_ms - EGRESS_RUN_MARGIN_MS;
	if (ms > left)
		ms = left;
	for (j = 0; j < EGRESS_RUN_REUSE_MAX; j++)
		if (r->kept[j].until_ms != 0 &&
		    same_destination(&r->kept[j].q, q->op, q->name, q->port))
			break;
	if (j == EGRESS_RUN_REUSE_MAX) {
		j = r->next;
		r->next = (r->next + 1) % EGRESS_RUN_REUSE_MAX;
	}
	k = &r->kept[j];
	k->q = *q;
	k->until_ms = now_ms + ms;
}

const struct msg_egress_name *
egress_runs_find(struct egress_runs *t, size_t i, uint32_t op, const char *name,
    uint16_t port, uint64_t now_ms, uint64_t real_ms)
{
	struct egress_run_kept *k;
	unsigned j;

	if (i >= EGRESS_RUNS_MAX || t->run[i].fd < 0)
		return NULL;
	for (j = 0; j < EGRESS_RUN_REUSE_MAX; j++) {
		k = &t->run[i].kept[j];
		if (k->until_ms == 0 ||
		    !same_destination(&k->q, op, name, port))
			continue;
		if (now_ms >= k->until_ms || !t->generation_known ||
		    k->q.generation != t->generation ||
		    k->q.grant.expires <= real_ms + EGRESS_RUN_MARGIN_MS) {
			sodium_memzero(k, sizeof(*k));
			return NULL;
		}
		return &k->q;
	}
	return NULL;
}
