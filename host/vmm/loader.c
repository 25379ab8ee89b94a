/*
 * The dynamic loader of a PT_INTERP program (docs/vmm.md, "Dynamic
 * executables"). The program's own segments are placed by load_program
 * (kvm.c) as a static one's are; the interpreter it names
 * (/lib64/ld-linux-x86-64.so.2) is read from the image's files, placed
 * in the mmap area as Linux places it, and started in the program's
 * stead with AT_BASE pointing at it. Everything after that (the shared
 * libraries, their relocation, dlopen) is the loader's own work, through
 * openat, mmap and mprotect.
 */
#include <elf.h>
#include <stdio.h>
#include <string.h>

#include "host/vmm/vm_int.h"

static const struct vmm_file *
find_file(const struct vmm_config *cfg, const char *path, size_t len)
{
	size_t i;

	for (i = 0; i < cfg->nfiles; i++)
		if (strlen(cfg->files[i].path) == len &&
		    memcmp(cfg->files[i].path, path, len) == 0)
			return &cfg->files[i];
	return NULL;
}

int
vm_load_interp(struct vm *vm, char *err, size_t errlen)
{
	const struct vmm_config *cfg = vm->cfg;
	const char *path = (const char *)cfg->elf + vm->elf.interp_off;
	size_t plen = (size_t)vm->elf.interp_len;
	const struct vmm_file *f;
	struct elf_info probe, *in = &vm->interp;
	uint64_t span, at;
	size_t i;

	if ((f = find_file(cfg, path, plen)) == NULL) {
		snprintf(err, errlen,
		    "the program's interpreter %.*s is not in the image",
		    (int)plen, path);
		return VMM_E_ELF;
	}
	/* Parsed once at base 0 for its extent, then again where the
	 * mmap area has room for it: the checks run on the final place. */
	if (elf_parse_at(f->data, f->len, 0, 0, UINT64_MAX / 2, &probe, err,
	        errlen) != 0)
		return VMM_E_ELF;
	if (probe.type != ET_DYN || probe.interp_len != 0) {
		snprintf(err, errlen,
		    "%s: an interpreter must be a position-independent ELF "
		    "without an interpreter of its own",
		    f->path);
		return VMM_E_ELF;
	}
	span = probe.hi - probe.lo;
	if ((at = vm_mmap_alloc(vm, span)) == 0) {
		snprintf(err, errlen, "%s: does not fit guest memory", f->path);
		return VMM_E_TOOBIG;
	}
	if (elf_parse_at(f->data, f->len, at - probe.lo, vm->mmap_lo,
	        vm->mmap_hi, in, err, errlen) != 0)
		return VMM_E_ELF;
	for (i = 0; i < in->nload; i++) {
		const struct elf_load *l = &in->load[i];

		memcpy(vm->mem + l->vaddr, f->data + l->offset, l->filesz);
	}
	vm->interp_base = in->base;
	vm->start = in->entry;
	return VMM_OK;
}
