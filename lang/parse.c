/*
 * Lexer and hand-written recursive-descent parser for policy files.
 * The grammar (docs/policy-language.md) is flat: declarations at the top,
 * statements inside one level of braces. Keywords are contextual words.
 * After a syntax error the parser skips to the next line that starts a
 * statement or declaration, so one run reports every error it can.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lang/lang_int.h"
#include "lib/secret_ref.h"
#include "lib/units.h"

enum tok_type {
	T_EOF = 0,
	T_WORD,
	T_STRING,
	T_NUMBER,
	T_LBRACE,
	T_RBRACE,
	T_COLON,
	T_COMMA,
	T_SLASH,
	T_SEMI,
	T_STAR,
	T_DASH,
	T_BAD
};

struct tok {
	enum tok_type type;
	const char *s; /* for strings: the contents, without quotes */
	size_t len;
	struct lang_loc loc;
	size_t off, end; /* byte offsets of the whole token */
};

struct cmt {
	uint32_t line;
	int own_line; /* nothing but blanks before it on its line */
	char *text; /* after the '#', trailing blanks removed */
	struct cmt *next;
};

struct parser {
	struct lang_file *f;
	const char *text;
	size_t len, pos;
	uint32_t line, col;
	struct tok t; /* the current token */
	size_t prev_end; /* end offset of the previous token */
	uint32_t prev_line;
	struct cmt *cmts, **cmt_tail, *cmt_next; /* next not yet attached */
	uint32_t rule;
	int lexerr; /* lexer reported an error for the current token */
};

static const char *
tok_name(enum tok_type t)
{
	switch (t) {
	case T_EOF:
		return "end of file";
	case T_WORD:
		return "word";
	case T_STRING:
		return "string";
	case T_NUMBER:
		return "number";
	case T_LBRACE:
		return "'{'";
	case T_RBRACE:
		return "'}'";
	case T_COLON:
		return "':'";
	case T_COMMA:
		return "','";
	case T_SLASH:
		return "'/'";
	case T_SEMI:
		return "';'";
	case T_STAR:
		return "'*'";
	case T_DASH:
		return "'-'";
	case T_BAD:
		break;
	}
	return "invalid character";
}

static void
advance_char(struct parser *p)
{
	if (p->text[p->pos] == '\n') {
		p->line++;
		p->col = 1;
	} else
		p->col++;
	p->pos++;
}

static struct lang_loc
here(const struct parser *p)
{
	struct lang_loc l = { p->line, p->col };
	return l;
}

static void
add_comment(struct parser *p, size_t start, size_t end, int own_line)
{
	struct cmt *c;

	while (end > start &&
	    (p->text[end - 1] == ' ' || p->text[end - 1] == '\t' ||
	        p->text[end - 1] == '\r'))
		end--;
	if ((c = lang_alloc(p->f, sizeof(*c))) == NULL)
		return;
	c->line = p->line;
	c->own_line = own_line;
	if ((c->text = lang_strndup(p->f, p->text + start, end - start)) ==
	    NULL)
		return;
	*p->cmt_tail = c;
	p->cmt_tail = &c->next;
	if (p->cmt_next == NULL)
		p->cmt_next = c;
}

static int
word_char(int c)
{
	return isalnum(c) || c == '_' || c == '-';
}

/* Read the next token into p->t. */
static void
next(struct parser *p)
{
	const char *s = p->text;
	struct tok *t = &p->t;
	size_t start;
	int c, own_line;

	p->prev_end = t->end;
	p->prev_line = t->loc.line;
	p->lexerr = 0;
	for (;;) {
		if (p->pos >= p->len)
			break;
		c = (unsigned char)s[p->pos];
		if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
			advance_char(p);
			continue;
		}
		if (c == '#') {
			size_t b = p->pos;
			own_line = 1;
			while (b > 0 && s[b - 1] != '\n') {
				if (s[b - 1] != ' ' && s[b - 1] != '\t') {
					own_line = 0;
					break;
				}
				b--;
			}
			start = p->pos + 1;
			while (p->pos < p->len && s[p->pos] != '\n') {
				c = (unsigned char)s[p->pos];
				if (c == '\0' || (c < 0x20 && c != '\t') ||
				    c == 0x7f)
					break; /* \r ends it too: CRLF files */
				advance_char(p);
			}
			add_comment(p, start, p->pos, own_line);
			if (p->pos < p->len && s[p->pos] != '\n' &&
			    s[p->pos] != '\r')
				break; /* a control character: report it */
			continue;
		}
		break;
	}
	t->loc = here(p);
	t->off = p->pos;
	t->s = s + p->pos;
	t->len = 0;
	if (p->pos >= p->len) {
		t->type = T_EOF;
		t->end = p->pos;
		return;
	}
	c = (unsigned char)s[p->pos];
	if (isalpha(c) || c == '_') {
		while (p->pos < p->len && word_char((unsigned char)s[p->pos]))
			advance_char(p);
		t->type = T_WORD;
	} else if (isdigit(c)) {
		/* digits and a unit suffix: 128M, 30s, 500ms */
		while (p->pos < p->len && isalnum((unsigned char)s[p->pos]))
			advance_char(p);
		t->type = T_NUMBER;
	} else if (c == '"') {
		advance_char(p);
		t->s = s + p->pos;
		for (;;) {
			if (p->pos >= p->len || s[p->pos] == '\n') {
				lang_diag(p->f, LANG_ERROR, t->loc,
				    "unterminated string");
				p->lexerr = 1;
				t->type = T_BAD;
				t->len = s + p->pos - t->s;
				t->end = p->pos;
				return;
			}
			c = (unsigned char)s[p->pos];
			if (c == '"')
				break;
			if (c < 0x20 || c >= 0x7f || c == '\\') {
				lang_diag(p->f, LANG_ERROR, here(p),
				    "strings may hold printable ASCII "
				    "only, without backslashes");
				p->lexerr = 1;
			}
			advance_char(p);
		}
		t->len = s + p->pos - t->s;
		advance_char(p);
		t->type = p->lexerr ? T_BAD : T_STRING;
		t->end = p->pos;
		return;
	} else {
		switch (c) {
		case '{':
			t->type = T_LBRACE;
			break;
		case '}':
			t->type = T_RBRACE;
			break;
		case ':':
			t->type = T_COLON;
			break;
		case ',':
			t->type = T_COMMA;
			break;
		case '/':
			t->type = T_SLASH;
			break;
		case ';':
			t->type = T_SEMI;
			break;
		case '*':
			t->type = T_STAR;
			break;
		case '-':
			t->type = T_DASH;
			break;
		default:
			t->type = T_BAD;
			if (c >= 0x20 && c < 0x7f)
				lang_diag(p->f, LANG_ERROR, t->loc,
				    "unexpected character '%c'", c);
			else
				lang_diag(p->f, LANG_ERROR, t->loc,
				    "unexpected byte 0x%02x", c);
			p->lexerr = 1;
			break;
		}
		advance_char(p);
	}
	t->len = s + p->pos - t->s;
	t->end = p->pos;
}

