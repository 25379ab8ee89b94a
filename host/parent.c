/*
 * The parent: set-up, the children's life cycle and supervision.
 */
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <netinet/in.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "host/config.h"
#include "host/guest_ca.h"
#include "host/msg.h"
#include "host/parent.h"
#include "host/vmm/vmm.h"
#include "host/proc.h"
#include "host/store/store.h"
#include "host/store/store_wire.h"
#include "host/proc_egress.h"
#include "host/egress/appca.h"
#include "lang/lang.h"
#include "lib/clock.h"
#include "lib/fdio.h"
#include "lib/log.h"
#include "lib/memfd.h"
#include "token/paserk.h"

#define BACKOFF_MIN_MS 250
/* A child that ran this long before dying starts again from BACKOFF_MIN_MS. */
#define BACKOFF_RESET_MS 10000
#define STOP_GRACE_MS 2000
/* Health: every child is pinged this often; one that has not answered for
 * HEALTH_TIMEOUT_MS is hung and is killed (and so restarted). */
#define HEALTH_INTERVAL_MS 5000
#define HEALTH_TIMEOUT_MS 20000

struct child {
	pid_t pid; /* 0 when not running */
	uint64_t started; /* monotonic ms */
	uint64_t restart_at; /* monotonic ms, 0 = not scheduled */
	uint64_t backoff;
	unsigned restarts;
	int ready;
	uint64_t last_pong; /* monotonic ms of the last sign of life */
};

struct parent {
	struct keepd_config cfg;
	const char *cfgpath;
	int foreground, verbosity;
	struct proc_ctx ctx; /* ctx.fd[c]: link to child c */
	struct child child[PROC_COUNT];
	uint8_t keys[PROC_COUNT][GRANT_KEY_BYTES];
	uint8_t mint_sk[64]; /* the delegation key (msg_mint_key) */
	struct msg_secret_key secret_key; /* docs/secrets.md */
	struct guest_ca *guest_ca; /* load_guest_ca; NULL: none */
	char mint_pk[MSG_PUBKEY_LEN]; /* its public half, PASERK */
	uint8_t keys_audited[32]; /* hash of the key set last audited */
	int kvm_fd, listen_fd, sig_fd;
	int root_user; /* started as root: chroot and setresuid */
	char state[PATH_MAX], empty[PATH_MAX + 8], db[PATH_MAX + 8];
	uint64_t policy_generation;
	uint64_t next_health; /* monotonic ms */
	uint64_t ping_seq;
	int quitting;
	int announced;
};

static void make_dir(const char *, mode_t, uid_t, gid_t);

static const char *
child_root(struct parent *ps, enum proc_id id)
{
	if (!ps->root_user)
		return NULL;
	switch (proc_table[id].root) {
	case PROC_ROOT_STATE:
		return ps->state;
	case PROC_ROOT_DB:
		return ps->db;
	case PROC_ROOT_EMPTY:
		break;
	}
	return ps->empty;
}

/*
 * Send the policy (every *.policy in policy_dir, in name order, read by
 * the loader `keep policy check` uses, lang/source.c: one text whose
 * positions map back to each file) to the policy process as a sealed
 * memfd. A set the loader cannot read is not sent: the policy in force
 * stays (none at start: everything is denied).
 */
static void
send_policy(struct parent *ps)
{
	struct msg_policy_load req;
	char pattern[PATH_MAX + 16], err[1200], *text = NULL;
	glob_t g;
	size_t i, len = 0;
	int mfd = -1;

	if (ps->ctx.fd[PROC_POLICY] < 0)
		return;
	snprintf(pattern, sizeof(pattern), "%s/*.policy", ps->cfg.policy_dir);
	memset(&g, 0, sizeof(g));
	if (glob(pattern, 0, NULL, &g) != 0)
		log_warnx("%s: no policy in %s: everything is denied", __func__,
		    ps->cfg.policy_dir);
	if (lang_source_load((const char *const *)g.gl_pathv, g.gl_pathc, &text,
	        &len, err, sizeof(err)) != 0) {
		log_warnx("%s: %s; the policy in force stays", __func__, err);
		goto out;
	}
	if (len > MSG_POLICY_MAX_TEXT) {
		log_warnx("%s: policy too large", __func__);
		goto out;
	}
	for (i = 0; i < g.gl_pathc; i++)
		log_info("%s: policy file %s", __func__, g.gl_pathv[i]);
	if ((mfd = memfd_new("keep-policy")) == -1) {
		log_warn("%s: memfd_create", __func__);
		goto out;
	}
	if (write_all(mfd, text, len) != 0) {
		log_warn("%s: write", __func__);
		goto out;
	}
	if (memfd_seal(mfd) == -1)
		log_warn("%s: seals", __func__);
	memset(&req, 0, sizeof(req));
	req.size = len;
	req.generation = ++ps->policy_generation;
	if (msg_send(ps->ctx.fd[PROC_POLICY], MSG_POLICY_LOAD, 0,
	        req.generation, &req, sizeof(req), mfd) != MSG_OK)
		log_warn("%s: send", __func__);
out:
	free(text);
	globfree(&g);
	if (mfd != -1)
		close(mfd);
}

static void
send_keys(struct parent *ps, enum proc_id c)
{
	struct msg_grant_key k;
	enum proc_id l;

	for (l = PROC_FRONT; l < PROC_COUNT; l++) {
		/* policy mints for every link; each verifier gets its own. */
		if (c != PROC_POLICY && l != c)
			continue;
		memset(&k, 0, sizeof(k));
		k.link = l;
		memcpy(k.key, ps->keys[l], sizeof(k.key));
		if (msg_send(ps->ctx.fd[c], MSG_CTL_GRANT_KEY, 0, 0, &k,
		        sizeof(k), -1) != MSG_OK)
			log_warn("%s: %s", __func__, proc_name(c));
		sodium_memzero(&k, sizeof(k));
	}
}

/* The platform guests run on: KVM when it is open or required. */
static int
parent_platform(const struct parent *ps)
{
	if (strcmp(ps->cfg.platform, "kvm") == 0 || ps->kvm_fd >= 0)
		return VMM_PLATFORM_KVM;
	return VMM_PLATFORM_TRAP;
}

