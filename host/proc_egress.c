/*
 * The egress process: outbound HTTP(S) with libcurl (host/egress/), only
 * with a grant it verifies itself. It listens nowhere, runs as _keep in
 * an empty chroot under its own seccomp filter; its CA bundle, hosts
 * table and webhook key arrive from the parent as bytes
 * (MSG_EGRESS_CONFIG). Requests arrive from the vmm (a guest's
 * KEEP_SYS_FETCH) and the front (webhooks), each with the policy's grant
 * (host/proc_egress.h). Every decision, allowed or not, is logged and
 * sent to the store's audit log.
 *
 * Guest fetches are served one at a time: a transfer blocks the loop for
 * at most its time limit (pings are answered meanwhile). A webhook's
 * delivery, attempts and backoff included, runs in a forked worker.
 */
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <sys/socket.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <resolv.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <sodium.h>

#include "host/egress/egress.h"
#include "host/msg.h"
#include "host/proc.h"
#include "host/proc_egress.h"
#include "host/store/store.h"
#include "host/store/store_wire.h"
#include "host/vmm/vmm.h"
#include "lib/caps.h"
#include "lib/clock.h"
#include "lib/fdio.h"
#include "lib/log.h"
#include "lib/memfd.h"
#include "policy/policy.h"

struct egress_state {
	struct proc_ctx *ctx;
	uint8_t *buf; /* MSG_BUFSZ, for pings during a transfer */
	struct egress_ctx *ec;
	struct egress_hosts *hosts;
	struct msg_egress_config cfg;
	int have_config;
	uint8_t master[EGRESS_WEBHOOK_KEYBYTES];
	size_t nameservers; /* 0: DNS is off, the hosts table only */
	unsigned workers; /* webhook deliveries running in forked workers */
	int in_worker; /* this process is one of them */
	uint64_t audit_seq;
};

void
egress_grant_flags(const struct grant *g, const char *host, uint16_t port,
    uint8_t *http, uint8_t *priv)
{
	egress_grant_flags_proto(g, host, port, 0, http, priv);
}

void
egress_grant_flags_proto(const struct grant *g, const char *host, uint16_t port,
    int udp, uint8_t *http, uint8_t *priv)
{
	char t[EGRESS_GRANT_TARGET_MAX];
	uint8_t hash[GRANT_HASH_BYTES];
	int h, p;

	*http = *priv = 0;
	for (h = 0; h < 2; h++)
		for (p = 0; p < 2; p++) {
			if (egress_grant_target_proto(
			        host, port, udp, h, p, t, sizeof(t)) != 0)
				continue;
			grant_target_hash(t, strlen(t), hash);
			if (memcmp(hash, g->target, sizeof(hash)) == 0) {
				*http = (uint8_t)h;
				*priv = (uint8_t)p;
				return;
			}
		}
}

/* ---- parent side ---------------------------------------------------- */

static void *
slurp(const char *path, size_t max, size_t *len)
{
	struct stat st;
	uint8_t *buf;
	int fd;

	*len = 0;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return NULL;
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) || st.st_size < 0 ||
	    (size_t)st.st_size > max ||
	    (buf = malloc((size_t)st.st_size + 1)) == NULL) {
		close(fd);
		return NULL;
	}
	*len = read_all(fd, buf, (size_t)st.st_size);
	close(fd);
	if (*len != (size_t)st.st_size) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* The webhook key file: 64 hex digits (whitespace around ignored). */
static int
read_key(const char *path, uint8_t key[EGRESS_WEBHOOK_KEYBYTES])
{
	char *text;
	size_t len, bin = 0;
	int rc;

	if ((text = slurp(path, 1024, &len)) == NULL)
		return -1;
	rc = sodium_hex2bin(
	    key, EGRESS_WEBHOOK_KEYBYTES, text, len, " \t\r\n", &bin, NULL);
	sodium_memzero(text, len);
	free(text);
	return rc == 0 && bin == EGRESS_WEBHOOK_KEYBYTES ? 0 : -1;
}

/* Create a webhook master key file (64 hex digits, 0600) if missing. */
static void
make_key(const char *path)
{
	uint8_t key[EGRESS_WEBHOOK_KEYBYTES];
	char hex[2 * EGRESS_WEBHOOK_KEYBYTES + 2];
	int fd;

	if ((fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600)) ==
	    -1) {
		if (errno != EEXIST)
			log_warn("%s: %s", __func__, path);
		return;
	}
	randombytes_buf(key, sizeof(key));
	sodium_bin2hex(hex, sizeof(hex) - 1, key, sizeof(key));
	strlcat(hex, "\n", sizeof(hex));
	if (write(fd, hex, strlen(hex)) != (ssize_t)strlen(hex) ||
	    fsync(fd) == -1)
		log_warn("%s: %s", __func__, path);
	else
		log_info("%s: created the webhook key %s", __func__, path);
	close(fd);
	sodium_memzero(key, sizeof(key));
	sodium_memzero(hex, sizeof(hex));
}

/*
 * The system's CA bundle when egress.ca_file is not set: $SSL_CERT_FILE
 * (OpenSSL's convention) if set, else libcurl's built-in default, else
 * Debian's path.
 */
