/*
 * keepd.yaml parser. The schema is one table (fields[]): section, key,
 * kind, offset into struct keepd_config and range. libyaml's document
 * loader gives every node its line and column; everything is checked
 * against the table, and every error is kept (up to CONFIG_ERRORS_MAX) so
 * an operator sees them all at once.
 */
#include <sys/stat.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <yaml.h>

#include "host/config.h"
#include "host/vmm/vmm.h"
#include "lib/fdio.h"
#include "lib/log.h"
#include "lib/units.h"

enum kind {
	K_STR, /* a non-empty string */
	K_PATH, /* a file or directory name */
	K_ADDR, /* an IPv4 or IPv6 literal */
	K_USER, /* a user name */
	K_NODE, /* a node name: [a-z0-9]{1,16} */
	K_UINT, /* a decimal integer in [min, max] */
	K_SIZE, /* "128M" in [min, max] bytes */
	K_DUR, /* "30s" in [min, max] ms */
	K_KEYS, /* a list of PASERK k4.public strings or file names */
	K_PLATFORM, /* auto, kvm or trap (host/vmm/vmm.h) */
	K_DOMAIN /* a DNS name, config_valid_domain */
};

struct field {
	const char *section; /* NULL: top level */
	const char *key;
	enum kind kind;
	size_t off;
	size_t size; /* bytes of the member (strings, integers) */
	uint64_t min, max;
	size_t count_off; /* K_KEYS: offset of the count */
};

#define F(sec, key, kind, member, min, max)                                    \
	{                                                                      \
		sec, key, kind, offsetof(struct keepd_config, member),         \
		    sizeof(((struct keepd_config *)0)->member), min, max, 0    \
	}
#define FK(sec, key, member, count)                                            \
	{                                                                      \
		sec, key, K_KEYS, offsetof(struct keepd_config, member),       \
		    sizeof(((struct keepd_config *)0)->member), 0, 0,          \
		    offsetof(struct keepd_config, count)                       \
	}

#define KIB 1024ULL
#define MIB (1024ULL * KIB)
#define GIB (1024ULL * MIB)
#define SEC 1000ULL
#define MIN (60 * SEC)
#define HOUR (60 * MIN)
#define DAY (24 * HOUR)

static const struct field fields[] = {
	F("listen", "address", K_ADDR, listen_address, 0, 0),
	F("listen", "port", K_UINT, listen_port, 1, 65535),
	F("tls", "cert", K_PATH, tls_cert, 0, 0),
	F("tls", "key", K_PATH, tls_key, 0, 0),
	F(NULL, "state_dir", K_PATH, state_dir, 0, 0),
	F(NULL, "policy_dir", K_PATH, policy_dir, 0, 0),
	F(NULL, "user", K_USER, user, 0, 0),
	F(NULL, "node", K_NODE, node, 0, 0),
	F("ports", "domain", K_DOMAIN, ports_domain, 0, 0),
	F(NULL, "platform", K_PLATFORM, platform, 0, 0),
	F(NULL, "secrets_key_file", K_PATH, secrets_key_file, 0, 0),
	FK("tokens", "issuer_keys", issuer_keys, nissuer_keys),
	F("tokens", "max_ttl", K_DUR, token_max_ttl_ms, SEC, 365 * DAY),
	F("tokens", "clock_skew", K_DUR, token_clock_skew_ms, 0, 10 * MIN),
	FK("images", "trusted_keys", image_keys, nimage_keys),
	F("limits", "max_connections", K_UINT, max_connections, 1, 1000000),
	F("limits", "max_sandboxes", K_UINT, max_sandboxes, 1, 100000),
	F("limits", "max_request_body", K_SIZE, max_request_body, 1 * KIB,
	    1 * GIB),
	F("limits", "memory_default", K_SIZE, memory_default, 1 * MIB,
	    64 * GIB),
	F("limits", "memory_max", K_SIZE, memory_max, 1 * MIB, 64 * GIB),
	F("limits", "timeout_default", K_DUR, timeout_default_ms, 1, DAY),
	F("limits", "timeout_max", K_DUR, timeout_max_ms, 1, DAY),
	F("limits", "output_max", K_SIZE, output_max, 1 * KIB, 16 * GIB),
	F("limits", "workspace_max", K_SIZE, workspace_max, 1 * KIB,
	    1024 * GIB),
	F("limits", "store_reserve", K_SIZE, store_reserve, 0, 64 * GIB),
	F("limits", "max_files", K_UINT, max_files, 16, 65536),
	F("limits", "max_connections_per_client", K_UINT,
	    max_connections_per_client, 1, 1000000),
	F("limits", "unauthenticated_timeout", K_DUR,
	    unauthenticated_timeout_ms, 100, HOUR),
	F("limits", "max_replies_pending", K_SIZE, max_replies_pending, 1 * MIB,
	    64 * GIB),
	F("limits", "process_memory", K_SIZE, process_memory, 16 * MIB,
	    1024 * GIB),
	F("limits", "restart_backoff_max", K_DUR, restart_backoff_max_ms, 100,
	    HOUR),
	F("guest", "ca_file", K_PATH, guest_ca_file, 0, 0),
	F("egress", "ca_file", K_PATH, egress_ca_file, 0, 0),
	F("egress", "hosts_file", K_PATH, egress_hosts_file, 0, 0),
	F("egress", "webhook_key_file", K_PATH, egress_webhook_key_file, 0, 0),
	F("egress", "resolv_conf", K_PATH, egress_resolv_conf, 0, 0),
	F("egress", "dns_port", K_UINT, egress_dns_port, 1, 65535),
	F("egress", "timeout", K_DUR, egress_timeout_ms, 100, 10 * MIN),
	F("egress", "connect_timeout", K_DUR, egress_connect_timeout_ms, 100,
	    10 * MIN),
	F("egress", "max_request", K_SIZE, egress_max_request, 1 * KIB,
	    16 * MIB),
	F("egress", "max_response", K_SIZE, egress_max_response, 1 * KIB,
	    64 * MIB),
	F("egress", "max_redirects", K_UINT, egress_max_redirects, 0, 20),
	F("egress", "max_concurrent", K_UINT, egress_max_concurrent, 1, 1000),
	F("egress", "webhook_attempts", K_UINT, egress_webhook_attempts, 1, 10),
	F("egress", "webhook_backoff", K_DUR, egress_webhook_backoff_ms, 10,
	    MIN),
};