static void
send_config(struct parent *ps, enum proc_id c)
{
	const struct keepd_config *k = &ps->cfg;
	struct msg_config m;

	memset(&m, 0, sizeof(m));
	m.max_request_body = k->max_request_body;
	m.memory_default = k->memory_default;
	m.memory_max = k->memory_max;
	m.timeout_default_ms = k->timeout_default_ms;
	m.timeout_max_ms = k->timeout_max_ms;
	m.output_max = k->output_max;
	m.workspace_max = k->workspace_max;
	m.max_files = k->max_files;
	m.token_max_ttl_ms = k->token_max_ttl_ms;
	m.token_clock_skew_ms = k->token_clock_skew_ms;
	m.max_connections = k->max_connections;
	m.max_sandboxes = k->max_sandboxes;
	m.listen_port = k->listen_port;
	m.tls = k->tls_cert[0] != '\0';
	m.store_reserve = k->store_reserve;
	m.max_connections_per_client = k->max_connections_per_client;
	m.unauthenticated_timeout_ms = k->unauthenticated_timeout_ms;
	m.max_replies_pending = k->max_replies_pending;
	strlcpy(m.node, k->node, sizeof(m.node));
	strlcpy(m.ports_domain, k->ports_domain, sizeof(m.ports_domain));
	m.platform = (uint16_t)parent_platform(ps);
	m.kvm_missing = m.platform == VMM_PLATFORM_KVM && ps->kvm_fd < 0;
	if (msg_send(ps->ctx.fd[c], MSG_CTL_CONFIG, 0, 0, &m, sizeof(m), -1) !=
	    MSG_OK)
		log_warn("%s: %s", __func__, proc_name(c));
}

/* Read a small root-owned file whole; NULL (logged) on failure. */
static char *
read_small(const char *path, size_t max, size_t *lenp)
{
	struct stat st;
	char *buf;
	size_t off = 0;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		log_warn("%s: %s", __func__, path);
		return NULL;
	}
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) || st.st_size < 0 ||
	    (size_t)st.st_size > max ||
	    (buf = malloc((size_t)st.st_size + 1)) == NULL) {
		log_warnx("%s: %s: not a regular file of at most %zu bytes",
		    __func__, path, max);
		close(fd);
		return NULL;
	}
	off = read_all(fd, buf, (size_t)st.st_size);
	close(fd);
	buf[off] = '\0';
	*lenp = off;
	return buf;
}

/* A configured key: a k4.public PASERK, or a file that holds one. */
static int
resolve_key(const char *spec, char out[MSG_PUBKEY_LEN])
{
	static const char prefix[] = "k4.public.";
	char *text = NULL, *s, *e;
	size_t len;

	if (strncmp(spec, prefix, sizeof(prefix) - 1) == 0)
		return strlcpy(out, spec, MSG_PUBKEY_LEN) < MSG_PUBKEY_LEN ? 0
		                                                           : -1;
	if ((text = read_small(spec, 4096, &len)) == NULL)
		return -1;
	for (s = text; *s == ' ' || *s == '\t' || *s == '\n' || *s == '\r';)
		s++;
	for (e = s;
	     *e != '\0' && *e != ' ' && *e != '\t' && *e != '\n' && *e != '\r';)
		e++;
	*e = '\0';
	if (strncmp(s, prefix, sizeof(prefix) - 1) != 0 ||
	    strlcpy(out, s, MSG_PUBKEY_LEN) >= MSG_PUBKEY_LEN) {
		log_warnx(
		    "%s: %s does not hold a k4.public key", __func__, spec);
		free(text);
		return -1;
	}
	free(text);
	return 0;
}

static void
send_pubkeys(struct parent *ps, enum proc_id c)
{
	struct msg_pubkeys m;
	char(*keys)[CONFIG_KEY_MAX];
	size_t i, n;

	memset(&m, 0, sizeof(m));
	if (c == PROC_FRONT || c == PROC_POLICY) {
		m.kind = MSG_PUBKEYS_TOKEN;
		if (strlcpy(m.keys[0], ps->mint_pk, MSG_PUBKEY_LEN) <
		    MSG_PUBKEY_LEN)
			m.n = 1;
		keys = ps->cfg.issuer_keys;
		n = ps->cfg.nissuer_keys;
	} else if (c == PROC_VMM) {
		m.kind = MSG_PUBKEYS_IMAGE;
		keys = ps->cfg.image_keys;
		n = ps->cfg.nimage_keys;
	} else
		return;
	for (i = 0; i < n && m.n < MSG_PUBKEYS_MAX; i++)
		if (resolve_key(keys[i], m.keys[m.n]) == 0)
			m.n++;
	if (msg_send(ps->ctx.fd[c], MSG_CTL_PUBKEYS, 0, 0, &m, sizeof(m), -1) !=
	    MSG_OK)
		log_warn("%s: %s", __func__, proc_name(c));
}

/* The front cannot open files: it gets the certificate and key as bytes. */
static void
send_tls(struct parent *ps)
{
	struct msg_tls m;
	char *cert = NULL, *key = NULL;
	size_t clen = 0, klen = 0;
	int mfd = -1;

	if (ps->cfg.tls_cert[0] == '\0' || ps->ctx.fd[PROC_FRONT] < 0)
		return;
	if ((cert = read_small(ps->cfg.tls_cert, MSG_TLS_MAX, &clen)) == NULL ||
	    (key = read_small(ps->cfg.tls_key, MSG_TLS_MAX, &klen)) == NULL)
		goto fail;
	if ((mfd = memfd_new("keep-tls")) == -1 ||
	    write(mfd, cert, clen) != (ssize_t)clen ||
	    write(mfd, key, klen) != (ssize_t)klen || memfd_seal(mfd) == -1)
		goto fail;
	memset(&m, 0, sizeof(m));
	m.cert_len = clen;
	m.key_len = klen;
	if (msg_send(ps->ctx.fd[PROC_FRONT], MSG_CTL_TLS, 0, 0, &m, sizeof(m),
	        mfd) != MSG_OK)
		goto fail;
	goto out;
fail:
	log_warnx("%s: TLS certificate or key not sent: the front has none",
	    __func__);
out:
	if (mfd != -1)
		close(mfd);
	free(cert);
	if (key != NULL) {
		explicit_bzero(key, klen);
		free(key);
	}
}

static void
send_mint_key(struct parent *ps)
{
	struct msg_mint_key k;

	memcpy(k.sk, ps->mint_sk, sizeof(k.sk));
	if (msg_send(ps->ctx.fd[PROC_POLICY], MSG_CTL_MINT_KEY, 0, 0, &k,
	        sizeof(k), -1) != MSG_OK)
		log_warn("%s", __func__);
	sodium_memzero(&k, sizeof(k));
}

