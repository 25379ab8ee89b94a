/*
 * Egress: policy-checked outbound HTTP(S) on libcurl, for guests and
 * webhooks. Used by the `keepd: egress` process (host/proc_egress.c).
 *
 * Order of checks for every request and every redirect hop, all before
 * a byte leaves the box:
 *   1. egress_url_parse: strict syntax, http/https only, no userinfo,
 *      ASCII only, canonical numeric hosts only.
 *   2. egress_allow_match: host and port against the allowlist, scheme
 *      against the rule (https only unless allow_http). No DNS yet.
 *   3. resolution, then egress_addr_classify on every address; one refused
 *      address refuses the request (unless the rule allows private).
 *   4. the connection is pinned to the checked address (CURLOPT_RESOLVE),
 *      and an opensocket callback refuses any other sockaddr.
 *
 * Errors: every function returns 0 or an EGRESS_E_* code (all > 5000, so
 * they never collide with errno values); egress_strerror() names them.
 *
 * Caveats: egress_fetch and egress_webhook_deliver block; the process glue
 * runs one at a time or uses egress_principal_acquire/release itself.
 * The service function allocates its reply; the caller frees it.
 */
#ifndef KEEP_EGRESS_H
#define KEEP_EGRESS_H

#include <sys/socket.h>

#include <stddef.h>
#include <stdint.h>

/* Error codes. They cross process boundaries in replies: append only.
 * Keep egress_strerror() in sync. */
enum {
	EGRESS_OK = 0,
	EGRESS_E_BASE = 5000,
	EGRESS_E_URL, /* malformed URL */
	EGRESS_E_SCHEME, /* scheme other than http/https */
	EGRESS_E_USERINFO, /* user:pass@ in the URL */
	EGRESS_E_HOST, /* malformed or non-ASCII host */
	EGRESS_E_PORT, /* malformed port */
	EGRESS_E_RULE, /* malformed allowlist rule */
	EGRESS_E_NOT_ALLOWED, /* host not on the allowlist */
	EGRESS_E_PORT_DENIED, /* host listed, but not on this port */
	EGRESS_E_HTTP_DENIED, /* http where the rule wants https */
	EGRESS_E_RESOLVE, /* name did not resolve */
	EGRESS_E_ADDR_DENIED, /* resolved to a refused address */
	EGRESS_E_METHOD, /* method not allowed */
	EGRESS_E_HEADER, /* malformed or forbidden request header */
	EGRESS_E_REQUEST_SIZE, /* request larger than allowed */
	EGRESS_E_RESPONSE_SIZE, /* response larger than allowed */
	EGRESS_E_TIMEOUT, /* total or connect time exceeded */
	EGRESS_E_CONNECT, /* could not connect */
	EGRESS_E_TLS, /* TLS handshake or verification failed */
	EGRESS_E_TRANSFER, /* other transfer failure */
	EGRESS_E_REDIRECT, /* too many redirects or bad Location */
	EGRESS_E_CONCURRENCY, /* principal has too many requests running */
	EGRESS_E_PIN, /* connection attempted to an unchecked addr */
	EGRESS_E_NOMEM, /* out of memory */
	EGRESS_E_MSG, /* malformed service message */
	EGRESS_E_WEBHOOK, /* webhook not delivered after all attempts */
	EGRESS_E_INTERNAL, /* libcurl set-up failed */
	EGRESS_E_LAST
};

const char *egress_strerror(int err);

/*
 * The negative errno a guest sees for err (host/egress/egress_abi.h):
 * 0, -EACCES, -EINVAL, -E2BIG, -EMSGSIZE, -ETIMEDOUT, -EAGAIN, -ENOMEM
 * or -EIO.
 */
int egress_errno(int err);

/* ---- URLs ---------------------------------------------------------- */

#define EGRESS_URL_MAX 2048 /* whole URL, bytes */
#define EGRESS_HOST_MAX 253 /* DNS name, without trailing dot */

enum egress_scheme { EGRESS_SCHEME_HTTP = 1, EGRESS_SCHEME_HTTPS = 2 };
enum egress_hostkind {
	EGRESS_HOST_NAME = 1,
	EGRESS_HOST_IPV4 = 2,
	EGRESS_HOST_IPV6 = 3
};

