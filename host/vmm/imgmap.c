/*
 * Private file mappings of image files, backed by the image's own pages
 * copy-on-write (docs/vmm.md "Image pages"), and charged by the pages
 * the guest touched.
 *
 * The caller of vmm_run mapped the image file whole and gave its
 * descriptor (cfg->image_fd, read-only). A guest mmap of an image file
 * puts a MAP_PRIVATE mapping of that descriptor over the range of guest
 * memory in the host: KVM's memory slot covers host addresses, not one
 * host mapping, so the guest then reads the image's page-cache pages
 * and a write copies the page into this process. The descriptor is
 * read-only and the mapping private: nothing reaches the image file.
 * Every such page lies inside guest memory, so what the guest can make
 * this process hold stays within the run's memory limit.
 *
 * A page backed by the image is not counted among the pages the guest
 * holds; when it stops being backed (munmap, a MAP_FIXED over it, the
 * end of the run) it is charged if the guest touched it, as the
 * present bit of /proc/self/pagemap says (a page the guest read or
 * wrote is mapped in this process's page tables, KVM having faulted it
 * in). Without pagemap (keepd's vm processes are confined, and have no
 * /proc) every page of a released mapping is counted as touched, as a
 * copy would have been; without cfg->image_fd, mappings are copies.
 *
 * The trap platform (docs/vmm.md, "Image pages"): guest memory is a
 * memfd that the vm process and the guest's process (the stub) both map
 * shared, and the guest reads its pages through the stub's mapping, not
 * this process's. An image mapping the guest cannot write (no
 * PROT_WRITE), and the program's read-only segments, are then the
 * image's pages in both: this process maps the descriptor privately as
 * under KVM, so vm_gptr reads the file's pages, and the stub maps the
 * same range of the same descriptor shared and read-only
 * (vm_trap_map_readonly). The descriptor is read-only, so the kernel
 * refuses PROT_WRITE on the stub's mapping, then and by any later
 * mprotect: a guest write faults (SIGSEGV, as in Linux). A writable
 * image mapping stays a copy (ld.so writes its data segment at once).
 * Released, the range takes guest memory's own pages again in both
 * processes (zeroes; or, when the guest makes it writable, the bytes it
 * read, vm_imgmap_unshare). Only this process's pagemap could say which
 * pages the guest touched, and the guest touches them in the stub: on
 * this platform every page of a released mapping counts as touched, as
 * in keepd under KVM.
 */
#include <sys/mman.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host/vmm/sys.h"
#include "host/vmm/vm_int.h"

/* Each image mapping, and each release of part of one, may split this
 * process's host mappings; the kernel stops them at vm.max_map_count
 * (65,530), a few hundred bytes of kernel memory each. ld.so makes
 * three or four per library; past this many, copies. */
#define IMGMAP_MAX 8192
#define PAGEMAP_PRESENT (1ULL << 63)
#define PAGEMAP_SWAPPED (1ULL << 62)

/* This process's /proc/self/pagemap: a forked guest process opens its
 * own. -1 when it cannot be read. */
static int
pagemap_fd(struct vm *vm)
{
	pid_t pid = getpid();

	if (vm->cfg->no_pagemap)
		return -1;
	if (vm->pagemap_pid != pid) {
		if (vm->pagemap_fd >= 0 && vm->pagemap_pid != 0)
			close(vm->pagemap_fd);
		vm->pagemap_fd =
		    open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
		vm->pagemap_pid = pid;
	}
	return vm->pagemap_fd;
}

/* Pages of [addr, addr+len) present in this process (touched). */
static uint64_t
touched(struct vm *vm, uint64_t addr, uint64_t len)
{
	uint64_t e[512], n = len / VM_PAGE, done = 0, i, cnt = 0, k;
	uintptr_t vpn = (uintptr_t)(vm->mem + addr) / VM_PAGE;
	/* The stub's touches are not in this process's page tables. */
	int fd = vm->on_trap ? -1 : pagemap_fd(vm);

	while (fd >= 0 && done < n) {
		k = n - done < 512 ? n - done : 512;
		if (pread(fd, e, k * 8, (off_t)((vpn + done) * 8)) !=
		    (ssize_t)(k * 8))
			return n - done + cnt; /* unreadable: charge them all */
		for (i = 0; i < k; i++)
			if (e[i] & (PAGEMAP_PRESENT | PAGEMAP_SWAPPED))
				cnt++;
		done += k;
	}
	return fd >= 0 ? cnt : n;
}

