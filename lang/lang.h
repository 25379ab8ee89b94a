/*
 * The policy language front end: lexer, recursive-descent parser, name
 * resolution and checks, canonical printer and diagnostics. A pure
 * library: text in, a tree or diagnostics out; no globals, no I/O.
 *
 * Use:
 *	struct lang_file *f;
 *	lang_parse(name, text, len, &f);	  syntax; f always set
 *	lang_check(f);				  names and warnings
 *	for each f->diags[i]: lang_diag_format(f, &f->diags[i], buf, n)
 *	lang_print(f, buf, n) or lang_print_alloc(f, &s)
 *	lang_free(f);
 *
 * Every node is allocated in the file's arena and freed with it. Strings
 * in the tree are NUL-terminated copies inside the arena.
 *
 * Errors: functions return LANG_OK or a LANG_E_* code (>= 3000, never an
 * errno); lang_strerror() names them. A file with syntax or check errors
 * has f->nerrors > 0 and must not be compiled.
 *
 * Caveats: the grammar is flat (blocks do not nest), so the nesting
 * limit that bounds recursion is the inheritance depth, LANG_DEPTH_MAX,
 * enforced by lang_check. Input is bounded by LANG_TEXT_MAX and the
 * arena by LANG_ARENA_MAX, so hostile text cannot use unbounded memory.
 */
#ifndef KEEP_LANG_H
#define KEEP_LANG_H

#include <stddef.h>
#include <stdint.h>

#include "lib/caps.h"

enum lang_err {
	LANG_OK = 0,
	LANG_E_SYNTAX = 3000, /* the text has errors (see diags) */
	LANG_E_NOMEM, /* allocation failed or arena limit reached */
	LANG_E_TOOBIG, /* text longer than LANG_TEXT_MAX */
	LANG_E_SPACE, /* output buffer too small */
	LANG_E_ARG /* bad argument */
};

const char *lang_strerror(int err);

#define LANG_TEXT_MAX (16u * 1024 * 1024)
#define LANG_ARENA_MAX (256u * 1024 * 1024)
#define LANG_DEPTH_MAX 32 /* role inheritance depth */
#define LANG_NAME_MAX 63 /* principal and role names, bytes */
#define LANG_STR_MAX 253 /* exec names, hosts, test names */
#define LANG_DIAG_MAX 100 /* further diagnostics are dropped */
#define LANG_MSG_MAX 160
/* Bound on the work of expanding inheritance for every agent (closure
 * sizes, statements and top-level denies summed over agents), so the
 * checker, compiler and reference evaluator finish in bounded time. */
#define LANG_WORK_MAX 50000000u

struct lang_loc {
	uint32_t line; /* from 1 */
	uint32_t col; /* from 1, in bytes */
};

enum lang_sev { LANG_WARNING = 1, LANG_ERROR = 2 };

struct lang_diag {
	enum lang_sev sev;
	struct lang_loc loc;
	char msg[LANG_MSG_MAX];
};

enum lang_stmt_kind {
	LANG_S_ALLOW = 1,
	LANG_S_DENY,
	LANG_S_RATE,
	LANG_S_CONCURRENT,
	LANG_S_BUDGET,
	LANG_S_COST,
	LANG_S_MEMORY,
	LANG_S_TIMEOUT,
	LANG_S_OUTPUT,
	LANG_S_EXEC,
	LANG_S_EGRESS,
	LANG_S_LOCK,
	LANG_S_SANDBOXES,
	LANG_S_CONTEXTS, /* live contexts at once (docs/contexts.md) */
	LANG_S_PAUSE, /* a context's idle time before it is paused */
	LANG_S_SNAPSHOTS, /* disk for contexts' journals and snapshots */
	LANG_S_PROCESSES, /* guest processes a run may have at once */
	LANG_S_SECRET, /* secrets it may inject (docs/secrets.md) */
	LANG_S_ISOLATION, /* the guest platform its runs need */
	LANG_S_EXPOSE, /* guest ports it may reach (docs/policy-language.md) */
	/* `egress bytes SIZE`: bytes out and in of a run's connections
	 * through egress (docs/egress.md) */
	LANG_S_EGRESS_BYTES,
	/* `egress budget SIZE/unit`: the same bytes of all the agent's
	 * runs together, refilled at SIZE per unit (value, period_ms) */
	LANG_S_EGRESS_BUDGET
};
/* The last kind: arrays indexed by kind have LANG_S_LAST + 1 entries.
 * A new kind goes before this line's and becomes it. */
#define LANG_S_LAST LANG_S_EGRESS_BUDGET

/* isolation's value (lang_stmt.value) */
enum lang_isolation { LANG_ISO_ANY = 0, LANG_ISO_KVM = 1 };

enum lang_rate_kind { LANG_RATE_READ = 0, LANG_RATE_WRITE = 1 };

