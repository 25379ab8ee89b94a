/*
 * bench/boot: keep's boot and run costs beside their baselines, all
 * measured in this run on this machine (docs/vmm.md; issue targets in
 * parentheses):
 *
 *   boot	the bare KVM floor (bench/kvm_floor), `keep run` of a program
 *		that returns at once (within 1.2x of the floor), the same
 *		without keep run's CPUID cache (the first run after a boot),
 *		of hello, and QEMU -M microvm booting a PVH guest that exits
 *		at once. The floor and the keep rows run in alternation, run
 *		for run, so that other work on the machine weighs on each
 *		alike.
 *   syscall	one system call's round trip against a bare CPL3 exit
 *		(within 1.2x)
 *   compute	a compute-bound static program inside keep against the
 *		same binary natively (0.95x native or better)
 *   python	the static CPython's `-c pass` inside keep against the same
 *		binary natively (in a chroot holding its standard library)
 *   memory	host memory (max RSS) of one `keep run` of hello
 *
 * Usage: boot [-n RUNS] BUILD_DIR (run from the source tree as root).
 */
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <err.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *B = "build";
static int runs = 50;

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Run argv with stdout to /dev/null (or captured into out); returns wall
 * ms, or -1 if it failed. maxrss_kb gets the child's peak RSS. */
static double
timed(char *const argv[], const char *root, char *out, size_t outlen,
    long *maxrss_kb)
{
	struct rusage ru;
	int pfd[2], st;
	double t0, t;
	pid_t pid;
	ssize_t n;
	size_t got = 0;

	if (pipe(pfd) == -1)
		err(1, "pipe");
	t0 = now_ms();
	if ((pid = fork()) == -1)
		err(1, "fork");
	if (pid == 0) {
		int nul = open("/dev/null", O_RDWR);

		dup2(nul, 0);
		dup2(out != NULL ? pfd[1] : nul, 1);
		dup2(nul, 2);
		if (root != NULL && (chroot(root) == -1 || chdir("/") == -1))
			_exit(127);
		execv(argv[0], argv);
		_exit(127);
	}
	close(pfd[1]);
	while (out != NULL && got + 1 < outlen &&
	    (n = read(pfd[0], out + got, outlen - got - 1)) > 0)
		got += (size_t)n;
	if (out != NULL)
		out[got] = '\0';
	close(pfd[0]);
	if (wait4(pid, &st, 0, &ru) == -1)
		err(1, "wait4");
	t = now_ms() - t0;
	if (maxrss_kb != NULL)
		*maxrss_kb = ru.ru_maxrss;
	if (!WIFEXITED(st))
		return -1;
	/* isa-debug-exit makes QEMU exit (0 << 1) | 1. */
	if (WEXITSTATUS(st) != 0 &&
	    !(WEXITSTATUS(st) == 1 && strstr(argv[0], "qemu") != NULL))
		return -1;
	return t;
}

static int
cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

struct stats {
	double min, med, p90;
};

/* One command of an alternation; unlink, if set, is removed before each
 * of its runs (outside the timing). */
struct cmd {
	const char *name;
	char *const *argv;
	const char *unlink;
};

static void
summarize(double *v, int n, struct stats *s)
{
	qsort(v, (size_t)n, sizeof(*v), cmp);
	s->min = v[0];
	s->med = v[n / 2];
	s->p90 = v[(n * 9) / 10];
}

/* n runs of each of k commands, taken in turn; 0, or -1 with the index
 * of the command that failed in *bad. */
static int
measure_n(const struct cmd *c, int k, const char *root, int n,
    struct stats *out, int *bad)
{
	double *v = calloc((size_t)(n * k), sizeof(*v)), t;
	int i, j;