static const char *const sections[] = { "listen", "tls", "tokens", "images",
	"limits", "egress", "ports", "guest" };

void
config_defaults(struct keepd_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	strlcpy(cfg->listen_address, "127.0.0.1", sizeof(cfg->listen_address));
	cfg->listen_port = 8421;
	strlcpy(cfg->state_dir, "/var/lib/keep", sizeof(cfg->state_dir));
	strlcpy(cfg->policy_dir, "/etc/keep/policy", sizeof(cfg->policy_dir));
	strlcpy(cfg->user, "_keep", sizeof(cfg->user));
	strlcpy(cfg->platform, "auto", sizeof(cfg->platform));
	cfg->token_max_ttl_ms = DAY;
	cfg->token_clock_skew_ms = 30 * SEC;
	cfg->max_connections = 1024;
	cfg->max_connections_per_client = 128;
	cfg->unauthenticated_timeout_ms = 10 * SEC;
	cfg->max_replies_pending = 256 * MIB;
	cfg->process_memory = 1 * GIB;
	cfg->max_sandboxes = 256;
	cfg->max_request_body = 16 * MIB;
	cfg->memory_default = 128 * MIB;
	cfg->memory_max = 1 * GIB;
	cfg->timeout_default_ms = 30 * SEC;
	cfg->timeout_max_ms = 10 * MIN;
	cfg->output_max = 16 * MIB;
	cfg->workspace_max = 1 * GIB;
	cfg->store_reserve = 64 * MIB;
	cfg->max_files = 1024;
	cfg->restart_backoff_max_ms = 30 * SEC;
	strlcpy(cfg->egress_resolv_conf, "/etc/resolv.conf",
	    sizeof(cfg->egress_resolv_conf));
	cfg->egress_dns_port = 53;
	cfg->egress_timeout_ms = 30 * SEC;
	cfg->egress_connect_timeout_ms = 10 * SEC;
	cfg->egress_max_request = 1 * MIB;
	cfg->egress_max_response = 8 * MIB;
	cfg->egress_max_redirects = 5;
	cfg->egress_max_concurrent = 4;
	cfg->egress_webhook_attempts = 5;
	cfg->egress_webhook_backoff_ms = 1 * SEC;
}

struct pctx {
	const char *name;
	yaml_document_t *doc;
	struct keepd_config *cfg;
	struct config_diag *diag;
	/* Where each field was set, for errors that span fields. */
	const yaml_mark_t *where[nitems(fields)];
};

