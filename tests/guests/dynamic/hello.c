/* A dynamic hello world: built with plain gcc (a PIE with an interpreter). */
#include <stdio.h>

int
main(int argc, char **argv)
{
	printf("hello, %s (%d)\n", argv[0], argc);
	return 3;
}
