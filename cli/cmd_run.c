/*
 * keep run [--memory SIZE] [--timeout DURATION] [--workspace DIR]
 *          [--env K=V]... [--output-max SIZE] [--stats] [--trace]
 *          PROGRAM [ARG...]
 * keep run --syscalls
 * keep run [options] --trust PUBLIC [--trust PUBLIC]... IMAGE COMMAND [ARG...]
 *
 * Boots PROGRAM (a static x86-64 ELF) or one command of a signed image in
 * a fresh micro-VM without the daemon, streams its output and exits with
 * its status. keep-run(1) documents the statuses.
 */
#include <sys/mman.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "cli/cmd.h"
#include "cli/run_template.h"
#include "host/vmm/vmm.h"
#include "image/image.h"
#include "image/verified.h"
#include "lib/fdio.h"
#include "lib/units.h"
#include "token/paserk.h"

#define RUN_EXIT_TIMEOUT 124
#define RUN_EXIT_OUTPUT 125
#define RUN_EXIT_BOOT 126
#define RUN_EXIT_FAULT 139
#define MAX_ENV 256
#define MAX_TRUST 16

static int
run_usage_fp(FILE *fp)
{
	fprintf(fp,
	    "usage: keep run [--memory SIZE] [--timeout DURATION] "
	    "[--workspace DIR]\n"
	    "                [--workspace-max SIZE] [--env K=V]... "
	    "[--output-max SIZE] [--processes N] [--stats]\n"
	    "                [--template] [--ca-file PEM]...\n"
	    "                PROGRAM [ARG...]\n"
	    "       keep run [options] --trust PUBLIC... IMAGE COMMAND "
	    "[ARG...]\n"
	    "       keep run --syscalls\n");
	return EXIT_USAGE;
}

/* The usage, on stdout when asked for (--help), else on stderr. */
static int
run_usage(void)
{
	return run_usage_fp(stderr);
}

static void
to_fd(void *arg, int fd, const void *buf, size_t len)
{
	(void)arg;
	/* A failure means the reader went away; the guest goes on. */
	(void)write_all(fd, buf, len);
}

/*
 * Where keep run keeps a CPUID table between runs, "cpuid" for KVM's
 * answer (vmm_prepare_cached) and "cpuid-host" for the host's own, the
 * trap platform's (vmm_prepare_host_cached; host/vmm/cpuid.h): in a
 * per-boot directory only this user can write, /run
 * for root and $XDG_RUNTIME_DIR for anyone else; NULL (no cache) when
 * there is none.
 */
static const char *
cpuid_cache_path(char *buf, size_t len, const char *name)
{
	const char *dir = geteuid() == 0 ? "/run" : getenv("XDG_RUNTIME_DIR");

	if (dir == NULL || dir[0] != '/' ||
	    snprintf(buf, len, "%s/keep-%s", dir, name) >= (int)len)
		return NULL;
	return buf;
}

/*
 * Where keep run keeps its record of the files of an image it checked
 * (image/verified.h): beside the CPUID cache, in one of 64 slots chosen
 * by a hash of the image's real path, so an image rebuilt in place
 * replaces its record and images in throwaway directories (tests) leave
 * at most 64 files; two images in one slot only take turns hashing.
 * NULL: no record.
 */
static const char *
verified_path(const char *image, char *buf, size_t len)
{
	const char *dir = geteuid() == 0 ? "/run" : getenv("XDG_RUNTIME_DIR");
	char *real;
	uint8_t h[8];

	if (dir == NULL || dir[0] != '/' ||
	    (real = realpath(image, NULL)) == NULL)
		return NULL;
	crypto_generichash(
	    h, sizeof(h), (const uint8_t *)real, strlen(real), NULL, 0);
	free(real);
	if (snprintf(buf, len, "%s/keep-verified-%02x", dir, h[0] % 64) >=
	    (int)len)
		return NULL;
	return buf;
}

/* Whether a key given with --trust is the one the image names as its
 * signer: a record's "signature verified" (image/verified.h) is about
 * that key, the only one image_verify tries. */
static int
signer_trusted(
    const struct image *img, const uint8_t (*trust)[32], size_t ntrust)
{
	const char *kid = image_signer(img);
	char pid[IMAGE_KID_MAX];
	size_t i;

	for (i = 0; kid != NULL && i < ntrust; i++) {
		memset(pid, 0, sizeof(pid));
		paserk_pid(pid, sizeof(pid), trust[i]);
		if (memcmp(pid, kid, IMAGE_KID_MAX) == 0)
			return 1;
	}
	return 0;
}

