/*
 * The guest's system calls as data: one row per Linux x86-64 call keep
 * knows, {number, name, handler, support, why}, in number order, in the
 * manner of host/seccomp_filters.c. A call keep serves as Linux does is
 * FULL; one it serves with a difference is PARTIAL and says what
 * differs; one it refuses answers its errno at once and says why. A
 * number with no row (none of Linux's, or a future one) is ENOSYS.
 *
 * The handlers live by family (host/vmm/sys.h). vm_syscall() is the one
 * entry from the vCPU loop: look the row up, run it, trace it. `keep run
 * --trace` prints every call by name with its result; docs/vmm.md's
 * table is this one.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "host/egress/egress_abi.h"
#include "host/vmm/sys.h"
#include "host/vmm/vm_int.h"
#include "lib/log.h"
#include "lib/util.h"

#define ROW(n, name, fn, level, err, why)                                      \
	[n] = { n, #name, fn, level, err, why }
#define OK(n, name, fn, why) ROW(n, name, fn, VM_SYS_FULL, 0, why)
#define PART(n, name, fn, why) ROW(n, name, fn, VM_SYS_PARTIAL, 0, why)
#define NO(n, name, err, why) ROW(n, name, NULL, VM_SYS_REFUSED, err, why)

/* Indexed by number: Linux's x86-64 calls run from 0 to 334 and from
 * 424 on, so the gap costs a few hundred empty rows and no search. */
