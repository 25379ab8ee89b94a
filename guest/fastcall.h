/*
 * The guest's fast calls (docs/vmm.md "Calls answered in the guest"):
 * what the VMM writes in the kernel's 2 MiB for guest/fastcall.c to
 * read. Shared by both sides, so they cannot drift apart.
 *
 * Under kvm-pvm a guest's `syscall` stays at CPL3 and enters LSTAR at
 * native speed; only the stub's `out` costs an exit (about 30 us). A few
 * calls CPython makes by the hundred at start-up (stat of the image's
 * files, fstat, lseek(fd, 0, SEEK_CUR), ioctl(TCGETS) on files,
 * rt_sigaction queries, getcwd) are pure questions about state the VMM
 * keeps: it writes that state here before every entry of the vCPU, and
 * the code at LSTAR answers them from it without an exit. Everything
 * else, and anything unusual about those, goes to the VMM as before.
 * The trap platform's stub runs the same answers in its SIGSYS handler
 * (guest/trap_stub.c answer_here), from the same pages mapped at the
 * same addresses.
 *
 * Every page here but one is user read-only: the guest cannot change
 * what it is answered, and nothing here is more than the program could
 * ask with a system call. The VMM reads back only the descriptors the
 * guest opened or closed itself (struct fast_changes), as requests.
 */
#ifndef KEEP_GUEST_FASTCALL_H
#define KEEP_GUEST_FASTCALL_H

#include <stddef.h>
#include <stdint.h>

#include "host/vmm/abi.h"

/* Descriptors answered here: the lowest ones, where CPython's are. */
#define FAST_FDS 128
#define FAST_CWD_MAX 512
/* Path arguments longer than this (NUL included) go to the VMM. */
#define FAST_PATH_MAX 256
/* Room the fast code needs below the caller's red zone. */
#define FAST_STACK 4096

/* A call's registers, lowest first as guest/fastcall_entry.S pushes
 * them; ret is the answer for RAX. r11 is the caller's RFLAGS and rcx
 * its RIP, as `syscall` leaves them (the trap stub fills the same from
 * its SIGSYS frame). */
struct fast_regs {
	int64_t ret;
	uint64_t r9, r8, r10, rdx, rsi, rdi, r11, rcx, rax;
};

/* 1 with r->ret the answer, or 0: the VMM answers (guest/fastcall.c). */
int fast_call(struct fast_regs *r);

/* A descriptor's kind (host/vmm/vm_int.h enum vfd_kind, as the VMM
 * answers these calls for it). */
enum {
	FAST_FD_FREE = 0,
	FAST_FD_PIPE, /* stdin or the output sink: a synthesized FIFO */
	FAST_FD_IMAGE, /* an image file: mode, size, ino, offset */
	FAST_FD_DIR, /* an image directory: ino */
	FAST_FD_OTHER /* anything else: stat and lseek go to the VMM */
};

struct fast_fd {
	uint8_t kind;
	uint8_t tty; /* TCGETS is the terminal's (tty.c): not answered */
	uint8_t cloexec; /* F_GETFD */
	uint8_t dir_end; /* FAST_FD_DIR: its entries are all read */
	uint16_t mode; /* st_mode */
	uint16_t dir_len; /* FAST_FD_DIR: strlen of its path, the first
			     dir_len bytes of file's path ("/": 1) */
	uint32_t file; /* FAST_FD_IMAGE: its place at GUEST_FASTIDX;
			  FAST_FD_DIR: the place of the first file under
			  it; or FAST_NO_FILE */
	uint64_t size, ino, off;
};

#define FAST_NO_FILE UINT32_MAX

/* Open pages of the mmap area, [lo, hi), at GUEST_FASTRUNS. */
struct fast_run {
	uint64_t lo, hi;
};

#define FAST_RUNS (GUEST_FASTRUNS_LEN / sizeof(struct fast_run))

/* The kernel's struct sigaction (host/vmm/vm_int.h vm_sigaction). */
struct fast_sigaction {
	uint64_t handler, flags, restorer, mask;
};

/*
 * At GUEST_FASTDATA. enabled and the stack bounds come first: the entry
 * (guest/fastcall_entry.S) reads them before it touches the stack.
 */
