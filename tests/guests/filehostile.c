/*
 * Hostile arguments to the file calls keep serves beyond open, read and
 * write: each call with combinations of bad pointers, huge lengths,
 * negative descriptors, paths out of the workspace and flags from a small
 * set. Linux would answer each with an errno or a result; keep must too,
 * and stay up. Some calls succeed (umask(-1) does), so the program only
 * prints "survived" when it gets to the end. Left out: the calls that
 * wait (poll, select, pselect6, ppoll: a zero-descriptor wait with no
 * timeout waits forever, on Linux too) and close_range (it would close
 * stdout before the last line).
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static const long calls[] = { 40, 73, 76, 81, 85, 86, 88, 89, 90, 91, 92, 93,
	94, 95, 115, 116, 132, 137, 138, 191, 192, 193, 194, 195, 196, 235, 260,
	261, 265, 266, 267, 268, 280, 285, 316, 326, 332, 217, 262, 257, 79, 80,
	16, 72, 8 };

int
main(void)
{
	/* The paths are writable arrays as large as buf: calls like readlink
	 * and statfs write through any pointer they are given, and must not
	 * overwrite the program's own strings or data. */
	static char buf[8192], empty[8192], fd0[8192] = "/proc/self/fd/0",
	                                    null[8192] = "/dev/null",
	                                    up[8192] = "../../..";
	const long vals[] = { 0, -1, 1, 3, -100, 0x1000, 0x7fffffffffffL,
		(long)buf, (long)empty, (long)fd0, (long)null, (long)up,
		1L << 40, 0x1fff, 6 /* F_SETLK */, 38 /* F_OFD_SETLKW */ };
	const size_t nv = sizeof(vals) / sizeof(vals[0]);
	size_t c, i, j, k;

	memset(buf, 0, sizeof(buf));
	for (c = 0; c < sizeof(calls) / sizeof(calls[0]); c++)
		for (i = 0; i < nv; i++)
			for (j = 0; j < nv; j++)
				for (k = 0; k < 4; k++) {
					long r = syscall(calls[c], vals[i],
					    vals[j], vals[(i + j + k) % nv],
					    vals[k], vals[(k * 3) % nv], 0);

					/* close what was opened */
					if (calls[c] == 257 && r > 2)
						close((int)r);
				}
	printf("survived\n");
	return 0;
}