static const struct vm_sysent linux_calls[] = {
	OK(0, read, sys_read, "stdin, image files, workspace files"),
	OK(1, write, sys_write,
	    "output sink (fds 1, 2; output limit), workspace files (quota)"),
	OK(2, open, sys_open, "as openat at the cwd"),
	OK(3, close, sys_close, ""),
	OK(4, stat, sys_stat,
	    "image files synthesized, workspace files from the host"),
	OK(5, fstat, sys_fstat, ""),
	OK(6, lstat, sys_lstat, ""),
	OK(7, poll, sys_poll,
	    "pipes and files wait on the host; output always writable, image "
	    "files always ready; the run's timeout ends the wait"),
	OK(8, lseek, sys_lseek, ""),
	PART(9, mmap, sys_mmap,
	    "anonymous memory (PROT_NONE: a reservation, not charged nor "
	    "reachable), and private file mappings: an image file's whole "
	    "pages copy-on-write (keep run), else copies; MAP_SHARED of a "
	    "workspace file open for reading and writing, or anonymous, is "
	    "shared with the file and other processes; of another file, a "
	    "copy; MAP_FIXED only over the guest's own mappings"),
	PART(10, mprotect, sys_mprotect,
	    "a reservation made accessible is charged (ENOMEM past the "
	    "limit); otherwise no effect: 2 MiB pages hold no per-page "
	    "rights, and PROT_NONE keeps a page's charge and access"),
	OK(11, munmap, sys_munmap, ""),
	OK(12, brk, sys_brk, ""),
	OK(13, rt_sigaction, sys_rt_sigaction,
	    "delivered at system-call returns, kicks and exceptions"),
	OK(14, rt_sigprocmask, sys_rt_sigprocmask, ""),
	OK(15, rt_sigreturn, sys_rt_sigreturn,
	    "the frame is read back through the checked guest pointers"),
	PART(16, ioctl, sys_ioctl,
	    "FIONBIO, FIOCLEX, FIONCLEX; a terminal run's fds 0-2 answer the "
	    "termios, window size and process group requests (tty.c); ENOTTY "
	    "otherwise"),
	OK(17, pread64, sys_pread64, ""),
	OK(18, pwrite64, sys_pwrite64, ""),
	OK(19, readv, sys_readv, ""),
	OK(20, writev, sys_writev, ""),
	OK(21, access, sys_access,
	    "existence only: the guest owns everything it can see"),
	OK(22, pipe, sys_pipe,
	    "a host pipe: crosses fork; no reader: EPIPE and SIGPIPE"),
	OK(23, select, sys_select, "as poll"),
	OK(24, sched_yield, sys_sched_yield, "to the next runnable thread"),
	PART(25, mremap, sys_mremap,
	    "a reservation (PROT_NONE) does not move: ENOMEM"),
	PART(26, msync, sys_msync,
	    "checks its arguments; nothing to write: a shared mapping is the "
	    "file's own pages"),
	NO(27, mincore, ENOSYS, "not provided"),
	PART(28, madvise, sys_madvise, "advice is accepted and ignored"),
	NO(29, shmget, ENOSYS, "no System V IPC"),
	NO(30, shmat, ENOSYS, "no System V IPC"),
	NO(31, shmctl, ENOSYS, "no System V IPC"),
	OK(32, dup, sys_dup, ""),
	OK(33, dup2, sys_dup2, ""),
	OK(34, pause, sys_pause, ""),
	OK(35, nanosleep, sys_nanosleep,
	    "sleeps on the host; EINTR and the rest for a signal the guest "
	    "handles; cut short by the run's timeout"),
	OK(36, getitimer, sys_getitimer,
	    "ITIMER_REAL on the host's clock; ITIMER_VIRTUAL and "
	    "ITIMER_PROF on the process's CPU time"),
	OK(37, alarm, sys_alarm, "SIGALRM from the host's timer"),
	PART(38, setitimer, sys_setitimer,
	    "ITIMER_REAL from the host's timer; ITIMER_VIRTUAL and "
	    "ITIMER_PROF on the process's CPU time, looked at every 4 ms"),
	OK(39, getpid, sys_getpid, "the guest pid: the first process is 1"),
	OK(40, sendfile, sys_sendfile,
	    "through a host buffer, at most 1 MiB a call"),
	PART(41, socket, sys_socket,
	    "AF_UNIX, AF_INET, AF_INET6; stream, datagram (and AF_UNIX "
	    "seqpacket); the internet families only in the run's own "
	    "network namespace (only lo): EACCES without one"),
	PART(42, connect, sys_connect,
	    "loopback, and what the policy's egress rules allow by name or "
	    "address (UDP only under udp rules), opened by egress (EACCES "
	    "elsewhere, the result says egress); AF_UNIX paths beneath the "
	    "workspace"),
	OK(43, accept, sys_accept, "wakes for the guest's signals"),
	OK(44, sendto, sys_sendto,
	    "to loopback, or UDP where an egress udp rule allows, on a "
	    "socket egress connects there (EACCES elsewhere); AF_UNIX paths "
	    "beneath the workspace"),
	OK(45, recvfrom, sys_recvfrom, ""),
	PART(46, sendmsg, sys_sendmsg,
	    "SCM_RIGHTS only, of the run's pipes, sockets, eventfds, "
	    "epolls and workspace files (directories: EOPNOTSUPP)"),
	OK(47, recvmsg, sys_recvmsg,
	    "descriptors passed arrive as the guest's own"),
	OK(48, shutdown, sys_shutdown, ""),
	OK(49, bind, sys_bind,
	    "AF_UNIX paths beneath the workspace; abstract names private "
	    "to the run's network namespace"),
	OK(50, listen, sys_listen, ""),
	OK(51, getsockname, sys_getsockname, ""),
	OK(52, getpeername, sys_getpeername,
	    "an AF_UNIX peer's path as the host names it, relative"),
	PART(53, socketpair, sys_socketpair,
	    "AF_UNIX only, a host pair: crosses fork"),
	PART(54, setsockopt, sys_setsockopt,
	    "the options programs set (SO_REUSEADDR/PORT, SO_KEEPALIVE, "
	    "buffer sizes, timeouts, SO_LINGER, TCP_NODELAY and keep-alive "
	    "timers, IPV6_V6ONLY, ...); others ENOPROTOOPT"),
	PART(55, getsockopt, sys_getsockopt,
	    "as setsockopt, and SO_TYPE, SO_DOMAIN, SO_PROTOCOL, SO_ERROR, "
	    "SO_ACCEPTCONN, TCP_INFO; no SO_PEERCRED"),
	PART(56, clone, sys_clone,
	    "a new process with its own VM; CLONE_VM only with CLONE_VFORK "
	    "(a copy, the parent waits), or with CLONE_SIGHAND and "
	    "CLONE_THREAD: a thread on its process's one vCPU (Threads, "
	    "below)"),
	OK(57, fork, sys_fork,
	    "a host process with its own VM over copy-on-write memory"),
	PART(58, vfork, sys_vfork,
	    "the child runs on a copy (KVM) or in its parent's memory, where "
	    "it may not map (trap); the parent waits for its exec or exit"),
	OK(59, execve, sys_execve,
	    "/proc/self/exe, image files, workspace files with an exec bit, "
	    "#! scripts"),
	OK(60, exit, sys_exit, "the thread's; the process's with its last"),
	PART(61, wait4, sys_wait4,
	    "pid 0 and -pgid wait for any child; rusage is zero"),
	PART(62, kill, sys_kill,
	    "within the run's own processes; no job-control stops"),
	OK(63, uname, sys_uname,
	    VM_UNAME_SYSNAME " " VM_UNAME_RELEASE
	                     " x86_64, node \"" VM_UNAME_NODENAME
	                     "\": nothing of the host"),
	NO(64, semget, ENOSYS, "no System V IPC"),
	NO(65, semop, ENOSYS, "no System V IPC"),
	NO(66, semctl, ENOSYS, "no System V IPC"),
	NO(67, shmdt, ENOSYS, "no System V IPC"),
	NO(68, msgget, ENOSYS, "no System V IPC"),
	NO(69, msgsnd, ENOSYS, "no System V IPC"),
	NO(70, msgrcv, ENOSYS, "no System V IPC"),
	NO(71, msgctl, ENOSYS, "no System V IPC"),
	PART(72, fcntl, sys_fcntl,
	    "F_GETFD F_SETFD F_GETFL F_DUPFD F_DUPFD_CLOEXEC; F_SETFL sets "
	    "O_NONBLOCK only; F_GETPIPE_SZ, F_SETPIPE_SZ (at most 1 MiB); "
	    "record locks, POSIX and OFD, the host's (sys_lock.c): a wait "
	    "polls, no EDEADLK"),
	PART(73, flock, sys_flock,
	    "the host's lock on workspace files (sys_lock.c): a wait polls; "
	    "granted at once on image files, pipes, sockets"),
	PART(74, fsync, sys_fsync, "nothing to do: the host writes through"),
	PART(75, fdatasync, sys_fdatasync,
	    "nothing to do: the host writes through"),
	OK(76, truncate, sys_truncate,
	    "workspace files; the quota counts blocks"),
	OK(77, ftruncate, sys_ftruncate, "workspace files"),
	NO(78, getdents, ENOSYS, "not provided"),
	OK(79, getcwd, sys_getcwd, ""),
	OK(80, chdir, sys_chdir, ""),
	OK(81, fchdir, sys_fchdir, ""),
	OK(82, rename, sys_rename, "within the workspace"),
	OK(83, mkdir, sys_mkdir, "workspace only"),
	OK(84, rmdir, sys_rmdir, "workspace only"),
	OK(85, creat, sys_creat, ""),
	OK(86, link, sys_link, "within the workspace; from the image: EXDEV"),
	OK(87, unlink, sys_unlink, "workspace only"),
	PART(88, symlink, sys_symlink,
	    "created as written; followed as in a chroot at the workspace "
	    "(never out of it); a target in the image, /proc or /dev is not "
	    "reached through one"),
	OK(89, readlink, sys_readlink, "workspace symlinks"),
	OK(90, chmod, sys_chmod,
	    "workspace files (through an O_PATH descriptor: no symlink race); "
	    "image, /proc, /dev: EROFS"),
	OK(91, fchmod, sys_fchmod, ""),
	PART(92, chown, sys_chown,
	    "to the guest's own uid and gid (1000) or -1 succeeds without "
	    "effect; anything else EPERM"),
	PART(93, fchown, sys_fchown, "as chown"),
	PART(94, lchown, sys_lchown, "as chown"),
	OK(95, umask, sys_umask, "applied by the VMM to open, creat and mkdir"),
	OK(96, gettimeofday, sys_gettimeofday, ""),
	OK(97, getrlimit, sys_getrlimit,
	    "the run's limits (stack, descriptors, memory)"),
	PART(98, getrusage, sys_getrusage,
	    "ru_utime, ru_stime and ru_maxrss (RUSAGE_THREAD: the "
	    "process's); the rest 0"),
	OK(99, sysinfo, sys_sysinfo, "the guest's own memory figures"),
	OK(100, times, sys_times, "ticks since the process tree began"),
	NO(101, ptrace, ENOSYS, "no other process to inspect"),
	OK(102, getuid, sys_getuid, "1000"),
	NO(103, syslog, ENOSYS, "the machine's administration: not a guest's"),
	OK(104, getgid, sys_getgid, "1000"),
	PART(105, setuid, sys_setuid,
	    "to the guest's own uid (1000) only; else EPERM"),
	PART(106, setgid, sys_setgid,
	    "to the guest's own gid (1000) only; else EPERM"),
	OK(107, geteuid, sys_geteuid, "1000"),
	OK(108, getegid, sys_getegid, "1000"),
	OK(109, setpgid, sys_setpgid, "groups of the run's own processes"),
	OK(110, getppid, sys_getppid,
	    "0 for the first process; 1 for an orphan"),
	OK(111, getpgrp, sys_getpgrp, ""),
	OK(112, setsid, sys_setsid, ""),
	PART(113, setreuid, sys_setreuid, "as setuid"),
	PART(114, setregid, sys_setregid, "as setgid"),
	OK(115, getgroups, sys_getgroups, "one group: 1000"),
	NO(116, setgroups, EPERM, "the guest has no CAP_SETGID"),
	PART(117, setresuid, sys_setresuid, "as setuid"),
	OK(118, getresuid, sys_getresuid, "1000 1000 1000"),
	PART(119, setresgid, sys_setresgid, "as setgid"),
	OK(120, getresgid, sys_getresgid, "1000 1000 1000"),
	OK(121, getpgid, sys_getpgid, ""),
	PART(122, setfsuid, sys_setfsuid, "answers 1000 and changes nothing"),
	PART(123, setfsgid, sys_setfsgid, "answers 1000 and changes nothing"),
	OK(124, getsid, sys_getsid, ""),
	OK(125, capget, sys_capget, "uid 1000 holds none"),
	PART(126, capset, sys_capset,
	    "the empty set on oneself; anything else EPERM"),
	OK(127, rt_sigpending, sys_rt_sigpending, ""),
	PART(128, rt_sigtimedwait, sys_rt_sigtimedwait,
	    "siginfo names no sender (si_pid 0); a thread with others looks "
	    "again every 5 ms"),
	NO(129, rt_sigqueueinfo, ENOSYS, "no signal is ever delivered"),
	OK(130, rt_sigsuspend, sys_rt_sigsuspend, ""),
	OK(131, sigaltstack, sys_sigaltstack, ""),
	OK(132, utime, sys_utime, ""),
	NO(133, mknod, EPERM,
	    "no device or FIFO nodes: opening a FIFO would block the vm "
	    "process"),
	NO(134, uselib, ENOSYS,
	    "obsolete or never built: Linux answers ENOSYS too"),
	PART(135, personality, sys_personality,
	    "kept and answered back; no persona changes the guest"),
	NO(136, ustat, ENOSYS,
	    "obsolete or never built: Linux answers ENOSYS too"),
	PART(137, statfs, sys_statfs,
	    "the workspace's own figures: 4 KiB blocks, the quota as its size "
	    "(else 1 TiB), its use as counted; nothing of the host"),
	PART(138, fstatfs, sys_fstatfs, "as statfs"),
	NO(139, sysfs, ENOSYS,
	    "obsolete or never built: Linux answers ENOSYS too"),
	PART(140, getpriority, sys_getpriority,
	    "PRIO_PROCESS, of a process of the tree; others EINVAL"),
	PART(141, setpriority, sys_setpriority,
	    "PRIO_PROCESS: a process of the tree made nicer (EACCES to lower "
	    "its nice, as to an unprivileged user); kept and shown, not given "
	    "to the host's scheduler"),
	NO(142, sched_setparam, ENOSYS, "not provided"),
	NO(143, sched_getparam, ENOSYS, "not provided"),
	NO(144, sched_setscheduler, ENOSYS, "not provided"),
	NO(145, sched_getscheduler, ENOSYS, "not provided"),
	NO(146, sched_get_priority_max, ENOSYS, "not provided"),
	NO(147, sched_get_priority_min, ENOSYS, "not provided"),
	NO(148, sched_rr_get_interval, ENOSYS, "not provided"),
	OK(149, mlock, sys_mlock,
	    "nothing is paged out: Linux's checks, no effect"),
	OK(150, munlock, sys_mlock, "as mlock"),
	OK(151, mlockall, sys_mlockall, "as mlock"),
	OK(152, munlockall, sys_munlockall, "as mlock"),
	NO(153, vhangup, ENOSYS, "the machine's administration: not a guest's"),
	NO(154, modify_ldt, ENOSYS,
	    "the machine's administration: not a guest's"),
	NO(155, pivot_root, ENOSYS,
	    "the machine's administration: not a guest's"),
	NO(156, _sysctl, ENOSYS,
	    "obsolete or never built: Linux answers ENOSYS too"),
	PART(157, prctl, sys_prctl,
	    "PR_SET_NAME PR_GET_NAME (the tree's /proc shows the name), "
	    "PR_GET_DUMPABLE PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS "
	    "PR_GET_NO_NEW_PRIVS (always set); others ENOSYS"),
	PART(158, arch_prctl, sys_arch_prctl,
	    "ARCH_SET_FS ARCH_SET_GS ARCH_GET_FS ARCH_GET_GS; others EINVAL"),
	NO(159, adjtimex, ENOSYS,
	    "the machine's administration: not a guest's"),
	NO(160, setrlimit, ENOSYS, "not provided"),
	NO(161, chroot, ENOSYS, "the machine's administration: not a guest's"),
	NO(162, sync, ENOSYS, "not provided"),
	NO(163, acct, ENOSYS, "the machine's administration: not a guest's"),
	NO(164, settimeofday, EPERM,
	    "the machine's administration, as to an unprivileged user"),
	NO(165, mount, ENOSYS, "the machine's administration: not a guest's"),
	NO(166, umount2, ENOSYS, "the machine's administration: not a guest's"),
	NO(167, swapon, ENOSYS, "the machine's administration: not a guest's"),
	NO(168, swapoff, ENOSYS, "the machine's administration: not a guest's"),
	NO(169, reboot, ENOSYS, "the machine's administration: not a guest's"),
	NO(170, sethostname, ENOSYS,
	    "the machine's administration: not a guest's"),
	NO(171, setdomainname, ENOSYS,
	    "the machine's administration: not a guest's"),
	NO(172, iopl, ENOSYS, "the machine's administration: not a guest's"),
	NO(173, ioperm, ENOSYS, "the machine's administration: not a guest's"),
	NO(174, create_module, ENOSYS,
	    "obsolete or never built: Linux answers ENOSYS too"),
	NO(175, init_module, ENOSYS,
	    "the machine's administration: not a guest's"),
	NO(176, delete_module, ENOSYS,
	    "the machine's administration: not a guest's"),
	NO(177, get_kernel_syms, ENOSYS,
	    "obsolete or never built: Linux answers ENOSYS too"),
	NO(178, query_module, ENOSYS,
	    "obsolete or never built: Linux answers ENOSYS too"),
	NO(179, quotactl, ENOSYS,
	    "the machine's administration: not a guest's"),
	NO(180, nfsservctl, ENOSYS,
	    "obsolete or never built: Linux answers ENOSYS too"),
	NO(181, getpmsg, ENOSYS,
	    "obsolete or never built: Linux answers ENOSYS too"),
	NO(182, putpmsg, ENOSYS,
	    "obsolete or never built: Linux answers ENOSYS too"),
	NO(183, afs_syscall, ENOSYS,
	    "obsolete or never built: Linux answers ENOSYS too"),
	NO(184, tuxcall, ENOSYS,
	    "obsolete or never built: Linux answers ENOSYS too"),
	NO(185, security, ENOSYS,
	    "obsolete or never built: Linux answers ENOSYS too"),
	OK(186, gettid, sys_gettid, ""),
	NO(187, readahead, ENOSYS, "not provided"),
	NO(188, setxattr, EOPNOTSUPP,
	    "the workspace has no extended attributes"),
	NO(189, lsetxattr, EOPNOTSUPP,
	    "the workspace has no extended attributes"),
	NO(190, fsetxattr, EOPNOTSUPP,
	    "the workspace has no extended attributes"),
	OK(191, getxattr, sys_getxattr,
	    "ENOTSUP once the path exists: no extended attributes"),
	OK(192, lgetxattr, sys_lgetxattr, "as getxattr"),
	OK(193, fgetxattr, sys_fgetxattr, "as getxattr"),
	OK(194, listxattr, sys_listxattr, "an empty list once the path exists"),
	OK(195, llistxattr, sys_llistxattr, "as listxattr"),
	OK(196, flistxattr, sys_flistxattr, "as listxattr"),
	NO(197, removexattr, EOPNOTSUPP,
	    "the workspace has no extended attributes"),
	NO(198, lremovexattr, EOPNOTSUPP,
	    "the workspace has no extended attributes"),
	NO(199, fremovexattr, EOPNOTSUPP,
	    "the workspace has no extended attributes"),
	PART(200, tkill, sys_tkill,
	    "within the run's own processes; a signal for one thread is its "
	    "process's; no job-control stops"),
	OK(201, time, sys_time, ""),
	PART(202, futex, sys_futex,
	    "WAIT, WAKE, their BITSET forms, REQUEUE, CMP_REQUEUE among the "
	    "process's threads, and WAIT and WAKE between processes on a "
	    "shared mapping; no WAKE_OP or PI futexes"),
	PART(203, sched_setaffinity, sys_sched_setaffinity,
	    "the caller's own mask, kept and answered back; not the "
	    "host scheduler's"),
	OK(204, sched_getaffinity, sys_sched_getaffinity,
	    "the host's CPUs, as /proc/cpuinfo, /proc/stat and "
	    "/sys/devices/system/cpu/online"),
	NO(205, set_thread_area, ENOSYS,
	    "obsolete or never built: Linux answers ENOSYS too"),
	NO(206, io_setup, ENOSYS, "no asynchronous I/O"),
	NO(207, io_destroy, ENOSYS, "no asynchronous I/O"),
	NO(208, io_getevents, ENOSYS, "no asynchronous I/O"),
	NO(209, io_submit, ENOSYS, "no asynchronous I/O"),
	NO(210, io_cancel, ENOSYS, "no asynchronous I/O"),
	NO(211, get_thread_area, ENOSYS,
	    "obsolete or never built: Linux answers ENOSYS too"),
	NO(212, lookup_dcookie, ENOSYS,
	    "the machine's administration: not a guest's"),
	OK(213, epoll_create, sys_epoll_create, "a host epoll instance"),
	NO(214, epoll_ctl_old, ENOSYS,
	    "obsolete or never built: Linux answers ENOSYS too"),
	NO(215, epoll_wait_old, ENOSYS,
	    "obsolete or never built: Linux answers ENOSYS too"),
	NO(216, remap_file_pages, ENOSYS,
	    "obsolete or never built: Linux answers ENOSYS too"),
	OK(217, getdents64, sys_getdents64,
	    "image directories synthesized, workspace directories"),
	OK(218, set_tid_address, sys_set_tid_address, ""),
	NO(219, restart_syscall, ENOSYS, "not provided"),
	NO(220, semtimedop, ENOSYS, "no System V IPC"),
	NO(221, fadvise64, ENOSYS, "not provided"),
	NO(222, timer_create, ENOSYS,
	    "no timers: their expiry is a signal or a readable descriptor"),
	NO(223, timer_settime, ENOSYS,
	    "no timers: their expiry is a signal or a readable descriptor"),
	NO(224, timer_gettime, ENOSYS,
	    "no timers: their expiry is a signal or a readable descriptor"),
	NO(225, timer_getoverrun, ENOSYS,
	    "no timers: their expiry is a signal or a readable descriptor"),
	NO(226, timer_delete, ENOSYS,
	    "no timers: their expiry is a signal or a readable descriptor"),
	NO(227, clock_settime, EPERM,
	    "the machine's administration, as to an unprivileged user"),
	OK(228, clock_gettime, sys_clock_gettime,
	    "the host's clocks; the CPU-time clocks (and "
	    "clock_getcpuclockid's, "
	    "pthread_getcpuclockid's of a process of the tree) count the "
	    "guest process's user and system time (a thread's: its "
	    "process's)"),
	OK(229, clock_getres, sys_clock_getres, "1 ns"),
	OK(230, clock_nanosleep, sys_clock_nanosleep,
	    "relative and TIMER_ABSTIME; EINTR for a signal the guest "
	    "handles; cut short by the run's timeout"),
	OK(231, exit_group, sys_exit_group, "ends the run"),
	OK(232, epoll_wait, sys_epoll_wait,
	    "stdout and stderr always writable, an absent stdin at its end"),
	OK(233, epoll_ctl, sys_epoll_ctl,
	    "pipes, eventfds, epolls, stdio; image files EPERM as regular "
	    "files"),
	PART(234, tgkill, sys_tgkill,
	    "within the run's own processes; a signal for one thread is its "
	    "process's; no job-control stops"),
	OK(235, utimes, sys_utimes, ""),
	NO(236, vserver, ENOSYS,
	    "obsolete or never built: Linux answers ENOSYS too"),
	NO(237, mbind, ENOSYS, "one memory node"),
	NO(238, set_mempolicy, ENOSYS, "one memory node"),
	NO(239, get_mempolicy, ENOSYS, "one memory node"),
	NO(240, mq_open, ENOSYS, "no POSIX message queues"),
	NO(241, mq_unlink, ENOSYS, "no POSIX message queues"),
	NO(242, mq_timedsend, ENOSYS, "no POSIX message queues"),
	NO(243, mq_timedreceive, ENOSYS, "no POSIX message queues"),
	NO(244, mq_notify, ENOSYS, "no POSIX message queues"),
	NO(245, mq_getsetattr, ENOSYS, "no POSIX message queues"),
	NO(246, kexec_load, ENOSYS,
	    "the machine's administration: not a guest's"),
	PART(247, waitid, sys_waitid,
	    "P_PGID waits for any child; WNOWAIT leaves the child to be waited "
	    "for again"),
	NO(248, add_key, ENOSYS, "no kernel keyring"),
	NO(249, request_key, ENOSYS, "no kernel keyring"),
	NO(250, keyctl, ENOSYS, "no kernel keyring"),
	NO(251, ioprio_set, ENOSYS, "not provided"),
	NO(252, ioprio_get, ENOSYS, "not provided"),
	OK(253, inotify_init, sys_inotify_init,
	    "a host inotify instance (docs/vmm.md, \"File change events\")"),
	PART(254, inotify_add_watch, sys_inotify_add_watch,
	    "workspace paths; the image's and /proc's never change: a watch "
	    "that names no event"),
	OK(255, inotify_rm_watch, sys_inotify_rm_watch, ""),
	NO(256, migrate_pages, ENOSYS, "one memory node"),
	OK(257, openat, sys_openat, "openat2 RESOLVE_IN_ROOT at the workspace"),
	OK(258, mkdirat, sys_mkdirat, "workspace only"),
	NO(259, mknodat, EPERM,
	    "no device or FIFO nodes: opening a FIFO would block the vm "
	    "process"),
	PART(260, fchownat, sys_fchownat, "as chown"),
	OK(261, futimesat, sys_futimesat, ""),
	OK(262, newfstatat, sys_newfstatat, ""),
	OK(263, unlinkat, sys_unlinkat, "workspace only"),
	OK(264, renameat, sys_renameat, "within the workspace"),
	OK(265, linkat, sys_linkat,
	    "AT_SYMLINK_FOLLOW within the workspace; AT_EMPTY_PATH needs what "
	    "Linux needs"),
	PART(266, symlinkat, sys_symlinkat, "as symlink"),
	OK(267, readlinkat, sys_readlinkat, "workspace symlinks"),
	OK(268, fchmodat, sys_fchmodat, "as chmod"),
	OK(269, faccessat, sys_faccessat, "existence only"),
	PART(270, pselect6, sys_pselect6,
	    "as poll; the signal mask argument is not applied"),
	PART(271, ppoll, sys_ppoll,
	    "as poll; the signal mask argument is not applied"),
	NO(272, unshare, ENOSYS, "the machine's administration: not a guest's"),
	PART(273, set_robust_list, sys_set_robust_list,
	    "accepted; a dying thread's robust futexes are not released"),
	NO(274, get_robust_list, ENOSYS,
	    "one thread: callers fall back without it"),
	PART(275, splice, sys_splice,
	    "through a host buffer, as sendfile: 1 MiB a call, no zero copy"),
	PART(276, tee, sys_tee,
	    "the host's, between two pipes; a full output is EAGAIN"),
	NO(277, sync_file_range, ENOSYS, "not provided"),
	OK(278, vmsplice, sys_vmsplice, "as writev or readv of the pipe"),
	NO(279, move_pages, ENOSYS, "one memory node"),
	OK(280, utimensat, sys_utimensat,
	    "UTIME_NOW, UTIME_OMIT, AT_SYMLINK_NOFOLLOW; through an O_PATH "
	    "descriptor"),
	PART(281, epoll_pwait, sys_epoll_pwait,
	    "the signal mask is not applied (signals come at call boundaries)"),
	NO(282, signalfd, ENOSYS,
	    "signals reach handlers and sigwait, not a descriptor"),
	OK(283, timerfd_create, sys_timerfd_create,
	    "a host timerfd: REALTIME, MONOTONIC, BOOTTIME; the _ALARM "
	    "clocks EPERM"),
	OK(284, eventfd, sys_eventfd, "a host eventfd: crosses fork"),
	PART(285, fallocate, sys_fallocate,
	    "modes 0, KEEP_SIZE and PUNCH_HOLE; others EOPNOTSUPP"),
	OK(286, timerfd_settime, sys_timerfd_settime,
	    "the host's, on the host's clocks (the guest's)"),
	OK(287, timerfd_gettime, sys_timerfd_gettime, ""),
	OK(288, accept4, sys_accept4, "wakes for the guest's signals"),
	NO(289, signalfd4, ENOSYS,
	    "signals reach handlers and sigwait, not a descriptor"),
	OK(290, eventfd2, sys_eventfd2, "a host eventfd: crosses fork"),
	OK(291, epoll_create1, sys_epoll_create1, "a host epoll instance"),
	OK(292, dup3, sys_dup3, ""),
	OK(293, pipe2, sys_pipe2,
	    "a host pipe: crosses fork; no reader: EPIPE and SIGPIPE"),
	OK(294, inotify_init1, sys_inotify_init1, "IN_NONBLOCK, IN_CLOEXEC"),
	NO(295, preadv, ENOSYS, "not provided"),
	NO(296, pwritev, ENOSYS, "not provided"),
	NO(297, rt_tgsigqueueinfo, ENOSYS, "no signal is ever delivered"),
	NO(298, perf_event_open, ENOSYS,
	    "the machine's administration: not a guest's"),
	PART(299, recvmmsg, sys_recvmmsg,
	    "recvmsg/sendmsg per message; only the first waits; the timeout is "
	    "not applied"),
	NO(300, fanotify_init, ENOSYS,
	    "the machine's administration: not a guest's"),
	NO(301, fanotify_mark, ENOSYS,
	    "the machine's administration: not a guest's"),
	PART(302, prlimit64, sys_prlimit64,
	    "own process only; a new limit is accepted without effect"),
	NO(303, name_to_handle_at, ENOSYS,
	    "the machine's administration: not a guest's"),
	NO(304, open_by_handle_at, ENOSYS,
	    "the machine's administration: not a guest's"),
	NO(305, clock_adjtime, ENOSYS,
	    "the machine's administration: not a guest's"),
	NO(306, syncfs, ENOSYS, "not provided"),
	PART(307, sendmmsg, sys_sendmmsg,
	    "recvmsg/sendmsg per message; only the first waits"),
	NO(308, setns, ENOSYS, "the machine's administration: not a guest's"),
	NO(309, getcpu, ENOSYS, "not provided"),
	NO(310, process_vm_readv, ENOSYS, "no other process to inspect"),
	NO(311, process_vm_writev, ENOSYS, "no other process to inspect"),
	NO(312, kcmp, ENOSYS, "no other process to inspect"),
	NO(313, finit_module, ENOSYS,
	    "the machine's administration: not a guest's"),
	NO(314, sched_setattr, ENOSYS, "not provided"),
	NO(315, sched_getattr, ENOSYS, "not provided"),
	OK(316, renameat2, sys_renameat2,
	    "RENAME_NOREPLACE, RENAME_EXCHANGE; RENAME_WHITEOUT EINVAL"),
	NO(317, seccomp, ENOSYS, "the machine's administration: not a guest's"),
	OK(318, getrandom, sys_getrandom, "libsodium"),
	PART(319, memfd_create, sys_memfd_create,
	    "a nameless file in the workspace's /dev/shm (its quota); no "
	    "seals"),
	NO(320, kexec_file_load, ENOSYS,
	    "the machine's administration: not a guest's"),
	NO(321, bpf, ENOSYS, "the machine's administration: not a guest's"),
	PART(322, execveat, sys_execveat,
	    "absolute paths or AT_FDCWD, no flags"),
	NO(323, userfaultfd, ENOSYS,
	    "the machine's administration: not a guest's"),
	PART(324, membarrier, sys_membarrier,
	    "the private commands (threads share one vCPU); no global "
	    "ones"),
	OK(325, mlock2, sys_mlock2, "as mlock; MLOCK_ONFAULT"),
	PART(326, copy_file_range, sys_copy_file_range,
	    "regular files; through a host buffer, at most 1 MiB a call"),
	NO(327, preadv2, ENOSYS, "not provided"),
	NO(328, pwritev2, ENOSYS, "not provided"),
	NO(329, pkey_mprotect, ENOSYS, "not provided"),
	NO(330, pkey_alloc, ENOSYS, "not provided"),
	NO(331, pkey_free, ENOSYS, "not provided"),
	OK(332, statx, sys_statx,
	    "the basic fields (STATX_BASIC_STATS), as stat"),
	NO(333, io_pgetevents, ENOSYS, "no asynchronous I/O"),
	NO(334, rseq, ENOSYS, "callers fall back without it"),
	NO(424, pidfd_send_signal, ENOSYS,
	    "processes are named by pid only (callers fall back to it)"),
	NO(425, io_uring_setup, ENOSYS, "no asynchronous I/O"),
	NO(426, io_uring_enter, ENOSYS, "no asynchronous I/O"),
	NO(427, io_uring_register, ENOSYS, "no asynchronous I/O"),
	NO(428, open_tree, ENOSYS,
	    "the machine's administration: not a guest's"),
	NO(429, move_mount, ENOSYS,
	    "the machine's administration: not a guest's"),
	NO(430, fsopen, ENOSYS, "the machine's administration: not a guest's"),
	NO(431, fsconfig, ENOSYS,
	    "the machine's administration: not a guest's"),
	NO(432, fsmount, ENOSYS, "the machine's administration: not a guest's"),
	NO(433, fspick, ENOSYS, "the machine's administration: not a guest's"),
	NO(434, pidfd_open, ENOSYS,
	    "processes are named by pid only (callers fall back to it)"),
	NO(435, clone3, ENOSYS, "glibc falls back to clone"),
	OK(436, close_range, sys_close_range,
	    "CLOSE_RANGE_CLOEXEC; UNSHARE has nothing to unshare"),
	NO(437, openat2, ENOSYS, "not provided"),
	NO(438, pidfd_getfd, ENOSYS,
	    "processes are named by pid only (callers fall back to it)"),
	OK(439, faccessat2, sys_faccessat2, "existence only"),
	NO(440, process_madvise, ENOSYS, "not provided"),
	PART(441, epoll_pwait2, sys_epoll_pwait2,
	    "the timeout in whole milliseconds, rounded up; no signal mask"),
	NO(442, mount_setattr, ENOSYS,
	    "the machine's administration: not a guest's"),
	NO(443, quotactl_fd, ENOSYS,
	    "the machine's administration: not a guest's"),
	NO(444, landlock_create_ruleset, ENOSYS,
	    "the machine's administration: not a guest's"),
	NO(445, landlock_add_rule, ENOSYS,
	    "the machine's administration: not a guest's"),
	NO(446, landlock_restrict_self, ENOSYS,
	    "the machine's administration: not a guest's"),
	NO(447, memfd_secret, ENOSYS, "not provided"),
	NO(448, process_mrelease, ENOSYS, "not provided"),
	NO(449, futex_waitv, ENOSYS,
	    "one thread: callers fall back without it"),
	NO(450, set_mempolicy_home_node, ENOSYS, "one memory node"),

};

