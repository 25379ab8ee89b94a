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
#define VM_MAX_FILES_DEFAULT 64

enum vfd_kind {
	VFD_FREE = 0,
	VFD_STDIN,
	VFD_OUT, /* stdout or stderr: the output sink */
	VFD_IMAGE, /* one of cfg->files, read-only */
	VFD_VDIR, /* a directory that exists only as a prefix of files */
	VFD_HOST /* a workspace file or directory */
};

struct vfd {
	enum vfd_kind kind;
	int outfd; /* VFD_OUT: 1 or 2 */
	const struct vmm_file *file; /* VFD_IMAGE */
	uint64_t off; /* VFD_IMAGE, VFD_VDIR (entries returned) */
	int hostfd; /* VFD_HOST */
	int cloexec;
	char *path; /* VFD_VDIR, VFD_HOST: normalized guest path */
};

struct vm {
	const struct vmm_config *cfg;
	struct vmm_result *res;
	int vmfd, vcpufd;
	struct kvm_run *run;
	size_t run_size;
	uint8_t *mem;
	uint64_t memsz;
	struct elf_info elf; /* the program */
	struct elf_info interp; /* its PT_INTERP loader, if it has one */
	uint64_t interp_base; /* AT_BASE: 0 for a static program */
	uint64_t start; /* first RIP: the loader's entry, else the program's */
	/* Layout of the program's memory (docs/vmm.md). */
	uint64_t brk_start, brk_cur, brk_max;
	uint64_t mmap_lo, mmap_hi; /* page allocator range */
	uint8_t *mmap_used; /* one byte per page of [mmap_lo, mmap_hi) */
	uint64_t mmap_pages_used, mmap_pages_peak;
	uint64_t brk_peak;
	uint64_t stack_lo, stack_top;
	/* Files. */
	uint32_t *img_order; /* cfg->files by path (imgtree.c) */
	uint8_t *img_checked; /* per file: its hash was checked */
	struct vfd *fds;
	unsigned nfds;
	int ws_fd; /* the workspace directory, or -1 */
	uint64_t ws_written;
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

/* Place and copy the program's PT_INTERP loader from the image's files
 * (loader.c); once the memory layout is set. VMM_OK or a VMM_E_*. */
int vm_load_interp(struct vm *, char *err, size_t errlen);

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
uint64_t vm_mmap_alloc(struct vm *, uint64_t len); /* 0 on failure */
int vm_mmap_free(struct vm *, uint64_t addr, uint64_t len);
int vm_mmap_is_used(struct vm *, uint64_t addr, uint64_t len);
/* Copy a file's bytes into a private mapping; bytes read or -errno. */
int64_t vm_mmap_fill(
    struct vm *, int fd, uint64_t g, uint64_t len, uint64_t off);

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
int vm_img_child(struct vm *, const char *dir, size_t idx, char *name,
    size_t max, int *is_dir);

/* Files (fs.c). */
int vm_fs_init(struct vm *);
void vm_fs_free(struct vm *);

#endif
