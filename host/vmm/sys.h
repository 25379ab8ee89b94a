/*
 * The guest's system calls as data (host/vmm/sys_table.c): one row per
 * Linux x86-64 call, with its name, its handler and how far keep
 * supports it, and the handlers of each family in a file of its own:
 *
 *   fs.c          files, descriptors, directories
 *   sys_file.c    modes, owners, links, times, statfs, xattrs, copies
 *   sys_poll.c    poll, select and their timeouts
 *   procfs.c      the synthetic /proc and /dev (no calls of its own)
 *   sys_mem.c     brk, mmap and the rest of the address space
 *   sys_time.c    clocks and sleeps
 *   sys_proc.c    identity, limits, uname, exit
 *   sys_signal.c  signal actions and masks
 *   sys_thread.c  futex, tids
 *   sys_event.c   epoll, eventfd
 *   sys_socket.c  socketpair: AF_UNIX pairs, no network
 *
 * Every handler has one signature: the guest's six argument registers
 * in, the value for RAX out (a negative errno on failure). What a call
 * needs beyond its arguments it finds in struct vm (the synced segment
 * registers for arch_prctl are vm->run->s.regs.sregs).
 */
#ifndef KEEP_VMM_SYS_H
#define KEEP_VMM_SYS_H

#include <stddef.h>
#include <stdint.h>

struct vm;

typedef int64_t (*vm_sys_fn)(struct vm *, const uint64_t a[6]);

enum vm_sys_level {
	VM_SYS_UNKNOWN = 0, /* no row: ENOSYS */
	VM_SYS_FULL, /* as Linux */
	VM_SYS_PARTIAL, /* served, with the difference in why */
	VM_SYS_REFUSED /* answers -err at once, for the reason in why */
};

struct vm_sysent {
	uint32_t nr;
	const char *name;
	vm_sys_fn fn; /* NULL when refused */
	enum vm_sys_level level;
	int err; /* refused: the errno */
	const char *why;
};

/* The row of call nr, or NULL when keep knows no such call. */
const struct vm_sysent *vm_sys_row(uint64_t nr);
/* Row i of the table in number order (i from 0), or NULL past the end:
 * for listing the table (keep run --syscalls). */
const struct vm_sysent *vm_sys_nth(size_t i);
/* "full", "partial" or "refused". */
const char *vm_sys_level_name(enum vm_sys_level);

/* Copy len bytes to guest memory at addr: 0 or -EFAULT. */
int64_t vm_put(struct vm *, uint64_t addr, const void *p, size_t len);
/* Copy len bytes from guest memory at addr: 0 or -EFAULT. */
int64_t vm_get(struct vm *, uint64_t addr, void *p, size_t len);

/* Files (fs.c). */
int64_t sys_read(struct vm *, const uint64_t a[6]);
int64_t sys_write(struct vm *, const uint64_t a[6]);
int64_t sys_open(struct vm *, const uint64_t a[6]);
int64_t sys_close(struct vm *, const uint64_t a[6]);
int64_t sys_stat(struct vm *, const uint64_t a[6]);
int64_t sys_fstat(struct vm *, const uint64_t a[6]);
int64_t sys_lstat(struct vm *, const uint64_t a[6]);
int64_t sys_lseek(struct vm *, const uint64_t a[6]);
int64_t sys_ioctl(struct vm *, const uint64_t a[6]);
int64_t sys_pread64(struct vm *, const uint64_t a[6]);
int64_t sys_pwrite64(struct vm *, const uint64_t a[6]);
int64_t sys_readv(struct vm *, const uint64_t a[6]);
int64_t sys_writev(struct vm *, const uint64_t a[6]);
int64_t sys_access(struct vm *, const uint64_t a[6]);
int64_t sys_dup(struct vm *, const uint64_t a[6]);
int64_t sys_dup2(struct vm *, const uint64_t a[6]);
int64_t sys_dup3(struct vm *, const uint64_t a[6]);
int64_t sys_fcntl(struct vm *, const uint64_t a[6]);
int64_t sys_fsync(struct vm *, const uint64_t a[6]);
int64_t sys_fdatasync(struct vm *, const uint64_t a[6]);
int64_t sys_ftruncate(struct vm *, const uint64_t a[6]);
int64_t sys_getcwd(struct vm *, const uint64_t a[6]);
int64_t sys_chdir(struct vm *, const uint64_t a[6]);
int64_t sys_rename(struct vm *, const uint64_t a[6]);
int64_t sys_mkdir(struct vm *, const uint64_t a[6]);
int64_t sys_rmdir(struct vm *, const uint64_t a[6]);
int64_t sys_unlink(struct vm *, const uint64_t a[6]);
int64_t sys_readlink(struct vm *, const uint64_t a[6]);
int64_t sys_getdents64(struct vm *, const uint64_t a[6]);
int64_t sys_openat(struct vm *, const uint64_t a[6]);
int64_t sys_mkdirat(struct vm *, const uint64_t a[6]);
int64_t sys_newfstatat(struct vm *, const uint64_t a[6]);
int64_t sys_unlinkat(struct vm *, const uint64_t a[6]);
int64_t sys_renameat(struct vm *, const uint64_t a[6]);
int64_t sys_readlinkat(struct vm *, const uint64_t a[6]);
int64_t sys_faccessat(struct vm *, const uint64_t a[6]);
int64_t sys_faccessat2(struct vm *, const uint64_t a[6]);
int64_t sys_pipe(struct vm *, const uint64_t a[6]);
int64_t sys_pipe2(struct vm *, const uint64_t a[6]);