struct keep_fast {
	uint64_t enabled; /* 0: every call exits */
	uint64_t sp_lo, sp_hi; /* a caller's RSP must lie in [sp_lo, sp_hi) */
	uint64_t gap_lo, gap_hi; /* and not in [gap_lo, gap_hi) (the guard) */
	/* Guest memory the answers may be written to and paths read from:
	 * [mem_lo, mem_hi) less [guard_lo, guard_hi), as vm_gptr checks,
	 * and of it only what is open in the host (host/vmm/mem_space.c):
	 * [mem_lo, low_hi) (the program's segments and heap), [stack_lo,
	 * mem_hi) (the stack), and the runs of the mmap area's open pages
	 * at GUEST_FASTRUNS (nruns of them, sorted; runs_whole 0: they did
	 * not fit, and pointers into the mmap area go to the VMM). */
	uint64_t mem_lo, mem_hi, guard_lo, guard_hi;
	uint64_t low_hi, stack_lo;
	uint32_t nruns, runs_whole;
	uint32_t nfds; /* entries of fd[] in use (the rest: the VMM's) */
	uint32_t no_workspace; /* nothing exists but the image: a path
				  not in it is answered ENOENT here */
	uint32_t nfiles; /* entries at GUEST_FASTIDX; 0: no index (paths
			    go to the VMM) */
	uint32_t cwd_len; /* strlen(cwd); 0: getcwd goes to the VMM */
	struct fast_sigaction act[65]; /* by signal number; 0 unused */
	struct fast_fd fd[FAST_FDS];
	char cwd[FAST_CWD_MAX];
	/* getpid, gettid; getuid and its kin (one id for all four); the
	 * most one read and one getdents64 fill (a longer buffer is
	 * checked only that far). */
	uint32_t pid, tid, id;
	uint32_t io_chunk, dir_chunk;
	uint32_t changes_here; /* GUEST_FASTCHANGE is the guest's to write */
	uint32_t pad;
	/* Where the image's bytes lie in the guest (GUEST_IMAGE_GPA), read
	 * only; 0: image files are read by the VMM. */
	uint64_t image_at;
};

/*
 * At GUEST_FASTCHANGE, the one page here the guest writes (user
 * read-write): what the guest's own answers did to its descriptors
 * since the VMM last looked. An image file opened here (read-only,
 * among the files whose hash is checked), read here (its offset moved)
 * or an image file or directory closed here holds nothing to flush,
 * unlock or tell another process, so the VMM may make the change later: it reads the page back as its
 * next exit begins, before anything looks at the descriptors, makes
 * each change as open(2), read(2) and close(2) would (an open only of a
 * checked image file into a free descriptor, an offset only of an image
 * file, a close only of an image file or directory), drops anything
 * else and zeroes the page. Each entry is
 * committed by its op, written last; a fast call is never interrupted
 * by a signal handler (the VMM delays a signal that comes inside this
 * code), so no answer here sees another half made. Whatever the program
 * writes here itself asks no more than open(2) and close(2) could.
 */
enum {
	FAST_CH_NONE = 0,
	FAST_CH_CLOSED,
	FAST_CH_OPENED, /* an image file */
	FAST_CH_MOVED, /* an image file's or directory's offset */
	FAST_CH_OPENED_DIR /* an image directory */
};

/* fast_change.flags */
#define FAST_CH_CLOEXEC 1
#define FAST_CH_NONBLOCK 2

struct fast_change {
	uint8_t op;
	uint8_t flags; /* FAST_CH_OPENED, _OPENED_DIR: FAST_CH_* */
	uint16_t dir_len; /* FAST_CH_OPENED_DIR: as fast_fd.dir_len */
	uint32_t file; /* FAST_CH_OPENED: its place at GUEST_FASTIDX;
			  FAST_CH_OPENED_DIR: as fast_fd.file */
	uint64_t off; /* the reader's offset (a directory's: entries) */
};

struct fast_changes {
	struct fast_change fd[FAST_FDS];
	/* Nonzero once an op is written: the VMM reads the entries only
	 * then (and zeroes it), not 128 of them at every call. A program
	 * that writes an op and not this has its own change unread. */
	uint32_t changed;
};

/* The image's files at GUEST_FASTIDX, sorted by path (strcmp order):
 * nfiles entries, then their paths, each NUL-terminated, at path_off
 * from GUEST_FASTIDX. */
struct fast_file {
	uint32_t path_off, path_len;
	uint32_t mode; /* st_mode: S_IFREG | permissions */
	uint32_t checked; /* its hash is checked: open it here */
	uint64_t size; /* st_ino is fast_ino of the path, made when asked */
	uint64_t data; /* its bytes' offset in the image (image_at) */
};

/* st_ino of a synthesized file: FNV-1a of its guest path, as
 * host/vmm/fs.c synth_stat makes it. */
static inline uint64_t
fast_ino_n(const char *path, size_t n)
{
	uint64_t h = 1469598103934665603ULL;
	size_t i;

	for (i = 0; i < n && path[i] != '\0'; i++)
		h = (h ^ (uint8_t)path[i]) * 1099511628211ULL;
	return h;
}

static inline uint64_t
fast_ino(const char *path)
{
	return fast_ino_n(path, SIZE_MAX);
}

#endif
