/*
 * Opening and validating an image. Every byte of the file is untrusted:
 * the header's sizes, counts and offsets, each string's termination and
 * alphabet, each file's bounds, alignment and hash, the padding between
 * them, and the exact total length are checked before anything is used.
 */
#include <sys/mman.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "image/format.h"
#include "image/image.h"
#include "image/image_int.h"

int
image_fail(char *err, size_t errlen, int code, const char *fmt, ...)
{
	va_list ap;

	if (err != NULL && errlen > 0) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return code;
}

const char *
image_strerror(int err)
{
	switch (err) {
	case IMAGE_OK:
		return "ok";
	case IMAGE_E_IO:
		return "I/O error";
	case IMAGE_E_FORMAT:
		return "malformed image";
	case IMAGE_E_VERSION:
		return "unsupported image format version";
	case IMAGE_E_HASH:
		return "file hash mismatch";
	case IMAGE_E_UNSIGNED:
		return "image is not signed";
	case IMAGE_E_UNTRUSTED:
		return "image signed by an untrusted key";
	case IMAGE_E_SIGNATURE:
		return "image signature does not verify";
	case IMAGE_E_NOCOMMAND:
		return "no such command in the image";
	case IMAGE_E_INVAL:
		return "invalid argument";
	case IMAGE_E_NOMEM:
		return "out of memory";
	}
	return "unknown error";
}

/* Compared a block at a time with memcmp, not a byte at a time: the
 * padding between the files of the python image is 20 MB, and the byte
 * loop took about 10 ms of every `keep run` (3 ms this way, most of it
 * the page faults of reading it). */
static int
all_zero(const uint8_t *p, size_t n)
{
	static const uint8_t zero[4096];
	size_t k;

	for (; n > 0; p += k, n -= k) {
		k = n < sizeof(zero) ? n : sizeof(zero);
		if (memcmp(p, zero, k) != 0)
			return 0;
	}
	return 1;
}

static int
name_char(uint8_t c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-' ||
	    c == '+';
}

/*
 * A fixed-size string field: NUL-terminated, zero padded, non-empty,
 * every byte in the alphabet. A byte at a time: the reference for
 * check_path_wide below (tests/unit/test_image.c and fuzz/image_str.c
 * hold the two to the same answers), and the check of the few names of
 * an image.
 */
int
image_check_str_bytes(const uint8_t *field, size_t size, int path)
{
	const uint8_t *nul = memchr(field, '\0', size);
	size_t n, i, start;

	if (nul == NULL || nul == field)
		return -1;
	n = (size_t)(nul - field);
	if (!all_zero(nul, size - n))
		return -1;
	if (!path) {
		if (field[0] == '.' || field[0] == '-')
			return -1;
		for (i = 0; i < n; i++)
			if (!name_char(field[i]))
				return -1;
		return 0;
	}
	/* Package files have names like "[" and "c++filt" and "x@2x.png":
	 * a path may hold any printable byte but the space and the
	 * backslash. Absolute, no empty, "." or ".." components (so no
	 * slash at the end either). */
	if (field[0] != '/')
		return -1;
	for (i = 1, start = 1; i <= n; i++) {
		uint8_t c = i < n ? field[i] : '/';
		size_t clen = i - start;

		if (c != '/') {
			if (c <= 0x20 || c >= 0x7f || c == '\\')
				return -1;
			continue;
		}
		if (clen == 0 || (clen == 1 && field[start] == '.') ||
		    (clen == 2 && field[start] == '.' &&
		        field[start + 1] == '.'))
			return -1;
		start = i + 1;
	}
	return 0;
}

#ifdef __SSE2__
/* Of 64 bytes, a bit per byte for each class of byte that the rules of
 * a path care about, and for each byte equal to the previous path's. */
struct path_classes {
	uint64_t zero, slash, dot, outside, same;
};

static inline uint64_t
byte_bits(__m128i eq, int shift)
{
	return (uint64_t)(unsigned)_mm_movemask_epi8(eq) << shift;
}

