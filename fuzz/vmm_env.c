/*
 * Fuzz the parser of an image's default environment (/etc/keep/environment,
 * vm_env_parse in host/vmm/loader.c). Whatever it accepts must be what
 * the guest's stack may hold: NAME=VALUE lines of printable ASCII, no
 * comment, none the caller set, at most VM_IMAGE_ENV_LINES of them.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "host/vmm/vm_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const caller[] = { "HOME=/home", "PATH=/bin", NULL };
	char **v;
	size_t n, i, k;

	if (vm_env_parse(data, size, caller, &v, &n) != 0) {
		if (v != NULL || n != 0)
			abort();
		return 0;
	}
	if ((n == 0) != (v == NULL) || n > VM_IMAGE_ENV_LINES)
		abort();
	for (i = 0; i < n; i++) {
		const char *s = v[i], *eq = strchr(s, '=');

		if (eq == NULL || eq == s || s[0] == '#')
			abort();
		for (k = 0; s[k] != '\0'; k++)
			if (s[k] < 0x20 || s[k] > 0x7e)
				abort();
		for (k = 0; caller[k] != NULL; k++)
			if (strncmp(caller[k], s, (size_t)(eq - s) + 1) == 0)
				abort();
	}
	if (n > 0 && v[n] != NULL)
		abort();
	vm_image_env_free(v);
	return 0;
}
