/* A compute-bound loop with no system calls: bench/boot runs it inside
 * keep and natively. Prints the result so the work cannot be elided. */
#include <stdio.h>
#include <stdlib.h>

int
main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 100000000;
	unsigned long x = 88172645463325252UL;

	for (unsigned long i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
	}
	printf("%lu\n", x);
	return 0;
}