struct egress_url {
	enum egress_scheme scheme;
	enum egress_hostkind kind;
	/* lower case, no trailing dot; IPv6 without brackets */
	char host[EGRESS_HOST_MAX + 1];
	uint16_t port; /* explicit or the scheme default */
	char target[EGRESS_URL_MAX + 1]; /* path and query, starts with '/' */
};

/*
 * Parse len bytes of s (no NUL needed) into *out. The fragment is dropped.
 * Returns 0, EGRESS_E_URL, EGRESS_E_SCHEME, EGRESS_E_USERINFO,
 * EGRESS_E_HOST or EGRESS_E_PORT.
 */
int egress_url_parse(const char *s, size_t len, struct egress_url *out);

/*
 * Write the canonical form of u ("https://host[:port]/target", default
 * port left out) to buf. Returns 0 or EGRESS_E_URL when buflen is short.
 */
int egress_url_format(const struct egress_url *u, char *buf, size_t buflen);

/* ---- the allowlist ------------------------------------------------- */

/*
 * One allowlist entry, as the policy grants it. host is an exact host
 * name, an IP literal (IPv6 without brackets), or "*.suffix", which
 * matches any name with one or more labels before ".suffix" but not
 * "suffix" itself. Matching is case-insensitive; one trailing dot on
 * either side is ignored. port 0 means any port.
 */
struct egress_rule {
	char host[EGRESS_HOST_MAX + 3]; /* NUL-terminated */
	uint16_t port;
	uint8_t allow_http;
	uint8_t allow_private;
};

/* Returns 0 or EGRESS_E_RULE. */
int egress_rule_check(const struct egress_rule *r);

/*
 * Find the rule that lets u through. On success *which is its index.
 * Returns 0, EGRESS_E_NOT_ALLOWED, EGRESS_E_PORT_DENIED or
 * EGRESS_E_HTTP_DENIED (the most specific reason among the rules seen).
 */
int egress_allow_match(const struct egress_rule *rules, size_t nrules,
    const struct egress_url *u, size_t *which);

/* ---- addresses ----------------------------------------------------- */

enum egress_addr_class {
	EGRESS_ADDR_PUBLIC = 0,
	EGRESS_ADDR_UNSPECIFIED,
	EGRESS_ADDR_LOOPBACK,
	EGRESS_ADDR_PRIVATE, /* RFC 1918, fc00::/7, fec0::/10 */
	EGRESS_ADDR_LINKLOCAL, /* 169.254/16, fe80::/10 */
	EGRESS_ADDR_CGNAT, /* 100.64/10 */
	EGRESS_ADDR_MULTICAST,
	EGRESS_ADDR_BROADCAST,
	EGRESS_ADDR_DOCUMENTATION,
	EGRESS_ADDR_METADATA, /* cloud instance metadata endpoints */
	EGRESS_ADDR_RESERVED, /* anything else that is not global unicast */
	EGRESS_ADDR_CLASS_LAST
};

const char *egress_addr_class_name(int c);

/* Classify an AF_INET or AF_INET6 sockaddr; other families are RESERVED. */
enum egress_addr_class egress_addr_classify(
    const struct sockaddr *sa, socklen_t salen);

/*
 * May a connection go to an address of class c under rule r?
 * Unspecified, multicast and broadcast never; metadata only with
 * allow_private on an exact (non-wildcard) rule; the other non-public
 * classes with allow_private. Returns 0 or EGRESS_E_ADDR_DENIED.
 */
int egress_addr_permitted(
    enum egress_addr_class c, const struct egress_rule *r);

/*
 * The pin: 1 when a and b are the same family, address and port (the
 * opensocket callback refuses any connection for which this is 0).
 */
int egress_addr_equal(const struct sockaddr *a, socklen_t alen,
    const struct sockaddr *b, socklen_t blen);

/* 0 if m is one of GET HEAD POST PUT PATCH DELETE OPTIONS (exact
 * case), else EGRESS_E_METHOD. */
int egress_method_check(const char *m);

