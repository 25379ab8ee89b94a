/* The VMM's pure parts: the ELF validator and the guest-pointer check. */
#include <elf.h>
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdio.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "host/vmm/abi.h"
#include "host/vmm/elf.h"
#include "host/vmm/sys.h"
#include "host/vmm/trap_abi.h"
#include "host/vmm/vm_int.h"
#include "host/vmm/workspace.h"
#include "lib/util.h"

#define LO GUEST_LOW_END
#define HI (64ULL << 20)

/* A minimal valid ET_EXEC: one R+X segment at 0x400000 with the entry. */
struct tiny {
	Elf64_Ehdr eh;
	Elf64_Phdr ph[2];
	uint8_t code[16];
};

static void
tiny_init(struct tiny *t)
{
	memset(t, 0, sizeof(*t));
	memcpy(t->eh.e_ident, ELFMAG, SELFMAG);
	t->eh.e_ident[EI_CLASS] = ELFCLASS64;
	t->eh.e_ident[EI_DATA] = ELFDATA2LSB;
	t->eh.e_ident[EI_VERSION] = EV_CURRENT;
	t->eh.e_type = ET_EXEC;
	t->eh.e_machine = EM_X86_64;
	t->eh.e_version = EV_CURRENT;
	t->eh.e_entry = 0x400000 + offsetof(struct tiny, code);
	t->eh.e_phoff = offsetof(struct tiny, ph);
	t->eh.e_ehsize = sizeof(Elf64_Ehdr);
	t->eh.e_phentsize = sizeof(Elf64_Phdr);
	t->eh.e_phnum = 1;
	t->ph[0].p_type = PT_LOAD;
	t->ph[0].p_flags = PF_R | PF_X;
	t->ph[0].p_offset = 0;
	t->ph[0].p_vaddr = 0x400000;
	t->ph[0].p_filesz = sizeof(*t);
	t->ph[0].p_memsz = sizeof(*t);
	t->ph[0].p_align = 4096;
}

static int
parse(const struct tiny *t, size_t len, struct elf_info *info)
{
	char err[128];

	return elf_parse(
	    (const uint8_t *)t, len, LO, HI, info, err, sizeof(err));
}

static void
test_elf_valid(void **state)
{
	struct tiny t;
	struct elf_info info;

	(void)state;
	tiny_init(&t);
	assert_int_equal(parse(&t, sizeof(t), &info), 0);
	assert_int_equal(info.nload, 1);
	assert_int_equal(info.entry, t.eh.e_entry);
	assert_int_equal(info.phdr, 0x400000 + offsetof(struct tiny, ph));
	assert_int_equal(info.lo, 0x400000);
	assert_int_equal(info.hi, 0x401000);
}

static void
test_elf_static_pie_placed(void **state)
{
	struct tiny t;
	struct elf_info info;

	(void)state;
	tiny_init(&t);
	t.eh.e_type = ET_DYN;
	t.ph[0].p_vaddr = 0;
	t.eh.e_entry = offsetof(struct tiny, code);
	assert_int_equal(parse(&t, sizeof(t), &info), 0);
	assert_int_equal(info.base, ELF_PIE_BASE);
	assert_int_equal(
	    info.entry, ELF_PIE_BASE + offsetof(struct tiny, code));
}

/* A PT_INTERP naming the path held in t->code. */
static void
interp_at_code(struct tiny *t, const char *path)
{
	memset(t->code, 0, sizeof(t->code));
	memcpy(t->code, path, strlen(path) + 1);
	t->eh.e_phnum = 2;
	memset(&t->ph[1], 0, sizeof(t->ph[1]));
	t->ph[1].p_type = PT_INTERP;
	t->ph[1].p_flags = PF_R;
	t->ph[1].p_offset = offsetof(struct tiny, code);
	t->ph[1].p_vaddr = 0x400000 + offsetof(struct tiny, code);
	t->ph[1].p_filesz = strlen(path) + 1;
	t->ph[1].p_memsz = strlen(path) + 1;
}

