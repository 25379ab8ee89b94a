/*
 * Tasks: functions that run on their own stack and may suspend, so that
 * one event loop can have many requests waiting on other processes at
 * once while each request's code stays straight-line.
 *
 * A task runs when task_run() is called and goes on until it calls
 * task_suspend() or its function returns; task_run() then returns to its
 * caller. Whoever's task_run() returns TASK_DONE frees the task. Tasks
 * may start tasks. One thread only: the current task is per thread.
 *
 * x86-64 only (the switch saves the SysV callee-saved registers); glibc's
 * swapcontext() would do, but it makes a system call on every switch and
 * a request switches about six times.
 */
#ifndef KEEP_TASK_H
#define KEEP_TASK_H

#include <stddef.h>

#define TASK_DONE 0
#define TASK_SUSPENDED 1

/* Stack size of every task, with an unmapped guard page below it. */
#define TASK_STACK (256 * 1024)

struct task;
typedef void (*task_fn)(void *arg);

/* NULL when out of memory (errno set). */
struct task *task_new(task_fn fn, void *arg);
/* Run (or resume) t until it suspends or ends: TASK_SUSPENDED or
 * TASK_DONE. Never call it for a task that has ended or that is the
 * current one. */
int task_run(struct task *t);
/* From inside a task: go back to the task_run() that ran it. */
void task_suspend(void);
/* The task this code runs in, NULL on the thread's own stack. */
struct task *task_self(void);
void task_free(struct task *t);
/* Give back the stacks kept for reuse. */
void task_cache_drain(void);

#endif