/* ---- limits, decisions, the context -------------------------------- */

struct egress_limits {
	uint64_t max_request; /* body + headers, bytes */
	uint64_t max_response; /* body, bytes; exceeded -> abort */
	uint64_t max_resp_headers; /* response header block, bytes */
	uint32_t timeout_ms; /* whole request incl. redirects */
	uint32_t connect_timeout_ms; /* each connection */
	uint16_t max_redirects; /* 0: a 3xx is returned, not followed */
	uint16_t max_concurrent; /* per principal; 0 = no limit */
};

/* A sane default for callers that do not get limits from the policy. */
void egress_limits_default(struct egress_limits *l);

#define EGRESS_ADDRSTR_MAX 46 /* INET6_ADDRSTRLEN */

/* What happened to one request: logged and written to the audit log. */
struct egress_decision {
	int allowed; /* 1 if the request was sent to the server */
	int error; /* 0 or EGRESS_E_*: why it was refused or failed */
	int rule; /* index of the deciding rule, -1 if none */
	int addr_class; /* class of the address refused or used; -1 none */
	char host[EGRESS_HOST_MAX + 1];
	uint16_t port;
	char addr[EGRESS_ADDRSTR_MAX]; /* the pinned address */
	long status; /* final HTTP status, 0 if none */
	uint64_t bytes_out; /* request body bytes sent */
	uint64_t bytes_in; /* response body bytes received */
	uint64_t elapsed_ms;
	unsigned redirects; /* hops followed */
	char detail[128]; /* libcurl's message, for the log only */
};

/* One line, "egress allow|deny host=... reason=..." (host escaped). */
void egress_decision_format(
    const struct egress_decision *d, char *buf, size_t buflen);

/*
 * Resolver: fill up to max addresses for host into out, set *n.
 * Returns 0 or EGRESS_E_RESOLVE. The default uses getaddrinfo(3).
 */
typedef int (*egress_resolve_fn)(void *arg, const char *host, uint16_t port,
    struct sockaddr_storage *out, size_t max, size_t *n);
typedef uint64_t (*egress_clock_fn)(void *arg); /* ms, monotonic */
typedef uint64_t (*egress_wallclock_fn)(void *arg); /* unix seconds */
typedef void (*egress_sleep_fn)(void *arg, uint64_t ms);

struct egress_ctx;

struct egress_config {
	/* CA bundle: a PEM blob (preferred once chrooted) or a path. */
	const void *ca_blob;
	size_t ca_blob_len;
	const char *ca_path;
	/* Injected for tests; NULL selects the system versions. */
	egress_resolve_fn resolve;
	egress_clock_fn clock;
	egress_wallclock_fn wallclock;
	egress_sleep_fn sleep;
	void *arg;
	/* Called while a transfer runs (at least once a second, from
	 * libcurl's progress callback), so a single-threaded caller can
	 * answer its supervisor's pings; NULL: none. Gets arg. */
	void (*tick)(void *arg);
};

/* Returns 0, EGRESS_E_NOMEM or EGRESS_E_INTERNAL. Copies the CA blob. */
int egress_ctx_new(const struct egress_config *cfg, struct egress_ctx **out);
void egress_ctx_free(struct egress_ctx *ctx);

/*
 * Count a request against principal; EGRESS_E_CONCURRENCY when max (if
 * not 0) are already running, EGRESS_E_NOMEM. Release exactly once.
 */
int egress_principal_acquire(
    struct egress_ctx *ctx, const char *principal, unsigned max);
void egress_principal_release(struct egress_ctx *ctx, const char *principal);
unsigned egress_principal_count(struct egress_ctx *ctx, const char *principal);

/* ---- fetch --------------------------------------------------------- */

struct egress_header {
	const char *name;
	const char *value;
};

struct egress_request {
	const char *principal;
	const char *method; /* GET HEAD POST PUT PATCH DELETE OPTIONS */
	const char *url;
	size_t url_len;
	const struct egress_header *headers;
	size_t nheaders;
	const void *body;
	size_t body_len;
	const struct egress_rule *rules;
	size_t nrules;
	struct egress_limits limits;
};

