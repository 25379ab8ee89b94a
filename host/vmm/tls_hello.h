/*
 * A TLS ClientHello's server name (RFC 8446 4.1.2, RFC 6066 3), read
 * from the first bytes a guest sends on a connection keep made for it
 * by name (docs/egress.md, "Names and connections"): the name it asks
 * the server for must be the name keep resolved and connected.
 *
 * Pure (no I/O, no allocation) for the unit tests and the fuzzer
 * (fuzz/vmm_tls_hello.c); every byte is the guest's.
 */
#ifndef KEEP_HOST_VMM_TLS_HELLO_H
#define KEEP_HOST_VMM_TLS_HELLO_H

#include <stddef.h>
#include <stdint.h>

#define TLS_RECORD_HEADER 5
#define TLS_RECORD_MAX 16384 /* a plaintext record's fragment, 2^14 */
/* The most bytes ever looked at: one whole record. */
#define TLS_HELLO_MAX (TLS_RECORD_HEADER + TLS_RECORD_MAX)
#define TLS_SNI_MAX 253 /* a host name, presentation form */

enum tls_hello_result {
	TLS_HELLO_MORE = 0, /* a handshake record so far: *need bytes make it
			       whole */
	TLS_HELLO_SNI, /* a ClientHello naming a host: name holds it */
	TLS_HELLO_NO_SNI, /* a ClientHello without a host_name */
	TLS_HELLO_NOT_TLS, /* the bytes are no TLS handshake record */
	TLS_HELLO_MALFORMED /* a handshake record, but no well-formed
			       ClientHello in it (one split across
			       records included) */
};

/*
 * The first len bytes of a connection at p. With TLS_HELLO_SNI, name
 * (room for TLS_SNI_MAX + 1) holds the server name lower-cased, one
 * trailing dot dropped: [a-z0-9_.-], no empty label. With
 * TLS_HELLO_MORE, *need is the length of the whole record (at most
 * TLS_HELLO_MAX, more than len). The ClientHello must lie whole in the
 * first record (no client splits one that fits 16 KiB); extensions must
 * be well formed and fill the message exactly, server_name at most
 * once with exactly one host_name.
 */
enum tls_hello_result tls_hello_parse(
    const uint8_t *p, size_t len, char *name, size_t *need);

/* "more", "sni", "no-sni", "not-tls", "malformed". */
const char *tls_hello_result_name(enum tls_hello_result r);

#endif
