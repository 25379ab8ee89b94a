/* Prints one line and exits 0: the smallest useful guest. */
#include <stdio.h>

int
main(void)
{
	puts("hello from a keep guest");
	return 0;
}
