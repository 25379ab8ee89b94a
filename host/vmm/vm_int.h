/* Internals of the VMM shared by its files (host/vmm/). */
#ifndef KEEP_VMM_VM_INT_H
#define KEEP_VMM_VM_INT_H

#include <linux/kvm.h>
#include <limits.h>
#include <stdint.h>

#include "host/vmm/elf.h"
#include "host/vmm/vmm.h"
#include "host/vmm/workspace.h"

#define VM_PAGE 4096ULL
#define VM_HUGE (2ULL << 20)
#define VM_PATH_MAX WS_PATH_MAX /* guest paths, NUL included */
#define VM_MAX_FILES_DEFAULT 1024
#define VM_MAX_FILES_LIMIT 65536
#define VM_GUEST_ID 1000 /* the guest's uid and gid */
#define VM_UMASK_DEFAULT 022

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

struct vfd {
	enum vfd_kind kind;
	int outfd; /* VFD_OUT: 1 or 2 */
	const struct vmm_file *file; /* VFD_IMAGE */
	uint64_t off; /* VFD_IMAGE, VFD_SYNTH, VFD_VDIR and VFD_SDIR
			 (entries returned) */
	int hostfd; /* VFD_HOST */
	int cloexec;
	int flags; /* O_ACCMODE | O_APPEND | O_NONBLOCK as opened */
	enum vm_dev dev; /* VFD_DEV */
	/* VFD_SYNTH: the bytes (data points into owned or at the
	 * program); VFD_SDIR: "name\0" entries, each name after a
	 * one-byte DT_ type. */
	const uint8_t *data;
	uint64_t len;
	uint8_t *owned;
	char *path; /* normalized guest path (not for 0-2 at start) */
};

struct vm {
	const struct vmm_config *cfg;
	struct vmm_result *res;
	int vmfd, vcpufd;
	struct kvm_run *run;
	size_t run_size;
	uint8_t *mem;
	uint64_t memsz;
	struct elf_info elf;
	/* Layout of the program's memory (docs/vmm.md). */
	uint64_t brk_start, brk_cur, brk_max;
	uint64_t mmap_lo, mmap_hi; /* page allocator range */
	uint8_t *mmap_used; /* one byte per page of [mmap_lo, mmap_hi) */
	uint64_t mmap_pages_used, mmap_pages_peak;
	uint64_t brk_peak;
	uint64_t stack_lo, stack_top;
	/* Files. */
	struct vfd *fds;
	unsigned nfds;
	int ws_fd; /* the workspace directory, or -1 */
	uint64_t ws_used; /* bytes the workspace holds (docs/vmm.md) */
	unsigned umask; /* the guest's */
	unsigned host_umask; /* the process's, put back at the end */
	char cwd[VM_PATH_MAX];
	int stopped; /* the guest is done; res says how */
};

/* Guest memory: NULL unless [addr, addr+len) lies wholly in the
 * program's memory (never the kernel's first 2 MiB). */
void *vm_gptr(struct vm *, uint64_t addr, uint64_t len);
/* Copy a NUL-terminated guest string; 0 or -EFAULT / -ENAMETOOLONG. */
int vm_gstr(struct vm *, uint64_t addr, char *out, size_t max);

/* KEEP_SYS_FETCH (fetch.c, guest/include/keep.h). */
int64_t vm_keep_fetch(struct vm *, uint64_t addr, uint64_t size);

/* The page allocator behind mmap (mem.c). */
int vm_mem_init(struct vm *);
uint64_t vm_mmap_alloc(struct vm *, uint64_t len); /* 0 on failure */
int vm_mmap_free(struct vm *, uint64_t addr, uint64_t len);
int vm_mmap_is_used(struct vm *, uint64_t addr, uint64_t len);

/* The guest's CPUID table once vmm_prepare() has run (cpuid.c), and one
 * register of one leaf in it (reg 0-3: EAX EBX ECX EDX; 0 if absent). */
const struct kvm_cpuid2 *vm_cpuid(void);
uint32_t vm_cpuid_reg(uint32_t fn, uint32_t idx, int reg);

/* Stop the guest with a status and reason. */
void vm_stop(struct vm *, enum vmm_status, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* System calls (sys_table.c, host/vmm/sys.h): nr and args from the
 * guest's registers; returns the value for RAX (a negative errno on
 * failure). The synced registers in vm->run may be changed. */
int64_t vm_syscall(struct vm *, uint64_t nr, const uint64_t a[6]);

/* Files (fs.c). */
int vm_fs_init(struct vm *);
void vm_fs_free(struct vm *);

#endif
