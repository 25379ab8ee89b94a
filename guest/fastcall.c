/*
 * The calls the guest answers itself (docs/vmm.md "Calls answered in the
 * guest"; the data: guest/fastcall.h). Each answer is the one the VMM
 * would give, computed the way the VMM computes it (host/vmm/fs.c,
 * sys_signal.c, imgtree.c, workspace.c: the functions named below); a
 * case the VMM would answer any other way, or that needs more than the
 * page holds, returns 0 and the call exits as before.
 *
 * This runs at CPL3 with the program's own rights, on its stack, and
 * writes only where the program asked for an answer, after the same
 * bounds check vm_gptr makes, and in the changed descriptors' page
 * (struct fast_changes), which the VMM takes as open(2), read(2) and
 * close(2) requests: a program that calls into the middle of it gains
 * nothing it could not do itself. Built freestanding (mk/fastcall.mk):
 * general registers only (a system call preserves the vector
 * registers), no red zone, no stack protector, no writable data.
 */
#include <stddef.h>
#include <stdint.h>

#include "guest/fastcall.h"

#define NR_read 0
#define NR_open 2
#define NR_close 3
#define NR_pread64 17
#define NR_readlink 89
#define NR_stat 4
#define NR_fstat 5
#define NR_lstat 6
#define NR_lseek 8
#define NR_rt_sigaction 13
#define NR_ioctl 16
#define NR_access 21
#define NR_getpid 39
#define NR_fcntl 72
#define NR_getcwd 79
#define NR_getuid 102
#define NR_getgid 104
#define NR_geteuid 107
#define NR_getegid 108
#define NR_gettid 186
#define NR_getdents64 217
#define NR_openat 257
#define NR_newfstatat 262
#define NR_faccessat 269
#define NR_faccessat2 439

#define E_NOENT 2
#define E_BADF 9
#define E_NOTDIR 20
#define E_INVAL 22
#define E_NOTTY 25
#define E_SPIPE 29
#define E_RANGE 34

#define AT_FDCWD_ (-100)
#define AT_EMPTY_PATH_ 0x1000
#define O_CREAT_ 0100
#define O_NOCTTY_ 0400
#define O_LARGEFILE_ 0100000
#define O_NOFOLLOW_ 0400000
#define O_CLOEXEC_ 02000000
/* An image file is opened here only read-only, with none of the flags
 * open_at keeps (its f->flags: the access mode, O_APPEND, O_NONBLOCK)
 * or acts on for an image file (O_DIRECTORY, O_PATH, O_TRUNC, ...). */
#define OPEN_HERE_FLAGS (O_NOCTTY_ | O_LARGEFILE_ | O_NOFOLLOW_ | O_CLOEXEC_)
#define O_NONBLOCK_ 04000
#define O_DIRECTORY_ 0200000
/* An image directory also with O_DIRECTORY and O_NONBLOCK (kept). */
#define OPEN_DIR_HERE_FLAGS (OPEN_HERE_FLAGS | O_DIRECTORY_ | O_NONBLOCK_)
#define SEEK_CUR_ 1
#define F_GETFD_ 1
#define FD_CLOEXEC_ 1
#define TCGETS_ 0x5401
#define S_IFDIR_ 0040000
#define RFLAGS_TF 0x100

/* struct stat on x86-64, as the VMM writes it (put_stat). */
struct kstat {
	uint64_t dev, ino, nlink;
	uint32_t mode, uid, gid, pad0;
	uint64_t rdev;
	int64_t size, blksize, blocks;
	int64_t times[6];
	int64_t unused[3];
};

static const struct keep_fast *
data(void)
{
	return (const struct keep_fast *)(uintptr_t)GUEST_FASTDATA;
}

/* Whether [addr, end) lies in pages open in the host (vm_space_ok):
 * a closed page would fault here, where the VMM answers EFAULT. */