static const char *
system_ca_file(char *buf, size_t len)
{
	const char *env = secure_getenv("SSL_CERT_FILE");
	char *def = NULL;
	CURL *c;

	if (env != NULL && env[0] != '\0')
		return env;
	if ((c = curl_easy_init()) != NULL) {
		if (curl_easy_getinfo(c, CURLINFO_CAINFO, &def) == CURLE_OK &&
		    def != NULL)
			strlcpy(buf, def, len);
		curl_easy_cleanup(c);
	}
	return buf[0] != '\0' ? buf : "/etc/ssl/certs/ca-certificates.crt";
}

void
egress_send_config(const struct keepd_config *k, int fd)
{
	struct msg_egress_config m;
	uint8_t key[EGRESS_WEBHOOK_KEYBYTES], *blob = NULL;
	void *ca = NULL, *hosts = NULL, *resolv = NULL;
	size_t ca_len = 0, hosts_len = 0, resolv_len = 0, total;
	char defkey[PATH_MAX], sysca[PATH_MAX] = "";
	const char *keyfile, *ca_file;
	int mfd = -1;

	if (fd < 0)
		return;
	memset(&m, 0, sizeof(m));
	m.max_request = k->egress_max_request;
	m.max_response = k->egress_max_response;
	m.timeout_ms = k->egress_timeout_ms;
	m.connect_timeout_ms = k->egress_connect_timeout_ms;
	m.max_redirects = k->egress_max_redirects;
	m.max_concurrent = k->egress_max_concurrent;
	m.webhook_attempts = k->egress_webhook_attempts;
	m.webhook_backoff_ms = k->egress_webhook_backoff_ms;
	/* Read here, also when it is the system's: the process is
	 * chrooted where no bundle exists. */
	ca_file = k->egress_ca_file[0] != '\0'
	    ? k->egress_ca_file
	    : system_ca_file(sysca, sizeof(sysca));
	if ((ca = slurp(ca_file, 4u << 20, &ca_len)) == NULL)
		log_warn("%s: CA bundle %s: HTTPS egress will fail", __func__,
		    ca_file);
	if (k->egress_hosts_file[0] != '\0' &&
	    (hosts = slurp(k->egress_hosts_file, 1u << 20, &hosts_len)) == NULL)
		log_warn(
		    "%s: egress.hosts_file %s", __func__, k->egress_hosts_file);
	keyfile = k->egress_webhook_key_file;
	if (keyfile[0] == '\0') {
		/* The secrets handed to clients must outlive a restart. */
		snprintf(defkey, sizeof(defkey), "%s/keys/webhook.key",
		    k->state_dir);
		make_key(defkey);
		keyfile = defkey;
	}
	if (read_key(keyfile, key) == 0)
		m.key_len = sizeof(key);
	else
		log_warnx("%s: %s: want 64 hex digits; webhooks get a key "
		          "for this start only",
		    __func__, keyfile);
	/* The process is chrooted where no /etc/resolv.conf exists: it
	 * gets the nameservers from here (a missing file: DNS is off). */
	if (k->egress_resolv_conf[0] != '\0' &&
	    (resolv = slurp(k->egress_resolv_conf, 64u << 10, &resolv_len)) ==
	        NULL)
		log_warn("%s: egress.resolv_conf %s", __func__,
		    k->egress_resolv_conf);
	m.ca_len = ca_len;
	m.hosts_len = hosts_len;
	m.resolv_len = resolv_len;
	m.dns_port = k->egress_dns_port;
	total = ca_len + hosts_len + m.key_len + resolv_len;
	if ((blob = malloc(total + 1)) == NULL)
		goto out;
	if (ca_len > 0)
		memcpy(blob, ca, ca_len);
	if (hosts_len > 0)
		memcpy(blob + ca_len, hosts, hosts_len);
	if (m.key_len > 0)
		memcpy(blob + ca_len + hosts_len, key, m.key_len);
	if (resolv_len > 0)
		memcpy(
		    blob + ca_len + hosts_len + m.key_len, resolv, resolv_len);
	mfd = memfd_make_sealed("keep-egress", blob, total);
	if (mfd == -1 ||
	    msg_send(fd, MSG_EGRESS_CONFIG, 0, 0, &m, sizeof(m), mfd) != MSG_OK)
		log_warn("%s: egress configuration not sent", __func__);
out:
	if (mfd != -1)
		close(mfd);
	if (blob != NULL) {
		sodium_memzero(blob, total);
		free(blob);
	}
	sodium_memzero(key, sizeof(key));
	free(ca);
	free(hosts);
	free(resolv);
}

/* ---- the egress process ----------------------------------------------- */

static int64_t
wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A NUL-terminated, non-empty field of [A-Za-z0-9_.-] (ids only). */
static int
printable(const char *s, size_t max)
{
	size_t i;

	for (i = 0; i < max && s[i] != '\0'; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') ||
		        (s[i] >= 'A' && s[i] <= 'Z') ||
		        (s[i] >= '0' && s[i] <= '9') || s[i] == '-' ||
		        s[i] == '_' || s[i] == '.'))
			return 0;
	return i > 0 && i < max;
}