/*
 * The delegation key signs the tokens keep derives (sandbox tokens,
 * attenuation). It must outlive a restart, or every sandbox token would
 * die with the daemon, so unlike the grant keys it is kept on disk, in a
 * root-only directory no child can see.
 */
static void
load_mint_key(struct parent *ps)
{
	char dir[PATH_MAX + 8], path[PATH_MAX + 32], text[160];
	uint8_t pk[32];
	int fd;

	snprintf(dir, sizeof(dir), "%s/keys", ps->state);
	make_dir(dir, 0700, ps->root_user ? 0 : (uid_t)-1, 0);
	snprintf(path, sizeof(path), "%s/delegation.secret", dir);
	if (sodium_mlock(ps->mint_sk, sizeof(ps->mint_sk)) == -1)
		log_warn("%s: mlock", __func__);
	if (access(path, F_OK) == 0) {
		if (paserk_load_secret(path, ps->mint_sk) != 0)
			fatalx("%s: not a usable k4.secret key (mode must be "
			       "0600)",
			    path);
	} else {
		crypto_sign_keypair(pk, ps->mint_sk);
		if (paserk_secret_encode(text, sizeof(text), ps->mint_sk) !=
		        0 ||
		    (fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
		         0600)) == -1)
			fatal("%s", path);
		if (dprintf(fd, "%s\n", text) < 0 || close(fd) == -1)
			fatal("%s", path);
		sodium_memzero(text, sizeof(text));
		log_info("%s: created the delegation key %s", __func__, path);
	}
	crypto_sign_ed25519_sk_to_pk(pk, ps->mint_sk);
	if (paserk_public_encode(ps->mint_pk, sizeof(ps->mint_pk), pk) != 0)
		fatalx("%s: encode", __func__);
}

/* The public half to the front, both to the vmm (msg_secret_key). */
static void
send_secret_key(struct parent *ps, enum proc_id c)
{
	struct msg_secret_key k;

	memcpy(k.pk, ps->secret_key.pk, sizeof(k.pk));
	if (c == PROC_VMM)
		memcpy(k.sk, ps->secret_key.sk, sizeof(k.sk));
	else
		memset(k.sk, 0, sizeof(k.sk));
	if (msg_send(ps->ctx.fd[c], MSG_CTL_SECRET_KEY, 0, 0, &k, sizeof(k),
	        -1) != MSG_OK)
		log_warn("%s", __func__);
	sodium_memzero(&k, sizeof(k));
}

/*
 * The secrets key seals the values of /v1/secrets at rest. Like the
 * delegation key it must outlive a restart (or every stored secret would
 * be lost), so it lives in the root-only keys directory: 32 bytes of
 * X25519 secret key in hex, mode 0600, refused if anyone else may read it.
 */
static void
load_secret_key(struct parent *ps)
{
	char path[PATH_MAX + 32], hex[2 * 32 + 2];
	struct stat sb;
	ssize_t n;
	int fd;

	if (ps->cfg.secrets_key_file[0] != '\0')
		snprintf(path, sizeof(path), "%s", ps->cfg.secrets_key_file);
	else
		snprintf(path, sizeof(path), "%s/keys/secrets.key", ps->state);
	if (sodium_mlock(&ps->secret_key, sizeof(ps->secret_key)) == -1)
		log_warn("%s: mlock", __func__);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) != -1) {
		if (fstat(fd, &sb) == -1 || !S_ISREG(sb.st_mode) ||
		    (sb.st_mode & 077) != 0)
			fatalx("%s: must be a regular file of mode 0600", path);
		n = read(fd, hex, sizeof(hex));
		close(fd);
		if (n < 64 || (n == 65 && hex[64] != '\n') || n > 65 ||
		    sodium_hex2bin(ps->secret_key.sk, sizeof(ps->secret_key.sk),
		        hex, 64, NULL, NULL, NULL) != 0)
			fatalx("%s: not 32 bytes in hex", path);
	} else if (errno == ENOENT) {
		crypto_box_keypair(ps->secret_key.pk, ps->secret_key.sk);
		sodium_bin2hex(hex, sizeof(hex), ps->secret_key.sk, 32);
		if ((fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
		         0600)) == -1 ||
		    dprintf(fd, "%s\n", hex) < 0 || fsync(fd) == -1 ||
		    close(fd) == -1)
			fatal("%s", path);
		log_info("%s: created the secrets key %s", __func__, path);
	} else
		fatal("%s", path);
	sodium_memzero(hex, sizeof(hex));
	crypto_scalarmult_base(ps->secret_key.pk, ps->secret_key.sk);
}

/*
 * Every change of the trusted keys (token issuers, image signers) is in
 * the audit log: at start and after each reload whose keys differ, one
 * `keys.load` entry with the counts and a BLAKE2b of the whole set.
 */
static void
audit_keys(struct parent *ps)
{
	crypto_generichash_state h;
	struct store_audit e;
	char key[MSG_PUBKEY_LEN], hex[65], detail[160];
	uint8_t sum[32];
	struct timespec ts;
	size_t i, ni = 0, nm = 0, len;
	void *msg;

	crypto_generichash_init(&h, NULL, 0, sizeof(sum));
	for (i = 0; i < ps->cfg.nissuer_keys; i++)
		if (resolve_key(ps->cfg.issuer_keys[i], key) == 0) {
			crypto_generichash_update(
			    &h, (uint8_t *)key, strlen(key) + 1);
			ni++;
		}
	crypto_generichash_update(&h, (const uint8_t *)"|", 1);
	for (i = 0; i < ps->cfg.nimage_keys; i++)
		if (resolve_key(ps->cfg.image_keys[i], key) == 0) {
			crypto_generichash_update(
			    &h, (uint8_t *)key, strlen(key) + 1);
			nm++;
		}
	crypto_generichash_final(&h, sum, sizeof(sum));
	if (sodium_memcmp(sum, ps->keys_audited, sizeof(sum)) == 0 ||
	    ps->ctx.fd[PROC_STORE] < 0)
		return;
	memcpy(ps->keys_audited, sum, sizeof(sum));
	sodium_bin2hex(hex, sizeof(hex), sum, sizeof(sum));
	snprintf(detail, sizeof(detail),
	    "%zu token issuer key(s), %zu image key(s), blake2b %s", ni, nm,
	    hex);
	clock_gettime(CLOCK_REALTIME, &ts);
	memset(&e, 0, sizeof(e));
	e.time_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	e.request_id = e.jti = e.rule = "";
	e.principal = "keepd";
	e.action = "keys.load";
	e.target = ps->cfgpath;
	e.decision = STORE_DECISION_INFO;
	e.detail = detail;
	if (store_wire_audit_encode(&e, 1, &msg, &len) != STORE_OK)
		return;
	if (msg_send(ps->ctx.fd[PROC_STORE], MSG_STORE_AUDIT, 0, 0, msg, len,
	        -1) != MSG_OK)
		log_warnx("%s: the store did not get it", __func__);
	free(msg);
}

