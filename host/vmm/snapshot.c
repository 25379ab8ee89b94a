/*
 * A paused context's memory image (docs/contexts.md, "Pause, persist,
 * resume"; the seal in host/vmm/snapshot.h).
 *
 * The vmm pauses an idle context by sending its vm process SIGUSR1. The
 * guest is then blocked reading its stdin between cells; the read
 * returns and, instead of answering it, the vm process writes the
 * guest as it stands at that `syscall` instruction: the program's
 * memory that differs from what a fresh VM holds (pages never touched
 * or all zero are left out; a page of an image mapping that still
 * reads as the image's is a reference to it), the vCPU's registers, and
 * its own view of the guest (descriptors, brk and mmap state, cwd,
 * signals). It ends with VMM_EXIT_SAVED. The next vm process of the
 * context boots the same program as usual, then replaces the guest with
 * the image before the first entry; the guest issues its read again
 * and takes the next cell.
 *
 * What the guest kernel owns (the first 2 MiB: page tables, GDT, IDT,
 * stubs, vDSO) is never in the image: the booting VM's own stays, and
 * the vCPU's segments and control registers are the VMM's. An image is
 * the work of a vm process, which a guest may have taken over, so every
 * byte of it is checked as hostile input (vm_snap_parse, then each
 * field where it is applied): a crafted image can give the guest any
 * state a CPL3 program could have reached, nothing more.
 *
 * Only a context that is one process with one thread, whose descriptors
 * are all files (stdin, output, image and workspace files, devices,
 * /proc files, directories), is saved; anything else ends with
 * VMM_EXIT_UNSAVED, and the context resumes from its journal.
 */
#include <sys/mman.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host/vmm/abi.h"
#include "host/vmm/fs_int.h"
#include "host/vmm/snapshot.h"
#include "host/vmm/sys.h"
#include "host/vmm/vm_int.h"

#define SNAP_DATA_MAX (16u << 20) /* a /proc file's bytes */
#define RFLAGS_USER 0x254dd5ULL
#define RFLAGS_FIXED 0x2ULL

/* The vm process's state, after the seal. */
struct snap_state {
	uint64_t mmap_lo, mmap_hi, stack_lo, stack_top, brk_start, brk_max;
	uint64_t interp_base, start, image_map_len, nfiles, elf_lo, elf_hi;
	uint64_t brk_cur, brk_peak, mmap_pages_used, mmap_pages_peak;
	uint64_t mmap_file_pages, file_touched_pages, mem_charged;
	uint32_t umask, nfds, nrefs, nruns;
	char cwd[VM_PATH_MAX];
	/* The CPU-time timers count the saving process's CPU time: they
	 * hold what was left of them, which the restoring one counts on
	 * from its own (vm_signal_saved, vm_signal_restored). */
	struct vm_signals sig;
	uint64_t arg_start, env_start, env_end; /* /proc/self's cmdline */
	struct kvm_regs regs;
	uint64_t fs_base, gs_base, tsc;
	uint32_t has_xsave, pad;
	struct kvm_fpu fpu;
	uint8_t xsave[VM_XSAVE_LEGACY];
};

/* A descriptor; then pathlen bytes of path, datalen of data, padded
 * to 8. */
struct snap_fd {
	uint32_t index, kind, flags, cloexec, outfd, dev, is_dir, pathlen;
	uint64_t off, file, datalen, st_dev, st_ino;
};

/* Pages of guest memory at g that read as the image file's from pos.
 * file: the file's index, with SNAP_REF_READONLY when the guest could
 * not write them (saved on trap, whose guest maps only those: imgmap.c),
 * which the trap platform maps read-only again; any other is a copy
 * there (KVM maps both kinds copy-on-write). */
struct snap_ref {
	uint64_t g, npages, file, pos;
};
#define SNAP_REF_READONLY (1ULL << 63)

/* Pages of guest memory at g, stored at file offset at. */
struct snap_run {
	uint64_t g, npages, at;
};

static volatile sig_atomic_t save_asked;

static void
on_save(int sig)
{
	(void)sig;
	save_asked = 1;
}

void
vm_snap_arm(struct vm *vm)
{
	struct sigaction sa;

	if (!vm->cfg->snap_save)
		return;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_save; /* no SA_RESTART: the read must return */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
}

int
vm_snap_asked(const struct vm *vm)
{
	return vm->cfg->snap_save && save_asked;
}

static uint64_t
pad8(uint64_t n)
{
	return (n + 7) & ~7ULL;
}

/* The mmap area's two page maps (mmap_used, mmap_file) go as bits, a
 * bit per page. */
static uint64_t
map_bytes(uint64_t npages)
{
	return (npages + 7) / 8;
}

static void
get_map(uint8_t *bytes, const uint8_t *bits, uint64_t npages)
{
	uint64_t i;

	for (i = 0; i < npages; i++)
		bytes[i] = (bits[i / 8] >> (i % 8)) & 1;
}

/* ---- the parse: structure only --------------------------------------- */

static int
fail(char *err, size_t errlen, const char *why)
{
	snprintf(err, errlen, "memory image: %s", why);
	return -1;
}