static inline void
classify64(const uint8_t *p, const uint8_t *prev, struct path_classes *c)
{
	const __m128i nul = _mm_setzero_si128(), slash = _mm_set1_epi8('/'),
	              dot = _mm_set1_epi8('.'), first = _mm_set1_epi8(0x21),
	              del = _mm_set1_epi8(0x7f),
	              backslash = _mm_set1_epi8('\\');

	c->zero = c->slash = c->dot = c->outside = c->same = 0;
	for (int k = 0; k < 64; k += 16) {
		__m128i v = _mm_loadu_si128((const __m128i *)(p + k));
		/* Signed: below 0x21 is 0x00-0x20 and 0x80-0xff. */
		__m128i out = _mm_or_si128(_mm_cmplt_epi8(v, first),
		    _mm_or_si128(
		        _mm_cmpeq_epi8(v, del), _mm_cmpeq_epi8(v, backslash)));

		c->zero |= byte_bits(_mm_cmpeq_epi8(v, nul), k);
		c->slash |= byte_bits(_mm_cmpeq_epi8(v, slash), k);
		c->dot |= byte_bits(_mm_cmpeq_epi8(v, dot), k);
		c->outside |= byte_bits(out, k);
		c->same |=
		    byte_bits(_mm_cmpeq_epi8(v,
		                  _mm_loadu_si128((const __m128i *)(prev + k))),
		        k);
	}
}

typedef unsigned __int128 field_bits;

static inline field_bits
join(uint64_t lo, uint64_t hi)
{
	return (field_bits)hi << 64 | lo;
}

/*
 * A path field (IMAGE_PATH_MAX, 128 bytes) 16 bytes at a time (SSE2,
 * which every x86-64 has): a bit per byte of the field for each of
 * "zero", "slash", "dot" and "outside the alphabet", and the rules of
 * image_check_str_bytes as arithmetic on those masks. The python
 * image's 8,700 paths (67 bytes on average) were 62% of its open a byte
 * at a time, with a memchr and a memcmp more per path: opened in a
 * loop, 0.51 ms, and 0.20 ms this way.
 *
 * The same pass compares the field with prev, a well-formed path field
 * (or the field itself): *after is 1 when the path sorts after prev's
 * as strcmp orders them. Both are zero padded, so their first differing
 * byte orders them, and equal fields are equal paths.
 */
_Static_assert(IMAGE_PATH_MAX == 128, "check_path_wide reads 128 bytes");

static int
check_path_wide(const uint8_t *field, const uint8_t *prev, int *after)
{
	struct path_classes lo, hi;
	field_bits zero, slash, dot, end, before, closing, differ;

	classify64(field, prev, &lo);
	classify64(field + 64, prev + 64, &hi);
	zero = join(lo.zero, hi.zero);
	/* The string ends at its first zero byte (end: that byte's bit),
	 * is not empty, and every byte from there on is zero. */
	if (zero == 0 || (zero & 1) != 0)
		return -1;
	end = zero & -zero;
	before = end - 1;
	if ((zero | before) != ~(field_bits)0 ||
	    (join(lo.outside, hi.outside) & before) != 0 || (lo.slash & 1) == 0)
		return -1;
	/* Each component runs from a slash to the next slash or the end:
	 * none is empty ("//", a slash last), "." or "..". */
	slash = join(lo.slash, hi.slash);
	dot = join(lo.dot, hi.dot);
	closing = slash | end;
	if ((slash &
	        ((closing >> 1) | ((dot >> 1) & (closing >> 2)) |
	            ((dot >> 1) & (dot >> 2) & (closing >> 3)))) != 0)
		return -1;
	differ = ~join(lo.same, hi.same);
	if (differ == 0) {
		*after = 0;
	} else {
		unsigned i = lo.same != ~(uint64_t)0
		    ? (unsigned)__builtin_ctzll(~lo.same)
		    : 64 + (unsigned)__builtin_ctzll(~hi.same);

		*after = field[i] > prev[i];
	}
	return 0;
}
#endif

/*
 * A file's path (image_check_str's rules), and *after: 1 when it sorts
 * after prev's, a path that passed this check (strcmp's order), 0 when
 * not. One pass over the field where the machine allows.
 */
