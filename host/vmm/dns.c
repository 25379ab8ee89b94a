/*
 * The guest resolver's packets and names (host/vmm/dns.h). Every byte
 * of a query is the guest's: each read is bounded by the packet's
 * length, nothing is followed (no compression pointer in a question),
 * and an answer is built only from what was checked.
 */
#include <string.h>

#include "host/vmm/dns.h"

#define HDR_LEN 12
#define QR 0x8000u
#define OPCODE(f) (((f) >> 11) & 0xfu)
#define RD 0x0100u
#define AA 0x0400u
#define RA 0x0080u

static uint16_t
get16(const uint8_t *p)
{
	return (uint16_t)((p[0] << 8) | p[1]);
}

static void
put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static int
name_char(uint8_t c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') || c == '-' || c == '_';
}

int
dns_query_parse(const uint8_t *p, size_t len, struct dns_query *q)
{
	size_t off = HDR_LEN, n = 0;
	int bad = 0;
	uint8_t l;

	memset(q, 0, sizeof(*q));
	if (len < HDR_LEN || len > DNS_UDP_MAX)
		return DNS_PARSE_DROP;
	q->id = get16(p);
	q->flags = get16(p + 2);
	if (q->flags & QR)
		return DNS_PARSE_DROP; /* an answer: never answer one */
	if (OPCODE(q->flags) != 0)
		return DNS_PARSE_NOTIMP;
	if (get16(p + 4) != 1 || get16(p + 6) != 0 || get16(p + 8) != 0)
		return DNS_PARSE_FORMERR;
	for (;;) {
		if (off >= len)
			return DNS_PARSE_FORMERR;
		l = p[off++];
		if (l == 0)
			break;
		if (l > 63) /* a pointer (0xc0) or a reserved label type */
			return DNS_PARSE_FORMERR;
		if ((size_t)l > len - off)
			return DNS_PARSE_FORMERR;
		if (n + (n > 0) + l > DNS_NAME_MAX) {
			bad = 1;
			off += l;
			continue;
		}
		if (n > 0)
			q->name[n++] = '.';
		for (size_t i = 0; i < l; i++) {
			uint8_t c = p[off + i];

			if (!name_char(c))
				bad = 1;
			q->name[n++] =
			    (char)(c >= 'A' && c <= 'Z' ? c + 32
			                                : (c ? c : '?'));
		}
		off += l;
	}
	q->name[n] = '\0';
	if (len - off < 4)
		return DNS_PARSE_FORMERR;
	q->qtype = get16(p + off);
	q->qclass = get16(p + off + 2);
	q->question_end = off + 4;
	if (bad || n == 0)
		return DNS_PARSE_BADNAME;
	return DNS_PARSE_OK;
}

size_t
dns_answer_make(const uint8_t *query, const struct dns_query *q, int rcode,
    const uint8_t *addr, uint8_t *out, size_t cap)
{
	size_t qlen = q->question_end, len;
	int an = addr != NULL && rcode == DNS_RCODE_OK;

	if (qlen > DNS_UDP_MAX || (qlen != 0 && qlen < HDR_LEN))
		return 0;
	len = (qlen ? qlen : HDR_LEN) + (an ? 16 : 0);
	if (len > cap)
		return 0;
	memset(out, 0, HDR_LEN);
	if (qlen != 0)
		memcpy(out + HDR_LEN, query + HDR_LEN, qlen - HDR_LEN);
	put16(out, q->id);
	put16(out + 2,
	    (uint16_t)(QR | AA | RA | (q->flags & RD) | (q->flags & 0x7800u) |
	        (rcode & 0xf)));
	put16(out + 4, qlen != 0 ? 1 : 0);
	put16(out + 6, an ? 1 : 0);
	if (an) {
		uint8_t *a = out + qlen;

		put16(a, 0xc000 | HDR_LEN); /* the question's name */
		put16(a + 2, DNS_TYPE_A);
		put16(a + 4, DNS_CLASS_IN);
		put16(a + 6, 0);
		put16(a + 8, DNS_TTL);
		put16(a + 10, 4);
		memcpy(a + 12, addr, 4);
	}
	return len;
}

uint32_t
dns_table_find(const struct dns_table *t, const char *name)
{
	uint32_t n = __atomic_load_n(&t->next, __ATOMIC_ACQUIRE), i;

	if (n > DNS_TABLE_NAMES)
		n = DNS_TABLE_NAMES;
	for (i = 0; i < n; i++)
		if (__atomic_load_n(&t->e[i].ready, __ATOMIC_ACQUIRE) &&
		    strcmp(t->e[i].name, name) == 0)
			return dns_table_addr(i);
	return 0;
}

uint32_t
dns_table_add(struct dns_table *t, const char *name)
{
	uint32_t a, i;

	if ((a = dns_table_find(t, name)) != 0)
		return a;
	if (strlen(name) > DNS_NAME_MAX)
		return 0;
	/* Two processes adding one name at once give it two addresses,
	 * each naming it alone: harmless. */
	i = __atomic_fetch_add(&t->next, 1, __ATOMIC_ACQ_REL);
	if (i >= DNS_TABLE_NAMES) {
		__atomic_store_n(&t->next, DNS_TABLE_NAMES, __ATOMIC_RELEASE);
		return 0;
	}
	strlcpy(t->e[i].name, name, sizeof(t->e[i].name));
	__atomic_store_n(&t->e[i].ready, 1, __ATOMIC_RELEASE);
	return dns_table_addr(i);
}

const char *
dns_table_name(const struct dns_table *t, uint32_t a)
{
	uint32_t i;

	if (!dns_synthetic(a) || a == DNS_SYNTH_NET)
		return NULL;
	i = a - DNS_SYNTH_NET - 1;
	if (i >= DNS_TABLE_NAMES ||
	    i >= __atomic_load_n(&t->next, __ATOMIC_ACQUIRE) ||
	    !__atomic_load_n(&t->e[i].ready, __ATOMIC_ACQUIRE))
		return NULL;
	return t->e[i].name;
}
