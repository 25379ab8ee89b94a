/*
 * The VMM: boots one static x86-64 Linux executable in a fresh KVM
 * micro-VM and serves its system calls on the host (docs/vmm.md).
 *
 * vmm_run() is the service function: one run in, one result out. It is
 * meant to be called in a process of its own (`keep run`, or the
 * per-guest `keepd: vm` process), because it installs a SIGALRM handler
 * for the timeout and the guest's effects are that process's.
 *
 * The guest is hostile. Every guest pointer and length goes through one
 * overflow-safe check (vmm_mem.c) before use; an exit the VMM does not
 * expect stops the guest with a reason; nothing the guest does can make
 * vmm_run() fail other than by returning a status.
 *
 * Functions return 0 or a VMM_E_* code.
 */
#ifndef KEEP_VMM_VMM_H
#define KEEP_VMM_VMM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum vmm_err {
	VMM_OK = 0,
	VMM_E_ELF =
	    -32000, /* the program (or its loader) is not a loadable ELF */
	VMM_E_KVM, /* /dev/kvm refused something; errno-based reason */
	VMM_E_NOMEM, /* host memory */
	VMM_E_INVAL, /* a caller's argument out of range */
	VMM_E_TOOBIG, /* the program does not fit the guest memory */
	VMM_E_TEMPLATE, /* a template ended before its ready call */
	VMM_E_SNAPSHOT /* a memory image could not be restored */
};

const char *vmm_strerror(int err);

/* How a run ended. */
enum vmm_status {
	VMM_EXITED = 0, /* exit_code is the guest's exit status */
	VMM_FAULT, /* an exception, triple fault or bad exit: see reason */
	VMM_TIMEOUT, /* wall-clock limit */
	VMM_OUTPUT_LIMIT /* wrote more than output_max */
};

/* A read-only file the guest can open at path (an image's files). */
struct vmm_file {
	const char *path; /* absolute */
	const uint8_t *data;
	uint64_t len;
	uint32_t mode; /* 0755 or 0644 */
	/* NULL, or the BLAKE2b-256 data must have: the VMM checks it when
	 * the guest first opens the file (an image with deferred hashes,
	 * docs/image-format.md) and stops the guest on a mismatch. */
	const uint8_t *hash;
	/* With hash: the bytes after data + len that must be zero, checked
	 * with it (struct image_file.pad). */
	uint64_t pad;
};

/*
 * The calling process into a network namespace of its own with only `lo`,
 * up, and with resolver 1 the guest resolver's socket there (vmm_dns_open) (host/vmm/netns.c; host/vm_confine.h's vm_confine_net says more):
 * 1 made, 0 not to be had here (err says why; nothing changed), -1 left
 * half way (err says why; the process must not run a guest).
 */
int vmm_netns_enter(int resolver, char *err, size_t errlen);

/*
 * In the network namespace just made or joined, while this process still
 * has its capabilities there (port 53 wants one): the guest resolver's
 * socket bound to 127.0.0.53:53 (SO_REUSEPORT: the sandbox's runs share
 * the namespace) and its shared name table, kept for vmm_dns_take.
 * Returns 0 or -1 (errno); the run then has no resolver.
 */
int vmm_dns_open(void);
/* What vmm_dns_open made, into cfg (dns_fd, dns_table); none: left
 * NULL. */
struct vmm_config;
struct dns_table;
void vmm_dns_take(struct vmm_config *cfg);

/* Output sink: called with each write to fd 1 or 2. */
typedef void (*vmm_output_fn)(void *arg, int fd, const void *buf, size_t len);

/* What runs the guest's instructions (docs/vmm.md): KVM, or the trap
 * platform (seccomp traps to this process, no KVM). AUTO: KVM when
 * kvm_fd is open, else trap. */
enum vmm_platform {
	VMM_PLATFORM_AUTO = 0,
	VMM_PLATFORM_KVM,
	VMM_PLATFORM_TRAP
};

/* "kvm", "trap" or "auto"; and back (-1: unknown). */
const char *vmm_platform_name(int platform);
int vmm_platform_parse(const char *name);

/* vmm_config.egress_net's operations. */
#define VMM_NET_RESOLVE 1
#define VMM_NET_CONNECT 2
/* A TCP connection to an address an address rule may allow; name is
 * its canonical text, "10.1.2.3" or "[fd00::1]" (docs/egress.md). */
