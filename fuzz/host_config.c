/* Fuzz the keepd.yaml parser: any bytes give a configuration or
 * diagnostics, never a crash, a leak or an over-read; every diagnostic
 * names file:line:column. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "host/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct keepd_config cfg;
	struct config_diag diag;
	char *text;
	size_t i;
	int rc;

	if (size > 64 * 1024)
		return 0;
	if ((text = malloc(size ? size : 1)) == NULL)
		return 0;
	memcpy(text, data, size);
	rc = config_parse("f", text, size, &cfg, &diag);
	if (rc == CONFIG_OK && diag.nerrors != 0)
		abort();
	if (rc != CONFIG_OK && diag.nerrors == 0)
		abort();
	for (i = 0; i < diag.nerrors && i < CONFIG_ERRORS_MAX; i++)
		if (strncmp(diag.errors[i], "f:", 2) != 0)
			abort();
	if (rc == CONFIG_OK &&
	    (cfg.listen_port == 0 || cfg.nissuer_keys > CONFIG_KEYS_MAX ||
	        cfg.memory_default > cfg.memory_max))
		abort();
	free(text);
	return 0;
}
