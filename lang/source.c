/*
 * The one loader of policy files, for `keep policy` and keepd alike: the
 * files of a policy, in the order given, become one text, each file's
 * bytes after a marker line naming it ("#@file NAME", a comment to the
 * parser). A position in that text maps back to the file and its own
 * line through the markers, so every diagnostic, decision and audit
 * entry names "file:line:col" as the operator wrote it, whichever
 * program compiled the set.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lang/lang.h"

#define MARK LANG_SOURCE_MARK
#define MARK_LEN (sizeof(MARK) - 1)

static int
fail(char *err, size_t errlen, const char *name, const char *why)
{
	if (errlen > 0)
		snprintf(err, errlen, "%s: %s", name, why);
	return -1;
}

/* Whether p (at the start of a line) is a marker line. */
static int
is_mark(const char *p, const char *end)
{
	return (size_t)(end - p) >= MARK_LEN && memcmp(p, MARK, MARK_LEN) == 0;
}

static int
append(char **buf, size_t *len, size_t *cap, const void *p, size_t n)
{
	char *nb;
	size_t nc;

	if (n > LANG_TEXT_MAX || *len + n > LANG_TEXT_MAX)
		return -1;
	if (*len + n + 1 > *cap) {
		nc = *cap ? *cap : 4096;
		while (nc < *len + n + 1)
			nc *= 2;
		if ((nb = realloc(*buf, nc)) == NULL)
			return -1;
		*buf = nb;
		*cap = nc;
	}
	memcpy(*buf + *len, p, n);
	*len += n;
	(*buf)[*len] = '\0';
	return 0;
}

int
lang_source_load(const char *const *paths, size_t n, char **text, size_t *len,
    char *err, size_t errlen)
{
	char *buf = NULL, chunk[8192];
	size_t blen = 0, cap = 0, start, i, got;
	const char *name, *p, *end;
	FILE *fp;

	*text = NULL;
	*len = 0;
	for (i = 0; i < n; i++) {
		name = paths[i];
		if (strchr(name, '\n') != NULL || strlen(name) > 1024) {
			free(buf);
			return fail(err, errlen, name, "unusable file name");
		}
		if (strcmp(name, "-") == 0)
			fp = stdin;
		else if ((fp = fopen(name, "r")) == NULL) {
			free(buf);
			return fail(err, errlen, name, strerror(errno));
		}
		if (append(&buf, &blen, &cap, MARK, MARK_LEN) != 0 ||
		    append(&buf, &blen, &cap, name, strlen(name)) != 0 ||
		    append(&buf, &blen, &cap, "\n", 1) != 0)
			goto toobig;
		start = blen;
		while ((got = fread(chunk, 1, sizeof(chunk), fp)) > 0)
			if (append(&buf, &blen, &cap, chunk, got) != 0)
				goto toobig;
		if (ferror(fp)) {
			if (fp != stdin)
				fclose(fp);
			free(buf);
			return fail(err, errlen, name, "read error");
		}
		if (fp != stdin)
			fclose(fp);
		/* A file's own marker-like line would shift every position
		 * after it: refused. */
		for (p = buf + start, end = buf + blen; p < end;) {
			if (is_mark(p, end)) {
				free(buf);
				return fail(err, errlen, name,
				    "a line starts with \"" MARK "\", which "
				    "the loader reserves");
			}
			if ((p = memchr(p, '\n', (size_t)(end - p))) == NULL)
				break;
			p++;
		}
		if (blen > start && buf[blen - 1] != '\n' &&
		    append(&buf, &blen, &cap, "\n", 1) != 0)
			goto toobig;
		continue;
	toobig:
		if (fp != stdin)
			fclose(fp);
		free(buf);
		return fail(err, errlen, name, "the policy is too large");
	}
	if (buf == NULL && append(&buf, &blen, &cap, "", 0) != 0)
		return fail(err, errlen, "policy", "out of memory");
	*text = buf;
	*len = blen;
	return 0;
}

uint32_t
lang_source_where(const char *text, size_t len, uint32_t line,
    const char **name, size_t *namelen)
{
	const char *p = text, *end = text + len, *nl;
	uint32_t l = 1, mark = 0;

	*name = NULL;
	*namelen = 0;
	while (p < end && l <= line) {
		nl = memchr(p, '\n', (size_t)(end - p));
		if (is_mark(p, end)) {
			*name = p + MARK_LEN;
			*namelen = (size_t)((nl != NULL ? nl : end) - *name);
			mark = l;
		}
		if (nl == NULL)
			break;
		p = nl + 1;
		l++;
	}
	return *name != NULL ? line - mark : line;
}