static void
test_elf_interp_recorded(void **state)
{
	struct tiny t;
	struct elf_info info;
	char err[128];

	(void)state;
	tiny_init(&t);
	assert_int_equal(parse(&t, sizeof(t), &info), 0);
	assert_int_equal(info.interp_len, 0);
	interp_at_code(&t, "/lib/ld.so");
	assert_int_equal(parse(&t, sizeof(t), &info), 0);
	assert_int_equal(info.interp_len, strlen("/lib/ld.so"));
	assert_memory_equal((const uint8_t *)&t + info.interp_off, "/lib/ld.so",
	    info.interp_len + 1);
	/* The loader itself: ET_DYN placed where the caller says. */
	tiny_init(&t);
	t.eh.e_type = ET_DYN;
	t.ph[0].p_vaddr = 0;
	t.eh.e_entry = offsetof(struct tiny, code);
	assert_int_equal(elf_parse_at((const uint8_t *)&t, sizeof(t), 0x2000000,
	                     LO, HI, &info, err, sizeof(err)),
	    0);
	assert_int_equal(info.base, 0x2000000);
	assert_int_equal(info.entry, 0x2000000 + offsetof(struct tiny, code));
	assert_int_equal(elf_parse_at((const uint8_t *)&t, sizeof(t), 0x2000800,
	                     LO, HI, &info, err, sizeof(err)),
	    -1);
}

/* Each mutation alone must be refused. */
static void
test_elf_refusals(void **state)
{
	struct tiny t;
	struct elf_info info;
	int i;

	(void)state;
	for (i = 0; i < 16; i++) {
		size_t len = sizeof(t);

		tiny_init(&t);
		switch (i) {
		case 0:
			t.eh.e_ident[EI_MAG1] = 'X';
			break;
		case 1:
			t.eh.e_ident[EI_CLASS] = ELFCLASS32;
			break;
		case 2:
			t.eh.e_machine = EM_AARCH64;
			break;
		case 3:
			t.eh.e_type = ET_REL;
			break;
		case 4: /* program headers past the end */
			t.eh.e_phoff = sizeof(t) - 8;
			break;
		case 5: /* segment past the end of the file */
			t.ph[0].p_filesz = sizeof(t) + 1;
			t.ph[0].p_memsz = sizeof(t) + 1;
			break;
		case 6: /* file size above memory size */
			t.ph[0].p_memsz = 8;
			break;
		case 7: /* W and X */
			t.ph[0].p_flags = PF_R | PF_W | PF_X;
			break;
		case 8: /* below the program's memory (the kernel's) */
			t.ph[0].p_vaddr = 0x1000;
			t.eh.e_entry = 0x1000 + offsetof(struct tiny, code);
			break;
		case 9: /* wraps around */
			t.ph[0].p_vaddr = ~0ULL - 8;
			break;
		case 10: /* entry outside any executable segment */
			t.eh.e_entry = 0x900000;
			break;
		case 11: /* overlapping segments */
			t.eh.e_phnum = 2;
			t.ph[1] = t.ph[0];
			t.ph[1].p_flags = PF_R;
			break;
		case 12: /* an interpreter path without its NUL */
			interp_at_code(&t, "/lib/ld.so");
			memset(t.code, 'x', sizeof(t.code));
			break;
		case 13: /* truncated header */
			len = sizeof(Elf64_Ehdr) - 1;
			break;
		case 14: /* a relative interpreter path */
			interp_at_code(&t, "lib/ld.so");
			break;
		case 15: /* an interpreter path with a control byte */
			interp_at_code(&t, "/lib/l\nd.so");
			break;
		}
		assert_int_equal(parse(&t, len, &info), -1);
	}
}

/* The image's files by path: found, listed and told apart from
 * directories, whatever order the image holds them in. */
