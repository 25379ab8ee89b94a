/* Internals of the VMM shared by its files (host/vmm/). */
#ifndef KEEP_VMM_VM_INT_H
#define KEEP_VMM_VM_INT_H

#include <linux/kvm.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>

#include "host/vmm/elf.h"
#include "host/vmm/vmm.h"
#include "host/vmm/workspace.h"

#define VM_PAGE 4096ULL
#define VM_HUGE (2ULL << 20)
#define VM_PATH_MAX WS_PATH_MAX /* guest paths, NUL included */
#define VM_XSAVE_LEGACY 4096 /* struct kvm_xsave's region[1024] */
#define VM_MAX_FILES_DEFAULT 1024
#define VM_MAX_FILES_LIMIT 65536
#define VM_GUEST_ID 1000 /* the guest's uid and gid */
/* What uname(2) and /proc say the machine is (sys_proc.c, procfs.c). */
#define VM_UNAME_SYSNAME "Linux"
#define VM_UNAME_NODENAME "keep"
#define VM_UNAME_RELEASE "6.1.0-keep"
#define VM_UNAME_VERSION "#1 keep guest"
/* clock_t's tick (USER_HZ 100, as AT_CLKTCK tells the guest), in ns:
 * times(2), /proc/PID/stat, waitid's si_utime. */
#define VM_TICK_NS 10000000u
#define VM_PROC_COMM 16 /* a process's name, as Linux's comm, NUL included */
#define VM_PROC_CMDLINE 1024 /* of its argv shown to the tree's others */
#define VM_IO_CHUNK (1u << 20) /* the most one read or write moves */
#define VM_DIR_CHUNK (1u << 20) /* the most one getdents64 fills */
#define VM_UMASK_DEFAULT 022
#define VM_TERMIOS_BYTES 36 /* the kernel's struct termios */
#define VM_PIPE_MAX (1U << 20) /* F_SETPIPE_SZ: Linux's fs.pipe-max-size */
/* Trap: the program's read-only segments shared with the image, with
 * room for those an mprotect splits in two (imgmap.c). */
#define VM_IMGSEGS_MAX (2 * ELF_MAX_LOADS)

enum vfd_kind {
	VFD_FREE = 0,
	VFD_STDIN,
	VFD_OUT, /* stdout or stderr: the output sink */
	VFD_IMAGE, /* one of cfg->files, read-only */
	VFD_VDIR, /* a directory that exists only as a prefix of files */
	VFD_HOST, /* a workspace file or directory */
	VFD_DEV, /* /dev/null, /dev/zero, /dev/urandom (procfs.c) */
	VFD_SYNTH, /* a /proc file: bytes made when it was opened */
	VFD_SDIR /* a /proc or /dev directory: names made when opened */
};

enum vm_dev { VM_DEV_NULL = 1, VM_DEV_ZERO, VM_DEV_RANDOM };

/* Host objects behind a guest descriptor whose own calls take only
 * that kind (Linux's EINVAL for another): an inotify instance
 * (sys_inotify.c), a timerfd (sys_event.c). */
enum vm_anon { VM_ANON_NONE = 0, VM_ANON_INOTIFY, VM_ANON_TIMERFD };

struct vfd {
	enum vfd_kind kind;
	int outfd; /* VFD_OUT: 1 or 2 */
	const struct vmm_file *file; /* VFD_IMAGE */
	uint64_t off; /* VFD_IMAGE, VFD_SYNTH, VFD_VDIR and VFD_SDIR
			 (entries returned) */
	int hostfd; /* VFD_HOST */
	int pipe; /* VFD_HOST: a pipe's end, an eventfd, an epoll
		     instance or a socketpair's end (no path, no quota) */
	int sock; /* VFD_HOST: a socket (sys_socket.c), its SOCK_ type */
	/* VFD_HOST socket: bit i when the guest set sys_socket.c's
	 * sock_opts[i], the options a connection made for it elsewhere
	 * takes over (opts_copy). */
	uint64_t opts_set;
	int cloexec;
	int flags; /* O_ACCMODE | O_APPEND | O_NONBLOCK as opened */
	uint64_t dir_end; /* VFD_VDIR: off + 1 where its entries ran out
			     (0: not yet), for the guest's fast calls */
	enum vm_dev dev; /* VFD_DEV */
	/* VFD_SYNTH: the bytes (data points into owned or at the
	 * program); VFD_SDIR: "name\0" entries, each name after a
	 * one-byte DT_ type. */
	const uint8_t *data;
	uint64_t len;
	uint8_t *owned;
	char *path; /* normalized guest path (not for 0-2 at start) */
	/* VFD_HOST: a TCP socket connected through egress (sock_egress.c):
	 * keep's address of its name (0: none), its port; first: its first
	 * bytes are still to be judged, held (hello, malloc'd) until a
	 * ClientHello is whole; shut: the positive errno every later send
	 * and receive answers, once the VMM refused it. */
	uint32_t egress_addr;
	uint16_t egress_port;
	uint8_t egress_first;
	int egress_shut;
	uint8_t *hello;
	uint32_t hello_len;
	/* VFD_HOST: a socket egress made (sys_socket.c, docs/egress.md),
	 * which lives outside the sandbox's network namespace: never
	 * re-aimed, bound, listened on or passed; a UDP one's peer as the
	 * guest named it (egress_peerlen bytes of egress_peer). */
	uint8_t egress;
	uint8_t dns_tcp; /* a TCP connection to the guest resolver */
	uint8_t anon; /* VFD_HOST: enum vm_anon, what its own calls need */
	uint8_t egress_peerlen;
	uint8_t egress_peer[28]; /* a sockaddr_in or sockaddr_in6 */
};

/* The kernel's struct sigaction on x86-64 (rt_sigaction). */
struct vm_sigaction {
	uint64_t handler, flags, restorer, mask;
};

/* A process's signals (sys_signal.c). Bit sig-1 in every mask. */
struct vm_signals {
	struct vm_sigaction act[65]; /* by number; 0 unused */
	uint64_t blocked, pending;
	uint64_t saved; /* rt_sigsuspend: the mask to restore */
	int has_saved; /* blocked, saved, has_saved: the running thread's */
	uint64_t ss_sp, ss_size; /* sigaltstack; size 0: none */
	uint32_t ss_flags;
	uint64_t alarm_at_us, alarm_interval_us; /* ITIMER_REAL, vm_now_us */
	/* ITIMER_VIRTUAL and ITIMER_PROF: when they expire on the process's
	 * CPU time (user; user and system: cputime.c), ns, 0 disarmed, and
	 * their intervals; looked at every few ms of wall time while one is
	 * armed (cpu_poll_us, vm_now_us). */
	uint64_t cpu_timer_at[2], cpu_timer_interval[2];
	uint64_t cpu_poll_us;
};

/* A memory image's copy of the signals, its CPU-time timers as what
 * is left of them (sys_signal.c), and the restored ones counting on
 * from this process's CPU time. */
struct vm;
void vm_signal_saved(struct vm *, struct vm_signals *out);
void vm_signal_restored(struct vm *);