int
vm_snap_parse(const uint8_t *meta, size_t meta_len,
    const struct vm_snap_layout *lay, char *err, size_t errlen)
{
	struct vm_snap_seal seal;
	struct snap_state st;
	struct snap_fd fr;
	struct snap_ref rf;
	struct snap_run rn;
	uint64_t at, npages, i, last_index = 0, last_end = 0, data_end;
	int first = 1;

	if (meta_len < sizeof(seal) + sizeof(st))
		return fail(err, errlen, "too short");
	memcpy(&seal, meta, sizeof(seal));
	if (memcmp(seal.magic, VM_SNAP_MAGIC, 8) != 0 ||
	    seal.version != VM_SNAP_VERSION || seal.seal_len != sizeof(seal))
		return fail(err, errlen, "not one of this version");
	if (seal.meta_len != meta_len || seal.file_len != lay->file_len ||
	    meta_len > VM_SNAP_META_MAX || meta_len % VM_PAGE != 0 ||
	    seal.file_len < meta_len + sizeof(struct vm_snap_end))
		return fail(err, errlen, "sizes do not match the file");
	if (seal.memsz != lay->memsz)
		return fail(err, errlen, "taken of another memory size");
	data_end = seal.file_len - sizeof(struct vm_snap_end);
	memcpy(&st, meta + sizeof(seal), sizeof(st));
	if (st.mmap_lo != lay->mmap_lo || st.mmap_hi != lay->mmap_hi ||
	    st.nfiles != lay->nfiles || st.nfds > lay->nfds)
		return fail(err, errlen, "taken of another layout");
	npages = (st.mmap_hi - st.mmap_lo) / VM_PAGE;
	at = sizeof(seal) + sizeof(st);
	if (st.mmap_hi < st.mmap_lo || map_bytes(npages) > (meta_len - at) / 2)
		return fail(err, errlen, "page maps cut short");
	at = pad8(at + 2 * map_bytes(npages));
	for (i = 0; i < st.nfds; i++) {
		uint64_t need;

		if (meta_len - at < sizeof(fr))
			return fail(err, errlen, "descriptors cut short");
		memcpy(&fr, meta + at, sizeof(fr));
		at += sizeof(fr);
		if (fr.index >= lay->nfds || (!first && fr.index <= last_index))
			return fail(err, errlen, "descriptors out of order");
		first = 0;
		last_index = fr.index;
		if (fr.kind == VFD_FREE || fr.kind > VFD_SDIR ||
		    fr.pathlen >= VM_PATH_MAX || fr.datalen > SNAP_DATA_MAX ||
		    fr.cloexec > 1 || fr.is_dir > 1)
			return fail(err, errlen, "a bad descriptor");
		need = pad8((uint64_t)fr.pathlen + fr.datalen);
		if (meta_len - at < need)
			return fail(err, errlen, "a descriptor cut short");
		if (fr.pathlen > 0 &&
		    (meta[at] != '/' ||
		        memchr(meta + at, '\0', fr.pathlen) != NULL))
			return fail(err, errlen, "a descriptor's bad path");
		at += need;
	}
	if ((meta_len - at) / sizeof(rf) < st.nrefs)
		return fail(err, errlen, "image references cut short");
	for (i = 0; i < st.nrefs; i++, at += sizeof(rf)) {
		memcpy(&rf, meta + at, sizeof(rf));
		if (rf.g % VM_PAGE != 0 || rf.pos % VM_PAGE != 0 ||
		    rf.npages == 0 || rf.g < st.mmap_lo || rf.g >= st.mmap_hi ||
		    rf.npages > (st.mmap_hi - rf.g) / VM_PAGE ||
		    (rf.file & ~SNAP_REF_READONLY) >= lay->nfiles ||
		    rf.pos > (1ULL << 40))
			return fail(err, errlen, "a bad image reference");
	}
	if ((meta_len - at) / sizeof(rn) < st.nruns)
		return fail(err, errlen, "page runs cut short");
	for (i = 0; i < st.nruns; i++, at += sizeof(rn)) {
		memcpy(&rn, meta + at, sizeof(rn));
		if (rn.g % VM_PAGE != 0 || rn.at % VM_PAGE != 0 ||
		    rn.npages == 0 || rn.g < lay->low_end ||
		    rn.g >= lay->memsz ||
		    rn.npages > (lay->memsz - rn.g) / VM_PAGE ||
		    rn.g < last_end || rn.at < meta_len || rn.at > data_end ||
		    rn.npages > (data_end - rn.at) / VM_PAGE)
			return fail(err, errlen, "a bad page run");
		last_end = rn.g + rn.npages * VM_PAGE;
	}
	return 0;
}

/* ---- saving ----------------------------------------------------------- */

struct buf {
	uint8_t *p;
	size_t len, cap;
};

static int
put(struct buf *b, const void *p, size_t len)
{
	size_t cap = b->cap ? b->cap : 65536;
	uint8_t *n;

	while (cap - b->len < len + 8)
		cap *= 2;
	if (cap != b->cap) {
		if ((n = realloc(b->p, cap)) == NULL)
			return -1;
		b->p = n;
		b->cap = cap;
	}
	memcpy(b->p + b->len, p, len);
	b->len += len;
	return 0;
}

static int
put_map(struct buf *b, const uint8_t *bytes, uint64_t npages)
{
	uint8_t chunk[4096];
	uint64_t i, k, n;

	for (i = 0; i < npages; i += n) {
		n = npages - i < sizeof(chunk) * 8 ? npages - i
		                                   : sizeof(chunk) * 8;
		memset(chunk, 0, sizeof(chunk));
		for (k = 0; k < n; k++)
			chunk[k / 8] |=
			    (uint8_t)((bytes[i + k] != 0) << (k % 8));
		if (put(b, chunk, map_bytes(n)) != 0)
			return -1;
	}
	return 0;
}