static const char *test_clock_path;

void
parent_test_clock(const char *path)
{
	test_clock_path = path;
}

/* keepd -T: the test clock's file is the test's, as the state directory
 * is; a file that does not hold a time leaves the clock as it was. */
static void
send_test_clock(struct parent *ps)
{
	struct msg_test_clock m;
	char *text, *end;
	long long v;
	size_t len;

	if (test_clock_path == NULL)
		return;
	if ((text = read_small(test_clock_path, 64, &len)) == NULL) {
		log_warnx("%s: %s: cannot read it", __func__, test_clock_path);
		return;
	}
	v = strtoll(text, &end, 10);
	while (*end == '\n' || *end == ' ')
		end++;
	if (end == text || *end != '\0' || v <= 0) {
		log_warnx(
		    "%s: %s: not a time in seconds", __func__, test_clock_path);
		free(text);
		return;
	}
	free(text);
	memset(&m, 0, sizeof(m));
	m.now_s = v;
	if (msg_send(ps->ctx.fd[PROC_FRONT], MSG_CTL_TEST_CLOCK, 0, 0, &m,
	        sizeof(m), -1) != MSG_OK)
		log_warnx("%s: the front did not take it", __func__);
	else
		log_info("%s: test clock %lld", __func__, v);
}

/* The zone table, made once (tzdata changes with a package upgrade, which
 * restarts keepd). */
static int zones_fd = -1;
static size_t zones_len;

static void
send_zones(struct parent *ps)
{
	struct msg_zones m;

	if (zones_fd == -1 &&
	    (zones_fd = parent_zones_memfd(
	         "/usr/share/zoneinfo", &zones_len)) == -1)
		return;
	if (zones_len == 0 || zones_len > MSG_ZONES_MAX)
		return;
	memset(&m, 0, sizeof(m));
	m.len = zones_len;
	if (msg_send(ps->ctx.fd[PROC_FRONT], MSG_CTL_ZONES, 0, 0, &m, sizeof(m),
	        zones_fd) != MSG_OK)
		log_warnx("%s: the front did not take it", __func__);
}

/*
 * The certificates guests trust beside their image's (docs/vmm.md "Added
 * certificates"): guest.ca_file and the appliance's CA, read at start
 * (a bad file stops keepd) and at each reload (a bad file keeps what the
 * vmm has), and sent to the vmm with the rest of its setup.
 */
static int
load_guest_ca(struct parent *ps)
{
	struct guest_ca *ca;
	char path[PATH_MAX + 32], err[PATH_MAX + 128];

	if ((ca = calloc(1, sizeof(*ca))) == NULL) {
		log_warn("%s", __func__);
		return -1;
	}
	snprintf(path, sizeof(path), "%s/keys/appliance-ca.pem", ps->state);
	if ((ps->cfg.guest_ca_file[0] != '\0' &&
	        guest_ca_add_file(
	            ca, ps->cfg.guest_ca_file, 0, err, sizeof(err)) != 0) ||
	    guest_ca_add_file(ca, path, 1, err, sizeof(err)) != 0) {
		log_warnx("guest.ca_file: %s", err);
		free(ca);
		return -1;
	}
	if (ca->count > 0)
		log_info("guests trust %u added certificate(s)", ca->count);
	free(ps->guest_ca);
	ps->guest_ca = ca;
	return 0;
}

static void
send_guest_ca(struct parent *ps)
{
	if (msg_send(ps->ctx.fd[PROC_VMM], MSG_CTL_GUEST_CA, 0, 0,
	        ps->guest_ca != NULL ? ps->guest_ca->pem : NULL,
	        ps->guest_ca != NULL ? ps->guest_ca->len : 0, -1) != MSG_OK)
		log_warnx("%s: the vmm did not take it", __func__);
}

/* Everything a child gets from the parent after its start or a reload. */
static void
send_setup(struct parent *ps, enum proc_id c)
{
	if (c == PROC_FRONT)
		send_test_clock(ps);
	if (c == PROC_FRONT)
		send_zones(ps);
	send_config(ps, c);
	send_pubkeys(ps, c);
	if (c == PROC_FRONT)
		send_tls(ps);
	if (c == PROC_POLICY)
		send_mint_key(ps);
	if (c == PROC_FRONT || c == PROC_VMM)
		send_secret_key(ps, c);
	if (c == PROC_VMM)
		send_guest_ca(ps);
	if (c == PROC_POLICY)
		send_policy(ps);
	if (c == PROC_STORE)
		audit_keys(ps);
	if (c == PROC_EGRESS)
		egress_send_config(&ps->cfg, ps->ctx.fd[PROC_EGRESS]);
}

/*
 * In the forked child: bound its heap (RLIMIT_DATA: private writable
 * mappings, malloc's included), so that a child that leaks or is made to
 * hold too much fails its allocations (and answers 503) instead of
 * pushing the box into the OOM killer. The vmm and the vm processes it
 * forks also hold guest memory, up to memory_max each. Not under
 * AddressSanitizer, whose shadow memory is such a mapping.
 */
static int
child_memory_limit(const struct parent *ps, enum proc_id c)
{
#ifdef __SANITIZE_ADDRESS__
	(void)ps;
	(void)c;
	return 0;
#else
	struct rlimit rl;
	uint64_t max = ps->cfg.process_memory;

	if (max == 0)
		return 0;
	if (c == PROC_VMM)
		max += ps->cfg.memory_max;
	rl.rlim_cur = rl.rlim_max = (rlim_t)max;
	return setrlimit(RLIMIT_DATA, &rl);
#endif
}

/* In the forked child: put each descriptor at its fixed number. */
static void
place_fds(const int src[], const int dst[], size_t n)
{
	int tmp[PROC_COUNT + 2];
	size_t i;

	/* Via high numbers first, so no source is clobbered by a target. */
	for (i = 0; i < n; i++)
		if (src[i] >= 0 && (tmp[i] = fcntl(src[i], F_DUPFD, 64)) == -1)
			_exit(126);
	for (i = 0; i < n; i++)
		if (src[i] >= 0 && dup2(tmp[i], dst[i]) == -1)
			_exit(126);
	closefrom(PROC_FD_FIRST_FREE);
}