/* A KVM memory slot over guest [gpa, gpa+size) (mem_slots.c). */
struct vm_memslot {
	uint64_t gpa, size;
};
#define VM_MEMSLOTS_MAX 64

struct vm_trap;

/* The CA bundles trust.c appends added certificates to, and the file
 * that holds them alone (an image that wants it has it, empty). */
#define VM_TRUST_FILES 5
#define VM_TRUST_ADDED "/etc/keep/ca.pem"

struct vm {
	const struct vmm_config *cfg;
	struct vmm_result *res;
	/* The platform (docs/vmm.md): on_trap, the guest runs in a process
	 * of its own (trap.c) and vm->run is only the register file, in
	 * KVM's layout; else KVM, vmfd and vcpufd. */
	int on_trap;
	struct vm_trap *trap;
	int mem_fd; /* trap: the memfd behind mem, or -1 */
	int vmfd, vcpufd;
	struct kvm_run *run;
	size_t run_size;
	uint8_t *mem;
	uint64_t memsz;
	/* What KVM has slots for (mem_slots.c): [0, reach_lo) and
	 * [reach_hi, memsz). memslots are the current VM's, their numbers
	 * their indexes, while memslots_live; memslots_log: each logs the pages
	 * written (a template's probe). */
	uint64_t reach_lo, reach_hi;
	struct vm_memslot memslots[VM_MEMSLOTS_MAX];
	unsigned nmemslots;
	int memslots_live, memslots_log;
	struct elf_info elf; /* the program */
	struct elf_info interp; /* its PT_INTERP loader, if it has one */
	uint64_t interp_base; /* AT_BASE: 0 for a static program */
	uint64_t start; /* first RIP: the loader's entry, else the program's */
	/* Layout of the program's memory (docs/vmm.md). */
	uint64_t brk_start, brk_cur, brk_max;
	uint64_t mmap_lo, mmap_hi; /* page allocator range */
	/* One byte per page of [mmap_lo, mmap_hi): VM_PG_FREE, _HELD or
	 * _RESERVED (mem_space.c), set through vm_pages_mark; every page
	 * below mmap_low is free. It and mmap_file are mmap_maps_len bytes
	 * of their own mapping each (mem.c). */
	uint8_t *mmap_used;
	size_t mmap_low, mmap_maps_len;
	/* Pages in use (held or reserved, not the image's), and the peak
	 * of those held. */
	uint64_t mmap_pages_used, mmap_pages_peak;
	uint64_t mmap_reserved_pages; /* of mmap_pages_used: reserved */
	/* Address space beyond the memory limit for the program's
	 * PROT_NONE reservations: memsz less the limit (mem_space.c). */
	uint64_t reserve;
	uint64_t brk_peak;
	/* Bytes of brk and mmap pages (image pages included: each may
	 * become a copy) charged to this process in the tree's memory
	 * charge (proc.c), which the run's memory limit bounds. */
	uint64_t mem_charged;
	uint64_t stack_lo, stack_top;
	/* Where the initial stack holds the argument and environment
	 * strings (guest addresses): /proc/self's cmdline and environ are
	 * those bytes as the program has them now, as on Linux. */
	uint64_t arg_start, env_start, env_end;
	/* Files. */
	uint32_t *img_order; /* cfg->files by path (imgtree.c) */
	uint32_t *img_pos; /* per file: its place in img_order */
	uint8_t *img_checked; /* per file: its hash was checked */
	/* Added certificates (trust.c): the run's copy of cfg->files, in
	 * which the image's CA bundles are the buffers trust_bufs, or
	 * NULL. */
	struct vmm_file *trust_files;
	uint8_t *trust_bufs[VM_TRUST_FILES];
	struct vfd *fds;
	unsigned nfds;
	int ws_fd; /* the workspace directory, or -1 */
	/* inotify watches on paths that never change (sys_inotify.c). */
	unsigned inotify_still_wds;
	uint64_t *ws_used; /* bytes the workspace holds (docs/vmm.md), in a
			      page the run's process tree shares (or the
			      sandbox's runs: cfg->workspace_count); NULL:
			      no quota; UINT64_MAX: too big to count */
	int ws_used_own; /* ws_used is this VM's own mapping */
	unsigned umask; /* the guest's */
	unsigned host_umask; /* the process's, put back at the end */
	char cwd[VM_PATH_MAX];
	int stopped; /* the guest is done; res says how */
	uint64_t deadline_us; /* the run's time limit (vm_now_us), or 0 */
	/* The guest process tree (proc.c): one host process per guest
	 * process, all sharing one table. */
	struct vm_tree *tree;
	int slot; /* this process's row in tree->slot */
	int32_t pid, ppid; /* guest pids; the first process is 1 */
	/* sched_setaffinity's mask (0: every CPU) and personality's value:
	 * kept, inherited across fork and execve, and answered back; the
	 * host's scheduler and layout do not take them (sys_proc.c). */
	uint64_t cpu_mask;
	uint32_t personality;
	int is_child; /* forked: ends with _exit, never returns */
	unsigned nchildren; /* forked and not yet reaped by a wait */
	/* Host processes of children reaped from the tree's table, still
	 * ending (proc.c reap_later). */
	pid_t unreaped[8];
	unsigned nunreaped;
	int term_sig; /* killed by a guest kill of itself */
	int vfork_fd; /* a vfork child's pipe to its waiting parent, or -1 */
	/* The CPU time (ns, user and system) and the peak memory (KiB) of
	 * the children this process has reaped, theirs included
	 * (cputime.c). */
	uint64_t cpu_child[2], cpu_child_maxrss_kib;
	/* A vfork child's on the trap platform, until it execs: guest
	 * memory is its parent's memfd (vm_fork), whose map it may not
	 * change (sys_mem.c) and whose pages it never frees. */
	int mem_borrowed;
	/* While a vfork child adopts its parent's memory (trap.c): the host
	 * fork left this process the parent's view of it, the same memfd,
	 * protections and file mappings, so only the stub's is built. */
	int stub_view_only;
	struct vmm_result child_res; /* a child's own result */
	struct vm_exec *exec; /* what execve loaded (exec.c), or NULL */
	/* The run's own program was a "#!" script: its interpreter's
	 * configuration (vm_boot_script), which vm->cfg then points at. */
	struct vm_exec *boot;
	int regs_replaced; /* the last call set every register (execve,
			      rt_sigreturn): no return to the caller */
	uint64_t call_nr; /* the call whose return the registers hold (a
			     thread switch makes it the new thread's) */
	struct vm_signals sig;
	struct vm_threads *threads; /* sys_thread.c; NULL: one thread */
	uint64_t slice_at_us; /* the running thread's slice ends */
	uint64_t signal_retry_us; /* a signal that came inside the fast
				     calls is tried again (sys_signal.c) */
	uint64_t signal_held_us; /* since when (0: none held) */
	unsigned signal_holds; /* held at how many exits */
	int preempt_due; /* the slice ended inside a call: switch at its return */
	/* vm_thread_preempt put another thread on the vCPU, whose registers
	 * may hold its own call's return (call_nr): the next delivery
	 * restarts that call as its return says (sys_signal.c). */
	int switched_in;
	/* Templates (template.c): booting one, parked at its ready call
	 * (KEEP_SYS_READY) with the request buffer it gave, or a clone. */
	int template_state; /* VM_TPL_NONE, ... */
	int parked; /* the ready call was made: leave the vCPU loop */
	uint64_t ready_buf, ready_len;
	uint64_t vdso_sync_us; /* the vDSO's data page was last synced */
	/* fastcall.c: LSTAR is the fast calls' entry (the guest's syscall
	 * stays at CPL3); the first call was looked at; the index of the
	 * image's files was written; descriptors mirrored last time. */
	int fast, fast_probed, fast_index;
	int image_slot; /* the image's bytes are in the VM at
			   GUEST_IMAGE_GPA, read-only (fastcall.c) */
	unsigned fast_fds;
	/* mem_space.c counts every change of what is open; fastcall.c
	 * writes the open runs again when it moved. */
	uint64_t space_gen, fast_space_gen;
	/* Image pages (imgmap.c): per page of the mmap area, 1 when it is
	 * the image's page, copy-on-write (not in mmap_pages_used). */
	uint8_t *mmap_file;
	uint64_t mmap_file_pages, file_touched_pages;
	unsigned imgmaps; /* image mappings made by this process */
	/* Each image mapping made (imgmap.c), oldest first: what a page
	 * of the mmap area with its mmap_file byte set reads from, for a
	 * memory image (snapshot.c). */
	struct vm_imgrun *imgruns;
	unsigned nimgruns, imgruns_cap;
	/* Trap: the program's read-only segments the stub maps from the
	 * image (imgmap.c), and whether it may (imgshare: 1 yes, 0 no, as
	 * found for the descriptor imgshare_fd - 1). */
	struct vm_imgseg {
		uint64_t g, len, pos; /* pos: in the image file */
	} imgsegs[VM_IMGSEGS_MAX];
	unsigned nimgsegs;
	int imgshare, imgshare_fd;
	/* Shared mappings (shmap.c), in no order. */
	struct vm_shmap *shmaps;
	unsigned nshmaps, shmaps_cap;
	int pagemap_fd; /* /proc/self/pagemap of pagemap_pid */
	pid_t pagemap_pid;
	uint8_t
	    termios[VM_TERMIOS_BYTES]; /* cfg->tty: the terminal's (tty.c) */
};