/* keep's own calls, far above Linux's numbers (guest/include/keep.h). */
static const struct vm_sysent keep_calls[] = {
	{ KEEP_SYS_FETCH, "keep_fetch", sys_keep_fetch, VM_SYS_FULL, 0,
	    "one outbound HTTP(S) request, decided by the policy "
	    "(docs/egress.md)" },
	{ KEEP_SYS_READY, "keep_ready", sys_keep_ready, VM_SYS_FULL, 0,
	    "a template's ready point: parks the guest; each clone resumes "
	    "with its run's request (docs/templates.md)" },
};

const struct vm_sysent *
vm_sys_row(uint64_t nr)
{
	size_t i;

	if (nr < nitems(linux_calls))
		return linux_calls[nr].name != NULL ? &linux_calls[nr] : NULL;
	for (i = 0; i < nitems(keep_calls); i++)
		if (keep_calls[i].nr == nr)
			return &keep_calls[i];
	return NULL;
}

const struct vm_sysent *
vm_sys_nth(size_t i)
{
	size_t n;

	for (n = 0; n < nitems(linux_calls); n++)
		if (linux_calls[n].name != NULL && i-- == 0)
			return &linux_calls[n];
	return i < nitems(keep_calls) ? &keep_calls[i] : NULL;
}