/* Log one decision and append it to the audit log (fire and forget: the
 * store answers in order; a refusal is logged by h_store_reply). */
static void
audit(struct proc_ctx *ctx, const struct msg *m, const struct msg_egress_req *q,
    const char *principal, const char *action, const char *method,
    const char *url, const struct egress_decision *d, const char *why)
{
	uint64_t reqid = m->hdr.reqid;
	struct egress_state *es = ctx->arg;
	struct store_audit e;
	char line[512], target[EGRESS_URL_MAX + 40], rid[40], rule[300];
	char esc[4 * 64 + 1];
	void *msg = NULL;
	size_t len;

	egress_decision_format(d, line, sizeof(line));
	log_info("%s %llu: %s %s in %s: %s%s%s", action,
	    (unsigned long long)reqid,
	    log_escape(esc, sizeof(esc), principal, strnlen(principal, 64)),
	    method,
	    q != NULL && printable(q->sandbox, sizeof(q->sandbox)) ? q->sandbox
	                                                           : "-",
	    line, why[0] != '\0' ? " " : "", why);
	memset(&e, 0, sizeof(e));
	e.time_ms = wall_ms();
	/* The API request behind it, so the run and its egress line up. */
	if (q != NULL && printable(q->request_id, sizeof(q->request_id)))
		strlcpy(rid, q->request_id, sizeof(rid));
	else
		snprintf(
		    rid, sizeof(rid), "egress-%llu", (unsigned long long)reqid);
	e.request_id = rid;
	e.principal = principal;
	e.jti = "";
	e.action = action;
	snprintf(target, sizeof(target), "%s %s", method, url);
	e.target = target;
	e.decision = d->allowed ? STORE_DECISION_ALLOW : STORE_DECISION_DENY;
	if (why[0] != '\0')
		strlcpy(rule, why, sizeof(rule));
	else if (d->rule >= 0)
		snprintf(rule, sizeof(rule), "grant for %s:%u", d->host,
		    (unsigned)d->port);
	else
		rule[0] = '\0';
	e.rule = rule;
	e.detail = line;
	if (ctx->fd[PROC_STORE] < 0) {
		log_warnx("audit: the store is down; lost: %s", line);
		return;
	}
	if (store_wire_audit_encode(&e, 1, &msg, &len) != STORE_OK ||
	    msg_send(ctx->fd[PROC_STORE], MSG_STORE_AUDIT, 0, ++es->audit_seq,
	        msg, len, -1) != MSG_OK)
		log_warnx("audit: not sent; lost: %s", line);
	free(msg);
}

/*
 * A transfer or a webhook's backoff blocks the loop for up to its time
 * limit, longer than the parent waits for a pong: answer pings (and only
 * pings; everything else waits for the loop) in the meantime.
 */
static void
egress_tick(void *arg)
{
	struct egress_state *es = arg;
	struct proc_ctx *ctx = es->ctx;
	struct pollfd pfd;
	struct msg_hdr h;
	ssize_t n;

	/* A webhook worker leaves the links to the process it came from. */
	if (es->in_worker)
		return;
	while (ctx->fd[PROC_PARENT] >= 0) {
		pfd.fd = ctx->fd[PROC_PARENT];
		pfd.events = POLLIN;
		pfd.revents = 0;
		if (poll(&pfd, 1, 0) != 1 || (pfd.revents & POLLIN) == 0)
			return;
		n = recv(pfd.fd, &h, sizeof(h), MSG_PEEK | MSG_DONTWAIT);
		if (n != (ssize_t)sizeof(h) || h.type != MSG_CTL_PING)
			return;
		if (msg_dispatch(ctx, PROC_PARENT, es->buf, MSG_BUFSZ) !=
		    MSG_OK)
			return;
	}
}

/* Webhook backoff: sleep, answering pings. */
static void
egress_sleep(void *arg, uint64_t ms)
{
	struct egress_state *es = arg;
	uint64_t end = mono_ms() + ms, now;
	struct pollfd pfd;

	while ((now = mono_ms()) < end) {
		pfd.fd = es->in_worker ? -1 : es->ctx->fd[PROC_PARENT];
		pfd.events = POLLIN;
		pfd.revents = 0;
		if (poll(&pfd, 1, (int)(end - now < 1000 ? end - now : 1000)) ==
		    1)
			egress_tick(es);
	}
}

static int
egress_resolve(void *arg, const char *host, uint16_t port,
    struct sockaddr_storage *out, size_t max, size_t *n)
{
	struct egress_state *es = arg;

	if (es->nameservers == 0)
		return egress_hosts_lookup(es->hosts, host, out, max, n);
	return egress_hosts_resolve(es->hosts, host, port, out, max, n);
}

static int
egress_h_store_reply(struct proc_ctx *ctx, const struct msg *m)
{
	struct store_wire_reply hdr;
	char next[STORE_CURSOR_MAX];

	(void)ctx;
	if (store_wire_reply_decode(m->data, m->hdr.len, &hdr, next) !=
	    STORE_OK)
		return -1;
	if (hdr.status != STORE_OK)
		log_warnx("audit: the store refused an entry: %s",
		    store_strerror((int)hdr.status));
	return 0;
}