#define VMM_NET_CONNECT_ADDR 3
/* A connected UDP socket to name:port (VMM_NET_UDP) or to an address
 * (VMM_NET_UDP_ADDR), by a rule that says `udp`. */
#define VMM_NET_UDP 4
#define VMM_NET_UDP_ADDR 5

/* vmm_config.egress_report's: why the vm process itself shut a
 * connection made through egress (docs/egress.md, "Names and
 * connections"). */
#define VMM_NET_TLS_NAME 1 /* its ClientHello named another server */
#define VMM_NET_TLS_NO_NAME 2 /* its ClientHello named none */
#define VMM_NET_TLS_MALFORMED 3 /* a handshake record, no ClientHello */
#define VMM_NET_NOT_TLS 4 /* on 443, bytes that are no TLS */
#define VMM_NET_BYTES 5 /* the run's egress bytes limit */
#define VMM_NET_BUDGET 6 /* its principal's egress budget */

struct vmm_config {
	int kvm_fd; /* an open /dev/kvm, or -1 */
	int platform; /* enum vmm_platform */
	const uint8_t *elf; /* the program */
	size_t elf_len;
	const char *const *argv; /* argv[0] included; NULL-terminated */
	const char *const *envp; /* NULL-terminated */
	const struct vmm_file *files; /* read-only files, may be NULL */
	size_t nfiles;
	/* Nonzero when the caller answers for files being strictly sorted
	 * by path (an image's, image_files_sorted): the VMM searches them
	 * as they are. Zero: it checks, and sorts an index if need be. */
	int files_sorted;
	/* NULL, or per file a byte the VMM sets once the file matched its
	 * hash: shared with the vmm process, which checks the file itself
	 * before it trusts the hint (vmmproc/vmm_images.c). */
	volatile uint8_t *file_hints;
	/* NULL, or per file a byte: nonzero when the caller answers for the
	 * file having matched its hash already (keep run's record of the
	 * files it checked, image/verified.h; keepd's vmm's verdicts, which
	 * it goes on setting while the run lasts); the VMM does not hash
	 * it. */
	const volatile uint8_t *files_checked;
	const char *workspace; /* host directory for the guest's files, or
				  NULL: only the read-only files exist */
	int workspace_fd; /* or an open directory (used when >= 0; vmm_run
			     takes its own duplicate) */
	/* The guest's first working directory: an absolute, normalized
	 * guest path the caller found to be a directory of the workspace
	 * (vmmproc/vmm_run.c); NULL: "/". */
	const char *cwd;
	int stdin_fd; /* -1: empty stdin */
	vmm_output_fn output; /* NULL: discard */
	void *output_arg;
	uint64_t memory; /* guest memory bytes, >= 4 MiB */
	uint64_t timeout_ms; /* 0: none */
	uint64_t output_max; /* bytes on fds 1 and 2 together; 0: none */
	uint64_t workspace_max; /* bytes the workspace may hold (its
				  allocated blocks, counted across runs);
				  0: none */
	uint64_t *workspace_count; /* NULL, or the count every run of the
				      workspace shares (8 bytes of shared
				      memory): runs at the same time count
				      each other's writes */
	unsigned max_files; /* open guest descriptors; 0: 1024 (at most
			      65536); RLIMIT_NOFILE reports it */
	unsigned max_procs; /* guest processes at once, the first included;
			     0: 64, at most 1024 */
	int trace; /* log every system call (debug) */
	/* KEEP_SYS_FETCH: relay one encoded egress request (egress_wire,
	 * host/egress/egress.h) and return the encoded reply (*reply
	 * malloc'd), or -1 when egress is unreachable. NULL: every fetch
	 * is refused with EACCES. */
	int (*fetch)(void *arg, const void *req, size_t len, void **reply,
	    size_t *reply_len);
	/* A guest's names and connections (host/vmm/dns.h, docs/egress.md
	 * "Names and connections"), with fetch_arg: op VMM_NET_RESOLVE
	 * (host/vmm_msg.h) asks whether name may be resolved (0 or
	 * -errno), VMM_NET_CONNECT for a TCP connection to name:port (0
	 * and a connected socket in *fd, or -errno), VMM_NET_CONNECT_ADDR
	 * the same to an address; *refused is 1 when
	 * the policy or egress refused. NULL: every name is refused. */
	int (*egress_net)(void *arg, int op, const char *name, uint16_t port,
	    int *fd, int *refused);
	/* A connect (not a query) asked of egress directly on the run's
	 * link (docs/egress.md, "Names and connections", 8), with
	 * fetch_arg: as egress_net, or 1 when egress keeps no decision for
	 * it and egress_net is to be asked. NULL: egress_net only. */
	int (*egress_direct)(void *arg, int op, const char *name, uint16_t port,
	    int *fd, int *refused);
	/* A connection through egress the vm process shut itself, why
	 * (VMM_NET_TLS_NAME ...), for the audit log: name:port, and the
	 * server name its ClientHello asked for ("" none). NULL: not
	 * reported (the run's result still says so). */
	void (*egress_report)(void *arg, int why, const char *name,
	    uint16_t port, const char *sni);
	/* Bytes out and in of the run's connections through egress
	 * together, its whole process tree's (the grant's egress_max,
	 * the policy's `egress bytes`); 0: no limit. */
	uint64_t egress_max;
	/* The principal's `egress budget`, shared by all its runs (the
	 * vmm's, mapped; host/vmmproc/vmm_budget.c); NULL: none. */
	struct vmm_egress_budget *egress_budget;
	void *fetch_arg;
	/* The guest's resolver: a table shared by the run's processes and a
	 * UDP socket bound to 127.0.0.53:53 in the run's network namespace
	 * (vmm_dns_open). dns_table NULL: none; 127.0.0.53 is then one
	 * more loopback address. */
	struct dns_table *dns_table;
	int dns_fd;
	/* The image file the files' data lies in, mapped whole at image_map
	 * (image_map_len bytes) from the read-only image_fd: private file
	 * mappings of its files are then its pages, copy-on-write, charged
	 * by the pages the guest touches (docs/vmm.md "Image pages").
	 * image_map NULL: such mappings are copies. */
	const uint8_t *image_map;
	uint64_t image_map_len;
	int image_fd;
	/* 1 where /proc is out of reach (keepd's confined vm processes):
	 * the pages of a released image mapping all count as touched. */
	int no_pagemap;
	/* 1: the guest's fds 0-2 are a terminal (docs/terminal.md), of
	 * the size *winsize (NULL: 80x24). */
	int tty;
	const volatile struct vmm_winsize *winsize;
	/* A live context's memory image (host/vmm/snapshot.h): with
	 * snap_save, SIGUSR1 pauses the guest at its next read of stdin
	 * into snap_out_fd (read-write, emptied first); with snap_restore,
	 * the booted guest is replaced by the image in snap_in_fd. */
	int snap_save, snap_out_fd;
	int snap_restore, snap_in_fd;
	/* The image was taken in another sandbox, whose workspace this
	 * one's is a copy of: its workspace files are opened by path, not
	 * refused for being other files (device and inode). */
	int snap_moved;
	/* 1: the run has a network namespace of its own with only `lo`
	 * (host/vm_confine.h, vm_confine_net): AF_INET and AF_INET6
	 * sockets and abstract AF_UNIX names are the guest's. 0: AF_UNIX
	 * paths in the workspace only. */
	int net;
	/* Certificates (PEM text, at most VMM_CA_EXTRA_MAX bytes) the guest
	 * trusts beside the image's own: appended to each of the image's CA
	 * bundles that host/vmm/trust.c names (docs/vmm.md "Added
	 * certificates"); NULL or 0 bytes: none. */
	const uint8_t *ca_extra;
	size_t ca_extra_len;
};