static void KEEP_PRINTF(3, 4)
    diag_add(struct pctx *p, const yaml_mark_t *mark, const char *fmt, ...)
{
	char msg[320];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (p->diag->nerrors < CONFIG_ERRORS_MAX)
		snprintf(p->diag->errors[p->diag->nerrors], CONFIG_ERROR_LEN,
		    "%s:%zu:%zu: error: %s", p->name, mark->line + 1,
		    mark->column + 1, msg);
	p->diag->nerrors++;
}

/* A scalar's text, escaped for a diagnostic. */
static const char *
scalar_esc(const yaml_node_t *n, char *buf, size_t len)
{
	return log_escape(
	    buf, len, n->data.scalar.value, n->data.scalar.length);
}

static int
is_plain_digits(const yaml_node_t *n)
{
	size_t i;

	if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE ||
	    n->data.scalar.length == 0 || n->data.scalar.length > 20)
		return 0;
	for (i = 0; i < n->data.scalar.length; i++)
		if (n->data.scalar.value[i] < '0' ||
		    n->data.scalar.value[i] > '9')
			return 0;
	return 1;
}

/* Copy a scalar into dst (size bytes) if it has no NUL and fits. */
static int
get_string(struct pctx *p, const yaml_node_t *n, const char *key, char *dst,
    size_t size)
{
	const char *v = (const char *)n->data.scalar.value;
	size_t len = n->data.scalar.length;
	size_t i;

	if (len == 0) {
		diag_add(p, &n->start_mark, "%s: empty value", key);
		return -1;
	}
	if (len >= size) {
		diag_add(p, &n->start_mark, "%s: longer than %zu bytes", key,
		    size - 1);
		return -1;
	}
	for (i = 0; i < len; i++) {
		if ((unsigned char)v[i] < 0x20 || v[i] == 0x7f) {
			diag_add(p, &n->start_mark,
			    "%s: control character in value", key);
			return -1;
		}
	}
	memcpy(dst, v, len);
	dst[len] = '\0';
	return 0;
}

static int
valid_user(const char *s)
{
	size_t i;

	if (!(s[0] == '_' || (s[0] >= 'a' && s[0] <= 'z')))
		return 0;
	for (i = 1; s[i] != '\0'; i++)
		if (!(s[i] == '_' || s[i] == '-' ||
		        (s[i] >= 'a' && s[i] <= 'z') ||
		        (s[i] >= '0' && s[i] <= '9')))
			return 0;
	return 1;
}

int
config_valid_domain(const char *s)
{
	size_t i, label = 0, n = strnlen(s, CONFIG_DOMAIN_MAX + 1);

	if (n == 0 || n > CONFIG_DOMAIN_MAX)
		return 0;
	for (i = 0; i < n; i++) {
		char c = s[i];

		if (c == '.') {
			if (label == 0 || s[i - 1] == '-')
				return 0;
			label = 0;
			continue;
		}
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		        c == '-') ||
		    (c == '-' && label == 0) || ++label > 63)
			return 0;
	}
	return label > 0 && s[n - 1] != '-';
}

/* "k4.public." and 43 base64url characters (32 bytes), or a file name. */
static int
valid_key(const char *s)
{
	static const char prefix[] = "k4.public.";
	size_t i, n;

	if (s[0] == '/' || strncmp(s, "./", 2) == 0)
		return 1;
	if (strncmp(s, prefix, sizeof(prefix) - 1) != 0)
		return 0;
	s += sizeof(prefix) - 1;
	n = strlen(s);
	if (n != 43)
		return 0;
	for (i = 0; i < n; i++)
		if (!((s[i] >= 'A' && s[i] <= 'Z') ||
		        (s[i] >= 'a' && s[i] <= 'z') ||
		        (s[i] >= '0' && s[i] <= '9') || s[i] == '-' ||
		        s[i] == '_'))
			return 0;
	return 1;
}

static void
set_uint(void *dst, size_t size, uint64_t v)
{
	if (size == sizeof(uint16_t)) {
		uint16_t x = (uint16_t)v;
		memcpy(dst, &x, sizeof(x));
	} else if (size == sizeof(uint32_t)) {
		uint32_t x = (uint32_t)v;
		memcpy(dst, &x, sizeof(x));
	} else {
		memcpy(dst, &v, sizeof(v));
	}
}