/*
 * glibc's resolver state, set from the parent's resolv.conf text: glibc
 * honours an application's changes to _res after res_init, and the
 * chroot has no /etc/resolv.conf of its own. No nameserver: only the
 * hosts table resolves (glibc would otherwise ask 127.0.0.1; see
 * egress_resolve).
 */
static void
set_nameservers(
    struct egress_state *es, const char *text, size_t len, uint16_t port)
{
	struct sockaddr_storage ns[MAXNS];
	size_t n = 0, i;

	egress_resolv_parse(text, len, port, ns, MAXNS, &n);
	res_init();
	_res.nscount = (int)n;
	for (i = 0; i < n; i++)
		memcpy(
		    &_res.nsaddr_list[i], &ns[i], sizeof(_res.nsaddr_list[i]));
	es->nameservers = n;
	log_info("%s: %zu nameserver(s)", __func__, n);
}

static int
egress_h_config(struct proc_ctx *ctx, const struct msg *m)
{
	struct egress_state *es = ctx->arg;
	struct msg_egress_config c;
	struct egress_config ec;
	struct egress_hosts *hosts = NULL;
	struct egress_ctx *nctx = NULL;
	uint8_t *blob = NULL;
	uint64_t total;
	size_t line = 0;
	int rc;

	memcpy(&c, m->data, sizeof(c));
	total = c.ca_len + c.hosts_len + c.key_len + c.resolv_len;
	if (c.ca_len > (4u << 20) || c.hosts_len > (1u << 20) ||
	    c.resolv_len > (64u << 10) || c.dns_port == 0 ||
	    c.dns_port > 65535 || c.pad != 0 ||
	    (c.key_len != 0 && c.key_len != EGRESS_WEBHOOK_KEYBYTES) ||
	    (blob = memfd_read(m->fd, total, EGRESS_REPLY_MAX)) == NULL) {
		close(m->fd);
		log_warnx("%s: malformed configuration", __func__);
		return -1;
	}
	close(m->fd);
	if (c.hosts_len > 0 &&
	    egress_hosts_parse(
	        (char *)blob + c.ca_len, c.hosts_len, &hosts, &line) != 0) {
		log_warnx("%s: egress.hosts_file: line %zu is malformed; "
		          "using DNS only",
		    __func__, line);
		hosts = NULL;
	}
	memset(&ec, 0, sizeof(ec));
	ec.ca_blob = c.ca_len > 0 ? blob : NULL;
	ec.ca_blob_len = c.ca_len;
	ec.resolve = egress_resolve;
	ec.sleep = egress_sleep;
	ec.tick = egress_tick;
	ec.arg = es;
	if ((rc = egress_ctx_new(&ec, &nctx)) != 0) {
		log_warnx("%s: %s", __func__, egress_strerror(rc));
		egress_hosts_free(hosts);
		free(blob);
		return -1;
	}
	egress_ctx_free(es->ec);
	egress_hosts_free(es->hosts);
	es->ec = nctx;
	es->hosts = hosts;
	es->cfg = c;
	if (c.key_len > 0)
		memcpy(es->master, blob + c.ca_len + c.hosts_len,
		    sizeof(es->master));
	set_nameservers(es, (char *)blob + c.ca_len + c.hosts_len + c.key_len,
	    c.resolv_len, (uint16_t)c.dns_port);
	sodium_memzero(blob, total);
	free(blob);
	es->have_config = 1;
	log_info("%s: CA bundle %s, %s hosts table, webhook key %s", __func__,
	    c.ca_len > 0 ? "received" : "missing (HTTPS fails)",
	    hosts != NULL ? "a" : "no",
	    c.key_len > 0 ? "from egress.webhook_key_file" : "per start");
	return 0;
}

/* The lesser of a and b, where 0 means "not given". */
static uint64_t
lesser(uint64_t a, uint64_t b)
{
	if (a == 0)
		return b;
	if (b == 0)
		return a;
	return a < b ? a : b;
}

/* What the request may use: the relay's word is capped by the config and
 * the grant's limits, never widened. */
static void
clamp_limits(const struct egress_state *es, const struct grant *g,
    struct egress_limits *l)
{
	l->max_request = lesser(l->max_request, es->cfg.max_request);
	l->max_response = lesser(l->max_response, es->cfg.max_response);
	l->max_response = lesser(l->max_response, g->output_max);
	l->timeout_ms = (uint32_t)lesser(
	    lesser(l->timeout_ms, es->cfg.timeout_ms), g->timeout_ms);
	l->connect_timeout_ms = (uint32_t)lesser(
	    lesser(l->connect_timeout_ms, es->cfg.connect_timeout_ms),
	    l->timeout_ms);
	if (l->max_redirects > es->cfg.max_redirects)
		l->max_redirects = (uint16_t)es->cfg.max_redirects;
	l->max_concurrent = (uint16_t)es->cfg.max_concurrent;
}