/* Waiting on descriptors (poll.c). */
int64_t sys_renameat2(struct vm *, const uint64_t a[6]);

/* Files: modes, owners, links, times, figures, copies (sys_file.c). */
int64_t sys_chmod(struct vm *, const uint64_t a[6]);
int64_t sys_fchmod(struct vm *, const uint64_t a[6]);
int64_t sys_fchmodat(struct vm *, const uint64_t a[6]);
int64_t sys_umask(struct vm *, const uint64_t a[6]);
int64_t sys_chown(struct vm *, const uint64_t a[6]);
int64_t sys_fchown(struct vm *, const uint64_t a[6]);
int64_t sys_lchown(struct vm *, const uint64_t a[6]);
int64_t sys_fchownat(struct vm *, const uint64_t a[6]);
int64_t sys_getgroups(struct vm *, const uint64_t a[6]);
int64_t sys_setgroups(struct vm *, const uint64_t a[6]);
int64_t sys_symlink(struct vm *, const uint64_t a[6]);
int64_t sys_symlinkat(struct vm *, const uint64_t a[6]);
int64_t sys_link(struct vm *, const uint64_t a[6]);
int64_t sys_linkat(struct vm *, const uint64_t a[6]);
int64_t sys_utimensat(struct vm *, const uint64_t a[6]);
int64_t sys_utimes(struct vm *, const uint64_t a[6]);
int64_t sys_futimesat(struct vm *, const uint64_t a[6]);
int64_t sys_utime(struct vm *, const uint64_t a[6]);
int64_t sys_statfs(struct vm *, const uint64_t a[6]);
int64_t sys_fstatfs(struct vm *, const uint64_t a[6]);
int64_t sys_statx(struct vm *, const uint64_t a[6]);
int64_t sys_getxattr(struct vm *, const uint64_t a[6]);
int64_t sys_lgetxattr(struct vm *, const uint64_t a[6]);
int64_t sys_fgetxattr(struct vm *, const uint64_t a[6]);
int64_t sys_listxattr(struct vm *, const uint64_t a[6]);
int64_t sys_llistxattr(struct vm *, const uint64_t a[6]);
int64_t sys_flistxattr(struct vm *, const uint64_t a[6]);
int64_t sys_sendfile(struct vm *, const uint64_t a[6]);
int64_t sys_copy_file_range(struct vm *, const uint64_t a[6]);
int64_t sys_close_range(struct vm *, const uint64_t a[6]);
int64_t sys_fchdir(struct vm *, const uint64_t a[6]);
int64_t sys_creat(struct vm *, const uint64_t a[6]);
int64_t sys_truncate(struct vm *, const uint64_t a[6]);
int64_t sys_fallocate(struct vm *, const uint64_t a[6]);
int64_t sys_flock(struct vm *, const uint64_t a[6]);

/* Waiting on descriptors (sys_poll.c). */
int64_t sys_poll(struct vm *, const uint64_t a[6]);
int64_t sys_ppoll(struct vm *, const uint64_t a[6]);
int64_t sys_select(struct vm *, const uint64_t a[6]);
int64_t sys_pselect6(struct vm *, const uint64_t a[6]);

/* Memory (sys_mem.c). */
int64_t sys_mmap(struct vm *, const uint64_t a[6]);
int64_t sys_mprotect(struct vm *, const uint64_t a[6]);
int64_t sys_munmap(struct vm *, const uint64_t a[6]);
int64_t sys_brk(struct vm *, const uint64_t a[6]);
int64_t sys_mremap(struct vm *, const uint64_t a[6]);
int64_t sys_madvise(struct vm *, const uint64_t a[6]);
int64_t sys_msync(struct vm *, const uint64_t a[6]);