static uint8_t *
file_flag(struct vm *vm, uint64_t addr)
{
	return vm->mmap_file + (addr - vm->mmap_lo) / VM_PAGE;
}

/*
 * Trap: whether the stub may map this image's pages. Its descriptor must
 * be read-only (what makes the stub's mapping one the guest can never
 * write, whatever it asks), and its file system must allow executable
 * mappings (a noexec mount refuses the stub's PROT_EXEC). Asked once per
 * descriptor: a page mapped and unmapped here.
 */
static int
trap_shareable(struct vm *vm)
{
	const struct vmm_config *cfg = vm->cfg;
	void *p;
	int fl;

	if (vm->mem_fd < 0)
		return 0;
	if (vm->imgshare_fd != cfg->image_fd + 1) {
		vm->imgshare_fd = cfg->image_fd + 1;
		vm->imgshare = 0;
		if ((fl = fcntl(cfg->image_fd, F_GETFL)) != -1 &&
		    (fl & O_ACCMODE) == O_RDONLY &&
		    (p = mmap(NULL, VM_PAGE, PROT_READ | PROT_EXEC, MAP_SHARED,
		         cfg->image_fd, 0)) != MAP_FAILED) {
			munmap(p, VM_PAGE);
			vm->imgshare = 1;
		}
	}
	return vm->imgshare;
}

/* The image's bytes from pos at [g, g + len) of this process's view:
 * private, copy-on-write, as KVM's guest reads them. 0 or -1. */
static int
map_host(struct vm *vm, uint64_t g, uint64_t len, uint64_t pos)
{
	return mmap(vm->mem + g, len, PROT_READ | PROT_WRITE,
	           MAP_PRIVATE | MAP_FIXED | MAP_NORESERVE, vm->cfg->image_fd,
	           (off_t)pos) == MAP_FAILED
	    ? -1
	    : 0;
}

/* Guest memory's own pages back at [a, a + len) of this process's view
 * (the memfd on trap; zeroes under KVM), after a failed map_host too
 * (MAP_FIXED may have unmapped the range). keep (trap): the bytes the
 * range reads now go into the memfd first. 0, or -1 with the guest
 * stopped: a hole would be a page the guest holds and cannot reach. */
static int
unmap_host(struct vm *vm, uint64_t a, uint64_t len, int keep)
{
	uint64_t done;
	ssize_t n;
	void *p;

	if (vm->on_trap) {
		for (done = 0; keep && done < len; done += (uint64_t)n)
			if ((n = pwrite(vm->mem_fd, vm->mem + a + done,
			         len - done, (off_t)(a + done))) <= 0 &&
			    !(n == -1 && errno == EINTR)) {
				vm_stop(vm, VMM_FAULT, -1,
				    "fault: guest memory could not be written: "
				    "%s",
				    n == 0 ? "short write" : strerror(errno));
				return -1;
			} else if (n < 0)
				n = 0;
		p = mmap(vm->mem + a, len, PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_FIXED, vm->mem_fd, (off_t)a);
	} else
		p = mmap(vm->mem + a, len, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_FIXED | MAP_ANONYMOUS | MAP_NORESERVE, -1,
		    0);
	if (p == MAP_FAILED) {
		vm_stop(vm, VMM_FAULT, -1,
		    "fault: guest memory could not be remapped: %s",
		    strerror(errno));
		return -1;
	}
	return 0;
}

/* The image's bytes from pos at [g, g + len) in the guest's view too:
 * on trap, the stub's read-only mapping of the same range. 0, or -1
 * with this process's view given back. */
