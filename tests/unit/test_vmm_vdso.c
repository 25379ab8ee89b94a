/*
 * Unit tests for the vDSO page's wall clock when the host's is set
 * (host/vmm/vdso.c, vm_vdso_follow_wall; docs/vmm.md "Time (the
 * vDSO)"): a step of the host's CLOCK_REALTIME, forward or back, moves
 * the page's real-time base by the step and leaves its monotonic base
 * alone; no step, a disabled page or a pairing the vm process was
 * preempted in leave the page as it was.
 *
 * The test links with --wrap=clock_gettime (Makefile), so the host's
 * clocks the vmm reads are the real ones plus what a case sets here.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "host/vmm/abi.h"
#include "host/vmm/vm_int.h"
#include "vdso/vvar.h"

#define MS 1000000ll

int __real_clock_gettime(clockid_t, struct timespec *);
int __wrap_clock_gettime(clockid_t, struct timespec *);

static int64_t real_step_ns; /* added to every CLOCK_REALTIME read */
static int mono_reads_left = -1; /* reads before monotonic jumps */
static int64_t mono_jump_ns;

int
__wrap_clock_gettime(clockid_t id, struct timespec *ts)
{
	int64_t add = 0, ns;
	int rc;

	if ((rc = __real_clock_gettime(id, ts)) != 0)
		return rc;
	if (id == CLOCK_REALTIME)
		add = real_step_ns;
	else if (id == CLOCK_MONOTONIC && mono_reads_left >= 0 &&
	    mono_reads_left-- == 0)
		add = mono_jump_ns;
	ns = (int64_t)ts->tv_sec * 1000000000ll + ts->tv_nsec + add;
	ts->tv_sec = ns / 1000000000ll;
	ts->tv_nsec = ns % 1000000000ll;
	return 0;
}

static int64_t
host_offset(void)
{
	struct timespec m, r;

	__real_clock_gettime(CLOCK_MONOTONIC, &m);
	__real_clock_gettime(CLOCK_REALTIME, &r);
	return ((int64_t)r.tv_sec - m.tv_sec) * 1000000000ll +
	    (r.tv_nsec - m.tv_nsec);
}

struct fixture {
	struct vm vm;
	struct keep_vvar *page;
};

/* A vm whose page is based on the host's clocks as they are. */
static int
setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct timespec m;

	if (f == NULL || (f->vm.mem = calloc(1, GUEST_VVAR + 4096)) == NULL)
		return -1;
	f->page = (struct keep_vvar *)(f->vm.mem + GUEST_VVAR);
	__real_clock_gettime(CLOCK_MONOTONIC, &m);
	f->page->enabled = 1;
	f->page->tsc_base = 1000;
	f->page->mult = 1ull << VVAR_SHIFT;
	f->page->mono_ns = (uint64_t)m.tv_sec * 1000000000u + m.tv_nsec;
	f->page->real_ns = f->page->mono_ns + (uint64_t)host_offset();
	real_step_ns = 0;
	mono_reads_left = -1;
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fixture *f = *state;

	free(f->vm.mem);
	free(f);
	return 0;
}

/* The page's wall-clock offset less the host's real one. */
static int64_t
page_lead(const struct fixture *f)
{
	return (int64_t)(f->page->real_ns - f->page->mono_ns) - host_offset();
}

static void
test_no_step(void **state)
{
	struct fixture *f = *state;
	struct keep_vvar before = *f->page;

	vm_vdso_follow_wall(&f->vm);
	assert_memory_equal(&before, f->page, sizeof(before));
}

static void
step(struct fixture *f, int64_t by)
{
	uint64_t mono = f->page->mono_ns, tsc = f->page->tsc_base;
	int64_t lead;

	real_step_ns = by;
	vm_vdso_follow_wall(&f->vm);
	lead = page_lead(f) - by;
	/* The step, give or take the pairing's window (20 us), and never
	 * behind the host's wall clock. */
	assert_true(lead >= -1000 && lead < 40000);
	assert_int_equal(f->page->mono_ns, mono);
	assert_int_equal(f->page->tsc_base, tsc);
	assert_int_equal(f->page->enabled, 1);
}

static void
test_step_forward(void **state)
{
	step(*state, 5 * MS);
}

static void
test_step_back(void **state)
{
	step(*state, -5 * MS);
}

static void
test_disabled_page(void **state)
{
	struct fixture *f = *state;
	struct keep_vvar before;

	f->page->enabled = 0;
	before = *f->page;
	real_step_ns = 5 * MS;
	vm_vdso_follow_wall(&f->vm);
	assert_memory_equal(&before, f->page, sizeof(before));
}

/* A base whose wall clock leads the host's by less than a pairing's
 * window (its own pairing was slow): no step, so not moved back, which
 * would run the guest's CLOCK_REALTIME backwards. */
static void
test_leading_base(void **state)
{
	struct fixture *f = *state;
	struct keep_vvar before;

	f->page->real_ns += 25000;
	before = *f->page;
	vm_vdso_follow_wall(&f->vm);
	assert_memory_equal(&before, f->page, sizeof(before));
}

/* Preempted between its reads (the second monotonic read 1 ms on): the
 * offset it would take is not trusted. */
static void
test_preempted_pairing(void **state)
{
	struct fixture *f = *state;
	struct keep_vvar before = *f->page;

	real_step_ns = 5 * MS;
	mono_reads_left = 1;
	mono_jump_ns = 1 * MS;
	vm_vdso_follow_wall(&f->vm);
	assert_memory_equal(&before, f->page, sizeof(before));
	mono_reads_left = -1;
	vm_vdso_follow_wall(&f->vm);
	assert_true(page_lead(f) >= 5 * MS - 1000);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_no_step, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_step_forward, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_step_back, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_disabled_page, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_preempted_pairing, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_leading_base, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
