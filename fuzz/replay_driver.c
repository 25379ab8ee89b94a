/*
 * Replay driver: an ordinary build of a libFuzzer harness. Every file named
 * on the command line is read whole and handed to LLVMFuzzerTestOneInput,
 * so `make check` replays the seed corpora without clang's runtime.
 */
#include <err.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

int
main(int argc, char **argv)
{
	if (LLVMFuzzerInitialize != NULL)
		LLVMFuzzerInitialize(&argc, &argv);
	for (int i = 1; i < argc; i++) {
		FILE *fp = fopen(argv[i], "rb");
		if (fp == NULL)
			err(1, "%s", argv[i]);
		if (fseek(fp, 0, SEEK_END) != 0)
			err(1, "%s", argv[i]);
		long len = ftell(fp);
		if (len < 0 || fseek(fp, 0, SEEK_SET) != 0)
			err(1, "%s", argv[i]);
		/* An exact-size copy, so an over-read faults under ASan. */
		uint8_t *buf = malloc(len > 0 ? (size_t)len : 1);
		if (buf == NULL)
			err(1, "malloc");
		if (len > 0 && fread(buf, 1, (size_t)len, fp) != (size_t)len)
			err(1, "%s: short read", argv[i]);
		fclose(fp);
		LLVMFuzzerTestOneInput(buf, (size_t)len);
		free(buf);
	}
	return 0;
}
