/*
 * keepd: the keep daemon. main() reads as the start-up: options, the
 * configuration, then either the parent (forks and supervises the
 * children) or, with the hidden -P flag, one re-executed child.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <seccomp.h>

#include "host/config.h"
#include "host/parent.h"
#include "host/preflight.h"
#include "host/proc.h"
#include "host/seccomp_filters.h"
#include "host/vm_confine.h"
#include "lib/log.h"

extern char **environ;

static void KEEP_NORETURN
usage(void)
{
	fprintf(stderr, "usage: keepd [-dnv] [-f file] [-T clock-file]\n");
	exit(2);
}

/* keepd -h, keepd --help: the usage and the options, on stdout. */
static void KEEP_NORETURN
help(void)
{
	printf("usage: keepd [-dnv] [-f file] [-T clock-file]\n"
	       "  -d       stay in the foreground and log to stderr\n"
	       "  -f file  the configuration (default %s)\n"
	       "  -n       check the configuration and exit\n"
	       "  -T file  tests only: schedules take their time from file\n"
	       "  -v       log more; with -n, print the API's url\n"
	       "See keepd(8) and keepd.yaml(5).\n",
	    CONFIG_DEFAULT_PATH);
	exit(0);
}

/*
 * Hidden test helper (-S NAME [-X SYSCALL]): load process NAME's seccomp
 * filter into this process, then make SYSCALL with zero arguments. The
 * integration tests expect a kill (SIGSYS) for calls outside the list.
 */
static int
seccomp_selftest(const char *name, const char *call)
{
	static const char ok[] = "filter installed\n", alive[] = "survived\n";
	const struct proc_info *info = proc_by_name(name);
	const struct seccomp_filter *f = info != NULL ? info->filter : NULL;
	int nr;

	unsigned flags = 0;
	long a0 = 0;
	char cname[64];
	const char *colon;

	if (strcmp(name, "netns") == 0)
		f = &seccomp_netns;
	if (strcmp(name, "port-connector") == 0) {
		flags = SCF_NO_SOCKETS | SCF_VM_NET;
		f = &seccomp_port_connector;
	}
	if (strcmp(name, "vm") == 0 || strcmp(name, "vm-net") == 0) {
		flags = SCF_NO_SOCKETS |
		    (strcmp(name, "vm-net") == 0 ? SCF_VM_NET : 0);
		f = &seccomp_vm;
	}
	/* CALL:N: the call with N as its first argument (a family). */
	if (call != NULL && (colon = strchr(call, ':')) != NULL &&
	    (size_t)(colon - call) < sizeof(cname)) {
		memcpy(cname, call, (size_t)(colon - call));
		cname[colon - call] = '\0';
		a0 = strtol(colon + 1, NULL, 0);
		call = cname;
	}
	if (f == NULL) {
		fprintf(stderr, "keepd: no process %s with a filter\n", name);
		return 2;
	}
	nr = call != NULL ? seccomp_syscall_resolve_name(call) : -1;
	if (call != NULL && nr < 0) {
		fprintf(stderr, "keepd: unknown system call %s\n", call);
		return 2;
	}
	/* A vm process's filter comes without the syslog sockets. */
	if (seccomp_filter_install_flags(f, flags) == -1) {
		fprintf(stderr, "keepd: seccomp: %s\n", strerror(errno));
		return 1;
	}
	(void)!write(STDOUT_FILENO, ok, sizeof(ok) - 1);
	if (nr >= 0)
		syscall(nr, a0, 0, 0, 0, 0, 0);
	(void)!write(STDOUT_FILENO, alive, sizeof(alive) - 1);
	return 0;
}

int
main(int argc, char *argv[])
{
	struct keepd_config cfg;
	struct config_diag diag;
	const char *path = CONFIG_DEFAULT_PATH, *child = NULL;
	const char *root = NULL, *user = NULL, *filter = NULL, *call = NULL;
	const char *confine = NULL;
	const struct proc_info *info;
	int ch, foreground = 0, check = 0, verbosity = 0;
	size_t i;

	setproctitle_init(argc, argv, environ);
	for (int a = 1; a < argc && strcmp(argv[a], "--") != 0; a++)
		if (strcmp(argv[a], "--help") == 0 ||
		    strcmp(argv[a], "-h") == 0)
			help();
	while ((ch = getopt(argc, argv, "df:nvP:R:U:S:T:X:J:")) != -1) {
		switch (ch) {
		case 'd':
			foreground = 1;
			break;
		case 'f':
			path = optarg;
			break;
		case 'n':
			check = 1;
			break;
		case 'v':
			verbosity++;
			break;
		case 'P':
			child = optarg;
			break;
		case 'R':
			root = optarg;
			break;
		case 'U':
			user = optarg;
			break;
		case 'S':
			filter = optarg;
			break;
		case 'X':
			call = optarg;
			break;
		case 'J':
			confine = optarg;
			break;
		case 'T':
			parent_test_clock(optarg);
			break;
		default:
			usage();
		}
	}
	/* Hidden test helper (host/vm_confine.h): -J STATE WS PROBE... */
	if (confine != NULL)
		return vm_confine_selftest(confine,
		    user != NULL ? user : "_keep", argc - optind,
		    argv + optind);
	if (optind != argc)
		usage();
	if (filter != NULL)
		return seccomp_selftest(filter, call);
	if (child != NULL) {
		if ((info = proc_by_name(child)) == NULL ||
		    info->id == PROC_PARENT)
			usage();
		proc_child_start(info, root, user, foreground, verbosity);
	}

	log_init(1, verbosity, "keepd");
	if (config_load(path, &cfg, &diag) != CONFIG_OK) {
		for (i = 0; i < diag.nerrors && i < CONFIG_ERRORS_MAX; i++)
			fprintf(stderr, "%s\n", diag.errors[i]);
		if (diag.nerrors > CONFIG_ERRORS_MAX)
			fprintf(stderr, "%s: %zu more errors\n", path,
			    diag.nerrors - CONFIG_ERRORS_MAX);
		return 1;
	}
	if (check) {
		printf("configuration OK\n");
		/* With -v, where the API answers: for scripts such as
		 * `make run`, which print it. */
		if (verbosity > 0)
			printf("url: %s://%s%s%s:%u\n",
			    cfg.tls_cert[0] != '\0' ? "https" : "http",
			    strchr(cfg.listen_address, ':') ? "[" : "",
			    cfg.listen_address,
			    strchr(cfg.listen_address, ':') ? "]" : "",
			    (unsigned)cfg.listen_port);
		fflush(stdout);
		preflight_check(&cfg, stderr);
		return 0;
	}
	if (!foreground && daemon(0, 0) == -1)
		fatal("daemon");
	log_init(foreground, verbosity, "keepd");
	return parent_main(&cfg, path, foreground, verbosity);
}
