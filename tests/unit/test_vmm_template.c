/* Templates: who may be handed a clone (host/vmmproc/vmm_template.c), and
 * the ready call's answers outside a template's boot
 * (host/vmm/template.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "guest/include/keep.h"
#include "host/vmmproc/vmm_int.h"
#include "host/vmm/sys.h"
#include "host/vmm/vm_int.h"

static void
test_usable(void **state)
{
	(void)state;
	/* Only the image's code ran in it: anyone's runs clone it. */
	assert_true(vmm_template_usable("", "alice"));
	assert_true(vmm_template_usable("", "bob"));
	/* A principal's code wrote it: that principal's alone. */
	assert_true(vmm_template_usable("alice", "alice"));
	assert_false(vmm_template_usable("alice", "bob"));
	assert_false(vmm_template_usable("alice", "alice2"));
	assert_false(vmm_template_usable("alice", ""));
}

static void
test_ready_outside_a_boot(void **state)
{
	struct vm vm;
	const uint64_t a[6] = { 0x200000, 4096, 0, 0, 0, 0 };

	(void)state;
	memset(&vm, 0, sizeof(vm));
	/* A cold run: no template to park. */
	vm.template_state = VM_TPL_NONE;
	assert_int_equal(sys_keep_ready(&vm, a), -ENOSYS);
	assert_false(vm.parked);
	/* A clone has had its request. */
	vm.template_state = VM_TPL_CLONE;
	assert_int_equal(sys_keep_ready(&vm, a), -EALREADY);
	assert_false(vm.parked);
}

static void
test_ready_length_checked_first(void **state)
{
	struct vm vm;
	const uint64_t small[6] = { 0x200000, KEEP_READY_MIN - 1, 0, 0, 0, 0 };
	const uint64_t big[6] = { 0x200000, (uint64_t)KEEP_READY_MAX + 1, 0, 0,
		0, 0 };

	(void)state;
	memset(&vm, 0, sizeof(vm));
	vm.template_state = VM_TPL_BOOTING;
	assert_int_equal(sys_keep_ready(&vm, small), -EINVAL);
	assert_int_equal(sys_keep_ready(&vm, big), -EINVAL);
	assert_false(vm.parked);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_usable),
		cmocka_unit_test(test_ready_outside_a_boot),
		cmocka_unit_test(test_ready_length_checked_first),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