static int
put_pad(struct buf *b)
{
	static const uint8_t zero[8];

	return put(b, zero, pad8(b->len) - b->len);
}

/* A descriptor the image can carry: 0 and its record in b, or -1. */
static int
save_fd(struct vm *vm, unsigned i, struct buf *b, char *why, size_t wlen)
{
	const struct vfd *f = &vm->fds[i];
	struct snap_fd r;
	struct stat sb;
	off_t pos;

	memset(&r, 0, sizeof(r));
	r.index = i;
	r.kind = (uint32_t)f->kind;
	r.flags = (uint32_t)f->flags;
	r.cloexec = (uint32_t)(f->cloexec != 0);
	r.outfd = (uint32_t)f->outfd;
	r.dev = (uint32_t)f->dev;
	r.off = f->off;
	r.pathlen = f->path != NULL ? (uint32_t)strlen(f->path) : 0;
	switch (f->kind) {
	case VFD_IMAGE:
		r.file = (uint64_t)(f->file - vm->cfg->files);
		break;
	case VFD_HOST:
		if (f->pipe || f->path == NULL) {
			snprintf(why, wlen,
			    "descriptor %u is a pipe, a socket, "
			    "an eventfd or an epoll instance",
			    i);
			return -1;
		}
		if (fstat(f->hostfd, &sb) == -1 ||
		    (!S_ISREG(sb.st_mode) && !S_ISDIR(sb.st_mode)) ||
		    (fcntl(f->hostfd, F_GETFL) & O_PATH)) {
			snprintf(why, wlen,
			    "descriptor %u is not a plain file or directory",
			    i);
			return -1;
		}
		r.is_dir = S_ISDIR(sb.st_mode);
		r.st_dev = (uint64_t)sb.st_dev;
		r.st_ino = (uint64_t)sb.st_ino;
		if ((pos = lseek(f->hostfd, 0, SEEK_CUR)) == -1)
			pos = 0; /* a directory read through getdents */
		r.off = (uint64_t)pos;
		break;
	case VFD_SYNTH:
	case VFD_SDIR:
		if (f->len > SNAP_DATA_MAX) {
			snprintf(why, wlen, "descriptor %u is too large", i);
			return -1;
		}
		r.datalen = f->len;
		break;
	default:
		break;
	}
	if (r.pathlen >= VM_PATH_MAX)
		return -1;
	if (put(b, &r, sizeof(r)) != 0 ||
	    (r.pathlen > 0 && put(b, f->path, r.pathlen) != 0) ||
	    (r.datalen > 0 && put(b, f->data, r.datalen) != 0) ||
	    put_pad(b) != 0)
		return -1;
	return 0;
}

/* The image mapping a page of the mmap area still reads from: the
 * newest made that covers it. */
static const struct vm_imgrun *
ref_of(const struct vm *vm, uint64_t g)
{
	unsigned i = vm->nimgruns;

	while (i-- > 0)
		if (g >= vm->imgruns[i].g &&
		    g - vm->imgruns[i].g < vm->imgruns[i].len)
			return &vm->imgruns[i];
	return NULL;
}

static int
all_zero(const uint8_t *p)
{
	static const uint8_t zero[VM_PAGE];

	return memcmp(p, zero, VM_PAGE) == 0;
}

struct lists {
	struct buf refs, runs;
	struct snap_ref ref;
	struct snap_run run;
};

static int
flush_ref(struct lists *l)
{
	int rc = 0;

	if (l->ref.npages > 0)
		rc = put(&l->refs, &l->ref, sizeof(l->ref));
	l->ref.npages = 0;
	return rc;
}

static int
flush_run(struct lists *l)
{
	int rc = 0;

	if (l->run.npages > 0)
		rc = put(&l->runs, &l->run, sizeof(l->run));
	l->run.npages = 0;
	return rc;
}

/* The page at g of the program's segments as the boot left it: zeroes,
 * with the file's bytes of each segment that covers part of it. */
static void
boot_page(const struct vm *vm, uint64_t g, uint8_t *out)
{
	const struct vmm_config *cfg = vm->cfg;
	size_t i;

	memset(out, 0, VM_PAGE);
	for (i = 0; i < vm->elf.nload; i++) {
		const struct elf_load *l = &vm->elf.load[i];
		uint64_t lo = l->vaddr > g ? l->vaddr : g;
		uint64_t hi = l->vaddr + l->filesz;

		if (hi > g + VM_PAGE)
			hi = g + VM_PAGE;
		if (lo < hi)
			memcpy(out + (lo - g),
			    cfg->elf + l->offset + (lo - l->vaddr), hi - lo);
	}
}

/* One page into the lists: a reference to the image, a page to store,
 * or nothing. keep_zero: an all-zero page is stored too (it must not
 * take what the boot puts there). */
