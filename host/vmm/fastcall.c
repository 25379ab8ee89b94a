/*
 * The calls the guest answers itself, from the host's side (docs/vmm.md
 * "Calls answered in the guest"; the layout: guest/fastcall.h; the
 * answers: guest/fastcall.c).
 *
 * The code goes at GUEST_FAST with every boot. It becomes LSTAR only
 * once the first system call shows the guest's `syscall` stays at CPL3
 * (kvm-pvm, where each exit costs about 30 us): on hardware
 * virtualization LSTAR runs at CPL0 on the caller's stack, and the stub
 * alone stays. The trap platform's stub answers them in its SIGSYS
 * handler (guest/trap_stub.c) from the same pages, synced before every
 * resume and reaped as every event begins (trap.c). Before every entry
 * of the vCPU the VMM writes what the
 * answers need at GUEST_FASTDATA (its descriptors, signal actions, cwd,
 * the memory a pointer may name); the index of the image's files goes
 * to GUEST_FASTIDX when the VMM first answers a path's stat itself, so
 * a program that stats nothing pays nothing for it. As every exit
 * begins, what the guest opened, read, listed and closed itself is made
 * so.
 */
#include <linux/kvm.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "guest/fastcall.h"
#include "host/vmm/abi.h"
#include "host/vmm/fs_int.h"
#include "host/vmm/sys.h"
#include "host/vmm/vm_int.h"

#define MSR_LSTAR 0xc0000082
/* The image's slot, past the ones guest memory may take (mem_slots.c). */
#define IMAGE_SLOT VM_MEMSLOTS_MAX

extern const unsigned char guest_fast[];
extern const size_t guest_fast_len;

_Static_assert(sizeof(struct keep_fast) <= GUEST_FASTDATA_LEN,
    "the fast data fits its pages");
_Static_assert(sizeof(struct fast_sigaction) == sizeof(struct vm_sigaction),
    "the kernel's struct sigaction on both sides");
_Static_assert(GUEST_VDSO + GUEST_VDSO_MAX <= GUEST_FASTCHANGE &&
        GUEST_FASTCHANGE + VM_PAGE <= GUEST_FAST &&
        sizeof(struct fast_changes) <= VM_PAGE,
    "the changed descriptors' page is a page of its own");
_Static_assert(GUEST_FAST + GUEST_FAST_MAX <= GUEST_FASTDATA &&
        GUEST_FASTDATA + GUEST_FASTDATA_LEN <= GUEST_FASTRUNS &&
        GUEST_FASTRUNS + GUEST_FASTRUNS_LEN <= GUEST_FASTIDX &&
        GUEST_FASTIDX < GUEST_LOW_END,
    "the fast pages lie in the kernel's 2 MiB, apart");

uint64_t
vm_fast_lstar(const struct vm *vm)
{
	return vm->fast && guest_fast_len <= GUEST_FAST_MAX
	    ? GUEST_FAST
	    : GUEST_SYSCALL_ENTRY;
}

void
vm_fast_install(struct vm *vm)
{
	memset(vm->mem + GUEST_FASTDATA, 0, GUEST_FASTDATA_LEN);
	memset(vm->mem + GUEST_FASTCHANGE, 0, sizeof(struct fast_changes));
	if (guest_fast_len <= GUEST_FAST_MAX)
		memcpy(vm->mem + GUEST_FAST, guest_fast, guest_fast_len);
	vm->fast_index = 0;
	vm->fast_fds = 0;
	vm->fast_space_gen = vm->space_gen - 1;
}

/* Runs of the mmap area's held pages (open in the host), into the runs
 * page; runs_whole 0 when they do not fit. */
static void
sync_runs(struct vm *vm, struct keep_fast *d)
{
	struct fast_run *r = (struct fast_run *)(vm->mem + GUEST_FASTRUNS);
	size_t pages = (size_t)((vm->mmap_hi - vm->mmap_lo) / VM_PAGE);
	size_t i = 0, j, n = 0;

	d->runs_whole = 0;
	d->nruns = 0;
	while ((i = vm_space_held_run(vm, i, &j)) < pages) {
		if (n == FAST_RUNS)
			return;
		r[n].lo = vm->mmap_lo + (uint64_t)i * VM_PAGE;
		r[n].hi = vm->mmap_lo + (uint64_t)j * VM_PAGE;
		n++;
		i = j;
	}
	d->nruns = (uint32_t)n;
	d->runs_whole = 1;
}

