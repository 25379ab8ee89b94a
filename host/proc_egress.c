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

#include "host/egress/appca.h"
#include "host/egress/egress.h"
#include "host/egress/relay.h"
#include "host/egress_runs.h"
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

/* Relays of guests' connections at once (each lives as long as its
 * connection); past it, such a connect is EACCES. */
#define EGRESS_RELAYS_MAX 128
/* Audit entries wait at most this long, then go to the store in one
 * message (one transaction, one sync), as the front's do. */
#define EGRESS_AUDIT_DELAY_MS 5

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
	/* Relays of injecting (or scanning) connections, by pid, apart
	 * from webhook workers so that neither starves the other. */
	pid_t relays[EGRESS_RELAYS_MAX];
	unsigned nrelays;
	int in_worker; /* this process is one of them */
	uint64_t audit_seq;
	/* Audit entries not yet sent (MSG_STORE_AUDIT's payload, its
	 * header written at the flush): audit_count of them, the oldest
	 * queued at audit_since_ms (CLOCK_MONOTONIC). */
	uint8_t *audit_buf;
	size_t audit_len;
	uint32_t audit_count;
	uint64_t audit_since_ms;
	/* For the TLS relays of injected secrets (docs/egress.md): the CA
	 * bundle that verifies real servers, and the appliance CA that
	 * signs the guest's side; NULL when not configured. */
	uint8_t *ca_copy, *appca_cert, *appca_key;
	size_t ca_copy_len, appca_cert_len, appca_key_len;
	/* Runs' direct links (host/egress_runs.h), and which of them the
	 * loop's last poll_more handed out, in order. */
	struct egress_runs runs;
	size_t polled[PROC_POLL_MORE];
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
	void *acert = NULL, *akey = NULL;
	size_t ca_len = 0, hosts_len = 0, resolv_len = 0, total;
	size_t acert_len = 0, akey_len = 0;
	char defkey[PATH_MAX], sysca[PATH_MAX] = "";
	char akey_path[PATH_MAX], acert_path[PATH_MAX];
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
	/* The appliance CA: made once, its key read here and held by the
	 * egress process alone (images trust the certificate). */
	snprintf(akey_path, sizeof(akey_path), "%s/keys/appliance-ca.key",
	    k->state_dir);
	snprintf(acert_path, sizeof(acert_path), "%s/keys/appliance-ca.pem",
	    k->state_dir);
	if (egress_appca_ensure(akey_path, acert_path) != 0 ||
	    (akey = slurp(akey_path, 64u << 10, &akey_len)) == NULL ||
	    (acert = slurp(acert_path, 64u << 10, &acert_len)) == NULL ||
	    egress_appca_check(acert, acert_len, akey, akey_len) != 0) {
		log_warnx("%s: the appliance CA (%s) is unusable: secrets "
		          "are not injected at egress",
		    __func__, acert_path);
		if (akey != NULL)
			sodium_memzero(akey, akey_len);
		free(akey);
		free(acert);
		akey = acert = NULL;
		akey_len = acert_len = 0;
	}
	m.ca_len = ca_len;
	m.hosts_len = hosts_len;
	m.resolv_len = resolv_len;
	m.appca_cert_len = acert_len;
	m.appca_key_len = akey_len;
	m.dns_port = k->egress_dns_port;
	total =
	    ca_len + hosts_len + m.key_len + resolv_len + acert_len + akey_len;
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
	if (acert_len > 0) {
		memcpy(blob + ca_len + hosts_len + m.key_len + resolv_len,
		    acert, acert_len);
		memcpy(blob + ca_len + hosts_len + m.key_len + resolv_len +
		        acert_len,
		    akey, akey_len);
	}
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
	if (akey != NULL)
		sodium_memzero(akey, akey_len);
	free(akey);
	free(acert);
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

