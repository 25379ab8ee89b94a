/* Placeholder until the host framework lands; replaced by its change. */
#include <stdio.h>

int
main(void)
{
	fprintf(stderr, "keepd: not in this build yet\n");
	return 1;
}