static int
spawn(struct parent *ps, enum proc_id c)
{
	const struct proc_info *info = &proc_table[c];
	int src[PROC_COUNT + 2], dst[PROC_COUNT + 2];
	int peer_end[PROC_COUNT], sv[2];
	char *argv[16], vflag[8] = "-v";
	const char *root;
	struct msg_peer pe;
	sigset_t all;
	enum proc_id p;
	size_t n = 0;
	int argc = 0, i;
	pid_t pid;

	for (p = 0; p < PROC_COUNT; p++)
		peer_end[p] = -1;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == -1) {
		log_warn("%s: socketpair", __func__);
		return -1;
	}
	src[n] = sv[1];
	dst[n++] = PROC_FD_LINK(PROC_PARENT);
	for (p = PROC_FRONT; p < PROC_COUNT; p++) {
		int pv[2];

		if (p == c || !proc_linked(c, p) || ps->ctx.fd[p] < 0)
			continue;
		if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pv) ==
		    -1) {
			log_warn("%s: socketpair", __func__);
			continue;
		}
		peer_end[p] = pv[0];
		src[n] = pv[1];
		dst[n++] = PROC_FD_LINK(p);
	}
	if (c == PROC_VMM && ps->kvm_fd >= 0) {
		src[n] = ps->kvm_fd;
		dst[n++] = PROC_FD_KVM;
	}
	if (c == PROC_FRONT && ps->listen_fd >= 0) {
		src[n] = ps->listen_fd;
		dst[n++] = PROC_FD_LISTEN;
	}

	root = child_root(ps, c);
	argv[argc++] = (char *)"keepd";
	argv[argc++] = (char *)"-P";
	argv[argc++] = (char *)info->name;
	if (root != NULL) {
		argv[argc++] = (char *)"-R";
		argv[argc++] = (char *)root;
	}
	if (ps->root_user) {
		argv[argc++] = (char *)"-U";
		argv[argc++] = ps->cfg.user;
	}
	if (ps->foreground)
		argv[argc++] = (char *)"-d";
	for (i = 0; i < ps->verbosity && i < 4; i++)
		vflag[1 + i] = 'v';
	vflag[1 + (ps->verbosity < 4 ? ps->verbosity : 4)] = '\0';
	if (ps->verbosity > 0)
		argv[argc++] = vflag;
	argv[argc] = NULL;

	switch (pid = fork()) {
	case -1:
		log_warn("%s: fork", __func__);
		close(sv[0]);
		close(sv[1]);
		for (i = 0; i < (int)n; i++)
			if (dst[i] != PROC_FD_KVM && dst[i] != PROC_FD_LISTEN &&
			    dst[i] != PROC_FD_LINK(PROC_PARENT))
				close(src[i]);
		for (p = 0; p < PROC_COUNT; p++)
			if (peer_end[p] >= 0)
				close(peer_end[p]);
		return -1;
	case 0:
		place_fds(src, dst, n);
		/* The vmm works in the state directory (images/, workspaces/),
		 * the store in its db/: chrooted there when keepd runs as
		 * root, and not otherwise. */
		if ((c == PROC_VMM && chdir(ps->state) == -1) ||
		    (c == PROC_STORE && chdir(ps->db) == -1))
			_exit(126);
		if (child_memory_limit(ps, c) == -1)
			_exit(126);
		sigemptyset(&all);
		sigprocmask(SIG_SETMASK, &all, NULL);
		/* Ctrl-C reaches the whole process group; the parent alone
		 * decides when children stop. */
		signal(SIGINT, SIG_IGN);
		signal(SIGHUP, SIG_IGN);
		signal(SIGPIPE, SIG_IGN);
		execv("/proc/self/exe", argv);
		_exit(127);
	}

	close(sv[1]);
	/* The parent never waits on a child: a child that stops reading
	 * makes sends fail (and is killed by the health check), it cannot
	 * block the parent. */
	if (fcntl(sv[0], F_SETFL, O_NONBLOCK) == -1)
		log_warn("%s: O_NONBLOCK", __func__);
	for (i = 1; i < (int)n; i++)
		if (dst[i] != PROC_FD_KVM && dst[i] != PROC_FD_LISTEN)
			close(src[i]);
	ps->ctx.fd[c] = sv[0];
	ps->child[c].pid = pid;
	ps->child[c].started = mono_ms();
	ps->child[c].restart_at = 0;
	ps->child[c].ready = 0;
	/* Hand each running peer its end of the new link. */
	for (p = PROC_FRONT; p < PROC_COUNT; p++) {
		if (peer_end[p] < 0)
			continue;
		memset(&pe, 0, sizeof(pe));
		pe.peer = c;
		if (msg_send(ps->ctx.fd[p], MSG_CTL_PEER, 0, 0, &pe, sizeof(pe),
		        peer_end[p]) != MSG_OK)
			log_warn("%s: peer link to %s", __func__, proc_name(p));
		close(peer_end[p]);
	}
	send_keys(ps, c);
	send_setup(ps, c);
	log_info("%s: started %s, pid %d", __func__, info->name, (int)pid);
	return 0;
}

static void
announce(struct parent *ps)
{
	enum proc_id p;

	for (p = PROC_FRONT; p < PROC_COUNT; p++)
		if (!ps->child[p].ready)
			return;
	if (ps->announced)
		return;
	ps->announced = 1;
	log_info("running: keepd: parent pid %d", (int)getpid());
	for (p = PROC_FRONT; p < PROC_COUNT; p++)
		log_info("running: keepd: %s pid %d, root %s, user %s",
		    proc_name(p), (int)ps->child[p].pid,
		    child_root(ps, p) != NULL ? child_root(ps, p) : "(none)",
		    ps->root_user ? ps->cfg.user : "(unchanged)");
	log_info("running: listening on %s port %u (the API is served by "
	         "the front)",
	    ps->cfg.listen_address, ps->cfg.listen_port);
}

static int
h_ready(struct proc_ctx *ctx, const struct msg *m)
{
	struct parent *ps = ctx->arg;
	struct msg_ready r;

	memcpy(&r, m->data, sizeof(r));
	if (r.proc != m->from || r.pid != (uint64_t)ps->child[m->from].pid)
		return -1;
	ps->child[m->from].ready = 1;
	ps->child[m->from].last_pong = mono_ms();
	log_info("%s: %s ready, pid %llu, seccomp %s", __func__,
	    proc_name(m->from), (unsigned long long)r.pid,
	    r.seccomp ? "on" : "off");
	announce(ps);
	return 0;
}