static int
sort_page(struct vm *vm, struct lists *l, uint64_t g, int keep_zero)
{
	const struct vmm_config *cfg = vm->cfg;
	const uint8_t *page = vm->mem + g;
	const struct vm_imgrun *ir;
	/* On trap every image page the guest holds is a read-only one. */
	uint64_t pos, ro = vm->on_trap ? SNAP_REF_READONLY : 0;

	if (g >= vm->mmap_lo && g < vm->mmap_hi &&
	    vm->mmap_file[(g - vm->mmap_lo) / VM_PAGE] &&
	    (ir = ref_of(vm, g)) != NULL) {
		const struct vmm_file *f = &cfg->files[ir->file];

		pos = ir->off + (g - ir->g);
		if (pos + VM_PAGE <= f->len &&
		    memcmp(page, f->data + pos, VM_PAGE) == 0) {
			if (flush_run(l) != 0)
				return -1;
			if (l->ref.npages > 0 &&
			    l->ref.file == (ir->file | ro) &&
			    l->ref.g + l->ref.npages * VM_PAGE == g &&
			    l->ref.pos + l->ref.npages * VM_PAGE == pos) {
				l->ref.npages++;
				return 0;
			}
			if (flush_ref(l) != 0)
				return -1;
			l->ref = (struct snap_ref){ g, 1, ir->file | ro, pos };
			return 0;
		}
	}
	if (flush_ref(l) != 0)
		return -1;
	if (!keep_zero && all_zero(page))
		return flush_run(l);
	if (l->run.npages > 0 && l->run.g + l->run.npages * VM_PAGE == g) {
		l->run.npages++;
		return 0;
	}
	if (flush_run(l) != 0)
		return -1;
	l->run = (struct snap_run){ g, 1, 0 };
	return 0;
}

/*
 * Sort the pages the program holds into references to the image, pages
 * to store, or nothing: its segments (a page that reads as the boot
 * left it is not stored: the restoring VM boots the same program
 * first), its heap, the pages of the mmap area it maps (its own or the
 * image's), and its stack. Guest memory outside these is not the
 * program's (it reads as zeroes after a restore, as a fresh VM's).
 */
static int
sort_pages(struct vm *vm, struct lists *l)
{
	uint8_t booted[VM_PAGE];
	uint64_t g, i, heap_end;

	for (g = vm->elf.lo; g < vm->elf.hi; g += VM_PAGE) {
		boot_page(vm, g, booted);
		if (memcmp(vm->mem + g, booted, VM_PAGE) == 0) {
			if (flush_ref(l) != 0 || flush_run(l) != 0)
				return -1;
			continue;
		}
		if (sort_page(vm, l, g, 1) != 0)
			return -1;
	}
	heap_end = (vm->brk_cur + VM_PAGE - 1) & ~(VM_PAGE - 1);
	for (g = vm->elf.hi; g < heap_end; g += VM_PAGE)
		if (sort_page(vm, l, g, 0) != 0)
			return -1;
	for (i = 0; i < (vm->mmap_hi - vm->mmap_lo) / VM_PAGE; i++) {
		if (!vm->mmap_used[i] && !vm->mmap_file[i]) {
			if (flush_ref(l) != 0 || flush_run(l) != 0)
				return -1;
			continue;
		}
		if (sort_page(vm, l, vm->mmap_lo + i * VM_PAGE, 0) != 0)
			return -1;
	}
	for (g = vm->stack_lo; g < vm->stack_top; g += VM_PAGE)
		if (sort_page(vm, l, g, 0) != 0)
			return -1;
	return flush_ref(l) != 0 || flush_run(l) != 0 ? -1 : 0;
}

static int
write_at(int fd, const void *p, uint64_t len, uint64_t at)
{
	const uint8_t *b = p;
	ssize_t n;

	while (len > 0) {
		n = pwrite(
		    fd, b, len > (1U << 30) ? (1U << 30) : len, (off_t)at);
		if (n <= 0)
			return -1;
		b += n;
		len -= (uint64_t)n;
		at += (uint64_t)n;
	}
	return 0;
}

/* Whether this guest can be saved: why not in why. */
static int
saveable(struct vm *vm, char *why, size_t wlen)
{
	if (!vm_proc_only(vm))
		snprintf(why, wlen, "it has other processes");
	else if (!vm_thread_alone(vm))
		snprintf(why, wlen, "it has other threads");
	else if (vm->exec != NULL)
		snprintf(why, wlen, "it replaced its program (execve)");
	else if (vm->cfg->tty)
		snprintf(why, wlen, "it has a terminal");
	else
		return 1;
	return 0;
}