/* An image mapping: len bytes at guest g from file (an index in
 * cfg->files) at off. */
struct vm_imgrun {
	uint64_t g, len, file, off;
};

enum {
	VM_TPL_NONE = 0,
	VM_TPL_BOOTING,
	VM_TPL_PARKED,
	VM_TPL_PREPARED, /* a copy with its VM rebuilt, waiting for a run */
	VM_TPL_CLONE
};

/* ---- tty.c: fds 0-2 as a terminal when cfg->tty ---------------------- */

void vm_tty_init(struct vm *);
int vm_tty_is(const struct vm *, const struct vfd *);
int64_t vm_tty_ioctl(struct vm *, struct vfd *, uint64_t req, uint64_t arg);
/* Input as the terminal's flags make it (ICRNL), in place. */
void vm_tty_input(struct vm *, const struct vfd *, uint8_t *buf, size_t n);
/* Output as they make it (ONLCR): 0 with *out NULL when unchanged, or
 * with *out (malloc) and *outlen the bytes to write instead; -1 no
 * memory. */
int vm_tty_output(struct vm *, const struct vfd *, const void *g, size_t len,
    uint8_t **out, size_t *outlen);

/* ---- clone.c: the vCPU's state, and a VM rebuilt around it ---------- */

/*
 * Everything of a vCPU that the guest can change and a new VM must
 * carry over. The rest (CPUID, MSRs, XCR0) is fixed by the VMM at boot
 * and rebuilt by vm_cpu_fixed; a CPL3 program cannot change it.
 */
struct vm_cpu_state {
	struct kvm_regs regs;
	struct kvm_sregs sregs;
	struct kvm_fpu fpu; /* x87, SSE; or, with XSAVE, the whole area: */
	/* KVM_GET_XSAVE's legacy 4096-byte area as bytes: newer kernel
	 * headers end struct kvm_xsave with a flexible array, which may not
	 * sit inside another struct (clang refuses it). Everything the VM's
	 * XCR0 enables (x87 to AVX-512, 2,688 bytes) fits in it. */
	_Alignas(64) uint8_t xsave[VM_XSAVE_LEGACY];
	int has_xsave;
	uint64_t tsc;
	/* trap: the signal frame's FPU area in xsave (0: none). */
	uint32_t trap_fpu_len;
};

/* Read the vCPU's state as of the last exit (registers from the synced
 * run area; FPU, XSAVE and TSC by ioctl). 0 or -1 (errno). */
int vm_cpu_capture(struct vm *, struct vm_cpu_state *);
/* Replace this process's VM by a new one over the same guest memory,
 * with the vCPU in the given state: the old VM's descriptors are closed
 * (in a forked process they were only references to the parent's). */
int vm_cpu_rebuild(
    struct vm *, const struct vm_cpu_state *, char *err, size_t errlen);
/* fork(2) for a guest: the child inherits guest memory copy-on-write
 * (with share, a vfork's child on the trap platform: the parent's own
 * memory, as Linux's vfork) and runs on a VM of its own built from the
 * captured state. Returns the child's host pid in the parent, 0 in the
 * child (on its new VM), -1 with errno on failure (nothing changed). */
pid_t vm_fork(struct vm *, const struct vm_cpu_state *, int share, char *err,
    size_t errlen);

/* ---- the platforms ---------------------------------------------------- */

/* kvm.c: what both loops share: a system call's service and return, and
 * a fault that no handler takes. */
void vm_on_syscall(struct vm *);
void vm_fault_stop(
    struct vm *, unsigned vector, uint64_t rip, uint64_t addr, uint64_t err);
/* The vCPU's x87 and SSE state, on either platform: 0 or -1. */
int vm_fpu_get(struct vm *, struct kvm_fpu *);
int vm_fpu_set(struct vm *, const struct kvm_fpu *);
/* sys_signal.c: struct kvm_fpu to and from the FXSAVE layout. */
void vm_fpu_to_fxsave(const struct kvm_fpu *, uint8_t x[512]);
void vm_fxsave_to_fpu(const uint8_t x[512], struct kvm_fpu *);

/* trap.c (docs/vmm.md, "The trap platform"). prepare: the stub's memfd,
 * once per process. mem_map: guest memory as a memfd mapped shared
 * (*fd), 2 MiB aligned. protect: what mem_space.c opens and closes
 * host-side, queued for the guest's mappings. drop_pages: contents
 * gone for both processes. create: start the stub over vm->mem and wait
 * for its boot (the loop's first reply gives vm->run's registers). drop:
 * stop it, free all; forget: a forked vm process lets its parent's go.
 * fork_copy: the parent's memory into a new memfd (the fd, or -1);
 * fork_adopt: the child maps it and opens what the parent had open. */
int vm_trap_prepare(void);
/* Bytes into guest memory at dst (a host address in vm->mem): on the
 * trap platform a large copy goes through the memfd (pwrite), which
 * fills its pages without a fault for each. */
