/* Landlock, by system call number and our own copy of the structures
 * (lib/landlock.h says why). */
#include <sys/syscall.h>

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "lib/landlock.h"

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#define SYS_landlock_add_rule 445
#define SYS_landlock_restrict_self 446
#endif

#define LL_CREATE_RULESET_VERSION (1u << 0)
#define LL_RULE_PATH_BENEATH 1

/* Filesystem rights, by the ABI that introduced them. */
#define LL_FS_EXECUTE (1ull << 0)
#define LL_FS_WRITE_FILE (1ull << 1)
#define LL_FS_READ_FILE (1ull << 2)
#define LL_FS_READ_DIR (1ull << 3)
#define LL_FS_REMOVE_DIR (1ull << 4)
#define LL_FS_REMOVE_FILE (1ull << 5)
#define LL_FS_MAKE_CHAR (1ull << 6)
#define LL_FS_MAKE_DIR (1ull << 7)
#define LL_FS_MAKE_REG (1ull << 8)
#define LL_FS_MAKE_SOCK (1ull << 9)
#define LL_FS_MAKE_FIFO (1ull << 10)
#define LL_FS_MAKE_BLOCK (1ull << 11)
#define LL_FS_MAKE_SYM (1ull << 12)
#define LL_FS_ABI1 ((1ull << 13) - 1)
#define LL_FS_REFER (1ull << 13) /* ABI 2 */
#define LL_FS_TRUNCATE (1ull << 14) /* ABI 3 */
#define LL_FS_IOCTL_DEV (1ull << 15) /* ABI 5 */
#define LL_NET_BIND_TCP (1ull << 0) /* ABI 4 */
#define LL_NET_CONNECT_TCP (1ull << 1)
#define LL_SCOPE_ABSTRACT_UNIX_SOCKET (1ull << 0) /* ABI 6 */
#define LL_SCOPE_SIGNAL (1ull << 1)

struct ll_ruleset_attr {
	uint64_t handled_access_fs;
	uint64_t handled_access_net; /* ABI 4 */
	uint64_t scoped; /* ABI 6 */
};

struct ll_path_beneath_attr {
	uint64_t allowed_access;
	int32_t parent_fd;
} __attribute__((packed));

int
landlock_abi(void)
{
	long v = syscall(SYS_landlock_create_ruleset, NULL, (size_t)0,
	    LL_CREATE_RULESET_VERSION);

	return v < 0 ? 0 : (int)v;
}

int
landlock_confine_dir(int dirfd)
{
	return landlock_confine_dir_flags(dirfd, 0);
}

int
landlock_confine_dir_flags(int dirfd, unsigned flags)
{
	struct ll_ruleset_attr ra;
	struct ll_path_beneath_attr pb;
	size_t rasize = sizeof(ra.handled_access_fs);
	int abi = landlock_abi(), rfd, saved;

	if (abi <= 0)
		return 0;
	memset(&ra, 0, sizeof(ra));
	ra.handled_access_fs = LL_FS_ABI1;
	if (abi >= 2)
		ra.handled_access_fs |= LL_FS_REFER;
	if (abi >= 3)
		ra.handled_access_fs |= LL_FS_TRUNCATE;
	if (abi >= 5)
		ra.handled_access_fs |= LL_FS_IOCTL_DEV;
	if (abi >= 4) {
		if (!(flags & LANDLOCK_TCP))
			ra.handled_access_net =
			    LL_NET_BIND_TCP | LL_NET_CONNECT_TCP;
		rasize = offsetof(struct ll_ruleset_attr, scoped);
	}
	if (abi >= 6) {
		ra.scoped = LL_SCOPE_SIGNAL |
		    ((flags & LANDLOCK_ABSTRACT)
		            ? 0
		            : LL_SCOPE_ABSTRACT_UNIX_SOCKET);
		rasize = sizeof(ra);
	}
	memset(&pb, 0, sizeof(pb));
	/* What a workspace needs: no execution, no special nodes. */
	pb.allowed_access = ra.handled_access_fs &
	    (LL_FS_WRITE_FILE | LL_FS_READ_FILE | LL_FS_READ_DIR |
	        LL_FS_REMOVE_DIR | LL_FS_REMOVE_FILE | LL_FS_MAKE_DIR |
	        LL_FS_MAKE_REG | LL_FS_MAKE_SYM | LL_FS_REFER | LL_FS_TRUNCATE |
	        ((flags & LANDLOCK_SOCKETS) ? LL_FS_MAKE_SOCK : 0));
	pb.parent_fd = dirfd;
	if ((rfd = (int)syscall(SYS_landlock_create_ruleset, &ra, rasize, 0)) ==
	    -1)
		return -1;
	if (syscall(SYS_landlock_add_rule, rfd, LL_RULE_PATH_BENEATH, &pb, 0) ==
	        -1 ||
	    syscall(SYS_landlock_restrict_self, rfd, 0) == -1) {
		saved = errno;
		close(rfd);
		errno = saved;
		return -1;
	}
	close(rfd);
	return abi;
}
