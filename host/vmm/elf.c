/*
 * ELF validation for the loader (host/vmm/elf.h). Every field is checked
 * with overflow-safe arithmetic before it is used; the file is never
 * trusted to be well-formed.
 */
#include <elf.h>
#include <string.h>

#include "host/vmm/elf.h"
#include "lib/errf.h"

#define PAGE 4096ULL

/* a + b, or 1 when it wraps. */
static int
add_over(uint64_t a, uint64_t b, uint64_t *sum)
{
	*sum = a + b;
	return *sum < a;
}

/* The PT_INTERP path: absolute, printable, NUL-terminated inside the
 * segment, shorter than ELF_INTERP_MAX. */
static int
interp_ok(const uint8_t *buf, size_t len, const Elf64_Phdr *ph)
{
	uint64_t end, i;

	if (ph->p_filesz < 3 || ph->p_filesz > ELF_INTERP_MAX ||
	    add_over(ph->p_offset, ph->p_filesz, &end) || end > len)
		return 0;
	if (buf[ph->p_offset] != '/' || buf[end - 1] != '\0')
		return 0;
	for (i = ph->p_offset; i < end - 1; i++)
		if (buf[i] < 0x21 || buf[i] > 0x7e)
			return 0;
	return 1;
}

int
elf_parse(const uint8_t *buf, size_t len, uint64_t mem_lo, uint64_t mem_hi,
    struct elf_info *out, char *err, size_t errlen)
{
	return elf_parse_at(
	    buf, len, ELF_PIE_BASE, mem_lo, mem_hi, out, err, errlen);
}

int
elf_parse_at(const uint8_t *buf, size_t len, uint64_t pie_base, uint64_t mem_lo,
    uint64_t mem_hi, struct elf_info *out, char *err, size_t errlen)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	uint64_t end, phend, lo, hi;
	size_t i, j;
	int exec_entry = 0;

	memset(out, 0, sizeof(*out));
	if (len < sizeof(eh))
		return errf(err, errlen, "not an ELF file (too short)");
	memcpy(&eh, buf, sizeof(eh));
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0)
		return errf(err, errlen, "not an ELF file (bad magic)");
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_ident[EI_DATA] != ELFDATA2LSB ||
	    eh.e_ident[EI_VERSION] != EV_CURRENT ||
	    (eh.e_ident[EI_OSABI] != ELFOSABI_SYSV &&
	        eh.e_ident[EI_OSABI] != ELFOSABI_GNU) ||
	    eh.e_machine != EM_X86_64 || eh.e_version != EV_CURRENT)
		return errf(
		    err, errlen, "not a 64-bit little-endian x86-64 Linux ELF");
	if (eh.e_type != ET_EXEC && eh.e_type != ET_DYN)
		return errf(
		    err, errlen, "ELF type %u is not executable", eh.e_type);
	if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0 ||
	    eh.e_phnum > ELF_MAX_PHDRS)
		return errf(err, errlen, "bad program header table shape");
	if (add_over(eh.e_phoff, (uint64_t)eh.e_phnum * sizeof(Elf64_Phdr),
	        &phend) ||
	    phend > len)
		return errf(
		    err, errlen, "program headers lie outside the file");
	if (pie_base % PAGE != 0)
		return errf(err, errlen, "load base not page-aligned");
	out->type = eh.e_type;
	out->base = eh.e_type == ET_DYN ? pie_base : 0;
	out->phnum = eh.e_phnum;
	out->phentsize = eh.e_phentsize;

	for (i = 0; i < eh.e_phnum; i++) {
		struct elf_load *l;

		memcpy(&ph, buf + eh.e_phoff + i * sizeof(ph), sizeof(ph));
		if (ph.p_type == PT_INTERP) {
			if (out->interp_len != 0 || !interp_ok(buf, len, &ph))
				return errf(err, errlen,
				    "bad or repeated interpreter path");
			out->interp_off = ph.p_offset;
			out->interp_len = ph.p_filesz - 1;
			continue;
		}
		if (ph.p_type != PT_LOAD)
			continue;
		if (out->nload == ELF_MAX_LOADS)
			return errf(err, errlen, "too many PT_LOAD segments");
		if (ph.p_memsz == 0)
			continue;
		if (ph.p_filesz > ph.p_memsz)
			return errf(err, errlen,
			    "segment %zu: file size above memory size", i);
		if (add_over(ph.p_offset, ph.p_filesz, &end) || end > len)
			return errf(err, errlen,
			    "segment %zu: lies outside the file", i);
		if (ph.p_align > 1 &&
		    ((ph.p_align & (ph.p_align - 1)) != 0 ||
		        (ph.p_vaddr - ph.p_offset) % PAGE != 0))
			return errf(err, errlen, "segment %zu: misaligned", i);
		if ((ph.p_flags & PF_W) && (ph.p_flags & PF_X))
			return errf(err, errlen,
			    "segment %zu: writable and executable (W^X)", i);
		if (ph.p_flags & ~(uint32_t)(PF_R | PF_W | PF_X))
			return errf(
			    err, errlen, "segment %zu: unknown flags", i);
		l = &out->load[out->nload++];
		if (add_over(ph.p_vaddr, out->base, &l->vaddr) ||
		    add_over(l->vaddr, ph.p_memsz, &end) || l->vaddr < mem_lo ||
		    end > mem_hi)
			return errf(err, errlen,
			    "segment %zu: address 0x%llx+0x%llx outside guest "
			    "memory",
			    i, (unsigned long long)ph.p_vaddr,
			    (unsigned long long)ph.p_memsz);
		l->memsz = ph.p_memsz;
		l->offset = ph.p_offset;
		l->filesz = ph.p_filesz;
		l->flags = ph.p_flags;
		if (eh.e_phoff >= ph.p_offset &&
		    phend <= ph.p_offset + ph.p_filesz)
			out->phdr = l->vaddr + (eh.e_phoff - ph.p_offset);
	}
	if (out->nload == 0)
		return errf(err, errlen, "no loadable segment");

	/* Page-rounded segments may share a page only if they are in
	 * file order and do not overlap in memory. */
	lo = UINT64_MAX;
	hi = 0;
	for (i = 0; i < out->nload; i++) {
		const struct elf_load *a = &out->load[i];
		uint64_t a_end = a->vaddr + a->memsz;

		for (j = i + 1; j < out->nload; j++) {
			const struct elf_load *b = &out->load[j];

			if (a->vaddr < b->vaddr + b->memsz && b->vaddr < a_end)
				return errf(err, errlen,
				    "segments %zu and %zu overlap", i, j);
		}
		if (a->vaddr < lo)
			lo = a->vaddr;
		if (a_end > hi)
			hi = a_end;
		if (add_over(eh.e_entry, out->base, &end))
			return errf(err, errlen, "bad entry point");
		if ((a->flags & PF_X) && end >= a->vaddr && end < a_end)
			exec_entry = 1;
	}
	out->entry = eh.e_entry + out->base;
	if (!exec_entry)
		return errf(err, errlen,
		    "entry point 0x%llx is not in an executable segment",
		    (unsigned long long)out->entry);
	out->lo = lo & ~(PAGE - 1);
	out->hi = (hi + PAGE - 1) & ~(PAGE - 1);
	if (out->hi > mem_hi || out->hi < hi)
		return errf(err, errlen, "segments end past guest memory");
	return 0;
}