static void
test_img_tree(void **state)
{
	static const struct vmm_file files[] = {
		{ "/usr/lib/b.so", NULL, 0, 0644, NULL, 0 },
		{ "/bin/sh", NULL, 0, 0755, NULL, 0 },
		{ "/usr/lib/a-b", NULL, 0, 0644, NULL, 0 },
		{ "/usr/lib/a/x.py", NULL, 0, 0644, NULL, 0 },
		{ "/usr/lib/a/y.py", NULL, 0, 0644, NULL, 0 },
		{ "/usr/lib/a0", NULL, 0, 0644, NULL, 0 },
		{ "/usr/bin/env", NULL, 0, 0755, NULL, 0 },
	};
	static const char *const lib[] = { "a-b", "a", "a0", "b.so" };
	struct vmm_config cfg;
	struct vm vm;
	char name[64];
	int is_dir;
	size_t i;

	(void)state;
	memset(&cfg, 0, sizeof(cfg));
	memset(&vm, 0, sizeof(vm));
	cfg.files = files;
	cfg.nfiles = nitems(files);
	vm.cfg = &cfg;
	assert_int_equal(vm_img_init(&vm), 0);
	assert_ptr_equal(vm_img_find(&vm, "/bin/sh"), &files[1]);
	assert_ptr_equal(vm_img_find(&vm, "/usr/lib/a/y.py"), &files[4]);
	assert_null(vm_img_find(&vm, "/usr/lib/a"));
	assert_null(vm_img_find(&vm, "/usr/lib/c"));
	assert_true(vm_img_is_dir(&vm, "/"));
	assert_true(vm_img_is_dir(&vm, "/usr/lib/a"));
	assert_false(vm_img_is_dir(&vm, "/usr/lib/a0"));
	assert_false(vm_img_is_dir(&vm, "/usr/li"));
	for (i = 0; i < nitems(lib); i++) {
		assert_int_equal(vm_img_child(&vm, "/usr/lib", i, name,
		                     sizeof(name), &is_dir),
		    0);
		assert_string_equal(name, lib[i]);
		assert_int_equal(is_dir, strcmp(lib[i], "a") == 0);
	}
	assert_int_equal(
	    vm_img_child(&vm, "/usr/lib", i, name, sizeof(name), &is_dir), -1);
	assert_int_equal(
	    vm_img_child(&vm, "/", 0, name, sizeof(name), &is_dir), 0);
	assert_string_equal(name, "bin");
	assert_int_equal(
	    vm_img_child(&vm, "/", 1, name, sizeof(name), &is_dir), 0);
	assert_string_equal(name, "usr");
	assert_int_equal(
	    vm_img_child(&vm, "/", 2, name, sizeof(name), &is_dir), -1);
	vm_img_free(&vm);
}

static void
test_gptr_bounds(void **state)
{
	struct vm vm;
	static uint8_t mem[1];

	(void)state;
	memset(&vm, 0, sizeof(vm));
	vm.mem = mem; /* never dereferenced: only the checks run */
	vm.memsz = HI;
	vm.stack_top = HI;
	vm.stack_lo = HI - (8ULL << 20);
	assert_non_null(vm_gptr(&vm, LO, 16));
	assert_null(vm_gptr(&vm, 0, 1)); /* NULL page */
	assert_null(vm_gptr(&vm, GUEST_KERNEL, 1)); /* the kernel's */
	assert_null(vm_gptr(&vm, LO - 1, 2)); /* straddles into it */
	assert_null(vm_gptr(&vm, HI - 8, 9)); /* past the end */
	assert_null(vm_gptr(&vm, ~0ULL - 4, 8)); /* wraps */
	assert_null(vm_gptr(&vm, vm.stack_lo - 4096, 1)); /* guard */
	assert_non_null(vm_gptr(&vm, vm.stack_lo, 4096));
	assert_non_null(vm_gptr(&vm, HI - 8, 8));
}

/* Pages the guest does not hold are out of a system call's reach too:
 * the brk area past the break, free and reserved mmap pages. */
