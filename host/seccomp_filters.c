/*
 * The seccomp allowlists of keepd's children, as data. Each row says who
 * needs the call; docs/architecture.md explains each process's set. Rules
 * are added on top of seccomp_common. A row whose system call this
 * architecture does not have is skipped at install time.
 *
 * When an area grows (the front's HTTP loop, the store's LMDB, egress's
 * libcurl), its owner adds rows here with a reason, never a wildcard.
 */
#include <sys/ioctl.h>
#include <linux/sockios.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>
#include <linux/filter.h>
#include <linux/kvm.h>
#include <linux/seccomp.h>
#include <seccomp.h>

#include "host/seccomp_filters.h"
#include "host/vmm/trap_abi.h"
#include "lib/util.h"

#ifndef __NR_fchmodat2
#define __NR_fchmodat2 452 /* Linux 6.6; newer than these headers */
#endif

#define R(name, why)                                                           \
	{                                                                      \
		SCMP_SYS(name), 0, 0, 0, why                                   \
	}
#define RA(name, a, v, why)                                                    \
	{                                                                      \
		SCMP_SYS(name), SCR_ARG, a, (uint64_t)(v), why                 \
	}

static const struct seccomp_rule common_rules[] = {
	R(recvmsg, "framework: receive a message (and fds) on a link"),
	R(sendmsg, "framework: send a message (and fds) on a link"),
	R(poll, "framework: wait on the links (glibc poll)"),
	R(ppoll, "framework: wait on the links (poll on newer glibc)"),
	R(close, "framework: close fds that arrive with messages, dead links"),
	R(fcntl, "framework: check and set descriptor flags of passed fds"),
	R(write, "log: stderr in the foreground, one write a line"),
	R(fstat, "a passed descriptor's kind and size (memfds, files)"),
	R(newfstatat, "fstat on newer glibc"),
	R(lseek, "glibc stdio's fclose of a read stream; LMDB imports it"),
	R(getpid, "log: syslog LOG_PID; ping replies carry the pid"),
	R(brk, "malloc"),
	R(mmap, "malloc: large allocations"),
	R(munmap, "malloc: large allocations"),
	R(mremap, "realloc of large allocations"),
	R(madvise, "malloc: trimming freed memory"),
	R(futex, "glibc internal locks (syslog, stdio)"),
	R(clock_gettime, "grant expiry, log time (vDSO fallback)"),
	R(gettimeofday, "log time (vDSO fallback)"),
	R(getrandom, "libsodium randombytes (grant nonces)"),
	R(rt_sigreturn, "return from a signal handler"),
	R(restart_syscall,
	    "a poll with a timeout, stopped (SIGSTOP, the "
	    "cgroup freezer, a debugger) and continued, resumes through it"),
	R(rt_sigprocmask, "abort() blocks signals before it raises SIGABRT"),
	R(exit, "process exit"),
	R(exit_group, "process exit"),
};

const struct seccomp_filter seccomp_common = { "common", common_rules,
	nitems(common_rules), 0 };

/* Part of the common rules, unless a filter says SCF_NO_SOCKETS. */
static const struct seccomp_rule syslog_rules[] = {
	RA(socket, 0, AF_UNIX,
	    "log: glibc syslog reopens /dev/log (AF_UNIX only)"),
	R(connect, "log: glibc syslog reconnects to /dev/log"),
	R(sendto, "log: glibc syslog sends on its datagram socket"),
};

static const struct seccomp_filter seccomp_syslog = { "syslog", syslog_rules,
	nitems(syslog_rules), 0 };

/* With SCF_VM_NET: a vm process in a network namespace of its own
 * (host/vm_confine.c, vm_confine_net), and the vmm that forks it, which
 * also makes that namespace there before the vm's own filter goes on. */
static const struct seccomp_rule vm_net_rules[] = {
	RA(socket, 0, AF_INET,
	    "a guest AF_INET socket, in the run's own network namespace"),
	RA(socket, 0, AF_INET6,
	    "a guest AF_INET6 socket, in the run's own network namespace"),
};

static const struct seccomp_filter seccomp_vm_net = { "vm-net", vm_net_rules,
	nitems(vm_net_rules), 0 };

