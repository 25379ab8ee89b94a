/*
 * bench/tplclone: a template's clone beside the bare KVM floor, measured
 * in the same run (bench/templates.sh):
 *   tplclone GUEST FLOOR RUNS
 * boots GUEST (a static program that makes its ready call at once,
 * tests/guests/ready_empty) as a template in this process, then RUNS
 * times, in alternation: a clone (fork, vm_cpu_rebuild over the
 * copy-on-write memory, the guest's return from the ready call to its
 * exit, wait) and a fresh FLOOR process (bench/kvm_floor: create a VM,
 * run to HLT, exit; spawned and waited for). Prints the medians, the
 * 99th percentiles and the host memory each clone added (its private
 * dirty pages, read from /proc/self/smaps_rollup as it ends).
 */
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <err.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "host/vmm/vmm.h"

extern char **environ;

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t
pct(uint64_t *v, size_t n, unsigned p)
{
	qsort(v, n, sizeof(*v), cmp_u64);
	return v[(n - 1) * p / 100];
}

/* Private_Dirty of this process, KiB. */
static uint64_t
private_dirty_kib(void)
{
	char line[256];
	unsigned long long kib = 0;
	FILE *f = fopen("/proc/self/smaps_rollup", "re");

	if (f == NULL)
		return 0;
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "Private_Dirty: %llu kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

int
main(int argc, char **argv)
{
	struct vmm_template *t;
	struct vmm_config cfg;
	struct vmm_result res;
	const char *gargv[] = { "ready_empty", NULL }, *genv[] = { NULL };
	char *fargv[] = { argv[2], NULL }, why[256];
	uint64_t *clone_ns, *floor_ns, *mem_kib, t0;
	size_t runs, i, len;
	struct stat st;
	uint8_t *elf;
	pid_t pid;
	int fd, kvm, pfd[2], status;

	if (argc != 4 || (runs = strtoul(argv[3], NULL, 10)) == 0)
		errx(2, "usage: tplclone GUEST FLOOR RUNS");
	if ((fd = open(argv[1], O_RDONLY)) == -1 || fstat(fd, &st) == -1)
		err(1, "%s", argv[1]);
	len = (size_t)st.st_size;
	if ((elf = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0)) ==
	    MAP_FAILED)
		err(1, "mmap");
	if ((kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC)) == -1)
		err(1, "/dev/kvm");
	if (vmm_prepare(kvm) != VMM_OK)
		errx(1, "KVM_GET_SUPPORTED_CPUID");
	vmm_prepare_clocks();
	memset(&cfg, 0, sizeof(cfg));
	cfg.kvm_fd = kvm;
	cfg.elf = elf;
	cfg.elf_len = len;
	cfg.argv = gargv;
	cfg.envp = genv;
	cfg.workspace_fd = -1;
	cfg.stdin_fd = -1;
	cfg.memory = 64ULL << 20;
	if (vmm_template_boot(&cfg, &t, why, sizeof(why)) != VMM_OK)
		errx(1, "template: %s", why);
	clone_ns = calloc(runs, sizeof(*clone_ns));
	floor_ns = calloc(runs, sizeof(*floor_ns));
	mem_kib = calloc(runs, sizeof(*mem_kib));
	if (clone_ns == NULL || floor_ns == NULL || mem_kib == NULL)
		err(1, "calloc");
	for (i = 0; i < runs; i++) {
		if (pipe(pfd) == -1)
			err(1, "pipe");
		t0 = now_ns();
		if ((pid = fork()) == 0) {
			uint64_t kib;

			close(pfd[0]);
			if (vmm_template_run(t, &cfg, &res, why, sizeof(why)) !=
			        VMM_OK ||
			    res.status != VMM_EXITED || res.exit_code != 0)
				_exit(1);
			kib = private_dirty_kib();
			if (write(pfd[1], &kib, sizeof(kib)) != sizeof(kib))
				_exit(1);
			_exit(0);
		}
		close(pfd[1]);
		if (pid == -1 || waitpid(pid, &status, 0) != pid ||
		    !WIFEXITED(status) || WEXITSTATUS(status) != 0)
			errx(1, "a clone failed");
		clone_ns[i] = now_ns() - t0;
		if (read(pfd[0], &mem_kib[i], sizeof(mem_kib[i])) !=
		    sizeof(mem_kib[i]))
			errx(1, "a clone's memory");
		close(pfd[0]);
		t0 = now_ns();
		if (posix_spawn(&pid, argv[2], NULL, NULL, fargv, environ) !=
		        0 ||
		    waitpid(pid, &status, 0) != pid)
			errx(1, "the floor");
		floor_ns[i] = now_ns() - t0;
	}
	printf("clone_p50_ns %llu\nclone_p99_ns %llu\n",
	    (unsigned long long)pct(clone_ns, runs, 50),
	    (unsigned long long)pct(clone_ns, runs, 99));
	printf("floor_p50_ns %llu\nfloor_p99_ns %llu\n",
	    (unsigned long long)pct(floor_ns, runs, 50),
	    (unsigned long long)pct(floor_ns, runs, 99));
	printf("clone_private_kib %llu\n",
	    (unsigned long long)pct(mem_kib, runs, 50));
	vmm_template_free(t);
	return 0;
}