static void
test_gptr_space(void **state)
{
	struct vm vm;
	static uint8_t mem[1];
	uint8_t used[8] = { VM_PG_FREE, VM_PG_HELD, VM_PG_HELD, VM_PG_RESERVED,
		VM_PG_HELD, VM_PG_FREE, VM_PG_HELD, VM_PG_HELD };
	uint64_t m;

	(void)state;
	memset(&vm, 0, sizeof(vm));
	vm.mem = mem; /* never dereferenced */
	vm.memsz = HI;
	vm.stack_top = HI;
	vm.stack_lo = HI - (8ULL << 20);
	vm.brk_start = LO + 100;
	vm.brk_cur = LO + 5000; /* open to the end of its page, LO+8192 */
	vm.mmap_lo = m = LO + (4ULL << 20);
	vm.mmap_hi = m + sizeof(used) * 4096;
	vm.mmap_used = used;
	assert_non_null(vm_gptr(&vm, LO, 8192));
	assert_null(vm_gptr(&vm, LO + 8190, 4)); /* past the break */
	assert_null(vm_gptr(&vm, m - 4096, 1)); /* the brk area's last */
	assert_null(vm_gptr(&vm, m, 1)); /* free */
	assert_non_null(vm_gptr(&vm, m + 4096, 8192));
	assert_null(vm_gptr(&vm, m + 4096, 8193)); /* into a reservation */
	assert_null(vm_gptr(&vm, m + 3 * 4096 + 4095, 1));
	assert_non_null(vm_gptr(&vm, m + 4 * 4096 + 100, 3996));
	assert_null(vm_gptr(&vm, m + 4 * 4096, 4097)); /* into a free one */
	assert_non_null(vm_gptr(&vm, m + 6 * 4096, 8192));
	assert_non_null(vm_gptr(&vm, m + 8 * 4096, 4096)); /* past the area */
	assert_null(vm_gptr(&vm, LO, m + 4096 - LO)); /* over all of it */
}

/*
 * The held runs of the mmap area (vm_space_held_run, which both the
 * fork's and execve's walk and the fast calls' runs use) against a
 * page-at-a-time reading of the same map: runs of every length, at
 * every offset from the eight-page steps, reserved pages between held
 * ones, a run to the area's end; and pages below mmap_low, which
 * vm_pages_mark keeps below anything it marks, never looked at.
 */
static void
test_space_held_runs(void **state)
{
	enum { N = 613 };
	static uint8_t used[N];
	struct vm vm;
	size_t i, j, at, end, want_at, want_end;
	unsigned seed = 1, runs = 0;

	(void)state;
	memset(&vm, 0, sizeof(vm));
	vm.mmap_lo = 1ULL << 30;
	vm.mmap_hi = vm.mmap_lo + (uint64_t)N * VM_PAGE;
	vm.mmap_used = used;
	vm.mmap_low = N;
	for (i = 0; i < N;) {
		seed = seed * 1103515245u + 12345u;
		j = i + 1 + (seed >> 16) % 23;
		if (j > N)
			j = N;
		vm_pages_mark(&vm, i, j - i,
		    (seed >> 8) % 3 == 0       ? VM_PG_FREE
		        : (seed >> 8) % 3 == 1 ? VM_PG_HELD
		                               : VM_PG_RESERVED);
		i = j;
	}
	vm_pages_mark(&vm, N - 5, 5, VM_PG_HELD);
	assert_true(vm.mmap_low < N);
	for (i = 0; i < vm.mmap_low; i++)
		assert_int_equal(used[i], VM_PG_FREE);
	for (i = 0;; i = end) {
		for (want_at = i; want_at < N && used[want_at] != VM_PG_HELD;
		     want_at++)
			;
		for (want_end = want_at;
		     want_end < N && used[want_end] == VM_PG_HELD; want_end++)
			;
		at = vm_space_held_run(&vm, i, &end);
		assert_int_equal(at, want_at);
		assert_int_equal(end, want_at < N ? want_end : N);
		if (at == N)
			break;
		runs++;
	}
	assert_true(runs > 10);
	/* Below the mark nothing is looked at: a held byte there (which
	 * only a write past vm_pages_mark could put) is not found. */
	memset(used, VM_PG_FREE, N);
	vm.mmap_low = N;
	vm_pages_mark(&vm, 400, 3, VM_PG_HELD);
	assert_int_equal(vm.mmap_low, 400);
	used[10] = VM_PG_HELD;
	assert_int_equal(vm_space_held_run(&vm, 0, &end), 400);
	assert_int_equal(end, 403);
	vm_pages_mark(&vm, 10, 1, VM_PG_RESERVED);
	assert_int_equal(vm.mmap_low, 10);
	assert_int_equal(vm_space_held_run(&vm, 403, &end), N);
	assert_int_equal(end, N);
}