static int
map_both(struct vm *vm, uint64_t g, uint64_t len, uint64_t pos)
{
	if (!vm->stub_view_only && map_host(vm, g, len, pos) != 0) {
		unmap_host(vm, g, len, 0);
		return -1;
	}
	if (vm->on_trap &&
	    vm_trap_map_readonly(vm, g, len, vm->cfg->image_fd, pos) != 0) {
		unmap_host(vm, g, len, 0);
		return -1;
	}
	return 0;
}

/* Count what the guest touched of the image pages in the range, and
 * unless the run is over (remap 0), put anonymous memory back. The
 * flags are found with memchr, not a page at a time: the range is the
 * whole mmap area at the end of a run (a quarter of a million pages for
 * the python image, 0.24 ms of every run a flag at a time) and a guest
 * munmap may be as wide. */
static void
release(
    struct vm *vm, uint64_t addr, uint64_t len, int held, int remap, int keep)
{
	uint64_t a, run, end = addr + len;
	size_t k, npages = (size_t)((len + VM_PAGE - 1) / VM_PAGE);
	const uint8_t *flags, *next;

	if (vm->mmap_file == NULL || addr < vm->mmap_lo || end > vm->mmap_hi)
		return;
	flags = file_flag(vm, addr); /* page k of the range: flags[k] */
	for (k = 0; k < npages; k += run / VM_PAGE) {
		/* The next image page, and the image pages after it. */
		if ((next = memchr(flags + k, 1, npages - k)) == NULL)
			break;
		k = (size_t)(next - flags);
		a = addr + (uint64_t)k * VM_PAGE;
		run = VM_PAGE;
		while (a + run < end && *file_flag(vm, a + run))
			run += VM_PAGE;
		vm->file_touched_pages += touched(vm, a, run);
		memset(file_flag(vm, a), 0, run / VM_PAGE);
		vm->mmap_file_pages -= run / VM_PAGE;
		if (held)
			vm->mmap_pages_used += run / VM_PAGE;
		/* Guest memory's own pages again, in both views on trap; if
		 * this fails the guest is stopped. */
		if (remap && unmap_host(vm, a, run, keep) == 0 && vm->on_trap)
			vm_trap_restore(vm, a, run);
	}
}

void
vm_imgmap_release(struct vm *vm, uint64_t addr, uint64_t len, int held)
{
	release(vm, addr, len, held, 1, 0);
}

/* Trap: a read-only segment of the program shared with the image, split
 * around [lo, hi) (which becomes guest memory's own, its bytes kept);
 * the part above, if any, is a segment record of its own when there is
 * room for one, else guest memory's own too. */
static void
unshare_segment(struct vm *vm, unsigned i, uint64_t lo, uint64_t hi)
{
	struct vm_imgseg *s = &vm->imgsegs[i];
	uint64_t end = s->g + s->len;

	lo = lo > s->g ? lo : s->g;
	hi = hi < end ? hi : end;
	if (hi < end && lo > s->g && vm->nimgsegs == VM_IMGSEGS_MAX)
		hi = end; /* no room for the part above: it goes too */
	if (unmap_host(vm, lo, hi - lo, 1) != 0)
		return;
	vm_trap_restore(vm, lo, hi - lo);
	if (hi < end && lo > s->g)
		vm->imgsegs[vm->nimgsegs++] =
		    (struct vm_imgseg){ hi, end - hi, s->pos + (hi - s->g) };
	if (lo > s->g)
		s->len = lo - s->g;
	else if (hi < end) {
		s->pos += hi - s->g;
		s->len = end - hi;
		s->g = hi;
	} else
		*s = vm->imgsegs[--vm->nimgsegs];
}

void
vm_imgmap_unshare(struct vm *vm, uint64_t addr, uint64_t len)
{
	uint64_t end = addr + len, lo, hi;
	unsigned i;

	if (!vm->on_trap || end <= addr)
		return;
	/* Each pass takes the overlap out of one record (cut, moved or
	 * dropped; a part split off lies above the range). */
	for (;;) {
		for (i = 0; i < vm->nimgsegs; i++)
			if (vm->imgsegs[i].g < end &&
			    vm->imgsegs[i].g + vm->imgsegs[i].len > addr)
				break;
		if (i == vm->nimgsegs)
			break;
		unshare_segment(vm, i, addr, end);
		if (vm->stopped)
			return;
	}
	lo = addr > vm->mmap_lo ? addr : vm->mmap_lo;
	hi = end < vm->mmap_hi ? end : vm->mmap_hi;
	if (lo < hi && vm->mmap_file_pages != 0) {
		release(vm, lo, hi - lo, 1, 1, 1);
		vm_space_peak(vm);
	}
}

