/* keep run --template (cli/run_template.c, docs/templates.md). */
#ifndef KEEP_CLI_RUN_TEMPLATE_H
#define KEEP_CLI_RUN_TEMPLATE_H

#include <stddef.h>
#include <stdint.h>

#include "host/vmm/vmm.h"
#include "image/image.h"

/*
 * Run command of the image file with args (its argv after argv[0], NULL
 * terminated) and cfg's envp, workspace and limits (stdio are the
 * caller's) on a clone of the image's template, held by a template
 * holder of this user for that file, command, --memory (0: the
 * image's) and trusted keys. The holder verified the image when it
 * started, and the file's identity is part of its key, so the image is
 * not opened here. 0 with *res when it ran; -1 when there is no holder
 * (the caller boots cold, and calls run_template_start); -2 when the run
 * was handed over and then failed (err says why; it must not be run
 * again).
 */
int run_template(const char *image_path, const char *command,
    const char *const *args, const struct vmm_config *cfg, uint64_t memory,
    const uint8_t (*trust)[32], size_t ntrust, struct vmm_result *res,
    char *err, size_t errlen);

/* Start a holder for the next run, in the background: img has been
 * verified with trust, cfg is the run's (files, memory, kvm_fd). */
void run_template_start(const char *image_path, const struct image *img,
    const char *command, const struct vmm_config *cfg, uint64_t memory,
    const uint8_t (*trust)[32], size_t ntrust);

#endif