/* Whether the guest's page tables map the 2 MiB page at addr. */
static int
pde_present(const struct vm *vm, uint64_t addr)
{
	uint64_t e;

	memcpy(&e, vm->mem + GUEST_PD + 8 * (addr / VM_HUGE), sizeof(e));
	return (e & 1) != 0;
}

/*
 * KVM's memory slots (mem_slots.c), without a VM: the fronts a load
 * plans, how each grows (the nearer one, by at least its own size, on
 * 2 MiB boundaries), the page tables mapping exactly what is reached
 * (never the stack's guard), and few steps for a long growth.
 */
static void
test_memslots_reach(void **state)
{
	struct vm vm;
	uint8_t *tables = calloc(1, GUEST_PD + 0x1000 * GUEST_PD_MAX);
	uint64_t mib = 1ULL << 20, a, last;
	unsigned steps = 0;

	(void)state;
	assert_non_null(tables);
	memset(&vm, 0, sizeof(vm));
	vm.mem = tables; /* only the page tables are written */
	vm.memsz = 2048 * mib;
	vm.stack_top = vm.memsz;
	vm.stack_lo = vm.memsz - 8 * mib;
	vm.brk_start = 10 * mib + 123;
	vm_memslots_plan(&vm);
	assert_int_equal(vm.reach_lo, 20 * mib); /* the break's, and room */
	assert_int_equal(vm.reach_hi, 2022 * mib); /* the stack's, and room */
	vm_pt_open(&vm, 0, vm.reach_lo);
	vm_pt_open(&vm, vm.reach_hi, vm.memsz);
	assert_true(vm_memslots_cover(&vm, 0, 20 * mib));
	assert_false(vm_memslots_cover(&vm, 20 * mib - 1, 20 * mib + 1));
	assert_true(vm_memslots_cover(&vm, 2022 * mib, vm.memsz));
	assert_false(vm_memslots_cover(&vm, vm.memsz - 1, vm.memsz + 1));
	assert_true(pde_present(&vm, 18 * mib));
	assert_false(pde_present(&vm, 20 * mib));
	assert_false(pde_present(&vm, vm.stack_lo - VM_HUGE)); /* guard */
	assert_true(pde_present(&vm, vm.stack_lo));

	/* Above the break: the low front doubles. */
	assert_int_equal(vm_memslots_reach(&vm, 20 * mib, 4096), 0);
	assert_int_equal(vm.reach_lo, 40 * mib);
	assert_true(pde_present(&vm, 38 * mib));
	/* Below the mmap area's top: the high front grows by its size. */
	assert_int_equal(vm_memslots_reach(&vm, 2021 * mib, 4096), 0);
	assert_int_equal(vm.reach_hi, 1996 * mib);
	assert_true(pde_present(&vm, 1996 * mib));
	assert_false(pde_present(&vm, 1994 * mib));
	/* Reached already: nothing changes. */
	assert_int_equal(vm_memslots_reach(&vm, 30 * mib, 8 * mib), 0);
	assert_int_equal(vm.reach_lo, 40 * mib);
	/* A range nearer the top than the bottom: the high front, down to
	 * its start (rounded to 2 MiB) when that is further than double. */
	assert_int_equal(vm_memslots_reach(&vm, 1025 * mib + 5, 4096), 0);
	assert_int_equal(vm.reach_hi, 1024 * mib);
	assert_false(pde_present(&vm, 1022 * mib));
	/* Past the end or wrapping: refused. */
	assert_int_equal(vm_memslots_reach(&vm, vm.memsz - 4096, 8192), -1);
	assert_int_equal(vm_memslots_reach(&vm, ~0ULL - 4095, 8192), -1);

	/* A heap grown a page at a time to 1 GiB: a handful of slots. */
	for (a = last = vm.reach_lo; a < 1000 * mib; a += 4096) {
		assert_int_equal(vm_memslots_reach(&vm, a, 4096), 0);
		if (vm.reach_lo != last)
			steps++;
		last = vm.reach_lo;
	}
	assert_true(steps <= 6);
	assert_true(vm_memslots_cover(&vm, 0, vm.memsz)); /* fronts met */
	for (a = VM_HUGE; a < vm.memsz; a += VM_HUGE)
		assert_int_equal(
		    pde_present(&vm, a), a != vm.stack_lo - VM_HUGE);

	/* Small guest memory: one slot over all of it. */
	vm.memsz = 64 * mib;
	vm.stack_lo = vm.memsz - 8 * mib;
	vm.brk_start = 5 * mib;
	vm_memslots_plan(&vm);
	assert_true(vm_memslots_cover(&vm, 0, vm.memsz));
	free(tables);
}