void vm_mem_copy(struct vm *, void *dst, const void *src, size_t len);
uint8_t *vm_trap_mem_map(uint64_t size, int prot, int *fd);
void vm_trap_protect(struct vm *, uint64_t addr, uint64_t len, int open);
/* The stub maps fd (borrowed) at addr too, or guest memory again. */
int vm_trap_map_shared(
    struct vm *, uint64_t addr, uint64_t len, int fd, uint64_t off);
/* The stub maps fd (borrowed, read-only) at addr, read-only: 0 or -1. */
int vm_trap_map_readonly(
    struct vm *, uint64_t addr, uint64_t len, int fd, uint64_t off);
void vm_trap_restore(struct vm *, uint64_t addr, uint64_t len);
void vm_trap_forget_ops(struct vm *); /* execve: the old memory's */
int vm_trap_started(const struct vm *); /* its process is running */
/* The stub's host pid (0: none) and the CPU time of the stubs before it
 * (user, all; ns), for cputime.c. */
pid_t vm_trap_cpu(const struct vm *, uint64_t banked[2]);
int vm_trap_drop_pages(struct vm *, uint64_t addr, uint64_t len);
int vm_trap_create(struct vm *, char *err, size_t errlen);
void vm_trap_drop(struct vm *);
void vm_trap_forget(struct vm *);
void vm_trap_stop(struct vm *);
void vm_trap_blocking(struct vm *); /* a host call will block: stub, sleep */
void vm_trap_spare(struct vm *); /* about to block: start a spare stub */
void vm_trap_spare_given(struct vm *); /* a fork's child took the spares */
void vm_trap_spare_hint(struct vm *, int execed); /* a child reaped */
void vm_trap_loop(struct vm *);
int vm_trap_fpu_get(struct vm *, struct kvm_fpu *);
int vm_trap_fpu_set(struct vm *, const struct kvm_fpu *);
size_t vm_trap_fpu_area(struct vm *, uint8_t *out, size_t max);
void vm_trap_fpu_load_area(struct vm *, const uint8_t *area, size_t len);
int vm_trap_fork_copy(struct vm *);
int vm_trap_fork_adopt(struct vm *, int fd, char *err, size_t errlen);
int vm_trap_fork_child(struct vm *, int fd, char *err, size_t errlen);
/* mem_space.c: the host's rights over guest memory made again from the
 * tree's state (a fork's child on a new memfd): 0, or -1 with errno. */
int vm_space_reopen(struct vm *);
/* cpuid.c: the guest's CPUID on the trap platform: the host's own. */
int vm_cpuid_host(void);

/* kvm.c: create the VM and vCPU over vm->mem; drop them; the fixed
 * part of the vCPU's state; the time limit's timer. */
int vm_kvm_create(struct vm *, char *err, size_t errlen);
void vm_kvm_drop(struct vm *);
int vm_cpu_fixed(struct vm *);
void vm_timer_arm(struct vm *);
static inline int
vm_timed_out(void)
{
	return vmm_run_timed_out();
}
/* SIGINT, SIGTERM, SIGHUP from outside the run, as guest signal bits
 * (bit sig-1); take: and clear them. */
uint64_t vm_outside_signals(int take);
/* The host signals that wake a guest (SIGALRM, SIGUSR2 and those from
 * outside), for a wait that blocks them until ppoll takes them. */
void vm_wake_signals(sigset_t *);
/* The user code and stack segments into the synced registers. */
void vm_set_user_segments(struct vm *);
uint64_t vm_now_us(void);

/* kvm.c: vmm_run in two halves, for templates (template.c): build
 * the guest, its VM and its process table from vm->cfg (VMM_OK or a
 * VMM_E_*); then run the vCPU until the guest ends or parks (timer and
 * signal handlers set and restored around it). */
int vm_boot(struct vm *, char *err, size_t errlen);
void vm_serve(struct vm *);
void vm_teardown(struct vm *);

/* kvm.c: replace guest memory and the VM by a fresh boot of cfg's
 * program, argv and envp (cfg must outlive the program). 0; -1 when
 * nothing changed (err says why); -2 when the old program is gone but
 * the new VM could not be made. */
int vm_exec_image(
    struct vm *, const struct vmm_config *cfg, char *err, size_t errlen);

/* snapshot.c: a paused context's memory image (host/vmm/snapshot.h).
 * arm: take SIGUSR1 as the vmm's request (cfg->snap_save); asked: it
 * came; pause: save the guest, parked in a read of call nr, into
 * cfg->snap_out_fd and stop it (res->saved); restore: replace the
 * booted guest with the image in fd (0, or -1 with err). */
void vm_snap_arm(struct vm *);
int vm_snap_asked(const struct vm *);
void vm_snap_pause(struct vm *, uint64_t nr);
/* Stop the guest for a pause that cannot save it. */
void vm_snap_unsaved(struct vm *, const char *why);
int vm_snap_restore(struct vm *, int fd, char *err, size_t errlen);
/* sys_thread.c: whether the running thread is its process's only one. */
int vm_thread_alone(const struct vm *);
/* ---- cputime.c: a guest process's CPU time ------------------------------ */

/* A host process's CPU clocks (pid 0: this one): user time and all, ns;
 * 0 once it has ended. */
void vm_cpu_clock(pid_t pid, uint64_t *user, uint64_t *total);
/* The guest process whose vm process is vm_pid (0: this one) and whose
 * stub is stub_pid (trap; 0 on KVM), with the CPU time of its earlier
 * stubs: its user and system time, ns. */
void vm_cpu_of(pid_t vm_pid, pid_t stub_pid, const uint64_t banked[2],
    uint64_t *user, uint64_t *sys);
void vm_cpu_times(struct vm *, uint64_t *user, uint64_t *sys);
/* A guest's CPU clock id (clock_getcpuclockid's, pthread_getcpuclockid's,
 * negative) read: 0, or -1 for one that names no process or thread of
 * the tree. */
int vm_cpu_clock_of(struct vm *, int32_t id, uint64_t *user, uint64_t *sys);
uint64_t vm_cpu_maxrss_kib(const struct vm *);
/* A struct rusage into out (its size), from times in ns and KiB. */
void vm_cpu_rusage(uint64_t user, uint64_t sys, uint64_t maxrss_kib, void *out);

/* The process's thread ids, at most max (its /proc/PID/task): how many. */
int vm_thread_ids(const struct vm *, int32_t *tids, int max);

/* imgmap.c: len bytes of an image file at src mapped at guest g (a
 * read-only segment of the program): 0, or -1 and nothing mapped. */
int vm_imgmap_segment(
    struct vm *vm, const uint8_t *src, uint64_t g, uint64_t len);
/* imgmap.c: the image's pages from pos at g, for a memory image's
 * reference (snapshot.c): 0 mapped; 1 the caller copies them (on trap,
 * pages the guest could write, or an image the stub cannot map); -1
 * failed. */
int vm_imgmap_ref(
    struct vm *, uint64_t g, uint64_t len, uint64_t pos, int readonly);
