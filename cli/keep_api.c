/*
 * keep-api: `keep api`, as its own program (keep execs it), because it is
 * the only command that needs libcurl.
 */
#include "cli/cmd.h"

int
main(int argc, char **argv)
{
	return cmd_api(argc, argv);
}
