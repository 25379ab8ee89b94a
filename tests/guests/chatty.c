/* Writes until something stops it: the output limit must. */
#include <string.h>
#include <unistd.h>

int
main(void)
{
	char buf[4096];

	memset(buf, 'x', sizeof(buf));
	for (;;)
		if (write(1, buf, sizeof(buf)) < 0)
			return 3;
}