/* What vmm_config.ca_extra may hold: keepd's guest.ca_file and the
 * appliance's CA, as host/guest_ca.c bounds them (docs/keepd.yaml.5). */
#define VMM_CA_EXTRA_MAX (60 * 1024)

/* 1 when p[0..len) is what vmm_config.ca_extra may hold: 1 to
 * VMM_CA_EXTRA_MAX bytes of PEM CERTIFICATE blocks and nothing else
 * (lines of base64 between the BEGIN and END lines, each ending in a
 * newline), else 0. The text only: keepd's parent has OpenSSL parse
 * each certificate (host/guest_ca.c); the guest's TLS library parses
 * them again. */
int vmm_ca_text_ok(const uint8_t *p, size_t len);

/* A terminal's size (rows, columns), which the caller may change while
 * the guest runs (shared memory): TIOCGWINSZ reads it. */
struct vmm_winsize {
	uint16_t rows, cols;
};

/* A refused destination as a run's result names it: a DNS name (at most
 * 253), a colon and a port, and the NUL. */
#define VMM_EGRESS_WHAT 264

/* Bytes of a run's connections through egress: out (the guest sent),
 * in (it received), and used, egress_max's part taken (a send or
 * receive reserves its bytes first, and gives back what it did not
 * move). */
struct vmm_egress_bytes {
	uint64_t out, in, used;
};

