/* Placeholder until the 'run' group lands; replaced by its own change. */
#include <stdio.h>

#include "cli/cmd.h"

int
cmd_run(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "keep run: not in this build yet\n");
	return 1;
}