static int
is_word(const struct parser *p, const char *w)
{
	return p->t.type == T_WORD && strlen(w) == p->t.len &&
	    memcmp(p->t.s, w, p->t.len) == 0;
}

/* Report "expected X, found Y" at the current token, once. */
static int
expected(struct parser *p, const char *what)
{
	if (p->lexerr)
		return -1;
	if (p->t.type == T_WORD || p->t.type == T_NUMBER)
		lang_diag(p->f, LANG_ERROR, p->t.loc,
		    "expected %s, found '%.*s'", what,
		    (int)(p->t.len > 40 ? 40 : p->t.len), p->t.s);
	else
		lang_diag(p->f, LANG_ERROR, p->t.loc, "expected %s, found %s",
		    what, tok_name(p->t.type));
	return -1;
}

static int
accept(struct parser *p, enum tok_type type)
{
	if (p->t.type != type)
		return 0;
	next(p);
	return 1;
}

/* Attach comments that start before line to a node. */
static void
take_comments(struct parser *p, uint32_t line, struct lang_comments *out)
{
	struct cmt *c;
	size_t n = 0, i;

	for (c = p->cmt_next; c != NULL && c->line < line; c = c->next)
		n++;
	if (n == 0)
		return;
	if ((out->v = lang_alloc(p->f, n * sizeof(char *))) == NULL)
		return;
	for (i = 0; i < n; i++) {
		out->v[i] = p->cmt_next->text;
		p->cmt_next = p->cmt_next->next;
	}
	out->n = n;
}

/* A comment that follows the last token on the same line. Lex ahead is
 * already done, so the comment (if any) is in the list. */
static char *
take_trailer(struct parser *p)
{
	struct cmt *c = p->cmt_next;

	if (c != NULL && !c->own_line && c->line == p->prev_line) {
		p->cmt_next = c->next;
		return c->text;
	}
	return NULL;
}

static char *
take_string(struct parser *p, const char *what, size_t max)
{
	char *s;

	if (p->t.type != T_STRING) {
		expected(p, what);
		return NULL;
	}
	if (p->t.len == 0) {
		lang_diag(p->f, LANG_ERROR, p->t.loc, "empty %s", what);
		return NULL;
	}
	if (p->t.len > max) {
		lang_diag(p->f, LANG_ERROR, p->t.loc,
		    "%s longer than %zu bytes", what, max);
		return NULL;
	}
	s = lang_strndup(p->f, p->t.s, p->t.len);
	next(p);
	return s;
}

static int
name_ok(const char *s)
{
	for (; *s != '\0'; s++)
		if (!isalnum((unsigned char)*s) && strchr("-_.@", *s) == NULL)
			return 0;
	return 1;
}

/* An agent name: a string of letters, digits and - _ . @ */
static char *
take_agent_name(struct parser *p)
{
	struct lang_loc loc = p->t.loc;
	char *s;

	if ((s = take_string(p, "agent name", LANG_NAME_MAX)) == NULL)
		return NULL;
	if (!name_ok(s)) {
		lang_diag(p->f, LANG_ERROR, loc,
		    "agent names hold letters, digits, '-', '_', '.' and "
		    "'@' only");
		return NULL;
	}
	return s;
}

static char *
take_role_name(struct parser *p)
{
	char *s;

	if (p->t.type != T_WORD) {
		expected(p, "role name");
		return NULL;
	}
	if (p->t.len > LANG_NAME_MAX) {
		lang_diag(p->f, LANG_ERROR, p->t.loc,
		    "role name longer than %d bytes", LANG_NAME_MAX);
		return NULL;
	}
	s = lang_strndup(p->f, p->t.s, p->t.len);
	next(p);
	return s;
}

