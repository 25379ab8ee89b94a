/*
 * Fuzz the "#!" line parser of execve (host/vmm/exec.c): the bytes are a
 * guest's file. What it accepts must be a non-empty interpreter without
 * blanks and an argument without surrounding blanks, both terminated
 * inside their buffers.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "host/vmm/vm_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char interp[256], arg[256];
	size_t n;

	memset(interp, 'x', sizeof(interp));
	memset(arg, 'x', sizeof(arg));
	if (vm_exec_shebang(
	        data, size, interp, sizeof(interp), arg, sizeof(arg)) != 0)
		return 0;
	if (memchr(interp, '\0', sizeof(interp)) == NULL ||
	    memchr(arg, '\0', sizeof(arg)) == NULL || interp[0] == '\0' ||
	    strpbrk(interp, " \t") != NULL)
		abort();
	n = strlen(arg);
	if (n > 0 &&
	    (arg[0] == ' ' || arg[0] == '\t' || arg[n - 1] == ' ' ||
	        arg[n - 1] == '\t'))
		abort();
	return 0;
}
