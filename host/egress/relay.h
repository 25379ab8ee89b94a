/*
 * The TLS relay of a connection whose destination injects a secret
 * (host/egress/relay.c; docs/egress.md, "Secrets injected at egress").
 * Run in a worker the egress process forks for that one connection.
 */
#ifndef KEEP_HOST_EGRESS_RELAY_H
#define KEEP_HOST_EGRESS_RELAY_H

#include <stddef.h>
#include <stdint.h>

#include "host/egress/inject.h"

struct egress_relay_cfg {
	struct egress_inject inject; /* name, port, header, placeholder,
					value (may be empty) */
	const void *ca_bundle; /* PEM, to verify the real server */
	size_t ca_len;
	const void *appca_cert, *appca_key; /* PEM: signs the guest's leaf */
	size_t appca_cert_len, appca_key_len;
	uint32_t idle_ms; /* no byte either way for this long: closed */
};

struct egress_relay_result {
	int refused; /* 1: a request refused (the guest got a 403 when the
			head was at fault, else the connection was cut) */
	int upstream_failed; /* the server's TLS did not verify or failed */
	unsigned replaced; /* placeholders replaced by the value */
	char method[17]; /* of the request, for the audit log */
	char why[160]; /* refusal or failure, for the audit log */
	uint64_t bytes_out, bytes_in; /* guest to server, server to guest */
};

/*
 * Serve one connection: guest_fd is the vm process's peer (a TCP socket
 * whose other end the guest holds), upstream_fd the connected socket to
 * the real server. Terminates the guest's TLS with a leaf for the name
 * signed by the appliance CA (ALPN http/1.1 only), reads one request
 * head (egress_inject_head), opens TLS to the server with full
 * verification against ca_bundle and SNI = the name, sends the
 * rewritten head, then relays both ways, scanning what the guest sends
 * after the head for the placeholder marker, until the server closes.
 * Closes neither descriptor. SIGPIPE must be ignored (it is in every
 * keepd process: host/parent.c), as a peer may close at any time.
 * Returns 0, or -1 when the connection ended refused or failed (*r
 * says why).
 */
int egress_relay_run(const struct egress_relay_cfg *c, int guest_fd,
    int upstream_fd, struct egress_relay_result *r);

/*
 * A connection that injects nothing, of a run that holds placeholders:
 * bytes relayed as they are both ways, what the guest sends scanned
 * for the placeholder marker; the connection is cut when it appears
 * (a placeholder in clear to another name). TLS to another name passes
 * unread: its bytes are ciphertext. Returns 0, or -1 when cut.
 */
int egress_relay_scan(int guest_fd, int upstream_fd, uint32_t idle_ms,
    struct egress_relay_result *r);

#endif