/* A capability: a word, or word:word written without blanks. */
static int
take_cap(struct parser *p, struct lang_loc *loc)
{
	const char *start;
	size_t len;
	int id;

	*loc = p->t.loc;
	if (p->t.type != T_WORD)
		return expected(p, "capability");
	start = p->t.s;
	len = p->t.len;
	next(p);
	if (p->t.type == T_COLON && p->t.off == p->prev_end) {
		next(p);
		if (p->t.type != T_WORD || p->t.off != p->prev_end)
			return expected(p, "action after ':' (no blanks)");
		len = p->t.s + p->t.len - start;
		next(p);
	}
	if ((id = cap_lookup(start, len)) < 0) {
		lang_diag(p->f, LANG_ERROR, *loc, "unknown capability '%.*s'",
		    (int)(len > 40 ? 40 : len), start);
		return -1;
	}
	return id;
}

static int
take_number(struct parser *p, const char *what, uint64_t max, uint64_t *v)
{
	uint64_t n = 0;
	size_t i;

	if (p->t.type != T_NUMBER)
		return expected(p, what);
	for (i = 0; i < p->t.len; i++) {
		if (!isdigit((unsigned char)p->t.s[i]))
			goto bad;
		if (n > (max - (p->t.s[i] - '0')) / 10)
			goto big;
		n = n * 10 + (p->t.s[i] - '0');
	}
	*v = n;
	next(p);
	return 0;
bad:
	lang_diag(
	    p->f, LANG_ERROR, p->t.loc, "%s must be a plain number", what);
	return -1;
big:
	lang_diag(p->f, LANG_ERROR, p->t.loc, "%s larger than %llu", what,
	    (unsigned long long)max);
	return -1;
}

static struct lang_item *
grow_items(struct parser *p, struct lang_stmt *s, size_t *cap)
{
	struct lang_item *n;

	if (s->nitems == *cap) {
		*cap = *cap ? *cap * 2 : 4;
		if ((n = lang_alloc(p->f, *cap * sizeof(*n))) == NULL)
			return NULL;
		if (s->nitems)
			memcpy(n, s->items, s->nitems * sizeof(*n));
		s->items = n;
	}
	return &s->items[s->nitems++];
}

static int
parse_caps(struct parser *p, struct lang_stmt *s)
{
	struct lang_item *it;
	struct lang_loc loc;
	size_t cap = 0;
	int id;

	do {
		if ((id = take_cap(p, &loc)) < 0)
			return -1;
		if ((it = grow_items(p, s, &cap)) == NULL)
			return -1;
		it->loc = loc;
		it->cap = id;
		it->rule = ++p->rule;
	} while (accept(p, T_COMMA));
	return 0;
}

static int
parse_exec(struct parser *p, struct lang_stmt *s)
{
	struct lang_item *it;
	struct lang_loc loc;
	size_t cap = 0;
	char *name;

	do {
		loc = p->t.loc;
		if ((name = take_string(p, "executable name", 255)) == NULL)
			return -1;
		if (!lang_exec_name_ok(name)) {
			lang_diag(p->f, LANG_ERROR, loc,
			    "'%s' is not an executable name (no paths, blanks "
			    "or shell characters)",
			    name);
			return -1;
		}
		if ((it = grow_items(p, s, &cap)) == NULL)
			return -1;
		it->loc = loc;
		it->cap = -1;
		it->str = name;
		it->rule = ++p->rule;
	} while (accept(p, T_COMMA));
	return 0;
}

/* secret "name", ...: the secrets an agent may inject into a run's
 * environment; the names follow lib/secret_ref.h. */
static int
parse_secret(struct parser *p, struct lang_stmt *s)
{
	struct lang_item *it;
	struct lang_loc loc;
	size_t cap = 0;
	char *name;

	do {
		loc = p->t.loc;
		if ((name = take_string(p, "secret name", 255)) == NULL)
			return -1;
		if (!secret_name_ok(name, strlen(name))) {
			lang_diag(p->f, LANG_ERROR, loc,
			    "'%s' is not a secret name (1 to 63 letters, "
			    "digits, '-' or '_')",
			    name);
			return -1;
		}
		if ((it = grow_items(p, s, &cap)) == NULL)
			return -1;
		it->loc = loc;
		it->cap = -1;
		it->str = name;
		it->rule = ++p->rule;
	} while (accept(p, T_COMMA));
	return 0;
}

/* A port, 1 to 65535, or '*' for any (*out 0). */
static int
take_port(struct parser *p, struct lang_loc loc, uint16_t *out)
{
	uint64_t port;

	if (accept(p, T_STAR)) {
		*out = 0;
		return 0;
	}
	if (take_number(p, "port", 65535, &port) < 0)
		return -1;
	if (port == 0) {
		lang_diag(
		    p->f, LANG_ERROR, loc, "port 0; write '*' for any port");
		return -1;
	}
	*out = (uint16_t)port;
	return 0;
}

/* expose 8000, 3000-3999, *: the ports of its sandboxes' guests a
 * principal may reach through the API (docs/policy-language.md); a range
 * holds both its ends; '*' is any. "8000 link" lets the principal give
 * signed links to the port, "8000 link 2h" links that last at most 2h. */
