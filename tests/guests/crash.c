/* One way to die per argument; the host must report each. */
#include <string.h>

static volatile int depth_limit = 1 << 30;

static int
recurse(int n)
{
	volatile char pad[4096];

	pad[0] = (char)n;
	if (n > depth_limit)
		return 0;
	return recurse(n + 1) + pad[0];
}

int
main(int argc, char **argv)
{
	const char *how = argc > 1 ? argv[1] : "";

	if (strcmp(how, "ud2") == 0)
		__asm__ volatile("ud2");
	else if (strcmp(how, "int3") == 0)
		__asm__ volatile("int3");
	else if (strcmp(how, "hlt") == 0)
		__asm__ volatile("hlt");
	else if (strcmp(how, "cli") == 0)
		__asm__ volatile("cli");
	else if (strcmp(how, "wrmsr") == 0)
		__asm__ volatile("wrmsr" ::"c"(0xc0000082), "a"(0), "d"(0));
	else if (strcmp(how, "jump") == 0)
		((void (*)(void))0x1234560)();
	else if (strcmp(how, "null") == 0)
		return *(volatile int *)0;
	else if (strcmp(how, "stack") == 0)
		return recurse(0);
	else if (strcmp(how, "out") == 0)
		__asm__ volatile("outb %%al, $0xe0" ::"a"(0));
	return 0;
}