/*
 * A principal's egress budget (the policy's `egress budget SIZE/unit`),
 * one page shared by the vmm and every vm process of the principal's
 * runs: `bytes` refilled per `period_ns`, kept as GCRA's one word, the
 * instant (CLOCK_MONOTONIC, ns) by which all that was taken is paid
 * back; a take may leave it at most period_ns ahead of now. The vmm
 * writes bytes and period_ns; the vm processes move tat_ns.
 */
struct vmm_egress_budget {
	uint64_t tat_ns;
	uint64_t bytes;
	uint64_t period_ns;
};

/* want bytes of the budget (with partial, as many as are left): how
 * many were taken, 0 when none are left; given back the same way. */
uint64_t vmm_egress_budget_take(
    struct vmm_egress_budget *, uint64_t want, int partial);
void vmm_egress_budget_give(struct vmm_egress_budget *, uint64_t n);

struct vmm_result {
	enum vmm_status status;
	int exit_code; /* VMM_EXITED */
	char reason[160]; /* "" or what stopped the guest */
	/* Set when the guest is about to run: a vm process that ends with
	 * status 0 without it ran nothing (a template's spare that lost
	 * its holder), which the vmm must not report as the run's exit 0. */
	uint32_t served;
	uint64_t boot_us; /* process-relative: VM created to first entry */
	uint64_t run_us; /* first entry to exit */
	uint64_t exits; /* VM exits */
	/* KVM_RUN's EFAULTs that the same entry again went past (kvm.c):
	 * the host failed a page of the guest it holds, once. */
	uint64_t efault_retries;
	uint64_t syscalls;
	/* Image files whose deferred hash the run's tree checked, none
	 * of them known checked before (keepd's log says it). */
	uint64_t files_hashed;
	/* The KVM memory slots of the first process's VM at the end,
	 * and their bytes (host/vmm/mem_slots.c). */
	uint64_t memslots, memslot_bytes;
	uint64_t peak_memory; /* guest bytes held (brk + mmap), image
				 pages counted only where touched */
	uint64_t output_bytes;
	uint32_t limits_hit; /* VMM_LIMIT_*: the tree met them on its way */
	/* VMM_LIMIT_EGRESS: the first destination refused, "name",
	 * "name:port" or "address:port" ("" when unknown). */
	char egress_refused[VMM_EGRESS_WHAT];
	/* Bytes the guest sent and received on its connections through
	 * egress (the whole tree's), and the part of egress_max spent. */
	struct vmm_egress_bytes egress_bytes;
	/* Set last by a keepd vm process, once its guest's processes are
	 * gone and its output is whole: the result is final, and what is
	 * left is the process's own exit (freeing the VM's memory, about a
	 * millisecond and a half for a python clone). */
	uint32_t done;
	/* cfg->snap_save: 1 the guest was saved and stopped, 2 it was
	 * stopped for a pause but could not be saved (reason says why). */
	uint32_t saved;
	uint32_t platform; /* enum vmm_platform the run had (never AUTO) */
};

/* Limits a run's process tree met without being stopped by them: a fork
 * refused at the process limit (EAGAIN), a mapping or fork refused at
 * the memory limit (ENOMEM). */
#define VMM_LIMIT_PROCESSES 0x1u
#define VMM_LIMIT_MEMORY 0x2u
#define VMM_LIMIT_EGRESS 0x4u /* a socket's destination outside */

/*
 * count += add - sub (a vmm_config.workspace_count), in one step and
 * floored at 0; a workspace too big to count (UINT64_MAX) stays so until
 * the next run's walk. For a change made beside the runs (keepd's file
 * API), which they must count too.
 */
void vmm_workspace_count_adjust(uint64_t *count, uint64_t add, uint64_t sub);

/* Whether this process's run has passed its time limit: a wait on
 * something outside the VMM (egress_net's) gives up then, and for no
 * other signal. */
int vmm_run_timed_out(void);

/* Boot, run to completion, tear down. Returns VMM_OK whenever the guest
 * ran (result says how it ended) or a VMM_E_* when it could not start. */
int vmm_run(const struct vmm_config *cfg, struct vmm_result *res, char *err,
    size_t errlen);