static int
parse_expose(struct parser *p, struct lang_stmt *s)
{
	struct lang_item *it;
	struct lang_loc loc;
	size_t cap = 0;
	uint16_t port, last;

	do {
		loc = p->t.loc;
		if (take_port(p, loc, &port) < 0)
			return -1;
		last = port;
		if (port == 0 && p->t.type == T_DASH) {
			lang_diag(p->f, LANG_ERROR, p->t.loc,
			    "'*' is every port: no range starts at it");
			return -1;
		}
		if (port != 0 && accept(p, T_DASH)) {
			if (p->t.type == T_STAR) {
				lang_diag(p->f, LANG_ERROR, p->t.loc,
				    "a range ends at a port, not '*'");
				return -1;
			}
			if (take_port(p, p->t.loc, &last) < 0)
				return -1;
			if (last <= port) {
				lang_diag(p->f, LANG_ERROR, loc,
				    "range %u-%u: its end must be above its "
				    "start",
				    port, last);
				return -1;
			}
		}
		if ((it = grow_items(p, s, &cap)) == NULL)
			return -1;
		it->loc = loc;
		it->cap = -1;
		it->port = port;
		it->port_last = last;
		it->rule = ++p->rule;
		if (is_word(p, "link")) {
			it->link = 1;
			next(p);
			if (p->t.type == T_NUMBER) {
				struct lang_loc dloc = p->t.loc;

				if (units_parse_duration(
				        p->t.s, p->t.len, &it->link_ms) != 0) {
					lang_diag(p->f, LANG_ERROR, dloc,
					    "bad link lifetime '%.*s' (write "
					    "e.g. 1h, 30min, 7d)",
					    (int)(p->t.len > 40 ? 40
					                        : p->t.len),
					    p->t.s);
					return -1;
				}
				if (it->link_ms < 1000) {
					lang_diag(p->f, LANG_ERROR, dloc,
					    "a link lasts at least 1s");
					return -1;
				}
				if (it->link_ms > LANG_LINK_MAX_MS) {
					lang_diag(p->f, LANG_ERROR, dloc,
					    "a link lasts at most 30d");
					return -1;
				}
				next(p);
			}
		}
	} while (accept(p, T_COMMA));
	return 0;
}

/* An HTTP header name: an RFC 9110 token. */
static int
header_name_ok(const char *s)
{
	if (*s == '\0')
		return 0;
	for (; *s != '\0'; s++)
		if (!isalnum((unsigned char)*s) &&
		    strchr("!#$%&'*+-.^_`|~", *s) == NULL)
			return 0;
	return 1;
}

/*
 * After an egress endpoint: inject "SECRET" as "Header". Its own clause
 * (after the flags), so other endpoint words never meet it; not
 * `secret`, which would read as the next statement.
 */
static int
parse_inject(struct parser *p, struct lang_item *it)
{
	struct lang_loc loc;

	next(p); /* inject */
	loc = p->t.loc;
	if ((it->inject_secret = take_string(p, "secret name", 63)) == NULL)
		return -1;
	if (!secret_name_ok(it->inject_secret, strlen(it->inject_secret))) {
		lang_diag(p->f, LANG_ERROR, loc,
		    "'%s' is not a secret name (letters, digits, - and _)",
		    it->inject_secret);
		return -1;
	}
	if (!is_word(p, "as"))
		return expected(p, "'as' and a header name");
	next(p);
	loc = p->t.loc;
	if ((it->inject_header = take_string(p, "header name", 63)) == NULL)
		return -1;
	if (!header_name_ok(it->inject_header)) {
		lang_diag(p->f, LANG_ERROR, loc,
		    "'%s' is not an HTTP header name", it->inject_header);
		return -1;
	}
	/* Only over TLS that egress terminates: never into plain http,
	 * where anyone on the path would read the value. */
	if (it->http) {
		lang_diag(p->f, LANG_ERROR, loc,
		    "a secret is injected over https only: drop 'http'");
		return -1;
	}
	if (it->port == 0) {
		lang_diag(p->f, LANG_ERROR, loc,
		    "a secret is injected on one port: name it (\"%s\":443)",
		    it->str);
		return -1;
	}
	/* TLS to a name egress can issue a certificate for. */
	if (it->udp || strchr(it->str, '/') != NULL) {
		lang_diag(p->f, LANG_ERROR, loc,
		    "a secret is injected into TLS to a host name: not over "
		    "udp, not for an address range");
		return -1;
	}
	return 0;
}

/* An endpoint's host: a name, "*.suffix", an address or an address
 * range ("10.1.0.0/16"); 0 with a diagnostic that says what is wrong. */
static int
egress_host_ok(struct parser *p, struct lang_loc loc, const char *host)
{
	struct lang_addr_range r;
	char why[LANG_MSG_MAX];

	switch (
	    lang_addr_range_parse(host, strlen(host), &r, why, sizeof(why))) {
	case 1:
		return 1;
	case -1:
		lang_diag(p->f, LANG_ERROR, loc, "'%s': %s", host, why);
		return 0;
	}
	if (!lang_host_ok(host)) {
		lang_diag(p->f, LANG_ERROR, loc,
		    "'%s' is not a host name, IP address, address range or "
		    "'*.suffix'",
		    host);
		return 0;
	}
	return 1;
}