const char *
vm_sys_level_name(enum vm_sys_level level)
{
	switch (level) {
	case VM_SYS_FULL:
		return "full";
	case VM_SYS_PARTIAL:
		return "partial";
	case VM_SYS_REFUSED:
		return "refused";
	default:
		return "unknown";
	}
}

/* Markdown, as docs/vmm.md holds it (tests/integration/vmm_guests.sh
 * checks that the two agree). */
void
vmm_print_syscalls(FILE *out)
{
	const struct vm_sysent *e;
	size_t i;

	fprintf(out, "| nr | call | support | why |\n|---|---|---|---|\n");
	for (i = 0; (e = vm_sys_nth(i)) != NULL; i++) {
		fprintf(out, "| %u | %s | %s", e->nr, e->name,
		    vm_sys_level_name(e->level));
		if (e->level == VM_SYS_REFUSED)
			fprintf(out, " (%s)", strerrorname_np(e->err));
		fprintf(out, " | %s |\n", e->why);
	}
}

int64_t
vm_syscall(struct vm *vm, uint64_t nr, const uint64_t a[6])
{
	const struct vm_sysent *e = vm_sys_row(nr);
	int64_t ret;

	if (e != NULL && e->fn != NULL)
		ret = e->fn(vm, a);
	else {
		if (e == NULL)
			log_debug("guest: unknown system call %llu",
			    (unsigned long long)nr);
		ret = e != NULL ? -e->err : -ENOSYS;
	}
	if (vm->cfg->trace) {
		char num[24];
		const char *ename =
		    ret < 0 && ret >= -4095 ? strerrorname_np((int)-ret) : NULL;

		snprintf(num, sizeof(num), "%llu", (unsigned long long)nr);
		fprintf(stderr,
		    "keep: syscall %s(0x%llx, 0x%llx, 0x%llx) = %lld%s%s\n",
		    e != NULL ? e->name : num, (unsigned long long)a[0],
		    (unsigned long long)a[1], (unsigned long long)a[2],
		    (long long)ret, ename != NULL ? " " : "",
		    ename != NULL ? ename : "");
	}
	return ret;
}
