/* The hello stock image: the smallest useful guest program. */
#include <stdio.h>

int
main(int argc, char **argv)
{
	printf("hello from keep%s%s\n", argc > 1 ? ", " : "",
	    argc > 1 ? argv[1] : "");
	return 0;
}
