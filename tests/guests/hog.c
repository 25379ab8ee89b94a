/* Allocates until allocation fails: that must be ENOMEM (NULL), not a
 * crash, and the program goes on. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int
main(void)
{
	size_t total = 0;
	void *p;

	while ((p = malloc(1 << 20)) != NULL) {
		memset(p, 1, 1 << 20);
		total += 1 << 20;
	}
	printf("allocation failed after %zu MiB\n", total >> 20);
	return 0;
}