/* One element of a list statement: a capability (allow, deny), an
 * executable name (exec) or a host and port (egress). Each element is
 * a rule with its own id, numbered from 1 in source order. */
struct lang_item {
	struct lang_loc loc;
	uint32_t rule;
	int cap; /* enum cap_id, -1 for exec, egress and secret items */
	char *str; /* exec name, egress host or secret name */
	uint16_t port; /* egress, expose: 0 = any port */
	uint16_t port_last; /* expose: a range's last port (port if none) */
	uint8_t http; /* egress: http allowed too */
	uint8_t private_; /* egress: private addresses allowed */
	/* expose: reachable by a signed link too, without a token; a
	 * link lasts at most link_ms (0: not written, LANG_LINK_MAX_MS). */
	uint8_t link;
	uint64_t link_ms;
	/* egress ... inject "SECRET" as "Header": the secret egress puts in
	 * place of the guest's placeholder in that request header (NULL
	 * when none; docs/egress.md, "Secrets injected at egress"). */
	char *inject_secret, *inject_header;
	uint8_t udp; /* egress: UDP allowed too */
	/* Set by lang_check: the rule matters for some agent. */
	uint8_t used;
};

/* expose ... link: a link's longest life when the rule names none, and
 * the longest any rule may name. */
#define LANG_LINK_DEFAULT_MS (24ull * 3600 * 1000)
#define LANG_LINK_MAX_MS (30ull * 24 * 3600 * 1000)

struct lang_comments {
	char **v;
	size_t n;
};

struct lang_stmt {
	enum lang_stmt_kind kind;
	struct lang_loc loc;
	struct lang_comments before;
	char *trailer; /* a comment on the same line, or NULL */
	struct lang_item *items; /* allow, deny, exec, egress */
	size_t nitems;
	int which; /* rate: enum lang_rate_kind; cost: enum cap_id */
	uint64_t value; /* count, bytes or ms */
	uint64_t period_ms; /* rate, egress budget */
	struct lang_stmt *next;
};

enum lang_decl_kind {
	LANG_D_ROLE = 1,
	LANG_D_AGENT,
	LANG_D_DENY, /* top level: deny CAPS for ... */
	LANG_D_TEST
};

enum lang_for { LANG_FOR_ALL = 1, LANG_FOR_AGENT, LANG_FOR_ROLE };

struct lang_ref {
	char *name;
	struct lang_loc loc;
	int idx; /* set by lang_check: index into f->decls, -1 unknown */
};

struct lang_expect {
	struct lang_loc loc;
	struct lang_comments before;
	char *trailer;
	int allow; /* expected decision */
	char *principal;
	int cap;
	char *target; /* NULL: none */
	uint16_t port;
	uint8_t has_port;
	struct lang_expect *next;
};

struct lang_decl {
	enum lang_decl_kind kind;
	struct lang_loc loc;
	struct lang_comments before;
	char *trailer;
	char *name; /* role name, agent name, test name */
	struct lang_ref *parents; /* role and agent */
	size_t nparents;
	int has_body; /* agent: written with braces */
	struct lang_stmt *stmts; /* role, agent; deny: its one statement */
	struct lang_comments end; /* comments before the closing brace */
	enum lang_for for_kind; /* deny */
	struct lang_ref for_ref; /* deny for agent/role */
	struct lang_expect *expects; /* test */
	struct lang_decl *next;
	/* Set by lang_check. */
	uint32_t index;
	uint8_t referenced;
};

struct lang_arena;

struct lang_file {
	struct lang_arena *arena;
	const char *name; /* for diagnostics */
	const char *text; /* the caller's text, not copied */
	size_t len;
	struct lang_decl *decls;
	struct lang_decl **byindex; /* set by lang_check */
	size_t ndecls;
	struct lang_comments end; /* comments after the last declaration */
	uint32_t nrules; /* rule ids are 1..nrules */
	struct lang_diag *diags;
	size_t ndiags;
	size_t nerrors;
	size_t nwarnings;
	int oom; /* the arena ran out: stop compiling */
	int checked;
};

/*
 * Parse len bytes of text (need not be NUL-terminated; a NUL byte is an
 * error). name labels diagnostics and must outlive the file; text must
 * too. *out is always set (even on errors, so diagnostics can be read)
 * unless the return is LANG_E_NOMEM or LANG_E_ARG. Returns LANG_OK,
 * LANG_E_SYNTAX, LANG_E_TOOBIG (*out holds one diagnostic) or
 * LANG_E_NOMEM.
 */
int lang_parse(
    const char *name, const char *text, size_t len, struct lang_file **out);

/*
 * Resolve names and run the checks: roles and agents defined once,
 * inheritance acyclic and at most LANG_DEPTH_MAX deep, limits in range;
 * warnings for unknown and unused roles, allows shadowed by a deny for
 * every agent they reach, denies that deny nothing, tests naming unknown
 * agents. Only call on a file that parsed without errors. Returns LANG_OK
 * or LANG_E_SYNTAX if any error was found.
 */