/* Time (sys_time.c). */
int64_t sys_nanosleep(struct vm *, const uint64_t a[6]);
int64_t sys_gettimeofday(struct vm *, const uint64_t a[6]);
int64_t sys_time(struct vm *, const uint64_t a[6]);
int64_t sys_clock_gettime(struct vm *, const uint64_t a[6]);
int64_t sys_clock_getres(struct vm *, const uint64_t a[6]);
int64_t sys_clock_nanosleep(struct vm *, const uint64_t a[6]);

/* Processes: identity, limits, exit (sys_proc.c). */
int64_t sys_uname(struct vm *, const uint64_t a[6]);
int64_t sys_getrlimit(struct vm *, const uint64_t a[6]);
int64_t sys_sysinfo(struct vm *, const uint64_t a[6]);
int64_t sys_prctl(struct vm *, const uint64_t a[6]);
int64_t sys_getpriority(struct vm *, const uint64_t a[6]);
int64_t sys_setpriority(struct vm *, const uint64_t a[6]);
int64_t sys_getrusage(struct vm *, const uint64_t a[6]);
int64_t sys_times(struct vm *, const uint64_t a[6]);
int64_t sys_getuid(struct vm *, const uint64_t a[6]);
int64_t sys_getgid(struct vm *, const uint64_t a[6]);
int64_t sys_geteuid(struct vm *, const uint64_t a[6]);
int64_t sys_getegid(struct vm *, const uint64_t a[6]);
int64_t sys_arch_prctl(struct vm *, const uint64_t a[6]);
int64_t sys_sched_getaffinity(struct vm *, const uint64_t a[6]);
int64_t sys_exit_group(struct vm *, const uint64_t a[6]);
int64_t sys_prlimit64(struct vm *, const uint64_t a[6]);
int64_t sys_getrandom(struct vm *, const uint64_t a[6]);
int64_t sys_getresuid(struct vm *, const uint64_t a[6]);
int64_t sys_getresgid(struct vm *, const uint64_t a[6]);
int64_t sys_setuid(struct vm *, const uint64_t a[6]);
int64_t sys_setgid(struct vm *, const uint64_t a[6]);
int64_t sys_setreuid(struct vm *, const uint64_t a[6]);
int64_t sys_setregid(struct vm *, const uint64_t a[6]);
int64_t sys_setresuid(struct vm *, const uint64_t a[6]);
int64_t sys_setresgid(struct vm *, const uint64_t a[6]);
int64_t sys_setfsuid(struct vm *, const uint64_t a[6]);
int64_t sys_setfsgid(struct vm *, const uint64_t a[6]);
int64_t sys_keep_fetch(struct vm *, const uint64_t a[6]);
int64_t sys_keep_ready(struct vm *, const uint64_t a[6]); /* template.c */

/* Processes: fork, exec, wait, kill, groups (proc.c, exec.c). */
int64_t sys_clone(struct vm *, const uint64_t a[6]);
int64_t sys_fork(struct vm *, const uint64_t a[6]);
int64_t sys_vfork(struct vm *, const uint64_t a[6]);
int64_t sys_wait4(struct vm *, const uint64_t a[6]);
int64_t sys_waitid(struct vm *, const uint64_t a[6]);
int64_t sys_kill(struct vm *, const uint64_t a[6]);
int64_t sys_tkill(struct vm *, const uint64_t a[6]);
int64_t sys_tgkill(struct vm *, const uint64_t a[6]);
int64_t sys_getpid(struct vm *, const uint64_t a[6]);
int64_t sys_getppid(struct vm *, const uint64_t a[6]);
int64_t sys_setpgid(struct vm *, const uint64_t a[6]);
int64_t sys_getpgid(struct vm *, const uint64_t a[6]);
int64_t sys_getpgrp(struct vm *, const uint64_t a[6]);
int64_t sys_getsid(struct vm *, const uint64_t a[6]);
int64_t sys_setsid(struct vm *, const uint64_t a[6]);
int64_t sys_execve(struct vm *, const uint64_t a[6]);
int64_t sys_execveat(struct vm *, const uint64_t a[6]);

