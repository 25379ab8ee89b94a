/* keep run --template (cli/run_template.c, docs/templates.md). */
#ifndef KEEP_CLI_RUN_TEMPLATE_H
#define KEEP_CLI_RUN_TEMPLATE_H

#include <stddef.h>
#include <stdint.h>

#include "host/vmm/vmm.h"
#include "image/image.h"

/*
 * Run cfg (argv, envp, workspace, limits; stdio are the caller's) on a
 * clone of the image's template for command, held by a template holder
 * of this user. 0 with *res when it ran; -1 when there is no holder or
 * it could not be asked (the caller boots cold; a holder is started for
 * the next run); -2 when the run was handed over and then failed (err
 * says why; it must not be run again).
 */
int run_template(const char *image_path, const struct image *img,
    const char *command, const struct vmm_config *cfg,
    const uint8_t (*trust)[32], size_t ntrust, struct vmm_result *res,
    char *err, size_t errlen);

#endif