int lang_check(struct lang_file *f);

/*
 * Write "file:line:col: error|warning: message\n", the source line and a
 * caret line to buf (NUL-terminated, truncated to buflen). Returns the
 * length it wanted, as snprintf does.
 */
int lang_diag_format(const struct lang_file *f, const struct lang_diag *d,
    char *buf, size_t buflen);

/*
 * The canonical text of a parsed file (the formatter). Comments are kept.
 * lang_print_alloc returns a malloc'd NUL-terminated string in *out.
 * Returns LANG_OK, LANG_E_NOMEM or LANG_E_ARG.
 */
int lang_print_alloc(const struct lang_file *f, char **out, size_t *outlen);

void lang_free(struct lang_file *f);

/*
 * The one loader (lang/source.c), used by `keep policy` and by keepd: the
 * files paths[0..n) ("-": stdin) read in that order into one text
 * (*text malloc'd, NUL-terminated), each after a marker line
 * LANG_SOURCE_MARK NAME. At most LANG_TEXT_MAX bytes in all. Returns 0,
 * or -1 with err filled (unreadable, too large, or a file with a line of
 * its own that starts with the marker).
 */
#define LANG_SOURCE_MARK "#@file "
int lang_source_load(const char *const *paths, size_t n, char **text,
    size_t *len, char *err, size_t errlen);
/* The file (*name, *namelen, not NUL-terminated; NULL for a text without
 * markers) and the line in it of line of a loaded text. */
uint32_t lang_source_where(const char *text, size_t len, uint32_t line,
    const char **name, size_t *namelen);
/* "file:line:col" (or "file:line" when col is 0) of a position in a
 * loaded text; dflt names a text without markers. snprintf's return. */
int lang_source_format(const char *text, size_t len, const char *dflt,
    uint32_t line, uint32_t col, char *buf, size_t buflen);
/* Where each rule of a loaded text is, kept apart from the text (keepd's
 * policy process names a decision's rule as "file:line:col", the file's
 * base name). NULL on failure or a text that does not parse. */
struct lang_srcmap;
struct lang_srcmap *lang_srcmap_new(const char *text, size_t len);
/* snprintf's return, or -1 for an unknown rule. */
int lang_srcmap_rule(
    const struct lang_srcmap *, uint32_t rule, char *buf, size_t len);
void lang_srcmap_free(struct lang_srcmap *);

/* Look up a declaration by kind and name after lang_check; NULL if none. */
const struct lang_decl *lang_find(
    const struct lang_file *f, enum lang_decl_kind kind, const char *name);

/*
 * For the compiler and the reference evaluator, after lang_check: the
 * declarations an agent or role draws from, nearest first (itself, then
 * its parents breadth-first in the order written, each once), as indexes
 * into f->byindex. out has room for f->ndecls; mark is per-declaration
 * scratch and stamp a value not yet in it. Returns the count.
 */
size_t lang_closure(const struct lang_file *f, const struct lang_decl *d,
    uint32_t *out, uint32_t *mark, uint32_t stamp);

/* Whether a top-level deny applies to agent, whose closure was just
 * marked with stamp by lang_closure. */
int lang_deny_applies(const struct lang_decl *deny,
    const struct lang_decl *agent, const uint32_t *mark, uint32_t stamp);

/*
 * An egress endpoint's address literal or range (docs/policy-language.md,
 * "Egress allowlist"): "10.0.0.5" (bits 32), "10.1.0.0/16", "fd00::/8".
 * lang_addr_range_parse reads s[0..n): 1 and *r when it is one; 0 when
 * it is no address form at all (a host name: no '/' or ':', and not a
 * dotted quad); -1 when it looks like one but is not (a bad address, a
 * prefix length that is not 0 to 32 or 128 in plain digits, bits set past
 * the prefix, IPv4-mapped IPv6), with why saying so (why may be NULL).
 * lang_addr_range_has: whether addr (4 or 16 bytes, network order, of
 * family AF_INET or AF_INET6) lies in *r.
 */
struct lang_addr_range {
	int family; /* AF_INET or AF_INET6 */
	unsigned bits; /* prefix length; 32 or 128 for one address */
	uint8_t addr[16]; /* network order */
};
int lang_addr_range_parse(const char *s, size_t n, struct lang_addr_range *r,
    char *why, size_t whylen);
int lang_addr_range_has(
    const struct lang_addr_range *r, int family, const uint8_t *addr);

/* Name of a statement kind as written ("allow", "rate", ...). */
const char *lang_stmt_name(enum lang_stmt_kind k);

/* Internal to lang/: the arena. */
void *lang_alloc(struct lang_file *f, size_t size);
char *lang_strndup(struct lang_file *f, const char *s, size_t len);
void lang_diag(struct lang_file *f, enum lang_sev sev, struct lang_loc loc,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

#endif