int
egress_check_grant(const struct proc_ctx *ctx, const struct msg *m,
    const struct grant *in, const char *principal,
    const struct egress_rule *rules, size_t nrules, struct grant *g)
{
	char t[EGRESS_GRANT_TARGET_MAX];
	uint8_t hash[GRANT_HASH_BYTES];
	int rc;

	rc = proc_grant_verify(ctx, m, in, sizeof(*in), g);
	if (rc != GRANT_OK && rc != GRANT_ERR_DENIED)
		return rc;
	if (g->cap != CAP_EGRESS || nrules != 1 || rules[0].port == 0 ||
	    strncmp(g->principal, principal, sizeof(g->principal)) != 0)
		return GRANT_ERR_TARGET;
	/* grant_check wants an allow; a deny must be for this target too. */
	if (egress_grant_target(rules[0].host, rules[0].port,
	        rules[0].allow_http, rules[0].allow_private, t, sizeof(t)) != 0)
		return GRANT_ERR_TARGET;
	grant_target_hash(t, strlen(t), hash);
	if (sodium_memcmp(hash, g->target, sizeof(hash)) != 0)
		return GRANT_ERR_TARGET;
	return rc;
}

static void
deny_decision(struct egress_decision *d, const struct egress_rule *r,
    const char *url, size_t url_len, int err, const char *detail)
{
	struct egress_url u;

	memset(d, 0, sizeof(*d));
	d->rule = -1;
	d->addr_class = -1;
	d->error = err;
	if (url != NULL && egress_url_parse(url, url_len, &u) == 0) {
		strlcpy(d->host, u.host, sizeof(d->host));
		d->port = u.port;
	} else if (r != NULL) {
		strlcpy(d->host, r->host, sizeof(d->host));
		d->port = r->port;
	}
	strlcpy(d->detail, detail, sizeof(d->detail));
}

static void
send_reply(struct proc_ctx *ctx, const struct msg *m, uint32_t type,
    const void *wire, size_t len)
{
	struct msg_egress_rep r;
	int fd;

	r.len = len;
	if ((fd = memfd_make_sealed("keep-egress-reply", wire, len)) == -1 ||
	    msg_reply(ctx, m, type, &r, sizeof(r), fd) != MSG_OK)
		log_warn("%s: reply to %s lost", __func__, proc_name(m->from));
	if (fd != -1)
		close(fd);
}

/* Reply with a refusal made here (no transfer). */
static void
refuse(struct proc_ctx *ctx, const struct msg *m, uint32_t type,
    const struct egress_decision *d)
{
	void *wire = NULL;
	size_t len = 0;

	if (egress_wire_encode_reply(d, 0, NULL, &wire, &len) == 0)
		send_reply(ctx, m, type, wire, len);
	free(wire);
}

static const char *
grant_why(int rc)
{
	switch (rc) {
	case GRANT_ERR_DENIED:
		return "policy: denied";
	case GRANT_ERR_TARGET:
		return "grant: not for this destination";
	case GRANT_ERR_EXPIRED:
		return "grant: expired";
	default:
		return "grant: not authentic";
	}
}

#define EGRESS_WORKERS_MAX 16

/* Collect finished webhook workers (called on every request). */
static void
reap_workers(struct egress_state *es)
{
	int st;

	while (es->workers > 0 && waitpid(-1, &st, WNOHANG) > 0)
		es->workers--;
}

static int
valid_sandbox(const char *s, size_t max)
{
	size_t n = strnlen(s, max);

	return n > 0 && n < max;
}

/* One request being served: what the service's hooks need of it. */
struct egress_job {
	struct proc_ctx *ctx;
	const struct msg *m;
	struct msg_egress_req q;
	uint8_t secret[EGRESS_WEBHOOK_KEYBYTES]; /* a webhook's */
};

/* The request's URL, for the log and audit ("-" when too long). */
static void
job_url(const char *u, size_t n, char *url, size_t cap)
{
	if (n < cap) {
		memcpy(url, u, n);
		url[n] = '\0';
	} else
		strlcpy(url, "-", cap);
}

/* A guest's fetch: the grant must be for this principal and destination;
 * the transfer is held to the config's and the grant's limits. */
static int
fetch_admit(void *arg, struct egress_decoded *dec, struct egress_decision *d)
{
	struct egress_job *j = arg;
	struct egress_state *es = j->ctx->arg;
	struct egress_request *r = &dec->req;
	char url[EGRESS_URL_MAX + 1];
	struct grant g;
	const char *why;
	char denied[64];
	int rc;

	rc = egress_check_grant(
	    j->ctx, j->m, &j->q.grant, r->principal, r->rules, r->nrules, &g);
	if (rc == GRANT_OK && es->have_config) {
		clamp_limits(es, &g, &r->limits);
		return 0;
	}
	why = rc != GRANT_OK ? grant_why(rc) : "egress: not configured";
	/* A policy refusal says why (token caps, target, ...). */
	if (rc == GRANT_ERR_DENIED) {
		snprintf(denied, sizeof(denied), "policy: denied (%s)",
		    policy_reason_keyword(
		        (enum policy_reason)j->q.policy_reason));
		why = denied;
	}
	deny_decision(d, r->rules, r->url, r->url_len,
	    rc != GRANT_OK ? EGRESS_E_NOT_ALLOWED : EGRESS_E_INTERNAL, why);
	job_url(r->url, r->url_len, url, sizeof(url));
	audit(j->ctx, j->m, &j->q, r->principal, "egress", r->method, url, d,
	    why);
	return EGRESS_SERVICE_REFUSED;
}

