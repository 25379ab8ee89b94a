/* dlopen()s libsquare.so by name (the loader's search path), calls into
 * it, closes it; exit status 0 only when all of that worked. */
#include <dlfcn.h>
#include <stdio.h>

int
main(void)
{
	int (*square)(int);
	void *h = dlopen("libsquare.so", RTLD_NOW);

	if (h == NULL) {
		printf("dlopen: %s\n", dlerror());
		return 1;
	}
	*(void **)&square = dlsym(h, "keep_square");
	if (square == NULL) {
		printf("dlsym: %s\n", dlerror());
		return 1;
	}
	printf("square(7) = %d\n", square(7));
	return dlclose(h) == 0 ? 0 : 2;
}