/* The queued audit entries to the store, in one message. */
static void
audit_flush(struct egress_state *es)
{
	struct proc_ctx *ctx = es->ctx;
	struct store_wire_audit hdr;

	if (es->audit_count == 0)
		return;
	hdr.version = STORE_WIRE_VERSION;
	hdr.count = es->audit_count;
	memcpy(es->audit_buf, &hdr, sizeof(hdr));
	if (ctx->fd[PROC_STORE] < 0 ||
	    msg_send(ctx->fd[PROC_STORE], MSG_STORE_AUDIT, 0, ++es->audit_seq,
	        es->audit_buf, es->audit_len, -1) != MSG_OK)
		log_warnx("audit: the store is down; %u entries lost",
		    es->audit_count);
	es->audit_len = 0;
	es->audit_count = 0;
}

/*
 * One entry to the store. In the loop's process entries wait (at most
 * EGRESS_AUDIT_DELAY_MS, egress_round_end) and go together: one store
 * transaction for a burst of a guest's connects rather than one each.
 * A forked worker sends its entry at once: it exits next, and what the
 * buffer held when it was forked is its parent's to send.
 */
static void
audit_send(
    struct egress_state *es, const struct store_audit *e, const char *line)
{
	struct store_wire_audit hdr;
	void *msg = NULL;
	size_t len;

	if (store_wire_audit_encode(e, 1, &msg, &len) != STORE_OK) {
		log_warnx("audit: not encoded; lost: %s", line);
		return;
	}
	if (es->in_worker) {
		if (es->ctx->fd[PROC_STORE] < 0 ||
		    msg_send(es->ctx->fd[PROC_STORE], MSG_STORE_AUDIT, 0,
		        ++es->audit_seq, msg, len, -1) != MSG_OK)
			log_warnx("audit: not sent; lost: %s", line);
		free(msg);
		return;
	}
	/* The entry's encoding past the header: its length and record. */
	len -= sizeof(hdr);
	if (es->audit_len + len > MSG_MAX_PAYLOAD - sizeof(hdr) ||
	    es->audit_count == STORE_WIRE_MAX_AUDIT)
		audit_flush(es);
	if (es->audit_buf == NULL &&
	    (es->audit_buf = malloc(MSG_MAX_PAYLOAD)) == NULL) {
		log_warnx("audit: out of memory; lost: %s", line);
		free(msg);
		return;
	}
	if (es->audit_len == 0) {
		es->audit_len = sizeof(hdr);
		es->audit_since_ms = mono_ms();
	}
	memcpy(
	    es->audit_buf + es->audit_len, (uint8_t *)msg + sizeof(hdr), len);
	es->audit_len += len;
	es->audit_count++;
	free(msg);
}

/* proc_ctx.wake_in: ms until the oldest queued entry is due, -1 none. */
static int
egress_wake_in(struct proc_ctx *ctx)
{
	const struct egress_state *es = ctx->arg;
	uint64_t now;

	if (es->audit_count == 0)
		return -1;
	now = mono_ms();
	return now >= es->audit_since_ms + EGRESS_AUDIT_DELAY_MS
	    ? 0
	    : (int)(es->audit_since_ms + EGRESS_AUDIT_DELAY_MS - now);
}

/* proc_ctx.on_round_end: the queued entries go once they are due. */
static void
egress_round_end(struct proc_ctx *ctx)
{
	struct egress_state *es = ctx->arg;

	if (es->audit_count != 0 &&
	    mono_ms() >= es->audit_since_ms + EGRESS_AUDIT_DELAY_MS)
		audit_flush(es);
}

/* Log one decision and queue it for the audit log (fire and forget: the
 * store answers in order; a refusal is logged by h_store_reply). via
 * goes into the log line only (how the request came). */
