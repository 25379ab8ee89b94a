/* Hands the host pointers it must refuse: write from an unmapped
 * address and from the kernel's page must fail with EFAULT. A write or
 * read of zero bytes touches no buffer, so any pointer goes, as in
 * Linux. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int
main(void)
{
	ssize_t a = write(1, (const void *)16, 8);
	int ea = errno;
	ssize_t b = write(1, (const void *)0x17000, 8);
	int eb = errno;
	ssize_t c = write(1, (const void *)0x7ffffffff000, 8);
	int ec = errno;

	printf("%zd %s\n%zd %s\n%zd %s\n", a, strerror(ea), b, strerror(eb), c,
	    strerror(ec));
	printf(
	    "zero bytes: %zd %zd\n", write(1, NULL, 0), read(0, (void *)16, 0));
	return 0;
}