/*
 * Templates (docs/templates.md). vmm_template_boot boots cfg's program
 * (which must outlive the template, files included) until it makes its
 * ready call (KEEP_SYS_READY, guest/include/keep.h) and keeps it parked
 * in this process: VMM_OK and *out, or VMM_E_TEMPLATE (err says how the
 * guest ended instead) or another VMM_E_*. The boot's stdin, workspace
 * and output should be none: a template holds only what the image put
 * there.
 *
 * vmm_template_run is called in a process forked from the holder, once:
 * it runs one request on the copy-on-write copy of the template that
 * the fork gave, with run's argv, envp, workspace, stdin, output, limits
 * and fetch relay (the program, files and memory size are the
 * template's), and returns as vmm_run does, or VMM_E_TOOBIG when the
 * request does not fit the guest's buffer (at most
 * vmm_template_request_max bytes of argv and envp strings, NULs
 * included, always fit). The template in that process is used up; the
 * caller exits.
 *
 * vmm_template_prepare does the part of vmm_template_run that needs no
 * run, ahead of it (a spare copy waiting for its run: the VM rebuilt
 * over the inherited memory); vmm_template_run then skips it.
 *
 * vmm_template_memory: guest bytes the template holds (brk and mmap).
 */
struct vmm_template;
int vmm_template_boot(const struct vmm_config *cfg, struct vmm_template **out,
    char *err, size_t errlen);
int vmm_template_run(struct vmm_template *t, const struct vmm_config *run,
    struct vmm_result *res, char *err, size_t errlen);
int vmm_template_prepare(struct vmm_template *t, char *err, size_t errlen);
uint64_t vmm_template_request_max(const struct vmm_template *t);
uint64_t vmm_template_memory(const struct vmm_template *t);
/* In the holder, once the template is booted: fork a probe clone that
 * runs the guest's own probe (a ready request with no strings) with
 * KVM's dirty log on, and keep the pages it wrote, which each spare
 * prepared afterwards makes its own before its run. The number of pages
 * learnt, or -1 (spares then prepare as before). */
int vmm_template_learn(struct vmm_template *t);
void vmm_template_free(struct vmm_template *t);

/*
 * The host CPUs this process may run on (its affinity), read once, for
 * the guest's sched_getaffinity, /proc/cpuinfo and /proc/stat: guest
 * processes run in parallel on them (a process's threads share one).
 * Called before the vm processes' filters (keepd's vmm at its start,
 * `keep run` before its run); unread, the guest sees one CPU.
 */
void vmm_host_cpus_init(void);
/* The guest's CPU count, 1 to VM_CPUS_MAX: the host CPUs read above
 * (also whether a vm process's wait may look before it sleeps,
 * host/vmm_egress.c). */
unsigned vm_cpus(void);

/* KVM_GET_SUPPORTED_CPUID is slow (~0.3 ms here); vmm_run fetches it
 * once per process. Call this early to take the cost before timing. */
int vmm_prepare(int kvm_fd);

/* Whether the guest's vDSO may count the host's TSC, which needs the
 * host's clocksource from /sys, and the trap platform's TSC rate,
 * measured from now (docs/vmm.md "Time"): once, early, before the
 * process confines itself, in a process that boots guests or forks the
 * processes that do. Without it the vDSO stays off where /sys is out
 * of sight. */
void vmm_prepare_clocks(void);
/* The trap platform's once-per-process work (its stub's memfd, the
 * host's CPUID), for a process that forks the vm processes. */
int vmm_prepare_trap(void);
/* The trap stub's memfd once prepared (-1: none), for a process that
 * closes what it inherited to keep. */
int vmm_trap_stub_fd(void);

/* The same for a process that boots one guest and exits (`keep run`):
 * KVM's answer is read from, or else stored in, the file cache_path,
 * which is valid only for this boot and these KVM modules (cpuid.h).
 * A missing, foreign or stale file costs only the ioctl; a file that
 * cannot be written is no error. */
int vmm_prepare_cached(int kvm_fd, const char *cache_path);
/* The same for the trap platform: the host's CPUID, valid for this boot. */
int vmm_prepare_host_cached(const char *cache_path);

/* The guest's system calls, one Markdown table row each: number, name,
 * support (full, partial, refused with its errno) and why
 * (host/vmm/sys_table.c; `keep run --syscalls`). */
void vmm_print_syscalls(FILE *out);

#endif