	if (v == NULL)
		err(1, "calloc");
	for (j = 0; j < k; j++)
		timed(c[j].argv, root, NULL, 0, NULL); /* warm caches */
	for (i = 0; i < n; i++)
		for (j = 0; j < k; j++) {
			if (c[j].unlink != NULL)
				unlink(c[j].unlink);
			if ((t = timed(c[j].argv, root, NULL, 0, NULL)) < 0) {
				*bad = j;
				free(v);
				return -1;
			}
			v[j * n + i] = t;
		}
	for (j = 0; j < k; j++)
		summarize(v + j * n, n, &out[j]);
	free(v);
	return 0;
}

static int
measure(char *const argv[], const char *root, int n, struct stats *s)
{
	struct cmd c = { NULL, argv, NULL };
	int bad;

	return measure_n(&c, 1, root, n, s, &bad);
}

static void
print_row(const char *name, const struct stats *s, const struct stats *base)
{
	printf("%-34s %8.2f %8.2f %8.2f", name, s->min, s->med, s->p90);
	if (base != NULL)
		printf("   %5.2fx", s->med / base->med);
	printf("\n");
}

static void
row(const char *name, char *const argv[], const char *root, int n,
    const struct stats *base, struct stats *out)
{
	struct stats s;

	if (measure(argv, root, n, &s) != 0) {
		printf("%-34s unavailable (%s failed)\n", name, argv[0]);
		return;
	}
	print_row(name, &s, base);
	if (out != NULL)
		*out = s;
}

static char *
path(const char *rel)
{
	char *p;

	if (asprintf(&p, "%s/%s", B, rel) == -1)
		err(1, "asprintf");
	return p;
}