static int
h_pong(struct proc_ctx *ctx, const struct msg *m)
{
	struct parent *ps = ctx->arg;
	struct msg_ping p;

	memcpy(&p, m->data, sizeof(p));
	ps->child[m->from].last_pong = mono_ms();
	log_debug("%s: %s alive, %llu received, %llu dropped", __func__,
	    proc_name(m->from), (unsigned long long)p.nrecv,
	    (unsigned long long)p.ndropped);
	return 0;
}

static int
h_policy_loaded(struct proc_ctx *ctx, const struct msg *m)
{
	struct msg_policy_loaded r;
	char hex[65];

	memcpy(&r, m->data, sizeof(r));
	sodium_bin2hex(hex, sizeof(hex), r.hash, sizeof(r.hash));
	if (r.status == 0)
		log_info("%s: policy generation %llu in force, blake2b %s",
		    __func__, (unsigned long long)r.generation, hex);
	else
		log_warnx("%s: policy generation %llu refused (status %u); "
		          "the previous policy stays in force",
		    __func__, (unsigned long long)r.generation, r.status);
	return 0;
}

static int
h_stats(struct proc_ctx *ctx, const struct msg *m)
{
	return 0;
}

/* The store's answer to an audit append (audit_keys). */
static int
h_store_reply(struct proc_ctx *ctx, const struct msg *m)
{
	uint32_t status;

	if (store_wire_reply_status(m->data, m->hdr.len, &status) != STORE_OK)
		return -1;
	if (status != STORE_OK)
		log_warnx("%s: the store refused the keys entry: %s", __func__,
		    store_strerror((int)status));
	return 0;
}

static const struct msg_handler parent_handlers[] = {
	{ MSG_CTL_READY, MSG_ANY_PROC & ~PROC_BIT(PROC_PARENT),
	    sizeof(struct msg_ready), 0, h_ready },
	{ MSG_CTL_PONG, MSG_ANY_PROC & ~PROC_BIT(PROC_PARENT),
	    sizeof(struct msg_ping), 0, h_pong },
	{ MSG_CTL_STATS_REPLY, MSG_ANY_PROC & ~PROC_BIT(PROC_PARENT),
	    sizeof(struct msg_stats), 0, h_stats },
	{ MSG_POLICY_LOADED, PROC_BIT(PROC_POLICY),
	    sizeof(struct msg_policy_loaded), 0, h_policy_loaded },
	{ MSG_STORE_REPLY, PROC_BIT(PROC_STORE), MSG_MAX_PAYLOAD,
	    MSG_H_VARIABLE, h_store_reply },
};

static void
reap(struct parent *ps)
{
	struct child *ch;
	enum proc_id p;
	uint64_t now;
	pid_t pid;
	int st;

	while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
		for (p = PROC_FRONT; p < PROC_COUNT; p++)
			if (ps->child[p].pid == pid)
				break;
		if (p == PROC_COUNT)
			continue;
		ch = &ps->child[p];
		if (WIFSIGNALED(st))
			log_warnx("%s: %s (pid %d) killed by signal %d%s",
			    __func__, proc_name(p), (int)pid, WTERMSIG(st),
			    WTERMSIG(st) == SIGSYS ? " (seccomp)" : "");
		else
			log_warnx("%s: %s (pid %d) exited with status %d",
			    __func__, proc_name(p), (int)pid, WEXITSTATUS(st));
		ch->pid = 0;
		ch->ready = 0;
		if (ps->ctx.fd[p] >= 0) {
			close(ps->ctx.fd[p]);
			ps->ctx.fd[p] = -1;
		}
		if (ps->quitting)
			continue;
		now = mono_ms();
		if (now - ch->started >= BACKOFF_RESET_MS || ch->backoff == 0)
			ch->backoff = BACKOFF_MIN_MS;
		else if (ch->backoff * 2 <= ps->cfg.restart_backoff_max_ms)
			ch->backoff *= 2;
		else
			ch->backoff = ps->cfg.restart_backoff_max_ms;
		ch->restart_at = now + ch->backoff;
		log_info("%s: restarting %s in %llu ms", __func__, proc_name(p),
		    (unsigned long long)ch->backoff);
	}
}

static void
reload(struct parent *ps)
{
	struct keepd_config cfg;
	struct config_diag diag;
	enum proc_id p;
	size_t i;

	log_info("%s: SIGHUP: reloading %s", __func__, ps->cfgpath);
	if (config_load(ps->cfgpath, &cfg, &diag) != CONFIG_OK) {
		for (i = 0; i < diag.nerrors && i < CONFIG_ERRORS_MAX; i++)
			log_warnx("%s", diag.errors[i]);
		log_warnx(
		    "%s: configuration refused; the old one stays", __func__);
	} else {
		/* What is bound or created at start needs a restart. */
		if (strcmp(cfg.listen_address, ps->cfg.listen_address) != 0 ||
		    cfg.listen_port != ps->cfg.listen_port ||
		    strcmp(cfg.state_dir, ps->cfg.state_dir) != 0 ||
		    strcmp(cfg.user, ps->cfg.user) != 0)
			log_warnx("%s: listen, state_dir and user change "
			          "only on restart",
			    __func__);
		strlcpy(cfg.listen_address, ps->cfg.listen_address,
		    sizeof(cfg.listen_address));
		cfg.listen_port = ps->cfg.listen_port;
		strlcpy(
		    cfg.state_dir, ps->cfg.state_dir, sizeof(cfg.state_dir));
		strlcpy(cfg.user, ps->cfg.user, sizeof(cfg.user));
		ps->cfg = cfg;
	}
	if (load_guest_ca(ps) != 0)
		log_warnx(
		    "%s: the guests keep the certificates they had", __func__);
	for (p = PROC_FRONT; p < PROC_COUNT; p++)
		if (ps->ctx.fd[p] >= 0)
			send_setup(ps, p);
}