void
vm_fast_probe(struct vm *vm)
{
	union {
		struct kvm_msrs h;
		uint8_t bytes[sizeof(struct kvm_msrs) +
		    sizeof(struct kvm_msr_entry)];
	} m;

	if (vm->fast_probed)
		return;
	vm->fast_probed = 1;
	/* The trap stub answers them in its SIGSYS handler, from the same
	 * pages (guest/trap_stub.c answer_here): no LSTAR to set. */
	if (vm->on_trap) {
		vm->fast = 1;
		return;
	}
	/* The stub's `out` ran at CPL3: kvm-pvm (abi.h). */
	if ((vm->run->s.regs.sregs.cs.selector & 3) != 3 ||
	    guest_fast_len > GUEST_FAST_MAX)
		return;
	memset(&m, 0, sizeof(m));
	m.h.nmsrs = 1;
	m.h.entries[0].index = MSR_LSTAR;
	m.h.entries[0].data = GUEST_FAST;
	if (ioctl(vm->vcpufd, KVM_SET_MSRS, &m) == 1)
		vm->fast = 1;
}

/* Whether file i (cfg->files) may be opened without a check: its hash
 * was checked (by this run, or an earlier one: keep run's record, or
 * keepd's vmm since this process's template was made), or the image had
 * it checked as it opened. */
static int
file_checked(const struct vm *vm, size_t i)
{
	return vm->cfg->files[i].hash == NULL ||
	    (vm->img_checked != NULL && vm->img_checked[i]) ||
	    (vm->cfg->files_checked != NULL && vm->cfg->files_checked[i]);
}

/* Where file f's bytes lie in the image mapping (cfg->image_map), or
 * UINT64_MAX when they are not all there: the guest reads them itself
 * only from there. */
static uint64_t
image_offset(const struct vmm_config *cfg, const struct vmm_file *f)
{
	uint64_t at;

	if (cfg->image_map == NULL || f->data < cfg->image_map)
		return UINT64_MAX;
	at = (uint64_t)(f->data - cfg->image_map);
	if (at > cfg->image_map_len || f->len > cfg->image_map_len - at)
		return UINT64_MAX;
	return at;
}

/*
 * The bytes the index of cfg's files takes, worked out once a process
 * (a fork inherits it, and every execve of the run asks again): an
 * image too large for the index (the machine image's 23,000 files) had
 * it written up to the end of its room and then dropped, 1.5-2.4 ms of
 * every process start and execve for nothing.
 */
static uint64_t
index_bytes(const struct vmm_config *cfg)
{
	static const struct vmm_file *files;
	static size_t nfiles;
	static uint64_t bytes;
	size_t i;

	if (files != cfg->files || nfiles != cfg->nfiles) {
		bytes = (uint64_t)cfg->nfiles * sizeof(struct fast_file);
		for (i = 0; i < cfg->nfiles; i++)
			bytes += strlen(cfg->files[i].path) + 1;
		files = cfg->files;
		nfiles = cfg->nfiles;
	}
	return bytes;
}

/* The image's files, sorted by path, for stat to find without an exit;
 * none when they do not fit below GUEST_LOW_END. */
static void
build_index(struct vm *vm)
{
	const struct vmm_config *cfg = vm->cfg;
	struct keep_fast *d = (struct keep_fast *)(vm->mem + GUEST_FASTDATA);
	uint8_t *base = vm->mem + GUEST_FASTIDX;
	uint64_t room = GUEST_LOW_END - GUEST_FASTIDX, at;
	size_t i;

	vm->fast_index = 1;
	if (vm->img_order == NULL || cfg->nfiles == 0 ||
	    cfg->nfiles > UINT32_MAX ||
	    cfg->nfiles * sizeof(struct fast_file) > room ||
	    index_bytes(cfg) > room)
		return;
	at = cfg->nfiles * sizeof(struct fast_file);
	for (i = 0; i < cfg->nfiles; i++) {
		const struct vmm_file *f = &cfg->files[vm->img_order[i]];
		size_t n = strlen(f->path) + 1;
		struct fast_file e;

		if (n > room - at)
			return;
		memset(&e, 0, sizeof(e));
		e.path_off = (uint32_t)at;
		e.path_len = (uint32_t)(n - 1);
		e.mode = S_IFREG | f->mode;
		e.checked = file_checked(vm, vm->img_order[i]);
		e.size = f->len;
		e.data = image_offset(cfg, f);
		memcpy(base + i * sizeof(e), &e, sizeof(e));
		memcpy(base + at, f->path, n);
		at += n;
	}
	d->nfiles = (uint32_t)cfg->nfiles;
}

