/*
 * gen_seeds OUTDIR: writes the fuzz seed corpora whose inputs are binary
 * wire structures, built with the project's own encoders and structs
 * (struct grant, store_wire_*_encode, the store's record encoders, the
 * msg structs, egress_wire_encode_*), so a
 * layout change regenerates them instead of leaving seeds that stop at
 * the decoder's first refusal. `make fuzz-seeds` runs it into a scratch
 * directory and replaces fuzz/corpus/NAME for every NAME it writes;
 * tests/fuzz-seeds.sh checks that the committed corpora are its output.
 *
 * The output is deterministic: fixed times, no random nonces, no MACs
 * (the harnesses accept any grant whose decision is allow), so the same
 * tree gives the same bytes and git shows only real changes.
 *
 * Each seed is what its harness reads: for store_wire, byte 0 picks the
 * message type (the index in the harness's types[]), byte 1 the sender.
 */
#include <err.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "host/egress/egress.h"
#include "host/grant.h"
#include "host/msg.h"
#include "host/proc.h"
#include "host/proc_egress.h"
#include "host/store/store.h"
#include "host/store/store_wire.h"
#include "host/vmm/vmm.h"
#include "lib/caps.h"

/* Fixed instants, so the output never depends on the clock. */
#define T_CREATED 1767225600000LL /* 2026-01-01T00:00:00Z, in ms */
#define T_EXPIRES (T_CREATED + 3600 * 1000)

static const char *outdir;

/* Index of each message type in fuzz/store_wire.c's types[]. */
enum store_wire_seed_type {
	SW_PUT,
	SW_GET,
	SW_LIST,
	SW_DELETE,
	SW_AUDIT,
	SW_COUNTER,
	SW_REVOKED,
	SW_REPLY
};

static void
make_dir(const char *path)
{
	if (mkdir(path, 0755) != 0 && errno != EEXIST)
		err(1, "%s", path);
}

/* OUTDIR/corpus/name: the prefix bytes, then the payload. */
static void
write_seed(const char *corpus, const char *name, const uint8_t *prefix,
    size_t plen, const void *payload, size_t len)
{
	char path[4096];
	FILE *fp;

	snprintf(path, sizeof(path), "%s/%s", outdir, corpus);
	make_dir(path);
	snprintf(path, sizeof(path), "%s/%s/%s", outdir, corpus, name);
	if ((fp = fopen(path, "wb")) == NULL)
		err(1, "%s", path);
	if (fwrite(prefix, 1, plen, fp) != plen ||
	    (len > 0 && fwrite(payload, 1, len, fp) != len) || fclose(fp) != 0)
		err(1, "%s: write", path);
}

static void
check(int rc, const char *what)
{
	if (rc != 0)
		errx(1,
		    "%s: encoder refused the seed (rc %d): update "
		    "fuzz/seeds/gen_seeds.c to the new layout",
		    what, rc);
}

/* ---- store_wire ----------------------------------------------------- */

/*
 * A grant as the policy would mint it for the store (link PROC_STORE,
 * request id 1: the one fuzz/store_wire.c hands the service), allowing
 * cap on target for principal. Nonce and MAC stay zero: the harness's
 * verifier accepts any allow, and a real MAC would need a random nonce.
 */
static struct grant
seed_grant(uint32_t cap, const char *target, const char *principal)
{
	struct grant g;

	memset(&g, 0, sizeof(g));
	g.version = GRANT_VERSION;
	g.link = PROC_STORE;
	g.decision = GRANT_ALLOW;
	g.cap = cap;
	snprintf(g.principal, sizeof(g.principal), "%s", principal);
	grant_target_hash(target, strlen(target), g.target);
	g.reqid = 1;
	g.expires = (uint64_t)T_EXPIRES;
	return g;
}

static void
seed_store_wire(
    const char *name, unsigned type, unsigned from, void *msg, size_t len)
{
	const uint8_t prefix[2] = { (uint8_t)type, (uint8_t)from };

	write_seed("store_wire", name, prefix, sizeof(prefix), msg, len);
	free(msg);
}

/* A PUT of an encoded record (freed here), under a grant. */
static void
seed_put(const char *name, unsigned from, unsigned db, unsigned flags,
    const struct grant *g, void *rec, size_t rec_len)
{
	void *msg;
	size_t len;

	check(store_wire_put_encode(db, flags, g, rec, rec_len, &msg, &len),
	    name);
	free(rec);
	seed_store_wire(name, SW_PUT, from, msg, len);
}