static void
stop_all(struct parent *ps)
{
	/* In waves, the store last: what the front (and then the policy,
	 * vmm and egress processes) write to the store as they stop (the
	 * last audit entries, the counted refusals) is in the store's
	 * sockets before it is told to stop, and it drains them then. */
	static const uint32_t waves[] = {
		PROC_BIT(PROC_FRONT),
		~(PROC_BIT(PROC_FRONT) | PROC_BIT(PROC_STORE)),
		PROC_BIT(PROC_STORE),
	};
	enum proc_id p;
	uint64_t deadline;
	size_t w;
	int left;

	ps->quitting = 1;
	deadline = mono_ms() + STOP_GRACE_MS;
	for (w = 0; w < nitems(waves); w++) {
		for (p = PROC_FRONT; p < PROC_COUNT; p++)
			if ((waves[w] & PROC_BIT(p)) && ps->child[p].pid > 0 &&
			    ps->ctx.fd[p] >= 0)
				msg_send(ps->ctx.fd[p], MSG_CTL_SHUTDOWN, 0, 0,
				    NULL, 0, -1);
		for (;;) {
			reap(ps);
			left = 0;
			for (p = PROC_FRONT; p < PROC_COUNT; p++)
				left += (waves[w] & PROC_BIT(p)) &&
				    ps->child[p].pid > 0;
			if (left == 0 || mono_ms() >= deadline)
				break;
			usleep(20000);
		}
	}
	for (p = PROC_FRONT; p < PROC_COUNT; p++) {
		if (ps->child[p].pid > 0) {
			log_warnx("%s: %s did not stop; killing it", __func__,
			    proc_name(p));
			kill(ps->child[p].pid, SIGKILL);
			waitpid(ps->child[p].pid, NULL, 0);
			ps->child[p].pid = 0;
		}
	}
}

static int
open_listener(struct parent *ps)
{
	struct sockaddr_storage ss;
	struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
	socklen_t sslen;
	int fd, one = 1;

	memset(&ss, 0, sizeof(ss));
	if (inet_pton(AF_INET, ps->cfg.listen_address, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons(ps->cfg.listen_port);
		sslen = sizeof(*sin);
	} else if (inet_pton(AF_INET6, ps->cfg.listen_address,
	               &sin6->sin6_addr) == 1) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(ps->cfg.listen_port);
		sslen = sizeof(*sin6);
	} else
		return -1;
	if ((fd = socket(ss.ss_family,
	         SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) == -1)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, sslen) == -1 ||
	    listen(fd, 511) == -1) {
		close(fd);
		return -1;
	}
	return fd;
}

static void
make_dir(const char *path, mode_t mode, uid_t uid, gid_t gid)
{
	if (mkdir(path, mode) == -1 && errno != EEXIST)
		fatal("%s: mkdir %s", __func__, path);
	if (chmod(path, mode) == -1)
		fatal("%s: chmod %s", __func__, path);
	if (uid != (uid_t)-1 && chown(path, uid, gid) == -1)
		fatal("%s: chown %s", __func__, path);
}

static void
setup(struct parent *ps)
{
	struct passwd *pw = NULL;
	enum proc_id p;
	sigset_t set;
	char *dup, *s;

	ps->root_user = geteuid() == 0;
	if (!ps->root_user)
		log_warnx("not started as root: children keep this user, no "
		          "chroot; seccomp and NO_NEW_PRIVS still apply");
	else if ((pw = getpwnam(ps->cfg.user)) == NULL)
		fatalx("user %s does not exist (make run creates it; or: "
		       "useradd --system --no-create-home --shell "
		       "/usr/sbin/nologin %s)",
		    ps->cfg.user, ps->cfg.user);

	/* mkdir -p the state directory, then make it absolute. */
	if ((dup = strdup(ps->cfg.state_dir)) == NULL)
		fatal("%s", __func__);
	for (s = dup + 1; *s != '\0'; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(dup, 0755) == -1 && errno != EEXIST)
			fatal("mkdir %s", dup);
		*s = '/';
	}
	free(dup);
	if (mkdir(ps->cfg.state_dir, 0755) == -1 && errno != EEXIST)
		fatal("mkdir %s", ps->cfg.state_dir);
	if (realpath(ps->cfg.state_dir, ps->state) == NULL)
		fatal("realpath %s", ps->cfg.state_dir);
	snprintf(ps->empty, sizeof(ps->empty), "%s/empty", ps->state);
	snprintf(ps->db, sizeof(ps->db), "%s/db", ps->state);
	make_dir(ps->empty, 0755, ps->root_user ? 0 : (uid_t)-1, 0);
	make_dir(ps->db, 0700, pw != NULL ? pw->pw_uid : (uid_t)-1,
	    pw != NULL ? pw->pw_gid : (gid_t)-1);
	{
		char d[PATH_MAX + 16];

		/* Images are the operator's: root-owned, read by the vmm.
		 * Workspaces and uploads are the vmm's. */
		snprintf(d, sizeof(d), "%s/images", ps->state);
		make_dir(d, 0755, ps->root_user ? 0 : (uid_t)-1, 0);
		snprintf(d, sizeof(d), "%s/workspaces", ps->state);
		make_dir(d, 0700, pw != NULL ? pw->pw_uid : (uid_t)-1,
		    pw != NULL ? pw->pw_gid : (gid_t)-1);
		/* Images uploaded through the API, verified by the vmm. */
		snprintf(d, sizeof(d), "%s/uploads", ps->state);
		make_dir(d, 0700, pw != NULL ? pw->pw_uid : (uid_t)-1,
		    pw != NULL ? pw->pw_gid : (gid_t)-1);
		/* Live contexts' journals and snapshots (docs/contexts.md). */
		snprintf(d, sizeof(d), "%s/contexts", ps->state);
		make_dir(d, 0700, pw != NULL ? pw->pw_uid : (uid_t)-1,
		    pw != NULL ? pw->pw_gid : (gid_t)-1);
	}

	/* Grant keys: made here, kept in locked memory, never written. */
	if (sodium_mlock(ps->keys, sizeof(ps->keys)) == -1)
		log_warn("%s: mlock of the grant keys", __func__);
	for (p = PROC_FRONT; p < PROC_COUNT; p++)
		randombytes_buf(ps->keys[p], sizeof(ps->keys[p]));

	load_mint_key(ps);
	load_secret_key(ps);
	/* The appliance CA before the guests' certificates are read: made
	 * later (egress_send_config), the first start's guests would trust
	 * it only after a reload. A failure is egress_send_config's to log. */
	{
		char akey[PATH_MAX], acert[PATH_MAX];
		int kn = snprintf(
		    akey, sizeof(akey), "%s/keys/appliance-ca.key", ps->state);
		int cn = snprintf(acert, sizeof(acert),
		    "%s/keys/appliance-ca.pem", ps->state);

		if (kn > 0 && (size_t)kn < sizeof(akey) && cn > 0 &&
		    (size_t)cn < sizeof(acert))
			(void)egress_appca_ensure(akey, acert);
	}
	if (load_guest_ca(ps) != 0)
		fatalx("guest.ca_file: refused (the reason is above)");

	/* The platform (docs/vmm.md): KVM where /dev/kvm opens, unless the
	 * operator chose trap; the trap platform elsewhere, unless the
	 * operator chose kvm, and then no guest runs (and each run says
	 * why). */
	ps->kvm_fd = -1;
	if (strcmp(ps->cfg.platform, "trap") != 0 &&
	    (ps->kvm_fd = open("/dev/kvm", O_RDWR | O_CLOEXEC)) == -1 &&
	    strcmp(ps->cfg.platform, "kvm") == 0)
		log_warn("platform kvm: /dev/kvm (no guest can run; "
		         "platform: auto or trap runs them without KVM)");
	log_info("platform: %s%s",
	    parent_platform(ps) == VMM_PLATFORM_KVM ? "kvm" : "trap",
	    ps->cfg.platform[0] == 'a' ? " (auto)" : "");
	if ((ps->listen_fd = open_listener(ps)) == -1)
		fatal("listen on %s port %u", ps->cfg.listen_address,
		    ps->cfg.listen_port);

	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	if (sigprocmask(SIG_BLOCK, &set, NULL) == -1 ||
	    (ps->sig_fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK)) == -1)
		fatal("signalfd");
	signal(SIGPIPE, SIG_IGN);
}

