/*
 * The guest's resolver (docs/egress.md, "Names and connections"): the
 * images' /etc/resolv.conf names 127.0.0.53, where the vm process holds
 * a UDP socket in the run's own network namespace. A query a guest sends
 * there is answered by the VMM: a name the principal's egress rules
 * allow gets an address of keep's own from 198.18.0.0/15 (RFC 2544's
 * benchmarking range, never routed), one per name, stable for the run;
 * anything else NXDOMAIN. A connect to such an address then names
 * exactly one host name, which the egress process resolves and connects
 * to itself (host/vmm_egress.h).
 *
 * The parser and the table are pure (no I/O) for the unit tests and the
 * fuzzer (fuzz/vmm_dns.c); the guest writes every byte it reads.
 */
#ifndef KEEP_HOST_VMM_DNS_H
#define KEEP_HOST_VMM_DNS_H

#include <stddef.h>
#include <stdint.h>

#define DNS_SERVER_ADDR 0x7f000035u /* 127.0.0.53, host byte order */
#define DNS_SERVER_PORT 53
#define DNS_SYNTH_NET 0xc6120000u /* 198.18.0.0 */
#define DNS_SYNTH_MASK 0xfffe0000u /* /15 */
#define DNS_NAME_MAX 253 /* presentation form, no trailing dot */
#define DNS_UDP_MAX 512 /* the largest query looked at, and answer made */
#define DNS_TTL 60 /* seconds; the address lasts the run anyway */
#define DNS_TABLE_NAMES 4096 /* names one run may resolve */

/* Types and answer codes this resolver knows. */
#define DNS_TYPE_A 1
#define DNS_TYPE_AAAA 28
#define DNS_CLASS_IN 1
#define DNS_RCODE_OK 0
#define DNS_RCODE_FORMERR 1
#define DNS_RCODE_SERVFAIL 2
#define DNS_RCODE_NXDOMAIN 3
#define DNS_RCODE_NOTIMP 4
#define DNS_RCODE_REFUSED 5

/* dns_query_parse's answers. */
#define DNS_PARSE_OK 0
#define DNS_PARSE_DROP (-1) /* not a query one can answer: say nothing */
#define DNS_PARSE_FORMERR (-2) /* a query, malformed: FORMERR */
#define DNS_PARSE_NOTIMP (-3) /* an opcode other than QUERY: NOTIMP */
#define DNS_PARSE_BADNAME                                                      \
	(-4) /* well formed, a name no host has:
				  NXDOMAIN, nothing asked */

struct dns_query {
	uint16_t id;
	uint16_t flags; /* the query's, as sent */
	uint16_t qtype, qclass;
	size_t question_end; /* offset past the question in the packet */
	char name[DNS_NAME_MAX + 1]; /* lower case, no trailing dot */
};

/*
 * One query of len bytes at p into *q. The header must say QUERY with
 * one question; the name must be labels of 1..63 bytes, 253 in all, no
 * compression pointer; its bytes [A-Za-z0-9_-] (others: BADNAME, after
 * the question was read, so it can be answered). Answer and authority
 * counts must be 0; additional records (EDNS's OPT) are ignored. id and
 * flags are set whenever the header could be read (not DROP).
 */
int dns_query_parse(const uint8_t *p, size_t len, struct dns_query *q);

/*
 * The answer to query (len bytes, parsed into q) with rcode and, when
 * addr is not NULL and rcode is OK, one A record of addr (4 bytes,
 * network order). out has room for cap bytes (DNS_UDP_MAX is always
 * enough). With q->question_end 0 (a FORMERR or NOTIMP answer) the
 * question is left out. Returns the length, or 0 when it does not fit.
 */
size_t dns_answer_make(const uint8_t *query, const struct dns_query *q,
    int rcode, const uint8_t *addr, uint8_t *out, size_t cap);

/*
 * The table of names and their addresses, shared by the processes of a
 * run (a MAP_SHARED mapping made before the first fork): an address is
 * handed out once and names one name for the run's life. Entries are
 * only ever added.
 */
struct dns_table {
	uint32_t next; /* entries claimed */
	uint32_t pad;
	struct dns_entry {
		uint32_t ready; /* written whole */
		char name[DNS_NAME_MAX + 1];
	} e[DNS_TABLE_NAMES];
};

/* The address (host byte order) of entry i. */
static inline uint32_t
dns_table_addr(uint32_t i)
{
	return DNS_SYNTH_NET + i + 1;
}

/* Whether a (host byte order) lies in 198.18.0.0/15. */
static inline int
dns_synthetic(uint32_t a)
{
	return (a & DNS_SYNTH_MASK) == DNS_SYNTH_NET;
}

/* name's address (host byte order): 0 when it has none. */
uint32_t dns_table_find(const struct dns_table *t, const char *name);

/* name's address, given one now if need be: 0 when the table is full. */
uint32_t dns_table_add(struct dns_table *t, const char *name);

/* The name behind address a (host byte order): NULL when keep gave a
 * to no name. */
const char *dns_table_name(const struct dns_table *t, uint32_t a);

#endif