int
lang_source_format(const char *text, size_t len, const char *dflt,
    uint32_t line, uint32_t col, char *buf, size_t buflen)
{
	const char *name;
	size_t nlen;
	uint32_t fl = lang_source_where(text, len, line, &name, &nlen);

	if (name == NULL) {
		name = dflt;
		nlen = strlen(dflt);
	}
	if (nlen > 1024)
		nlen = 1024;
	if (col == 0)
		return snprintf(buf, buflen, "%.*s:%u", (int)nlen, name, fl);
	return snprintf(buf, buflen, "%.*s:%u:%u", (int)nlen, name, fl, col);
}

struct lang_srcmap {
	uint32_t nrules; /* rules 1..nrules */
	uint32_t *line, *col; /* by rule id, in the loaded text */
	size_t nfiles;
	uint32_t *mark; /* by file: the line of its marker */
	char **name; /* by file: its base name */
};

void
lang_srcmap_free(struct lang_srcmap *m)
{
	size_t i;

	if (m == NULL)
		return;
	for (i = 0; i < m->nfiles; i++)
		free(m->name[i]);
	free(m->name);
	free(m->mark);
	free(m->line);
	free(m->col);
	free(m);
}

static int
srcmap_files(struct lang_srcmap *m, const char *text, size_t len)
{
	const char *p = text, *end = text + len, *nl, *nm, *slash;
	size_t nlen, cap = 0;
	uint32_t l = 1;
	void *np;

	for (; p < end; p = nl + 1, l++) {
		nl = memchr(p, '\n', (size_t)(end - p));
		if (is_mark(p, end)) {
			nm = p + MARK_LEN;
			nlen = (size_t)((nl != NULL ? nl : end) - nm);
			if ((slash = memrchr(nm, '/', nlen)) != NULL) {
				nlen -= (size_t)(slash + 1 - nm);
				nm = slash + 1;
			}
			if (m->nfiles == cap) {
				cap = cap ? cap * 2 : 8;
				if ((np = reallocarray(m->mark, cap,
				         sizeof(*m->mark))) == NULL)
					return -1;
				m->mark = np;
				if ((np = reallocarray(m->name, cap,
				         sizeof(*m->name))) == NULL)
					return -1;
				m->name = np;
			}
			if ((m->name[m->nfiles] = strndup(nm, nlen)) == NULL)
				return -1;
			m->mark[m->nfiles++] = l;
		}
		if (nl == NULL)
			break;
	}
	return 0;
}

struct lang_srcmap *
lang_srcmap_new(const char *text, size_t len)
{
	struct lang_srcmap *m;
	struct lang_file *f = NULL;
	const struct lang_decl *d;
	const struct lang_stmt *s;
	size_t i;

	if ((m = calloc(1, sizeof(*m))) == NULL)
		return NULL;
	if (srcmap_files(m, text, len) != 0 ||
	    lang_parse("policy", text, len, &f) != LANG_OK)
		goto fail;
	m->nrules = f->nrules;
	if ((m->line = calloc(m->nrules + 1, sizeof(*m->line))) == NULL ||
	    (m->col = calloc(m->nrules + 1, sizeof(*m->col))) == NULL)
		goto fail;
	for (d = f->decls; d != NULL; d = d->next)
		for (s = d->stmts; s != NULL; s = s->next)
			for (i = 0; i < s->nitems; i++)
				if (s->items[i].rule >= 1 &&
				    s->items[i].rule <= m->nrules) {
					m->line[s->items[i].rule] =
					    s->items[i].loc.line;
					m->col[s->items[i].rule] =
					    s->items[i].loc.col;
				}
	lang_free(f);
	return m;
fail:
	lang_free(f);
	lang_srcmap_free(m);
	return NULL;
}

int
lang_srcmap_rule(
    const struct lang_srcmap *m, uint32_t rule, char *buf, size_t len)
{
	size_t lo = 0, hi, mid;
	uint32_t line;

	if (m == NULL || rule == 0 || rule > m->nrules ||
	    (line = m->line[rule]) == 0)
		return -1;
	if (m->nfiles == 0 || line < m->mark[0])
		return snprintf(buf, len, "policy:%u:%u", line, m->col[rule]);
	/* The last file whose marker is before the line. */
	hi = m->nfiles;
	while (hi - lo > 1) {
		mid = (lo + hi) / 2;
		if (m->mark[mid] < line)
			lo = mid;
		else
			hi = mid;
	}
	return snprintf(buf, len, "%s:%u:%u", m->name[lo], line - m->mark[lo],
	    m->col[rule]);
}