/* Ping every ready child; kill one that has stopped answering. */
static void
health(struct parent *ps, uint64_t now)
{
	struct msg_ping ping;
	struct child *ch;
	enum proc_id p;

	for (p = PROC_FRONT; p < PROC_COUNT; p++) {
		ch = &ps->child[p];
		if (ch->pid <= 0 || !ch->ready || ps->ctx.fd[p] < 0)
			continue;
		if (now - ch->last_pong > HEALTH_TIMEOUT_MS) {
			log_warnx("%s: %s (pid %d) has not answered for %llu "
			          "ms: killing it",
			    __func__, proc_name(p), (int)ch->pid,
			    (unsigned long long)(now - ch->last_pong));
			kill(ch->pid, SIGKILL);
			continue;
		}
		memset(&ping, 0, sizeof(ping));
		ping.seq = ++ps->ping_seq;
		ping.pid = (uint64_t)getpid();
		msg_send(ps->ctx.fd[p], MSG_CTL_PING, 0, ping.seq, &ping,
		    sizeof(ping), -1);
	}
}

int
parent_main(const struct keepd_config *cfg, const char *cfgpath, int foreground,
    int verbosity)
{
	static struct parent ps;
	static uint8_t buf[MSG_BUFSZ];
	struct pollfd pfd[PROC_COUNT + 1];
	enum proc_id who[PROC_COUNT + 1];
	struct signalfd_siginfo si;
	enum proc_id p;
	uint64_t now, next;
	int n, i, timeout, err;

	if (sodium_init() < 0)
		fatalx("sodium_init");
	ps.cfg = *cfg;
	ps.cfgpath = cfgpath;
	ps.foreground = foreground;
	ps.verbosity = verbosity;
	ps.ctx.self = PROC_PARENT;
	ps.ctx.handlers = parent_handlers;
	ps.ctx.nhandlers = nitems(parent_handlers);
	ps.ctx.arg = &ps;
	for (p = 0; p < PROC_COUNT; p++)
		ps.ctx.fd[p] = -1;
	setproctitle("parent");
	setup(&ps);
	for (p = PROC_FRONT; p < PROC_COUNT; p++)
		if (spawn(&ps, p) == -1)
			fatalx("cannot start %s", proc_name(p));

	ps.next_health = mono_ms() + HEALTH_INTERVAL_MS;
	while (!ps.quitting) {
		n = 0;
		pfd[n].fd = ps.sig_fd;
		pfd[n].events = POLLIN;
		who[n++] = PROC_PARENT;
		for (p = PROC_FRONT; p < PROC_COUNT; p++) {
			if (ps.ctx.fd[p] < 0)
				continue;
			pfd[n].fd = ps.ctx.fd[p];
			pfd[n].events = POLLIN;
			who[n++] = p;
		}
		now = mono_ms();
		next = ps.next_health;
		for (p = PROC_FRONT; p < PROC_COUNT; p++)
			if (ps.child[p].restart_at != 0 &&
			    (next == 0 || ps.child[p].restart_at < next))
				next = ps.child[p].restart_at;
		timeout = next == 0 ? -1 : next <= now ? 0 : (int)(next - now);
		if (poll(pfd, (nfds_t)n, timeout) == -1 && errno != EINTR)
			fatal("poll");
		if (pfd[0].revents & POLLIN) {
			while (read(ps.sig_fd, &si, sizeof(si)) ==
			    (ssize_t)sizeof(si)) {
				switch (si.ssi_signo) {
				case SIGCHLD:
					reap(&ps);
					break;
				case SIGHUP:
					reload(&ps);
					break;
				case SIGTERM:
				case SIGINT:
					log_info("signal %u: stopping",
					    si.ssi_signo);
					ps.quitting = 1;
					break;
				}
			}
		}
		for (i = 1; i < n && !ps.quitting; i++) {
			if (pfd[i].revents == 0 || ps.ctx.fd[who[i]] < 0)
				continue;
			err = msg_dispatch(&ps.ctx, who[i], buf, sizeof(buf));
			if (err != MSG_OK) {
				/* The child is going away; SIGCHLD restarts
				 * it. Stop polling a dead link. */
				close(ps.ctx.fd[who[i]]);
				ps.ctx.fd[who[i]] = -1;
			}
		}
		now = mono_ms();
		if (now >= ps.next_health) {
			health(&ps, now);
			ps.next_health = now + HEALTH_INTERVAL_MS;
		}
		for (p = PROC_FRONT; p < PROC_COUNT && !ps.quitting; p++) {
			if (ps.child[p].restart_at == 0 ||
			    ps.child[p].restart_at > now)
				continue;
			ps.child[p].restarts++;
			if (spawn(&ps, p) == -1)
				ps.child[p].restart_at =
				    now + ps.cfg.restart_backoff_max_ms;
			else
				log_info("restarted %s (restart %u)",
				    proc_name(p), ps.child[p].restarts);
		}
	}
	stop_all(&ps);
	log_info("stopped");
	return 0;
}
