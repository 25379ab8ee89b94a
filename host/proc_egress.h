/*
 * The `keepd: egress` process's messages (host/proc_egress.c). The wire
 * bytes of a request or reply (host/egress/egress.h, egress_wire_*) are
 * larger than a link's datagram, so they travel in a sealed memfd; the
 * datagram carries the grant and the memfd's size.
 *
 *	vmm   -> egress	MSG_EGRESS_FETCH	msg_egress_req + memfd
 *	egress -> vmm	MSG_EGRESS_FETCH_REPLY	msg_egress_rep + memfd
 *	front -> egress	MSG_EGRESS_WEBHOOK	msg_egress_req + memfd
 *	egress -> front	MSG_EGRESS_WEBHOOK_REPLY msg_egress_rep + memfd
 *	parent -> egress MSG_EGRESS_CONFIG	msg_egress_config + memfd
 *
 * The request's grant is the policy's, minted for link egress with the
 * request id of the message that carries it, cap `egress`, its target
 * egress_grant_target() of the request's one rule. A deny grant is
 * relayed too: the egress process verifies it, audits the refusal and
 * answers EGRESS_E_NOT_ALLOWED, so every decision is recorded in one
 * place. A webhook's grant is for the sandbox's owner, and the secret in
 * its request is replaced by the one the egress process derives.
 */
#ifndef KEEP_HOST_PROC_EGRESS_H
#define KEEP_HOST_PROC_EGRESS_H

#include <stdint.h>

#include "host/config.h"
#include "host/egress/egress.h"
#include "host/grant.h"
#include "host/msg.h"

#define MSG_EGRESS_CONFIG (MSG_EGRESS_BASE + 0x05)
/* front -> egress: a sandbox's webhook secret, to give its creator. */
#define MSG_EGRESS_SECRET (MSG_EGRESS_BASE + 0x06) /* msg_egress_secret */
#define MSG_EGRESS_SECRET_REPLY (MSG_EGRESS_BASE + 0x07)

/* vmm -> egress: a guest's name query or connection (msg_egress_name);
 * egress -> vmm: msg_egress_name_reply, as MSG_EGRESS_NAME_SOCKET with
 * the connected socket when there is one. */
#define MSG_EGRESS_NAME (MSG_EGRESS_BASE + 0x08)
#define MSG_EGRESS_NAME_REPLY (MSG_EGRESS_BASE + 0x09) /* no socket */
#define MSG_EGRESS_NAME_SOCKET (MSG_EGRESS_BASE + 0x0a) /* + the socket */

/*
 * The grant is the policy's for cap egress and the run's principal:
 * for a query (op VMM_NET_RESOLVE, port 0) its target is "name:*" (any
 * port of a rule for the name); for a connect, egress_grant_target() of
 * name, port and the flags below, which egress recomputes (for an
 * address, the name is its canonical text with brackets around IPv6,
 * as the policy's target "ADDR:PORT" writes it).
 */
struct msg_egress_name {
	struct grant grant;
	char principal[GRANT_PRINCIPAL_MAX];
	char name[256]; /* NUL-terminated */
	char sandbox[72];
	char request_id[40];
	uint32_t op; /* VMM_NET_RESOLVE, VMM_NET_CONNECT or _CONNECT_ADDR
			(name: "10.1.2.3" or "[fd00::1]") */
	uint32_t policy_reason; /* of a denied grant */
	uint16_t port;
	uint8_t allow_http, allow_private;
	/* A connect's decision the policy let the run reuse (its
	 * msg_policy_decision's reuse_ms, what is left of it, and
	 * generation): once connected, egress keeps it for the run's
	 * direct link (MSG_EGRESS_RUN) that run names; reuse_ms 0 or run
	 * 0: nothing kept. */
	uint32_t reuse_ms;
	uint32_t generation;
	uint32_t pad;
	uint64_t run;
};

/*
 * vmm -> egress: a run's direct link (docs/egress.md, "Direct links"),
 * with one end of a socketpair whose other end is the run's vm
 * processes'. Egress keeps the run's connect decisions the policy let it
 * reuse (msg_egress_name's reuse_ms), at most EGRESS_RUN_REUSE_MAX, and
 * a vm process asks on the link (MSG_EGRESS_DIRECT) for a connect one of
 * them allows: egress verifies and connects as for the vmm and answers
 * the socket itself, two hops fewer. Anything else is a miss, which the
 * vm process asks the vmm as before. Who the run is comes from here,
 * never from the link. Dropped when the link's last vm process closes
 * it; decisions dropped on every policy load (MSG_POLICY_CHANGED).
 */
#define MSG_EGRESS_RUN (MSG_EGRESS_BASE + 0x0c) /* + the socket */
#define EGRESS_RUNS_MAX 64
#define EGRESS_RUN_REUSE_MAX 8
struct msg_egress_run {
	uint64_t run; /* the vmm's id for it, not 0 */
	char principal[GRANT_PRINCIPAL_MAX];
	char sandbox[72];
	char request_id[40];
};

/* vm -> egress on a direct link, the header's reqid the vm's own: a
 * connect (op VMM_NET_CONNECT or _UDP, by name; _CONNECT_ADDR or
 * _UDP_ADDR, by canonical address text) to name:port. */
