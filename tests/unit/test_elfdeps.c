/* The image builder's reader of DT_NEEDED, DT_RUNPATH and PT_INTERP. */
#include <elf.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "image/elfdeps.h"

/* A minimal ET_DYN: one PT_LOAD over the whole file, a PT_INTERP, a
 * PT_DYNAMIC whose DT_STRTAB points into the load segment. */
struct tiny {
	Elf64_Ehdr eh;
	Elf64_Phdr ph[3];
	Elf64_Dyn dyn[6];
	char interp[32];
	char strtab[64];
};

#define VBASE 0x1000

static void
tiny_init(struct tiny *t)
{
	static const char strs[] = "\0libfoo.so.1\0libc.so.6\0$ORIGIN/../lib";

	memset(t, 0, sizeof(*t));
	memcpy(t->eh.e_ident, ELFMAG, SELFMAG);
	t->eh.e_ident[EI_CLASS] = ELFCLASS64;
	t->eh.e_ident[EI_DATA] = ELFDATA2LSB;
	t->eh.e_type = ET_DYN;
	t->eh.e_machine = EM_X86_64;
	t->eh.e_phoff = offsetof(struct tiny, ph);
	t->eh.e_phentsize = sizeof(Elf64_Phdr);
	t->eh.e_phnum = 3;
	t->ph[0].p_type = PT_LOAD;
	t->ph[0].p_vaddr = VBASE;
	t->ph[0].p_filesz = t->ph[0].p_memsz = sizeof(*t);
	t->ph[1].p_type = PT_INTERP;
	t->ph[1].p_offset = offsetof(struct tiny, interp);
	t->ph[1].p_filesz = strlen("/lib64/ld.so") + 1;
	strcpy(t->interp, "/lib64/ld.so");
	t->ph[2].p_type = PT_DYNAMIC;
	t->ph[2].p_offset = offsetof(struct tiny, dyn);
	t->ph[2].p_filesz = sizeof(t->dyn);
	memcpy(t->strtab, strs, sizeof(strs));
	t->dyn[0].d_tag = DT_NEEDED;
	t->dyn[0].d_un.d_val = 1;
	t->dyn[1].d_tag = DT_NEEDED;
	t->dyn[1].d_un.d_val = 13;
	t->dyn[2].d_tag = DT_STRTAB;
	t->dyn[2].d_un.d_ptr = VBASE + offsetof(struct tiny, strtab);
	t->dyn[3].d_tag = DT_STRSZ;
	t->dyn[3].d_un.d_val = sizeof(strs);
	t->dyn[4].d_tag = DT_RUNPATH;
	t->dyn[4].d_un.d_val = 23;
	t->dyn[5].d_tag = DT_NULL;
}

static int
parse(const struct tiny *t, size_t len, struct elfdeps *d)
{
	char err[128];

	return elfdeps_parse((const uint8_t *)t, len, d, err, sizeof(err));
}

static void
test_elfdeps_reads(void **state)
{
	struct tiny t;
	struct elfdeps d;

	(void)state;
	tiny_init(&t);
	assert_int_equal(parse(&t, sizeof(t), &d), 0);
	assert_string_equal(d.interp, "/lib64/ld.so");
	assert_int_equal(d.nneeded, 2);
	assert_string_equal(d.needed[0], "libfoo.so.1");
	assert_string_equal(d.needed[1], "libc.so.6");
	assert_string_equal(d.runpath, "$ORIGIN/../lib");
	/* Not ELF: nothing to follow. */
	assert_int_equal(parse((const struct tiny *)"#!/bin/sh\n", 10, &d), 1);
}

/* Each mutation alone must be refused, never read out of bounds. */
static void
test_elfdeps_refusals(void **state)
{
	struct tiny t;
	struct elfdeps d;
	size_t len;
	int i;

	(void)state;
	for (i = 0; i < 8; i++) {
		tiny_init(&t);
		len = sizeof(t);
		switch (i) {
		case 0: /* a name past the string table */
			t.dyn[0].d_un.d_val = 200;
			break;
		case 1: /* a string table outside every load segment */
			t.dyn[2].d_un.d_ptr = 0x900000;
			break;
		case 2: /* a string table past the end of the file */
			t.dyn[3].d_un.d_val = 1 << 20;
			break;
		case 3: /* PT_DYNAMIC past the end of the file */
			t.ph[2].p_offset = sizeof(t) - 8;
			break;
		case 4: /* an interpreter path without its NUL */
			memset(t.interp, 'x', sizeof(t.interp));
			t.ph[1].p_filesz = sizeof(t.interp);
			break;
		case 5: /* not x86-64 */
			t.eh.e_machine = EM_AARCH64;
			break;
		case 6: /* truncated in the program headers */
			len = offsetof(struct tiny, ph) + 10;
			break;
		case 7: /* a name running off the table's end, no NUL */
			t.dyn[3].d_un.d_val = 5;
			break;
		}
		assert_int_equal(parse(&t, len, &d), -1);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_elfdeps_reads),
		cmocka_unit_test(test_elfdeps_refusals),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
