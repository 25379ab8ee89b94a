/*
 * Templates (docs/templates.md): a guest booted once up to its ready
 * call (KEEP_SYS_READY) and parked there, and runs started as
 * copy-on-write clones of it instead of cold boots.
 *
 * The parked template is this process's memory: guest memory (one
 * MAP_PRIVATE mapping), the vCPU's state captured at the ready call, and
 * the VMM's view of the guest (descriptors, brk and mmap state, cwd,
 * signal actions), all in struct vm. Its KVM VM is dropped once the
 * state is captured. A run is a host fork of the holder: the child owns
 * a copy-on-write copy of all of it for the cost of copying page tables,
 * takes the run's configuration (workspace, stdin, output, limits),
 * writes the run's request into the buffer the guest gave, and rebuilds
 * a VM over the inherited memory with vm_cpu_rebuild (clone.c). The
 * guest sees its ready call return with the request's length.
 */
#include <sys/mman.h>
#include <sys/wait.h>

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "host/egress/egress_abi.h"
#include "host/vmm/abi.h"
#include "host/vmm/sys.h"
#include "host/vmm/fs_int.h"
#include "host/vmm/vm_int.h"

struct vmm_template {
	struct vm vm;
	struct vmm_config boot; /* the template's own configuration */
	struct vmm_config run; /* a clone's: the boot's with the run's parts */
	struct vmm_result boot_res;
	struct vm_cpu_state cpu; /* at the ready call's return */
	/* The guest pages a probe clone wrote (vmm_template_learn), which
	 * each spare makes its own before its run. */
	uint32_t *hot;
	size_t nhot;
};

/* At most this many pages learnt (16 MiB a spare copies ahead). */
#define TPL_HOT_MAX 4096
/* A probe that has not ended by then teaches nothing. */
#define TPL_PROBE_MS 5000

static uint64_t
mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

int64_t
sys_keep_ready(struct vm *vm, const uint64_t a[6])
{
	if (vm->template_state == VM_TPL_CLONE)
		return -EALREADY;
	if (vm->template_state != VM_TPL_BOOTING)
		return -ENOSYS;
	if (a[1] < KEEP_READY_MIN || a[1] > KEEP_READY_MAX)
		return -EINVAL;
	if (vm_gptr(vm, a[0], a[1]) == NULL)
		return -EFAULT;
	/* A clone is one process on one vCPU: other processes or threads
	 * of the template would not come along. */
	if (!vm_proc_alone(vm))
		return -EINVAL;
	vm->ready_buf = a[0];
	vm->ready_len = a[1];
	vm->parked = 1;
	return 0;
}