static void
parse_keys(struct pctx *p, const struct field *f, const yaml_node_t *n)
{
	char(*keys)[CONFIG_KEY_MAX] =
	    (char(*)[CONFIG_KEY_MAX])((char *)p->cfg + f->off);
	size_t *count = (size_t *)((char *)p->cfg + f->count_off);
	yaml_node_item_t *it;
	yaml_node_t *k;
	char esc[160];

	if (n->type != YAML_SEQUENCE_NODE) {
		diag_add(
		    p, &n->start_mark, "%s: expected a list of keys", f->key);
		return;
	}
	*count = 0;
	for (it = n->data.sequence.items.start; it < n->data.sequence.items.top;
	     it++) {
		k = yaml_document_get_node(p->doc, *it);
		if (k == NULL)
			continue;
		if (k->type != YAML_SCALAR_NODE) {
			diag_add(
			    p, &k->start_mark, "%s: expected a string", f->key);
			continue;
		}
		if (*count >= CONFIG_KEYS_MAX) {
			diag_add(p, &k->start_mark, "%s: more than %d keys",
			    f->key, CONFIG_KEYS_MAX);
			return;
		}
		if (get_string(p, k, f->key, keys[*count], CONFIG_KEY_MAX) != 0)
			continue;
		if (!valid_key(keys[*count])) {
			diag_add(p, &k->start_mark,
			    "%s: \"%s\" is neither a k4.public PASERK nor a "
			    "file name (absolute or ./)",
			    f->key, scalar_esc(k, esc, sizeof(esc)));
			continue;
		}
		(*count)++;
	}
}

static void
parse_field(struct pctx *p, const struct field *f, const yaml_node_t *n)
{
	char *dst = (char *)p->cfg + f->off;
	char esc[160], tmp[64];
	struct in6_addr a6;
	uint64_t v = 0;
	int rc = 0;

	if (f->kind == K_KEYS) {
		parse_keys(p, f, n);
		return;
	}
	if (n->type != YAML_SCALAR_NODE) {
		diag_add(p, &n->start_mark, "%s: expected a %s", f->key,
		    f->kind == K_UINT       ? "number"
		        : f->kind == K_SIZE ? "size like 128M"
		        : f->kind == K_DUR  ? "duration like 30s"
		                            : "string");
		return;
	}
	switch (f->kind) {
	case K_STR:
	case K_PATH:
		get_string(p, n, f->key, dst, f->size);
		return;
	case K_USER:
		if (get_string(p, n, f->key, dst, f->size) == 0 &&
		    !valid_user(dst))
			diag_add(p, &n->start_mark,
			    "%s: \"%s\" is not a user "
			    "name",
			    f->key, scalar_esc(n, esc, sizeof(esc)));
		return;
	case K_DOMAIN:
		if (get_string(p, n, f->key, dst, f->size) == 0 &&
		    !config_valid_domain(dst))
			diag_add(p, &n->start_mark,
			    "%s: \"%s\" is not a domain name (labels of a-z, "
			    "0-9 and -, lower case)",
			    f->key, scalar_esc(n, esc, sizeof(esc)));
		return;
	case K_PLATFORM:
		if (get_string(p, n, f->key, dst, f->size) == 0 &&
		    vmm_platform_parse(dst) < 0)
			diag_add(p, &n->start_mark,
			    "%s: \"%s\" is not a platform (auto, kvm or trap)",
			    f->key, scalar_esc(n, esc, sizeof(esc)));
		return;
	case K_NODE:
		if (get_string(p, n, f->key, dst, f->size) == 0 &&
		    (dst[0] == '\0' ||
		        strspn(dst, "abcdefghijklmnopqrstuvwxyz0123456789") !=
		            strlen(dst)))
			diag_add(p, &n->start_mark,
			    "%s: \"%s\" is not a node name (1 to 16 of a-z "
			    "0-9)",
			    f->key, scalar_esc(n, esc, sizeof(esc)));
		return;
	case K_ADDR:
		if (get_string(p, n, f->key, tmp, sizeof(tmp)) != 0)
			return;
		if (inet_pton(AF_INET, tmp, &a6) != 1 &&
		    inet_pton(AF_INET6, tmp, &a6) != 1) {
			diag_add(p, &n->start_mark,
			    "%s: \"%s\" is not an IPv4 or IPv6 address", f->key,
			    scalar_esc(n, esc, sizeof(esc)));
			return;
		}
		strlcpy(dst, tmp, f->size);
		return;
	case K_UINT:
		if (!is_plain_digits(n)) {
			diag_add(p, &n->start_mark,
			    "%s: expected a number, "
			    "not \"%s\"",
			    f->key, scalar_esc(n, esc, sizeof(esc)));
			return;
		}
		rc = units_parse_size((const char *)n->data.scalar.value,
		    n->data.scalar.length, &v);
		break;
	case K_SIZE:
		rc = units_parse_size((const char *)n->data.scalar.value,
		    n->data.scalar.length, &v);
		if (rc != 0) {
			diag_add(p, &n->start_mark,
			    "%s: expected a size like "
			    "128M, not \"%s\"",
			    f->key, scalar_esc(n, esc, sizeof(esc)));
			return;
		}
		break;
	case K_DUR:
		rc = units_parse_duration((const char *)n->data.scalar.value,
		    n->data.scalar.length, &v);
		if (rc != 0) {
			diag_add(p, &n->start_mark,
			    "%s: expected a duration "
			    "like 30s, not \"%s\"",
			    f->key, scalar_esc(n, esc, sizeof(esc)));
			return;
		}
		break;
	case K_KEYS:
		return;
	}
	if (rc != 0 || v < f->min || v > f->max) {
		char lo[32], hi[32];

		if (f->kind == K_DUR) {
			units_format_duration(lo, sizeof(lo), f->min);
			units_format_duration(hi, sizeof(hi), f->max);
		} else if (f->kind == K_SIZE) {
			units_format_size(lo, sizeof(lo), f->min);
			units_format_size(hi, sizeof(hi), f->max);
		} else {
			snprintf(
			    lo, sizeof(lo), "%llu", (unsigned long long)f->min);
			snprintf(
			    hi, sizeof(hi), "%llu", (unsigned long long)f->max);
		}
		diag_add(p, &n->start_mark, "%s: %s out of range [%s, %s]",
		    f->key, scalar_esc(n, esc, sizeof(esc)), lo, hi);
		return;
	}
	set_uint(dst, f->size, v);
}