/* Both buffers are malloc'd, never NULL, and followed by a NUL byte that
 * is not counted in the length (the body may contain NULs itself). */
struct egress_response {
	long status;
	char *headers; /* raw header block of the final response */
	size_t headers_len;
	uint8_t *body;
	size_t body_len;
};

void egress_response_free(struct egress_response *r);

/*
 * Run one request: every check above, then the transfer. *d is always
 * filled in; *resp only when the return value is 0 (free it with
 * egress_response_free). Returns 0 (a response came back, whatever its
 * status) or the EGRESS_E_* code also stored in d->error.
 */
int egress_fetch(struct egress_ctx *ctx, const struct egress_request *req,
    struct egress_response *resp, struct egress_decision *d);

/* ---- webhooks ------------------------------------------------------ */

#define EGRESS_WEBHOOK_KEYBYTES 32
/*
 * Header "X-Keep-Signature: t=<unix seconds>,v1=<64 hex>" where v1 is
 * HMAC-SHA256(secret, "<t>.<body>"); also "X-Keep-Delivery: <id>".
 */
#define EGRESS_SIG_HEADER "X-Keep-Signature"
#define EGRESS_DELIVERY_HEADER "X-Keep-Delivery"

struct egress_webhook {
	const char *principal;
	const char *url;
	const char *delivery_id; /* [A-Za-z0-9_-]{1,64} */
	const char *body; /* JSON */
	size_t body_len;
	const uint8_t *secret; /* EGRESS_WEBHOOK_KEYBYTES */
	const struct egress_rule *rules;
	size_t nrules;
	struct egress_limits limits;
	unsigned max_attempts; /* 1..10 */
	uint32_t backoff_ms; /* first wait; doubles each time */
	uint32_t max_backoff_ms; /* cap on one wait */
};

/*
 * A sandbox's webhook secret, derived from a master key the parent holds
 * so no per-sandbox secret needs storing: HMAC-SHA256(master, "keep
 * webhook secret v1" NUL sandbox_id). The front hands it to the client
 * that created the sandbox. Returns 0 or EGRESS_E_MSG (id empty or over
 * 128 bytes).
 */
int egress_webhook_secret(
    const uint8_t *master, const char *sandbox_id, uint8_t *out);

/*
 * Compute the signature header value for body at time t into out
 * ("t=...,v1=..."). Returns 0 or EGRESS_E_INTERNAL if outlen is short.
 */
int egress_webhook_sign(const uint8_t *secret, uint64_t t, const void *body,
    size_t body_len, char *out, size_t outlen);

/*
 * Deliver: POST with Content-Type application/json and the signature.
 * 2xx is success. Retried after transport failures, 408, 429 and 5xx;
 * a policy refusal or another 4xx is final. *attempts counts tries; *d
 * describes the last one. Returns 0, the policy refusal, or
 * EGRESS_E_WEBHOOK.
 */
int egress_webhook_deliver(struct egress_ctx *ctx,
    const struct egress_webhook *wh, unsigned *attempts,
    struct egress_decision *d);

/* ---- the service (phase-2 process glue) ----------------------------
 *
 * The egress process receives these messages from the vmm (guest fetch)
 * and front (webhooks) after the framework has checked the sender and the
 * grant; the allowlist and limits travel inside the granted request.
 * Layout: a fixed header, then the variable parts in the order listed,
 * back to back, no padding. All integers in host byte order (both ends
 * are on this machine). Decoders require the total length to be exactly
 * the sum of the parts, every reserved field zero, every string free of
 * NUL bytes and every rule NUL-terminated and zero-padded.
 */
#ifndef MSG_EGRESS_FETCH
#define MSG_EGRESS_FETCH 0x0501 /* IN: egress_wire_fetch */
#define MSG_EGRESS_FETCH_REPLY 0x0502 /* OUT: egress_wire_reply */
#define MSG_EGRESS_WEBHOOK 0x0503 /* IN: egress_wire_webhook */
#define MSG_EGRESS_WEBHOOK_REPLY 0x0504 /* OUT: egress_wire_reply */
#endif