/* Signals (sys_signal.c). */
int64_t sys_rt_sigaction(struct vm *, const uint64_t a[6]);
int64_t sys_rt_sigprocmask(struct vm *, const uint64_t a[6]);
int64_t sys_sigaltstack(struct vm *, const uint64_t a[6]);
int64_t sys_rt_sigreturn(struct vm *, const uint64_t a[6]);
int64_t sys_rt_sigpending(struct vm *, const uint64_t a[6]);
int64_t sys_rt_sigsuspend(struct vm *, const uint64_t a[6]);
int64_t sys_rt_sigtimedwait(struct vm *, const uint64_t a[6]);
int64_t sys_pause(struct vm *, const uint64_t a[6]);
int64_t sys_alarm(struct vm *, const uint64_t a[6]);
int64_t sys_getitimer(struct vm *, const uint64_t a[6]);
int64_t sys_setitimer(struct vm *, const uint64_t a[6]);

/* epoll and eventfd (sys_event.c). */
int64_t sys_eventfd(struct vm *, const uint64_t a[6]);
int64_t sys_eventfd2(struct vm *, const uint64_t a[6]);

/* Socket pairs (sys_socket.c). */
int64_t sys_socket(struct vm *, const uint64_t a[6]);
int64_t sys_socketpair(struct vm *, const uint64_t a[6]);
int64_t sys_bind(struct vm *, const uint64_t a[6]);
int64_t sys_listen(struct vm *, const uint64_t a[6]);
int64_t sys_accept(struct vm *, const uint64_t a[6]);
int64_t sys_accept4(struct vm *, const uint64_t a[6]);
int64_t sys_connect(struct vm *, const uint64_t a[6]);
int64_t sys_sendmsg(struct vm *, const uint64_t a[6]);
int64_t sys_recvmsg(struct vm *, const uint64_t a[6]);
int64_t sys_sendmmsg(struct vm *, const uint64_t a[6]);
int64_t sys_recvmmsg(struct vm *, const uint64_t a[6]);
int64_t sys_setsockopt(struct vm *, const uint64_t a[6]);
int64_t sys_shutdown(struct vm *, const uint64_t a[6]);
int64_t sys_getsockname(struct vm *, const uint64_t a[6]);
int64_t sys_getpeername(struct vm *, const uint64_t a[6]);
int64_t sys_getsockopt(struct vm *, const uint64_t a[6]);
int64_t sys_sendto(struct vm *, const uint64_t a[6]);
int64_t sys_recvfrom(struct vm *, const uint64_t a[6]);
int64_t sys_inotify_init(struct vm *, const uint64_t a[6]);
int64_t sys_memfd_create(struct vm *, const uint64_t a[6]);
int64_t sys_splice(struct vm *, const uint64_t a[6]);
int64_t sys_tee(struct vm *, const uint64_t a[6]);
int64_t sys_vmsplice(struct vm *, const uint64_t a[6]);
int64_t sys_timerfd_create(struct vm *, const uint64_t a[6]);
int64_t sys_timerfd_settime(struct vm *, const uint64_t a[6]);
int64_t sys_timerfd_gettime(struct vm *, const uint64_t a[6]);
int64_t sys_sched_setaffinity(struct vm *, const uint64_t a[6]);
int64_t sys_capget(struct vm *, const uint64_t a[6]);
int64_t sys_capset(struct vm *, const uint64_t a[6]);
int64_t sys_personality(struct vm *, const uint64_t a[6]);
int64_t sys_mlock(struct vm *, const uint64_t a[6]);
int64_t sys_mlock2(struct vm *, const uint64_t a[6]);
int64_t sys_mlockall(struct vm *, const uint64_t a[6]);
int64_t sys_munlockall(struct vm *, const uint64_t a[6]);
int64_t sys_membarrier(struct vm *, const uint64_t a[6]);
int64_t sys_inotify_init1(struct vm *, const uint64_t a[6]);
int64_t sys_inotify_add_watch(struct vm *, const uint64_t a[6]);
int64_t sys_inotify_rm_watch(struct vm *, const uint64_t a[6]);
int64_t sys_epoll_create(struct vm *, const uint64_t a[6]);
int64_t sys_epoll_create1(struct vm *, const uint64_t a[6]);
int64_t sys_epoll_ctl(struct vm *, const uint64_t a[6]);
int64_t sys_epoll_wait(struct vm *, const uint64_t a[6]);
int64_t sys_epoll_pwait(struct vm *, const uint64_t a[6]);
int64_t sys_epoll_pwait2(struct vm *, const uint64_t a[6]);

/* Threads (sys_thread.c). */
int64_t sys_gettid(struct vm *, const uint64_t a[6]);
int64_t sys_futex(struct vm *, const uint64_t a[6]);
int64_t sys_set_tid_address(struct vm *, const uint64_t a[6]);
int64_t sys_set_robust_list(struct vm *, const uint64_t a[6]);
int64_t sys_sched_yield(struct vm *, const uint64_t a[6]);
int64_t sys_exit(struct vm *, const uint64_t a[6]);

#endif
