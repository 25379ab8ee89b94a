/*
 * The canonical printer, which is the formatter: one statement per line,
 * a tab of indent, declarations and statements in the order written,
 * comments kept where they were. Printing a parsed file and parsing the
 * output gives the same tree, and printing is idempotent.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lang/lang_int.h"
#include "lib/units.h"

struct out {
	char *buf;
	size_t len, cap;
	int err;
};

static void put(struct out *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	size_t ncap;
	char *n;
	int w;

	if (o->err)
		return;
	for (;;) {
		va_start(ap, fmt);
		w = vsnprintf(o->buf + o->len, o->cap - o->len, fmt, ap);
		va_end(ap);
		if (w < 0) {
			o->err = LANG_E_ARG;
			return;
		}
		if ((size_t)w < o->cap - o->len) {
			o->len += w;
			return;
		}
		ncap = o->cap * 2 + w + 64;
		if (ncap > LANG_ARENA_MAX ||
		    (n = realloc(o->buf, ncap)) == NULL) {
			o->err = LANG_E_NOMEM;
			return;
		}
		o->buf = n;
		o->cap = ncap;
	}
}

static void
comments(struct out *o, const struct lang_comments *c, const char *indent)
{
	size_t i;

	for (i = 0; i < c->n; i++)
		put(o, "%s#%s\n", indent, c->v[i]);
}

static void
endline(struct out *o, const char *trailer)
{
	if (trailer != NULL)
		put(o, " #%s", trailer);
	put(o, "\n");
}

static const char *
period_name(uint64_t ms)
{
	switch (ms) {
	case 1000:
		return "s";
	case 60000:
		return "min";
	case 3600000:
		return "h";
	default:
		return "day";
	}
}

static void
stmt(struct out *o, const struct lang_stmt *s)
{
	char b[64];
	size_t i;

	put(o, "%s", lang_stmt_name(s->kind));
	switch (s->kind) {
	case LANG_S_ALLOW:
	case LANG_S_DENY:
		for (i = 0; i < s->nitems; i++)
			put(o, "%s %s", i ? "," : "",
			    cap_name(s->items[i].cap));
		break;
	case LANG_S_RATE:
		put(o, " %s %llu/%s",
		    s->which == LANG_RATE_READ ? "read" : "write",
		    (unsigned long long)s->value, period_name(s->period_ms));
		break;
	case LANG_S_CONCURRENT:
	case LANG_S_BUDGET:
	case LANG_S_SANDBOXES:
	case LANG_S_CONTEXTS:
	case LANG_S_PROCESSES:
		put(o, " %llu", (unsigned long long)s->value);
		break;
	case LANG_S_COST:
		put(o, " %s %llu", cap_name(s->which),
		    (unsigned long long)s->value);
		break;
	case LANG_S_MEMORY:
	case LANG_S_OUTPUT:
	case LANG_S_SNAPSHOTS:
	case LANG_S_EGRESS_BYTES:
		units_format_size(b, sizeof(b), s->value);
		put(o, " %s", b);
		break;
	case LANG_S_EGRESS_BUDGET:
		units_format_size(b, sizeof(b), s->value);
		put(o, " %s/%s", b, period_name(s->period_ms));
		break;
	case LANG_S_TIMEOUT:
	case LANG_S_PAUSE:
		units_format_duration(b, sizeof(b), s->value);
		put(o, " %s", b);
		break;
	case LANG_S_EXEC:
	case LANG_S_SECRET:
		for (i = 0; i < s->nitems; i++)
			put(o, "%s \"%s\"", i ? "," : "", s->items[i].str);
		break;
	case LANG_S_EGRESS:
		for (i = 0; i < s->nitems; i++) {
			const struct lang_item *it = &s->items[i];
			put(o, "%s \"%s\":", i ? "," : "", it->str);
			if (it->port == 0)
				put(o, "*");
			else
				put(o, "%u", it->port);
			if (it->http)
				put(o, " http");
			if (it->private_)
				put(o, " private");
			if (it->udp)
				put(o, " udp");
			if (it->inject_secret != NULL)
				put(o, " inject \"%s\" as \"%s\"",
				    it->inject_secret, it->inject_header);
		}
		break;
	case LANG_S_ISOLATION:
		put(o, " %s", s->value == LANG_ISO_KVM ? "kvm" : "any");
		break;
	case LANG_S_EXPOSE:
		for (i = 0; i < s->nitems; i++) {
			if (s->items[i].port == 0)
				put(o, "%s *", i ? "," : "");
			else
				put(o, "%s %u", i ? "," : "", s->items[i].port);
			if (s->items[i].port_last > s->items[i].port)
				put(o, "-%u", s->items[i].port_last);
			if (s->items[i].link)
				put(o, " link");
			if (s->items[i].link_ms != 0) {
				char d[32];

				units_format_duration(
				    d, sizeof(d), s->items[i].link_ms);
				put(o, " %s", d);
			}
		}
		break;
	case LANG_S_LOCK:
		put(o, " writes");
		break;
	}
}

static void
parents(struct out *o, const struct lang_decl *d)
{
	size_t i;

	for (i = 0; i < d->nparents; i++)
		put(o, "%s%s", i ? ", " : " : ", d->parents[i].name);
}

static void
decl(struct out *o, const struct lang_decl *d)
{
	const struct lang_stmt *s;
	const struct lang_expect *e;

	comments(o, &d->before, "");
	switch (d->kind) {
	case LANG_D_ROLE:
	case LANG_D_AGENT:
		if (d->kind == LANG_D_ROLE)
			put(o, "role %s", d->name);
		else
			put(o, "agent \"%s\"", d->name);
		parents(o, d);
		if (!d->has_body) {
			endline(o, d->trailer);
			return;
		}
		put(o, " {");
		endline(o, d->trailer);
		for (s = d->stmts; s != NULL; s = s->next) {
			comments(o, &s->before, "\t");
			put(o, "\t");
			stmt(o, s);
			endline(o, s->trailer);
		}
		comments(o, &d->end, "\t");
		put(o, "}\n");
		break;
	case LANG_D_DENY:
		stmt(o, d->stmts);
		if (d->for_kind == LANG_FOR_ALL)
			put(o, " for all");
		else if (d->for_kind == LANG_FOR_AGENT)
			put(o, " for agent \"%s\"", d->for_ref.name);
		else
			put(o, " for role %s", d->for_ref.name);
		endline(o, d->trailer);
		break;
	case LANG_D_TEST:
		put(o, "test \"%s\" {", d->name);
		endline(o, d->trailer);
		for (e = d->expects; e != NULL; e = e->next) {
			comments(o, &e->before, "\t");
			put(o, "\texpect %s agent \"%s\" %s",
			    e->allow ? "allow" : "deny", e->principal,
			    cap_name(e->cap));
			if (e->target != NULL)
				put(o, " \"%s\"", e->target);
			if (e->has_port)
				put(o, ":%u", e->port);
			endline(o, e->trailer);
		}
		comments(o, &d->end, "\t");
		put(o, "}\n");
		break;
	}
}

/* One-line declarations of one kind stay together; blocks stand apart. */
static int
one_line(const struct lang_decl *d)
{
	return d->kind == LANG_D_DENY ||
	    (d->kind == LANG_D_AGENT && !d->has_body);
}

int
lang_print_alloc(const struct lang_file *f, char **outp, size_t *outlen)
{
	const struct lang_decl *d, *prev = NULL;
	struct out o = { NULL, 0, 0, 0 };

	if (f == NULL || outp == NULL)
		return LANG_E_ARG;
	if ((o.buf = malloc(256)) == NULL)
		return LANG_E_NOMEM;
	o.cap = 256;
	o.buf[0] = '\0';
	for (d = f->decls; d != NULL; d = d->next) {
		if (prev != NULL &&
		    !(one_line(prev) && one_line(d) && prev->kind == d->kind &&
		        d->before.n == 0))
			put(&o, "\n");
		decl(&o, d);
		prev = d;
	}
	if (f->end.n > 0 && prev != NULL)
		put(&o, "\n");
	comments(&o, &f->end, "");
	if (o.err) {
		free(o.buf);
		return o.err;
	}
	*outp = o.buf;
	if (outlen != NULL)
		*outlen = o.len;
	return LANG_OK;
}