static void
fetch_done(void *arg, const struct egress_decoded *dec,
    const struct egress_decision *d, unsigned attempts)
{
	struct egress_job *j = arg;
	char url[EGRESS_URL_MAX + 1];

	job_url(dec->req.url, dec->req.url_len, url, sizeof(url));
	audit(j->ctx, j->m, &j->q, dec->req.principal, "egress",
	    dec->req.method, url, d, "");
}

/* A webhook: as a fetch, with the sandbox's secret derived here (never
 * the sender's), the attempts and backoff held to the config; then
 * handed to a forked worker when one is free. */
static int
webhook_admit(void *arg, struct egress_decoded *dec, struct egress_decision *d)
{
	struct egress_job *j = arg;
	struct egress_state *es = j->ctx->arg;
	struct egress_webhook *wh = &dec->webhook;
	char url[EGRESS_URL_MAX + 1];
	struct grant g;
	const char *why;
	int rc;

	rc = egress_check_grant(j->ctx, j->m, &j->q.grant, wh->principal,
	    wh->rules, wh->nrules, &g);
	if (rc != GRANT_OK || !es->have_config ||
	    egress_webhook_secret(es->master, j->q.sandbox, j->secret) != 0) {
		why = rc != GRANT_OK ? grant_why(rc) : "egress: not configured";
		deny_decision(d, wh->rules, wh->url, strlen(wh->url),
		    rc != GRANT_OK ? EGRESS_E_NOT_ALLOWED : EGRESS_E_INTERNAL,
		    why);
		strlcpy(url, wh->url, sizeof(url));
		audit(j->ctx, j->m, &j->q, wh->principal, "egress.webhook",
		    "POST", url, d, why);
		return EGRESS_SERVICE_REFUSED;
	}
	wh->secret = j->secret;
	clamp_limits(es, &g, &wh->limits);
	if (wh->max_attempts > es->cfg.webhook_attempts)
		wh->max_attempts = es->cfg.webhook_attempts;
	if (wh->backoff_ms == 0 || wh->backoff_ms > es->cfg.webhook_backoff_ms)
		wh->backoff_ms = (uint32_t)es->cfg.webhook_backoff_ms;
	if (wh->max_backoff_ms == 0 ||
	    wh->max_backoff_ms > 8 * es->cfg.webhook_backoff_ms)
		wh->max_backoff_ms = (uint32_t)(8 * es->cfg.webhook_backoff_ms);
	/*
	 * A delivery may take all its attempts and backoff: it runs in a
	 * forked worker (same filter, same links; a datagram is atomic, so
	 * its reply and audit entry interleave safely with ours), so guest
	 * fetches are not held up behind a slow receiver. Too many workers
	 * or no fork: delivered here.
	 */
	reap_workers(es);
	if (es->workers < EGRESS_WORKERS_MAX) {
		pid_t pid = fork();

		if (pid > 0) {
			es->workers++;
			return EGRESS_SERVICE_ELSEWHERE;
		}
		if (pid == 0)
			es->in_worker = 1;
	}
	return 0;
}

static void
webhook_done(void *arg, const struct egress_decoded *dec,
    const struct egress_decision *d, unsigned attempts)
{
	struct egress_job *j = arg;
	char url[EGRESS_URL_MAX + 1], why[48];

	strlcpy(url, dec->webhook.url, sizeof(url));
	snprintf(why, sizeof(why), "attempts %u", attempts);
	audit(j->ctx, j->m, &j->q, dec->webhook.principal, "egress.webhook",
	    "POST", url, d, why);
}

/*
 * Both requests take one path, egress_service_run (tested as such):
 * decode, admit (the grant), transfer, done (the audit), reply. A
 * malformed request gets a reply saying so and counts as refused.
 */
static int
egress_serve(struct proc_ctx *ctx, const struct msg *m, uint16_t type,
    const struct egress_service_hooks *hooks_in)
{
	struct egress_state *es = ctx->arg;
	struct egress_service_hooks hooks = *hooks_in;
	struct egress_decision d;
	struct egress_job j;
	void *wire = NULL, *in = NULL;
	size_t wlen = 0;
	uint16_t rtype;
	int rc;

	reap_workers(es);
	memset(&j, 0, sizeof(j));
	j.ctx = ctx;
	j.m = m;
	memcpy(&j.q, m->data, sizeof(j.q));
	hooks.arg = &j;
	if (j.q.len > EGRESS_MSG_MAX ||
	    (type == MSG_EGRESS_WEBHOOK &&
	        !valid_sandbox(j.q.sandbox, sizeof(j.q.sandbox))) ||
	    (in = memfd_read(m->fd, j.q.len, EGRESS_REPLY_MAX)) == NULL) {
		close(m->fd);
		deny_decision(&d, NULL, NULL, 0, EGRESS_E_MSG, "malformed");
		refuse(ctx, m,
		    type == MSG_EGRESS_FETCH ? MSG_EGRESS_FETCH_REPLY
		                             : MSG_EGRESS_WEBHOOK_REPLY,
		    &d);
		return -1;
	}
	close(m->fd);
	rc = egress_service_run(
	    es->ec, &hooks, type, in, j.q.len, &rtype, &wire, &wlen, &d);
	if (wire != NULL)
		send_reply(ctx, m, rtype, wire, wlen);
	free(wire);
	free(in);
	sodium_memzero(j.secret, sizeof(j.secret));
	if (es->in_worker)
		_exit(0);
	return rc == EGRESS_E_MSG ? -1 : 0;
}

