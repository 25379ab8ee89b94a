/* Prints argv, one environment variable and what the auxiliary vector
 * says, so the host can check the initial stack. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/auxv.h>

int
main(int argc, char **argv)
{
	const unsigned char *rnd = (const unsigned char *)getauxval(AT_RANDOM);

	for (int i = 0; i < argc; i++)
		printf("argv[%d]=%s\n", i, argv[i]);
	printf(
	    "KEEP_TEST=%s\n", getenv("KEEP_TEST") ? getenv("KEEP_TEST") : "");
	printf("pagesz=%lu\n", getauxval(AT_PAGESZ));
	printf("entry=%s\n", getauxval(AT_ENTRY) != 0 ? "set" : "unset");
	printf("random=%s\n", rnd != NULL ? "set" : "unset");
	return 0;
}
