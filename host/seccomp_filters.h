/*
 * Per-process seccomp allowlists, kept as reviewed data in
 * host/seccomp_filters.c: one row per system call with the reason the
 * process keeps it. The default action is SECCOMP_RET_KILL_PROCESS.
 */
#ifndef KEEP_HOST_SECCOMP_FILTERS_H
#define KEEP_HOST_SECCOMP_FILTERS_H

#include <stddef.h>
#include <stdint.h>

/* A rule allows nr; with SCR_ARG set only when argument `arg` == val. */
#define SCR_ARG 0x1u

struct seccomp_rule {
	int nr; /* SCMP_SYS(name) */
	uint32_t flags;
	uint32_t arg;
	uint64_t val;
	const char *why;
};

struct seccomp_filter {
	const char *name;
	const struct seccomp_rule *rules;
	size_t nrules;
	/* Unlisted calls raise SIGSYS (SECCOMP_RET_TRAP) instead of killing
	 * the process. With no handler, SIGSYS kills it all the same; the
	 * difference is for the trap platform's stub, which inherits the
	 * filters of the processes it descends from and must see its
	 * guest's calls as SIGSYS, which a KILL action would outrank
	 * (docs/vmm.md, "The trap platform"). */
	int trap;
};

/* The rules every child keeps (framework, logging, malloc). */
extern const struct seccomp_filter seccomp_common;
extern const struct seccomp_filter seccomp_front;
extern const struct seccomp_filter seccomp_policy;
extern const struct seccomp_filter seccomp_vmm;
extern const struct seccomp_filter seccomp_store;
extern const struct seccomp_filter seccomp_egress;
/* A `keepd: vm` process: installed with SCF_NO_SOCKETS (vm_confine). */
extern const struct seccomp_filter seccomp_vm;
/* A template's holder, `keepd: template` (host/vmmproc/vmm_template.c). */
extern const struct seccomp_filter seccomp_template;
/* The vmm's namespace maker (host/vm_confine.h). */
extern const struct seccomp_filter seccomp_netns;
/* A sandbox's port connector (host/vmmproc/vmm_port.c). */
extern const struct seccomp_filter seccomp_port_connector;

/*
 * Install seccomp_common (minus its syslog rows with SCF_NO_SOCKETS) plus
 * f in the calling process (default: kill the process, or SIGSYS for a filter with trap set). Returns 0, or -1 with errno set (the filter is not loaded).
 */
int seccomp_filter_install(const struct seccomp_filter *f);

/* Without the syslog socket rows of seccomp_common (socket(AF_UNIX),
 * connect, sendto): for a process that logs to stderr only
 * (log_stderr_only) and must reach no socket but those it was given. */
#define SCF_NO_SOCKETS 0x1u
/* The internet families' sockets (a vm process in a network namespace
 * of its own, host/vm_confine.h); and, for the vmm, what makes that
 * namespace (unshare, lo up, capset). */
#define SCF_VM_NET 0x2u
#define SCF_VM_NETNS 0x4u

/* seccomp_filter_install with SCF_* flags. */
int seccomp_filter_install_flags(
    const struct seccomp_filter *f, unsigned flags);

/* Compile f with flags now, so that this process and its forks install
 * it later without compiling it again. 0, or -1 with errno set (a later
 * install then compiles it as usual). */
int seccomp_filter_prepare(const struct seccomp_filter *f, unsigned flags);

#endif