/* imgmap.c: a new record at the end of vm->imgruns, or NULL. */
struct vm_imgrun *vm_imgrun_add(struct vm *);

/* trust.c: when cfg->ca_extra holds certificates and the image has
 * one of the CA bundles trust.c names, cfg->files becomes the run's own
 * copy in which each such bundle (its hash checked first) is followed by
 * them; cfg is the caller's copy, which vm->cfg points at. VMM_OK, or a
 * VMM_E_* with a reason in err. vm_trust_free (vm_teardown) frees what
 * it made. */
int vm_trust_apply(
    struct vm *, struct vmm_config *cfg, char *err, size_t errlen);
void vm_trust_free(struct vm *);

/* exec.c */
void vm_exec_free(struct vm *);
/* A script's "#!interp [arg]" line (the first 256 bytes of data, which
 * are the guest's): 0 with both NUL-terminated in their buffers (interp
 * non-empty, without blanks; arg trimmed, maybe empty), or -ENOEXEC. */
int vm_exec_shebang(const uint8_t *data, size_t len, char *interp, size_t ilen,
    char *arg, size_t alen);
/* Before the run's program loads: when it is a "#!" script of the image,
 * vm->cfg becomes a copy that starts its interpreter (an ELF of the
 * image) with argv "interp [arg] script argv[1..]", as execve does.
 * VMM_OK (also for an ELF, or for what is neither: load_program then
 * refuses it), or VMM_E_* with a reason in err. */
int vm_boot_script(struct vm *, char *err, size_t errlen);
void vm_boot_script_free(struct vm *);

/* ---- proc.c: the guest process tree ----------------------------------- */

int vm_proc_init(struct vm *);
/* At the end of vcpu_loop: a child reports and _exits; the first
 * process stops whatever is left of the tree. */
void vm_proc_finish(struct vm *);
/* Templates: whether this process is the run's only one so far; and a
 * fresh process table for a clone (the template's is left alone). */
int vm_proc_alone(struct vm *);
/* Whether this process is the tree's only one, alive or not. */
int vm_proc_only(struct vm *);
/* The process's only thread waits on another process (a child's end, a
 * vfork child's exec, a descriptor, a signal): waiting 1 before, 0
 * after. vm_proc_runs_alone: whether no other process of the tree is
 * running (not waiting) now, so a call may spin (trap.c). */
void vm_proc_waiting(struct vm *, int waiting);
int vm_proc_runs_alone(struct vm *);
int vm_proc_fresh(struct vm *);
/* The tree's memory charge, for this process: take bytes more (0, or
 * -ENOMEM past the run's memory limit), give bytes back. Before the
 * table exists, a charge always succeeds (vm_proc_init takes the sum). */
int vm_proc_mem_charge(struct vm *, uint64_t bytes);
void vm_proc_mem_uncharge(struct vm *, uint64_t bytes);
/* Signals queued for this process by others (taken or looked at), and
 * what it catches and ignores, for senders to see. */
uint64_t vm_proc_take_pending(struct vm *);
/* What the tree's /proc tells of its processes (procfs.c): each process
 * posts its program (at its start, path NULL, and after each execve),
 * its name (prctl) and its threads; vm_proc_view reads one process
 * (0 or -ENOENT), vm_proc_pids lists them (ascending, at most max;
 * returns how many there are), vm_proc_clock gives the tree's uptime,
 * the wall-clock instant it began and the last pid handed out. */
struct vm_proc_view {
	int32_t pid, ppid, pgid, sid, nthreads, nice;
	char state; /* 'R' the caller, 'S' another live one, 'Z' a zombie */
	uint64_t start_us; /* since the tree began */
	uint64_t mem; /* bytes charged */
	uint64_t cpu[2]; /* user and system time, ns (cputime.c) */
	uint64_t cpu_child[2]; /* the caller's reaped children's; else 0 */
	uint64_t pending, caught, ignored; /* bit sig-1 */
	char comm[VM_PROC_COMM];
	size_t cmdline_len;
	char cmdline[VM_PROC_CMDLINE];
};
void vm_proc_program(struct vm *, const char *path);
void vm_proc_set_name(struct vm *, const char *name);
void vm_proc_set_threads(struct vm *, int n);
/* A process's nice value (-20..19): 0, or -ESRCH for no such process of
 * the tree; set: 0, -ESRCH, or -EACCES to lower it. */
int vm_proc_nice(struct vm *, int32_t pid, int *nice);
int vm_proc_set_nice(struct vm *, int32_t pid, int nice);
int vm_proc_view(struct vm *, int32_t pid, struct vm_proc_view *);
size_t vm_proc_pids(struct vm *, int32_t *pids, size_t max);
void vm_proc_clock(
    struct vm *, uint64_t *uptime_us, uint64_t *boot_real_ns, int32_t *last);
/* A socket's destination outside the sandbox was refused: the run's
 * result says "egress" (whichever of its processes it was). */
/* proc.c: a destination outside refused ("name", "name:port", an
 * address and port): the run's limits say egress, and name the first. */
void vm_proc_egress_refused(struct vm *, const char *what);
/* The run's egress byte counts, the whole tree's: out, in, and the part
 * of cfg->egress_max taken (sock_egress.c). */
struct vmm_egress_bytes *vm_egress_counters(struct vm *);

/* Connections through egress (sock_egress.c). Before bytes iov (n)
 * go out on f: 0 to send them (then vm_egress_out_end with *reserved
 * and what was sent), > 0 when taken here (held until a ClientHello is
 * whole, or sent with those held), or -errno (refused: EACCES for a
 * ClientHello's name, ECONNRESET past the bytes limit). */
int64_t vm_egress_out_begin(struct vm *, struct vfd *f, const struct iovec *iov,
    size_t n, uint64_t *reserved);
void vm_egress_out_end(
    struct vm *, struct vfd *f, uint64_t reserved, int64_t sent);
/* Before a receive of up to want bytes on f: 0 with *allowed (at most
 * want; the caller receives no more), or -errno; then
 * vm_egress_in_end with what was received (peek: 0). */
int64_t vm_egress_in_begin(
    struct vm *, struct vfd *f, uint64_t want, uint64_t *allowed);
void vm_egress_in_end(
    struct vm *, struct vfd *f, uint64_t allowed, int64_t got);
/* A read or write of an egress socket through read/write and their
 * kin (fs.c): the same, around one host call. */
int64_t vm_egress_read(struct vm *, struct vfd *f, void *g, uint64_t len);
int64_t vm_egress_write(
    struct vm *, struct vfd *f, const void *g, uint64_t len);
/* writev's guest vectors v (cnt of them), judged and sent as one. */
int64_t vm_egress_writev(
    struct vm *, struct vfd *f, const uint64_t *v, uint64_t cnt);
uint64_t vm_proc_peek_pending(struct vm *);
void vm_proc_dispositions(struct vm *, uint64_t caught, uint64_t ignored);

/* ---- sys_signal.c: delivery ------------------------------------------- */

int vm_signal_default_ignored(int sig);
/* Whether sig would act: a handler, or a default that ends the process. */
int vm_signal_acts(const struct vm *, int sig);
/* Whether the process takes no wait status from its children (SIGCHLD
 * ignored, or SA_NOCLDWAIT): they leave no zombie (proc.c). */