static int
save(struct vm *vm, int fd, char *why, size_t wlen)
{
	struct buf meta = { 0 };
	struct lists l;
	struct vm_snap_seal seal;
	struct vm_snap_end end;
	struct snap_state st;
	struct vm_cpu_state cpu;
	struct snap_run *runs;
	uint64_t npages, at, i, nruns;
	unsigned k;
	int rc = -1;

	memset(&l, 0, sizeof(l));
	if (!saveable(vm, why, wlen))
		return -1;
	if (vm_cpu_capture(vm, &cpu) != 0) {
		snprintf(why, wlen, "the vCPU: %s", strerror(errno));
		return -1;
	}
	memset(&st, 0, sizeof(st));
	st.mmap_lo = vm->mmap_lo;
	st.mmap_hi = vm->mmap_hi;
	st.stack_lo = vm->stack_lo;
	st.stack_top = vm->stack_top;
	st.brk_start = vm->brk_start;
	st.brk_max = vm->brk_max;
	st.interp_base = vm->interp_base;
	st.start = vm->start;
	st.elf_lo = vm->elf.lo;
	st.elf_hi = vm->elf.hi;
	st.image_map_len = vm->cfg->image_map_len;
	st.nfiles = vm->cfg->nfiles;
	st.brk_cur = vm->brk_cur;
	st.brk_peak = vm->brk_peak;
	st.mmap_pages_used = vm->mmap_pages_used;
	st.mmap_pages_peak = vm->mmap_pages_peak;
	st.mmap_file_pages = vm->mmap_file_pages;
	st.file_touched_pages = vm->file_touched_pages;
	st.mem_charged = vm->mem_charged;
	st.umask = vm->umask;
	strlcpy(st.cwd, vm->cwd, sizeof(st.cwd));
	vm_signal_saved(vm, &st.sig);
	st.arg_start = vm->arg_start;
	st.env_start = vm->env_start;
	st.env_end = vm->env_end;
	st.regs = cpu.regs;
	st.fs_base = cpu.sregs.fs.base;
	st.gs_base = cpu.sregs.gs.base;
	st.tsc = cpu.tsc;
	st.has_xsave = (uint32_t)cpu.has_xsave;
	st.fpu = cpu.fpu;
	memcpy(st.xsave, cpu.xsave, sizeof(st.xsave));
	for (k = 0; k < vm->nfds; k++)
		if (vm->fds[k].kind != VFD_FREE)
			st.nfds++;
	if (sort_pages(vm, &l) != 0) {
		snprintf(why, wlen, "sorting its pages: %s", strerror(errno));
		goto out;
	}
	st.nrefs = (uint32_t)(l.refs.len / sizeof(struct snap_ref));
	st.nruns = (uint32_t)(l.runs.len / sizeof(struct snap_run));
	memset(&seal, 0, sizeof(seal));
	npages = (vm->mmap_hi - vm->mmap_lo) / VM_PAGE;
	if (put(&meta, &seal, sizeof(seal)) != 0 ||
	    put(&meta, &st, sizeof(st)) != 0 ||
	    put_map(&meta, vm->mmap_used, npages) != 0 ||
	    put_map(&meta, vm->mmap_file, npages) != 0 || put_pad(&meta) != 0)
		goto nomem;
	for (k = 0; k < vm->nfds; k++)
		if (vm->fds[k].kind != VFD_FREE &&
		    save_fd(vm, k, &meta, why, wlen) != 0)
			goto out;
	if (l.refs.len > 0 && put(&meta, l.refs.p, l.refs.len) != 0)
		goto nomem;
	/* The runs' offsets follow the metadata, which they are part of. */
	at = (meta.len + l.runs.len + VM_PAGE - 1) & ~(VM_PAGE - 1);
	runs = (struct snap_run *)(void *)l.runs.p;
	nruns = st.nruns;
	for (i = 0; i < nruns; i++) {
		runs[i].at = at;
		at += runs[i].npages * VM_PAGE;
	}
	if (l.runs.len > 0 && put(&meta, l.runs.p, l.runs.len) != 0)
		goto nomem;
	memcpy(seal.magic, VM_SNAP_MAGIC, 8);
	seal.version = VM_SNAP_VERSION;
	seal.seal_len = sizeof(seal);
	seal.meta_len = (meta.len + VM_PAGE - 1) & ~(VM_PAGE - 1);
	seal.file_len = at + sizeof(end);
	seal.memsz = vm->memsz;
	memcpy(meta.p, &seal, sizeof(seal));
	memcpy(end.magic, VM_SNAP_END, 8);
	end.file_len = seal.file_len;
	if (ftruncate(fd, 0) == -1 || write_at(fd, meta.p, meta.len, 0) != 0)
		goto io;
	for (i = 0; i < nruns; i++)
		if (write_at(fd, vm->mem + runs[i].g, runs[i].npages * VM_PAGE,
		        runs[i].at) != 0)
			goto io;
	if (write_at(fd, &end, sizeof(end), at) != 0)
		goto io;
	rc = 0;
	goto out;
nomem:
	snprintf(why, wlen, "out of memory");
	goto out;
io:
	snprintf(why, wlen, "writing the image: %s", strerror(errno));
out:
	free(meta.p);
	free(l.refs.p);
	free(l.runs.p);
	return rc;
}

/*
 * The guest's read of its stdin returned for the vmm's SIGUSR1: save the
 * guest at its `syscall` instruction, which it issues again when it is
 * brought back, and stop. res->saved says which way it went.
 */
void
vm_snap_pause(struct vm *vm, uint64_t nr)
{
	struct kvm_regs *r = &vm->run->s.regs.regs;
	char why[128] = "";

	/* As sysretq would return to the program, but onto the call. */
	r->rax = nr;
	r->rip = r->rcx - 2;
	r->rflags = (r->r11 & RFLAGS_USER) | RFLAGS_FIXED;
	vm_set_user_segments(vm);
	if (save(vm, vm->cfg->snap_out_fd, why, sizeof(why)) == 0) {
		vm->res->saved = 1;
		vm_stop(vm, VMM_EXITED, 0, "paused: the guest is saved");
	} else
		vm_snap_unsaved(vm, why);
}

void
vm_snap_unsaved(struct vm *vm, const char *why)
{
	vm->res->saved = 2;
	vm_stop(vm, VMM_EXITED, 0, "paused: not saved: %s", why);
}

/* ---- restoring -------------------------------------------------------- */