static int
parse_egress(struct parser *p, struct lang_stmt *s)
{
	struct lang_item *it;
	struct lang_loc loc;
	size_t cap = 0;
	char *host;
	size_t i;

	do {
		loc = p->t.loc;
		if ((host = take_string(p, "host", LANG_STR_MAX)) == NULL)
			return -1;
		for (i = 0; host[i] != '\0'; i++)
			host[i] = tolower((unsigned char)host[i]);
		if (!egress_host_ok(p, loc, host))
			return -1;
		if ((it = grow_items(p, s, &cap)) == NULL)
			return -1;
		it->loc = loc;
		it->cap = -1;
		it->str = host;
		it->port = 443;
		it->rule = ++p->rule;
		if (accept(p, T_COLON) && take_port(p, loc, &it->port) < 0)
			return -1;
		for (;;) {
			if (is_word(p, "http")) {
				it->http = 1;
				next(p);
			} else if (is_word(p, "private")) {
				it->private_ = 1;
				next(p);
			} else if (is_word(p, "udp")) {
				it->udp = 1;
				next(p);
			} else
				break;
		}
		if (is_word(p, "inject") && parse_inject(p, it) < 0)
			return -1;
	} while (accept(p, T_COMMA));
	return 0;
}

/* After N: '/' and a unit (s, sec, second, min, minute, h, hour, day)
 * into s->period_ms; eg is the example an error shows. */
static int
take_period(struct parser *p, struct lang_stmt *s, const char *eg)
{
	static const struct {
		const char *w;
		uint64_t ms;
	} units[] = { { "s", 1000 }, { "sec", 1000 }, { "second", 1000 },
		{ "min", 60000 }, { "minute", 60000 }, { "h", 3600000 },
		{ "hour", 3600000 }, { "day", 86400000 } };
	size_t i;

	if (!accept(p, T_SLASH))
		return expected(p, eg);
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (is_word(p, units[i].w)) {
			s->period_ms = units[i].ms;
			next(p);
			return 0;
		}
	return expected(p, "s, min, h or day");
}

/* N/unit */
static int
parse_rate(struct parser *p, struct lang_stmt *s)
{
	if (is_word(p, "read"))
		s->which = LANG_RATE_READ;
	else if (is_word(p, "write"))
		s->which = LANG_RATE_WRITE;
	else
		return expected(p, "'read' or 'write'");
	next(p);
	if (take_number(p, "rate", 1000000, &s->value) < 0)
		return -1;
	if (s->value == 0) {
		lang_diag(p->f, LANG_ERROR, s->loc,
		    "a rate of 0; use deny to forbid");
		return -1;
	}
	return take_period(p, s, "'/' and a unit (100/min)");
}

static int
parse_unit(struct parser *p, struct lang_stmt *s, int duration)
{
	const char *what = duration ? "duration" : "size";
	const char *eg = duration ? "30s, 500ms, 2h" : "128M, 64K, 1G";
	int rc;

	if (p->t.type != T_NUMBER)
		return expected(
		    p, duration ? "a duration (30s)" : "a size (128M)");
	rc = duration ? units_parse_duration(p->t.s, p->t.len, &s->value)
	              : units_parse_size(p->t.s, p->t.len, &s->value);
	if (rc != 0) {
		lang_diag(p->f, LANG_ERROR, p->t.loc,
		    "bad %s '%.*s' (write e.g. %s)", what,
		    (int)(p->t.len > 40 ? 40 : p->t.len), p->t.s, eg);
		return -1;
	}
	if (s->value == 0) {
		lang_diag(p->f, LANG_ERROR, p->t.loc, "%s of 0", what);
		return -1;
	}
	next(p);
	return 0;
}

static const char *const stmt_names[] = {
	[LANG_S_ALLOW] = "allow",
	[LANG_S_DENY] = "deny",
	[LANG_S_RATE] = "rate",
	[LANG_S_CONCURRENT] = "concurrent",
	[LANG_S_BUDGET] = "budget",
	[LANG_S_COST] = "cost",
	[LANG_S_MEMORY] = "memory",
	[LANG_S_TIMEOUT] = "timeout",
	[LANG_S_OUTPUT] = "output",
	[LANG_S_EXEC] = "exec",
	[LANG_S_EGRESS] = "egress",
	[LANG_S_LOCK] = "lock",
	[LANG_S_SANDBOXES] = "sandboxes",
	[LANG_S_CONTEXTS] = "contexts",
	[LANG_S_PAUSE] = "pause",
	[LANG_S_SNAPSHOTS] = "snapshots",
	[LANG_S_PROCESSES] = "processes",
	[LANG_S_SECRET] = "secret",
	[LANG_S_ISOLATION] = "isolation",
	[LANG_S_EXPOSE] = "expose",
	/* Never a word of its own: `egress` then `bytes` (stmt_body). */
	[LANG_S_EGRESS_BYTES] = "egress bytes",
	[LANG_S_EGRESS_BUDGET] = "egress budget",
};

const char *
lang_stmt_name(enum lang_stmt_kind k)
{
	if ((size_t)k < sizeof(stmt_names) / sizeof(stmt_names[0]) &&
	    stmt_names[k] != NULL)
		return stmt_names[k];
	return "?";
}