void
vm_fast_index(struct vm *vm, uint64_t nr)
{
	/* stat, lstat, newfstatat: the first the VMM answers itself. */
	if (vm->fast && !vm->fast_index && (nr == 4 || nr == 6 || nr == 262))
		build_index(vm);
}

/* An image file's place in the index at GUEST_FASTIDX, where the guest
 * finds its bytes; FAST_NO_FILE before the index is written. */
static uint32_t
file_place(const struct vm *vm, const struct vmm_file *file)
{
	const struct keep_fast *d =
	    (const struct keep_fast *)(vm->mem + GUEST_FASTDATA);
	size_t i = (size_t)(file - vm->cfg->files);

	if (d->nfiles == 0 || vm->img_pos == NULL || file < vm->cfg->files ||
	    i >= vm->cfg->nfiles)
		return FAST_NO_FILE;
	return vm->img_pos[i];
}

/* Where the guest finds an image directory's path and entries: the
 * first file under it, whose path begins with the directory's. */
static void
dir_place(struct vm *vm, const struct vfd *f, struct fast_fd *m)
{
	const struct keep_fast *d =
	    (const struct keep_fast *)(vm->mem + GUEST_FASTDATA);
	size_t n, pos;

	if (d->nfiles == 0 || f->path == NULL ||
	    (n = strlen(f->path)) >= FAST_PATH_MAX - 1 ||
	    (pos = vm_img_first_under(vm, f->path)) >= vm->cfg->nfiles)
		return;
	m->file = (uint32_t)pos;
	m->dir_len = (uint16_t)n;
}

static void
sync_fd(struct vm *vm, struct fast_fd *m, const struct vfd *f)
{
	memset(m, 0, sizeof(*m));
	m->cloexec = f->cloexec != 0;
	m->file = FAST_NO_FILE;
	switch (f->kind) {
	case VFD_FREE:
		m->kind = FAST_FD_FREE;
		break;
	case VFD_STDIN:
	case VFD_OUT:
		/* synth_stat of a FIFO named "i" or "o" (fs.c). */
		m->kind = FAST_FD_PIPE;
		m->tty = vm_tty_is(vm, f) != 0;
		m->mode = (uint16_t)(S_IFIFO | 0600);
		m->ino = fast_ino(f->kind == VFD_OUT ? "o" : "i");
		break;
	case VFD_IMAGE:
		m->kind = FAST_FD_IMAGE;
		m->mode = (uint16_t)(S_IFREG | f->file->mode);
		m->size = f->file->len;
		m->ino = fast_ino(f->file->path);
		m->off = f->off;
		m->file = file_place(vm, f->file);
		break;
	case VFD_VDIR:
		m->kind = f->path != NULL ? FAST_FD_DIR : FAST_FD_OTHER;
		m->mode = (uint16_t)(S_IFDIR | 0755);
		m->size = 4096;
		m->ino = f->path != NULL ? fast_ino(f->path) : 0;
		m->off = f->off;
		m->dir_end = f->dir_end != 0 && f->dir_end == f->off + 1;
		dir_place(vm, f, m);
		break;
	default:
		m->kind = FAST_FD_OTHER;
		break;
	}
}

/* Whether the guest's page tables give it GUEST_FASTCHANGE to write
 * (kvm.c build_page_tables): present, writable, user. */
static int
changes_page_mapped(const struct vm *vm)
{
	uint64_t pte;

	memcpy(&pte, vm->mem + GUEST_PT_LOW + 8 * (GUEST_FASTCHANGE / VM_PAGE),
	    sizeof(pte));
	return (pte & 7) == 7 && (pte & ~0xfffULL) == GUEST_FASTCHANGE;
}

/* A reader's offset as the guest left it: any a seek could set. */
static uint64_t
reader_offset(uint64_t off)
{
	return off > (uint64_t)INT64_MAX ? (uint64_t)INT64_MAX : off;
}

/* An image file opened by the guest itself, as open_at (fs.c) makes
 * one, into free descriptor fd; a descriptor the guest closed itself
 * and opened again is dropped first. Only a checked file, and never
 * over anything but an image file or directory. */