static int
check_file_path(const uint8_t *field, const uint8_t *prev, int *after)
{
#ifdef __SSE2__
	return check_path_wide(field, prev, after);
#else
	if (image_check_str_bytes(field, IMAGE_PATH_MAX, 1) != 0)
		return -1;
	*after = strcmp((const char *)field, (const char *)prev) > 0;
	return 0;
#endif
}

/* The paths, a whole field at a time where the machine allows; the rest
 * a byte at a time. */
int
image_check_str(const uint8_t *field, size_t size, int path)
{
#ifdef __SSE2__
	int after;

	if (path && size == IMAGE_PATH_MAX)
		return check_path_wide(field, field, &after);
#endif
	return image_check_str_bytes(field, size, path);
}

/* No two files share a path: an open-addressing set of the paths, in
 * linear time (an image may hold tens of thousands of files). Not qsort:
 * glibc's asks sysinfo(2) for the machine's memory, outside the vmm
 * process's seccomp allowlist. */
static int
unique_paths(const struct image *img, char *err, size_t errlen)
{
	size_t cap = 16, mask, i;
	const char **set;
	int rc = 0;

	/* Sorted strictly, as keep's builder writes them (told by the
	 * check of each path): unique. */
	if (img->sorted)
		return 0;
	while (cap < 2 * img->nfiles)
		cap *= 2;
	mask = cap - 1;
	if ((set = calloc(cap, sizeof(*set))) == NULL)
		return image_fail(err, errlen, IMAGE_E_NOMEM, "out of memory");
	for (i = 0; i < img->nfiles && rc == 0; i++) {
		const char *p = img->files[i].path;
		uint64_t h = 1469598103934665603ULL;
		size_t slot;

		for (const char *c = p; *c != '\0'; c++)
			h = (h ^ (uint8_t)*c) * 1099511628211ULL;
		for (slot = (size_t)h & mask; set[slot] != NULL;
		     slot = (slot + 1) & mask)
			if (strcmp(set[slot], p) == 0) {
				rc = image_fail(err, errlen, IMAGE_E_FORMAT,
				    "duplicate path %s", p);
				break;
			}
		set[slot] = p;
	}
	free(set);
	return rc;
}

