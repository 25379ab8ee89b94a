/* Placeholder until the 'api' group lands; replaced by its own change. */
#include <stdio.h>

#include "cli/cmd.h"

int
cmd_api(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "keep api: not in this build yet\n");
	return 1;
}