static int
restore_fd(struct vm *vm, const struct snap_fd *r, const char *path,
    const uint8_t *data, char *err, size_t errlen)
{
	const struct vmm_config *cfg = vm->cfg;
	struct vfd *f = &vm->fds[r->index];
	struct stat sb;
	int hostfd, fl;

	f->cloexec = (int)r->cloexec;
	f->flags = (int)(r->flags & (O_ACCMODE | O_APPEND | O_NONBLOCK));
	f->off = r->off;
	if (r->pathlen > 0 && (f->path = strndup(path, r->pathlen)) == NULL)
		return fail(err, errlen, "out of memory");
	switch (r->kind) {
	case VFD_STDIN:
		break;
	case VFD_OUT:
		if (r->outfd != 1 && r->outfd != 2)
			return fail(err, errlen, "a bad output descriptor");
		f->outfd = (int)r->outfd;
		break;
	case VFD_IMAGE:
		if (r->file >= cfg->nfiles ||
		    vm_img_verify(vm, &cfg->files[r->file]) != 0)
			return fail(err, errlen, "an image file that fails");
		f->file = &cfg->files[r->file];
		break;
	case VFD_VDIR:
		if (f->path == NULL || !vm_path_in_image(vm, f->path))
			return fail(err, errlen, "an image directory gone");
		break;
	case VFD_HOST:
		if (f->path == NULL)
			return fail(
			    err, errlen, "a workspace file without path");
		fl = (f->flags & (O_ACCMODE | O_APPEND)) |
		    (r->is_dir ? O_DIRECTORY : 0);
		if ((hostfd = vm_ws_open(vm, f->path, (uint64_t)fl, 0)) < 0)
			return fail(err, errlen, "a workspace file is gone");
		f->hostfd = hostfd;
		if (fstat(hostfd, &sb) == -1 ||
		    (!cfg->snap_moved &&
		        ((uint64_t)sb.st_dev != r->st_dev ||
		            (uint64_t)sb.st_ino != r->st_ino)) ||
		    S_ISDIR(sb.st_mode) != (r->is_dir != 0))
			return fail(
			    err, errlen, "a workspace file was replaced");
		if (!r->is_dir && lseek(hostfd, (off_t)r->off, SEEK_SET) == -1)
			return fail(err, errlen, "a workspace file's offset");
		break;
	case VFD_DEV:
		if (r->dev < VM_DEV_NULL || r->dev > VM_DEV_RANDOM)
			return fail(err, errlen, "a bad device");
		f->dev = (enum vm_dev)r->dev;
		break;
	case VFD_SYNTH:
	case VFD_SDIR:
		if ((f->owned = malloc(r->datalen ? r->datalen : 1)) == NULL)
			return fail(err, errlen, "out of memory");
		memcpy(f->owned, data, r->datalen);
		f->data = f->owned;
		f->len = r->datalen;
		break;
	default:
		return fail(err, errlen, "a bad descriptor");
	}
	f->kind = (enum vfd_kind)r->kind;
	return 0;
}

static int
canonical(uint64_t a)
{
	return (uint64_t)((int64_t)(a << 16) >> 16) == a;
}

/* Guest memory [lo, hi) as a fresh VM's: zeroes, open (prot) or closed
 * (PROT_NONE, host/vmm/mem_space.c). */
static int
fresh(struct vm *vm, uint64_t lo, uint64_t hi, int prot)
{
	if (hi <= lo)
		return 0;
	/* The trap platform's memory is a memfd its guest maps too: its
	 * pages freed in place, and the guest's rights made to match. */
	if (vm->on_trap) {
		vm_trap_protect(vm, lo, hi - lo, prot != PROT_NONE);
		return vm_trap_drop_pages(vm, lo, hi - lo) != 0 ||
		        mprotect(vm->mem + lo, hi - lo, prot) != 0
		    ? -1
		    : 0;
	}
	return mmap(vm->mem + lo, hi - lo, prot,
	           MAP_PRIVATE | MAP_FIXED | MAP_ANONYMOUS | MAP_NORESERVE, -1,
	           0) == MAP_FAILED
	    ? -1
	    : 0;
}

/*
 * Open what the image's program holds, as its own calls opened it: the
 * heap up to the break, the mmap area's pages it maps (used, from the
 * image's map), the stack with its guard. The rest stays closed, so the
 * vm process holds no more than the charge allows (and, with a reserve,
 * does not pass its RLIMIT_DATA).
 */
static int
open_held(struct vm *vm, const struct snap_state *st, const uint8_t *used)
{
	uint64_t npages = (vm->mmap_hi - vm->mmap_lo) / VM_PAGE, i, j;
	uint64_t heap_end = (st->brk_cur + VM_PAGE - 1) & ~(VM_PAGE - 1);

	if (heap_end > vm->elf.hi &&
	    vm_space_open(vm, vm->elf.hi, heap_end - vm->elf.hi) != 0)
		return -1;
	for (i = 0; i < npages; i = j) {
		for (j = i; j < npages && used[j]; j++)
			;
		if (j > i &&
		    vm_space_open(
		        vm, vm->mmap_lo + i * VM_PAGE, (j - i) * VM_PAGE) != 0)
			return -1;
		if (j == i)
			j++;
	}
	return vm_space_open(
	    vm, vm->stack_lo - VM_HUGE, vm->memsz - (vm->stack_lo - VM_HUGE));
}

/* The guest memory above the kernel's: zeroes but for the program's
 * segments, then the references mapped and the runs read in. */