int
main(int argc, char **argv)
{
	struct stats floor_, keep_empty, native, inkeep, pnative, pkeep;
	char out[256], tmp[] = "/tmp/keep-bench-XXXXXX", buf[512];
	char *keep, *K, *n0, *nbig, *cpuid_cache = NULL;
	long rss = 0;
	int c;

	while ((c = getopt(argc, argv, "n:")) != -1)
		if (c == 'n')
			runs = atoi(optarg);
	if (optind < argc)
		B = argv[optind];
	if (runs < 5)
		runs = 5;
	if (access("/dev/kvm", R_OK | W_OK) != 0)
		errx(1, "SKIP: no /dev/kvm");
	keep = path("bin/keep");
	/* Where keep run keeps its CPUID cache (cli/cmd_run.c). */
	if (geteuid() == 0)
		cpuid_cache = "/run/keep-cpuid";
	else if (getenv("XDG_RUNTIME_DIR") != NULL &&
	    asprintf(
	        &cpuid_cache, "%s/keep-cpuid", getenv("XDG_RUNTIME_DIR")) == -1)
		err(1, "asprintf");
	K = path("keys/dev.public");

	printf("bench/boot: %d runs per row; wall time of a fresh process, "
	       "ms\n\n",
	    runs);
	printf("%-34s %8s %8s %8s   %s\n", "boot", "min", "median", "p90",
	    "vs floor");
	{
		char *fl[] = { path("bench/kvm_floor"), NULL };
		char *e[] = { keep, "run", path("guests/empty"), NULL };
		char *h[] = { keep, "run", path("guests/hello"), NULL };
		char *hi[] = { keep, "run", "--trust", K,
			path("images/hello.img"), "hello", NULL };
		char *q[] = { "/usr/bin/qemu-system-x86_64", "-M", "microvm",
			"-accel", "kvm", "-cpu", "host,-arch-capabilities",
			"-m", "16M", "-nodefaults", "-no-user-config",
			"-nographic", "-display", "none", "-serial", "none",
			"-kernel", path("bench/pvh.elf"), "-device",
			"isa-debug-exit,iobase=0xf4,iosize=1", NULL };

		const struct cmd boot[] = {
			{ "bare KVM floor (create, hlt, exit)", fl, NULL },
			{ "keep run: return 0", e, NULL },
			{ "keep run: return 0, CPUID uncached", e,
			    cpuid_cache },
			{ "keep run: hello", h, NULL },
			{ "keep run: hello.img (signed)", hi, NULL },
		};
		struct stats s[5] = { { 0, 0, 0 } };
		int j, bad;

		if (measure_n(boot, 5, NULL, runs, s, &bad) != 0)
			printf("%-34s unavailable (%s failed)\n",
			    boot[bad].name, boot[bad].argv[0]);
		else
			for (j = 0; j < 5; j++)
				print_row(
				    boot[j].name, &s[j], j == 0 ? NULL : &s[0]);
		floor_ = s[0];
		keep_empty = s[1];
		row("QEMU 7.2 -M microvm, PVH exit", q, NULL,
		    runs < 20 ? runs : 20, &floor_, NULL);
	}

	printf(
	    "\n%-34s %8s %8s   %s\n", "system call", "bare", "keep", "ratio");
	{
		char *fe[] = { path("bench/kvm_floor"), "exits", "20000",
			NULL };
		char *s0[] = { keep, "run", path("guests/sysloop"), "0", NULL };
		char *s1[] = { keep, "run", path("guests/sysloop"), "20000",
			NULL };
		struct stats a, b;
		double bare;

		if (timed(fe, NULL, out, sizeof(out), NULL) < 0 ||
		    (bare = atof(out)) <= 0 || measure(s0, NULL, 10, &a) != 0 ||
		    measure(s1, NULL, 10, &b) != 0)
			printf("%-34s unavailable\n", "round trip, us");
		else {
			double per = (b.med - a.med) * 1000.0 / 20000;

			printf("%-34s %8.2f %8.2f   %5.2fx\n",
			    "round trip (CPL3 exit), us", bare, per,
			    per / bare);
		}
	}

	printf("\n%-34s %8s %8s   %s\n", "compute and python, ms", "native",
	    "keep", "speed vs native");
	n0 = path("guests/compute");
	nbig = "300000000";
	{
		char *nat[] = { n0, nbig, NULL };
		char *ink[] = { keep, "run", n0, nbig, NULL };

		if (measure(nat, NULL, 5, &native) == 0 &&
		    measure(ink, NULL, 5, &inkeep) == 0)
			printf("%-34s %8.1f %8.1f   %5.2fx\n",
			    "compute loop (incl. boot)", native.med, inkeep.med,
			    native.med / inkeep.med);
		else
			printf("%-34s unavailable\n", "compute loop");
	}
	{
		char *pk[] = { keep, "run", "--trust", K,
			path("images/python.img"), "python", "-c", "pass",
			NULL };
		char *pn[] = { "/python", "-c", "pass", NULL };

		/* Natively the interpreter finds its standard library at
		 * /lib/python311.zip, as in the image: give it a root that
		 * holds just those two files. */
		if (mkdtemp(tmp) == NULL)
			err(1, "mkdtemp");
		snprintf(buf, sizeof(buf),
		    "mkdir -p %s/lib && cp %s/stock/python %s/python && cp "
		    "%s/stock/python311.zip %s/lib/",
		    tmp, B, tmp, B, tmp);
		if (system(buf) == 0 && measure(pn, tmp, 10, &pnative) == 0 &&
		    measure(pk, NULL, 10, &pkeep) == 0)
			printf("%-34s %8.1f %8.1f   %5.2fx\n",
			    "python -c pass (incl. boot)", pnative.med,
			    pkeep.med, pnative.med / pkeep.med);
		else
			printf("%-34s unavailable\n", "python -c pass");
		snprintf(buf, sizeof(buf), "rm -rf %s", tmp);
		if (system(buf) != 0)
			warnx("could not remove %s", tmp);
	}
	{
		char *h[] = { keep, "run", path("guests/hello"), NULL };

		timed(h, NULL, NULL, 0, &rss);
		printf("\nhost memory of one keep run (hello): %ld KiB max "
		       "RSS\n",
		    rss);
	}
	printf("\ntargets: keep run return 0 <= 1.2x floor (%.2fx); system "
	       "call <= 1.2x bare exit; compute >= 0.95x native\n",
	    keep_empty.med / floor_.med);
	return 0;
}