static int
stmt_body(struct parser *p, struct lang_stmt *s)
{
	uint64_t v;

	switch (s->kind) {
	case LANG_S_ALLOW:
	case LANG_S_DENY:
		return parse_caps(p, s);
	case LANG_S_RATE:
		return parse_rate(p, s);
	case LANG_S_CONCURRENT:
		if (take_number(p, "count", 1000000, &s->value) < 0)
			return -1;
		if (s->value == 0) {
			lang_diag(p->f, LANG_ERROR, s->loc,
			    "concurrent 0; use deny to forbid");
			return -1;
		}
		return 0;
	case LANG_S_BUDGET:
		return take_number(p, "budget", UINT64_C(1) << 62, &s->value);
	case LANG_S_SANDBOXES:
		if (take_number(p, "count", 100000, &s->value) < 0)
			return -1;
		if (s->value == 0) {
			lang_diag(p->f, LANG_ERROR, s->loc,
			    "sandboxes 0; use deny sandbox:write to forbid");
			return -1;
		}
		return 0;
	case LANG_S_CONTEXTS:
		if (take_number(p, "count", 1000, &s->value) < 0)
			return -1;
		if (s->value == 0) {
			lang_diag(p->f, LANG_ERROR, s->loc,
			    "contexts 0; without exec there are none");
			return -1;
		}
		return 0;
	case LANG_S_COST: {
		struct lang_loc loc;
		int id;
		if ((id = take_cap(p, &loc)) < 0)
			return -1;
		s->which = id;
		if (take_number(p, "cost", 1000000000, &v) < 0)
			return -1;
		s->value = v;
		return 0;
	}
	case LANG_S_MEMORY:
	case LANG_S_OUTPUT:
	case LANG_S_SNAPSHOTS:
		return parse_unit(p, s, 0);
	case LANG_S_TIMEOUT:
	case LANG_S_PAUSE:
		return parse_unit(p, s, 1);
	case LANG_S_EXEC:
		return parse_exec(p, s);
	case LANG_S_EGRESS:
		/* `egress bytes 100M` and `egress budget 10G/day`:
		 * endpoints are quoted strings, so a bare word after egress
		 * can only be one of these. */
		if (is_word(p, "bytes") || is_word(p, "budget")) {
			s->kind = is_word(p, "bytes") ? LANG_S_EGRESS_BYTES
			                              : LANG_S_EGRESS_BUDGET;
			next(p);
			if (parse_unit(p, s, 0) < 0 ||
			    (s->kind == LANG_S_EGRESS_BUDGET &&
			        take_period(p, s, "'/' and a unit (10G/day)") <
			            0))
				return -1;
			/* A grant carries it in KiB, in 32 bits. */
			if (s->value > (UINT64_C(1) << 42)) {
				lang_diag(p->f, LANG_ERROR, s->loc,
				    "%s larger than 4T",
				    lang_stmt_name(s->kind));
				return -1;
			}
			return 0;
		}
		return parse_egress(p, s);
	case LANG_S_EGRESS_BYTES:
	case LANG_S_EGRESS_BUDGET:
		return -1; /* never a statement's first word */
	case LANG_S_SECRET:
		return parse_secret(p, s);
	case LANG_S_EXPOSE:
		return parse_expose(p, s);
	case LANG_S_ISOLATION:
		if (is_word(p, "kvm"))
			s->value = LANG_ISO_KVM;
		else if (is_word(p, "any"))
			s->value = LANG_ISO_ANY;
		else if (p->t.type == T_WORD) {
			lang_diag(p->f, LANG_ERROR, p->t.loc,
			    "unknown isolation '%.*s' (write kvm or any)",
			    (int)(p->t.len > 40 ? 40 : p->t.len), p->t.s);
			return -1;
		} else
			return expected(p, "'kvm' or 'any'");
		next(p);
		return 0;
	case LANG_S_LOCK:
		if (!is_word(p, "writes"))
			return expected(p, "'writes'");
		next(p);
		return 0;
	case LANG_S_PROCESSES:
		if (take_number(p, "processes", 1024, &s->value) < 0)
			return -1;
		if (s->value == 0) {
			lang_diag(p->f, LANG_ERROR, s->loc,
			    "processes 0; a run needs its first process");
			return -1;
		}
		return 0;
	}
	return -1;
}

static enum lang_stmt_kind
stmt_kind(const struct parser *p)
{
	size_t i;

	if (p->t.type != T_WORD)
		return 0;
	for (i = 1; i < sizeof(stmt_names) / sizeof(stmt_names[0]); i++)
		if (is_word(p, stmt_names[i]))
			return i;
	return 0;
}

static int
is_decl_word(const struct parser *p)
{
	return is_word(p, "role") || is_word(p, "agent") ||
	    is_word(p, "deny") || is_word(p, "test");
}

/* Skip to a token that starts a new line (or a brace), to resume. */
static void
recover(struct parser *p, uint32_t line)
{
	while (p->t.type != T_EOF) {
		if (p->t.type == T_RBRACE || p->t.type == T_SEMI)
			return;
		if (p->t.loc.line > line && p->t.type == T_WORD && p->t.off > 0)
			return;
		next(p);
	}
}

/* Parse one statement at the current token; NULL on error. */
static struct lang_stmt *
parse_stmt(struct parser *p)
{
	struct lang_stmt *s;
	enum lang_stmt_kind k;

	if ((k = stmt_kind(p)) == 0) {
		expected(p,
		    "a statement (allow, deny, rate, concurrent, "
		    "budget, cost, memory, timeout, output, exec, "
		    "egress, lock, sandboxes, contexts, pause, snapshots, "
		    "processes, secret, isolation, expose)");
		return NULL;
	}
	if ((s = lang_alloc(p->f, sizeof(*s))) == NULL)
		return NULL;
	s->kind = k;
	s->loc = p->t.loc;
	take_comments(p, s->loc.line, &s->before);
	next(p);
	if (stmt_body(p, s) < 0)
		return NULL;
	accept(p, T_SEMI);
	s->trailer = take_trailer(p);
	return s;
}

