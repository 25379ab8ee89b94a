/* Placeholder until the 'policy' group lands; replaced by its own change. */
#include <stdio.h>

#include "cli/cmd.h"

int
cmd_policy(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "keep policy: not in this build yet\n");
	return 1;
}
