/*
 * keep: the command-line tool. Dispatches to one subcommand group.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cmd.h"
#include "lib/util.h"

#ifndef KEEP_VERSION
#define KEEP_VERSION "0.1.0"
#endif

/*
 * keep api lives in keep-api beside this binary, so that libcurl is not
 * loaded by every other command (docs/development.md).
 */
static int
cmd_api_exec(int argc, char **argv)
{
	char self[PATH_MAX], helper[PATH_MAX + 16], *slash;
	ssize_t n;

	(void)argc;
	if ((n = readlink("/proc/self/exe", self, sizeof(self) - 1)) <= 0) {
		fprintf(stderr, "keep: /proc/self/exe: %s\n", strerror(errno));
		return 1;
	}
	self[n] = '\0';
	if ((slash = strrchr(self, '/')) != NULL)
		*slash = '\0';
	snprintf(helper, sizeof(helper), "%s/keep-api", self);
	argv[0] = "keep api";
	execv(helper, argv);
	fprintf(stderr, "keep: %s: %s\n", helper, strerror(errno));
	return 1;
}

static const struct {
	const char *name;
	int (*fn)(int, char **);
	const char *summary;
} groups[] = {
	{ "run", cmd_run, "boot a program or image in a micro-VM" },
	{ "policy", cmd_policy, "check, format, test and query policy files" },
	{ "image", cmd_image, "build, sign, verify and inspect guest images" },
	{ "key", cmd_key, "generate keys and print key ids" },
	{ "token", cmd_token, "sign, verify, mint and inspect tokens" },
	{ "api", cmd_api_exec, "talk to a running keepd over HTTP" },
	{ "audit", cmd_audit, "verify, tail and export the audit log" },
	{ "store", cmd_store, "back up and restore the store (LMDB)" },
	{ "status", cmd_status, "processes, versions, policy, store, limits" },
	{ "cron", cmd_cron, "when a schedule's cron expression fires" },
};

static void
usage(FILE *fp)
{
	fprintf(fp, "usage: keep COMMAND [ARG...]\n\ncommands:\n");
	for (size_t i = 0; i < nitems(groups); i++)
		fprintf(fp, "  %-8s %s\n", groups[i].name, groups[i].summary);
	fprintf(fp, "  %-8s %s\n", "version", "print the version");
	fprintf(fp, "\nSee keep(1).\n");
}

int
main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return 0;
	}
	if (strcmp(argv[1], "version") == 0 ||
	    strcmp(argv[1], "--version") == 0) {
		printf("keep %s\n", KEEP_VERSION);
		return 0;
	}
	for (size_t i = 0; i < nitems(groups); i++)
		if (strcmp(argv[1], groups[i].name) == 0)
			return groups[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "keep: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return EXIT_USAGE;
}