static int
validate(struct image *img, char *err, size_t errlen)
{
	const uint8_t *b = img->base;
	size_t len = img->len;
	uint64_t memory, poff, plen, tables_end, body;
	uint32_t nc, nf, caps;
	int rc;

	if (len < IMG_HEADER_LEN || memcmp(b, IMG_MAGIC, 8) != 0)
		return image_fail(err, errlen, IMAGE_E_FORMAT,
		    "not a keep image (bad magic)");
	if (img_get32(b + IMG_H_VERSION) != IMG_VERSION)
		return image_fail(err, errlen, IMAGE_E_VERSION,
		    "image format version %u, expected %u",
		    img_get32(b + IMG_H_VERSION), IMG_VERSION);
	if ((img_get32(b + IMG_H_FLAGS) & ~IMG_FLAG_DEFERRED) != 0 ||
	    img_get32(b + IMG_H_RESERVED0) != 0 ||
	    img_get64(b + IMG_H_RESERVED1) != 0)
		return image_fail(err, errlen, IMAGE_E_FORMAT,
		    "reserved header fields are not zero");
	memory = img_get64(b + IMG_H_MEMORY);
	caps = img_get32(b + IMG_H_CAPS);
	nc = img_get32(b + IMG_H_NCOMMANDS);
	nf = img_get32(b + IMG_H_NFILES);
	poff = img_get64(b + IMG_H_PAYLOAD_OFF);
	plen = img_get64(b + IMG_H_PAYLOAD_LEN);
	if (memory < IMG_MEMORY_MIN || memory > IMG_MEMORY_MAX ||
	    memory % IMG_PAGE != 0)
		return image_fail(err, errlen, IMAGE_E_FORMAT,
		    "memory %llu out of range", (unsigned long long)memory);
	if ((caps & ~CAP_ALL) != 0)
		return image_fail(err, errlen, IMAGE_E_FORMAT,
		    "unknown capability bits 0x%x", caps & ~CAP_ALL);
	if (nc < 1 || nc > IMAGE_MAX_COMMANDS || nf < 1 || nf > IMAGE_MAX_FILES)
		return image_fail(err, errlen, IMAGE_E_FORMAT,
		    "%u commands and %u files: out of range", nc, nf);
	tables_end = IMG_TABLES + (uint64_t)nc * IMG_CMD_LEN +
	    (uint64_t)nf * IMG_FILE_LEN;
	if (poff != img_round_page(tables_end) || poff > len ||
	    plen > len - poff)
		return image_fail(err, errlen, IMAGE_E_FORMAT,
		    "payload offset or length out of range");
	body = poff + plen;
	if (len == body) {
		img->signed_ = 0;
	} else if (len == body + IMAGE_TRAILER_LEN &&
	    memcmp(b + body, IMG_SIG_MAGIC, 8) == 0) {
		img->signed_ = 1;
		if (image_check_str(b + body + IMG_T_KID, IMAGE_KID_MAX, 0) !=
		        0 ||
		    !all_zero(b + body + IMG_T_KID + IMAGE_KID_MAX, 4))
			return image_fail(err, errlen, IMAGE_E_FORMAT,
			    "malformed signature trailer");
		memcpy(img->kid, b + body + IMG_T_KID, IMAGE_KID_MAX);
	} else {
		return image_fail(err, errlen, IMAGE_E_FORMAT,
		    "file is %zu bytes; the header says %llu (truncated or "
		    "appended to)",
		    len, (unsigned long long)body);
	}
	img->body_len = body;
	img->deferred = (img_get32(b + IMG_H_FLAGS) & IMG_FLAG_DEFERRED) != 0;
	img->manifest_len = (size_t)poff;
	if (image_check_str(b + IMG_M_NAME, IMAGE_NAME_MAX, 0) != 0 ||
	    image_check_str(b + IMG_M_VERSION, IMAGE_VERSION_MAX, 0) != 0)
		return image_fail(
		    err, errlen, IMAGE_E_FORMAT, "malformed name or version");
	if (!all_zero(b + tables_end, poff - tables_end))
		return image_fail(err, errlen, IMAGE_E_FORMAT,
		    "padding after the manifest is not zero");
	img->name = (const char *)b + IMG_M_NAME;
	img->version = (const char *)b + IMG_M_VERSION;
	img->memory = memory;
	img->caps = caps;
	img->nfiles = nf;
	img->ncommands = nc;
	img->files = calloc(nf, sizeof(*img->files));
	img->commands = calloc(nc, sizeof(*img->commands));
	if (img->files == NULL || img->commands == NULL)
		return image_fail(err, errlen, IMAGE_E_NOMEM, "out of memory");

	/* Files: in payload order, page aligned, no overlap, zero gaps. */
	const uint8_t *ft = b + IMG_TABLES + (uint64_t)nc * IMG_CMD_LEN;
	uint64_t next = 0;
	int after;

	img->sorted = 1;
	for (uint32_t i = 0; i < nf; i++) {
		const uint8_t *e = ft + (uint64_t)i * IMG_FILE_LEN;
		uint64_t off = img_get64(e + IMG_F_OFFSET);
		uint64_t size = img_get64(e + IMG_F_SIZE);
		uint32_t mode = img_get32(e + IMG_F_MODE);
		uint8_t h[32];

		if (check_file_path(e + IMG_F_PATH,
		        i > 0 ? e - IMG_FILE_LEN + IMG_F_PATH : e + IMG_F_PATH,
		        &after) != 0)
			return image_fail(err, errlen, IMAGE_E_FORMAT,
			    "file %u: malformed path", i);
		if (i > 0 && !after)
			img->sorted = 0;
		/* The zeroes between two files of an image with deferred
		 * hashes are checked with the first one's hash (pad), when
		 * it is used; the payload is not read here at all. */
		if (off % IMG_PAGE != 0 || off < next || off > plen ||
		    size > plen - off ||
		    ((!img->deferred || i == 0) &&
		        !all_zero(b + poff + next, off - next)))
			return image_fail(err, errlen, IMAGE_E_FORMAT,
			    "file %u (%s): offset or size out of range, "
			    "overlapping, or padding not zero",
			    i, (const char *)e + IMG_F_PATH);
		if ((mode != 0755 && mode != 0644) ||
		    (img_get64(e + IMG_F_MODE + 4) |
		        img_get32(e + IMG_F_MODE + 12)) != 0)
			return image_fail(err, errlen, IMAGE_E_FORMAT,
			    "file %u: bad mode or reserved bytes", i);
		if (!img->deferred) {
			crypto_generichash(
			    h, sizeof(h), b + poff + off, size, NULL, 0);
			if (sodium_memcmp(h, e + IMG_F_HASH, sizeof(h)) != 0)
				return image_fail(err, errlen, IMAGE_E_HASH,
				    "file %s: BLAKE2b hash mismatch",
				    (const char *)e + IMG_F_PATH);
		}
		if (img->deferred && i > 0)
			img->files[i - 1].pad = off - next;
		img->files[i].hash = img->deferred ? e + IMG_F_HASH : NULL;
		img->files[i].path = (const char *)e + IMG_F_PATH;
		img->files[i].data = b + poff + off;
		img->files[i].len = size;
		img->files[i].mode = mode;
		next = off + size;
	}
	if (next != plen)
		return image_fail(err, errlen, IMAGE_E_FORMAT,
		    "payload has %llu bytes after the last file",
		    (unsigned long long)(plen - next));
	if ((rc = unique_paths(img, err, errlen)) != 0)
		return rc;

	const uint8_t *ct = b + IMG_TABLES;
	for (uint32_t i = 0; i < nc; i++) {
		const uint8_t *e = ct + (uint64_t)i * IMG_CMD_LEN;
		uint32_t fi = img_get32(e + IMG_C_FILE);

		if (image_check_str(e + IMG_C_NAME, IMAGE_CMD_MAX, 0) != 0 ||
		    image_check_str(e + IMG_C_ARGV0, IMAGE_CMD_MAX, 0) != 0 ||
		    fi >= nf || !all_zero(e + IMG_C_FILE + 4, 12))
			return image_fail(err, errlen, IMAGE_E_FORMAT,
			    "command %u: malformed", i);
		for (uint32_t j = 0; j < i; j++)
			if (strcmp(img->commands[j].name,
			        (const char *)e + IMG_C_NAME) == 0)
				return image_fail(err, errlen, IMAGE_E_FORMAT,
				    "command %u: duplicate name %s", i,
				    img->commands[j].name);
		img->commands[i].name = (const char *)e + IMG_C_NAME;
		img->commands[i].argv0 = (const char *)e + IMG_C_ARGV0;
		img->commands[i].program = &img->files[fi];
	}
	return 0;
}

