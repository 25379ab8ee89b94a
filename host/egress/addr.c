/*
 * Address classification. Only global unicast is PUBLIC; every special
 * range a request could use to reach the box itself, its neighbours or a
 * cloud metadata service has a class, and the IPv6 forms that embed an
 * IPv4 address (mapped, compatible, NAT64, 6to4) are judged by the
 * address they embed.
 */
#include <arpa/inet.h>
#include <netinet/in.h>

#include <string.h>

#include "host/egress/egress.h"

static const char *const class_names[] = {
	[EGRESS_ADDR_PUBLIC] = "public",
	[EGRESS_ADDR_UNSPECIFIED] = "unspecified",
	[EGRESS_ADDR_LOOPBACK] = "loopback",
	[EGRESS_ADDR_PRIVATE] = "private",
	[EGRESS_ADDR_LINKLOCAL] = "link-local",
	[EGRESS_ADDR_CGNAT] = "cgnat",
	[EGRESS_ADDR_MULTICAST] = "multicast",
	[EGRESS_ADDR_BROADCAST] = "broadcast",
	[EGRESS_ADDR_DOCUMENTATION] = "documentation",
	[EGRESS_ADDR_METADATA] = "metadata",
	[EGRESS_ADDR_RESERVED] = "reserved",
};

const char *
egress_addr_class_name(int c)
{
	if (c < 0 || c >= EGRESS_ADDR_CLASS_LAST)
		return "unknown";
	return class_names[c];
}

struct v4range {
	uint32_t net;
	unsigned bits;
	enum egress_addr_class cls;
};

#define V4(a, b, c, d)                                                         \
	(((uint32_t)(a) << 24) | ((uint32_t)(b) << 16) |                       \
	    ((uint32_t)(c) << 8) | (uint32_t)(d))

/* First match wins, so the narrow ranges come before the wide ones. */
static const struct v4range v4ranges[] = {
	{ V4(169, 254, 169, 254), 32,
	    EGRESS_ADDR_METADATA }, /* AWS GCP Azure */
	{ V4(168, 63, 129, 16), 32, EGRESS_ADDR_METADATA }, /* Azure wire */
	{ V4(100, 100, 100, 200), 32, EGRESS_ADDR_METADATA }, /* Alibaba */
	{ V4(192, 0, 0, 192), 32, EGRESS_ADDR_METADATA }, /* Oracle */
	{ V4(255, 255, 255, 255), 32, EGRESS_ADDR_BROADCAST },
	{ V4(0, 0, 0, 0), 8, EGRESS_ADDR_UNSPECIFIED },
	{ V4(10, 0, 0, 0), 8, EGRESS_ADDR_PRIVATE },
	{ V4(100, 64, 0, 0), 10, EGRESS_ADDR_CGNAT },
	{ V4(127, 0, 0, 0), 8, EGRESS_ADDR_LOOPBACK },
	{ V4(169, 254, 0, 0), 16, EGRESS_ADDR_LINKLOCAL },
	{ V4(172, 16, 0, 0), 12, EGRESS_ADDR_PRIVATE },
	{ V4(192, 0, 0, 0), 24, EGRESS_ADDR_RESERVED }, /* IETF assignments */
	{ V4(192, 0, 2, 0), 24, EGRESS_ADDR_DOCUMENTATION },
	{ V4(192, 88, 99, 0), 24, EGRESS_ADDR_RESERVED }, /* 6to4 relay */
	{ V4(192, 168, 0, 0), 16, EGRESS_ADDR_PRIVATE },
	{ V4(198, 18, 0, 0), 15, EGRESS_ADDR_RESERVED }, /* benchmarking */
	{ V4(198, 51, 100, 0), 24, EGRESS_ADDR_DOCUMENTATION },
	{ V4(203, 0, 113, 0), 24, EGRESS_ADDR_DOCUMENTATION },
	{ V4(224, 0, 0, 0), 4, EGRESS_ADDR_MULTICAST },
	{ V4(240, 0, 0, 0), 4, EGRESS_ADDR_RESERVED },
};

static enum egress_addr_class
classify_v4(uint32_t a)
{
	size_t i;

	for (i = 0; i < sizeof(v4ranges) / sizeof(v4ranges[0]); i++) {
		uint32_t mask = v4ranges[i].bits == 0
		    ? 0
		    : ~(uint32_t)0 << (32 - v4ranges[i].bits);

		if ((a & mask) == v4ranges[i].net)
			return v4ranges[i].cls;
	}
	return EGRESS_ADDR_PUBLIC;
}

static uint32_t
be32(const uint8_t *p)
{
	return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) |
	    ((uint32_t)p[2] << 8) | (uint32_t)p[3];
}

static int
prefix(const uint8_t *a, const uint8_t *p, unsigned bits)
{
	unsigned full = bits / 8, rest = bits % 8;

	if (memcmp(a, p, full) != 0)
		return 0;
	if (rest == 0)
		return 1;
	return ((a[full] ^ p[full]) & (0xff00 >> rest)) == 0;
}

/* A non-public embedded address keeps its class; a public one is still
 * refused through a deprecated or local-only encoding. */
static enum egress_addr_class
embedded(uint32_t v4, enum egress_addr_class if_public)
{
	enum egress_addr_class c = classify_v4(v4);

	return c == EGRESS_ADDR_PUBLIC ? if_public : c;
}