static const struct seccomp_rule vm_netns_rules[] = {
	RA(unshare, 0, CLONE_NEWUSER | CLONE_NEWNET,
	    "a vm process's network namespace (with a user namespace, "
	    "unprivileged)"),
	RA(unshare, 0, CLONE_NEWNET, "the same for a privileged caller"),
	RA(ioctl, 1, SIOCGIFFLAGS, "that namespace's lo: its flags"),
	RA(ioctl, 1, SIOCSIFFLAGS, "that namespace's lo: up"),
	R(capset, "no capability left in that user namespace"),
	R(geteuid, "its uid and gid, mapped to themselves there"),
	R(getegid, "its uid and gid, mapped to themselves there"),
	RA(setns, 1, CLONE_NEWUSER,
	    "a vm process joins its sandbox's user namespace"),
	RA(setns, 1, CLONE_NEWNET,
	    "then its network namespace (vm_confine_net_join)"),
};

static const struct seccomp_filter seccomp_vm_netns = { "vm-netns",
	vm_netns_rules, nitems(vm_netns_rules), 0 };

static const struct seccomp_rule front_rules[] = {
	R(accept4, "accept connections on the listener the parent passed"),
	R(read, "read requests from client connections"),
	R(recvfrom, "recv() on client connections"),
	R(pread64, "the TLS certificate and key from the parent's memfd"),
	R(writev, "write responses (header and body in one call)"),
	R(epoll_create1, "the event loop"),
	R(epoll_ctl, "the event loop"),
	R(epoll_wait, "the event loop"),
	R(epoll_pwait, "the event loop (glibc epoll_wait on newer kernels)"),
	R(setsockopt, "TCP_NODELAY, SO_KEEPALIVE on client connections"),
	R(getpeername, "client address for logs"),
	R(shutdown, "half-close connections whose framing is in doubt"),
	R(timerfd_create, "header, body and idle timeouts"),
	R(timerfd_settime, "header, body and idle timeouts"),
	R(sysinfo, "OpenSSL sizes its pools when libtls is set up"),
	R(memfd_create, "a run's arguments, environment and stdin for the vmm"),
};

const struct seccomp_filter seccomp_front = { "front", front_rules,
	nitems(front_rules), 0 };

static const struct seccomp_rule policy_rules[] = {
	R(pread64, "read the policy text from the memfd the parent sends"),
};

const struct seccomp_filter seccomp_policy = { "policy", policy_rules,
	nitems(policy_rules), 0 };

/*
 * What a `keepd: vm` process needs to boot and serve one guest
 * (docs/vmm.md, "Host side"). The vmm process's own list includes all of
 * it, since the vm process starts as its fork and filters stack.
 */