static void
reap_open(struct vm *vm, size_t fd, const struct fast_change *c)
{
	const struct vmm_config *cfg = vm->cfg;
	const struct vmm_file *file;
	struct vfd *f = &vm->fds[fd];

	if (vm->img_order == NULL || c->file >= cfg->nfiles)
		return;
	file = &cfg->files[vm->img_order[c->file]];
	if (!file_checked(vm, vm->img_order[c->file]))
		return;
	if (f->kind == VFD_IMAGE || f->kind == VFD_VDIR)
		vm_fd_release(f);
	if (f->kind != VFD_FREE)
		return;
	if ((f->path = strdup(file->path)) == NULL)
		return; /* the guest finds it closed: EBADF, no worse */
	f->kind = VFD_IMAGE;
	f->file = file;
	f->off = reader_offset(c->off);
	f->cloexec = (c->flags & FAST_CH_CLOEXEC) != 0;
	f->flags = O_RDONLY;
}

/* An image directory opened by the guest itself, as open_at (fs.c)
 * makes one: its path is the first dir_len bytes of file's ("/" when
 * 1), and must name a directory of the image. */
static void
reap_open_dir(struct vm *vm, size_t fd, const struct fast_change *c)
{
	const struct vmm_config *cfg = vm->cfg;
	struct vfd *f = &vm->fds[fd];
	const char *p;
	char *path;

	if (vm->img_order == NULL || c->file >= cfg->nfiles || c->dir_len == 0)
		return;
	p = cfg->files[vm->img_order[c->file]].path;
	if (c->dir_len > strlen(p) || (c->dir_len > 1 && p[c->dir_len] != '/'))
		return;
	if ((path = strndup(p, c->dir_len == 1 ? 1 : c->dir_len)) == NULL)
		return;
	if (!vm_img_is_dir(vm, path)) {
		free(path);
		return;
	}
	if (f->kind == VFD_IMAGE || f->kind == VFD_VDIR)
		vm_fd_release(f);
	if (f->kind != VFD_FREE) {
		free(path);
		return;
	}
	f->kind = VFD_VDIR;
	f->path = path;
	f->off = reader_offset(c->off);
	f->cloexec = (c->flags & FAST_CH_CLOEXEC) != 0;
	f->flags = O_RDONLY | ((c->flags & FAST_CH_NONBLOCK) ? O_NONBLOCK : 0);
}

/*
 * What the guest changed itself (struct fast_changes), read back as the
 * exit begins. The page is the guest's to write: each entry is a
 * request, honoured only as open(2), read(2) or close(2) would be for
 * what the guest does itself (a checked image file opened into a free
 * descriptor; an image file's offset moved; an image file or directory
 * closed); anything else is dropped.
 */
int
vm_fast_reap(struct vm *vm)
{
	struct fast_changes *page =
	    (struct fast_changes *)(vm->mem + GUEST_FASTCHANGE);
	struct fast_change c;
	int saved = errno;
	size_t fd;

	/* A vfork child in its parent's memory answers nothing itself, and
	 * what the page says is its parent's. */
	if (!vm->fast || vm->fds == NULL || vm->mem_borrowed)
		return 0;
	/* A kick inside the answers may find an entry half written (its
	 * fields, not yet its op, over a close still unread): clearing it
	 * now would lose them. The answer ends in microseconds, and the
	 * next exit reads what it made. */
	if (vm_fast_inside(vm, vm->run->s.regs.regs.rip) || page->changed == 0)
		return 0;
	page->changed = 0;
	for (fd = 0; fd < FAST_FDS; fd++) {
		if (page->fd[fd].op == FAST_CH_NONE)
			continue;
		memcpy(&c, &page->fd[fd], sizeof(c));
		memset(&page->fd[fd], 0, sizeof(page->fd[fd]));
		if (fd >= vm->nfds)
			continue;
		if (c.op == FAST_CH_CLOSED &&
		    (vm->fds[fd].kind == VFD_IMAGE ||
		        vm->fds[fd].kind == VFD_VDIR))
			vm_fd_release(&vm->fds[fd]);
		else if (c.op == FAST_CH_OPENED)
			reap_open(vm, fd, &c);
		else if (c.op == FAST_CH_OPENED_DIR)
			reap_open_dir(vm, fd, &c);
		else if (c.op == FAST_CH_MOVED &&
		    (vm->fds[fd].kind == VFD_IMAGE ||
		        vm->fds[fd].kind == VFD_VDIR))
			vm->fds[fd].off = reader_offset(c.off);
	}
	errno = saved;
	return 1;
}