static void
seed_key(const char *name, unsigned type, uint16_t msg_type, unsigned db,
    const char *k1, const char *k2, unsigned limit, const struct grant *g)
{
	void *msg;
	size_t len;

	check(store_wire_key_encode(msg_type, db, k1, k2, limit, g, &msg, &len),
	    name);
	seed_store_wire(name, type, PROC_FRONT, msg, len);
}

static struct store_sandbox
sandbox_record(void)
{
	struct store_sandbox s;

	memset(&s, 0, sizeof(s));
	s.id = "sbx_1";
	s.image = "js";
	s.owner = "agent-b";
	s.created_ms = T_CREATED;
	s.expires_ms = T_EXPIRES;
	s.status = STORE_SBX_RUNNING;
	s.nmeta = 1;
	s.meta_key[0] = "team";
	s.meta_val[0] = "infra";
	return s;
}

static void
gen_store_wire(void)
{
	struct store_sandbox s = sandbox_record();
	struct store_run r;
	struct store_revocation v;
	struct store_idem k;
	struct store_env e;
	struct store_file f;
	struct store_audit a[2];
	struct store_wire_reply h;
	struct grant g;
	void *rec, *msg;
	size_t rec_len, len;

	/* PUTs: one per record type the front, vmm and policy write. */
	check(store_sandbox_encode(&s, &rec, &rec_len), "sandbox");
	g = seed_grant(CAP_SANDBOX_WRITE, s.id, s.owner);
	seed_put(
	    "put_sandbox", PROC_FRONT, STORE_DB_SANDBOXES, 0, &g, rec, rec_len);

	memset(&r, 0, sizeof(r));
	r.sandbox = "sbx_1";
	r.id = "run_1";
	r.principal = "agent-b";
	r.command = "python";
	r.status = STORE_RUN_EXITED;
	r.exit_code = 0;
	r.started_ms = T_CREATED;
	r.finished_ms = T_CREATED + 2;
	r.out = "out";
	r.out_len = 3;
	r.err = "err";
	r.err_len = 3;
	r.reason = "";
	check(store_run_encode(&r, &rec, &rec_len), "run");
	g = seed_grant(CAP_EXEC, r.command, r.principal);
	seed_put("put_run", PROC_VMM, STORE_DB_RUNS, 0, &g, rec, rec_len);

	memset(&v, 0, sizeof(v));
	v.jti = "jti1";
	v.exp_s = T_EXPIRES / 1000;
	v.revoked_ms = T_CREATED;
	check(store_revocation_encode(&v, &rec, &rec_len), "revocation");
	g = seed_grant(CAP_ADMIN, v.jti, "agent-b");
	seed_put("put_revocation", PROC_FRONT, STORE_DB_REVOCATIONS, 0, &g, rec,
	    rec_len);

	memset(&k, 0, sizeof(k));
	k.principal = "agent-b";
	k.key = "key-1";
	k.created_ms = T_CREATED;
	memset(k.req_hash, 0x5a, sizeof(k.req_hash));
	k.status = 201;
	k.body = "{}";
	k.body_len = 2;
	check(store_idem_encode(&k, &rec, &rec_len), "idem");
	g = seed_grant(0, k.key, k.principal);
	seed_put("put_idem", PROC_FRONT, STORE_DB_IDEMPOTENCY, STORE_PUT_CREATE,
	    &g, rec, rec_len);

	memset(&e, 0, sizeof(e));
	e.sandbox = "sbx_1";
	e.key = "PATH";
	e.value = "/bin";
	check(store_env_encode(&e, &rec, &rec_len), "env");
	g = seed_grant(CAP_SANDBOX_WRITE, e.sandbox, "agent-b");
	seed_put("put_env", PROC_FRONT, STORE_DB_ENV, 0, &g, rec, rec_len);

	memset(&f, 0, sizeof(f));
	f.sandbox = "sbx_1";
	f.path = "/w/a.txt";
	f.mode = 0644;
	f.mtime_ms = T_CREATED;
	f.data = "abc";
	f.len = 3;
	check(store_file_encode(&f, &rec, &rec_len), "file");
	g = seed_grant(CAP_ARTIFACT_WRITE, f.sandbox, "agent-b");
	seed_put("put_file", PROC_FRONT, STORE_DB_FILES, 0, &g, rec, rec_len);

	/* Reads, a delete under its grant, the revocation check. */
	seed_key("get_sandbox", SW_GET, MSG_STORE_GET, STORE_DB_SANDBOXES,
	    "sbx_1", NULL, 0, NULL);
	seed_key("get_env", SW_GET, MSG_STORE_GET, STORE_DB_ENV, "sbx_1",
	    "PATH", 0, NULL);
	seed_key("list_sandboxes", SW_LIST, MSG_STORE_LIST, STORE_DB_SANDBOXES,
	    NULL, NULL, 10, NULL);
	seed_key("list_audit", SW_LIST, MSG_STORE_LIST, STORE_DB_AUDIT, NULL,
	    NULL, 10, NULL);
	seed_key("list_files", SW_LIST, MSG_STORE_LIST, STORE_DB_FILES, "sbx_1",
	    "/w", 10, NULL);
	g = seed_grant(CAP_SANDBOX_WRITE, "sbx_1", "agent-b");
	seed_key("delete_sandbox", SW_DELETE, MSG_STORE_DELETE,
	    STORE_DB_SANDBOXES, "sbx_1", NULL, 0, &g);
	seed_key("revoked", SW_REVOKED, MSG_STORE_REVOKED, STORE_DB_REVOCATIONS,
	    "jti1", NULL, 0, NULL);

	/* Audit appends (seq, prev and hash zero: the store sets them). */
	memset(a, 0, sizeof(a));
	a[0].time_ms = T_CREATED;
	a[0].request_id = "req-1";
	a[0].principal = "agent-b";
	a[0].jti = "jti1";
	a[0].action = "sandbox:write";
	a[0].target = "sbx_1";
	a[0].decision = STORE_DECISION_ALLOW;
	a[0].rule = "role builder";
	a[0].detail = "";
	a[0].client_request_id = "";
	a[1] = a[0];
	a[1].request_id = "";
	a[1].principal = "";
	a[1].jti = "";
	a[1].decision = STORE_DECISION_DENY;
	a[1].rule = "";
	check(store_wire_audit_encode(a, 1, &msg, &len), "audit_one");
	seed_store_wire("audit_one", SW_AUDIT, PROC_EGRESS, msg, len);
	check(store_wire_audit_encode(a, 2, &msg, &len), "audit_two");
	seed_store_wire("audit_two", SW_AUDIT, PROC_PARENT, msg, len);

	/* Quota counters, which only the policy process keeps. */
	check(store_wire_counter_encode(
	          STORE_COUNTER_ADD, "agent-b", "budget", 5, &msg, &len),
	    "counter_add");
	seed_store_wire("counter_add", SW_COUNTER, PROC_POLICY, msg, len);
	check(store_wire_counter_encode(
	          STORE_COUNTER_GET, "agent-b", "budget", 0, &msg, &len),
	    "counter_get");
	seed_store_wire("counter_get", SW_COUNTER, PROC_POLICY, msg, len);

	/* A reply carrying one record, for the reply decoder. The store has
	 * no public reply encoder (it only answers), so: its header struct,
	 * the record's uint32 length, the record. */
	check(store_sandbox_encode(&s, &rec, &rec_len), "reply record");
	memset(&h, 0, sizeof(h));
	h.version = STORE_WIRE_VERSION;
	h.status = STORE_OK;
	h.count = 1;
	len = sizeof(h) + sizeof(uint32_t) + rec_len;
	if ((msg = malloc(len)) == NULL)
		err(1, "malloc");
	memcpy(msg, &h, sizeof(h));
	memcpy((uint8_t *)msg + sizeof(h), &(uint32_t){ (uint32_t)rec_len },
	    sizeof(uint32_t));
	memcpy((uint8_t *)msg + sizeof(h) + sizeof(uint32_t), rec, rec_len);
	free(rec);
	seed_store_wire("reply", SW_REPLY, PROC_STORE, msg, len);
}