static int
egress_h_fetch(struct proc_ctx *ctx, const struct msg *m)
{
	static const struct egress_service_hooks hooks = { fetch_admit,
		fetch_done, NULL };

	return egress_serve(ctx, m, MSG_EGRESS_FETCH, &hooks);
}

static int
egress_h_webhook(struct proc_ctx *ctx, const struct msg *m)
{
	static const struct egress_service_hooks hooks = { webhook_admit,
		webhook_done, NULL };

	return egress_serve(ctx, m, MSG_EGRESS_WEBHOOK, &hooks);
}

/*
 * A guest's name query or TCP connection (docs/egress.md, "Names and
 * connections"): the grant verified as a fetch's is (for a query its
 * target is "name:*", any port of a rule for the name), the outcome
 * audited, and for an allowed connect the destination resolved, checked
 * and connected here; the socket goes back to the vmm.
 */
static int
egress_h_name(struct proc_ctx *ctx, const struct msg *m)
{
	struct egress_state *es = ctx->arg;
	struct msg_egress_name q;
	struct msg_egress_name_reply r;
	struct msg_egress_req aq;
	struct egress_decision d;
	struct egress_rule rule;
	struct grant g;
	uint8_t hash[GRANT_HASH_BYTES];
	char t[EGRESS_GRANT_TARGET_MAX], why[96], target[300];
	const char *action;
	int rc, fd = -1, err, udp, byaddr;

	memcpy(&q, m->data, sizeof(q));
	memset(&r, 0, sizeof(r));
	if (memchr(q.name, '\0', sizeof(q.name)) == NULL ||
	    memchr(q.principal, '\0', sizeof(q.principal)) == NULL ||
	    memchr(q.sandbox, '\0', sizeof(q.sandbox)) == NULL ||
	    memchr(q.request_id, '\0', sizeof(q.request_id)) == NULL ||
	    q.op < VMM_NET_RESOLVE || q.op > VMM_NET_UDP_ADDR ||
	    (q.op == VMM_NET_RESOLVE) != (q.port == 0) || q.allow_http > 1 ||
	    q.allow_private > 1 || strlen(q.name) > EGRESS_HOST_MAX) {
		log_warnx("%s: malformed request", __func__);
		return -1;
	}
	action = q.op == VMM_NET_RESOLVE ? "egress.dns" : "egress.connect";
	udp = q.op == VMM_NET_UDP || q.op == VMM_NET_UDP_ADDR;
	byaddr = q.op == VMM_NET_CONNECT_ADDR || q.op == VMM_NET_UDP_ADDR;
	memset(&rule, 0, sizeof(rule));
	strlcpy(rule.host, q.name, sizeof(rule.host));
	rule.port = q.port;
	rule.allow_http = q.allow_http;
	rule.allow_private = q.allow_private;
	why[0] = '\0';
	rc = proc_grant_verify(ctx, m, &q.grant, sizeof(q.grant), &g);
	if ((rc == GRANT_OK || rc == GRANT_ERR_DENIED) &&
	    (g.cap != CAP_EGRESS ||
	        strncmp(g.principal, q.principal, sizeof(g.principal)) != 0))
		rc = GRANT_ERR_TARGET;
	if (rc == GRANT_OK || rc == GRANT_ERR_DENIED) {
		if (q.op == VMM_NET_RESOLVE)
			snprintf(t, sizeof(t), "%s:*", q.name);
		else if (egress_grant_target_proto(q.name, q.port, udp,
		             q.allow_http, q.allow_private, t, sizeof(t)) != 0)
			t[0] = '\0';
		grant_target_hash(t, strlen(t), hash);
		if (t[0] == '\0' ||
		    sodium_memcmp(hash, g.target, sizeof(hash)) != 0)
			rc = GRANT_ERR_TARGET;
	}
	memset(&d, 0, sizeof(d));
	d.rule = -1;
	d.addr_class = -1;
	strlcpy(d.host, q.name, sizeof(d.host));
	d.port = q.port;
	if (rc != GRANT_OK) {
		/* A port its rules do not list, for a name they do: refused
		 * as a closed port is. Anything else: not allowed. */
		r.error = rc == GRANT_ERR_DENIED && q.op == VMM_NET_CONNECT &&
		        q.policy_reason == POLICY_R_TARGET
		    ? ECONNREFUSED
		    : EACCES;
		r.refused = 1;
		if (rc == GRANT_ERR_DENIED)
			snprintf(why, sizeof(why), "policy: denied (%s)",
			    policy_reason_keyword(
			        (enum policy_reason)q.policy_reason));
		else
			strlcpy(why, grant_why(rc), sizeof(why));
		d.error = EGRESS_E_NOT_ALLOWED;
		strlcpy(d.detail, why, sizeof(d.detail));
	} else if (q.op == VMM_NET_RESOLVE) {
		d.allowed = 1;
		d.rule = 0;
	} else if (!es->have_config) {
		r.error = EACCES;
		strlcpy(why, "egress: not configured", sizeof(why));
		d.error = EGRESS_E_INTERNAL;
	} else {
		uint64_t ms = lesser(es->cfg.connect_timeout_ms, g.timeout_ms);

		if (ms == 0 || ms > UINT32_MAX)
			ms = 10000;

		int type = udp ? SOCK_DGRAM : SOCK_STREAM;

		if ((byaddr ? egress_connect_addr(es->ec, q.name, q.port, type,
		                  q.allow_private, (uint32_t)ms, &fd, &err, &d)
		            : egress_connect_type(es->ec, &rule, type,
		                  (uint32_t)ms, &fd, &err, &d)) != 0) {
			r.error = err;
			r.refused = d.error != EGRESS_E_CONNECT &&
			    d.error != EGRESS_E_TIMEOUT &&
			    d.error != EGRESS_E_RESOLVE;
			strlcpy(why, egress_strerror(d.error), sizeof(why));
		}
	}
	memset(&aq, 0, sizeof(aq));
	strlcpy(aq.sandbox, q.sandbox, sizeof(aq.sandbox));
	strlcpy(aq.request_id, q.request_id, sizeof(aq.request_id));
	if (q.op == VMM_NET_RESOLVE)
		snprintf(target, sizeof(target), "%s", q.name);
	else
		snprintf(target, sizeof(target), "%s:%u%s", q.name,
		    (unsigned)q.port, udp ? "/udp" : "");
	audit(ctx, m, &aq, q.principal, action,
	    q.op == VMM_NET_RESOLVE ? "DNS"
	        : udp               ? "UDP"
	                            : "TCP",
	    target, &d, why);
	if (msg_reply(ctx, m,
	        fd >= 0 ? MSG_EGRESS_NAME_SOCKET : MSG_EGRESS_NAME_REPLY, &r,
	        sizeof(r), fd) != MSG_OK)
		log_warn("%s: reply lost", __func__);
	if (fd >= 0)
		close(fd);
	return 0;
}

