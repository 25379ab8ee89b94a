/*
 * The ELF loader's parser: validates an x86-64 executable (ET_EXEC, or
 * ET_DYN: static-pie, a PIE with an interpreter, or the interpreter
 * itself) before any byte of it is used. Pure: no I/O, no allocation.
 */
#ifndef KEEP_VMM_ELF_H
#define KEEP_VMM_ELF_H

#include <stddef.h>
#include <stdint.h>

#define ELF_MAX_PHDRS 64
#define ELF_MAX_LOADS 16
#define ELF_PIE_BASE 0x400000ULL /* where a static-pie is placed */
#define ELF_INTERP_MAX 256 /* PT_INTERP bytes, NUL included */

struct elf_load {
	uint64_t vaddr; /* relocated, in guest memory */
	uint64_t memsz;
	uint64_t offset; /* in the file */
	uint64_t filesz;
	uint32_t flags; /* PF_R | PF_W | PF_X */
};

struct elf_info {
	uint64_t entry; /* relocated */
	uint64_t phdr; /* guest address of the program headers (AT_PHDR) */
	uint16_t phnum;
	uint16_t phentsize;
	uint16_t type; /* ET_EXEC or ET_DYN */
	uint64_t base; /* 0 for ET_EXEC, the load base for ET_DYN */
	/* PT_INTERP: the interpreter's path at buf[interp_off], interp_len
	 * bytes, absolute and printable, NUL after it; 0: static. */
	uint64_t interp_off, interp_len;
	uint64_t lo, hi; /* page-rounded extent of the loaded segments */
	struct elf_load load[ELF_MAX_LOADS];
	size_t nload;
};

/*
 * Parse and validate buf[0..len). Segments must fall inside
 * [mem_lo, mem_hi) once placed. Returns 0, or -1 with a one-line reason.
 */
int elf_parse(const uint8_t *buf, size_t len, uint64_t mem_lo, uint64_t mem_hi,
    struct elf_info *out, char *err, size_t errlen);

/* The same with an ET_DYN placed at pie_base (page-aligned) instead of
 * ELF_PIE_BASE: the dynamic loader goes where the mmap area has room. */
int elf_parse_at(const uint8_t *buf, size_t len, uint64_t pie_base,
    uint64_t mem_lo, uint64_t mem_hi, struct elf_info *out, char *err,
    size_t errlen);

#endif
