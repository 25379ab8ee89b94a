/*
 * Principals' egress budgets (docs/egress.md, "Bytes"): the policy's
 * `egress budget SIZE/unit` bounds the bytes out and in of all an
 * agent's runs together, refilled at SIZE per unit. The vmm keeps one
 * shared page per principal (struct vmm_egress_budget, host/vmm/vmm.h)
 * and gives it to each of the principal's runs; their vm processes take
 * from it as they move bytes (host/vmm/sock_egress.c). The parameters
 * are the latest grant's, so a policy reload applies at the next run.
 * Kept in memory only: a restarted vmm starts every budget full.
 */
#include <sys/mman.h>

#include "host/vmmproc/vmm_int.h"

struct vmm_egress_budget *
vmm_budget_map(int fd)
{
	void *p = mmap(NULL, sizeof(struct vmm_egress_budget),
	    PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	return p == MAP_FAILED ? NULL : p;
}

static void
budget_drop(struct vmm_budget *e)
{
	if (e->fd >= 0)
		close(e->fd);
	memset(e, 0, sizeof(*e));
	e->fd = -1;
}

int
vmm_budget_fd(struct vmm_state *vs, const struct grant *g)
{
	struct vmm_budget *e = NULL, *oldest = NULL;
	struct vmm_egress_budget *b;
	size_t i;

	if (g->egress_budget_kib == 0 || g->egress_budget_s == 0)
		return -1;
	for (i = 0; i < VMM_BUDGETS_MAX; i++) {
		struct vmm_budget *c = &vs->budgets[i];

		if (!c->used) {
			if (e == NULL)
				e = c;
			continue;
		}
		if (strcmp(c->principal, g->principal) == 0) {
			e = c;
			break;
		}
		if (oldest == NULL || c->last_ms < oldest->last_ms)
			oldest = c;
	}
	if (e == NULL) {
		/* Full: the principal whose last run is oldest starts over
		 * (said in the log; 256 principals with budgets at once). */
		log_warnx("%s: egress budgets full: %s's starts over", __func__,
		    oldest->principal);
		budget_drop(oldest);
		e = oldest;
	}
	if (!e->used) {
		e->fd = memfd_create("keep-egress-budget", MFD_CLOEXEC);
		if (e->fd == -1 ||
		    ftruncate(e->fd, sizeof(struct vmm_egress_budget)) == -1) {
			log_warn("%s: %s", __func__, g->principal);
			budget_drop(e);
			return -1;
		}
		e->used = 1;
		strlcpy(e->principal, g->principal, sizeof(e->principal));
	}
	if ((b = vmm_budget_map(e->fd)) == NULL) {
		log_warn("%s: %s", __func__, g->principal);
		return -1;
	}
	__atomic_store_n(
	    &b->bytes, (uint64_t)g->egress_budget_kib * 1024, __ATOMIC_SEQ_CST);
	__atomic_store_n(&b->period_ns,
	    (uint64_t)g->egress_budget_s * 1000000000u, __ATOMIC_SEQ_CST);
	munmap(b, sizeof(*b));
	e->last_ms = mono_ms();
	return e->fd;
}

void
vmm_budgets_close(struct vmm_state *vs, int keep)
{
	size_t i;

	for (i = 0; i < VMM_BUDGETS_MAX; i++) {
		struct vmm_budget *e = &vs->budgets[i];

		if (e->used && e->fd != keep)
			close(e->fd);
	}
}