#define VM_RULES                                                               \
	RA(ioctl, 1, KVM_CREATE_VM, "one VM per run"),                         \
	    RA(ioctl, 1, KVM_GET_VCPU_MMAP_SIZE, "size of the vCPU run area"), \
	    RA(ioctl, 1, KVM_SET_USER_MEMORY_REGION,                           \
	        "guest memory, in slots as the guest grows "                   \
	        "(vmm/mem_slots.c)"),                                          \
	    RA(ioctl, 1, KVM_CREATE_VCPU, "the one vCPU"),                     \
	    RA(ioctl, 1, KVM_SET_CPUID2, "the filtered CPUID"),                \
	    RA(ioctl, 1, KVM_SET_MSRS, "syscall MSRs"),                        \
	    RA(ioctl, 1, KVM_SET_XCRS, "XCR0 for SSE and AVX state"),          \
	    RA(ioctl, 1, KVM_SET_FPU, "initial FPU state"),                    \
	    RA(ioctl, 1, KVM_RUN,                                              \
	        "run the guest; its registers travel in the run area"),        \
	    R(setitimer, "the run's wall-clock limit"),                        \
	    R(clock_nanosleep, "guest sleeps, cut short by that limit"),       \
	    R(rt_sigaction, "the timer's handler"),                            \
	    R(openat2, "workspace files, RESOLVE_IN_ROOT"),                    \
	    R(read, "workspace files, stdin"), R(pread64, "workspace files"),  \
	    R(pwrite64, "workspace files"), R(lseek, "workspace files"),       \
	    R(getdents64, "workspace directories"),                            \
	    R(readlinkat, "workspace symlinks"),                               \
	    R(mkdirat, "workspace directories"),                               \
	    R(unlinkat, "workspace files"), R(renameat, "workspace files"),    \
	    R(ftruncate, "workspace files"), R(fstat, "workspace files"),      \
	    R(newfstatat, "workspace files"),                                  \
	    RA(ioctl, 1, KVM_GET_FPU,                                          \
	        "guest fork: the vCPU's x87 and SSE state (no XSAVE)"),        \
	    RA(ioctl, 1, KVM_GET_XSAVE,                                        \
	        "guest fork and thread switches: the vCPU's XSAVE state, "     \
	        "where KVM has XSAVE"),                                        \
	    RA(ioctl, 1, KVM_SET_XSAVE,                                        \
	        "guest fork and thread switches: that state back into the "    \
	        "vCPU"),                                                       \
	    RA(ioctl, 1, KVM_GET_MSRS,                                         \
	        "guest fork: the TSC, so the child's does not restart at 0"),  \
	    RA(ioctl, 1, KVM_GET_TSC_KHZ,                                      \
	        "the vDSO: the rate of the guest's TSC (host/vmm/vdso.c)"),    \
	    R(pipe2, "guest vfork: the parent waits for the child's exec"),    \
	    R(eventfd2, "a guest eventfd is a host one (vmm/sys_event.c)"),    \
	    R(inotify_init1,                                                   \
	        "a guest inotify is a host one (vmm/sys_inotify.c)"),          \
	    R(inotify_add_watch,                                               \
	        "a workspace watch, from its directory (fchdir)"),             \
	    R(inotify_rm_watch, "a guest inotify_rm_watch"),                   \
	    R(timerfd_create, "a guest timerfd is a host one (sys_event.c)"),  \
	    R(timerfd_settime, "a guest timerfd_settime"),                     \
	    R(timerfd_gettime, "a guest timerfd_gettime"),                     \
	    R(tee, "a guest tee, between two host pipes (sys_file.c)"),        \
	    R(epoll_create1, "a guest epoll is a host one (vmm/sys_event.c)"), \
	    R(epoll_ctl, "a guest epoll's interest list"),                     \
	    R(epoll_wait, "a guest epoll_wait"),                               \
	    R(epoll_pwait, "a guest epoll_wait (glibc on newer kernels)"),     \
	    R(fchmod, "guest fchmod on a workspace file"),                     \
	    R(fchmodat2, "guest chmod: on an O_PATH descriptor, no race"),     \
	    R(fchmodat, "guest chmod before Linux 6.6, via /proc/self/fd"),    \
	    R(utimensat, "guest utimensat and futimens (touch)"),              \
	    R(symlinkat, "guest symlinks, created in the workspace"),          \
	    R(linkat, "guest hard links within the workspace"),                \
	    R(renameat2, "guest rename, RENAME_NOREPLACE and EXCHANGE"),       \
	    R(fallocate, "guest fallocate, counted against the quota"),        \
	    R(flock, "guest flock on a workspace file (vmm/sys_lock.c)"),      \
	    R(umask, "the guest's umask is applied by the VMM instead"),       \
	    RA(socketpair, 0, AF_UNIX,                                         \
	        "a guest socketpair is a host one (vmm/sys_socket.c)"),        \
	    VM_SOCKET_RULES,                                                   \
	    RA(mprotect, 2, PROT_NONE,                                         \
	        "close guest pages the guest does not hold "                   \
	        "(vmm/mem_space.c)"),                                          \
	    RA(mprotect, 2, PROT_READ | PROT_WRITE,                            \
	        "open guest pages as they are charged (never executable)"),    \
	    TRAP_RULES

/*
 * A guest's sockets are host ones of its vm process (vmm/sys_socket.c):
 * AF_UNIX always (paths beneath the workspace, which Landlock holds it
 * to); the internet families only with SCF_VM_NET (vm_net_rules), where
 * the process has a network namespace of its own. Nothing else: no
 * netlink, no packet or raw sockets, no other family.
 */