static int
open_pages(const struct keep_fast *d, uint64_t addr, uint64_t end)
{
	const struct fast_run *r =
	    (const struct fast_run *)(uintptr_t)GUEST_FASTRUNS;
	uint32_t lo = 0, hi = d->nruns, mid;

	if (end <= d->low_hi || addr >= d->stack_lo)
		return 1;
	if (!d->runs_whole)
		return 0;
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (r[mid].hi <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < d->nruns && r[lo].lo <= addr && end <= r[lo].hi;
}

/* vm_gptr's check (host/vmm/mem.c): inside the program's memory, not
 * in the stack guard, in pages open to it. */
static int
ok(const struct keep_fast *d, uint64_t addr, uint64_t len)
{
	uint64_t end = addr + len;

	return end >= addr && addr >= d->mem_lo && end <= d->mem_hi &&
	    !(addr < d->guard_hi && end > d->guard_lo) &&
	    open_pages(d, addr, end);
}

static void
copy(void *dst, const void *src, size_t n)
{
	uint8_t *d = dst;
	const uint8_t *s = src;

	while (n-- > 0)
		*d++ = *s++;
}

static int
cmp(const char *a, const char *b)
{
	while (*a != '\0' && *a == *b) {
		a++;
		b++;
	}
	return (int)(uint8_t)*a - (int)(uint8_t)*b;
}

static size_t
len(const char *s)
{
	size_t n = 0;

	while (s[n] != '\0')
		n++;
	return n;
}

/* The guest's string at addr into buf (vm_gstr), or -1: unreadable, or
 * too long for this page's answers. */
static int
gstr(const struct keep_fast *d, uint64_t addr, char *buf)
{
	size_t i;

	for (i = 0; i < FAST_PATH_MAX; i++) {
		/* Pages are open whole: one check a page. */
		if ((i == 0 || (addr + i) % 4096 == 0) && !ok(d, addr + i, 1))
			return -1;
		buf[i] = *(const char *)(uintptr_t)(addr + i);
		if (buf[i] == '\0')
			return 0;
	}
	return -1;
}

/* ws_normalize (host/vmm/workspace.c) of an absolute path: "." and ".."
 * resolved textually, empty components dropped, "/" for nothing. */
static void
normalize(const char *p, char *out)
{
	size_t n = 0, i = 0, s, k;

	while (p[i] != '\0') {
		while (p[i] == '/')
			i++;
		if (p[i] == '\0')
			break;
		s = i;
		while (p[i] != '\0' && p[i] != '/')
			i++;
		k = i - s;
		if (k == 1 && p[s] == '.')
			continue;
		if (k == 2 && p[s] == '.' && p[s + 1] == '.') {
			while (n > 0 && out[n - 1] != '/')
				n--;
			if (n > 0)
				n--;
			continue;
		}
		out[n++] = '/';
		copy(out + n, p + s, k);
		n += k;
	}
	if (n == 0)
		out[n++] = '/';
	out[n] = '\0';
}

/* vm_synth_path (host/vmm/procfs.c): /proc and /dev are the VMM's. */
static int
under(const char *path, const char *dir)
{
	size_t n = len(dir), i;

	for (i = 0; i < n; i++)
		if (path[i] != dir[i])
			return 0;
	return path[n] == '\0' || path[n] == '/';
}

static const struct fast_file *
file_at(uint32_t pos)
{
	return (const struct fast_file *)(uintptr_t)GUEST_FASTIDX + pos;
}

static const char *
path_at(uint32_t pos)
{
	return (const char *)(uintptr_t)GUEST_FASTIDX + file_at(pos)->path_off;
}

/* What the guest changed itself in descriptor fd (struct fast_changes). */
static volatile struct fast_change *
change(uint32_t fd)
{
	return &((struct fast_changes *)(uintptr_t)GUEST_FASTCHANGE)->fd[fd];
}

/* An op was written: the VMM reads the page as its next exit begins. */
static void
changed(void)
{
	((volatile struct fast_changes *)(uintptr_t)GUEST_FASTCHANGE)->changed =
	    1;
}

/* Whether descriptor fd (< d->nfds) is free, as the VMM will have it
 * once it reads back what the guest changed. */
static int
is_free(const struct keep_fast *d, uint32_t fd)
{
	uint8_t op = d->changes_here ? change(fd)->op : FAST_CH_NONE;

	if (op == FAST_CH_CLOSED)
		return 1;
	if (op == FAST_CH_OPENED || op == FAST_CH_OPENED_DIR)
		return 0;
	return d->fd[fd].kind == FAST_FD_FREE;
}

/* Descriptor fd (< d->nfds) as the VMM will have it: the page's entry,
 * free once closed here, or an image file opened here (as open_at
 * makes it: at offset 0, read-only). */
static void
view(const struct keep_fast *d, uint32_t fd, struct fast_fd *v)
{
	const struct fast_fd *e = &d->fd[fd];
	uint8_t op = d->changes_here ? change(fd)->op : FAST_CH_NONE;
	uint32_t pos;

	v->kind = e->kind;
	v->tty = e->tty;
	v->cloexec = e->cloexec;
	v->dir_end = e->dir_end;
	v->mode = e->mode;
	v->dir_len = e->dir_len;
	v->file = e->file;
	v->size = e->size;
	v->ino = e->ino;
	v->off = e->off;
	if (op == FAST_CH_CLOSED)
		v->kind = FAST_FD_FREE;
	else if (op == FAST_CH_MOVED &&
	    (e->kind == FAST_FD_IMAGE || e->kind == FAST_FD_DIR))
		v->off = change(fd)->off;
	else if (op == FAST_CH_OPENED_DIR) {
		pos = change(fd)->file;
		v->kind = pos < d->nfiles ? FAST_FD_DIR : FAST_FD_OTHER;
		v->tty = 0;
		v->cloexec = (change(fd)->flags & FAST_CH_CLOEXEC) != 0;
		v->dir_end = 0;
		v->mode = S_IFDIR_ | 0755;
		v->dir_len = change(fd)->dir_len;
		v->file = pos;
		v->size = 4096;
		v->off = change(fd)->off;
		v->ino =
		    pos < d->nfiles ? fast_ino_n(path_at(pos), v->dir_len) : 0;
	} else if (op == FAST_CH_OPENED) {
		pos = change(fd)->file;
		v->kind = pos < d->nfiles ? FAST_FD_IMAGE : FAST_FD_OTHER;
		v->tty = 0;
		v->cloexec = (change(fd)->flags & FAST_CH_CLOEXEC) != 0;
		v->dir_end = 0;
		v->file = pos < d->nfiles ? pos : FAST_NO_FILE;
		v->off = change(fd)->off;
		if (pos < d->nfiles) {
			v->mode = (uint16_t)file_at(pos)->mode;
			v->size = file_at(pos)->size;
			v->ino = fast_ino(path_at(pos));
		}
	}
}

/* Where an image file's reader now is (struct fast_changes): the VMM
 * takes it as the next exit begins. */
static void
moved(uint32_t fd, uint64_t off)
{
	volatile struct fast_change *c = change(fd);

	c->off = off;
	if (c->op != FAST_CH_OPENED && c->op != FAST_CH_OPENED_DIR)
		c->op = FAST_CH_MOVED; /* last: the entry is made */
	changed();
}

/* n bytes from the image (read-only at d->image_at) to the program. */
static void
copy_out(uint64_t dst, uint64_t src, uint64_t n)
{
	__asm__ volatile("cld; rep movsb"
	                 : "+D"(dst), "+S"(src), "+c"(n)
	                 :
	                 : "memory", "cc");
}

/*
 * The descriptor a call names, as fd_get (fs.c) takes it: the low 32
 * bits. FD_VMM when the page does not describe it (the VMM answers);
 * FD_FREE, answered EBADF here as fd_get's NULL is there; or FD_HERE
 * and *v.
 */
enum { FD_VMM, FD_FREE, FD_HERE };

static int
described(const struct keep_fast *d, uint64_t fd, struct fast_fd *v,
    struct fast_regs *r)
{
	fd = (uint32_t)fd;
	if (fd >= d->nfds)
		return FD_VMM;
	view(d, (uint32_t)fd, v);
	if (v->kind == FAST_FD_FREE) {
		r->ret = -E_BADF;
		return FD_FREE;
	}
	return FD_HERE;
}

/* The first position whose path is not below key (imgtree.c). */
static uint32_t
lower_bound(const struct keep_fast *d, const char *key)
{
	uint32_t lo = 0, hi = d->nfiles;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (cmp(path_at(mid), key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static const struct fast_file *
find(const struct keep_fast *d, const char *path)
{
	uint32_t pos = lower_bound(d, path);

	return pos < d->nfiles && cmp(path_at(pos), path) == 0 ? file_at(pos)
	                                                       : NULL;
}

/* vm_img_is_dir: some file's path begins with path + "/". */
static int
is_dir(const struct keep_fast *d, const char *path)
{
	char prefix[FAST_PATH_MAX + 1];
	size_t n = len(path), i;
	uint32_t pos;
	const char *p;

	if (cmp(path, "/") == 0)
		return 1;
	copy(prefix, path, n);
	prefix[n] = '/';
	prefix[n + 1] = '\0';
	pos = lower_bound(d, prefix);
	if (pos >= d->nfiles)
		return 0;
	p = path_at(pos);
	for (i = 0; i <= n; i++)
		if (p[i] != prefix[i])
			return 0;
	return 1;
}

/* image_file_on_the_way (fs.c): a file of the image as a directory. */
static int
file_on_the_way(const struct keep_fast *d, const char *path)
{
	char prefix[FAST_PATH_MAX];
	size_t i;

	for (i = 1; path[i] != '\0'; i++) {
		if (path[i] != '/')
			continue;
		copy(prefix, path, i);
		prefix[i] = '\0';
		if (find(d, prefix) != NULL)
			return 1;
	}
	return 0;
}

/* synth_stat (fs.c) into the guest's buffer, checked first. */
static int
put_stat(const struct keep_fast *d, uint64_t buf, uint32_t mode, uint64_t size,
    uint64_t ino, struct fast_regs *r)
{
	struct kstat *st = (struct kstat *)(uintptr_t)buf;
	uint64_t *w = (uint64_t *)(uintptr_t)buf;
	size_t i;

	if (!ok(d, buf, sizeof(*st)))
		return 0; /* EFAULT: the VMM's to say */
	for (i = 0; i < sizeof(*st) / 8; i++)
		w[i] = 0;
	st->dev = 0x6b;
	st->ino = ino;
	st->mode = mode;
	st->nlink = 1;
	st->size = (int64_t)size;
	st->blksize = 4096;
	st->blocks = (int64_t)((size + 511) / 512);
	r->ret = 0;
	return 1;
}

/* stat_fd (fs.c) for the kinds this page describes. */
static int
stat_fd(
    const struct keep_fast *d, uint64_t fd, uint64_t buf, struct fast_regs *r)
{
	struct fast_fd v;
	const struct fast_fd *f = &v;
	int at = described(d, fd, &v, r);

	if (at != FD_HERE)
		return at == FD_FREE;
	switch (f->kind) {
	case FAST_FD_PIPE:
	case FAST_FD_IMAGE:
	case FAST_FD_DIR:
		return put_stat(d, buf, f->mode, f->size, f->ino, r);
	default:
		return 0;
	}
}

/* What stat_path (fs.c) finds at an absolute path, when only the image
 * decides it. */
enum { L_VMM, L_FILE, L_DIR, L_NOENT, L_NOTDIR };

/* The guest's path at addr, read and normalized (guest_path with an
 * absolute path: the descriptor is not used), then looked up. raw gets
 * the string as given, path the normalized one. */
static int
lookup(const struct keep_fast *d, uint64_t addr, char *raw, char *path,
    const struct fast_file **f)
{
	if (gstr(d, addr, raw) != 0 || raw[0] != '/' || d->nfiles == 0)
		return L_VMM;
	normalize(raw, path);
	/* The vm process's own files (procfs.c's vm_synth_path). */
	if (under(path, "/proc") || under(path, "/dev") ||
	    under(path, "/sys/devices/system/cpu"))
		return L_VMM;
	if ((*f = find(d, path)) != NULL)
		return L_FILE;
	/* The workspace would be asked next; without one, nothing but the
	 * image exists. */
	if (!d->no_workspace)
		return L_VMM;
	if (is_dir(d, path))
		return L_DIR;
	return file_on_the_way(d, path) ? L_NOTDIR : L_NOENT;
}

/* stat_at (fs.c) of an absolute path the image answers. */
static int
stat_at(const struct keep_fast *d, uint64_t dirfd, uint64_t addr, uint64_t buf,
    uint64_t flags, struct fast_regs *r)
{
	char raw[FAST_PATH_MAX], path[FAST_PATH_MAX];
	const struct fast_file *f = NULL;

	if (gstr(d, addr, raw) != 0)
		return 0;
	if (raw[0] == '\0' && (flags & AT_EMPTY_PATH_))
		return stat_fd(d, dirfd, buf, r);
	switch (lookup(d, addr, raw, path, &f)) {
	case L_FILE:
		return put_stat(d, buf, f->mode, f->size, fast_ino(path), r);
	case L_DIR:
		return put_stat(
		    d, buf, S_IFDIR_ | 0755, 4096, fast_ino(path), r);
	case L_NOENT:
		r->ret = -E_NOENT;
		return 1;
	case L_NOTDIR:
		r->ret = -E_NOTDIR;
		return 1;
	default:
		return 0;
	}
}

/* access_at (fs.c): stat_path's answer, without the stat. */
static int
access_at(const struct keep_fast *d, uint64_t addr, struct fast_regs *r)
{
	char raw[FAST_PATH_MAX], path[FAST_PATH_MAX];
	const struct fast_file *f = NULL;

	switch (lookup(d, addr, raw, path, &f)) {
	case L_FILE:
	case L_DIR:
		r->ret = 0;
		return 1;
	case L_NOENT:
		r->ret = -E_NOENT;
		return 1;
	case L_NOTDIR:
		r->ret = -E_NOTDIR;
		return 1;
	default:
		return 0;
	}
}

/* The lowest free descriptor open_at's fd_alloc (fs.c) would take, or
 * d->nfds when none here is (the VMM answers: one above, or EMFILE). */
static uint32_t
lowest_free(const struct keep_fast *d)
{
	uint32_t i;

	for (i = 0; i < d->nfds; i++)
		if (is_free(d, i))
			break;
	return i;
}

/*
 * open_at (fs.c) of an image file whose hash is checked, read-only and
 * with only the flags open_at keeps nothing of: the lowest free
 * descriptor, noted for the VMM (struct fast_changes). CPython opens
 * each module so, and ld.so each library.
 */
static int
open_image(const struct keep_fast *d, const struct fast_file *f, uint64_t flags,
    struct fast_regs *r)
{
	volatile struct fast_change *c;
	uint32_t fd;

	if (!d->changes_here || !f->checked ||
	    (flags & ~(uint64_t)OPEN_HERE_FLAGS) != 0 ||
	    (fd = lowest_free(d)) == d->nfds)
		return 0;
	c = change(fd);
	c->flags = (flags & O_CLOEXEC_) ? FAST_CH_CLOEXEC : 0;
	c->dir_len = 0;
	c->file = (uint32_t)(f - file_at(0));
	c->off = 0; /* a read may have left its offset here before a close */
	c->op = FAST_CH_OPENED; /* last: the entry is made */
	changed();
	r->ret = fd;
	return 1;
}

/* The place of the first file under directory path (vm_img_first_under,
 * imgtree.c), or d->nfiles when none is. */
static uint32_t
first_under(const struct keep_fast *d, const char *path)
{
	char prefix[FAST_PATH_MAX + 1];
	size_t n = len(path);

	if (cmp(path, "/") == 0)
		return 0;
	copy(prefix, path, n);
	prefix[n] = '/';
	prefix[n + 1] = '\0';
	return lower_bound(d, prefix);
}

/* open_at (fs.c) of an image directory (when nothing but the image
 * exists: lookup says so), read-only: as open_image, noted with the
 * directory's path as the first dir_len bytes of its first file's. */
static int
open_dir(const struct keep_fast *d, const char *path, uint64_t flags,
    struct fast_regs *r)
{
	volatile struct fast_change *c;
	uint32_t fd, pos = first_under(d, path);
	size_t n = len(path);

	if (!d->changes_here || pos >= d->nfiles || n >= FAST_PATH_MAX - 1 ||
	    (flags & ~(uint64_t)OPEN_DIR_HERE_FLAGS) != 0 ||
	    (fd = lowest_free(d)) == d->nfds)
		return 0;
	c = change(fd);
	c->flags = (uint8_t)(((flags & O_CLOEXEC_) ? FAST_CH_CLOEXEC : 0) |
	    ((flags & O_NONBLOCK_) ? FAST_CH_NONBLOCK : 0));
	c->dir_len = (uint16_t)n;
	c->file = pos;
	c->off = 0;
	c->op = FAST_CH_OPENED_DIR; /* last: the entry is made */
	changed();
	r->ret = fd;
	return 1;
}

/* open_at (fs.c) of a path that does not exist (ld.so and CPython look
 * for files in many places), or of an image file open_image takes.
 * Anything else is opened by the VMM. */
static int
open_path(const struct keep_fast *d, uint64_t addr, uint64_t flags,
    struct fast_regs *r)
{
	char raw[FAST_PATH_MAX], path[FAST_PATH_MAX];
	const struct fast_file *f = NULL;
	size_t n;
	int found;

	found = lookup(d, addr, raw, path, &f);
	n = len(raw);
	/* "name/" must be a directory: EISDIR with O_CREAT before anything
	 * is looked up, ENOTDIR for a file. */
	if (n > 1 && raw[n - 1] == '/' &&
	    (found == L_FILE || (flags & O_CREAT_)))
		return 0;
	if (found == L_FILE)
		return open_image(d, f, flags, r);
	if (found == L_DIR)
		return open_dir(d, path, flags, r);
	if (found != L_NOENT && found != L_NOTDIR)
		return 0;
	/* A full table answers EMFILE first: some descriptor is free. */
	if (lowest_free(d) == d->nfds)
		return 0;
	r->ret = found == L_NOTDIR ? -E_NOTDIR : -E_NOENT;
	return 1;
}

/* sys_rt_sigaction (sys_signal.c), asking only. */
static int
sigaction_query(const struct keep_fast *d, struct fast_regs *r)
{
	int sig = (int)r->rdi;

	if (sig < 1 || sig > 64 || r->r10 != 8) {
		r->ret = -E_INVAL;
		return 1;
	}
	if (r->rsi != 0)
		return 0;
	if (r->rdx != 0) {
		if (!ok(d, r->rdx, sizeof(d->act[sig])))
			return 0;
		copy((void *)(uintptr_t)r->rdx, &d->act[sig],
		    sizeof(d->act[sig]));
	}
	r->ret = 0;
	return 1;
}

/*
 * A read of an image file (sys_read, sys_pread64, do_read, read_bytes in
 * fs.c): the buffer checked as far as do_read checks it, then the bytes
 * from the reader's offset on (pread: from pos, the offset untouched),
 * copied from the image, and the offset moved; at or past the end,
 * nothing. CPython reads each module whole and then once more; ld.so
 * reads each library's header and preads its notes.
 */
static int
read_image(const struct keep_fast *d, struct fast_regs *r, int pread)
{
	struct fast_fd v;
	uint64_t want = r->rdx < d->io_chunk ? r->rdx : d->io_chunk, n, off;
	const struct fast_file *f;
	int at;

	/* sys_pread64 refuses a negative position before the descriptor. */
	if (pread && (int64_t)r->r10 < 0) {
		r->ret = -E_INVAL;
		return 1;
	}
	if ((at = described(d, r->rdi, &v, r)) != FD_HERE)
		return at == FD_FREE;
	if (v.kind != FAST_FD_IMAGE || (want != 0 && !ok(d, r->rsi, want)))
		return 0;
	off = pread ? r->r10 : v.off;
	if (off >= v.size) {
		r->ret = 0;
		return 1;
	}
	if (d->image_at == 0 || (!pread && !d->changes_here) ||
	    v.file >= d->nfiles)
		return 0;
	f = file_at(v.file);
	if (f->data == UINT64_MAX || f->size != v.size)
		return 0;
	n = want < v.size - off ? want : v.size - off;
	copy_out(r->rsi, d->image_at + f->data + off, n);
	if (!pread)
		moved((uint32_t)r->rdi, off + n);
	r->ret = (int64_t)n;
	return 1;
}

/* readlink_at (fs.c) of an image file or directory: not a link. */
static int
readlink_image(const struct keep_fast *d, struct fast_regs *r)
{
	char raw[FAST_PATH_MAX], path[FAST_PATH_MAX];
	const struct fast_file *f = NULL;
	size_t n;
	int found;

	if ((int64_t)r->rdx <= 0) {
		r->ret = -E_INVAL;
		return 1;
	}
	found = lookup(d, r->rdi, raw, path, &f);
	n = len(raw);
	if ((found != L_FILE && found != L_DIR) || (n > 1 && raw[n - 1] == '/'))
		return 0;
	r->ret = -E_INVAL;
	return 1;
}

/*
 * The next child of a directory (vm_img_child's walk, imgtree.c): the
 * index from *pos on, while paths begin with the directory's prefix
 * (plen bytes, '/' last); a subdirectory once, skipping past every path
 * under it (prefix + name + '0' follows them all). 0 when none is left.
 */
static int
next_child(const struct keep_fast *d, const char *prefix, size_t plen,
    uint32_t *pos, char *name, size_t *nl, int *is_dir)
{
	char key[FAST_PATH_MAX + 2];
	const char *p, *rest;
	size_t i, cl;

	if (*pos >= d->nfiles)
		return 0;
	p = path_at(*pos);
	for (i = 0; i < plen; i++)
		if (p[i] != prefix[i])
			return 0;
	rest = p + plen;
	for (cl = 0; rest[cl] != '\0' && rest[cl] != '/'; cl++)
		;
	if (cl == 0)
		return 0;
	copy(name, rest, cl);
	name[cl] = '\0';
	*nl = cl;
	*is_dir = rest[cl] == '/';
	if (!*is_dir) {
		(*pos)++;
		return 1;
	}
	copy(key, p, plen + cl);
	key[plen + cl] = '0';
	key[plen + cl + 1] = '\0';
	*pos = lower_bound(d, key);
	return 1;
}

/* The kernel's struct linux_dirent64, as vdir_getdents writes it. */
#define DIRENT_NAME 19

/*
 * getdents64 of an image directory (vm_getdents, vdir_getdents in
 * fs_dir.c): the buffer checked as vdir_getdents checks it first, then
 * its entries from the reader's offset on, as many as fit: ".", "..",
 * the root's "dev" and "proc", then each child (the image's own "dev"
 * and "proc" at the root shadowed); each with ino offset + 2, d_off
 * offset + 1. The offset moves as read() moves a file's.
 */
static int
dents_here(const struct keep_fast *d, struct fast_regs *r)
{
	struct fast_fd v;
	char prefix[FAST_PATH_MAX + 1], name[FAST_PATH_MAX];
	uint64_t n = r->rdx < d->dir_chunk ? r->rdx : d->dir_chunk, idx;
	uint64_t used = 0, k, reclen;
	uint8_t *g = (uint8_t *)(uintptr_t)r->rsi, type;
	uint32_t pos;
	size_t plen, extra, nl;
	int at = described(d, r->rdi, &v, r), is_dir, root;
	const char *dp;

	if (at != FD_HERE)
		return at == FD_FREE;
	if (v.kind != FAST_FD_DIR || n == 0 || !ok(d, r->rsi, n))
		return 0;
	if (v.dir_end) {
		r->ret = 0;
		return 1;
	}
	if (!d->changes_here || v.file >= d->nfiles || v.dir_len == 0 ||
	    v.dir_len >= FAST_PATH_MAX - 1)
		return 0;
	dp = path_at(v.file);
	root = v.dir_len == 1;
	if (!root && dp[v.dir_len] != '/')
		return 0;
	plen = root ? 1 : (size_t)v.dir_len + 1;
	copy(prefix, dp, plen);
	extra = root ? 2 : 0;
	/* Walk to the child at the offset. */
	pos = first_under(d, "/");
	if (!root)
		pos = v.file;
	for (k = 2 + extra; k < v.off; k++)
		if (!next_child(d, prefix, plen, &pos, name, &nl, &is_dir))
			break;
	for (idx = v.off;; idx++) {
		type = 4; /* DT_DIR */
		if (idx == 0) {
			name[0] = '.';
			nl = 1;
		} else if (idx == 1) {
			name[0] = name[1] = '.';
			nl = 2;
		} else if (idx < 2 + extra) {
			copy(name, idx == 2 ? "dev" : "proc", idx == 2 ? 3 : 4);
			nl = idx == 2 ? 3 : 4;
		} else if (!next_child(
		               d, prefix, plen, &pos, name, &nl, &is_dir))
			break;
		else if (extra != 0 &&
		    ((nl == 3 && name[0] == 'd' && name[1] == 'e' &&
		         name[2] == 'v') ||
		        (nl == 4 && name[0] == 'p' && name[1] == 'r' &&
		            name[2] == 'o' && name[3] == 'c')))
			continue;
		else if (!is_dir)
			type = 8; /* DT_REG */
		reclen = (DIRENT_NAME + nl + 1 + 7) & ~(uint64_t)7;
		if (used + reclen > n) {
			if (used == 0) {
				r->ret = -E_INVAL;
				return 1;
			}
			break;
		}
		for (k = 0; k < reclen; k++)
			g[used + k] = 0;
		{
			uint64_t ino = idx + 2, off = idx + 1;
			uint16_t rl = (uint16_t)reclen;

			copy(g + used, &ino, 8);
			copy(g + used + 8, &off, 8);
			copy(g + used + 16, &rl, 2);
			g[used + 18] = type;
		}
		copy(g + used + DIRENT_NAME, name, nl);
		used += reclen;
	}
	if (idx != v.off)
		moved((uint32_t)r->rdi, idx);
	r->ret = (int64_t)used;
	return 1;
}

/* sys_close (fs.c) of an image file or directory: it holds nothing to
 * flush or unlock, so the VMM drops it as its next exit begins
 * (struct fast_changes). Anything else closes in the VMM. */
static int
close_image(const struct keep_fast *d, struct fast_regs *r)
{
	struct fast_fd v;
	int at = described(d, r->rdi, &v, r);

	if (at != FD_HERE)
		return at == FD_FREE;
	if (!d->changes_here ||
	    (v.kind != FAST_FD_IMAGE && v.kind != FAST_FD_DIR))
		return 0;
	change((uint32_t)r->rdi)->op = FAST_CH_CLOSED;
	changed();
	r->ret = 0;
	return 1;
}

int
fast_call(struct fast_regs *r)
{
	const struct keep_fast *d = data();
	struct fast_fd v;
	const struct fast_fd *f = &v;
	int at;

	/* A caller single-stepping wants its trap where the VMM puts it. */
	if (r->r11 & RFLAGS_TF)
		return 0;
	switch (r->rax) {
	case NR_stat:
		return stat_at(d, (uint64_t)AT_FDCWD_, r->rdi, r->rsi, 0, r);
	case NR_lstat:
		return stat_at(d, (uint64_t)AT_FDCWD_, r->rdi, r->rsi, 0, r);
	case NR_newfstatat:
		return stat_at(d, r->rdi, r->rsi, r->rdx, r->r10, r);
	case NR_fstat:
		return stat_fd(d, r->rdi, r->rsi, r);
	case NR_access:
		return access_at(d, r->rdi, r);
	case NR_faccessat:
	case NR_faccessat2:
		return access_at(d, r->rsi, r);
	case NR_open:
		return open_path(d, r->rdi, r->rsi, r);
	case NR_openat:
		return open_path(d, r->rsi, r->rdx, r);
	case NR_rt_sigaction:
		return sigaction_query(d, r);
	case NR_lseek:
		/* seek (fs.c): where an image file's reader is; stdin and
		 * the output do not seek. */
		if ((at = described(d, r->rdi, &v, r)) != FD_HERE)
			return at == FD_FREE;
		if (f->kind == FAST_FD_PIPE) {
			r->ret = -E_SPIPE;
			return 1;
		}
		if (r->rsi != 0 || r->rdx != SEEK_CUR_ ||
		    f->kind != FAST_FD_IMAGE)
			return 0;
		r->ret = (int64_t)f->off;
		return 1;
	case NR_read:
		return read_image(d, r, 0);
	case NR_pread64:
		return read_image(d, r, 1);
	case NR_readlink:
		return readlink_image(d, r);
	case NR_close:
		return close_image(d, r);
	case NR_getdents64:
		return dents_here(d, r);
	case NR_fcntl:
		/* fcntl_fd (fs.c), F_GETFD only: close-on-exec. */
		if (r->rsi != F_GETFD_)
			return 0;
		if ((at = described(d, r->rdi, &v, r)) != FD_HERE)
			return at == FD_FREE;
		r->ret = f->cloexec ? FD_CLOEXEC_ : 0;
		return 1;
	case NR_getpid:
		r->ret = d->pid;
		return 1;
	case NR_gettid:
		r->ret = d->tid;
		return 1;
	case NR_getuid:
	case NR_getgid:
	case NR_geteuid:
	case NR_getegid:
		/* guest_id (sys_proc.c). */
		r->ret = d->id;
		return 1;
	case NR_ioctl:
		/* sys_ioctl, vm_tty_ioctl (tty.c): TCGETS of anything but
		 * a terminal run's fds 0-2 is ENOTTY. */
		if ((uint32_t)r->rsi != TCGETS_)
			return 0;
		if ((at = described(d, r->rdi, &v, r)) != FD_HERE)
			return at == FD_FREE;
		if (f->tty)
			return 0;
		r->ret = -E_NOTTY;
		return 1;
	case NR_getcwd:
		/* sys_getcwd (fs.c). */
		if (d->cwd_len == 0)
			return 0;
		if (r->rsi < d->cwd_len + 1) {
			r->ret = -E_RANGE;
			return 1;
		}
		if (!ok(d, r->rdi, d->cwd_len + 1))
			return 0;
		copy((void *)(uintptr_t)r->rdi, d->cwd, d->cwd_len + 1);
		r->ret = d->cwd_len + 1;
		return 1;
	default:
		return 0;
	}
}