int
image_open_mem(const uint8_t *buf, size_t len, struct image **out, char *err,
    size_t errlen)
{
	struct image *img;
	int rc;

	*out = NULL;
	if (sodium_init() < 0)
		return image_fail(err, errlen, IMAGE_E_NOMEM, "libsodium");
	if ((img = calloc(1, sizeof(*img))) == NULL)
		return image_fail(err, errlen, IMAGE_E_NOMEM, "out of memory");
	img->base = buf;
	img->len = len;
	img->fd = -1;
	if ((rc = validate(img, err, errlen)) != 0) {
		image_close(img);
		return rc;
	}
	*out = img;
	return 0;
}

static int
open_file(
    const char *path, int keep_fd, struct image **out, char *err, size_t errlen)
{
	struct stat sb;
	void *map;
	int fd, rc;

	*out = NULL;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return image_fail(
		    err, errlen, IMAGE_E_IO, "%s: %s", path, strerror(errno));
	if (fstat(fd, &sb) == -1 || !S_ISREG(sb.st_mode) || sb.st_size == 0) {
		close(fd);
		return image_fail(err, errlen, IMAGE_E_IO,
		    "%s: not a non-empty regular file", path);
	}
	map = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (map == MAP_FAILED) {
		close(fd);
		return image_fail(err, errlen, IMAGE_E_IO, "%s: mmap: %s", path,
		    strerror(errno));
	}
	rc = image_open_mem(map, (size_t)sb.st_size, out, err, errlen);
	if (rc != 0) {
		close(fd);
		munmap(map, (size_t)sb.st_size);
		return rc;
	}
	(*out)->mapped = 1;
	if (keep_fd)
		(*out)->fd = fd;
	else
		close(fd);
	return 0;
}