static int
restore_memory(struct vm *vm, int fd, const struct snap_state *st,
    const uint8_t *used, uint8_t *file_map, const uint8_t *refs,
    const uint8_t *runs, uint64_t *copied, char *err, size_t errlen)
{
	const struct vmm_config *cfg = vm->cfg;
	struct snap_ref rf;
	struct snap_run rn;
	struct vm_imgrun *ir;
	uint64_t i, len, base, k;
	ssize_t n;
	int rc;

	/* The program's segments stay as the boot left them: the image
	 * holds their pages that differ. */
	if (fresh(vm, GUEST_LOW_END, vm->elf.lo, PROT_READ | PROT_WRITE) != 0 ||
	    fresh(vm, vm->elf.hi, vm->memsz, PROT_NONE) != 0 ||
	    open_held(vm, st, used) != 0)
		return fail(err, errlen, "guest memory");
	vm->nimgruns = 0;
	vm->imgmaps = 0;
	*copied = 0;
	for (i = 0; i < st->nrefs; i++) {
		const struct vmm_file *f;
		int readonly;

		memcpy(&rf, refs + i * sizeof(rf), sizeof(rf));
		readonly = (rf.file & SNAP_REF_READONLY) != 0;
		rf.file &= ~SNAP_REF_READONLY;
		f = &cfg->files[rf.file];
		len = rf.npages * VM_PAGE;
		if (cfg->image_map == NULL || cfg->image_fd < 0 ||
		    f->data < cfg->image_map ||
		    f->data + f->len > cfg->image_map + cfg->image_map_len ||
		    rf.pos > (f->len & ~(VM_PAGE - 1)) ||
		    len > (f->len & ~(VM_PAGE - 1)) - rf.pos)
			return fail(err, errlen, "a reference past its file");
		base = (uint64_t)(f->data - cfg->image_map);
		if (base % VM_PAGE != 0 || vm_img_verify(vm, f) != 0)
			return fail(err, errlen, "an image file that fails");
		/* The trap platform maps read-only ones read-only in the
		 * guest's process too; one the guest may write is a copy
		 * there, its pages guest memory's own (flags cleared, the
		 * caller counts them as held). */
		k = (rf.g - vm->mmap_lo) / VM_PAGE;
		if (vm->on_trap && memchr(file_map + k, 0, rf.npages) != NULL)
			return fail(
			    err, errlen, "a reference to no image page");
		if ((rc = vm_imgmap_ref(
		         vm, rf.g, len, base + rf.pos, readonly)) < 0)
			return fail(err, errlen, "mapping the image");
		if (rc > 0) {
			memcpy(vm->mem + rf.g, cfg->image_map + base + rf.pos,
			    len);
			memset(file_map + k, 0, rf.npages);
			*copied += rf.npages;
			continue;
		}
		if ((ir = vm_imgrun_add(vm)) == NULL)
			return fail(err, errlen, "out of memory");
		*ir = (struct vm_imgrun){ rf.g, len, rf.file, rf.pos };
		vm->imgmaps++;
	}
	for (i = 0; i < st->nruns; i++) {
		memcpy(&rn, runs + i * sizeof(rn), sizeof(rn));
		len = rn.npages * VM_PAGE;
		/* On trap, a page of the program's read-only segments that
		 * the guest made writable and wrote (the boot mapped it from
		 * the image again): its own first, then its bytes. */
		vm_imgmap_unshare(vm, rn.g, len);
		while (len > 0) {
			n = pread(fd, vm->mem + rn.g, len, (off_t)rn.at);
			if (n <= 0)
				return fail(err, errlen, "reading its pages");
			rn.g += (uint64_t)n;
			rn.at += (uint64_t)n;
			len -= (uint64_t)n;
		}
	}
	return 0;
}

static int
restore_cpu(
    struct vm *vm, const struct snap_state *st, char *err, size_t errlen)
{
	struct vm_cpu_state cpu;

	if (vm_cpu_capture(vm, &cpu) != 0)
		return fail(err, errlen, "the booted vCPU");
	if ((int)st->has_xsave != cpu.has_xsave || !canonical(st->fs_base) ||
	    !canonical(st->gs_base))
		return fail(err, errlen, "a vCPU state this host cannot take");
	/* The program's registers; the segments and control registers
	 * stay the VMM's, as booted. */
	cpu.regs = st->regs;
	cpu.regs.rflags = (st->regs.rflags & RFLAGS_USER) | RFLAGS_FIXED;
	cpu.sregs.fs.base = st->fs_base;
	cpu.sregs.gs.base = st->gs_base;
	cpu.fpu = st->fpu;
	cpu.fpu.mxcsr &= 0xffff;
	memcpy(cpu.xsave, st->xsave, sizeof(cpu.xsave));
	cpu.tsc = st->tsc;
	if (vm_cpu_rebuild(vm, &cpu, err, errlen) != 0)
		return -1;
	vm_set_user_segments(vm);
	return 0;
}

