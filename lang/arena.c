/*
 * The arena every node of a parsed file lives in: chunks from malloc,
 * bump allocation, freed all at once. A hard cap bounds what hostile
 * text can make us allocate.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lang/lang_int.h"
#include "lib/util.h"

#define CHUNK_MIN (64u * 1024)
#define ALIGN 16u

struct chunk {
	struct chunk *next;
	size_t size;
	size_t used;
	_Alignas(16) unsigned char data[];
};

struct lang_arena {
	struct chunk *head;
	size_t total;
};

static const char *const errs[] = {
	"syntax or check errors",
	"out of memory",
	"policy text too large",
	"output buffer too small",
	"bad argument",
};

const char *
lang_strerror(int err)
{
	if (err == LANG_OK)
		return "success";
	if (err >= LANG_E_SYNTAX && err < LANG_E_SYNTAX + (int)nitems(errs))
		return errs[err - LANG_E_SYNTAX];
	return "unknown error";
}

struct lang_arena *
lang_arena_new(void)
{
	return calloc(1, sizeof(struct lang_arena));
}

void
lang_arena_free(struct lang_arena *a)
{
	struct chunk *c, *n;

	if (a == NULL)
		return;
	for (c = a->head; c != NULL; c = n) {
		n = c->next;
		free(c);
	}
	free(a);
}

/* Zeroed memory from f's arena; NULL (and f->oom set) past the cap. */
void *
lang_alloc(struct lang_file *f, size_t size)
{
	struct lang_arena *a = f->arena;
	struct chunk *c = a->head;
	size_t want, csize;
	void *p;

	if (size > LANG_ARENA_MAX)
		goto oom;
	want = (size + ALIGN - 1) & ~(size_t)(ALIGN - 1);
	if (c == NULL || c->size - c->used < want) {
		csize = want > CHUNK_MIN ? want : CHUNK_MIN;
		if (a->total + csize > LANG_ARENA_MAX)
			goto oom;
		if ((c = malloc(sizeof(*c) + csize)) == NULL)
			goto oom;
		c->size = csize;
		c->used = 0;
		c->next = a->head;
		a->head = c;
		a->total += csize;
	}
	p = c->data + c->used;
	c->used += want;
	memset(p, 0, size);
	return p;
oom:
	f->oom = 1;
	return NULL;
}

char *
lang_strndup(struct lang_file *f, const char *s, size_t len)
{
	char *p;

	if ((p = lang_alloc(f, len + 1)) == NULL)
		return NULL;
	memcpy(p, s, len);
	p[len] = '\0';
	return p;
}

void
lang_diag(struct lang_file *f, enum lang_sev sev, struct lang_loc loc,
    const char *fmt, ...)
{
	struct lang_diag *d;
	va_list ap;

	if (sev == LANG_ERROR)
		f->nerrors++;
	else
		f->nwarnings++;
	if (f->ndiags >= LANG_DIAG_MAX)
		return;
	if (f->diags == NULL) {
		f->diags = lang_alloc(f, LANG_DIAG_MAX * sizeof(*f->diags));
		if (f->diags == NULL)
			return;
	}
	d = &f->diags[f->ndiags++];
	d->sev = sev;
	d->loc = loc;
	va_start(ap, fmt);
	vsnprintf(d->msg, sizeof(d->msg), fmt, ap);
	va_end(ap);
}

/* The source line that holds loc, without its newline. */
static const char *
line_of(const struct lang_file *f, uint32_t line, size_t *len)
{
	const char *p = f->text, *end = f->text + f->len, *nl;
	uint32_t l = 1;

	while (l < line && p < end) {
		if ((nl = memchr(p, '\n', end - p)) == NULL)
			return NULL;
		p = nl + 1;
		l++;
	}
	if (l != line)
		return NULL;
	nl = memchr(p, '\n', end - p);
	*len = (nl != NULL ? nl : end) - p;
	if (*len > 0 && p[*len - 1] == '\r')
		(*len)--;
	return p;
}

int
lang_diag_format(const struct lang_file *f, const struct lang_diag *d,
    char *buf, size_t buflen)
{
	const char *src;
	size_t len = 0, i, n;
	int w, total;
	char caret[512];

	char where[1100];

	/* Positions in the files the loader read (lang/source.c). */
	lang_source_format(f->text, f->len, f->name, d->loc.line, d->loc.col,
	    where, sizeof(where));
	total = snprintf(buf, buflen, "%s: %s: %s\n", where,
	    d->sev == LANG_ERROR ? "error" : "warning", d->msg);
	if (total < 0)
		return total;
	if ((src = line_of(f, d->loc.line, &len)) == NULL)
		return total;
	if (len > sizeof(caret) - 2)
		len = sizeof(caret) - 2;
	/* The source line, made printable; the caret line keeps its tabs
	 * so the caret lands under the column on any tab width. */
	n = 0;
	for (i = 0; i + 1 < d->loc.col && i < len && n < sizeof(caret) - 2; i++)
		caret[n++] = src[i] == '\t' ? '\t' : ' ';
	caret[n++] = '^';
	caret[n] = '\0';
	{
		char line[512];
		for (i = 0; i < len; i++) {
			unsigned char c = (unsigned char)src[i];
			line[i] =
			    (c == '\t' || (c >= 0x20 && c < 0x7f)) ? c : '?';
		}
		line[len] = '\0';
		w = snprintf((size_t)total < buflen ? buf + total : NULL,
		    (size_t)total < buflen ? buflen - total : 0, "%s\n%s\n",
		    line, caret);
	}
	if (w < 0)
		return w;
	return total + w;
}
