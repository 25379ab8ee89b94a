/*
 * Tasks on their own stacks (lib/task.h).
 *
 * A switch saves the callee-saved registers, the SSE control/status word
 * and the x87 control word on the stack it leaves, stores that stack
 * pointer, and loads the other one: everything else is caller-saved in
 * the SysV ABI, so the C compiler has already spilled it around the call.
 */
#include <sys/mman.h>

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "lib/task.h"

#if !defined(__x86_64__)
#error "lib/task.c switches stacks the x86-64 SysV way"
#endif

#if defined(__SANITIZE_ADDRESS__)
#define TASK_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TASK_ASAN 1
#endif
#endif

#ifdef TASK_ASAN
/* AddressSanitizer must be told of stack switches (its fake stacks and
 * the bounds it checks against). */
void __sanitizer_start_switch_fiber(void **, const void *, size_t);
void __sanitizer_finish_switch_fiber(void *, const void **, size_t *);
#define ASAN_START(save, lo, sz) __sanitizer_start_switch_fiber(save, lo, sz)
#define ASAN_FINISH(save, lo, sz) __sanitizer_finish_switch_fiber(save, lo, sz)
#else
#define ASAN_START(save, lo, sz) ((void)(save), (void)(lo), (void)(sz))
#define ASAN_FINISH(save, lo, sz) ((void)(save), (void)(lo), (void)(sz))
#endif

/* Stacks kept for the next task: a loop that serves one request per
 * task would otherwise map and unmap a stack per request. */
#define TASK_CACHE 256

struct task {
	void *sp; /* while not running: where it stopped */
	void *caller_sp; /* while running: where task_run stopped */
	task_fn fn;
	void *arg;
	int done;
	void *map; /* guard page, then the stack */
	const void *stack_lo; /* usable stack, for AddressSanitizer */
	const void *caller_lo;
	size_t caller_sz;
	void *fake_stack;
};

void keep_task_swap(void **save_sp, void *load_sp)
    __attribute__((visibility("hidden")));

__asm__(".text\n"
        ".p2align 4\n"
        ".globl keep_task_swap\n"
        ".hidden keep_task_swap\n"
        ".type keep_task_swap, @function\n"
        "keep_task_swap:\n"
        "	pushq %rbp\n"
        "	pushq %rbx\n"
        "	pushq %r12\n"
        "	pushq %r13\n"
        "	pushq %r14\n"
        "	pushq %r15\n"
        "	subq $8, %rsp\n"
        "	stmxcsr (%rsp)\n"
        "	fnstcw 4(%rsp)\n"
        "	movq %rsp, (%rdi)\n"
        "	movq %rsi, %rsp\n"
        "	ldmxcsr (%rsp)\n"
        "	fldcw 4(%rsp)\n"
        "	addq $8, %rsp\n"
        "	popq %r15\n"
        "	popq %r14\n"
        "	popq %r13\n"
        "	popq %r12\n"
        "	popq %rbx\n"
        "	popq %rbp\n"
        "	ret\n"
        ".size keep_task_swap, .-keep_task_swap\n");

static __thread struct task *current;
static __thread void *cache[TASK_CACHE];
static __thread unsigned ncached;

static size_t
page_size(void)
{
	long p = sysconf(_SC_PAGESIZE);

	return p > 0 ? (size_t)p : 4096;
}

static void *
stack_map(void)
{
	size_t pg = page_size();
	void *m;

	if (ncached > 0)
		return cache[--ncached];
	m = mmap(NULL, pg + TASK_STACK, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED)
		return NULL;
	/* The guard: an overflow faults instead of writing over the heap.
	 * A fixed mapping on top rather than mprotect, which the front's
	 * seccomp filter does not allow. */
	if (mmap(m, pg, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
	        0) == MAP_FAILED) {
		munmap(m, pg + TASK_STACK);
		return NULL;
	}
	return m;
}

static void
stack_unmap(void *m)
{
	if (ncached < TASK_CACHE) {
		cache[ncached++] = m;
		return;
	}
	munmap(m, page_size() + TASK_STACK);
}

void
task_cache_drain(void)
{
	while (ncached > 0)
		munmap(cache[--ncached], page_size() + TASK_STACK);
}

static void __attribute__((noreturn)) task_entry(void)
{
	struct task *t = current;

	ASAN_FINISH(NULL, &t->caller_lo, &t->caller_sz);
	t->fn(t->arg);
	t->done = 1;
	/* A NULL save: this stack is never switched to again. */
	ASAN_START(NULL, t->caller_lo, t->caller_sz);
	keep_task_swap(&t->sp, t->caller_sp);
	abort();
}

struct task *
task_new(task_fn fn, void *arg)
{
	struct task *t;
	uint64_t *sp;
	uintptr_t top;

	if ((t = calloc(1, sizeof(*t))) == NULL)
		return NULL;
	if ((t->map = stack_map()) == NULL) {
		free(t);
		errno = ENOMEM;
		return NULL;
	}
	t->fn = fn;
	t->arg = arg;
	t->stack_lo = (const char *)t->map + page_size();
	top = ((uintptr_t)t->stack_lo + TASK_STACK) & ~(uintptr_t)15;
	sp = (uint64_t *)top;
	/* What keep_task_swap pops, from the top down: a return address for
	 * task_entry (which never returns; it leaves the stack aligned as at
	 * a call), task_entry itself for the ret, rbp rbx r12-r15, then the
	 * default MXCSR (low half) and x87 control word. */
	*--sp = 0;
	*--sp = (uint64_t)(uintptr_t)task_entry;
	for (int i = 0; i < 6; i++)
		*--sp = 0;
	*--sp = (uint64_t)0x037f << 32 | 0x1f80;
	t->sp = sp;
	return t;
}

int
task_run(struct task *t)
{
	struct task *prev = current;
	void *fake = NULL;

	if (t == NULL || t->done || t == current)
		abort();
	current = t;
	ASAN_START(&fake, t->stack_lo, TASK_STACK);
	keep_task_swap(&t->caller_sp, t->sp);
	ASAN_FINISH(fake, NULL, NULL);
	current = prev;
	return t->done ? TASK_DONE : TASK_SUSPENDED;
}

void
task_suspend(void)
{
	struct task *t = current;

	if (t == NULL)
		abort();
	ASAN_START(&t->fake_stack, t->caller_lo, t->caller_sz);
	keep_task_swap(&t->sp, t->caller_sp);
	ASAN_FINISH(t->fake_stack, &t->caller_lo, &t->caller_sz);
}

struct task *
task_self(void)
{
	return current;
}

void
task_free(struct task *t)
{
	if (t == NULL)
		return;
	stack_unmap(t->map);
	free(t);
}