/* ---- host_msg ------------------------------------------------------- */

/*
 * fuzz/host_msg.c reads byte 0 as the sender (enum proc_id), bit 0 of
 * byte 1 as "a descriptor came with it", then the datagram: struct
 * msg_hdr and the payload. len_delta makes a header that lies about its
 * payload (the length checks' seeds).
 */
static void
seed_msg(const char *name, unsigned from, int fd, uint32_t type, uint32_t flags,
    uint32_t pad, const void *payload, size_t plen, long len_delta)
{
	const uint8_t prefix[2] = { (uint8_t)from, (uint8_t)(fd ? 1 : 0) };
	struct msg_hdr h;
	uint8_t *buf;

	memset(&h, 0, sizeof(h));
	h.type = type;
	h.flags = flags;
	h.reqid = 1;
	h.len = (uint32_t)((long)plen + len_delta);
	h.pad = pad;
	if ((buf = malloc(sizeof(h) + plen)) == NULL)
		err(1, "malloc");
	memcpy(buf, &h, sizeof(h));
	if (plen > 0)
		memcpy(buf + sizeof(h), payload, plen);
	write_seed(
	    "host_msg", name, prefix, sizeof(prefix), buf, sizeof(h) + plen);
	free(buf);
}

static void
gen_host_msg(void)
{
	static const uint8_t tiny[2] = { 0x00, 0x01 };
	static const uint8_t unknown[4];
	static const uint8_t variable[100];
	struct msg_ping ping;
	struct msg_grant_key gk;
	struct msg_peer peer;
	struct msg_config cfg;
	struct msg_pubkeys pk;
	struct msg_policy_load load;
	struct msg_policy_decide dec;
	struct msg_policy_decision dn;

	memset(&ping, 0, sizeof(ping));
	ping.seq = 1;
	seed_msg(
	    "ping", PROC_PARENT, 0, MSG_CTL_PING, 0, 0, &ping, sizeof(ping), 0);
	/* Refusals at the header: an unknown flag, a pad, a payload shorter
	 * than the header says, a payload size the type does not take. */
	seed_msg("flags", PROC_PARENT, 0, MSG_CTL_PING, 0x80, 0, &ping,
	    sizeof(ping), 0);
	seed_msg("reserved", PROC_PARENT, 0, MSG_CTL_PING, 0, 1, &ping,
	    sizeof(ping), 0);
	seed_msg("ping_lenmismatch", PROC_PARENT, 0, MSG_CTL_PING, 0, 0, &ping,
	    sizeof(ping) - 2, 2);
	seed_msg("ping_short", PROC_PARENT, 0, MSG_CTL_PING, 0, 0, &ping,
	    sizeof(ping) - 1, 0);
	write_seed("host_msg", "tiny", (const uint8_t[]){ PROC_PARENT, 0 }, 2,
	    tiny, sizeof(tiny));
	seed_msg("unknown", PROC_FRONT, 0, 0x9999, 0, 0, unknown,
	    sizeof(unknown), 0);

	memset(&gk, 0, sizeof(gk));
	gk.link = PROC_VMM;
	memset(gk.key, 0x11, sizeof(gk.key));
	seed_msg("grant_key", PROC_PARENT, 0, MSG_CTL_GRANT_KEY, 0, 0, &gk,
	    sizeof(gk), 0);

	memset(&peer, 0, sizeof(peer));
	peer.peer = PROC_POLICY;
	seed_msg("peer_fd", PROC_PARENT, 1, MSG_CTL_PEER, 0, 0, &peer,
	    sizeof(peer), 0);
	seed_msg("peer_nofd", PROC_PARENT, 0, MSG_CTL_PEER, 0, 0, &peer,
	    sizeof(peer), 0);

	seed_msg(
	    "shutdown", PROC_PARENT, 0, MSG_CTL_SHUTDOWN, 0, 0, NULL, 0, 0);
	seed_msg("shutdown_wrong_sender", PROC_FRONT, 0, MSG_CTL_SHUTDOWN, 0, 0,
	    NULL, 0, 0);

	memset(&cfg, 0, sizeof(cfg));
	cfg.max_request_body = 1 << 20;
	cfg.memory_default = 128u << 20;
	cfg.memory_max = 1u << 30;
	cfg.timeout_default_ms = 30000;
	cfg.timeout_max_ms = 600000;
	cfg.output_max = 1 << 20;
	cfg.workspace_max = 64u << 20;
	cfg.token_max_ttl_ms = 86400000;
	cfg.token_clock_skew_ms = 30000;
	cfg.max_connections = 1024;
	cfg.max_sandboxes = 256;
	cfg.listen_port = 8421;
	cfg.max_files = 256;
	cfg.store_reserve = 64u << 20;
	cfg.max_connections_per_client = 64;
	cfg.platform = VMM_PLATFORM_KVM;
	cfg.unauthenticated_timeout_ms = 10000;
	cfg.max_replies_pending = 64;
	snprintf(cfg.node, sizeof(cfg.node), "n1");
	snprintf(cfg.ports_domain, sizeof(cfg.ports_domain), "sbx.keep.test");
	seed_msg("config", PROC_PARENT, 0, MSG_CTL_CONFIG, 0, 0, &cfg,
	    sizeof(cfg), 0);

	memset(&pk, 0, sizeof(pk));
	pk.kind = MSG_PUBKEYS_TOKEN;
	pk.n = 1;
	snprintf(pk.keys[0], sizeof(pk.keys[0]),
	    "k4.public.Hd5PTnp2GX0rBvZQ0xFGvEHdEwnnRwlDE-7YDg4cDLk");
	seed_msg("pubkeys", PROC_PARENT, 0, MSG_CTL_PUBKEYS, 0, 0, &pk,
	    sizeof(pk), 0);

	memset(&load, 0, sizeof(load));
	load.size = 10;
	load.generation = 1;
	seed_msg("policy_load", PROC_PARENT, 1, MSG_POLICY_LOAD, 0, 0, &load,
	    sizeof(load), 0);

	memset(&dec, 0, sizeof(dec));
	dec.cap = CAP_EXEC;
	dec.link = PROC_VMM;
	dec.token_caps = 0xffff;
	snprintf(dec.principal, sizeof(dec.principal), "agent-b");
	memcpy(dec.target, "sbx_1", 5);
	dec.target_len = 5;
	seed_msg("decide", PROC_FRONT, 0, MSG_POLICY_DECIDE, 0, 0, &dec,
	    sizeof(dec), 0);

	/* A decision whose grant carries no MAC: the harness checks that
	 * without the key it never verifies. */
	memset(&dn, 0, sizeof(dn));
	dn.grant = seed_grant(CAP_EXEC, "sbx_1", "agent-b");
	dn.grant.link = PROC_VMM;
	dn.rule = 1;
	dn.line = 3;
	snprintf(dn.where, sizeof(dn.where), "main.keep:3:1");
	seed_msg("decision", PROC_POLICY, 0, MSG_POLICY_DECISION, 0, 0, &dn,
	    sizeof(dn), 0);

	seed_msg("variable", PROC_VMM, 0, MSG_FRONT_BASE, 0, 0, variable,
	    sizeof(variable), 0);
}