#define VM_SOCKET_RULES                                                        \
	RA(socket, 0, AF_UNIX, "a guest AF_UNIX socket (vmm/sys_socket.c)"),   \
	    R(bind,                                                            \
	        "a guest bind: an AF_UNIX path beneath the workspace, "        \
	        "or in the run's own network namespace"),                      \
	    R(listen, "a guest listen"),                                       \
	    R(accept4, "a guest accept and accept4"),                          \
	    R(connect, "a guest connect: loopback or the workspace only"),     \
	    R(sendto, "a guest send and sendto (glibc's send)"),               \
	    R(recvfrom, "a guest recv and recvfrom (glibc's recv)"),           \
	    R(getsockname, "a guest getsockname"),                             \
	    R(getpeername, "a guest getpeername"),                             \
	    R(setsockopt, "the guest's socket options (vmm/sys_socket.c)"),    \
	    R(getsockopt, "the guest's socket options, SO_ERROR"),             \
	    R(shutdown, "a guest shutdown"),                                   \
	    R(fchdir,                                                          \
	        "an AF_UNIX path: bind and connect in its directory "          \
	        "(there is no bindat), and back")

/*
 * The trap platform (host/vmm/trap.c, guest/trap_stub.c): what a vm
 * process needs to start and serve its guest's own process, and what
 * that process, which inherits these filters, needs before and after its
 * own filter is in place. Its own filter lets the guest make none of
 * these; it traps every call of the guest's to the vm process.
 */
#define TRAP_RULES                                                             \
	R(memfd_create, "trap: guest memory, the box, a fork's copy"),         \
	    RA(clone, 0, TRAP_CLONE_NS,                                        \
	        "trap: the guest's process, in namespaces of its own"),        \
	    RA(clone, 0, TRAP_CLONE_NS_RUN_NET,                                \
	        "trap: the same, in the run's network namespace"),             \
	    RA(clone, 0, TRAP_CLONE_PLAIN,                                     \
	        "trap: the guest's process where no user namespace opens"),    \
	    RA(clone, 0, TRAP_CLONE_JOIN,                                      \
	        "trap: a later guest process of the tree: the go-between "     \
	        "that joins the tree's namespaces"),                           \
	    RA(clone, 0, TRAP_CLONE_JOINED,                                    \
	        "trap: from the go-between, the guest's process, in a pid "    \
	        "and a mount namespace of its own"),                           \
	    RA(clone, 0, TRAP_CLONE_JOINED_ROOT,                               \
	        "trap: the same, in the tree's mount namespace (its empty "    \
	        "root)"),                                                      \
	    RA(setns, 1, CLONE_NEWUSER,                                        \
	        "trap: the go-between joins the tree's user namespace, "       \
	        "owned by the vm process's uid (its first stub's)"),           \
	    RA(setns, 1, CLONE_NEWNET, "trap: then its network namespace"),    \
	    RA(setns, 1, CLONE_NEWIPC, "trap: then its IPC namespace"),        \
	    RA(setns, 1, CLONE_NEWUTS, "trap: then its UTS namespace"),        \
	    RA(setns, 1, CLONE_NEWCGROUP, "trap: then its cgroup namespace"),  \
	    RA(setns, 1, CLONE_NEWNS,                                          \
	        "trap: then its mount namespace (the empty root)"),            \
	    RA(ioctl, 1, PIDFD_GET_USER_NAMESPACE,                             \
	        "trap: the first stub's namespaces, from its pidfd, kept "     \
	        "for the tree's later stubs"),                                 \
	    RA(ioctl, 1, PIDFD_GET_NET_NAMESPACE, "trap: the same"),           \
	    RA(ioctl, 1, PIDFD_GET_IPC_NAMESPACE, "trap: the same"),           \
	    RA(ioctl, 1, PIDFD_GET_UTS_NAMESPACE, "trap: the same"),           \
	    RA(ioctl, 1, PIDFD_GET_CGROUP_NAMESPACE, "trap: the same"),        \
	    RA(ioctl, 1, PIDFD_GET_MNT_NAMESPACE, "trap: the same"),           \
	    R(waitid, "trap: the guest's process ended (its pidfd)"),          \
	    R(pidfd_open,                                                      \
	        "trap: a spare the tree's maker forked, by the pid its "       \
	        "hello carried"),                                              \
	    RA(kill, 1, SIGUSR1, "trap: kick the guest's process"),            \
	    R(copy_file_range, "trap: a guest fork copies its memory"),        \
	    RA(prctl, 0, PR_SET_PDEATHSIG,                                     \
	        "trap: the guest's process dies with its vm process"),         \
	    R(mount, "trap: an empty tmpfs root in the guest's mount ns"),     \
	    R(chdir, "trap: into that root"), R(chroot, "trap: that root"),    \
	    R(dup2, "trap: the stub's descriptors at 3, 4, 5"),                \
	    R(close_range, "trap: nothing else inherited"),                    \
	    R(setpgid,                                                         \
	        "a process leads a group of its own: a new vm process or "     \
	        "clone (a kill reaches the guest processes it forks), the "    \
	        "trap's guest process (one sent to the vm's group does not)"), \
	    R(prlimit64, "trap: the stub's rlimits"),                          \
	    R(execveat, "trap: the stub, from its sealed memfd"),              \
	    R(sigaltstack, "trap stub: its handlers' own stack"),              \
	    RA(prctl, 0, PR_SET_DUMPABLE, "trap stub: no core, no ptrace"),    \
	    RA(prctl, 0, PR_SET_NO_NEW_PRIVS, "trap stub: before its filter"), \
	    R(seccomp, "trap stub: its filter"),                               \
	    R(arch_prctl, "trap stub: the guest's FS and GS bases"),           \
	    R(sched_yield,                                                     \
	        "trap: the stub's filter allows it; either side "              \
	        "yields its spin to a peer on its own CPU"),                   \
	    R(getcpu,                                                          \
	        "trap: the vm process's CPU, posted for the stub (if "         \
	        "glibc's rseq and vDSO do not answer)"),                       \
	    RA(mprotect, 2, PROT_READ | PROT_WRITE | PROT_EXEC,                \
	        "trap stub: open guest memory (the guest's rights are all "    \
	        "of them, as under KVM)")