#define EGRESS_WIRE_VERSION 1
#define EGRESS_WIRE_MAX_RULES 256
#define EGRESS_WIRE_MAX_PRINCIPAL 128
#define EGRESS_WIRE_MAX_METHOD 16
#define EGRESS_WIRE_MAX_HEADERS 64
#define EGRESS_WIRE_MAX_BODY (16u << 20) /* request body */
#define EGRESS_WIRE_MAX_RESPONSE (64u << 20) /* limits.max_response cap */
#define EGRESS_WIRE_MAX_TIMEOUT_MS 600000u

struct egress_wire_rule {
	char host[EGRESS_HOST_MAX + 3]; /* NUL-terminated, zero-padded */
	uint16_t port;
	uint8_t allow_http; /* 0 or 1 */
	uint8_t allow_private; /* 0 or 1 */
	uint32_t reserved; /* 0 */
};

struct egress_wire_limits {
	uint64_t max_request;
	uint64_t max_response; /* <= EGRESS_WIRE_MAX_RESPONSE */
	uint64_t max_resp_headers;
	uint32_t timeout_ms; /* 1..EGRESS_WIRE_MAX_TIMEOUT_MS */
	uint32_t connect_timeout_ms;
	uint16_t max_redirects; /* <= 20 */
	uint16_t max_concurrent;
	uint32_t reserved; /* 0 */
};

/*
 * MSG_EGRESS_FETCH, then: rules[nrules], principal, method, url, the
 * header block (nheaders times: uint16 name_len, uint16 value_len, name,
 * value; headers_len bytes in all), body.
 */
struct egress_wire_fetch {
	uint32_t version; /* EGRESS_WIRE_VERSION */
	uint32_t nrules; /* 1..EGRESS_WIRE_MAX_RULES */
	uint32_t principal_len;
	uint32_t method_len;
	uint32_t url_len;
	uint32_t nheaders;
	uint32_t headers_len;
	uint32_t body_len;
	struct egress_wire_limits limits;
};

/* MSG_EGRESS_WEBHOOK, then: rules[nrules], principal, url, id, body. */
struct egress_wire_webhook {
	uint32_t version;
	uint32_t nrules;
	uint32_t principal_len;
	uint32_t url_len;
	uint32_t delivery_id_len;
	uint32_t body_len;
	uint32_t max_attempts; /* 1..10 */
	uint32_t backoff_ms;
	uint32_t max_backoff_ms;
	uint32_t reserved; /* 0 */
	uint8_t secret[EGRESS_WEBHOOK_KEYBYTES];
	struct egress_wire_limits limits;
};

/* Both replies, then: response headers, response body. */
struct egress_wire_reply {
	uint32_t version;
	int32_t error; /* 0 or EGRESS_E_* */
	int32_t allowed;
	int32_t rule;
	int32_t addr_class;
	uint32_t status;
	uint32_t redirects;
	uint32_t attempts; /* webhooks; 1 for a fetch */
	uint64_t bytes_out;
	uint64_t bytes_in;
	uint64_t elapsed_ms;
	char host[EGRESS_HOST_MAX + 3]; /* NUL-padded */
	uint16_t port;
	uint16_t reserved;
	char addr[48];
	char detail[128];
	uint32_t headers_len;
	uint32_t body_len;
	uint32_t reserved2; /* 0; no implicit padding anywhere */
};

_Static_assert(sizeof(struct egress_wire_rule) == 264, "wire rule layout");
_Static_assert(sizeof(struct egress_wire_fetch) == 72, "wire fetch layout");
_Static_assert(sizeof(struct egress_wire_webhook) == 112, "webhook layout");
_Static_assert(sizeof(struct egress_wire_reply) == 504, "wire reply layout");

/* A decoded request: pointers into one owned allocation. */
struct egress_decoded {
	uint16_t type;
	struct egress_request req; /* MSG_EGRESS_FETCH */
	struct egress_webhook webhook; /* MSG_EGRESS_WEBHOOK */
	void *mem;
};

/*
 * Decode and validate a request message of the given type. Returns 0 or
 * EGRESS_E_MSG (any length, count, string or field out of place) or
 * EGRESS_E_NOMEM. Free with egress_wire_decoded_free, also on error.
 */