static const struct field *
find_field(const char *section, const char *key)
{
	size_t i;

	for (i = 0; i < nitems(fields); i++) {
		if ((section == NULL) != (fields[i].section == NULL))
			continue;
		if (section != NULL && strcmp(section, fields[i].section) != 0)
			continue;
		if (strcmp(key, fields[i].key) == 0)
			return &fields[i];
	}
	return NULL;
}

static int
is_section(const char *key)
{
	size_t i;

	for (i = 0; i < nitems(sections); i++)
		if (strcmp(key, sections[i]) == 0)
			return 1;
	return 0;
}

/* Walk one mapping: top level (section NULL) or a section. */
static void
parse_map(struct pctx *p, const char *section, const yaml_node_t *map)
{
	const yaml_node_pair_t *pair, *q;
	const struct field *f;
	yaml_node_t *k, *v, *k2;
	char key[64], esc[160];

	if (map->type != YAML_MAPPING_NODE) {
		diag_add(p, &map->start_mark, "%s: expected a mapping",
		    section != NULL ? section : "configuration");
		return;
	}
	for (pair = map->data.mapping.pairs.start;
	     pair < map->data.mapping.pairs.top; pair++) {
		k = yaml_document_get_node(p->doc, pair->key);
		v = yaml_document_get_node(p->doc, pair->value);
		if (k == NULL || v == NULL)
			continue;
		if (k->type != YAML_SCALAR_NODE ||
		    k->data.scalar.length >= sizeof(key) ||
		    memchr(k->data.scalar.value, '\0', k->data.scalar.length) !=
		        NULL) {
			diag_add(p, &k->start_mark, "unknown key");
			continue;
		}
		memcpy(key, k->data.scalar.value, k->data.scalar.length);
		key[k->data.scalar.length] = '\0';
		/* Duplicate keys: YAML forbids them, libyaml does not check. */
		for (q = map->data.mapping.pairs.start; q < pair; q++) {
			k2 = yaml_document_get_node(p->doc, q->key);
			if (k2 != NULL && k2->type == YAML_SCALAR_NODE &&
			    k2->data.scalar.length == k->data.scalar.length &&
			    memcmp(k2->data.scalar.value, key,
			        k->data.scalar.length) == 0) {
				diag_add(p, &k->start_mark,
				    "duplicate key \"%s\"",
				    scalar_esc(k, esc, sizeof(esc)));
				break;
			}
		}
		if (q < pair)
			continue;
		if (section == NULL && is_section(key)) {
			parse_map(p, key, v);
			continue;
		}
		if ((f = find_field(section, key)) == NULL) {
			diag_add(p, &k->start_mark, "unknown key \"%s%s%s\"",
			    section != NULL ? section : "",
			    section != NULL ? "." : "",
			    scalar_esc(k, esc, sizeof(esc)));
			continue;
		}
		p->where[f - fields] = &k->start_mark;
		parse_field(p, f, v);
	}
}