/* What a guest process tree adds (host/vmm/proc.c): each guest process
 * is a vm process forked from its parent's. The vmm process's own list
 * has these already, for its own children. */
#define VM_PROC_RULES                                                          \
	RA(clone, 0, 0x01200011,                                               \
	    "guest fork: glibc fork's flags only (no threads, no "             \
	    "namespaces)"),                                                    \
	    R(set_robust_list, "glibc fork in the child"),                     \
	    R(rseq, "glibc fork in the child"),                                \
	    R(wait4, "guest wait4: the guest's children are the host's"),      \
	    RA(kill, 1, SIGKILL,                                               \
	        "a guest kill, and the first process ending the tree: "        \
	        "SIGKILL only"),                                               \
	    RA(kill, 1, SIGUSR2,                                               \
	        "wake a guest process a signal was queued for (proc.c)")

static const struct seccomp_rule vm_rules[] = { VM_RULES, VM_PROC_RULES };

/* Installed with SCF_NO_SOCKETS: no sockets but the ones it was given
 * (its egress relay); it logs to stderr, and Landlock confines it first
 * (host/vm_confine.c). */
const struct seccomp_filter seccomp_vm = { "vm", vm_rules, nitems(vm_rules),
	1 };

/*
 * A template's holder boots its guest as a vm process would, then forks
 * one clone per run, each of which installs seccomp_vm on top of this
 * before it touches the run (docs/templates.md).
 */
static const struct seccomp_rule template_rules[] = {
	VM_RULES,
	VM_PROC_RULES,
	RA(clone, 0, CLONE_PARENT | SIGCHLD,
	    "a clone for a run, made the vmm's child (CLONE_PARENT) so the "
	    "vmm waits for it as for any vm process"),
	R(seccomp, "a clone installs the vm process's filter"),
	R(prctl, "a clone's process title"),
	RA(ioctl, 1, KVM_GET_DIRTY_LOG,
	    "the pages the template's probe clone wrote (vmm_template_learn)"),
	R(landlock_create_ruleset,
	    "a clone confines itself to its run's workspace (vm_confine)"),
	R(landlock_add_rule,
	    "a clone confines itself to its run's workspace (vm_confine)"),
	R(landlock_restrict_self,
	    "a clone confines itself to its run's workspace (vm_confine)"),
};

const struct seccomp_filter seccomp_template = { "template", template_rules,
	nitems(template_rules), 1 };

/*
 * The vmm's namespace maker (host/vm_confine.c): a request in, a child
 * that makes a sandbox's user and network namespaces, their descriptors
 * out. Nothing else: no file but its own /proc entries, no socket but
 * the one that brings lo up.
 */
