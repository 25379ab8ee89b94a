/*
 * Unit tests for a principal's egress budget as the vm processes take
 * from it (host/vmm/sock_egress.c, vmm_egress_budget_take and _give;
 * docs/egress.md "Bytes"): a full bucket gives what is asked, then only
 * what is left; a partial take gets the rest; what is given back can be
 * taken again; time refills it; no budget gives everything.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "host/vmm/vmm.h"

#define SEC 1000000000ull

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * SEC + (uint64_t)ts.tv_nsec;
}

/* 1,000 bytes a day: nothing comes back while a test runs. */
static void
test_take_and_give(void **state)
{
	struct vmm_egress_budget b = { 0, 1000, 86400 * SEC };
	uint64_t got;

	(void)state;
	assert_int_equal(vmm_egress_budget_take(&b, 600, 0), 600);
	/* All or nothing, then the rest. */
	assert_int_equal(vmm_egress_budget_take(&b, 600, 0), 0);
	got = vmm_egress_budget_take(&b, 600, 1);
	assert_in_range(got, 399, 400);
	assert_int_equal(vmm_egress_budget_take(&b, 1, 1), 0);
	/* Given back: taken again, no more. */
	vmm_egress_budget_give(&b, 100);
	got = vmm_egress_budget_take(&b, 1000, 1);
	assert_in_range(got, 99, 100);
	assert_int_equal(vmm_egress_budget_take(&b, 1, 1), 0);
	/* Asking for nothing takes nothing. */
	assert_int_equal(vmm_egress_budget_take(&b, 0, 1), 0);
}

static void
test_refill(void **state)
{
	struct vmm_egress_budget b = { 0, 1000, SEC };

	(void)state;
	assert_int_equal(vmm_egress_budget_take(&b, 1000, 0), 1000);
	assert_int_equal(vmm_egress_budget_take(&b, 10, 0), 0);
	/* As if half the period had passed: half the bytes are back. */
	b.tat_ns -= SEC / 2;
	assert_in_range(vmm_egress_budget_take(&b, 1000, 1), 490, 500);
	/* A whole period and more: full, never more than full. */
	b.tat_ns = now_ns() - 10 * SEC;
	assert_int_equal(vmm_egress_budget_take(&b, 2000, 0), 0);
	assert_int_equal(vmm_egress_budget_take(&b, 2000, 1), 1000);
}

static void
test_none(void **state)
{
	struct vmm_egress_budget zero = { 0, 0, 0 };

	(void)state;
	assert_int_equal(vmm_egress_budget_take(NULL, 12345, 0), 12345);
	assert_int_equal(vmm_egress_budget_take(&zero, 12345, 0), 12345);
	vmm_egress_budget_give(NULL, 5);
	vmm_egress_budget_give(&zero, 5);
	/* A huge ask of a huge budget does not overflow. */
	{
		struct vmm_egress_budget big = { 0, 1ull << 42, 86400 * SEC };

		assert_int_equal(
		    vmm_egress_budget_take(&big, 1ull << 41, 0), 1ull << 41);
		assert_int_equal(
		    vmm_egress_budget_take(&big, 1ull << 42, 0), 0);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_take_and_give),
		cmocka_unit_test(test_refill),
		cmocka_unit_test(test_none),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
