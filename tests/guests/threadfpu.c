/*
 * Two threads each hold a value in YMM3 across a busy loop while the
 * VMM switches between them (its time slices): each must find its own
 * 256 bits there afterwards, as on Linux. glibc's memcpy keeps data in
 * YMM, ZMM and opmask registers; a switch that kept only the x87 and
 * SSE state handed one thread's upper halves to the other, and node's
 * threads then followed wild pointers. Without AVX it says so and
 * passes: there is nothing to lose.
 */
#include <cpuid.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

static volatile int stop;

static void *
spin(void *arg)
{
	uint64_t pat = (uint64_t)(uintptr_t)arg, in[4], out[4];
	long bad = 0, rounds = 0;
	int i;

	for (i = 0; i < 4; i++)
		in[i] = pat * 0x0101010101010101ULL + (uint64_t)i;
	while (!stop) {
		__asm__ volatile("vmovdqu %1, %%ymm3\n\t"
		                 "mov $3000000, %%ecx\n"
		                 "1: dec %%ecx\n\t"
		                 "jnz 1b\n\t"
		                 "vmovdqu %%ymm3, %0\n\t"
		                 "vzeroupper"
		                 : "=m"(out)
		                 : "m"(in)
		                 : "ecx", "xmm3", "memory");
		for (i = 0; i < 4; i++)
			bad += out[i] != in[i];
		rounds++;
	}
	return (void *)(intptr_t)(bad > 0 ? -1 : rounds > 0);
}

int
main(void)
{
	unsigned a, b, c, d;
	pthread_t t1, t2;
	void *r1, *r2;
	struct timespec ts = { 1, 0 };

	/* AVX, and the OS saves its state (OSXSAVE). */
	if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 28)) ||
	    !(c & (1u << 27))) {
		printf("ymm kept (no AVX here)\n");
		return 0;
	}
	pthread_create(&t1, NULL, spin, (void *)0x11);
	pthread_create(&t2, NULL, spin, (void *)0x22);
	nanosleep(&ts, NULL);
	stop = 1;
	pthread_join(t1, &r1);
	pthread_join(t2, &r2);
	printf("%s\n",
	    (intptr_t)r1 == 1 && (intptr_t)r2 == 1 ? "ymm kept" : "ymm LOST");
	return 0;
}