static const struct seccomp_rule netns_rules[] = {
	R(recvfrom, "a request from the vmm (recv)"),
	R(sendto, "a refusal to the vmm (send)"),
	RA(clone, 0, 0x01200011,
	    "a child per request (glibc fork's flags only: no threads, no "
	    "namespaces)"),
	R(set_robust_list, "glibc fork in the child"),
	R(rseq, "glibc fork in the child"),
	R(wait4, "the child's status"),
	RA(unshare, 0, CLONE_NEWUSER | CLONE_NEWNET,
	    "the child: a user and a network namespace"),
	RA(prctl, 0, PR_SET_DUMPABLE,
	    "the child: its /proc files its own, for its maps"),
	R(geteuid, "the child: its uid, mapped to itself"),
	R(getegid, "the child: its gid, mapped to itself"),
	R(openat, "the child: /proc/self uid_map, setgroups, gid_map, ns/"),
	RA(socket, 0, AF_INET, "the child: a socket to bring lo up"),
	RA(ioctl, 1, SIOCGIFFLAGS, "the child: lo's flags"),
	RA(ioctl, 1, SIOCSIFFLAGS, "the child: lo up"),
	R(capset, "the child: no capability left in its user namespace"),
};

const struct seccomp_filter seccomp_netns = { "netns", netns_rules,
	nitems(netns_rules), 0 };

/*
 * A sandbox's port connector (host/vmmproc/vmm_port.c): in the sandbox's
 * network namespace, a port in on its socketpair, a stream socket
 * connected to that port on the namespace's loopback out (SCM_RIGHTS,
 * the common sendmsg row). Its sockets are the internet families' alone
 * (installed with SCF_NO_SOCKETS | SCF_VM_NET); no file, no fork, no
 * bind, listen or accept.
 */
static const struct seccomp_rule port_connector_rules[] = {
	R(recvfrom, "a port to connect to, from the vmm (recv)"),
	R(connect, "to that port on the sandbox's loopback"),
	RA(setsockopt, 2, SO_SNDTIMEO,
	    "a bound on the connect (a listener whose backlog is full)"),
};

const struct seccomp_filter seccomp_port_connector = { "port-connector",
	port_connector_rules, nitems(port_connector_rules), 0 };

static const struct seccomp_rule vmm_rules[] = {
	VM_RULES,
	RA(ioctl, 1, KVM_GET_DIRTY_LOG,
	    "a template holder's probe clone (filters stack)"),
	RA(ioctl, 1, KVM_GET_API_VERSION, "check /dev/kvm's API version"),
	RA(ioctl, 1, KVM_CHECK_EXTENSION, "probe KVM capabilities"),
	RA(ioctl, 1, KVM_GET_SUPPORTED_CPUID, "CPUID, fetched once"),
	R(openat, "images and workspaces under the state directory"),
	R(mkdir, "a sandbox's workspace"),
	R(rmdir, "a sandbox's workspace"),
	R(getdents64, "removing a workspace, listing images"),
	R(fsync, "an uploaded image is on disk before it is renamed in"),
	R(memfd_create, "a run's output; its egress request buffer"),
	R(socketpair, "a run's egress relay to its vm process"),
	R(pipe2, "a live context's cell pipe to its vm process"),
	RA(clone, 0, 0x01200011,
	    "fork a `keepd: vm` process (glibc fork's flags only: no "
	    "threads, no namespaces)"),
	RA(clone, 0, CLONE_PARENT | SIGCHLD,
	    "not used here: a template's holder, forked from here, makes its "
	    "clones the vmm's children, and filters stack"),
	R(pidfd_open, "wait for a vm process in the poll loop"),
	R(wait4, "reap the per-VM `keepd: vm` processes"),
	R(kill, "stop a VM process past its timeout"),
	R(prctl, "setproctitle of the vm process"),
	R(seccomp, "the vm process installs its narrower filter"),
	R(landlock_create_ruleset,
	    "the vm process confines itself to its workspace"),
	R(landlock_add_rule, "the vm process confines itself to its workspace"),
	R(landlock_restrict_self,
	    "the vm process confines itself to its workspace"),
	R(set_robust_list, "glibc fork in the child"),
	R(rseq, "glibc fork in the child"),
	R(inotify_init1, "files/watch: one inotify instance a watch"),
	R(inotify_add_watch, "files/watch: a directory, as \".\" after fchdir"),
	R(fchdir,
	    "files/watch: into a directory opened beneath the "
	    "workspace, and back to the root"),
};