int vm_signal_reaps_children(const struct vm *);
void vm_signal_raise(struct vm *, int sig); /* to this process */
void vm_signal_forked(struct vm *);
void vm_signal_exec(struct vm *);
/* Deliver a pending signal as the call nr returns, or after a kick out
 * of KVM_RUN. */
void vm_signal_after_syscall(struct vm *, uint64_t nr);
void vm_signal_after_kick(struct vm *);
/* The pending signals that would run a handler or end the process
 * (taking the table's and a due alarm in), blocked or not: those a
 * waiting thread wakes for. */
uint64_t vm_signal_acting(struct vm *);
/* Whether one of those is pending and not blocked by the running
 * thread: what cuts a sleep short with EINTR. */
int vm_signal_interrupts(struct vm *);
/* Before a blocking read or write of host descriptor hfd: wait until it
 * is ready (0), or -EINTR for a kick, one that came before the call as
 * well as during it (never slept through). */
int vm_signal_wait_fd(struct vm *, int hfd, short events);
/* The guest's poll of n host descriptors (a sleep where n is 0) for at
 * most timeout_ns (-1: no limit): ppoll's count, -EINTR for a signal
 * the guest acts on or the run's end (never slept through), or -errno.
 * Nothing else ends it early. */
struct pollfd;
int vm_signal_wait_fds(
    struct vm *, struct pollfd *, size_t n, int64_t timeout_ns);
/* An exception the program has a handler for: 1 when delivered. ec:
 * the error code of a #PF (bit 0 set: the page is present, the access
 * was refused, SEGV_ACCERR, as a write to a read-only page). */
int vm_signal_fault(struct vm *, unsigned vector, uint64_t rip, uint64_t rsp,
    uint64_t rflags, uint64_t addr, uint64_t ec);

/* The guest pid of the run's live process whose vm process is host pid
 * hp, or 0. */
int32_t vm_guest_pid_of(struct vm *, pid_t hp);
/* A fresh thread id from the run's pid space. */
int32_t vm_proc_new_tid(struct vm *);

/* ---- sys_thread.c: threads on the one vCPU ------------------------- */

int64_t vm_thread_clone(struct vm *, uint64_t flags, uint64_t newsp,
    uint64_t ptid, uint64_t ctid, uint64_t tls);
void vm_thread_reset(struct vm *);
/* Whether tid is a thread of this process (its main thread's is the pid). */
int vm_thread_is_mine(struct vm *, int32_t tid);
/*
 * A call that would block in the host, from a process with other
 * threads: park the running thread until one of fds (host descriptors,
 * at most 16) is ready, and then issue its call again; or until
 * deadline_us (vm_now_us; 0 none), when the call returns timeout_ret;
 * or until a signal (-EINTR). timeout_ret VM_PARK_AGAIN: the call is
 * issued again at its deadline too (a wait with nothing to poll looks
 * again now and then). 1 when parked (the caller returns at once and
 * its value is not used); 0 when the process has no other thread and
 * the caller blocks itself.
 */
#define VM_PARK_AGAIN INT64_MIN
struct pollfd;
int vm_thread_park(struct vm *, const struct pollfd *fds, int n,
    uint64_t deadline_us, int64_t timeout_ret);
/* Park for a blocking read (POLLIN) or write (POLLOUT) on one host
 * descriptor that is not ready now and not O_NONBLOCK; 1 when parked. */
int vm_thread_park_fd(struct vm *, int hostfd, short events);
/* After a kick out of KVM_RUN: the next thread if the slice is over. */
void vm_thread_preempt(struct vm *);
/*
 * pause and rt_sigsuspend from a process with other threads: park the
 * running thread until a signal its mask (vm->sig.blocked, as the call
 * set it) lets through, its call then returning EINTR. 1 when parked
 * (the caller's value is not used); 0 when the thread is alone and the
 * caller waits itself.
 */
int vm_thread_sigwait(struct vm *);
/* The running thread's deadline for a call it issues again while
 * parked (0: none set yet), or NULL in a process without a thread table. */
uint64_t *vm_thread_call_deadline(struct vm *);
/* At each delivery, sigs those pending that act: a thread parked by
 * vm_thread_sigwait that lets one through becomes the running thread,
 * to take it (the one that ran is kept runnable, between two
 * instructions; its call nr, if it returned EINTR and again is set,
 * made again when it runs), unless the running one was just woken from
 * such a wait to take it. 1 when switched. */
int vm_thread_take_signal(struct vm *, uint64_t sigs, uint64_t nr, int again);
/* What was sent to the running thread alone (tgkill), or NULL in a
 * process without a thread table (its one thread takes the process's). */
uint64_t *vm_thread_pending(struct vm *);
/*
 * A signal to one thread of a process that has others (tgkill): pending
 * for that thread alone, which takes it when it runs; a waiting one is
 * woken if it does not block sig and acts is set (the signal has a
 * handler or a default that ends the process). 1 when sent so; 0 when
 * the process's one thread is meant (or tid is none of its threads), a
 * signal to the process.
 */
int vm_thread_signal(struct vm *, int32_t tid, int sig, int acts);
/* Drop sigs from every thread's own pending set (a disposition set to
 * ignore them). */
void vm_thread_discard(struct vm *, uint64_t sigs);

/* Output bytes of the whole tree (fs.c counts writes to fds 1 and 2). */
uint64_t *vm_output_counter(struct vm *);

/* Guest memory: NULL unless [addr, addr+len) lies wholly in the
 * program's memory (never the kernel's first 2 MiB). */
void *vm_gptr(struct vm *, uint64_t addr, uint64_t len);
/* Copy a NUL-terminated guest string; 0 or -EFAULT / -ENAMETOOLONG. */
int vm_gstr(struct vm *, uint64_t addr, char *out, size_t max);

/* fastcall.c: the calls the guest answers itself (guest/fastcall.h).
 * LSTAR for this VM; the code and an empty data page, at boot; at the
 * first system call, whether to use them; before the first stat the VMM
 * answers itself, the index; before every entry of the vCPU, the data;
 * as every exit begins, what the guest did to its descriptors itself;
 * as a file is found to match its hash, the index; whether RIP is in
 * the code (no signal is delivered there); the image's bytes, read-only. */
uint64_t vm_fast_lstar(const struct vm *);
void vm_fast_install(struct vm *);
void vm_fast_probe(struct vm *);
void vm_fast_index(struct vm *, uint64_t nr);
void vm_fast_sync(struct vm *);
int vm_fast_reap(struct vm *); /* 1: it made a change the guest made */
int vm_fast_keeps(uint64_t nr);
void vm_fast_checked(struct vm *, size_t file);
int vm_fast_inside(const struct vm *, uint64_t rip);
void vm_fast_image_slot(struct vm *);

/* vdso.c: the vDSO's address for AT_SYSINFO_EHDR (0: none); its image
 * and a disabled data page into fresh guest memory; the data page set
 * from the vCPU's TSC and the host's clocks (once the vCPU exists, and
 * again on every VM rebuilt around the guest); and again at a system call a
 * second or more after the last. */