/* After a run: the files its processes found matching, added to the
 * record, if there are new ones and the image file is still the one
 * the record's key names. */
static void
verified_update(const struct image *img, const char *path,
    const struct image_verified_key *key, uint8_t *checked,
    volatile const uint8_t *hints, int changed)
{
	struct image_verified_key now;
	size_t i;

	for (i = 0; hints != NULL && i < key->nfiles; i++)
		if (hints[i] && !checked[i]) {
			checked[i] = 1;
			changed = 1;
		}
	if (changed && image_verified_key(img, &now) == 0 &&
	    memcmp(&now, key, sizeof(now)) == 0)
		image_verified_store(path, key, checked);
}

static uint8_t *
map_file(const char *path, size_t *len)
{
	struct stat st;
	void *p;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return NULL;
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) || st.st_size == 0) {
		close(fd);
		errno = EINVAL;
		return NULL;
	}
	p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return NULL;
	*len = (size_t)st.st_size;
	return p;
}

/*
 * --ca-file PATH: its PEM certificates after those of the files before
 * it, in *ca (ca_len bytes, at most VMM_CA_EXTRA_MAX in all). keep run
 * checks them as text (vmm_ca_text_ok): keepd's guest.ca_file is parsed
 * with OpenSSL (host/guest_ca.c), which keep, linked statically, does
 * without; the guest's TLS library parses them either way.
 */
static int
add_ca_file(const char *path, uint8_t **ca, size_t *ca_len)
{
	size_t room, n = 0;
	ssize_t got;
	uint8_t *b;
	int fd;

	if (*ca == NULL && (*ca = malloc(VMM_CA_EXTRA_MAX + 1)) == NULL) {
		fprintf(stderr, "keep run: out of memory\n");
		return -1;
	}
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY)) == -1) {
		fprintf(stderr, "keep run: %s: %s\n", path, strerror(errno));
		return -1;
	}
	/* One byte past the room: a file too large is refused. */
	b = *ca + *ca_len;
	room = VMM_CA_EXTRA_MAX + 1 - *ca_len;
	while (n < room && (got = read(fd, b + n, room - n)) != 0) {
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			fprintf(stderr, "keep run: %s: %s\n", path,
			    strerror(errno));
			close(fd);
			return -1;
		}
		n += (size_t)got;
	}
	close(fd);
	if (!vmm_ca_text_ok(b, n) || !vmm_ca_text_ok(*ca, *ca_len + n)) {
		fprintf(stderr,
		    "keep run: %s: not PEM certificates alone (CERTIFICATE "
		    "blocks, nothing between them), or more than %d bytes "
		    "with the others\n",
		    path, VMM_CA_EXTRA_MAX);
		return -1;
	}
	*ca_len += n;
	return 0;
}