const struct seccomp_filter seccomp_vmm = { "vmm", vmm_rules, nitems(vmm_rules),
	1 };

static const struct seccomp_rule store_rules[] = {
	R(openat, "open the LMDB environment in the data directory"),
	R(pread64, "LMDB page reads"),
	R(pwrite64, "LMDB page writes"),
	R(fdatasync, "LMDB commit durability"),
	R(fsync, "LMDB commit durability"),
	R(ftruncate, "LMDB grows the map file"),
	R(flock, "LMDB lock file"),
	R(msync, "LMDB with MDB_WRITEMAP"),
	R(fstatfs, "LMDB checks the file system at open"),
	R(uname, "LMDB checks the kernel version at open"),
	R(pwritev, "LMDB writes dirty pages"),
	R(writev, "LMDB writes dirty pages at commit"),
	R(fallocate, "the store's reserved room past the data file's end"),
};

const struct seccomp_filter seccomp_store = { "store", store_rules,
	nitems(store_rules), 0 };

static const struct seccomp_rule egress_rules[] = {
	RA(socket, 0, AF_INET, "outbound HTTPS over IPv4"),
	RA(socket, 0, AF_INET6, "outbound HTTPS over IPv6"),
	R(getsockopt, "libcurl: SO_ERROR after a non-blocking connect"),
	R(setsockopt, "libcurl: TCP_NODELAY, keepalive"),
	R(getsockname, "libcurl: local address"),
	R(getpeername, "libcurl: peer address check after connect"),
	R(recvfrom, "libcurl: responses"),
	R(read, "libcurl, OpenSSL"),
	R(openat, "the CA bundle"),
	R(pipe2, "libcurl wakeup pipe"),
	RA(socketpair, 0, AF_UNIX, "libcurl wakeup socketpair (AF_UNIX only)"),
	R(pread64, "requests arrive in a memfd"),
	R(memfd_create, "replies leave in a memfd"),
	R(nanosleep, "webhook backoff between attempts"),
	R(clock_nanosleep, "webhook backoff (glibc nanosleep)"),
	R(sendmmsg, "glibc resolver: A and AAAA queries at once"),
	R(bind, "glibc resolver: its UDP socket"),
	RA(ioctl, 1, FIONREAD, "glibc resolver: FIONREAD on its UDP socket"),
	R(uname, "OpenSSL reads the kernel name once"),
	R(getuid, "OpenSSL: secure_getenv checks"),
	R(geteuid, "OpenSSL: secure_getenv checks"),
	R(getgid, "OpenSSL: secure_getenv checks"),
	R(getegid, "OpenSSL: secure_getenv checks"),
	R(sysinfo, "OpenSSL sizes its pools"),
	RA(clone, 0, 0x01200011,
	    "fork a webhook delivery worker (glibc fork's flags only: no "
	    "threads, no namespaces)"),
	R(set_robust_list, "glibc fork in the worker"),
	R(rseq, "glibc fork in the worker"),
	R(wait4, "reap webhook workers"),
	/* A connection that injects a secret is handed to the vm process
	 * as one end of a loopback TCP pair (host/proc_egress.c,
	 * loopback_pair): a listener on 127.0.0.1, one connection, its
	 * peer checked to be our own socket, then closed. */
	R(listen, "the loopback pair of an injecting relay"),
	R(accept4, "the loopback pair of an injecting relay (one peer)"),
	R(shutdown, "a scanning relay passes a half-close on"),
};

const struct seccomp_filter seccomp_egress = { "egress", egress_rules,
	nitems(egress_rules), 0 };

static int
add_rules(scmp_filter_ctx sc, const struct seccomp_filter *f)
{
	const struct seccomp_rule *r;
	size_t i;
	int rc;

	for (i = 0; i < f->nrules; i++) {
		r = &f->rules[i];
		if (r->nr < 0)
			continue; /* not on this architecture */
		if (r->flags & SCR_ARG) {
			struct scmp_arg_cmp cmp = { .arg = r->arg,
				.op = SCMP_CMP_EQ,
				.datum_a = r->val,
				.datum_b = 0 };

			rc = seccomp_rule_add_array(
			    sc, SCMP_ACT_ALLOW, r->nr, 1, &cmp);
		} else
			rc = seccomp_rule_add(sc, SCMP_ACT_ALLOW, r->nr, 0);
		if (rc < 0)
			return rc;
	}
	return 0;
}