/* '{' statements '}' */
static int
parse_block(struct parser *p, struct lang_decl *d)
{
	struct lang_stmt **tail = &d->stmts, *s;
	uint32_t line;

	if (!accept(p, T_LBRACE))
		return expected(p, "'{'");
	d->trailer = take_trailer(p);
	for (;;) {
		if (p->f->oom)
			return -1;
		if (p->t.type == T_RBRACE)
			break;
		if (p->t.type == T_EOF)
			return expected(p, "'}'");
		if (p->t.type == T_LBRACE) {
			lang_diag(
			    p->f, LANG_ERROR, p->t.loc, "blocks do not nest");
			next(p);
			continue;
		}
		line = p->t.loc.line;
		if ((s = parse_stmt(p)) == NULL) {
			if (is_decl_word(p) && !is_word(p, "deny") &&
			    p->t.loc.line > line)
				return -1; /* a missing '}' */
			if (p->t.loc.line == line)
				next(p);
			recover(p, line);
			accept(p, T_SEMI);
			continue;
		}
		*tail = s;
		tail = &s->next;
	}
	take_comments(p, p->t.loc.line + 1, &d->end);
	next(p);
	return 0;
}

static int
parse_parents(struct parser *p, struct lang_decl *d)
{
	size_t cap = 0;
	struct lang_ref *n;

	if (!accept(p, T_COLON))
		return 0;
	do {
		if (d->nparents == cap) {
			cap = cap ? cap * 2 : 4;
			if ((n = lang_alloc(p->f, cap * sizeof(*n))) == NULL)
				return -1;
			if (d->nparents)
				memcpy(n, d->parents, d->nparents * sizeof(*n));
			d->parents = n;
		}
		n = &d->parents[d->nparents];
		n->loc = p->t.loc;
		n->idx = -1;
		if ((n->name = take_role_name(p)) == NULL)
			return -1;
		d->nparents++;
	} while (accept(p, T_COMMA));
	return 0;
}

static int
parse_target(struct parser *p, char **target, uint16_t *port, uint8_t *has)
{
	uint64_t v;

	if (p->t.type != T_STRING)
		return 0;
	if ((*target = take_string(p, "target", LANG_STR_MAX)) == NULL)
		return -1;
	if (p->t.type == T_COLON && p->t.off == p->prev_end) {
		next(p);
		if (take_number(p, "port", 65535, &v) < 0)
			return -1;
		*port = v;
		*has = 1;
	}
	return 0;
}

static int
parse_test(struct parser *p, struct lang_decl *d)
{
	struct lang_expect **tail = &d->expects, *e;
	struct lang_loc loc;
	uint32_t line;
	int cap;

	if ((d->name = take_string(p, "test name", LANG_STR_MAX)) == NULL)
		return -1;
	if (!accept(p, T_LBRACE))
		return expected(p, "'{'");
	d->trailer = take_trailer(p);
	while (p->t.type != T_RBRACE) {
		if (p->t.type == T_EOF)
			return expected(p, "'}'");
		line = p->t.loc.line;
		if (!is_word(p, "expect")) {
			expected(p, "'expect'");
			goto skip;
		}
		if ((e = lang_alloc(p->f, sizeof(*e))) == NULL)
			return -1;
		e->loc = p->t.loc;
		take_comments(p, line, &e->before);
		next(p);
		if (is_word(p, "allow"))
			e->allow = 1;
		else if (!is_word(p, "deny")) {
			expected(p, "'allow' or 'deny'");
			goto skip;
		}
		next(p);
		if (!is_word(p, "agent")) {
			expected(p, "'agent'");
			goto skip;
		}
		next(p);
		if ((e->principal = take_agent_name(p)) == NULL)
			goto skip;
		if ((cap = take_cap(p, &loc)) < 0)
			goto skip;
		e->cap = cap;
		if (parse_target(p, &e->target, &e->port, &e->has_port) < 0)
			goto skip;
		accept(p, T_SEMI);
		e->trailer = take_trailer(p);
		*tail = e;
		tail = &e->next;
		continue;
	skip:
		if (p->f->oom)
			return -1;
		if (p->t.loc.line == line)
			next(p);
		recover(p, line);
		accept(p, T_SEMI);
	}
	take_comments(p, p->t.loc.line + 1, &d->end);
	next(p);
	return 0;
}