int
vmm_template_boot(const struct vmm_config *cfg, struct vmm_template **out,
    char *err, size_t errlen)
{
	struct vmm_template *t;
	struct vm *vm;
	int rc;

	*out = NULL;
	if (err != NULL && errlen > 0)
		err[0] = '\0';
	if ((t = calloc(1, sizeof(*t))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return VMM_E_NOMEM;
	}
	t->boot = *cfg;
	vm = &t->vm;
	vm->cfg = &t->boot;
	vm->res = &t->boot_res;
	vm->vmfd = vm->vcpufd = vm->ws_fd = vm->mem_fd = -1;
	vm->template_state = VM_TPL_BOOTING;
	/* Its clones' configurations are copies of t->boot: they keep the
	 * added certificates. */
	if ((rc = vm_trust_apply(vm, &t->boot, err, errlen)) != VMM_OK ||
	    (rc = vm_boot(vm, err, errlen)) != VMM_OK)
		goto fail;
	vm_serve(vm);
	if (!vm->parked) {
		snprintf(err, errlen,
		    "the template ended before its ready call: %s",
		    t->boot_res.reason[0] != '\0' ? t->boot_res.reason
		                                  : "it exited");
		rc = VMM_E_TEMPLATE;
		goto fail;
	}
	if (vm_cpu_capture(vm, &t->cpu) != 0) {
		snprintf(
		    err, errlen, "capturing the vCPU: %s", strerror(errno));
		rc = VMM_E_KVM;
		goto fail;
	}
	/* Clones build VMs of their own: the template needs none, and a
	 * parked VM would hold KVM's shadow pages for nothing. */
	vm_kvm_drop(vm);
	vm->template_state = VM_TPL_PARKED;
	*out = t;
	return VMM_OK;
fail:
	vm_teardown(vm);
	free(t);
	return rc;
}

uint64_t
vmm_template_request_max(const struct vmm_template *t)
{
	uint64_t reserve = 8 + VM_IMAGE_ENV_MAX + VM_IMAGE_ENV_LINES;

	return t->vm.ready_len > reserve ? t->vm.ready_len - reserve : 0;
}

uint64_t
vmm_template_memory(const struct vmm_template *t)
{
	return (t->vm.brk_peak - t->vm.brk_start) +
	    t->vm.mmap_pages_peak * VM_PAGE;
}

static size_t
strings_len(const char *const *v, size_t *n)
{
	size_t len = 0;

	for (*n = 0; v != NULL && v[*n] != NULL; (*n)++)
		len += strlen(v[*n]) + 1;
	return len;
}

static uint8_t *
put_strings(uint8_t *p, const char *const *v, size_t n)
{
	size_t i, len;

	for (i = 0; i < n; i++) {
		len = strlen(v[i]) + 1;
		memcpy(p, v[i], len);
		p += len;
	}
	return p;
}

/* The request as the guest reads it (guest/include/keep.h): argc, envc,
 * then the strings; the environment is the caller's followed by the
 * image's defaults the caller did not set, as build_stack lays it out
 * for a cold boot. Its length, or 0 when it does not fit. */
static uint64_t
write_request(struct vm *vm, int probe, char *err, size_t errlen)
{
	const struct vmm_config *cfg = vm->cfg;
	char **imgenv = NULL;
	size_t argc, envc, imgc = 0, len;
	uint32_t counts[2];
	uint8_t *g, *p;

	if (probe) {
		/* No strings at all, which no run sends: the guest's ready
		 * loop runs its own probe (docs/templates.md). */
		if ((g = vm_gptr(vm, vm->ready_buf, sizeof(counts))) == NULL)
			return 0;
		memset(counts, 0, sizeof(counts));
		memcpy(g, counts, sizeof(counts));
		return sizeof(counts);
	}
	if (vm_image_env(vm, &imgenv, &imgc) != 0) {
		snprintf(
		    err, errlen, "a malformed %s in the image", VM_IMAGE_ENV);
		return 0;
	}
	len = sizeof(counts) + strings_len(cfg->argv, &argc) +
	    strings_len(cfg->envp, &envc) +
	    strings_len((const char *const *)imgenv, &imgc);
	if (argc == 0 || argc > UINT32_MAX || envc + imgc > UINT32_MAX ||
	    len > vm->ready_len ||
	    (g = vm_gptr(vm, vm->ready_buf, len)) == NULL) {
		vm_image_env_free(imgenv);
		snprintf(err, errlen,
		    "the request (%zu bytes) does not fit the template's "
		    "buffer (%llu)",
		    len, (unsigned long long)vm->ready_len);
		return 0;
	}
	counts[0] = (uint32_t)argc;
	counts[1] = (uint32_t)(envc + imgc);
	memcpy(g, counts, sizeof(counts));
	p = put_strings(g + sizeof(counts), cfg->argv, argc);
	p = put_strings(p, cfg->envp, envc);
	put_strings(p, (const char *const *)imgenv, imgc);
	vm_image_env_free(imgenv);
	return len;
}

int
vmm_template_prepare(struct vmm_template *t, char *err, size_t errlen)
{
	struct vm *vm = &t->vm;

	if (err != NULL && errlen > 0)
		err[0] = '\0';
	if (vm->template_state != VM_TPL_PARKED) {
		snprintf(err, errlen, "not a parked template");
		return VMM_E_INVAL;
	}
	/* The trap platform's template memory is the holder's memfd,
	 * shared, not copied on write by the fork that made this clone:
	 * the clone's own copy first (trap.c). */
	if (vm->nshmaps != 0) {
		/* A clone would share them with the holder and every other
		 * clone. */
		snprintf(err, errlen, "the template holds shared mappings");
		return VMM_E_INVAL;
	}
	if (vm->on_trap) {
		int fd = vm_trap_fork_copy(vm);

		if (fd == -1) {
			snprintf(err, errlen, "the clone's memory: %s",
			    strerror(errno));
			return VMM_E_NOMEM;
		}
		if (vm_trap_fork_adopt(vm, fd, err, errlen) != 0)
			return VMM_E_NOMEM;
		vm_mem_maps_touch(vm);
		/* Its process is started with the run, once this one has
		 * confined itself: Landlock lets a process signal (kick, kill)
		 * only what it started inside its own domain. */
		vm->template_state = VM_TPL_PREPARED;
		return VMM_OK;
	}
	/* RAX, the request's length, goes in with the run (the synced
	 * registers are loaded at the first KVM_RUN). */
	if (vm_cpu_rebuild(vm, &t->cpu, err, errlen) != 0)
		return VMM_E_KVM;
	/* The template's huge pages stay shared and mapped whole; memory
	 * the clone touches first is its own and small: a huge page would
	 * be 2 MiB zeroed for each. */
	madvise(vm->mem, vm->memsz, MADV_NOHUGEPAGE);
	/* The pages a clone writes, made this process's own now: the
	 * guest's first write to each is then a fault without a copy. */
	for (size_t i = 0; i < t->nhot; i++) {
		uint64_t g = (uint64_t)t->hot[i] * VM_PAGE;
		volatile uint8_t *page = vm->mem + g;

		/* Not a page the guest does not hold yet: the probe mapped
		 * it later, and here it is closed (mem_space.c). */
		if (g >= GUEST_LOW_END && !vm_space_ok(vm, g, g + VM_PAGE))
			continue;
		*page = *page;
	}
	vm_mem_maps_touch(vm);
	vm->template_state = VM_TPL_PREPARED;
	return VMM_OK;
}

static int template_run(struct vmm_template *t, const struct vmm_config *run,
    int probe, struct vmm_result *res, char *err, size_t errlen);

int
vmm_template_run(struct vmm_template *t, const struct vmm_config *run,
    struct vmm_result *res, char *err, size_t errlen)
{
	return template_run(t, run, 0, res, err, errlen);
}

static int
template_run(struct vmm_template *t, const struct vmm_config *run, int probe,
    struct vmm_result *res, char *err, size_t errlen)
{
	struct vm *vm = &t->vm;
	uint64_t t0 = mono_us(), len;
	int rc;

	memset(res, 0, sizeof(*res));
	if (err != NULL && errlen > 0)
		err[0] = '\0';
	if (!probe && (run->argv == NULL || run->argv[0] == NULL)) {
		snprintf(err, errlen, "bad run configuration");
		return VMM_E_INVAL;
	}
	if (vm->template_state == VM_TPL_PARKED &&
	    (rc = vmm_template_prepare(t, err, errlen)) != VMM_OK)
		return rc;
	if (vm->template_state != VM_TPL_PREPARED) {
		snprintf(err, errlen, "not a parked template");
		return VMM_E_INVAL;
	}
	if (vm->on_trap && !vm_trap_started(vm) &&
	    vm_cpu_rebuild(vm, &t->cpu, err, errlen) != 0)
		return VMM_E_KVM;
	res->platform = vm->on_trap ? VMM_PLATFORM_TRAP : VMM_PLATFORM_KVM;
	/* What the image put there stays (the program, its files, its
	 * memory size and descriptor table); the rest is the run's. */
	t->run = t->boot;
	if (run->kvm_fd >= 0)
		t->run.kvm_fd = run->kvm_fd;
	t->run.argv = run->argv;
	t->run.envp = run->envp;
	t->run.workspace = run->workspace;
	t->run.workspace_fd = run->workspace_fd;
	t->run.stdin_fd = run->stdin_fd;
	t->run.output = run->output;
	t->run.output_arg = run->output_arg;
	t->run.timeout_ms = run->timeout_ms;
	t->run.output_max = run->output_max;
	t->run.workspace_max = run->workspace_max;
	t->run.workspace_count = run->workspace_count;
	t->run.max_procs = run->max_procs;
	t->run.trace = run->trace;
	t->run.fetch = run->fetch;
	t->run.fetch_arg = run->fetch_arg;
	t->run.egress_net = run->egress_net;
	t->run.egress_direct = run->egress_direct;
	t->run.egress_report = run->egress_report;
	t->run.egress_max = run->egress_max;
	t->run.egress_budget = run->egress_budget;
	t->run.dns_table = run->dns_table;
	t->run.dns_fd = run->dns_fd;
	t->run.net = run->net; /* the clone's sandbox's network */
	vm->cfg = &t->run;
	vm->res = res;
	vm->parked = 0;
	vm->stopped = 0;

	/* The run's workspace, with the /tmp and /dev/shm a boot makes
	 * (a clone lacked them: tempfile and multiprocessing's locks
	 * failed in a fresh sandbox's first execute). */
	if ((rc = vm_ws_attach(vm, run)) != 0) {
		snprintf(err, errlen, "the workspace: %s", strerror(-rc));
		return VMM_E_INVAL;
	}
	/* The template knew no workspace: count the run's, as a cold
	 * start does, or its quota would start from nothing. */
	if (vm_quota_start(vm) != 0) {
		snprintf(err, errlen, "the quota's count: %s", strerror(errno));
		return VMM_E_NOMEM;
	}
	if (vm_proc_fresh(vm) != 0) {
		snprintf(err, errlen, "the process table: %s", strerror(errno));
		return VMM_E_NOMEM;
	}
	if ((len = write_request(vm, probe, err, errlen)) == 0)
		return VMM_E_TOOBIG;
	vm->run->s.regs.regs.rax = len;
	vm->run->kvm_dirty_regs |= KVM_SYNC_X86_REGS;
	vm->template_state = VM_TPL_CLONE;
	res->boot_us = mono_us() - t0;
	res->served = 1;
	vm_serve(vm);
	return VMM_OK;
}

/* In the probe's process: run the guest's probe with KVM's dirty log on
 * its memory, and write the pages it wrote to fd. */
static void __attribute__((noreturn)) probe_run(struct vmm_template *t, int fd)
{
	struct vm *vm = &t->vm;
	struct vmm_config cfg;
	struct vmm_result res;
	uint64_t *bits, npages = vm->memsz / VM_PAGE, i;
	uint32_t out[256];
	size_t n = 0, sent = 0;
	char err[160];

	memset(&cfg, 0, sizeof(cfg));
	cfg.kvm_fd = t->boot.kvm_fd;
	cfg.workspace_fd = -1;
	cfg.stdin_fd = -1;
	cfg.timeout_ms = TPL_PROBE_MS;
	if (vmm_template_prepare(t, err, sizeof(err)) != VMM_OK)
		_exit(1);
	/* Every slot logs, and every slot the probe's run adds: the pages
	 * it writes where it grows its memory are learnt too. */
	if (vm_memslots_log(vm) != 0 ||
	    (bits = calloc((npages + 63) / 64, sizeof(*bits))) == NULL)
		_exit(1);
	if (template_run(t, &cfg, 1, &res, err, sizeof(err)) != VMM_OK ||
	    res.status != VMM_EXITED || res.exit_code != 0)
		_exit(1);
	if (vm_memslots_dirty(vm, bits) != 0)
		_exit(1);
	for (i = 0; i < npages && sent < TPL_HOT_MAX; i++) {
		if (!(bits[i / 64] >> (i % 64) & 1))
			continue;
		out[n++] = (uint32_t)i;
		sent++;
		if (n == sizeof(out) / sizeof(out[0])) {
			if (write(fd, out, n * sizeof(out[0])) !=
			    (ssize_t)(n * sizeof(out[0])))
				_exit(1);
			n = 0;
		}
	}
	if (n > 0 &&
	    write(fd, out, n * sizeof(out[0])) != (ssize_t)(n * sizeof(out[0])))
		_exit(1);
	_exit(0);
}

int
vmm_template_learn(struct vmm_template *t)
{
	uint32_t *hot;
	uint64_t deadline = mono_us() + TPL_PROBE_MS * 1000ull + 1000000;
	size_t have = 0;
	struct pollfd pfd;
	ssize_t r;
	pid_t pid;
	int p[2], st = 0, ended;

	/* The probe's pages come from KVM's dirty log: none on the trap
	 * platform, whose clones copy the template's memory anyway. */
	if (t->vm.template_state != VM_TPL_PARKED || t->vm.on_trap ||
	    (hot = calloc(TPL_HOT_MAX, sizeof(*hot))) == NULL)
		return -1;
	if (pipe2(p, O_CLOEXEC) == -1) {
		free(hot);
		return -1;
	}
	if ((pid = fork()) == 0) {
		close(p[0]);
		probe_run(t, p[1]);
	}
	close(p[1]);
	pfd.fd = p[0];
	pfd.events = POLLIN;
	ended = 0;
	while (pid > 0) {
		uint64_t now = mono_us();

		if (now >= deadline ||
		    poll(&pfd, 1, (int)((deadline - now) / 1000) + 1) <= 0)
			break;
		r = have < TPL_HOT_MAX * sizeof(*hot)
		    ? read(p[0], (uint8_t *)hot + have,
		          TPL_HOT_MAX * sizeof(*hot) - have)
		    : -1;
		if (r <= 0) {
			ended = r == 0; /* the probe closed its end: exiting */
			break;
		}
		have += (size_t)r;
	}
	close(p[0]);
	if (pid > 0) {
		/* A probe that ended is reaped as it is; one past its time
		 * or that wrote too much is killed first. */
		if (!ended)
			kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
	}
	/* Only a probe that ended well teaches: anything else, nothing. */
	if (pid <= 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0 ||
	    have % sizeof(*hot) != 0) {
		free(hot);
		return -1;
	}
	free(t->hot);
	t->hot = hot;
	t->nhot = have / sizeof(*hot);
	for (size_t i = 0; i < t->nhot; i++)
		if ((uint64_t)hot[i] >= t->vm.memsz / VM_PAGE) {
			t->nhot = 0;
			return -1;
		}
	return (int)t->nhot;
}

void
vmm_template_free(struct vmm_template *t)
{
	if (t == NULL)
		return;
	free(t->hot);
	/* Its process table's page goes with the process. */
	vm_teardown(&t->vm);
	free(t);
}
