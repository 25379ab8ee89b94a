/* Internal to lang/: shared between its files, not part of the API. */
#ifndef KEEP_LANG_INT_H
#define KEEP_LANG_INT_H

#include "lang/lang.h"

struct lang_arena *lang_arena_new(void);
void lang_arena_free(struct lang_arena *a);

/* Whether s is a valid executable name, egress host. */
int lang_exec_name_ok(const char *s);
int lang_host_ok(const char *s);

#endif
