/*
 * The egress process's table of runs' direct links (host/proc_egress.h,
 * MSG_EGRESS_RUN; docs/egress.md, "Direct links"): who each run is, as
 * the vmm said, and the connect decisions the policy let it reuse. Only
 * bookkeeping lives here; proc_egress.c reads the links and serves.
 */
#ifndef KEEP_HOST_EGRESS_RUNS_H
#define KEEP_HOST_EGRESS_RUNS_H

#include <stddef.h>
#include <stdint.h>

#include "host/proc_egress.h"

/* How close to its grant's expiry a kept decision is no longer used:
 * the vmm's margin (VMM_EGRESS_REUSE_MARGIN_MS), so a connect never
 * fails on an expiry in flight. */
#define EGRESS_RUN_MARGIN_MS 5000

struct egress_run_kept {
	uint64_t until_ms; /* CLOCK_MONOTONIC; 0: the slot is empty */
	struct msg_egress_name q; /* as the vmm sent it, grant and all */
};

struct egress_run {
	int fd; /* egress's end of the link; -1: the slot is free */
	uint64_t run;
	char principal[GRANT_PRINCIPAL_MAX];
	char sandbox[72];
	char request_id[40];
	struct egress_run_kept kept[EGRESS_RUN_REUSE_MAX];
	unsigned next; /* the slot the next new destination replaces */
};

struct egress_runs {
	struct egress_run run[EGRESS_RUNS_MAX];
	/* The policy generation in force, as MSG_POLICY_CHANGED said (its
	 * low 32 bits); nothing is kept until one came. */
	int generation_known;
	uint32_t generation;
};

void egress_runs_init(struct egress_runs *t);

/* A run's link (fd, now the table's): 0, or -1 when m is malformed,
 * its id is taken or the table is full (fd is then closed). */
int egress_runs_add(
    struct egress_runs *t, const struct msg_egress_run *m, int fd);

/* Close run i's link and forget it. */
void egress_runs_drop(struct egress_runs *t, size_t i);

/* Every link closed (a restarted vmm's runs are new ones). */
void egress_runs_drop_all(struct egress_runs *t);

/* A policy was loaded: no decision of an older generation is kept. */
void egress_runs_changed(struct egress_runs *t, uint64_t generation);

/* q was just served, its connect made: keep its decision for q->run's
 * link when the policy let it be reused and it is of the generation in
 * force; now_ms CLOCK_MONOTONIC, real_ms CLOCK_REALTIME. */
void egress_runs_keep(struct egress_runs *t, const struct msg_egress_name *q,
    uint64_t now_ms, uint64_t real_ms);

/*
 * A vm process's datagram on its direct link, n bytes (the link is the
 * vm's: anything may come): 0 and *h, *q for a well-formed
 * MSG_EGRESS_DIRECT (a connect op, a port, a terminated name), else -1.
 */
int egress_direct_parse(const uint8_t *buf, size_t n, struct msg_hdr *h,
    struct msg_egress_direct *q);

/* The decision run i keeps for op on name:port, or NULL (one spent,
 * expired or near its grant's expiry is forgotten). */
const struct msg_egress_name *egress_runs_find(struct egress_runs *t, size_t i,
    uint32_t op, const char *name, uint16_t port, uint64_t now_ms,
    uint64_t real_ms);

#endif