static void
test_reserve_parse(void **state)
{
	static const struct {
		const char *text;
		int rc;
		uint64_t bytes;
	} cases[] = {
		{ "2G\n", 0, 2ULL << 30 },
		{ "# V8's code range\n\n1G", 0, 1ULL << 30 },
		{ "3M\n", 0, 4ULL << 20 }, /* whole 2 MiB pages */
		{ "", 0, 0 },
		{ "8G", 0, 8ULL << 30 },
		{ "9G", -1, 0 }, /* the page tables reach 16 GiB */
		{ "1G\n1G\n", -1, 0 },
		{ "lots", -1, 0 },
		{ " 1G", -1, 0 },
		{ "1G ", -1, 0 },
		{ "-1", -1, 0 },
		{ "99999999999999999999999", -1, 0 },
	};
	uint64_t b;
	size_t i;
	char big[VM_RESERVE_FILE_MAX + 2];

	(void)state;
	for (i = 0; i < nitems(cases); i++) {
		assert_int_equal(
		    vm_reserve_parse((const uint8_t *)cases[i].text,
		        strlen(cases[i].text), &b),
		    cases[i].rc);
		if (cases[i].rc == 0)
			assert_true(b == cases[i].bytes);
	}
	memset(big, '#', sizeof(big));
	assert_int_equal(
	    vm_reserve_parse((const uint8_t *)big, sizeof(big), &b), -1);
}

static int
env_parse_str(const char *text, const char *const *caller, char ***v, size_t *n)
{
	return vm_env_parse((const uint8_t *)text, strlen(text), caller, v, n);
}

/* The image's default environment: comments and blank lines skipped,
 * the caller's variables win, anything malformed refuses the file. */
static void
test_image_env_parse(void **state)
{
	static const char *const caller[] = { "HOME=/home/u", NULL };
	char **v, big[VM_IMAGE_ENV_MAX + 2];
	size_t n, i, off = 0;

	(void)state;
	assert_int_equal(env_parse_str("# python\nMPLBACKEND=Agg\n\n"
	                               "HOME=/\nA_1=x=y",
	                     caller, &v, &n),
	    0);
	assert_int_equal(n, 2);
	assert_string_equal(v[0], "MPLBACKEND=Agg");
	assert_string_equal(v[1], "A_1=x=y");
	assert_null(v[2]);
	vm_image_env_free(v);

	assert_int_equal(env_parse_str("# nothing\n\n", NULL, &v, &n), 0);
	assert_null(v);
	assert_int_equal(n, 0);
	assert_int_equal(env_parse_str("HOME=/\n", caller, &v, &n), 0);
	assert_null(v);

	assert_int_equal(env_parse_str("1A=x\n", NULL, &v, &n), -1);
	assert_null(v);
	assert_int_equal(n, 0);
	assert_int_equal(env_parse_str("NOEQUALS\n", NULL, &v, &n), -1);
	assert_int_equal(env_parse_str("=x\n", NULL, &v, &n), -1);
	assert_int_equal(env_parse_str("A-B=x\n", NULL, &v, &n), -1);
	assert_int_equal(env_parse_str("A=\x01\n", NULL, &v, &n), -1);
	assert_int_equal(env_parse_str("A=x\r\n", NULL, &v, &n), -1);
	assert_int_equal(env_parse_str("A=\xc3\xa9\n", NULL, &v, &n), -1);
	assert_int_equal(
	    vm_env_parse((const uint8_t *)"A=x\0y", 5, NULL, &v, &n), -1);

	for (i = 0; i <= VM_IMAGE_ENV_LINES; i++)
		off += (size_t)snprintf(
		    big + off, sizeof(big) - off, "V%zu=1\n", i);
	assert_int_equal(env_parse_str(big, NULL, &v, &n), -1);
	big[off - 6] = '\0'; /* drop the last: VM_IMAGE_ENV_LINES lines */
	assert_int_equal(env_parse_str(big, NULL, &v, &n), 0);
	assert_int_equal(n, VM_IMAGE_ENV_LINES);
	vm_image_env_free(v);

	memset(big, 'x', sizeof(big));
	memcpy(big, "A=", 2);
	assert_int_equal(vm_env_parse((const uint8_t *)big,
	                     VM_IMAGE_ENV_MAX + 1, NULL, &v, &n),
	    -1);
	assert_int_equal(
	    vm_env_parse((const uint8_t *)big, VM_IMAGE_ENV_MAX, NULL, &v, &n),
	    0);
	assert_int_equal(n, 1);
	vm_image_env_free(v);
}