/* ---- egress_wire ---------------------------------------------------- */

/* fuzz/egress_wire.c: byte 0 picks FETCH, WEBHOOK or FETCH_REPLY (the
 * index in its types[]), the rest is the message. */
enum egress_wire_seed_type { EW_FETCH, EW_WEBHOOK, EW_REPLY };

static void
seed_egress_wire(const char *name, unsigned type, void *msg, size_t len)
{
	const uint8_t prefix[1] = { (uint8_t)type };

	write_seed("egress_wire", name, prefix, sizeof(prefix), msg, len);
	free(msg);
}

static void
gen_egress_wire(void)
{
	static const struct egress_header headers[] = {
		{ "Accept", "application/json" }, { "X-E", "" }
	};
	static const uint8_t secret[EGRESS_WEBHOOK_KEYBYTES] = { 1 };
	static const char body[] = "{\"a\":1}";
	static const char hook_body[] = "{\"exit_code\":0}";
	static const char resp_headers[] = "HTTP/1.1 200 OK\r\n\r\n";
	struct egress_rule rules[2];
	struct egress_limits lim;
	struct egress_request req;
	struct egress_webhook wh;
	struct egress_decision d;
	struct egress_response resp;
	void *msg;
	size_t len;

	memset(rules, 0, sizeof(rules));
	snprintf(rules[0].host, sizeof(rules[0].host), "api.github.com");
	rules[0].port = 443;
	snprintf(rules[1].host, sizeof(rules[1].host), "*.npmjs.org");
	rules[1].port = 0; /* any port */
	rules[1].allow_http = 1;
	rules[1].allow_private = 1;
	memset(&lim, 0, sizeof(lim));
	lim.max_request = 1 << 20;
	lim.max_response = 8 << 20;
	lim.max_resp_headers = 64 << 10;
	lim.timeout_ms = 30000;
	lim.connect_timeout_ms = 10000;
	lim.max_redirects = 5;
	lim.max_concurrent = 4;

	/* A message too short for the header: the decoder's first refusal. */
	write_seed("egress_wire", "empty_fetch", (const uint8_t[]){ EW_FETCH },
	    1, NULL, 0);

	memset(&req, 0, sizeof(req));
	req.principal = "agent-b";
	req.method = "GET";
	req.url = "https://api.github.com/x";
	req.url_len = strlen(req.url);
	req.rules = rules;
	req.nrules = 2;
	req.limits = lim;
	check(egress_wire_encode_fetch(&req, &msg, &len), "fetch_get");
	seed_egress_wire("fetch_get", EW_FETCH, msg, len);

	req.method = "POST";
	req.headers = headers;
	req.nheaders = sizeof(headers) / sizeof(headers[0]);
	req.body = body;
	req.body_len = sizeof(body) - 1;
	check(egress_wire_encode_fetch(&req, &msg, &len), "fetch_post");
	seed_egress_wire("fetch_post", EW_FETCH, msg, len);

	req.nrules = 1;
	check(egress_wire_encode_fetch(&req, &msg, &len), "fetch_1rule");
	seed_egress_wire("fetch_1rule", EW_FETCH, msg, len);

	memset(&wh, 0, sizeof(wh));
	wh.principal = "agent-b";
	wh.url = "https://hooks.npmjs.org/x";
	wh.delivery_id = "run-1";
	wh.body = hook_body;
	wh.body_len = sizeof(hook_body) - 1;
	wh.secret = secret;
	wh.rules = rules;
	wh.nrules = 2;
	wh.limits = lim;
	wh.max_attempts = 3;
	wh.backoff_ms = 100;
	wh.max_backoff_ms = 1000;
	check(egress_wire_encode_webhook(&wh, &msg, &len), "webhook");
	seed_egress_wire("webhook", EW_WEBHOOK, msg, len);

	/* The reply egress makes for an allowed fetch that got a 200. */
	memset(&d, 0, sizeof(d));
	d.allowed = 1;
	d.rule = 0;
	d.addr_class = 0;
	snprintf(d.host, sizeof(d.host), "api.github.com");
	d.port = 443;
	snprintf(d.addr, sizeof(d.addr), "140.82.112.5");
	d.status = 200;
	d.bytes_in = 5;
	memset(&resp, 0, sizeof(resp));
	resp.status = 200;
	resp.headers = (char *)resp_headers;
	resp.headers_len = sizeof(resp_headers) - 1;
	resp.body = (uint8_t *)"hello";
	resp.body_len = 5;
	check(egress_wire_encode_reply(&d, 1, &resp, &msg, &len), "reply");
	seed_egress_wire("reply", EW_REPLY, msg, len);
}

