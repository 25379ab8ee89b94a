/* Placeholder until the 'token' group lands; replaced by its own change. */
#include <stdio.h>

#include "cli/cmd.h"

int
cmd_token(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "keep token: not in this build yet\n");
	return 1;
}