static void
audit_via(struct proc_ctx *ctx, const struct msg *m,
    const struct msg_egress_req *q, const char *principal, const char *action,
    const char *method, const char *url, const struct egress_decision *d,
    const char *why, const char *via)
{
	uint64_t reqid = m->hdr.reqid;
	struct egress_state *es = ctx->arg;
	struct store_audit e;
	char line[512], target[EGRESS_URL_MAX + 40], rid[40], rule[300];
	char esc[4 * 64 + 1];

	egress_decision_format(d, line, sizeof(line));
	log_info("%s %llu%s: %s %s in %s: %s%s%s", action,
	    (unsigned long long)reqid, via,
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
	audit_send(es, &e, line);
}

static void
audit(struct proc_ctx *ctx, const struct msg *m, const struct msg_egress_req *q,
    const char *principal, const char *action, const char *method,
    const char *url, const struct egress_decision *d, const char *why)
{
	audit_via(ctx, m, q, principal, action, method, url, d, why, "");
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

static uint8_t *
dup_bytes(const uint8_t *p, size_t len)
{
	uint8_t *d = len > 0 ? malloc(len) : NULL;

	if (d != NULL)
		memcpy(d, p, len);
	return d;
}

static void
drop_bytes(uint8_t **p, size_t *len)
{
	if (*p != NULL) {
		sodium_memzero(*p, *len);
		free(*p);
	}
	*p = NULL;
	*len = 0;
}

/* What the TLS relays of injected secrets need, copied out of the
 * configuration: the CA bundle and the appliance CA. */
static void
keep_relay_material(struct egress_state *es, const uint8_t *blob,
    const struct msg_egress_config *c)
{
	const uint8_t *a =
	    blob + c->ca_len + c->hosts_len + c->key_len + c->resolv_len;

	drop_bytes(&es->ca_copy, &es->ca_copy_len);
	drop_bytes(&es->appca_cert, &es->appca_cert_len);
	drop_bytes(&es->appca_key, &es->appca_key_len);
	if ((es->ca_copy = dup_bytes(blob, c->ca_len)) != NULL)
		es->ca_copy_len = c->ca_len;
	if (c->appca_cert_len == 0 ||
	    egress_appca_check(a, c->appca_cert_len, a + c->appca_cert_len,
	        c->appca_key_len) != 0)
		return;
	if ((es->appca_cert = dup_bytes(a, c->appca_cert_len)) != NULL)
		es->appca_cert_len = c->appca_cert_len;
	if ((es->appca_key =
	            dup_bytes(a + c->appca_cert_len, c->appca_key_len)) != NULL)
		es->appca_key_len = c->appca_key_len;
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
	total = c.ca_len + c.hosts_len + c.key_len + c.resolv_len +
	    c.appca_cert_len + c.appca_key_len;
	if (c.ca_len > (4u << 20) || c.hosts_len > (1u << 20) ||
	    c.resolv_len > (64u << 10) || c.appca_cert_len > (64u << 10) ||
	    c.appca_key_len > (64u << 10) ||
	    (c.appca_cert_len == 0) != (c.appca_key_len == 0) ||
	    c.dns_port == 0 || c.dns_port > 65535 || c.pad != 0 ||
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
	keep_relay_material(es, blob, &c);
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

/* Collect finished workers, webhook deliveries and relays (called on
 * every request). */
static void
reap_workers(struct egress_state *es)
{
	unsigned i;
	pid_t pid;
	int st;

	while ((es->workers > 0 || es->nrelays > 0) &&
	    (pid = waitpid(-1, &st, WNOHANG)) > 0) {
		for (i = 0; i < es->nrelays && es->relays[i] != pid; i++)
			;
		if (i < es->nrelays)
			es->relays[i] = es->relays[--es->nrelays];
		else if (es->workers > 0)
			es->workers--;
	}
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

/*
 * A placeholder of a secret injected at egress, anywhere in a guest's
 * fetch (URL, headers, body): KEEP_SYS_FETCH does not inject, so such a
 * request is refused rather than sent with the placeholder in it
 * (docs/egress.md, "Secrets injected at egress").
 */
static int
fetch_has_placeholder(const struct egress_request *r)
{
	size_t i;

	if (memmem(r->url, r->url_len, EGRESS_INJECT_MARKER,
	        EGRESS_INJECT_MARKER_LEN) != NULL ||
	    (r->body_len > 0 &&
	        memmem(r->body, r->body_len, EGRESS_INJECT_MARKER,
	            EGRESS_INJECT_MARKER_LEN) != NULL))
		return 1;
	for (i = 0; i < r->nheaders; i++)
		if (strstr(r->headers[i].name, EGRESS_INJECT_MARKER) != NULL ||
		    strstr(r->headers[i].value, EGRESS_INJECT_MARKER) != NULL)
			return 1;
	return 0;
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
	if (rc == GRANT_OK && es->have_config && !fetch_has_placeholder(r)) {
		clamp_limits(es, &g, &r->limits);
		return 0;
	}
	why = rc != GRANT_OK ? grant_why(rc)
	    : !es->have_config
	    ? "egress: not configured"
	    : "refused: a placeholder (secrets are injected on a guest's own "
	      "TLS connections only)";
	/* A policy refusal says why (token caps, target, ...). */
	if (rc == GRANT_ERR_DENIED) {
		snprintf(denied, sizeof(denied), "policy: denied (%s)",
		    policy_reason_keyword(
		        (enum policy_reason)j->q.policy_reason));
		why = denied;
	}
	deny_decision(d, r->rules, r->url, r->url_len,
	    rc != GRANT_OK || es->have_config ? EGRESS_E_NOT_ALLOWED
	                                      : EGRESS_E_INTERNAL,
	    why);
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

	/* A transfer holds the loop (a webhook forks): what waits goes
	 * first. */
	audit_flush(es);
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

/* Where a direct link's request is answered (egress_poll_ready); lost
 * is set when the answer could not be sent (the link is then dropped). */
struct direct_to {
	int fd;
	uint64_t reqid; /* the vm process's, echoed */
	int lost;
};

/*
 * A guest's name query or TCP connection (docs/egress.md, "Names and
 * connections"): the grant verified as a fetch's is (for a query its
 * target is "name:*", any port of a rule for the name), the outcome
 * audited, and for an allowed connect the destination resolved, checked
 * and connected here; the socket goes back to the vmm.
 */
/*
 * A pair of connected loopback TCP sockets: one end goes to the vm
 * process in place of the guest's socket (programs set TCP options on
 * it and read its addresses, which an AF_UNIX pair would refuse), the
 * other stays with the relay. The listener lives for this call only, on
 * 127.0.0.1 and an ephemeral port, takes one connection, and that one
 * must come from our own connecting socket's address, so nobody else on
 * the host can slip in. 0 or -1.
 */
static int
loopback_pair(int fds[2])
{
	struct sockaddr_in a, mine, peer;
	socklen_t al = sizeof(a), ml = sizeof(mine), pl = sizeof(peer);
	int l, c = -1, s = -1;

	if ((l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return -1;
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(l, (struct sockaddr *)&a, sizeof(a)) == -1 ||
	    listen(l, 1) == -1 ||
	    getsockname(l, (struct sockaddr *)&a, &al) == -1 ||
	    (c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1 ||
	    connect(c, (struct sockaddr *)&a, sizeof(a)) == -1 ||
	    getsockname(c, (struct sockaddr *)&mine, &ml) == -1 ||
	    (s = accept4(l, (struct sockaddr *)&peer, &pl, SOCK_CLOEXEC)) ==
	        -1 ||
	    peer.sin_port != mine.sin_port ||
	    peer.sin_addr.s_addr != mine.sin_addr.s_addr)
		goto fail;
	close(l);
	fds[0] = c;
	fds[1] = s;
	return 0;
fail:
	close(l);
	if (c != -1)
		close(c);
	if (s != -1)
		close(s);
	return -1;
}

/*
 * In the worker forked for one injecting connection: relay, audit the
 * outcome (never the value), exit. upstream is the real server's
 * socket, peer the relay's end of the loopback pair.
 */
static void __attribute__((noreturn)) inject_worker(struct proc_ctx *ctx,
    const struct msg *m, const struct msg_egress_req *aq,
    const struct msg_egress_inject *in, uint8_t *value, int upstream, int peer)
{
	struct egress_state *es = ctx->arg;
	struct egress_relay_cfg c;
	struct egress_relay_result r;
	struct egress_decision d;
	char target[300], why[400];

	memset(&c, 0, sizeof(c));
	c.inject.name = in->name.name;
	c.inject.port = in->name.port;
	c.inject.header = in->header;
	c.inject.placeholder = in->placeholder;
	c.inject.value = in->value_len > 0 ? value : NULL;
	c.inject.value_len = in->value_len;
	c.ca_bundle = es->ca_copy;
	c.ca_len = es->ca_copy_len;
	c.appca_cert = es->appca_cert;
	c.appca_cert_len = es->appca_cert_len;
	c.appca_key = es->appca_key;
	c.appca_key_len = es->appca_key_len;
	c.idle_ms = (uint32_t)lesser(es->cfg.timeout_ms, 600000);
	if (in->secret[0] == '\0')
		(void)egress_relay_scan(peer, upstream, c.idle_ms, &r);
	else
		(void)egress_relay_run(&c, peer, upstream, &r);
	sodium_memzero(value, 4096);
	close(peer);
	close(upstream);
	memset(&d, 0, sizeof(d));
	d.rule = 0;
	d.addr_class = -1;
	d.allowed = !r.refused && !r.upstream_failed && r.why[0] == '\0';
	if (!d.allowed)
		d.error = r.refused     ? EGRESS_E_HEADER
		    : r.upstream_failed ? EGRESS_E_TLS
		                        : EGRESS_E_TRANSFER;
	strlcpy(d.host, in->name.name, sizeof(d.host));
	d.port = in->name.port;
	d.bytes_out = r.bytes_out;
	d.bytes_in = r.bytes_in;
	strlcpy(d.detail, r.why[0] != '\0' ? r.why : "ok", sizeof(d.detail));
	snprintf(target, sizeof(target), "%s:%u", in->name.name,
	    (unsigned)in->name.port);
	/* Names and counts only: the value is in no log and no entry. A
	 * scanned connection is audited only when it was cut (its connect
	 * is audited already). */
	if (in->secret[0] == '\0') {
		if (r.refused)
			audit(ctx, m, aq, in->name.principal, "egress.scan",
			    "TCP", target, &d, r.why);
		_exit(0);
	}
	snprintf(why, sizeof(why), "secret %s as %s, %s, replaced %u%s%s",
	    in->secret, in->header, r.method[0] != '\0' ? r.method : "-",
	    r.replaced, r.why[0] != '\0' ? ": " : "", r.why);
	audit(ctx, m, aq, in->name.principal, "egress.inject", "TLS", target,
	    &d, why);
	_exit(0);
}

/*
 * An allowed injecting connect: *fd (the real server) goes to a forked
 * worker with one end of a loopback pair; *fd becomes the other end,
 * for the vm process. 0, or -1 (nothing forked, *fd closed).
 */
static int
hand_to_worker(struct proc_ctx *ctx, const struct msg *m,
    const struct msg_egress_req *aq, const struct msg_egress_inject *in,
    int *fd, int pair[2])
{
	struct egress_state *es = ctx->arg;
	uint8_t *value;
	pid_t pid;

	reap_workers(es);
	if (es->nrelays >= EGRESS_RELAYS_MAX ||
	    (value = malloc(4096)) == NULL) {
		close(*fd);
		*fd = -1;
		return -1;
	}
	memcpy(value, in->value, in->value_len);
	if (loopback_pair(pair) != 0 || (pid = fork()) == -1) {
		if (pair[0] != -1) {
			close(pair[0]);
			close(pair[1]);
		}
		sodium_memzero(value, 4096);
		free(value);
		close(*fd);
		*fd = -1;
		return -1;
	}
	if (pid == 0) {
		es->in_worker = 1;
		close(pair[0]);
		inject_worker(ctx, m, aq, in, value, *fd, pair[1]);
	}
	es->relays[es->nrelays++] = pid;
	sodium_memzero(value, 4096);
	free(value);
	close(pair[1]);
	close(*fd);
	*fd = pair[0];
	return 0;
}

/*
 * A guest's name query or TCP connection (docs/egress.md, "Names and
 * connections"): the grant verified as a fetch's is (for a query its
 * target is "name:*", any port of a rule for the name), the outcome
 * audited, and for an allowed connect the destination resolved, checked
 * and connected here; the socket goes back to the vmm. With `in` (a
 * connect whose destination injects a secret) the grant's target names
 * the secret and header too, and what goes back is one end of a
 * loopback pair whose other end a forked worker relays (inject_worker).
 * With dt, the request came on a run's direct link (its kept decision,
 * m made for it) and is answered there.
 */
static int
serve_name(struct proc_ctx *ctx, const struct msg *m,
    const struct msg_egress_name *qp, const struct msg_egress_inject *in,
    struct direct_to *dt)
{
	struct egress_state *es = ctx->arg;
	struct msg_egress_name q = *qp;
	struct msg_egress_name_reply r;
	struct msg_egress_req aq;
	struct egress_decision d;
	struct egress_rule rule;
	struct grant g;
	uint8_t hash[GRANT_HASH_BYTES];
	char t[EGRESS_INJECT_TARGET_MAX], why[96], target[300];
	const char *action;
	int rc, fd = -1, err, udp, byaddr, pair[2] = { -1, -1 };

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
	if (in != NULL && q.op != VMM_NET_CONNECT) {
		log_warnx("%s: an injection for a query", __func__);
		return -1;
	}
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
		else if (in != NULL && in->secret[0] != '\0'
		        ? egress_grant_target_inject(q.name, q.port,
		              q.allow_http, q.allow_private, in->secret,
		              in->header, t, sizeof(t)) != 0
		        : egress_grant_target_proto(q.name, q.port, udp,
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
	} else if (!es->have_config ||
	    (in != NULL && in->secret[0] != '\0' && es->appca_key == NULL)) {
		r.error = EACCES;
		strlcpy(why,
		    es->have_config ? "egress: no appliance CA to inject with"
		                    : "egress: not configured",
		    sizeof(why));
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
	if (in != NULL && fd >= 0 &&
	    hand_to_worker(ctx, m, &aq, in, &fd, pair) != 0) {
		r.error = EACCES;
		r.refused = 0;
		strlcpy(why, "egress: no relay for the injection", sizeof(why));
		d.allowed = 0;
		d.error = EGRESS_E_INTERNAL;
	}
	/* The answer first, then its log line and audit entry: the guest's
	 * connect waits on the one and not on the others (about 10 us
	 * here), and the entry is no less sure after it, since entries go
	 * to the store in batches anyway (audit_send). */
	if (dt != NULL) {
		struct msg_egress_direct_reply dr;

		memset(&dr, 0, sizeof(dr));
		dr.error = r.error;
		dr.refused = r.refused;
		/* The link does not block: a vm process that does not read
		 * its answers loses its link, not egress its loop. */
		if (msg_send(dt->fd, MSG_EGRESS_DIRECT_REPLY, MSG_F_REPLY,
		        dt->reqid, &dr, sizeof(dr), fd) != MSG_OK) {
			log_warn("%s: direct reply lost", __func__);
			dt->lost = 1;
		}
	} else if (msg_reply(ctx, m,
	               fd >= 0 ? MSG_EGRESS_NAME_SOCKET : MSG_EGRESS_NAME_REPLY,
	               &r, sizeof(r), fd) != MSG_OK)
		log_warn("%s: reply lost", __func__);
	/* A connect made on a decision the run may reuse: its direct link
	 * may have it from now on (host/egress_runs.h). */
	if (dt == NULL && in == NULL && fd >= 0 && r.error == 0)
		egress_runs_keep(&es->runs, &q, mono_ms(), grant_now_ms());
	if (fd >= 0)
		close(fd);
	audit_via(ctx, m, &aq, q.principal, action,
	    q.op == VMM_NET_RESOLVE ? "DNS"
	        : udp               ? "UDP"
	                            : "TCP",
	    target, &d, why, dt != NULL ? " (direct link)" : "");
	return 0;
}

static int
egress_h_name(struct proc_ctx *ctx, const struct msg *m)
{
	struct msg_egress_name q;

	memcpy(&q, m->data, sizeof(q));
	return serve_name(ctx, m, &q, NULL, NULL);
}

/* ---- runs' direct links (host/egress_runs.h) --------------------------- */

_Static_assert(EGRESS_RUNS_MAX <= PROC_POLL_MORE, "every link is polled");

static int
egress_h_run(struct proc_ctx *ctx, const struct msg *m)
{
	struct egress_state *es = ctx->arg;
	struct msg_egress_run q;

	memcpy(&q, m->data, sizeof(q));
	/* Egress's end never blocks it: an empty link reads as nothing
	 * yet, a full one fails the answer (direct_request). */
	if (fcntl(m->fd, F_SETFL, O_NONBLOCK) == -1) {
		log_warn("%s: a run's direct link", __func__);
		close(m->fd);
		return 0;
	}
	if (egress_runs_add(&es->runs, &q, m->fd) != 0)
		log_warnx("%s: a run's direct link refused (malformed, taken "
		          "or %d held)",
		    __func__, EGRESS_RUNS_MAX);
	return 0;
}

static int
egress_h_policy_changed(struct proc_ctx *ctx, const struct msg *m)
{
	struct egress_state *es = ctx->arg;
	struct msg_policy_changed c;

	memcpy(&c, m->data, sizeof(c));
	egress_runs_changed(&es->runs, c.generation);
	return 0;
}

/* A restarted vmm's runs are new: the old links go (their vm processes
 * went with the old vmm). */
static void
egress_on_peer(struct proc_ctx *ctx, enum proc_id peer)
{
	struct egress_state *es = ctx->arg;

	if (peer == PROC_VMM)
		egress_runs_drop_all(&es->runs);
}

static size_t
egress_poll_more(struct proc_ctx *ctx, struct pollfd *p, size_t room)
{
	struct egress_state *es = ctx->arg;
	size_t i, n = 0;

	for (i = 0; i < EGRESS_RUNS_MAX && n < room; i++) {
		if (es->runs.run[i].fd < 0)
			continue;
		p[n].fd = es->runs.run[i].fd;
		p[n].events = POLLIN;
		p[n].revents = 0;
		es->polled[n++] = i;
	}
	return n;
}

/*
 * One request on run i's direct link: a connect the run's kept decision
 * allows is served as the vmm's would be (serve_name, under the grant's
 * request id, audited the same), answered on the link; anything else
 * kept nothing is a miss. The policy link is read first, so a load it
 * told of before this request was sent has dropped what it replaced.
 * -1 when the link is gone or misbehaved (it is then dropped).
 */
static int
direct_request(struct proc_ctx *ctx, size_t i)
{
	struct egress_state *es = ctx->arg;
	struct egress_run *run = &es->runs.run[i];
	const struct msg_egress_name *kept;
	struct msg_egress_direct q;
	struct msg_egress_direct_reply miss;
	struct msg_egress_name name;
	struct direct_to dt;
	struct msg m;
	struct msg_hdr h;
	size_t n;
	int fd = MSG_NO_FD, k, rc;

	if ((rc = msg_recv(run->fd, es->buf, MSG_BUFSZ, &n, &fd)) ==
	    MSG_ERR_AGAIN)
		return 0; /* nothing after all */
	if (rc != MSG_OK)
		return -1;
	if (fd != MSG_NO_FD) {
		close(fd);
		return -1;
	}
	if (egress_direct_parse(es->buf, n, &h, &q) != 0)
		return -1;
	for (k = 0; k < 64 && ctx->fd[PROC_POLICY] >= 0 &&
	     msg_dispatch_nowait(ctx, PROC_POLICY, es->buf, MSG_BUFSZ) ==
	         MSG_OK;
	     k++)
		;
	if (run->fd < 0)
		return 0; /* dropped meanwhile */
	kept = egress_runs_find(
	    &es->runs, i, q.op, q.name, q.port, mono_ms(), grant_now_ms());
	if (kept == NULL) {
		memset(&miss, 0, sizeof(miss));
		miss.miss = 1;
		if (msg_send(run->fd, MSG_EGRESS_DIRECT_REPLY, MSG_F_REPLY,
		        h.reqid, &miss, sizeof(miss), -1) != MSG_OK)
			return -1;
		return 0;
	}
	/* Served as the vmm's request with this grant was: the same
	 * request id, the same checks, its own audit entry. */
	name = *kept;
	memset(&m, 0, sizeof(m));
	m.hdr.type = MSG_EGRESS_NAME;
	m.hdr.reqid = name.grant.reqid;
	m.hdr.len = sizeof(name);
	m.data = (const uint8_t *)&name;
	m.from = PROC_VMM;
	m.fd = MSG_NO_FD;
	dt.fd = run->fd;
	dt.reqid = h.reqid;
	dt.lost = 0;
	if (serve_name(ctx, &m, &name, NULL, &dt) != 0 || dt.lost)
		return -1;
	return 0;
}

static void
egress_poll_ready(struct proc_ctx *ctx, const struct pollfd *p, size_t n)
{
	struct egress_state *es = ctx->arg;
	size_t j, i;

	for (j = 0; j < n; j++) {
		if (p[j].revents == 0)
			continue;
		i = es->polled[j];
		/* Dropped or replaced since the poll (a vmm restart). */
		if (es->runs.run[i].fd != p[j].fd)
			continue;
		if ((p[j].revents & POLLIN) == 0 || direct_request(ctx, i) != 0)
			egress_runs_drop(&es->runs, i);
	}
}

/* A connect whose destination injects a secret: the request checked
 * as the name request it contains, then served as it is. The value is
 * zeroed from the message buffer whatever happens. */
static int
egress_h_inject(struct proc_ctx *ctx, const struct msg *m)
{
	struct msg_egress_inject *in;
	int rc = -1;

	if ((in = malloc(sizeof(*in))) == NULL)
		goto out;
	memcpy(in, m->data, sizeof(*in));
	if (memchr(in->secret, '\0', sizeof(in->secret)) == NULL ||
	    memchr(in->header, '\0', sizeof(in->header)) == NULL ||
	    memchr(in->placeholder, '\0', sizeof(in->placeholder)) == NULL ||
	    in->value_len > sizeof(in->value) || in->pad != 0 ||
	    (in->value_len == 0) != (in->placeholder[0] == '\0') ||
	    (in->secret[0] == '\0') != (in->header[0] == '\0') ||
	    (in->secret[0] == '\0' && in->value_len != 0) ||
	    (in->placeholder[0] != '\0' &&
	        strncmp(in->placeholder, EGRESS_INJECT_MARKER,
	            EGRESS_INJECT_MARKER_LEN) != 0)) {
		log_warnx("%s: malformed request", __func__);
		goto out;
	}
	rc = serve_name(ctx, m, &in->name, in, NULL);
out:
	if (in != NULL) {
		sodium_memzero(in, sizeof(*in));
		free(in);
	}
	/* The datagram's copy of the value, in the receive buffer. */
	sodium_memzero((void *)m->data, sizeof(struct msg_egress_inject));
	return rc;
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
	{ MSG_EGRESS_INJECT, PROC_BIT(PROC_VMM),
	    sizeof(struct msg_egress_inject), 0, egress_h_inject },
	{ MSG_EGRESS_RUN, PROC_BIT(PROC_VMM), sizeof(struct msg_egress_run),
	    MSG_H_FD, egress_h_run },
	{ MSG_POLICY_CHANGED, PROC_BIT(PROC_POLICY),
	    sizeof(struct msg_policy_changed), 0, egress_h_policy_changed },
	{ MSG_EGRESS_SECRET, PROC_BIT(PROC_FRONT),
	    sizeof(struct msg_egress_secret), 0, egress_h_secret },
	{ MSG_STORE_REPLY, PROC_BIT(PROC_STORE), MSG_MAX_PAYLOAD,
	    MSG_H_VARIABLE, egress_h_store_reply },
};

int
egress_main(struct proc_ctx *ctx)
{
	static struct egress_state es;
	int rc;

	/* Until the parent's configuration arrives: a random webhook key,
	 * and no requests served. */
	randombytes_buf(es.master, sizeof(es.master));
	es.ctx = ctx;
	if ((es.buf = malloc(MSG_BUFSZ)) == NULL)
		fatal("%s", __func__);
	ctx->arg = &es;
	ctx->handlers = egress_handlers;
	ctx->nhandlers = nitems(egress_handlers);
	ctx->wake_in = egress_wake_in;
	ctx->on_round_end = egress_round_end;
	egress_runs_init(&es.runs);
	ctx->on_peer = egress_on_peer;
	ctx->poll_more = egress_poll_more;
	ctx->poll_ready = egress_poll_ready;
	log_info("%s: ready", __func__);
	rc = proc_loop(ctx);
	audit_flush(&es); /* stopping: what waits goes now */
	return rc;
}