static enum egress_addr_class
classify_v6(const uint8_t *a)
{
	static const uint8_t zero[16];
	static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff,
		0xff };
	static const uint8_t translated[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0xff,
		0xff, 0, 0 };
	static const uint8_t nat64[12] = { 0, 0x64, 0xff, 0x9b };
	static const uint8_t nat64local[6] = { 0, 0x64, 0xff, 0x9b, 0, 1 };
	static const uint8_t ec2meta[16] = { 0xfd, 0, 0x0e, 0xc2, 0, 0, 0, 0, 0,
		0, 0, 0, 0, 0, 0x02, 0x54 };
	static const uint8_t docs[4] = { 0x20, 0x01, 0x0d, 0xb8 };
	static const uint8_t docs2[3] = { 0x3f, 0xff, 0x00 };
	static const uint8_t teredo[4] = { 0x20, 0x01, 0, 0 };
	static const uint8_t ietf[3] = { 0x20, 0x01, 0x00 }; /* 2001::/23 */
	static const uint8_t discard[8] = { 0x01, 0x00 };
	static const uint8_t sixto4[2] = { 0x20, 0x02 };
	static const uint8_t ula[1] = { 0xfc };
	static const uint8_t ll[2] = { 0xfe, 0x80 };
	static const uint8_t sitelocal[2] = { 0xfe, 0xc0 };
	static const uint8_t global[1] = { 0x20 };

	if (memcmp(a, zero, 16) == 0)
		return EGRESS_ADDR_UNSPECIFIED;
	if (memcmp(a, zero, 15) == 0 && a[15] == 1)
		return EGRESS_ADDR_LOOPBACK;
	if (memcmp(a, mapped, 12) == 0)
		return classify_v4(be32(a + 12));
	if (memcmp(a, translated, 12) == 0 || memcmp(a, zero, 12) == 0)
		return embedded(be32(a + 12), EGRESS_ADDR_RESERVED);
	if (memcmp(a, nat64, 12) == 0)
		return classify_v4(be32(a + 12));
	if (prefix(a, nat64local, 48))
		return embedded(be32(a + 12), EGRESS_ADDR_PRIVATE);
	if (memcmp(a, ec2meta, 16) == 0)
		return EGRESS_ADDR_METADATA;
	if (a[0] == 0xff)
		return EGRESS_ADDR_MULTICAST;
	if (prefix(a, ll, 10))
		return EGRESS_ADDR_LINKLOCAL;
	if (prefix(a, sitelocal, 10) || prefix(a, ula, 7))
		return EGRESS_ADDR_PRIVATE;
	if (prefix(a, docs, 32) || prefix(a, docs2, 20))
		return EGRESS_ADDR_DOCUMENTATION;
	if (prefix(a, discard, 64) || prefix(a, teredo, 32) ||
	    prefix(a, ietf, 23))
		return EGRESS_ADDR_RESERVED;
	if (prefix(a, sixto4, 16))
		return embedded(be32(a + 2), EGRESS_ADDR_PUBLIC);
	if (!prefix(a, global, 3))
		return EGRESS_ADDR_RESERVED;
	return EGRESS_ADDR_PUBLIC;
}

enum egress_addr_class
egress_addr_classify(const struct sockaddr *sa, socklen_t salen)
{
	if (sa == NULL)
		return EGRESS_ADDR_RESERVED;
	if (sa->sa_family == AF_INET &&
	    salen >= (socklen_t)sizeof(struct sockaddr_in)) {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)sa;

		return classify_v4(ntohl(s4->sin_addr.s_addr));
	}
	if (sa->sa_family == AF_INET6 &&
	    salen >= (socklen_t)sizeof(struct sockaddr_in6)) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;

		return classify_v6(s6->sin6_addr.s6_addr);
	}
	return EGRESS_ADDR_RESERVED;
}

int
egress_addr_permitted(enum egress_addr_class c, const struct egress_rule *r)
{
	switch (c) {
	case EGRESS_ADDR_PUBLIC:
		return 0;
	case EGRESS_ADDR_UNSPECIFIED:
	case EGRESS_ADDR_MULTICAST:
	case EGRESS_ADDR_BROADCAST:
	case EGRESS_ADDR_CLASS_LAST:
		return EGRESS_E_ADDR_DENIED;
	case EGRESS_ADDR_METADATA:
		/* A wildcard rule with allow_private must not reach it. */
		if (r != NULL && r->allow_private && r->host[0] != '*')
			return 0;
		return EGRESS_E_ADDR_DENIED;
	case EGRESS_ADDR_LOOPBACK:
	case EGRESS_ADDR_PRIVATE:
	case EGRESS_ADDR_LINKLOCAL:
	case EGRESS_ADDR_CGNAT:
	case EGRESS_ADDR_DOCUMENTATION:
	case EGRESS_ADDR_RESERVED:
		return (r != NULL && r->allow_private) ? 0
		                                       : EGRESS_E_ADDR_DENIED;
	}
	return EGRESS_E_ADDR_DENIED;
}

int
egress_addr_equal(const struct sockaddr *a, socklen_t alen,
    const struct sockaddr *b, socklen_t blen)
{
	if (a == NULL || b == NULL || a->sa_family != b->sa_family)
		return 0;
	if (a->sa_family == AF_INET &&
	    alen >= (socklen_t)sizeof(struct sockaddr_in) &&
	    blen >= (socklen_t)sizeof(struct sockaddr_in)) {
		const struct sockaddr_in *x = (const void *)a;
		const struct sockaddr_in *y = (const void *)b;

		return x->sin_port == y->sin_port &&
		    x->sin_addr.s_addr == y->sin_addr.s_addr;
	}
	if (a->sa_family == AF_INET6 &&
	    alen >= (socklen_t)sizeof(struct sockaddr_in6) &&
	    blen >= (socklen_t)sizeof(struct sockaddr_in6)) {
		const struct sockaddr_in6 *x = (const void *)a;
		const struct sockaddr_in6 *y = (const void *)b;

		return x->sin6_port == y->sin6_port &&
		    memcmp(&x->sin6_addr, &y->sin6_addr, 16) == 0;
	}
	return 0;
}