/*
 * The secret the sandbox's webhooks are signed with, for the front to
 * give the sandbox's creator (nothing else: the master key stays here).
 */
static int
egress_h_secret(struct proc_ctx *ctx, const struct msg *m)
{
	struct egress_state *es = ctx->arg;
	struct msg_egress_secret q;
	uint8_t secret[EGRESS_WEBHOOK_KEYBYTES];

	memcpy(&q, m->data, sizeof(q));
	if (memchr(q.sandbox, '\0', sizeof(q.sandbox)) == NULL)
		return -1;
	memset(q.hex, 0, sizeof(q.hex));
	if (es->have_config &&
	    egress_webhook_secret(es->master, q.sandbox, secret) == 0)
		sodium_bin2hex(q.hex, sizeof(q.hex), secret, sizeof(secret));
	sodium_memzero(secret, sizeof(secret));
	msg_reply(ctx, m, MSG_EGRESS_SECRET_REPLY, &q, sizeof(q), -1);
	sodium_memzero(&q, sizeof(q));
	return 0;
}

static const struct msg_handler egress_handlers[] = {
	MSG_HANDLERS_COMMON,
	{ MSG_EGRESS_CONFIG, PROC_BIT(PROC_PARENT),
	    sizeof(struct msg_egress_config), MSG_H_FD, egress_h_config },
	{ MSG_EGRESS_FETCH, PROC_BIT(PROC_VMM), sizeof(struct msg_egress_req),
	    MSG_H_FD, egress_h_fetch },
	{ MSG_EGRESS_WEBHOOK, PROC_BIT(PROC_FRONT),
	    sizeof(struct msg_egress_req), MSG_H_FD, egress_h_webhook },
	{ MSG_EGRESS_NAME, PROC_BIT(PROC_VMM), sizeof(struct msg_egress_name),
	    0, egress_h_name },
	{ MSG_EGRESS_SECRET, PROC_BIT(PROC_FRONT),
	    sizeof(struct msg_egress_secret), 0, egress_h_secret },
	{ MSG_STORE_REPLY, PROC_BIT(PROC_STORE), MSG_MAX_PAYLOAD,
	    MSG_H_VARIABLE, egress_h_store_reply },
};

int
egress_main(struct proc_ctx *ctx)
{
	static struct egress_state es;

	/* Until the parent's configuration arrives: a random webhook key,
	 * and no requests served. */
	randombytes_buf(es.master, sizeof(es.master));
	es.ctx = ctx;
	if ((es.buf = malloc(MSG_BUFSZ)) == NULL)
		fatal("%s", __func__);
	ctx->arg = &es;
	ctx->handlers = egress_handlers;
	ctx->nhandlers = nitems(egress_handlers);
	log_info("%s: ready", __func__);
	return proc_loop(ctx);
}
