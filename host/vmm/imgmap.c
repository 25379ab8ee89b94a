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
	int fd = pagemap_fd(vm);

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

/* Count what the guest touched of the image pages in the range, and
 * unless the run is over (remap 0), put anonymous memory back. The
 * flags are found with memchr, not a page at a time: the range is the
 * whole mmap area at the end of a run (a quarter of a million pages for
 * the python image, 0.24 ms of every run a flag at a time) and a guest
 * munmap may be as wide. */
static void
release(struct vm *vm, uint64_t addr, uint64_t len, int held, int remap)
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
		/* Zeroes again, as anonymous memory; if even this fails the
		 * range is a hole and the guest's next touch stops it. */
		if (remap &&
		    mmap(vm->mem + a, run, PROT_READ | PROT_WRITE,
		        MAP_PRIVATE | MAP_FIXED | MAP_ANONYMOUS | MAP_NORESERVE,
		        -1, 0) == MAP_FAILED)
			vm_stop(vm, VMM_FAULT, -1,
			    "fault: guest memory could not be remapped: %s",
			    strerror(errno));
	}
}

void
vm_imgmap_release(struct vm *vm, uint64_t addr, uint64_t len, int held)
{
	release(vm, addr, len, held, 1);
}

/* At the run's end the guest memory is about to go whole: counting is
 * all there is to do (an mmap per image mapping was 0.2 ms of a cold
 * print(1)). */
void
vm_imgmap_settle(struct vm *vm)
{
	if (vm->mmap_file_pages != 0)
		release(vm, vm->mmap_lo, vm->mmap_hi - vm->mmap_lo, 0, 0);
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
 * writes without a fault for the copy. 0, or -1: the caller copies.
 */
int
vm_imgmap_segment(struct vm *vm, const uint8_t *src, uint64_t g, uint64_t len)
{
	const struct vmm_config *cfg = vm->cfg;
	uint64_t first = (g + VM_PAGE - 1) & ~(VM_PAGE - 1);
	uint64_t last = (g + len) & ~(VM_PAGE - 1), pos;

	/* Only bytes inside the image (an execve'd workspace program is a
	 * copy elsewhere). */
	/* The trap platform's memory is a shared memfd: a private file
	 * mapping in it would be the vm process's alone. */
	if (vm->on_trap || cfg->image_map == NULL || cfg->image_fd < 0 ||
	    (uintptr_t)src < (uintptr_t)cfg->image_map ||
	    (uintptr_t)src - (uintptr_t)cfg->image_map > cfg->image_map_len ||
	    len > cfg->image_map_len -
	            ((uintptr_t)src - (uintptr_t)cfg->image_map) ||
	    last <= first)
		return -1;
	pos = (uint64_t)(src - cfg->image_map) + (first - g);
	if (pos % VM_PAGE != 0)
		return -1;
	if (mmap(vm->mem + first, last - first, PROT_READ | PROT_WRITE,
	        MAP_PRIVATE | MAP_FIXED | MAP_NORESERVE, cfg->image_fd,
	        (off_t)pos) == MAP_FAILED) {
		/* MAP_FIXED may have unmapped the range: zeroes again. */
		if (mmap(vm->mem + first, last - first, PROT_READ | PROT_WRITE,
		        MAP_PRIVATE | MAP_FIXED | MAP_ANONYMOUS | MAP_NORESERVE,
		        -1, 0) == MAP_FAILED)
			vm_stop(vm, VMM_FAULT, -1,
			    "fault: guest memory could not be remapped: %s",
			    strerror(errno));
		return -1;
	}
	memcpy(vm->mem + g, src, first - g);
	memcpy(vm->mem + last, src + (last - g), g + len - last);
	return 0;
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
vm_imgmap(struct vm *vm, int fd, uint64_t g, uint64_t len, uint64_t off)
{
	struct vm_imgrun *ir;
	const struct vmm_config *cfg = vm->cfg;
	const struct vmm_file *file;
	uint64_t pos, n, i;

	if (vm->on_trap || cfg->image_map == NULL || cfg->image_fd < 0 ||
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
	if (mmap(vm->mem + g, n, PROT_READ | PROT_WRITE,
	        MAP_PRIVATE | MAP_FIXED | MAP_NORESERVE, cfg->image_fd,
	        (off_t)pos) == MAP_FAILED) {
		/* MAP_FIXED may have unmapped the range: zeroes again, and
		 * the caller copies the file. */
		vm->nimgruns--;
		if (mmap(vm->mem + g, n, PROT_READ | PROT_WRITE,
		        MAP_PRIVATE | MAP_FIXED | MAP_ANONYMOUS | MAP_NORESERVE,
		        -1, 0) == MAP_FAILED)
			return -ENOMEM;
		return 0;
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