uint64_t vm_vdso_base(void);
void vm_vdso_install(struct vm *);
void vm_vdso_sync(struct vm *);
void vm_vdso_tick(struct vm *);
void vm_vdso_follow_wall(struct vm *);

/* imgmap.c: a guest mmap of an image file at g as the image's own
 * pages, copy-on-write: the bytes so mapped from g on (whole pages of
 * the file; 0: none), for the caller to copy the rest; or -ENOMEM.
 * Release:
 * image pages in a range become anonymous zeroes again, charged if
 * touched (held: counted as pages the guest holds from now on).
 * Settle: release them all at the end of the run. */
int64_t vm_imgmap(
    struct vm *, int fd, uint64_t g, uint64_t len, uint64_t off, int writable);
void vm_imgmap_release(struct vm *, uint64_t addr, uint64_t len, int held);
/* Trap: image pages in [addr, addr + len) that the guest's process maps
 * read-only (an mmap without PROT_WRITE, the program's read-only
 * segments) become guest memory's own, holding the same bytes, before
 * the guest may write them (mprotect) or the VMM writes them for it.
 * Refork: map them all again over a fork's or a clone's new memory, in
 * both processes; 0 or -1. No-ops under KVM. */
void vm_imgmap_unshare(struct vm *, uint64_t addr, uint64_t len);
int vm_imgmap_refork(struct vm *);

/* shmap.c: MAP_SHARED as the host file's own pages (docs/vmm.md,
 * "Shared mappings"). vm_shmap maps fd (borrowed) at g over memory the
 * guest holds; 0 or -errno. vm_shmap_release gives [addr, addr + len)
 * guest memory's own pages back, before anything drops or zeroes them;
 * refork maps them again in a forked child's new memory (trap). */
int64_t vm_shmap(struct vm *, int fd, uint64_t g, uint64_t len, uint64_t off);
int64_t vm_shmap_anon(struct vm *, uint64_t g, uint64_t len);
void vm_shmap_release(struct vm *, uint64_t addr, uint64_t len);
int vm_shmap_holds(const struct vm *, uint64_t addr);
int vm_shmap_overlaps(const struct vm *, uint64_t addr, uint64_t len);
int vm_shmap_refork(struct vm *);
void vm_shmap_forget(struct vm *);
void vm_imgmap_settle(struct vm *);

/* KEEP_SYS_FETCH (fetch.c, guest/include/keep.h). */
int64_t vm_keep_fetch(struct vm *, uint64_t addr, uint64_t size);

/* Place and copy the program's PT_INTERP loader from the image's files
 * (loader.c); once the memory layout is set. VMM_OK or a VMM_E_*. */
int vm_load_interp(struct vm *, char *err, size_t errlen);
/* cfg's file at path[0..len) (exactly; path need not end with a NUL), or
 * NULL: a binary search when cfg->files_sorted, else a walk. */
const struct vmm_file *vm_cfg_file(
    const struct vmm_config *cfg, const char *path, size_t len);

/* An image's default environment: the file VM_IMAGE_ENV, lines
 * NAME=VALUE ('#' starts a comment line), appended after the caller's
 * variables, which override it. *out (NULL-terminated, *n entries) is
 * freed with vm_image_env_free. 0 (no file is fine), or -1 when the
 * file is malformed or too large. */
#define VM_IMAGE_ENV "/etc/keep/environment"
#define VM_IMAGE_ENV_MAX 16384
#define VM_IMAGE_ENV_LINES 64
int vm_image_env(struct vm *, char ***out, size_t *n);
void vm_image_env_free(char **v);
/* The parser under vm_image_env, pure (fuzz/vmm_env.c): the file's
 * len bytes, the caller's variables envp (NULL-terminated, or NULL). */
int vm_env_parse(const uint8_t *data, size_t len, const char *const *envp,
    char ***out, size_t *n);

/* The page allocator behind mmap (mem.c). */
int vm_mem_init(struct vm *);
/* The two page maps unmapped (mmap_used, mmap_file: NULL after). */
void vm_mem_maps_free(struct vm *);
void vm_mem_maps_touch(struct vm *);
/* vm->mem_charged and the tree's charge together: 0 or -ENOMEM; and
 * back (at most what this process was charged: a vfork child's
 * inherited pages never were). */
int vm_mem_charge(struct vm *, uint64_t bytes);
void vm_mem_uncharge(struct vm *, uint64_t bytes);
uint64_t vm_mmap_alloc(struct vm *, uint64_t len); /* 0 on failure */
/* The same, reserved (PROT_NONE) when reserved is set: not charged, and
 * not open to the guest until mprotect makes it accessible. */
uint64_t vm_mmap_take(struct vm *, uint64_t len, int reserved);
int vm_mmap_free(struct vm *, uint64_t addr, uint64_t len);
int vm_mmap_is_used(struct vm *, uint64_t addr, uint64_t len);
/* Whole pages of the mmap area read as zeroes again (MAP_FIXED). */
void vm_mmap_zero(struct vm *, uint64_t addr, uint64_t len);
/* Copy a file's bytes into a private mapping; bytes read or -errno. */
int64_t vm_mmap_fill(
    struct vm *, int fd, uint64_t g, uint64_t len, uint64_t off);

/*
 * What the guest may touch (mem_space.c, docs/vmm.md "Reservations"):
 * a page of the brk or mmap area is open in the host (readable and
 * writable) only while it is charged; every other one is PROT_NONE in
 * the host, so a guest touch stops the guest and vm_gptr refuses it.
 */
#define VM_PG_FREE 0
#define VM_PG_HELD 1 /* mapped and charged: open */
#define VM_PG_RESERVED 2 /* mapped PROT_NONE: not charged, closed */
/* Pages [first, first + n) of the mmap area set to st in mmap_used. */
static inline void
vm_pages_mark(struct vm *vm, size_t first, size_t n, uint8_t st)
{
	memset(vm->mmap_used + first, st, n);
	if (st != VM_PG_FREE && n > 0 && first < vm->mmap_low)
		vm->mmap_low = first;
}
#define VM_RESERVE_FILE "/etc/keep/reserve"
#define VM_RESERVE_FILE_MAX 256
/* Parse an image's reserve file: 0 with *bytes (rounded up to 2 MiB),
 * or -1 with *bytes 0 (pure: fuzz/vmm_reserve.c). */
int vm_reserve_parse(const uint8_t *data, size_t len, uint64_t *bytes);
/* vm->reserve and vm->memsz for cfg->memory and the image's reserve:
 * VMM_OK or VMM_E_INVAL with err set. */
int vm_space_plan(struct vm *, char *err, size_t errlen);
/*
 * What KVM can reach (mem_slots.c, docs/vmm.md "Guest memory"): slots
 * over the memory the guest may use, growing as it opens more; outside
 * them a guest touch is an MMIO exit or an emulation failure, taken as
 * a touch of a closed page.
 *
 * plan: at a program's load, once brk_start and stack_lo are set, the
 * fronts to register (nothing is registered yet). reach: before the
 * host opens [addr, addr+len) to the guest, slots over it in the
 * current VM (or in the next, when there is none): 0, or -1 with errno
 * and nothing changed. register: all that is reached, in a VM just
 * created (one or two slots); drop: the VM is gone. cover: whether
 * every page of [addr, end) has a slot. log: KVM's dirty log on every
 * slot, now and those made later; dirty: the pages written since, one
 * bit per page of guest memory into bits (zeroed, memsz / VM_PAGE bits,
 * a whole number of 64-bit words).
 */