int
image_open(const char *path, struct image **out, char *err, size_t errlen)
{
	return open_file(path, 0, out, err, errlen);
}

int
image_open_fd(const char *path, struct image **out, char *err, size_t errlen)
{
	return open_file(path, 1, out, err, errlen);
}

int
image_fd(const struct image *img, const uint8_t **base, size_t *len)
{
	*base = img->base;
	*len = img->len;
	return img->fd;
}

void
image_close(struct image *img)
{
	if (img == NULL)
		return;
	if (img->mapped)
		munmap((void *)img->base, img->len);
	if (img->fd >= 0)
		close(img->fd);
	free(img->files);
	free(img->commands);
	free(img);
}

const char *
image_name(const struct image *img)
{
	return img->name;
}

const char *
image_version(const struct image *img)
{
	return img->version;
}

uint64_t
image_memory(const struct image *img)
{
	return img->memory;
}

cap_set_t
image_caps(const struct image *img)
{
	return img->caps;
}

int
image_is_signed(const struct image *img)
{
	return img->signed_;
}

const char *
image_signer(const struct image *img)
{
	return img->signed_ ? img->kid : NULL;
}

size_t
image_ncommands(const struct image *img)
{
	return img->ncommands;
}

const struct image_command *
image_command_at(const struct image *img, size_t i)
{
	return i < img->ncommands ? &img->commands[i] : NULL;
}

const struct image_command *
image_command(const struct image *img, const char *name)
{
	for (size_t i = 0; i < img->ncommands; i++)
		if (strcmp(img->commands[i].name, name) == 0)
			return &img->commands[i];
	return NULL;
}

size_t
image_nfiles(const struct image *img)
{
	return img->nfiles;
}

const struct image_file *
image_file_at(const struct image *img, size_t i)
{
	return i < img->nfiles ? &img->files[i] : NULL;
}

const struct image_file *
image_file_find(const struct image *img, const char *path)
{
	size_t i, lo = 0, hi = img->nfiles;
	int c;

	if (!img->sorted) {
		for (i = 0; i < img->nfiles; i++)
			if (strcmp(img->files[i].path, path) == 0)
				return &img->files[i];
		return NULL;
	}
	while (lo < hi) {
		i = lo + (hi - lo) / 2;
		if ((c = strcmp(img->files[i].path, path)) == 0)
			return &img->files[i];
		if (c < 0)
			lo = i + 1;
		else
			hi = i;
	}
	return NULL;
}

const uint8_t *
image_bytes(const struct image *img, size_t *len)
{
	*len = img->body_len;
	return img->base;
}

const uint8_t *
image_signed_bytes(const struct image *img, size_t *len)
{
	*len = img->deferred ? img->manifest_len : img->body_len;
	return img->base;
}

int
image_is_deferred(const struct image *img)
{
	return img->deferred;
}

int
image_files_sorted(const struct image *img)
{
	return img->sorted;
}

int
image_verify_files(const struct image *img, char *err, size_t errlen)
{
	for (size_t i = 0; i < img->nfiles; i++)
		if (image_file_verify(&img->files[i]) != 0)
			return image_fail(err, errlen, IMAGE_E_HASH,
			    "file %s: BLAKE2b hash mismatch, or padding after "
			    "it not zero",
			    img->files[i].path);
	return 0;
}

int
image_file_verify(const struct image_file *f)
{
	uint8_t h[32];

	if (f->hash == NULL)
		return 0;
	crypto_generichash(h, sizeof(h), f->data, f->len, NULL, 0);
	if (sodium_memcmp(h, f->hash, sizeof(h)) != 0 ||
	    !all_zero(f->data + f->len, f->pad))
		return IMAGE_E_HASH;
	return 0;
}
