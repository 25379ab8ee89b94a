/* Unit tests for lib/task: stacks that suspend and resume. */
#include <sys/wait.h>

#include <fenv.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "lib/task.h"

struct counter {
	int steps;
	int limit;
	struct task *self;
	char trail[64];
};

static void
count_up(void *arg)
{
	struct counter *c = arg;
	char local[32]; /* on the task's stack: must survive suspensions */

	c->self = task_self();
	memset(local, 'a' + (c->limit % 26), sizeof(local));
	while (c->steps < c->limit) {
		c->steps++;
		task_suspend();
		if (local[c->steps % sizeof(local)] != 'a' + (c->limit % 26))
			return;
	}
	c->trail[0] = 'x';
}

static void
test_runs_to_completion(void **state)
{
	struct counter c = { .limit = 0 };
	struct task *t;

	(void)state;
	assert_null(task_self());
	t = task_new(count_up, &c);
	assert_non_null(t);
	assert_int_equal(task_run(t), TASK_DONE);
	assert_ptr_equal(c.self, t);
	assert_int_equal(c.trail[0], 'x');
	assert_null(task_self());
	task_free(t);
}

static void
test_suspend_resume(void **state)
{
	struct counter c = { .limit = 5 };
	struct task *t;
	int i;

	(void)state;
	t = task_new(count_up, &c);
	assert_non_null(t);
	for (i = 1; i <= 5; i++) {
		assert_int_equal(task_run(t), TASK_SUSPENDED);
		assert_int_equal(c.steps, i);
		assert_null(task_self());
	}
	assert_int_equal(task_run(t), TASK_DONE);
	assert_int_equal(c.trail[0], 'x');
	task_free(t);
}

/* Many tasks interleaved, each with its own stack contents. */
static void
test_interleaved(void **state)
{
	struct counter c[40];
	struct task *t[40];
	int i, live = 40, round;

	(void)state;
	memset(c, 0, sizeof(c));
	for (i = 0; i < 40; i++) {
		c[i].limit = i + 1;
		t[i] = task_new(count_up, &c[i]);
		assert_non_null(t[i]);
	}
	for (round = 0; live > 0; round++) {
		for (i = 0; i < 40; i++) {
			if (t[i] == NULL)
				continue;
			if (task_run(t[i]) == TASK_DONE) {
				assert_int_equal(c[i].steps, i + 1);
				assert_int_equal(c[i].trail[0], 'x');
				task_free(t[i]);
				t[i] = NULL;
				live--;
			}
		}
		assert_true(round <= 41);
	}
	task_cache_drain();
}

/* A task that starts a task: the inner one suspends back to the outer,
 * and is later resumed from the thread's own stack. */
struct nest {
	struct counter inner_c;
	struct task *inner;
	int outer_saw;
};

static void
outer(void *arg)
{
	struct nest *n = arg;

	n->inner = task_new(count_up, &n->inner_c);
	if (n->inner == NULL)
		return;
	n->outer_saw = task_run(n->inner);
	task_suspend();
	n->outer_saw += 10;
}

static void
test_nested(void **state)
{
	struct nest n;
	struct task *t;

	(void)state;
	memset(&n, 0, sizeof(n));
	n.inner_c.limit = 2;
	t = task_new(outer, &n);
	assert_non_null(t);
	assert_int_equal(task_run(t), TASK_SUSPENDED);
	assert_non_null(n.inner);
	assert_int_equal(n.outer_saw, TASK_SUSPENDED);
	assert_int_equal(n.inner_c.steps, 1);
	/* The inner task now returns here, not to the outer one. */
	assert_int_equal(task_run(n.inner), TASK_SUSPENDED);
	assert_int_equal(n.inner_c.steps, 2);
	assert_int_equal(task_run(n.inner), TASK_DONE);
	assert_int_equal(task_run(t), TASK_DONE);
	assert_int_equal(n.outer_saw, TASK_SUSPENDED + 10);
	task_free(n.inner);
	task_free(t);
}

/* The floating-point environment is per task: a rounding mode set in a
 * task does not leak into the code that resumed it. */
static volatile double fp_seen;

static void
rounds_up(void *arg)
{
	volatile double a = 1.0, b = 3.0;

	(void)arg;
	fesetround(FE_UPWARD);
	task_suspend();
	fp_seen = a / b;
}

static void
test_fp_environment(void **state)
{
	struct task *t;
	volatile double a = 1.0, b = 3.0, down, up;

	(void)state;
	fesetround(FE_TONEAREST);
	t = task_new(rounds_up, NULL);
	assert_non_null(t);
	assert_int_equal(task_run(t), TASK_SUSPENDED);
	assert_int_equal(fegetround(), FE_TONEAREST);
	fesetround(FE_DOWNWARD);
	down = a / b;
	assert_int_equal(task_run(t), TASK_DONE);
	assert_int_equal(fegetround(), FE_DOWNWARD);
	up = fp_seen;
	assert_true(up > down);
	fesetround(FE_TONEAREST);
	task_free(t);
}

/* Running off the end of a task's stack faults on the guard page rather
 * than writing over whatever lies below it. */
static void
recurse(void *arg)
{
	volatile char frame[4096];

	frame[0] = (char)(uintptr_t)arg;
	frame[sizeof(frame) - 1] = frame[0];
	if ((uintptr_t)arg != UINTPTR_MAX)
		recurse((void *)((uintptr_t)arg + 1));
	frame[1] = 0;
}

static void
test_guard_page(void **state)
{
	pid_t pid;
	int status;

	(void)state;
	if ((pid = fork()) == 0) {
		struct task *t = task_new(recurse, NULL);

		if (t != NULL)
			task_run(t);
		_exit(0);
	}
	assert_true(pid > 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	/* SIGSEGV; under AddressSanitizer, its stack-overflow report. */
	assert_false(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	if (WIFSIGNALED(status))
		assert_int_equal(WTERMSIG(status), SIGSEGV);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_runs_to_completion),
		cmocka_unit_test(test_suspend_resume),
		cmocka_unit_test(test_interleaved),
		cmocka_unit_test(test_nested),
		cmocka_unit_test(test_fp_environment),
		cmocka_unit_test(test_guard_page),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