void vm_memslots_plan(struct vm *);
/* kvm.c: the guest's 2 MiB pages of [lo, hi) present in its page
 * tables (the stack's guard aside), once KVM has slots there. */
void vm_pt_open(struct vm *, uint64_t lo, uint64_t hi);
int vm_memslots_reach(struct vm *, uint64_t addr, uint64_t len);
int vm_memslots_register(struct vm *);
void vm_memslots_drop(struct vm *);
int vm_memslots_cover(const struct vm *, uint64_t addr, uint64_t end);
int vm_memslots_log(struct vm *);
int vm_memslots_dirty(struct vm *, uint64_t *bits);
/* The current VM's slots into vm->res, at a run's end. */
void vm_memslots_result(struct vm *);

/* The stack's share of guest memory of memsz bytes (at its top). */
uint64_t vm_space_stack(uint64_t memsz);
/* Guest memory mapped at mem, PROT_NONE whole when there is a reserve:
 * open what the boot writes before vm_mem_init closes the brk and mmap
 * areas (the kernel's pages, the segments, the stack), so that the host
 * counts no more of it as data (RLIMIT_DATA, keepd's bound on a vm
 * process) than without the reserve. 0, or -1 with errno. */
int vm_space_map(struct vm *, uint8_t *mem);
/* The memory limit as this process sees it: memsz less the reserve. */
uint64_t vm_space_limit(const struct vm *);
/* Whether every page of [addr, end) is open: not a closed brk page nor
 * a free or reserved page of the mmap area. */
int vm_space_ok(const struct vm *, uint64_t addr, uint64_t end);
/* The end of the open pages below the mmap area (segments and heap). */
uint64_t vm_space_low_end(const struct vm *);
/* Open (charged pages: readable and writable, reading zeroes until
 * written) and close (contents dropped, PROT_NONE) host pages of guest
 * memory. 0, or -ENOMEM (open) / -1 with the guest stopped (close). */
int vm_space_open(struct vm *, uint64_t addr, uint64_t len);
int vm_space_close(struct vm *, uint64_t addr, uint64_t len);
/* Close what the guest does not hold: at boot (vm_mem_init) and after a
 * memory image is restored, whose file says nothing of host rights. */
int vm_space_sync(struct vm *);
/* The first page of the next run of held pages of the mmap area at or
 * after page i (the area's page count when there is none), the page
 * after the run in *end. memchr, then eight pages at a time: the area
 * is mostly free (784,384 pages in a machine image's run) and what is
 * held lies in a few long runs. */
size_t vm_space_held_run(const struct vm *, size_t i, size_t *end);
/* A paused context's save (snapshot.c reads every page): refused while
 * the guest holds reservations, which its file cannot say apart from
 * held pages; otherwise every page is opened first. */
void vm_space_pause(struct vm *, uint64_t nr);
/* Peak of held mmap pages, after a change. */
void vm_space_peak(struct vm *);

/* The guest's CPUID table once vmm_prepare() has run (cpuid.c), and one
 * register of one leaf in it (reg 0-3: EAX EBX ECX EDX; 0 if absent). */
const struct kvm_cpuid2 *vm_cpuid(void);
uint32_t vm_cpuid_reg(uint32_t fn, uint32_t idx, int reg);
#define VM_CPUS_MAX 64 /* vm_cpus's most (host/vmm/vmm.h) */

/* Stop the guest with a status and reason. */
void vm_stop(struct vm *, enum vmm_status, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* System calls (sys_table.c, host/vmm/sys.h): nr and args from the
 * guest's registers; returns the value for RAX (a negative errno on
 * failure). The synced registers in vm->run may be changed. */
int64_t vm_syscall(struct vm *, uint64_t nr, const uint64_t a[6]);

/* The image's files by path (imgtree.c): the index, a file by its
 * exact path, whether a path is a directory of them, and the idx-th
 * entry of such a directory (0, or -1 past the last). */
int vm_img_init(struct vm *);
void vm_img_free(struct vm *);
const struct vmm_file *vm_img_find(struct vm *, const char *path);
int vm_img_is_dir(struct vm *, const char *path);
/* Before a file's first use: 0, or -EIO with the guest stopped when its
 * contents do not match vmm_file.hash (a tampered image). */
int vm_img_check(struct vm *, const struct vmm_file *);
/* The same check without stopping the guest: 0, or -1 on a mismatch. */
int vm_img_verify(struct vm *, const struct vmm_file *);
int vm_img_child(struct vm *, const char *dir, size_t idx, char *name,
    size_t max, int *is_dir);
/* The index position of the first file under directory dir (nfiles
 * when none is): where the guest's own listing of it starts. */
size_t vm_img_first_under(struct vm *, const char *dir);

/* Files (fs.c). */
int vm_fs_init(struct vm *);
/* The run's workspace (cfg's descriptor or path) as vm->ws_fd, in place
 * of any before, with its /tmp and /dev/shm made: a boot's and a
 * template clone's. 0 or -errno. */
int vm_ws_attach(struct vm *, const struct vmm_config *cfg);
void vm_fs_free(struct vm *);
/* execve's program at a guest path (relative to the cwd): the running
 * program for /proc/self/exe, an image file, or a workspace file with an
 * exec bit read whole into *owned (the caller frees it). 0 or -errno. */
int vm_fs_program(struct vm *, const char *gpath, char *path, size_t pathlen,
    const uint8_t **data, size_t *len, uint8_t **owned);
/* Descriptor fd (its low 32 bits), or NULL when not open (fs.c). */
struct vfd *vm_fd(struct vm *, uint64_t fd);
/* Guest descriptor fd when it is a host object of that kind; else NULL
 * with *err -EBADF (no such descriptor) or -EINVAL (another kind). */
struct vfd *vm_fd_anon(struct vm *, uint64_t fd, enum vm_anon, int64_t *err);
/* A new guest descriptor (the lowest free) for a host one with no path
 * (an eventfd, an epoll instance; read and written as a pipe end): its
 * number, or -EMFILE, and then hostfd is still the caller's. */
int vm_fd_add_host(struct vm *, int hostfd, int cloexec);
/* The same for a host object whose own calls take only its kind (an
 * inotify instance, a timerfd), read-only to read and write; hostfd is
 * closed when no descriptor is free. */
int vm_fd_add_anon(
    struct vm *, int hostfd, int cloexec, int nonblock, enum vm_anon);
/* Guest descriptor gfd, made by vm_fd_add_host, is a regular file with
 * no guest path (a memfd, one passed with SCM_RIGHTS): open as its host
 * descriptor says. */
void vm_fd_is_file(struct vm *, int gfd);
/* Close the close-on-exec descriptors. */
void vm_fs_exec_close(struct vm *);

#endif
