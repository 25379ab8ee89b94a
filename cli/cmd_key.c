/* Placeholder until the 'key' group lands; replaced by its own change. */
#include <stdio.h>

#include "cli/cmd.h"

int
cmd_key(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "keep key: not in this build yet\n");
	return 1;
}
