/*
 * The keep CLI: one entry point per subcommand group, each in its own
 * cli/cmd_<group>.c. argv[0] is the group name ("policy", "run", ...).
 * Exit statuses: 0 success, 1 a negative answer or a failed operation
 * (documented per command in keep(1)), 2 a usage error.
 */
#ifndef KEEP_CLI_CMD_H
#define KEEP_CLI_CMD_H

#define EXIT_USAGE 2

#include <string.h>

/*
 * Whether a command line asks for its usage: "help" as argv[1] (keep
 * policy help), or "-h" or "--help" among argv[1..] before a "--". The
 * group then prints its usage on stdout and exits 0, before it reads a
 * file, a key or a token or sends any request. keep run asks its own
 * options only (the program's arguments are the program's).
 */
static inline int
cli_wants_help(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "help") == 0)
		return 1;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0)
			break;
		if (strcmp(argv[i], "-h") == 0 ||
		    strcmp(argv[i], "--help") == 0)
			return 1;
	}
	return 0;
}

int cmd_run(int argc, char **argv);
int cmd_policy(int argc, char **argv);
int cmd_image(int argc, char **argv);
int cmd_key(int argc, char **argv);
int cmd_token(int argc, char **argv);
int cmd_api(int argc, char **argv);
int cmd_audit(int argc, char **argv);
int cmd_store(int argc, char **argv);
int cmd_status(int argc, char **argv);
int cmd_cron(int argc, char **argv);

#endif