static int
parse_decl(struct parser *p, struct lang_decl *d)
{
	struct lang_stmt *s;

	d->loc = p->t.loc;
	take_comments(p, d->loc.line, &d->before);
	if (is_word(p, "role")) {
		d->kind = LANG_D_ROLE;
		next(p);
		if ((d->name = take_role_name(p)) == NULL ||
		    parse_parents(p, d) < 0)
			return -1;
		d->has_body = 1;
		return parse_block(p, d);
	}
	if (is_word(p, "agent")) {
		d->kind = LANG_D_AGENT;
		next(p);
		if ((d->name = take_agent_name(p)) == NULL ||
		    parse_parents(p, d) < 0)
			return -1;
		if (p->t.type != T_LBRACE) {
			accept(p, T_SEMI);
			d->trailer = take_trailer(p);
			return 0;
		}
		d->has_body = 1;
		return parse_block(p, d);
	}
	if (is_word(p, "deny")) {
		d->kind = LANG_D_DENY;
		if ((s = lang_alloc(p->f, sizeof(*s))) == NULL)
			return -1;
		s->kind = LANG_S_DENY;
		s->loc = p->t.loc;
		d->stmts = s;
		next(p);
		if (parse_caps(p, s) < 0)
			return -1;
		if (!is_word(p, "for"))
			return expected(p, "'for'");
		next(p);
		d->for_ref.idx = -1;
		d->for_ref.loc = p->t.loc;
		if (is_word(p, "all")) {
			d->for_kind = LANG_FOR_ALL;
			next(p);
		} else if (is_word(p, "agent")) {
			d->for_kind = LANG_FOR_AGENT;
			next(p);
			d->for_ref.loc = p->t.loc;
			if ((d->for_ref.name = take_agent_name(p)) == NULL)
				return -1;
		} else if (is_word(p, "role")) {
			d->for_kind = LANG_FOR_ROLE;
			next(p);
			d->for_ref.loc = p->t.loc;
			if ((d->for_ref.name = take_role_name(p)) == NULL)
				return -1;
		} else
			return expected(p, "'all', 'agent' or 'role'");
		accept(p, T_SEMI);
		d->trailer = take_trailer(p);
		return 0;
	}
	if (is_word(p, "test")) {
		d->kind = LANG_D_TEST;
		next(p);
		return parse_test(p, d);
	}
	return expected(p, "a declaration (role, agent, deny, test)");
}

static int
parse_file(struct parser *p)
{
	struct lang_decl **tail = &p->f->decls, *d;
	uint32_t line;

	while (p->t.type != T_EOF) {
		if (p->f->oom)
			return -1;
		if (p->f->nerrors >= LANG_DIAG_MAX)
			break;
		if ((d = lang_alloc(p->f, sizeof(*d))) == NULL)
			return -1;
		line = p->t.loc.line;
		if (parse_decl(p, d) < 0) {
			/* Resume at the next declaration word that starts a
			 * line, past any block we were in. */
			if (p->t.loc.line == line && p->t.type != T_EOF)
				next(p);
			while (p->t.type != T_EOF &&
			    !(is_decl_word(p) && p->t.loc.col == 1))
				next(p);
			continue;
		}
		*tail = d;
		tail = &d->next;
		p->f->ndecls++;
	}
	take_comments(p, UINT32_MAX, &p->f->end);
	return 0;
}

int
lang_parse(
    const char *name, const char *text, size_t len, struct lang_file **out)
{
	struct lang_file *f;
	struct parser p;
	struct lang_loc l1 = { 1, 1 };

	if (out == NULL || (text == NULL && len > 0))
		return LANG_E_ARG;
	*out = NULL;
	if ((f = calloc(1, sizeof(*f))) == NULL)
		return LANG_E_NOMEM;
	if ((f->arena = lang_arena_new()) == NULL) {
		free(f);
		return LANG_E_NOMEM;
	}
	f->name = name != NULL ? name : "<policy>";
	f->text = text != NULL ? text : "";
	f->len = len;
	*out = f;
	if (len > LANG_TEXT_MAX) {
		f->len = 0;
		lang_diag(f, LANG_ERROR, l1, "policy text larger than %u bytes",
		    LANG_TEXT_MAX);
		return LANG_E_TOOBIG;
	}
	memset(&p, 0, sizeof(p));
	p.f = f;
	p.text = f->text;
	p.len = len;
	p.line = 1;
	p.col = 1;
	p.cmt_tail = &p.cmts;
	next(&p);
	parse_file(&p);
	f->nrules = p.rule;
	if (f->oom) {
		lang_diag(
		    f, LANG_ERROR, p.t.loc, "policy too large: out of memory");
		return LANG_E_NOMEM;
	}
	return f->nerrors ? LANG_E_SYNTAX : LANG_OK;
}

void
lang_free(struct lang_file *f)
{
	if (f == NULL)
		return;
	lang_arena_free(f->arena);
	free(f);
}

int
lang_exec_name_ok(const char *s)
{
	if (*s == '\0' || *s == '-' || strcmp(s, ".") == 0 ||
	    strcmp(s, "..") == 0)
		return 0;
	for (; *s != '\0'; s++)
		if (!isalnum((unsigned char)*s) && strchr("-_.+", *s) == NULL)
			return 0;
	return 1;
}

/* A DNS name, "*.suffix", an IPv4 or an IPv6 literal (lower case). */
int
lang_host_ok(const char *s)
{
	size_t label = 0, n = 0;
	int colon = 0;

	if (strchr(s, ':') != NULL) {
		for (; *s != '\0'; s++) {
			if (*s == ':')
				colon++;
			else if (!isxdigit((unsigned char)*s) && *s != '.')
				return 0;
		}
		return colon >= 2;
	}
	if (s[0] == '*') {
		if (s[1] != '.' || s[2] == '\0')
			return 0;
		s += 2;
	}
	for (; *s != '\0'; s++, n++) {
		if (*s == '.') {
			if (label == 0 || s[-1] == '-')
				return 0;
			label = 0;
			continue;
		}
		if (!(islower((unsigned char)*s) ||
		        isdigit((unsigned char)*s) || (*s == '-' && label > 0)))
			return 0;
		if (++label > 63)
			return 0;
	}
	return label > 0 && s[-1] != '-';
}
