/*
 * Landlock (Linux 5.13+), without the kernel headers' version: Debian 12
 * ships ABI 2 headers while the kernels keep runs on reach ABI 6 and more.
 *
 * landlock_confine_dir() restricts the calling process, and every process
 * it forks afterwards, to the file hierarchy beneath dirfd: reading,
 * writing, creating and removing files and directories there, nothing
 * else anywhere (no execution, no device, socket or FIFO nodes). From
 * ABI 4 it also handles TCP bind and connect (allowing none), from ABI 6
 * it scopes signals and abstract UNIX sockets to the process's own
 * domain: it cannot signal, or connect to an abstract socket of, a
 * process outside it, even one of the same user.
 *
 * The caller must have PR_SET_NO_NEW_PRIVS set (or CAP_SYS_ADMIN).
 * Descriptors already open are not affected.
 *
 * Returns the ABI version enforced (>= 1), 0 if the kernel has no Landlock
 * (ENOSYS, or disabled at boot: EOPNOTSUPP), or -1 with errno set if
 * Landlock is there and could not be applied.
 */
#ifndef KEEP_LIB_LANDLOCK_H
#define KEEP_LIB_LANDLOCK_H

/* The ABI version the running kernel offers; 0 without Landlock. */
int landlock_abi(void);

int landlock_confine_dir(int dirfd);

/*
 * The same with LANDLOCK_* flags: SOCKETS lets the process make socket
 * nodes beneath dirfd (a guest's named AF_UNIX sockets); TCP leaves TCP
 * bind and connect unhandled, for a process whose network namespace is
 * its own and holds nothing but loopback (host/vm_confine.h), where the
 * namespace is what confines them.
 */
#define LANDLOCK_SOCKETS 0x1u
#define LANDLOCK_TCP 0x2u
/* ABSTRACT: abstract UNIX names left unscoped, for the same process
 * whose namespace already keeps them (they are per network namespace):
 * its sandbox's other runs, each a domain of its own, reach them. */
#define LANDLOCK_ABSTRACT 0x4u
int landlock_confine_dir_flags(int dirfd, unsigned flags);

#endif