/* No ".." survives normalization, and ".." above "/" stays at "/". */
static void
test_ws_normalize(void **state)
{
	static const struct {
		const char *base, *in, *want;
	} cases[] = {
		{ "/", "a/b", "/a/b" },
		{ "/a", "../../../../etc/passwd", "/etc/passwd" },
		{ "/a/b", "./c/./d/", "/a/b/c/d" },
		{ "/", "..", "/" },
		{ "/x", "/y/../z", "/z" },
		{ "/", "a//b///c", "/a/b/c" },
		{ "/", "/", "/" },
	};
	char out[WS_PATH_MAX], big[WS_PATH_MAX + 8];
	size_t i;

	(void)state;
	for (i = 0; i < nitems(cases); i++) {
		assert_int_equal(
		    ws_normalize(cases[i].base, cases[i].in, out, sizeof(out)),
		    0);
		assert_string_equal(out, cases[i].want);
	}
	assert_int_equal(ws_normalize("/", "", out, sizeof(out)), -ENOENT);
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(
	    ws_normalize("/", big, out, sizeof(out)), -ENAMETOOLONG);
}

/* The system-call table: each row sits at its number, has a name and a
 * reason, and a handler exactly when it is not refused; the numbers a
 * static musl or glibc program starts with are served. */
static void
test_sys_table(void **state)
{
	const struct vm_sysent *e;
	size_t i;
	unsigned last = 0;

	(void)state;
	for (i = 0; (e = vm_sys_nth(i)) != NULL; i++) {
		assert_non_null(e->name);
		assert_non_null(e->why);
		assert_ptr_equal(vm_sys_row(e->nr), e);
		if (i > 0)
			assert_true(e->nr > last);
		last = e->nr;
		if (e->level == VM_SYS_REFUSED) {
			assert_null(e->fn);
			assert_true(e->err > 0);
		} else {
			assert_non_null(e->fn);
			assert_true(e->level == VM_SYS_FULL ||
			    e->level == VM_SYS_PARTIAL);
		}
	}
	assert_true(i > 300);
	assert_string_equal(vm_sys_row(0)->name, "read");
	assert_string_equal(vm_sys_row(231)->name, "exit_group");
	assert_string_equal(vm_sys_row(158)->name, "arch_prctl");
	assert_non_null(vm_sys_row(158)->fn);
	assert_string_equal(vm_sys_row(0x4b50)->name, "keep_fetch");
	assert_null(vm_sys_row(335)); /* no such call on x86-64 */
	assert_null(vm_sys_row(100000));
	assert_null(vm_sys_row(~0ULL));
}

/* The workspace quota's walk: blocks, not sizes; symlinks not followed;
 * bounded. */