#define MSG_EGRESS_DIRECT (MSG_EGRESS_BASE + 0x0d)
#define MSG_EGRESS_DIRECT_REPLY (MSG_EGRESS_BASE + 0x0e) /* socket or none */
struct msg_egress_direct {
	uint32_t op;
	uint16_t port;
	uint16_t pad;
	char name[256]; /* NUL-terminated */
};

struct msg_egress_direct_reply {
	int32_t error; /* 0 or a positive errno */
	uint32_t refused; /* 1: the decision or egress's checks refused */
	uint32_t miss; /* 1: no decision kept for it: ask the vmm */
	uint32_t pad;
};

/*
 * vmm -> egress: a connect to a destination whose policy entry injects
 * a secret (docs/egress.md, "Secrets injected at egress"). The grant's
 * target is egress_grant_target_inject() of name, port, flags, secret
 * and header. The value is the run's (the vmm opened it under the
 * run's secret:read grant), value_len 0 when the run was not given the
 * secret: the connection is then relayed with nothing substituted. The
 * reply is MSG_EGRESS_NAME_REPLY or _SOCKET, as for a plain connect.
 * With secret and header "" (and no value), the grant is a plain
 * connect's: a run that holds placeholders connects elsewhere, and
 * egress relays the bytes scanning for them.
 */
#define MSG_EGRESS_INJECT (MSG_EGRESS_BASE + 0x0b)
struct msg_egress_inject {
	struct msg_egress_name name; /* op VMM_NET_CONNECT */
	char secret[64]; /* NUL-terminated */
	char header[64]; /* NUL-terminated */
	char placeholder[128]; /* NUL-terminated; "" with no value */
	uint32_t value_len; /* 0..4096 */
	uint32_t pad;
	uint8_t value[4096];
};

struct msg_egress_name_reply {
	int32_t error; /* 0 or a positive errno */
	uint32_t refused;
};

struct msg_egress_secret {
	char sandbox[72]; /* NUL-terminated */
	char hex[2 * EGRESS_WEBHOOK_KEYBYTES + 1]; /* reply: "" if none */
	uint8_t pad[7];
};

#define EGRESS_MSG_MAX (EGRESS_WIRE_MAX_BODY + (1u << 20)) /* a request */
#define EGRESS_REPLY_MAX (EGRESS_WIRE_MAX_RESPONSE + (2u << 20))

struct msg_egress_req {
	struct grant grant;
	uint64_t len; /* bytes of wire request in the memfd */
	char sandbox[72]; /* the sandbox id, NUL-terminated */
	char request_id[40]; /* the API request behind it, for the audit
				log; NUL-terminated, "" if unknown */
	uint32_t policy_reason; /* enum policy_reason of a denied grant */
	uint32_t pad0;
};

struct msg_egress_rep {
	uint64_t len; /* bytes of wire reply in the memfd */
};

/* Limits and sizes; the memfd holds the CA bundle, the hosts table, the
 * webhook master key and the resolv.conf text, back to back. */
struct msg_egress_config {
	uint64_t max_request, max_response;
	uint64_t timeout_ms, connect_timeout_ms;
	uint64_t webhook_backoff_ms;
	uint32_t max_redirects, max_concurrent;
	uint32_t webhook_attempts;
	uint32_t key_len; /* 0 or EGRESS_WEBHOOK_KEYBYTES */
	uint64_t ca_len, hosts_len;
	uint64_t resolv_len; /* egress.resolv_conf's text, last in the memfd */
	uint32_t dns_port;
	uint32_t pad;
	/* The appliance CA's certificate and key (PEM), after resolv's
	 * text: egress signs the leaves of the names it injects into. */
	uint64_t appca_cert_len, appca_key_len;
};

/*
 * Parent side: read egress.ca_file, egress.hosts_file and
 * egress.webhook_key_file (as root, before the child can), make the
 * appliance CA under <state_dir>/keys/ if it is missing, and send them
 * with the limits on fd. Logs and sends what it could on failure.
 */
void egress_send_config(const struct keepd_config *cfg, int fd);

/*
 * Which flags (allow_http, allow_private) the policy bound into an egress
 * grant's target for host:port (egress_grant_target). A relay reads
 * them from the hash; it cannot forge them, and egress checks again.
 * No match (a deny's target has none): both 0.
 */
void egress_grant_flags(const struct grant *g, const char *host, uint16_t port,
    uint8_t *http, uint8_t *priv);
/* The same for a UDP grant when udp is 1 (egress_grant_target_proto). */
void egress_grant_flags_proto(const struct grant *g, const char *host,
    uint16_t port, int udp, uint8_t *http, uint8_t *priv);

/*
 * The egress process's check of a request's grant (in message m, which
 * carried it): authentic for this process's link and m's request id,
 * unexpired, cap `egress`, for the request's principal, and its target
 * hash equal to egress_grant_target() of the request's one rule (host,
 * port, http, private). Returns GRANT_OK, GRANT_ERR_DENIED (an authentic
 * refusal for exactly this destination) or another GRANT_ERR_*; *g gets
 * the grant when it is authentic.
 */
struct proc_ctx;
struct msg;
int egress_check_grant(const struct proc_ctx *ctx, const struct msg *m,
    const struct grant *in, const char *principal,
    const struct egress_rule *rules, size_t nrules, struct grant *g);

#endif
