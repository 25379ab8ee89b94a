/* DT_NEEDED, DT_RUNPATH and PT_INTERP of an ELF file (image/elfdeps.h). */
#include <elf.h>
#include <string.h>

#include "image/elfdeps.h"
#include "lib/errf.h"

#define MAX_PHDRS 256
#define MAX_DYN 4096

/* [off, off+n) inside [0, len), without wrapping. */
static int
in_file(uint64_t off, uint64_t n, size_t len)
{
	return off <= len && n <= len - off;
}

/* The file offset of virtual address va, through the PT_LOAD headers. */
static int
va_to_off(const uint8_t *buf, const Elf64_Ehdr *eh, uint64_t va, uint64_t *off)
{
	Elf64_Phdr ph;
	size_t i;

	for (i = 0; i < eh->e_phnum; i++) {
		memcpy(&ph, buf + eh->e_phoff + i * sizeof(ph), sizeof(ph));
		if (ph.p_type != PT_LOAD || va < ph.p_vaddr ||
		    va - ph.p_vaddr >= ph.p_filesz)
			continue;
		*off = ph.p_offset + (va - ph.p_vaddr);
		return 0;
	}
	return -1;
}

/* Copy the NUL-terminated string at strtab[idx] (strsz bytes) into out. */
static int
get_str(const uint8_t *buf, uint64_t strtab, uint64_t strsz, uint64_t idx,
    char *out, size_t max)
{
	uint64_t i;

	if (idx >= strsz)
		return -1;
	for (i = 0; idx + i < strsz && i < max; i++) {
		uint8_t c = buf[strtab + idx + i];

		out[i] = (char)c;
		if (c == '\0')
			return i == 0 ? -1 : 0;
		if (c < 0x20 || c > 0x7e)
			return -1;
	}
	return -1;
}

int
elfdeps_parse(const uint8_t *buf, size_t len, struct elfdeps *out, char *err,
    size_t errlen)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	Elf64_Dyn d;
	uint64_t dyn_off = 0, dyn_len = 0, strtab = 0, strsz = 0, off;
	uint64_t runpath = UINT64_MAX, rpath = UINT64_MAX;
	uint64_t needed[ELFDEPS_MAX_NEEDED];
	size_t i, n, nneeded = 0;
	int has_strtab = 0;

	memset(out, 0, sizeof(*out));
	if (len < SELFMAG || memcmp(buf, ELFMAG, SELFMAG) != 0)
		return 1;
	if (len < sizeof(eh))
		return errf(err, errlen, "truncated ELF header");
	memcpy(&eh, buf, sizeof(eh));
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_machine != EM_X86_64)
		return errf(err, errlen, "not an x86-64 ELF file");
	if (eh.e_type != ET_EXEC && eh.e_type != ET_DYN)
		return 1; /* an object file or core: nothing is loaded */
	if (eh.e_phnum > MAX_PHDRS ||
	    (eh.e_phnum > 0 && eh.e_phentsize != sizeof(ph)) ||
	    !in_file(eh.e_phoff, (uint64_t)eh.e_phnum * sizeof(ph), len))
		return errf(err, errlen, "bad program header table");
	for (i = 0; i < eh.e_phnum; i++) {
		memcpy(&ph, buf + eh.e_phoff + i * sizeof(ph), sizeof(ph));
		if (ph.p_type == PT_DYNAMIC) {
			if (!in_file(ph.p_offset, ph.p_filesz, len))
				return errf(err, errlen,
				    "PT_DYNAMIC lies outside the file");
			dyn_off = ph.p_offset;
			dyn_len = ph.p_filesz;
		} else if (ph.p_type == PT_INTERP) {
			if (!in_file(ph.p_offset, ph.p_filesz, len) ||
			    ph.p_filesz < 2 || ph.p_filesz > ELFDEPS_NAME_MAX ||
			    buf[ph.p_offset + ph.p_filesz - 1] != '\0' ||
			    memchr(buf + ph.p_offset, '\0', ph.p_filesz - 1) !=
			        NULL)
				return errf(err, errlen, "bad PT_INTERP");
			memcpy(out->interp, buf + ph.p_offset, ph.p_filesz);
		}
	}
	n = (size_t)(dyn_len / sizeof(d));
	if (n > MAX_DYN)
		return errf(err, errlen, "dynamic section too large");
	for (i = 0; i < n; i++) {
		memcpy(&d, buf + dyn_off + i * sizeof(d), sizeof(d));
		if (d.d_tag == DT_NULL)
			break;
		switch (d.d_tag) {
		case DT_NEEDED:
			if (nneeded == ELFDEPS_MAX_NEEDED)
				return errf(
				    err, errlen, "too many DT_NEEDED entries");
			needed[nneeded++] = d.d_un.d_val;
			break;
		case DT_STRTAB:
			if (va_to_off(buf, &eh, d.d_un.d_ptr, &strtab) != 0)
				return errf(err, errlen,
				    "DT_STRTAB is not in a loaded segment");
			has_strtab = 1;
			break;
		case DT_STRSZ:
			strsz = d.d_un.d_val;
			break;
		case DT_RUNPATH:
			runpath = d.d_un.d_val;
			break;
		case DT_RPATH:
			rpath = d.d_un.d_val;
			break;
		default:
			break;
		}
	}
	if (nneeded == 0 && runpath == UINT64_MAX && rpath == UINT64_MAX)
		return 0;
	if (!has_strtab || !in_file(strtab, strsz, len))
		return errf(err, errlen, "bad dynamic string table");
	for (i = 0; i < nneeded; i++)
		if (get_str(buf, strtab, strsz, needed[i], out->needed[i],
		        ELFDEPS_NAME_MAX) != 0)
			return errf(err, errlen, "bad DT_NEEDED name");
	out->nneeded = nneeded;
	/* The loader ignores DT_RPATH when DT_RUNPATH is present. */
	off = runpath != UINT64_MAX ? runpath : rpath;
	if (off != UINT64_MAX &&
	    get_str(buf, strtab, strsz, off, out->runpath,
	        ELFDEPS_RUNPATH_MAX) != 0)
		return errf(err, errlen, "bad DT_RUNPATH");
	return 0;
}