int
vm_snap_restore(struct vm *vm, int fd, char *err, size_t errlen)
{
	struct vm_snap_layout lay;
	struct vm_snap_seal seal;
	struct snap_state st;
	struct snap_fd fr;
	struct stat sb;
	uint8_t *meta = NULL, *used_map = NULL, *file_map = NULL;
	uint64_t npages, at, i, used = 0, file = 0, copied = 0;
	unsigned k;
	int rc = -1;

	if (fstat(fd, &sb) == -1 || !S_ISREG(sb.st_mode) ||
	    pread(fd, &seal, sizeof(seal), 0) != (ssize_t)sizeof(seal) ||
	    seal.meta_len < sizeof(seal) || seal.meta_len > VM_SNAP_META_MAX ||
	    seal.meta_len > (uint64_t)sb.st_size)
		return fail(err, errlen, "unreadable");
	if ((meta = malloc(seal.meta_len)) == NULL ||
	    pread(fd, meta, seal.meta_len, 0) != (ssize_t)seal.meta_len) {
		free(meta);
		return fail(err, errlen, "unreadable");
	}
	memset(&lay, 0, sizeof(lay));
	lay.memsz = vm->memsz;
	lay.low_end = GUEST_LOW_END;
	lay.mmap_lo = vm->mmap_lo;
	lay.mmap_hi = vm->mmap_hi;
	lay.nfds = vm->nfds;
	lay.nfiles = vm->cfg->nfiles;
	lay.file_len = (uint64_t)sb.st_size;
	if (vm_snap_parse(meta, seal.meta_len, &lay, err, errlen) != 0)
		goto out;
	memcpy(&st, meta + sizeof(seal), sizeof(st));
	/* The layout the program was booted with is the same again. */
	if (st.stack_lo != vm->stack_lo || st.stack_top != vm->stack_top ||
	    st.brk_start != vm->brk_start || st.brk_max != vm->brk_max ||
	    st.interp_base != vm->interp_base || st.start != vm->start ||
	    st.elf_lo != vm->elf.lo || st.elf_hi != vm->elf.hi ||
	    st.image_map_len != vm->cfg->image_map_len ||
	    st.brk_cur < st.brk_start || st.brk_cur > st.brk_max ||
	    st.brk_peak < st.brk_cur || st.brk_peak > st.brk_max ||
	    st.cwd[0] != '/' || memchr(st.cwd, '\0', sizeof(st.cwd)) == NULL) {
		fail(err, errlen, "taken of another boot of the program");
		goto out;
	}
	npages = (st.mmap_hi - st.mmap_lo) / VM_PAGE;
	at = sizeof(seal) + sizeof(st);
	if ((used_map = malloc(npages ? npages : 1)) == NULL ||
	    (file_map = malloc(npages ? npages : 1)) == NULL) {
		fail(err, errlen, "out of memory");
		goto out;
	}
	get_map(used_map, meta + at, npages);
	get_map(file_map, meta + at + map_bytes(npages), npages);
	for (i = 0; i < npages; i++) {
		file += file_map[i];
		used += used_map[i] && !file_map[i];
	}
	if (st.mmap_pages_used != used || st.mmap_file_pages != file ||
	    st.mmap_pages_peak < used || st.mmap_pages_peak > npages ||
	    st.file_touched_pages > npages * 64 || st.mem_charged > vm->memsz) {
		fail(err, errlen, "its page counts do not add up");
		goto out;
	}
	/* Descriptors: the boot's go, the image's come. */
	for (k = 0; k < vm->nfds; k++)
		vm_fd_release(&vm->fds[k]);
	at = pad8(at + 2 * map_bytes(npages));
	for (i = 0; i < st.nfds; i++) {
		memcpy(&fr, meta + at, sizeof(fr));
		at += sizeof(fr);
		if (restore_fd(vm, &fr, (const char *)meta + at,
		        meta + at + fr.pathlen, err, errlen) != 0)
			goto out;
		at += pad8((uint64_t)fr.pathlen + fr.datalen);
	}
	if (restore_memory(vm, fd, &st, used_map, file_map, meta + at,
	        meta + at + st.nrefs * sizeof(struct snap_ref), &copied, err,
	        errlen) != 0)
		goto out;
	memcpy(vm->mmap_used, used_map, npages);
	vm->mmap_low = 0; /* anything may be held: not looked for */
	memcpy(vm->mmap_file, file_map, npages);
	vm->brk_cur = st.brk_cur;
	vm->brk_peak = st.brk_peak;
	vm->mmap_pages_used = st.mmap_pages_used + copied;
	vm->mmap_pages_peak = st.mmap_pages_peak;
	vm->mmap_file_pages = st.mmap_file_pages - copied;
	vm->file_touched_pages = st.file_touched_pages;
	vm_mem_uncharge(vm, vm->mem_charged);
	if (vm_mem_charge(vm, st.mem_charged) != 0) {
		fail(err, errlen, "past the memory limit");
		goto out;
	}
	vm->umask = st.umask & 0777;
	strlcpy(vm->cwd, st.cwd, sizeof(vm->cwd));
	vm->sig = st.sig;
	vm->sig.has_saved = st.sig.has_saved != 0;
	vm_signal_restored(vm);
	/* The strings lie in the restored stack, where it says; anywhere
	 * else /proc/self shows none. */
	if (st.arg_start >= vm->stack_lo && st.arg_start <= st.env_start &&
	    st.env_start <= st.env_end && st.env_end <= vm->stack_top) {
		vm->arg_start = st.arg_start;
		vm->env_start = st.env_start;
		vm->env_end = st.env_end;
	} else
		vm->arg_start = vm->env_start = vm->env_end = 0;
	if (restore_cpu(vm, &st, err, errlen) != 0)
		goto out;
	rc = 0;
out:
	free(meta);
	free(used_map);
	free(file_map);
	return rc;
}
