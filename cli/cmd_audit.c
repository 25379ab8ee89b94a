/* Placeholder until the 'audit' group lands; replaced by its own change. */
#include <stdio.h>

#include "cli/cmd.h"

int
cmd_audit(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "keep audit: not in this build yet\n");
	return 1;
}