int
vm_imgmap_refork(struct vm *vm)
{
	const struct vmm_config *cfg = vm->cfg;
	const struct vm_imgrun *ir;
	const uint8_t *flags, *next;
	uint64_t pos, a, run, lo, hi;
	size_t k, npages;
	unsigned i;

	if (!vm->on_trap)
		return 0;
	for (i = 0; i < vm->nimgsegs; i++)
		if (map_both(vm, vm->imgsegs[i].g, vm->imgsegs[i].len,
		        vm->imgsegs[i].pos) != 0)
			return -1;
	if (vm->mmap_file_pages == 0 || vm->mmap_file == NULL)
		return 0;
	/* Oldest first: a page the guest still reads from the image is the
	 * newest mapping's that covers it (release clears the flag of one
	 * unmapped), so the last one mapped there wins. */
	for (i = 0; i < vm->nimgruns; i++) {
		ir = &vm->imgruns[i];
		lo = ir->g > vm->mmap_lo ? ir->g : vm->mmap_lo;
		hi = ir->g + ir->len < vm->mmap_hi ? ir->g + ir->len
		                                   : vm->mmap_hi;
		if (lo >= hi || ir->file >= cfg->nfiles)
			continue;
		pos = (uint64_t)(cfg->files[ir->file].data - cfg->image_map) +
		    ir->off;
		npages = (size_t)((hi - lo) / VM_PAGE);
		flags = file_flag(vm, lo);
		for (k = 0; k < npages; k += run / VM_PAGE) {
			if ((next = memchr(flags + k, 1, npages - k)) == NULL)
				break;
			k = (size_t)(next - flags);
			a = lo + (uint64_t)k * VM_PAGE;
			for (run = VM_PAGE;
			     a + run < hi && *file_flag(vm, a + run);
			     run += VM_PAGE)
				;
			if (map_both(vm, a, run, pos + (a - ir->g)) != 0)
				return -1;
		}
	}
	return 0;
}

/* At the run's end the guest memory is about to go whole: counting is
 * all there is to do (an mmap per image mapping was 0.2 ms of a cold
 * print(1)). */
void
vm_imgmap_settle(struct vm *vm)
{
	if (vm->mmap_file_pages != 0)
		release(vm, vm->mmap_lo, vm->mmap_hi - vm->mmap_lo, 0, 0, 0);
}

/*
 * A read-only segment of the program, when the program is an image file
 * (keep run, keepd): its whole pages are the image's, copy-on-write, the
 * partial pages at its ends copied; so a run's memory holds the pages of
 * the interpreter the guest touches, not a copy of the whole (the
 * python image's is 6.8 MiB, 3 ms of every boot to copy). The program's
 * segments are not charged either way (docs/vmm.md, "Memory across a
 * process tree"). Writable segments are copied as before: their pages
 * are written at once (relocations), and a copy is a page the guest
 * writes without a fault for the copy. On trap the stub maps the same
 * pages read-only (the file's head), recorded for a fork's child, a
 * template's clone and an mprotect that makes them writable. 0, or -1:
 * the caller copies.
 */