int
seccomp_filter_install(const struct seccomp_filter *f)
{
	return seccomp_filter_install_flags(f, 0);
}

/* The whole allowlist in a libseccomp context: NULL with errno set. */
static scmp_filter_ctx
filter_build(const struct seccomp_filter *f, unsigned flags)
{
	scmp_filter_ctx sc;
	int rc;

	sc = seccomp_init(
	    f != NULL && f->trap ? SCMP_ACT_TRAP : SCMP_ACT_KILL_PROCESS);
	if (sc == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	rc = add_rules(sc, &seccomp_common);
	if (rc == 0 && !(flags & SCF_NO_SOCKETS))
		rc = add_rules(sc, &seccomp_syslog);
	if (rc == 0 && (flags & SCF_VM_NET))
		rc = add_rules(sc, &seccomp_vm_net);
	if (rc == 0 && (flags & SCF_VM_NETNS))
		rc = add_rules(sc, &seccomp_vm_netns);
	if (rc == 0 && f != NULL)
		rc = add_rules(sc, f);
	if (rc < 0) {
		seccomp_release(sc);
		errno = -rc;
		return NULL;
	}
	return sc;
}

/*
 * Filters compiled ahead by a process that forks many children which
 * install them (the vmm: one `keepd: vm` process per run): libseccomp
 * takes about a millisecond to compile the vm filter, which every run
 * paid before its guest started. The children inherit the program and
 * load it as libseccomp would (no_new_privs, then the filter, flags 0).
 */
#define COMPILED_MAX 4
#define COMPILED_INSNS_MAX 4096

static struct {
	const struct seccomp_filter *f;
	unsigned flags;
	struct sock_filter *insns;
	unsigned short len;
} compiled[COMPILED_MAX];

int
seccomp_filter_prepare(const struct seccomp_filter *f, unsigned flags)
{
	struct sock_filter *insns = NULL;
	scmp_filter_ctx sc;
	struct stat sb;
	size_t i, bytes;
	int fd = -1, rc, saved;

	for (i = 0; i < COMPILED_MAX && compiled[i].insns != NULL; i++)
		if (compiled[i].f == f && compiled[i].flags == flags)
			return 0;
	if (i == COMPILED_MAX) {
		errno = ENOSPC;
		return -1;
	}
	if ((sc = filter_build(f, flags)) == NULL)
		return -1;
	if ((fd = memfd_create("keep-seccomp", MFD_CLOEXEC)) == -1)
		goto fail;
	if ((rc = seccomp_export_bpf(sc, fd)) < 0) {
		errno = -rc;
		goto fail;
	}
	if (fstat(fd, &sb) == -1)
		goto fail;
	bytes = (size_t)sb.st_size;
	if (bytes == 0 || bytes % sizeof(*insns) != 0 ||
	    bytes / sizeof(*insns) > COMPILED_INSNS_MAX) {
		errno = EINVAL;
		goto fail;
	}
	if ((insns = malloc(bytes)) == NULL ||
	    pread(fd, insns, bytes, 0) != (ssize_t)bytes)
		goto fail;
	close(fd);
	seccomp_release(sc);
	compiled[i].f = f;
	compiled[i].flags = flags;
	compiled[i].insns = insns;
	compiled[i].len = (unsigned short)(bytes / sizeof(*insns));
	return 0;
fail:
	saved = errno;
	free(insns);
	if (fd != -1)
		close(fd);
	seccomp_release(sc);
	errno = saved == 0 ? EIO : saved;
	return -1;
}

int
seccomp_filter_install_flags(const struct seccomp_filter *f, unsigned flags)
{
	scmp_filter_ctx sc;
	size_t i;
	int rc;

	for (i = 0; i < COMPILED_MAX && compiled[i].insns != NULL; i++)
		if (compiled[i].f == f && compiled[i].flags == flags) {
			struct sock_fprog prog = { .len = compiled[i].len,
				.filter = compiled[i].insns };

			if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1 ||
			    syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0,
			        &prog) == -1)
				return -1;
			return 0;
		}
	if ((sc = filter_build(f, flags)) == NULL)
		return -1;
	rc = seccomp_load(sc);
	seccomp_release(sc);
	if (rc < 0) {
		errno = -rc;
		return -1;
	}
	return 0;
}
