/*
 * The keep CLI: one entry point per subcommand group, each in its own
 * cli/cmd_<group>.c. argv[0] is the group name ("policy", "run", ...).
 * Exit statuses: 0 success, 1 a negative answer or a failed operation
 * (documented per command in keep(1)), 2 a usage error.
 */
#ifndef KEEP_CLI_CMD_H
#define KEEP_CLI_CMD_H

#define EXIT_USAGE 2

int cmd_run(int argc, char **argv);
int cmd_policy(int argc, char **argv);
int cmd_image(int argc, char **argv);
int cmd_key(int argc, char **argv);
int cmd_token(int argc, char **argv);
int cmd_api(int argc, char **argv);
int cmd_audit(int argc, char **argv);
int cmd_cron(int argc, char **argv);

#endif