int egress_wire_decode(
    uint16_t type, const void *msg, size_t len, struct egress_decoded *out);
void egress_wire_decoded_free(struct egress_decoded *d);

/* Encode requests (vmm and front use these). Returns 0, EGRESS_E_MSG for
 * a request the decoder would refuse, or EGRESS_E_NOMEM. */
int egress_wire_encode_fetch(
    const struct egress_request *req, void **out, size_t *len);
int egress_wire_encode_webhook(
    const struct egress_webhook *wh, void **out, size_t *len);

/* Check a reply and find its parts (pointers into msg, which must be
 * 8-byte aligned, as malloc returns). Returns 0 or EGRESS_E_MSG. */
int egress_wire_decode_reply(const void *msg, size_t len,
    const struct egress_wire_reply **hdr, const uint8_t **headers,
    const uint8_t **body);

/*
 * The request -> reply step of host/proc_egress.c: decode, run
 * the fetch or webhook, encode the reply (*reply malloc'd, caller frees)
 * with *reply_type. Returns 0 when the message was well formed, whatever
 * the outcome (a refusal or a failed transfer is in the reply's error and
 * in *d). A malformed message still gets a reply carrying EGRESS_E_MSG
 * and returns EGRESS_E_MSG, for the glue to log and count; an unknown
 * type gets none (*reply NULL, EGRESS_E_MSG); EGRESS_E_NOMEM, none.
 * *d receives the decision to log and send to the audit log.
 */
int egress_service_handle(struct egress_ctx *ctx, uint16_t type,
    const void *msg, size_t len, uint16_t *reply_type, void **reply,
    size_t *reply_len, struct egress_decision *d);

/*
 * What the server of the requests (host/proc_egress.c) does around each
 * transfer, with egress_service_run. admit is asked once a request has
 * decoded, before any transfer; it may narrow the request (its limits, a
 * webhook's secret) and returns 0 to go on, EGRESS_SERVICE_REFUSED with
 * *d filled (no transfer; the reply carries d), or
 * EGRESS_SERVICE_ELSEWHERE when another process (a forked worker) serves
 * it and replies itself (no reply here: *reply NULL, returns 0). done is
 * told the outcome of each admitted request before its reply is encoded.
 * Either may be NULL.
 */
#define EGRESS_SERVICE_REFUSED 1
#define EGRESS_SERVICE_ELSEWHERE 2
struct egress_service_hooks {
	int (*admit)(
	    void *arg, struct egress_decoded *dec, struct egress_decision *d);
	void (*done)(void *arg, const struct egress_decoded *dec,
	    const struct egress_decision *d, unsigned attempts);
	void *arg;
};
/* egress_service_handle with the server's hooks (NULL: none). */
int egress_service_run(struct egress_ctx *ctx,
    const struct egress_service_hooks *hooks, uint16_t type, const void *msg,
    size_t len, uint16_t *reply_type, void **reply, size_t *reply_len,
    struct egress_decision *d);

/* ---- what the policy's grant binds (host/proc_egress.c) ------------
 *
 * An `egress` grant names one destination: its target hash is over
 * "host:port", followed by " http" and/or " private" when the policy's
 * entries for that destination allow plain http or non-public addresses
 * (policy/hooks.c). The flags are thus under the grant's MAC; whoever
 * relays the request states them, and the egress process recomputes this
 * string and checks the hash. Returns 0 or EGRESS_E_HOST (host empty or
 * too long, buffer short).
 */
#define EGRESS_GRANT_TARGET_MAX (EGRESS_HOST_MAX + 28)
int egress_grant_target(const char *host, uint16_t port, int allow_http,
    int allow_private, char *buf, size_t buflen);
/* The same, for a guest's UDP socket when udp is 1: "host:port/udp",
 * then the flags (the policy's target for UDP, docs/egress.md). */
int egress_grant_target_proto(const char *host, uint16_t port, int udp,
    int allow_http, int allow_private, char *buf, size_t buflen);

/* ---- a guest's connection by name ---------------------------------- */