int
vm_imgmap_segment(struct vm *vm, const uint8_t *src, uint64_t g, uint64_t len)
{
	const struct vmm_config *cfg = vm->cfg;
	uint64_t first = (g + VM_PAGE - 1) & ~(VM_PAGE - 1);
	uint64_t last = (g + len) & ~(VM_PAGE - 1), pos;

	/* Only bytes inside the image (an execve'd workspace program is a
	 * copy elsewhere). */
	if (cfg->image_map == NULL || cfg->image_fd < 0 ||
	    (uintptr_t)src < (uintptr_t)cfg->image_map ||
	    (uintptr_t)src - (uintptr_t)cfg->image_map > cfg->image_map_len ||
	    len > cfg->image_map_len -
	            ((uintptr_t)src - (uintptr_t)cfg->image_map) ||
	    last <= first)
		return -1;
	if (vm->on_trap &&
	    (vm->nimgsegs >= VM_IMGSEGS_MAX || !trap_shareable(vm)))
		return -1;
	pos = (uint64_t)(src - cfg->image_map) + (first - g);
	if (pos % VM_PAGE != 0 || map_both(vm, first, last - first, pos) != 0)
		return -1;
	if (vm->on_trap)
		vm->imgsegs[vm->nimgsegs++] =
		    (struct vm_imgseg){ first, last - first, pos };
	memcpy(vm->mem + g, src, first - g);
	memcpy(vm->mem + last, src + (last - g), g + len - last);
	return 0;
}

int
vm_imgmap_ref(
    struct vm *vm, uint64_t g, uint64_t len, uint64_t pos, int readonly)
{
	if (vm->on_trap && (!readonly || !trap_shareable(vm)))
		return 1;
	return map_both(vm, g, len, pos);
}

struct vm_imgrun *
vm_imgrun_add(struct vm *vm)
{
	unsigned cap = vm->imgruns_cap ? vm->imgruns_cap * 2 : 64;
	struct vm_imgrun *n;

	if (vm->nimgruns == vm->imgruns_cap) {
		if ((n = reallocarray(vm->imgruns, cap, sizeof(*n))) == NULL)
			return NULL;
		vm->imgruns = n;
		vm->imgruns_cap = cap;
	}
	return &vm->imgruns[vm->nimgruns++];
}

int64_t
vm_imgmap(
    struct vm *vm, int fd, uint64_t g, uint64_t len, uint64_t off, int writable)
{
	struct vm_imgrun *ir;
	const struct vmm_config *cfg = vm->cfg;
	const struct vmm_file *file;
	uint64_t pos, n, i;

	/* On trap a writable mapping is a copy: the guest's pages are
	 * shared with its process, which maps the image read-only. */
	if ((vm->on_trap && (writable || !trap_shareable(vm))) ||
	    cfg->image_map == NULL || cfg->image_fd < 0 ||
	    vm->mmap_file == NULL || vm->imgmaps >= IMGMAP_MAX || fd < 0 ||
	    (unsigned)fd >= vm->nfds || vm->fds[fd].kind != VFD_IMAGE ||
	    g < vm->mmap_lo || g + len > vm->mmap_hi)
		return 0;
	file = vm->fds[fd].file;
	/* The file's whole pages only: in the image, the rest of its last
	 * page is the next file's padding or the signature, and the guest
	 * must read zeroes there, as past the end of a file in Linux. The
	 * caller copies that page. */
	if (off >= file->len || file->data < cfg->image_map ||
	    file->data + file->len > cfg->image_map + cfg->image_map_len)
		return 0;
	pos = (uint64_t)(file->data - cfg->image_map) + off;
	n = (file->len - off) & ~(VM_PAGE - 1);
	if (n > len)
		n = len;
	if (pos % VM_PAGE != 0 || n == 0)
		return 0;
	/* Recorded first: a mapping made is always known (a memory image
	 * of the guest refers to it, snapshot.c). */
	if ((ir = vm_imgrun_add(vm)) == NULL)
		return 0;
	*ir = (struct vm_imgrun){ g, n, (uint64_t)(file - cfg->files), off };
	if (map_both(vm, g, n, pos) != 0) {
		/* Guest memory's own pages are back (or the guest is
		 * stopped): the caller copies the file. */
		vm->nimgruns--;
		return vm->stopped ? -ENOMEM : 0;
	}
	vm->imgmaps++;
	for (i = 0; i < n / VM_PAGE; i++)
		if (!*file_flag(vm, g + i * VM_PAGE)) {
			*file_flag(vm, g + i * VM_PAGE) = 1;
			vm->mmap_file_pages++;
			vm->mmap_pages_used--;
		}
	return (int64_t)n;
}