/* egress_direct: a vm process's datagrams on its run's direct link. */
static void
seed_direct(const char *name, uint32_t op, uint16_t port, const char *host)
{
	struct msg_egress_direct q;
	struct msg_hdr h;
	uint8_t buf[sizeof(h) + sizeof(q)];

	memset(&h, 0, sizeof(h));
	h.type = MSG_EGRESS_DIRECT;
	h.reqid = 7;
	h.len = sizeof(q);
	memset(&q, 0, sizeof(q));
	q.op = op;
	q.port = port;
	strlcpy(q.name, host, sizeof(q.name));
	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(h), &q, sizeof(q));
	write_seed("egress_direct", name, NULL, 0, buf, sizeof(buf));
}

static void
gen_egress_direct(void)
{
	seed_direct("kept", VMM_NET_CONNECT, 443, "reuse.test");
	seed_direct("other_port", VMM_NET_CONNECT, 80, "reuse.test");
	seed_direct("udp_addr", VMM_NET_UDP_ADDR, 53, "[fd00::1]");
}

int
main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: gen_seeds OUTDIR\n");
		return 2;
	}
	outdir = argv[1];
	make_dir(outdir);
	gen_store_wire();
	gen_host_msg();
	gen_egress_wire();
	gen_egress_direct();
	return 0;
}