int
cmd_run(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "memory", required_argument, NULL, 'm' },
		{ "timeout", required_argument, NULL, 't' },
		{ "workspace", required_argument, NULL, 'w' },
		{ "env", required_argument, NULL, 'e' },
		{ "output-max", required_argument, NULL, 'o' },
		{ "workspace-max", required_argument, NULL, 'W' },
		{ "trust", required_argument, NULL, 'T' },
		{ "stats", no_argument, NULL, 's' },
		{ "trace", no_argument, NULL, 'x' },
		{ "syscalls", no_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ "processes", required_argument, NULL, 'P' },
		{ "template", no_argument, NULL, 'L' },
		{ "platform", required_argument, NULL, 'p' },
		{ "ca-file", required_argument, NULL, 'C' },
		{ NULL, 0, NULL, 0 },
	};
	struct vmm_config cfg;
	struct vmm_result res;
	struct vmm_file *files = NULL;
	struct image *img = NULL;
	const struct image_command *cmd;
	const char *envp[MAX_ENV + 1], **gargv = NULL;
	uint8_t trust[MAX_TRUST][32], *elf = NULL, *checked = NULL;
	volatile uint8_t *hints = NULL;
	struct image_verified_key vkey;
	char vpath[PATH_MAX + 64];
	int vkeyed = 0, vchanged = 0;
	size_t nenv = 0, ntrust = 0, elf_len = 0, image_len = 0, i, prog;
	uint64_t memory = 0, timeout = 0, output_max = 0, memory_opt;
	char err[256], cachepath[4096];
	int c, stats = 0, rc, ex = RUN_EXIT_BOOT, kvm = -1, use_template = 0;
	int platform = VMM_PLATFORM_AUTO;
	const char *env_platform = getenv("KEEP_PLATFORM");
	uint8_t *ca = NULL; /* --ca-file's, kept until the process ends */
	size_t ca_len = 0;

	memset(&cfg, 0, sizeof(cfg));
	cfg.workspace_fd = -1;
	cfg.image_fd = -1;
	optind = 1;
	/* KEEP_PLATFORM: the default of --platform (a test suite, or a user
	 * on a box with KVM who wants the trap platform every time). */
	if (env_platform != NULL && env_platform[0] != '\0' &&
	    (platform = vmm_platform_parse(env_platform)) < 0) {
		fprintf(stderr,
		    "keep run: KEEP_PLATFORM=%s is not a platform (auto, kvm "
		    "or trap)\n",
		    env_platform);
		return EXIT_USAGE;
	}
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			run_usage_fp(stdout);
			return 0;
		case 'm':
			if (units_parse_size(optarg, strlen(optarg), &memory)) {
				fprintf(
				    stderr, "keep run: bad size %s\n", optarg);
				return EXIT_USAGE;
			}
			break;
		case 't':
			if (units_parse_duration(
			        optarg, strlen(optarg), &timeout)) {
				fprintf(stderr, "keep run: bad duration %s\n",
				    optarg);
				return EXIT_USAGE;
			}
			break;
		case 'o':
			if (units_parse_size(
			        optarg, strlen(optarg), &output_max)) {
				fprintf(
				    stderr, "keep run: bad size %s\n", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'w':
			cfg.workspace = optarg;
			break;
		case 'p':
			if ((platform = vmm_platform_parse(optarg)) < 0) {
				fprintf(stderr,
				    "keep run: bad platform %s (auto, kvm or "
				    "trap)\n",
				    optarg);
				return EXIT_USAGE;
			}
			break;
		case 'W':
			if (units_parse_size(
			        optarg, strlen(optarg), &cfg.workspace_max)) {
				fprintf(
				    stderr, "keep run: bad size %s\n", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'e':
			if (nenv == MAX_ENV || strchr(optarg, '=') == NULL ||
			    optarg[0] == '=') {
				fprintf(
				    stderr, "keep run: bad --env %s\n", optarg);
				return EXIT_USAGE;
			}
			envp[nenv++] = optarg;
			break;
		case 'C':
			/* Certificates the guest trusts beside the image's
			 * (docs/vmm.md "Added certificates"), as keepd's
			 * guest.ca_file. */
			if (add_ca_file(optarg, &ca, &ca_len) != 0)
				return EXIT_USAGE;
			cfg.ca_extra = ca;
			cfg.ca_extra_len = ca_len;
			break;
		case 'T':
			if (ntrust == MAX_TRUST ||
			    paserk_load_public(optarg, trust[ntrust]) != 0) {
				fprintf(stderr,
				    "keep run: %s: not a k4.public key\n",
				    optarg);
				return EXIT_USAGE;
			}
			ntrust++;
			break;
		case 'P': {
			char *end;
			unsigned long n = strtoul(optarg, &end, 10);

			if (*optarg == '\0' || *end != '\0' || n < 1 ||
			    n > 1024) {
				fprintf(stderr,
				    "keep run: bad --processes %s (1 to "
				    "1024)\n",
				    optarg);
				return EXIT_USAGE;
			}
			cfg.max_procs = (unsigned)n;
			break;
		}
		case 's':
			stats = 1;
			break;
		case 'L':
			use_template = 1;
			break;
		case 'x':
			cfg.trace = 1;
			break;
		case 'S':
			vmm_print_syscalls(stdout);
			return fflush(stdout) == 0 ? 0 : 1;
		default:
			return run_usage();
		}
	}
	argc -= optind;
	argv += optind;
	if (argc < 1)
		return run_usage();
	envp[nenv] = NULL;

	memory_opt = memory;
	/* A template's holder is keyed by what its boot had, which has no
	 * added certificates: such a run boots cold. */
	if (ca != NULL)
		use_template = 0;
	if (ntrust > 0 && use_template && argc >= 2) {
		/* A template holder for this image file verified it when it
		 * started (docs/templates.md). */
		cfg.envp = envp;
		cfg.timeout_ms = timeout;
		cfg.output_max = output_max;
		rc = run_template(argv[0], argv[1],
		    (const char *const *)argv + 2, &cfg, memory,
		    (const uint8_t(*)[32])trust, ntrust, &res, err,
		    sizeof(err));
		if (rc == -2) {
			fprintf(stderr, "keep run: %s\n", err);
			return RUN_EXIT_BOOT;
		}
		if (rc == 0)
			goto have_result;
	}
	if (ntrust > 0) {
		/* An image: verified before anything in it is used, and the
		 * command checked before any VM exists. */
		if (argc < 2)
			return run_usage();
		if (image_open_fd(argv[0], &img, err, sizeof(err)) != 0) {
			fprintf(stderr, "keep run: %s\n", err);
			return RUN_EXIT_BOOT;
		}
		/* The files an earlier keep run checked, and whether it
		 * verified the signature, as long as the image file is the
		 * same one (image/verified.h): the record is read from the
		 * file's identity and its signature's bytes only, before
		 * anything of the image is used. */
		if ((checked = calloc(image_nfiles(img) + 1, 1)) == NULL)
			goto out;
		/* Only deferred hashes are worth a record: the others were
		 * all checked as the image was opened. */
		vkeyed = image_is_deferred(img) &&
		    verified_path(argv[0], vpath, sizeof(vpath)) != NULL &&
		    image_verified_key(img, &vkey) == 0;
		if (vkeyed)
			(void)image_verified_load(vpath, &vkey, checked);
		if (!checked[image_nfiles(img)] ||
		    !signer_trusted(img, (const uint8_t(*)[32])trust, ntrust)) {
			if (image_verify(img, (const uint8_t(*)[32])trust,
			        ntrust, NULL, err, sizeof(err)) != 0) {
				fprintf(stderr, "keep run: %s\n", err);
				goto out;
			}
			checked[image_nfiles(img)] = 1;
			vchanged = 1;
		}
		if ((cmd = image_command(img, argv[1])) == NULL) {
			fprintf(stderr,
			    "keep run: image %s has no command %s\n",
			    image_name(img), argv[1]);
			goto out;
		}
		if ((files = calloc(image_nfiles(img), sizeof(*files))) ==
		        NULL ||
		    (gargv = calloc((size_t)argc, sizeof(*gargv))) == NULL)
			goto out;
		for (i = 0; i < image_nfiles(img); i++) {
			const struct image_file *f = image_file_at(img, i);

			files[i].path = f->path;
			files[i].data = f->data;
			files[i].len = f->len;
			files[i].mode = f->mode;
			files[i].hash = f->hash;
			files[i].pad = f->pad;
		}
		/* The program, and each file the guest opens, are checked
		 * unless the record has them. */
		prog = (size_t)(cmd->program - image_file_at(img, 0));
		if (!checked[prog]) {
			if (image_file_verify(cmd->program) != 0) {
				fprintf(stderr,
				    "keep run: image %s: %s does not match its "
				    "hash\n",
				    image_name(img), cmd->program->path);
				goto out;
			}
			checked[prog] = 1;
			vchanged = 1;
		}
		/* Shared: a forked guest process's checks count too. */
		hints = mmap(NULL, image_nfiles(img), PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		if (hints == MAP_FAILED)
			hints = NULL;
		cfg.files_checked = checked;
		cfg.file_hints = hints;
		cfg.files = files;
		cfg.nfiles = image_nfiles(img);
		cfg.files_sorted = image_files_sorted(img);
		/* Its files' pages map into the guest copy-on-write. */
		cfg.image_fd = image_fd(img, &cfg.image_map, &image_len);
		cfg.image_map_len = image_len;
		cfg.elf = cmd->program->data;
		cfg.elf_len = cmd->program->len;
		gargv[0] = cmd->argv0;
		for (i = 2; i < (size_t)argc; i++)
			gargv[i - 1] = argv[i];
		if (memory == 0)
			memory = image_memory(img);
	} else {
		if ((elf = map_file(argv[0], &elf_len)) == NULL) {
			fprintf(stderr, "keep run: %s: %s\n", argv[0],
			    strerror(errno));
			return RUN_EXIT_BOOT;
		}
		if (elf_len >= 8 && memcmp(elf, "KEEPIMG", 8) == 0) {
			fprintf(stderr,
			    "keep run: %s is an image: give --trust "
			    "PUBLIC and a command\n",
			    argv[0]);
			goto out;
		}
		if ((gargv = calloc((size_t)argc + 1, sizeof(*gargv))) == NULL)
			goto out;
		for (i = 0; i < (size_t)argc; i++)
			gargv[i] = argv[i];
		cfg.elf = elf;
		cfg.elf_len = elf_len;
	}
	/* auto: KVM where /dev/kvm opens, the trap platform elsewhere. */
	if (platform != VMM_PLATFORM_TRAP &&
	    (kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC)) == -1 &&
	    platform == VMM_PLATFORM_KVM) {
		fprintf(stderr, "keep run: /dev/kvm: %s\n", strerror(errno));
		goto out;
	}
	cfg.kvm_fd = kvm;
	cfg.platform = kvm >= 0 ? VMM_PLATFORM_KVM : VMM_PLATFORM_TRAP;
	vmm_host_cpus_init();
	vmm_prepare_clocks();
	/* A failure here is vmm_run's to report, uncached. */
	if (kvm >= 0)
		(void)vmm_prepare_cached(kvm,
		    cpuid_cache_path(cachepath, sizeof(cachepath), "cpuid"));
	else
		(void)vmm_prepare_host_cached(cpuid_cache_path(
		    cachepath, sizeof(cachepath), "cpuid-host"));
	cfg.argv = gargv;
	cfg.envp = envp;
	cfg.stdin_fd = 0;
	cfg.output = to_fd;
	cfg.memory = memory ? memory : 64ULL << 20;
	cfg.timeout_ms = timeout;
	cfg.output_max = output_max;
	if (use_template && img != NULL)
		run_template_start(argv[0], img, argv[1], &cfg, memory_opt,
		    (const uint8_t(*)[32])trust, ntrust);
	/* The guest's sockets in a network of its own, loopback only
	 * (docs/vmm.md, "Sockets"); without one, AF_UNIX only. */
	if ((cfg.net = vmm_netns_enter(1, err, sizeof(err))) == -1) {
		fprintf(stderr, "keep run: network namespace: %s\n", err);
		goto out;
	}
	/* Its resolver answers every name NXDOMAIN: keep run has no
	 * policy to allow one (docs/egress.md). */
	if (cfg.net == 1)
		vmm_dns_take(&cfg);
	rc = vmm_run(&cfg, &res, err, sizeof(err));
	if (vkeyed)
		verified_update(img, vpath, &vkey, checked, hints, vchanged);
have_result:
	if (rc != VMM_OK) {
		fprintf(stderr, "keep run: %s: %s\n", vmm_strerror(rc), err);
		goto out;
	}
	switch (res.status) {
	case VMM_EXITED:
		ex = res.exit_code;
		break;
	case VMM_FAULT:
		ex = RUN_EXIT_FAULT;
		break;
	case VMM_TIMEOUT:
		ex = RUN_EXIT_TIMEOUT;
		break;
	case VMM_OUTPUT_LIMIT:
		ex = RUN_EXIT_OUTPUT;
		break;
	}
	if (res.status != VMM_EXITED)
		fprintf(stderr, "keep run: %s\n", res.reason);
	/* Why a program that failed may have: what it was refused. */
	if ((res.limits_hit & VMM_LIMIT_MEMORY) && ex != 0)
		fprintf(stderr,
		    "keep run: the process tree was refused memory at its "
		    "limit (%llu MiB for all its processes together)\n",
		    (unsigned long long)(cfg.memory >> 20));
	if (res.limits_hit & VMM_LIMIT_EGRESS) {
		res.egress_refused[sizeof(res.egress_refused) - 1] = '\0';
		fprintf(stderr,
		    "keep run: a connection outside the sandbox was refused "
		    "(limits: egress%s%s; the guest's network is its "
		    "loopback)\n",
		    res.egress_refused[0] != '\0' ? ": " : "",
		    res.egress_refused);
	}
	if (stats)
		fprintf(stderr,
		    "keep run: boot %llu us, run %llu us, %llu exits, %llu "
		    "system calls, peak memory %llu KiB, output %llu bytes, "
		    "%llu memory slots (%llu MiB), platform %s\n",
		    (unsigned long long)res.boot_us,
		    (unsigned long long)res.run_us,
		    (unsigned long long)res.exits,
		    (unsigned long long)res.syscalls,
		    (unsigned long long)(res.peak_memory / 1024),
		    (unsigned long long)res.output_bytes,
		    (unsigned long long)res.memslots,
		    (unsigned long long)(res.memslot_bytes >> 20),
		    vmm_platform_name((int)res.platform));
	if (stats && res.efault_retries != 0)
		fprintf(stderr,
		    "keep run: %llu entries made again after KVM_RUN failed "
		    "a page the guest holds\n",
		    (unsigned long long)res.efault_retries);
out:
	if (kvm != -1)
		close(kvm);
	if (elf != NULL)
		munmap(elf, elf_len);
	free(files);
	free(gargv);
	free(checked);
	if (hints != NULL)
		munmap((void *)hints, image_nfiles(img));
	image_close(img);
	return ex;
}