/*
 * Whether call nr leaves all vm_fast_sync writes as it was, its answer
 * aside (the trap platform then writes nothing before the next resume,
 * trap.c): calls of time, ids, waits and writes (a write moves no
 * offset the page holds: an image file is read-only, a workspace file's
 * offset is the VMM's). A signal delivered after it is another matter,
 * which the caller sees by RIP.
 */
int
vm_fast_keeps(uint64_t nr)
{
	switch (nr) {
	case 1: /* write */
	case 7: /* poll */
	case 14: /* rt_sigprocmask */
	case 18: /* pwrite64 */
	case 23: /* select */
	case 24: /* sched_yield */
	case 35: /* nanosleep */
	case 39: /* getpid */
	case 96: /* gettimeofday */
	case 98: /* getrusage */
	case 99: /* sysinfo */
	case 100: /* times */
	case 102: /* getuid */
	case 104: /* getgid */
	case 107: /* geteuid */
	case 108: /* getegid */
	case 110: /* getppid */
	case 111: /* getpgrp */
	case 186: /* gettid */
	case 201: /* time */
	case 202: /* futex */
	case 228: /* clock_gettime */
	case 229: /* clock_getres */
	case 230: /* clock_nanosleep */
	case 270: /* pselect6 */
	case 271: /* ppoll */
	case 318: /* getrandom */
		return 1;
	default:
		return 0;
	}
}

/* A file just found to match its hash: the guest may now open it. */
void
vm_fast_checked(struct vm *vm, size_t i)
{
	struct keep_fast *d = (struct keep_fast *)(vm->mem + GUEST_FASTDATA);
	struct fast_file *e;

	if (vm->mem == NULL || !vm->fast_index || d->nfiles == 0 ||
	    vm->img_pos == NULL || i >= vm->cfg->nfiles)
		return;
	e = (struct fast_file *)(vm->mem + GUEST_FASTIDX) + vm->img_pos[i];
	e->checked = 1;
}

/*
 * Whether rip lies in the fast calls' code past its first instruction:
 * a signal is not delivered there (sys_signal.c), so no answer is ever
 * half made under a handler (struct fast_changes). At the entry itself
 * nothing is done yet, and kvm-pvm puts most kicks there (as the
 * guest's `syscall` enters it): a signal is delivered there as at the
 * call, which then runs after the handler returns.
 */
int
vm_fast_inside(const struct vm *vm, uint64_t rip)
{
	return vm->fast && rip > GUEST_FAST &&
	    rip < GUEST_FAST + guest_fast_len;
}

/*
 * The image's bytes in the VM, read-only at GUEST_IMAGE_GPA (the page
 * tables map them there, kvm.c), so that the guest reads its image
 * files itself. Without this slot (a program that is no image's, an
 * image past GUEST_IMAGE_MAX, KVM refusing) the VMM reads them.
 */
void
vm_fast_image_slot(struct vm *vm)
{
	const struct vmm_config *cfg = vm->cfg;
	struct kvm_userspace_memory_region region;

	vm->image_slot = 0;
	if (cfg->image_map == NULL || cfg->image_map_len == 0 ||
	    cfg->image_map_len > GUEST_IMAGE_MAX ||
	    ((uintptr_t)cfg->image_map & (VM_PAGE - 1)) != 0)
		return;
	memset(&region, 0, sizeof(region));
	region.slot = IMAGE_SLOT;
	region.flags = KVM_MEM_READONLY;
	region.guest_phys_addr = GUEST_IMAGE_GPA;
	region.memory_size =
	    (cfg->image_map_len + VM_PAGE - 1) & ~(uint64_t)(VM_PAGE - 1);
	region.userspace_addr = (uint64_t)(uintptr_t)cfg->image_map;
	if (ioctl(vm->vmfd, KVM_SET_USER_MEMORY_REGION, &region) == 0)
		vm->image_slot = 1;
}

