/*
 * keep: the command-line tool. Dispatches to one subcommand group.
 */
#include <stdio.h>
#include <string.h>

#include "cli/cmd.h"
#include "lib/util.h"

#ifndef KEEP_VERSION
#define KEEP_VERSION "0.1.0"
#endif

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
	{ "api", cmd_api, "talk to a running keepd over HTTP" },
	{ "audit", cmd_audit, "verify, tail and export the audit log" },
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