/*
 * Connect to rule->host on rule->port (exactly one granted rule, port
 * not 0) after the checks of a fetch's hop: the host's syntax, the rule,
 * resolution and every address's class (rebinding, metadata, private),
 * an IPv4 address preferred. The connect is bounded by timeout_ms. d is
 * always filled (allowed set on success). Returns 0 and a connected
 * non-blocking TCP socket in *fd, or an EGRESS_E_* code with *err the
 * errno a guest should see (EACCES for a refusal, EHOSTUNREACH for a
 * name that did not resolve, ETIMEDOUT, or connect's own).
 */
int egress_connect(struct egress_ctx *ctx, const struct egress_rule *rule,
    uint32_t timeout_ms, int *fd, int *err, struct egress_decision *d);
/* The same with a socket of type SOCK_STREAM or SOCK_DGRAM (a guest's
 * UDP socket by a `udp` rule: connected, so it sends to that address
 * only and hears from it only). */
int egress_connect_type(struct egress_ctx *ctx, const struct egress_rule *rule,
    int type, uint32_t timeout_ms, int *fd, int *err,
    struct egress_decision *d);

/*
 * A guest's TCP (type SOCK_STREAM) or UDP (SOCK_DGRAM) connection to an
 * address an address rule allowed
 * (`egress "10.1.0.0/16":5432 private`; the policy decided, the caller
 * verified its grant): addr is "10.1.2.3" or "[fd00::1]". The address
 * is classified: a metadata address, loopback, the unspecified address
 * and keep's own 198.18.0.0/15 are refused whatever the rule says; other
 * non-public classes need allow_private (egress_addr_permitted). Then
 * a connect bounded by timeout_ms. d, *fd and *err as egress_connect's;
 * EGRESS_E_HOST for a malformed addr (IPv4-mapped IPv6 included: IPv4
 * is written as IPv4), EGRESS_E_ADDR_DENIED for a class.
 */
int egress_connect_addr(struct egress_ctx *ctx, const char *addr, uint16_t port,
    int type, int allow_private, uint32_t timeout_ms, int *fd, int *err,
    struct egress_decision *d);

/* ---- a static hosts table (tests, air-gapped set-ups) ---------------
 *
 * hosts(5) syntax: "address name [name...]" per line, '#' comments. The
 * egress process is chrooted to an empty directory, so this table, sent
 * by the parent from egress.hosts_file, is consulted before DNS. Names
 * are matched case-insensitively. Returns 0, EGRESS_E_MSG (a malformed
 * line, with its number in *line) or EGRESS_E_NOMEM.
 */
struct egress_hosts;
int egress_hosts_parse(
    const char *text, size_t len, struct egress_hosts **out, size_t *line);
void egress_hosts_free(struct egress_hosts *h);
/* The table only: 0 or EGRESS_E_RESOLVE (not in it; h may be NULL). */
int egress_hosts_lookup(const struct egress_hosts *h, const char *host,
    struct sockaddr_storage *out, size_t max, size_t *n);
/* The default egress_resolve_fn: getaddrinfo(3), IPv4 and IPv6
 * addresses only (arg and port unused). */
int egress_sys_resolve(void *arg, const char *host, uint16_t port,
    struct sockaddr_storage *out, size_t max, size_t *n);
/* An egress_resolve_fn: arg is a struct egress_hosts (may be NULL);
 * names not in it go to egress_sys_resolve. */
int egress_hosts_resolve(void *arg, const char *host, uint16_t port,
    struct sockaddr_storage *out, size_t max, size_t *n);

/*
 * The nameservers of a resolv.conf(5) text: "nameserver ADDR" lines
 * (IPv4 only: the chrooted process sets glibc's _res from them), each
 * given port. Other lines are ignored. Fills up to max into out, sets
 * *n. Returns 0 (also when none are found).
 */
int egress_resolv_parse(const char *text, size_t len, uint16_t port,
    struct sockaddr_storage *out, size_t max, size_t *n);

/* Encode a reply as egress_service_handle does, for a relay that must
 * answer itself (the egress process is down). resp may be NULL. */
int egress_wire_encode_reply(const struct egress_decision *d, unsigned attempts,
    const struct egress_response *resp, void **reply, size_t *reply_len);

#endif