/* Where section.key was set, else the fallback. */
static const yaml_mark_t *
mark_of(struct pctx *p, const char *section, const char *key,
    const yaml_mark_t *fallback)
{
	const struct field *f = find_field(section, key);

	if (f != NULL && p->where[f - fields] != NULL)
		return p->where[f - fields];
	return fallback;
}

/* Checks across keys, reported where the key was set. */
static void
check_cross(struct pctx *p, const yaml_mark_t *mark)
{
	struct keepd_config *c = p->cfg;

	if ((c->tls_cert[0] == '\0') != (c->tls_key[0] == '\0'))
		diag_add(p,
		    mark_of(p, "tls", c->tls_cert[0] ? "cert" : "key", mark),
		    "tls: cert and key go together");
	if (c->memory_default > c->memory_max)
		diag_add(p, mark_of(p, "limits", "memory_default", mark),
		    "memory_default exceeds memory_max");
	if (c->timeout_default_ms > c->timeout_max_ms)
		diag_add(p, mark_of(p, "limits", "timeout_default", mark),
		    "timeout_default exceeds timeout_max");
}

int
config_parse(const char *name, const char *text, size_t len,
    struct keepd_config *cfg, struct config_diag *diag)
{
	yaml_parser_t parser;
	yaml_document_t doc, doc2;
	yaml_node_t *root;
	yaml_mark_t start = { 0, 0, 0 };
	struct pctx p = { name, &doc, cfg, diag, { NULL } };

	memset(diag, 0, sizeof(*diag));
	config_defaults(cfg);
	if (!yaml_parser_initialize(&parser)) {
		diag_add(&p, &start, "out of memory");
		return CONFIG_ERR_INVALID;
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	if (!yaml_parser_load(&parser, &doc)) {
		diag_add(&p, &parser.problem_mark, "%s",
		    parser.problem != NULL ? parser.problem : "YAML error");
		yaml_parser_delete(&parser);
		return CONFIG_ERR_INVALID;
	}
	root = yaml_document_get_root_node(&doc);
	if (root != NULL) {
		parse_map(&p, NULL, root);
		/* A second document would be silently ignored. */
		if (!yaml_parser_load(&parser, &doc2)) {
			diag_add(&p, &parser.problem_mark, "%s",
			    parser.problem != NULL ? parser.problem
			                           : "YAML error");
		} else {
			if (yaml_document_get_root_node(&doc2) != NULL)
				diag_add(&p, &doc2.start_mark,
				    "more than one YAML document");
			yaml_document_delete(&doc2);
		}
		check_cross(&p, &root->start_mark);
	} else
		check_cross(&p, &start);
	yaml_document_delete(&doc);
	yaml_parser_delete(&parser);
	return diag->nerrors == 0 ? CONFIG_OK : CONFIG_ERR_INVALID;
}

int
config_load(
    const char *path, struct keepd_config *cfg, struct config_diag *diag)
{
	yaml_mark_t start = { 0, 0, 0 };
	struct pctx p = { path, NULL, cfg, diag, { NULL } };
	struct stat st;
	char *text;
	size_t off = 0;
	int fd, rc;

	memset(diag, 0, sizeof(*diag));
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		diag_add(&p, &start, "%s", strerror(errno));
		return CONFIG_ERR_IO;
	}
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) ||
	    st.st_size > CONFIG_FILE_MAX) {
		diag_add(&p, &start, "not a regular file of at most %d bytes",
		    CONFIG_FILE_MAX);
		close(fd);
		return CONFIG_ERR_IO;
	}
	if ((text = malloc((size_t)st.st_size + 1)) == NULL) {
		close(fd);
		diag_add(&p, &start, "out of memory");
		return CONFIG_ERR_IO;
	}
	off = read_all(fd, text, (size_t)st.st_size);
	close(fd);
	rc = config_parse(path, text, off, cfg, diag);
	free(text);
	return rc;
}