/*
 * The sync below stores only what changed: the page is read at every
 * call (the trap stub's handler, on another CPU, reads enabled at each),
 * and a store of the same value still takes the line from the reader's
 * cache. No guest code runs while it writes (the vCPU is out; the stub
 * waits for its reply; guest threads take turns), so enabled need not
 * be off in between.
 */
#define PUT(lv, v)                                                             \
	do {                                                                   \
		__typeof__(lv) put_v_ = (v);                                   \
		if ((lv) != put_v_)                                            \
			(lv) = put_v_;                                         \
	} while (0)

static void
put_bytes(void *dst, const void *src, size_t n)
{
	if (memcmp(dst, src, n) != 0)
		memcpy(dst, src, n);
}

void
vm_fast_sync(struct vm *vm)
{
	static const uint64_t no_args[6];
	struct keep_fast *d = (struct keep_fast *)(vm->mem + GUEST_FASTDATA);
	struct fast_fd e;
	size_t n, i, hi = 0;

	/* The trap stub looks at enabled itself, whatever vm->fast says: a
	 * memory image taken with the answers on is not taken as on. */
	if (!vm->fast) {
		if (vm->on_trap)
			PUT(d->enabled, 0);
		return;
	}
	/* Traced runs show every call; several threads would read the
	 * page while another changes what it says; a vfork child in its
	 * parent's memory (the trap platform's) would write its own
	 * descriptors into its parent's page. */
	if (vm->cfg->trace || (vm->threads != NULL && !vm_thread_alone(vm)) ||
	    vm->fds == NULL || vm->mem_borrowed) {
		PUT(d->enabled, 0);
		return;
	}
	PUT(d->mem_lo, GUEST_LOW_END);
	PUT(d->mem_hi, vm->memsz);
	PUT(d->guard_lo, vm->stack_lo - VM_HUGE);
	PUT(d->guard_hi, vm->stack_lo);
	PUT(d->low_hi, vm_space_low_end(vm));
	PUT(d->stack_lo, vm->stack_lo);
	if (vm->fast_space_gen != vm->space_gen && vm->mmap_used != NULL) {
		sync_runs(vm, d);
		vm->fast_space_gen = vm->space_gen;
	}
	/* The entry writes below the caller's RSP: only on the stack,
	 * which is open whole (a coroutine's stack in the mmap area, whose
	 * next page may be closed, exits). */
	PUT(d->sp_lo, vm->stack_lo + FAST_STACK);
	PUT(d->sp_hi, vm->memsz + 1);
	PUT(d->gap_lo, d->guard_lo);
	PUT(d->gap_hi, d->guard_hi + FAST_STACK);
	PUT(d->no_workspace, vm->ws_fd < 0);
	/* Up to the last descriptor in use; those above read as free. */
	n = vm->nfds < FAST_FDS ? vm->nfds : FAST_FDS;
	for (i = 0; i < n; i++)
		if (vm->fds[i].kind != VFD_FREE)
			hi = i + 1;
	for (i = 0; i < hi; i++) {
		sync_fd(vm, &e, &vm->fds[i]);
		put_bytes(&d->fd[i], &e, sizeof(e));
	}
	memset(&e, 0, sizeof(e));
	for (i = hi; i < vm->fast_fds && i < FAST_FDS; i++)
		put_bytes(&d->fd[i], &e, sizeof(e));
	vm->fast_fds = (unsigned)hi;
	PUT(d->nfds, (uint32_t)n);
	_Static_assert(sizeof(d->act) == sizeof(vm->sig.act),
	    "the same 65 actions on both sides");
	put_bytes(d->act, vm->sig.act, sizeof(d->act));
	PUT(d->pid, (uint32_t)vm->pid);
	PUT(d->tid, (uint32_t)sys_gettid(vm, no_args));
	PUT(d->id, VM_GUEST_ID);
	PUT(d->io_chunk, VM_IO_CHUNK);
	PUT(d->dir_chunk, VM_DIR_CHUNK);
	/* The trap stub maps it writable at boot, or does not start. */
	PUT(d->changes_here, vm->on_trap || changes_page_mapped(vm));
	PUT(d->image_at, vm->image_slot ? GUEST_IMAGE_GPA : 0);
	n = strlen(vm->cwd);
	if (n < sizeof(d->cwd)) {
		put_bytes(d->cwd, vm->cwd, n + 1);
		PUT(d->cwd_len, (uint32_t)n);
	} else
		PUT(d->cwd_len, 0);
	PUT(d->enabled, 1);
}