static void
test_ws_usage(void **state)
{
	char dir[] = "/tmp/keep-ws-usage-XXXXXX", path[256];
	char buf[8192];
	uint64_t bytes, dense;
	int ws, fd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	ws = open(dir, O_RDONLY | O_DIRECTORY);
	assert_true(ws >= 0);
	assert_int_equal(ws_usage(ws, 100, &bytes), 0);
	assert_int_equal(bytes, 0);
	memset(buf, 'x', sizeof(buf));
	snprintf(path, sizeof(path), "%s/dense", dir);
	fd = open(path, O_WRONLY | O_CREAT, 0600);
	assert_int_equal(write(fd, buf, sizeof(buf)), sizeof(buf));
	fsync(fd);
	close(fd);
	assert_int_equal(ws_usage(ws, 100, &dense), 0);
	assert_true(dense >= sizeof(buf));
	snprintf(path, sizeof(path), "%s/sub", dir);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/sub/sparse", dir);
	fd = open(path, O_WRONLY | O_CREAT, 0600);
	assert_int_equal(ftruncate(fd, 1LL << 30), 0);
	close(fd);
	snprintf(path, sizeof(path), "%s/sub/out", dir);
	assert_int_equal(symlink("/usr", path), 0);
	assert_int_equal(ws_usage(ws, 100, &bytes), 0);
	assert_true(bytes >= dense && bytes < dense + (1 << 20));
	assert_int_equal(ws_usage(ws, 2, &bytes), -E2BIG);
	close(ws);
	snprintf(buf, sizeof(buf), "rm -rf %s", dir);
	assert_int_equal(system(buf), 0);
}

/* The trap platform's spins: answered in time they grow, late or
 * unanswered they shrink, within their bounds. */
static void
test_trap_spin_adapt(void **state)
{
	(void)state;
	assert_int_equal(trap_spin_adapt(1000, 1, 1000, 140000), 2000);
	assert_int_equal(trap_spin_adapt(100000, 1, 1000, 140000), 140000);
	assert_int_equal(trap_spin_adapt(4000, 0, 1000, 140000), 3000);
	assert_int_equal(trap_spin_adapt(1200, 0, 1000, 140000), 1000);
}

/* A yield is crowded when another task than the peer took the CPU:
 * its time beyond the peer's own work, where the peer answered. */
static void
test_trap_yield_crowded(void **state)
{
	const uint64_t slow = TRAP_YIELD_SLOW;

	(void)state;
	/* The peer answered and worked for all of it: not crowded. */
	assert_false(trap_yield_crowded(10 * slow, 1, 10 * slow));
	assert_false(trap_yield_crowded(10 * slow, 1, 9 * slow + 1));
	/* Answered, but most of the time was someone else's. */
	assert_true(trap_yield_crowded(10 * slow, 1, 2 * slow));
	/* No answer: all of it was someone else's (or a long guest). */
	assert_true(trap_yield_crowded(slow + 1, 0, 100 * slow));
	assert_false(trap_yield_crowded(slow, 0, 0));
	/* The peer's word past the yield (hostile or stale) counts as
	 * all of the yield, never wraps. */
	assert_false(trap_yield_crowded(3 * slow, 1, UINT64_MAX));
	assert_false(trap_yield_crowded(0, 1, 5));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_elf_valid),
		cmocka_unit_test(test_elf_static_pie_placed),
		cmocka_unit_test(test_elf_refusals),
		cmocka_unit_test(test_elf_interp_recorded),
		cmocka_unit_test(test_img_tree),
		cmocka_unit_test(test_gptr_bounds),
		cmocka_unit_test(test_gptr_space),
		cmocka_unit_test(test_space_held_runs),
		cmocka_unit_test(test_memslots_reach),
		cmocka_unit_test(test_reserve_parse),
		cmocka_unit_test(test_image_env_parse),
		cmocka_unit_test(test_ws_normalize),
		cmocka_unit_test(test_sys_table),
		cmocka_unit_test(test_ws_usage),
		cmocka_unit_test(test_trap_spin_adapt),
		cmocka_unit_test(test_trap_yield_crowded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
