/* Placeholder until the 'image' group lands; replaced by its own change. */
#include <stdio.h>

#include "cli/cmd.h"

int
cmd_image(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "keep image: not in this build yet\n");
	return 1;
}
