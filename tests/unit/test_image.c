/* Images: build, sign, open, verify; and every kind of tampering refused. */
#include <sys/mman.h>

#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <sodium.h>

#include "image/format.h"
#include "image/image.h"
#include "image/image_int.h"
#include "image/verified.h"

struct fixture {
	uint8_t pk[32], sk[64], other_pk[32], other_sk[64];
	uint8_t *img; /* signed */
	size_t len;
};

/* Build a two-file, two-command image into memory and sign it. */
static uint8_t *
make_image(const uint8_t sk[64], size_t *len)
{
	struct image_builder *b;
	static const uint8_t prog[] = "\x7f"
	                              "ELF not really, but bytes";
	static const uint8_t data[] = "read-only data";
	int fd = memfd_create("img", 0);
	uint8_t *buf;
	off_t end;

	assert_true(fd >= 0);
	assert_int_equal(
	    image_builder_new("demo", "1.0", 16 << 20, CAP_BIT(CAP_EGRESS), &b),
	    0);
	assert_int_equal(
	    image_builder_add_file(b, "/bin/demo", prog, sizeof(prog), 0755),
	    0);
	assert_int_equal(image_builder_add_file(
	                     b, "/share/data.txt", data, sizeof(data), 0644),
	    0);
	assert_int_equal(
	    image_builder_add_command(b, "demo", "demo", "/bin/demo"), 0);
	assert_int_equal(
	    image_builder_add_command(b, "alias", "alias", "/bin/demo"), 0);
	assert_int_equal(image_builder_write(b, fd, NULL, 0), 0);
	image_builder_free(b);
	end = lseek(fd, 0, SEEK_END);
	buf = malloc((size_t)end + IMAGE_TRAILER_LEN);
	assert_non_null(buf);
	assert_int_equal(pread(fd, buf, (size_t)end, 0), end);
	close(fd);
	image_sign(buf, (size_t)end, sk, buf + end);
	*len = (size_t)end + IMAGE_TRAILER_LEN;
	return buf;
}

/* A path in a zeroed field: what image_check_str says of it. */
static int
path_ok(const char *path)
{
	uint8_t field[IMAGE_PATH_MAX] = { 0 };

	memcpy(field, path, strlen(path));
	return image_check_str(field, sizeof(field), 1) == 0;
}

/* The path rules, and image_check_str (a whole field at a time) giving
 * the byte-at-a-time reference's answer for every short run of the
 * bytes that matter, at the start of a field and across the boundaries
 * of its 16- and 64-byte steps. */
static void
test_check_str(void **state)
{
	static const char *good[] = { "/a", "/bin/js", "/usr/bin/[", "/c++filt",
		"/x@2x.png", "/a/.b", "/a/..b", "/a/b..", "/a/...", "/~!",
		"/.a/b" };
	static const char *bad[] = { "", "a", "/", "//a", "/a/", "/a//b", "/.",
		"/..", "/a/.", "/a/..", "/./a", "/../a", "/a/./b", "/a/../b",
		"/a b", "/a\\b", "/a\x7f", "/a\x80", "/a\xff", "/a\t" };
	static const uint8_t alphabet[] = { '/', '.', 'a', ' ', 0x7f, '\\',
		0x80, 0xff, 0x00, '!', '~' };
	static const size_t starts[] = { 0, 14, 62, 124 };
	const size_t na = sizeof(alphabet);
	uint8_t field[IMAGE_PATH_MAX];
	size_t i, s, len, code, k;

	(void)state;
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		if (!path_ok(good[i]))
			fail_msg("%s refused", good[i]);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (path_ok(bad[i]))
			fail_msg("%s accepted", bad[i]);
	/* 127 bytes and its NUL fill the field; 128 leave no room. */
	memset(field, 'a', sizeof(field));
	field[0] = '/';
	field[127] = '\0';
	assert_int_equal(image_check_str(field, sizeof(field), 1), 0);
	field[127] = 'a';
	assert_int_equal(image_check_str(field, sizeof(field), 1), -1);

	for (s = 0; s < sizeof(starts) / sizeof(starts[0]); s++)
		for (len = 1; len <= 4; len++) {
			size_t runs = 1;

			for (k = 0; k < len; k++)
				runs *= na;
			for (code = 0; code < runs; code++) {
				size_t c = code;

				memset(field, 0, sizeof(field));
				if (starts[s] > 0) {
					memset(field, 'a', starts[s]);
					field[0] = '/';
				}
				for (k = 0; k < len; k++, c /= na)
					field[starts[s] + k] = alphabet[c % na];
				for (int tail = 0; tail < 2; tail++) {
					/* and a stray byte at the field's end */
					if (tail && starts[s] + len < 127)
						field[127] = 'a';
					if (image_check_str(
					        field, sizeof(field), 1) !=
					    image_check_str_bytes(
					        field, sizeof(field), 1))
						fail_msg(
						    "start %zu run %zu/%zu: "
						    "the two checks differ",
						    starts[s], len, code);
				}
			}
		}
}

/* The order of the paths, told by the same pass that checks them: an
 * image in keep's order is sorted; one out of order still opens (its
 * paths are unique) but is not said to be sorted; two equal paths,
 * next to each other or not, are refused. */
static void
test_path_order(void **state)
{
	struct image_builder *b;
	static const uint8_t x[] = "x";
	int fd = memfd_create("img", 0);
	struct image *img;
	uint8_t *buf, *paths;
	char err[256];
	off_t end;

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(image_builder_new("order", "1", 16 << 20, 0, &b), 0);
	assert_int_equal(image_builder_add_file(b, "/a", x, 1, 0644), 0);
	assert_int_equal(image_builder_add_file(b, "/a/b", x, 1, 0644), 0);
	assert_int_equal(image_builder_add_file(b, "/c", x, 1, 0755), 0);
	assert_int_equal(image_builder_add_command(b, "c", "c", "/c"), 0);
	assert_int_equal(image_builder_write(b, fd, NULL, 0), 0);
	image_builder_free(b);
	end = lseek(fd, 0, SEEK_END);
	assert_non_null(buf = malloc((size_t)end));
	assert_int_equal(pread(fd, buf, (size_t)end, 0), end);
	close(fd);
	paths = buf + IMG_TABLES + IMG_CMD_LEN + IMG_F_PATH;

	assert_int_equal(image_open_mem(buf, (size_t)end, &img, NULL, 0), 0);
	assert_int_equal(image_files_sorted(img), 1);
	/* image_file_find: a search of the sorted files, each one found,
	 * a prefix, a missing path and one past the end not. */
	assert_ptr_equal(image_file_find(img, "/a"), image_file_at(img, 0));
	assert_ptr_equal(image_file_find(img, "/a/b"), image_file_at(img, 1));
	assert_ptr_equal(image_file_find(img, "/c"), image_file_at(img, 2));
	assert_null(image_file_find(img, "/"));
	assert_null(image_file_find(img, "/a/"));
	assert_null(image_file_find(img, "/b"));
	assert_null(image_file_find(img, "/d"));
	image_close(img);
	/* "/a/b" -> "/d/b": unique, but after "/c" comes first. */
	paths[IMG_FILE_LEN + 1] = 'd';
	assert_int_equal(image_open_mem(buf, (size_t)end, &img, NULL, 0), 0);
	assert_int_equal(image_files_sorted(img), 0);
	/* Unsorted: a walk finds them all the same. */
	assert_ptr_equal(image_file_find(img, "/d/b"), image_file_at(img, 1));
	assert_ptr_equal(image_file_find(img, "/c"), image_file_at(img, 2));
	assert_null(image_file_find(img, "/a/b"));
	image_close(img);
	/* Equal neighbours: "/a" twice. */
	memcpy(paths + IMG_FILE_LEN, "/a\0\0", 4);
	assert_int_equal(
	    image_open_mem(buf, (size_t)end, &img, err, sizeof(err)),
	    IMAGE_E_FORMAT);
	assert_non_null(strstr(err, "duplicate path /a"));
	/* Equal but apart, the order broken between them: "/c" "/a" "/c". */
	memcpy(paths, "/c", 2);
	memcpy(paths + IMG_FILE_LEN, "/a\0\0", 4);
	assert_int_equal(
	    image_open_mem(buf, (size_t)end, &img, err, sizeof(err)),
	    IMAGE_E_FORMAT);
	assert_non_null(strstr(err, "duplicate path /c"));
	free(buf);
}

/* Deferred hashes: the signature covers the manifest; a tampered payload
 * still opens and verifies, and is caught file by file. */
static void
test_deferred(void **state)
{
	struct image_builder *b;
	static const uint8_t prog[] = "program bytes";
	static const uint8_t data[] = "read-only data";
	uint8_t pk[32], sk[64], *buf;
	int fd = memfd_create("img", 0);
	struct image *img;
	const struct image_file *f;
	size_t slen, len;
	off_t end;

	(void)state;
	crypto_sign_keypair(pk, sk);
	assert_true(fd >= 0);
	assert_int_equal(image_builder_new("big", "1", 16 << 20, 0, &b), 0);
	assert_int_equal(
	    image_builder_add_file(b, "/bin/p", prog, sizeof(prog), 0755), 0);
	assert_int_equal(
	    image_builder_add_file(b, "/d/x", data, sizeof(data), 0644), 0);
	assert_int_equal(image_builder_add_command(b, "p", "p", "/bin/p"), 0);
	image_builder_defer_hashes(b);
	assert_int_equal(image_builder_write(b, fd, NULL, 0), 0);
	image_builder_free(b);
	end = lseek(fd, 0, SEEK_END);
	len = (size_t)end + IMAGE_TRAILER_LEN;
	assert_non_null(buf = malloc(len));
	assert_int_equal(pread(fd, buf, (size_t)end, 0), end);
	close(fd);

	assert_int_equal(image_open_mem(buf, (size_t)end, &img, NULL, 0), 0);
	assert_true(image_is_deferred(img));
	assert_ptr_equal(image_signed_bytes(img, &slen), buf);
	assert_true(slen < (size_t)end); /* the manifest alone */
	image_sign(buf, slen, sk, buf + end);
	image_close(img);

	assert_int_equal(image_open_mem(buf, len, &img, NULL, 0), 0);
	assert_int_equal(
	    image_verify(img, (const uint8_t(*)[32])pk, 1, NULL, NULL, 0), 0);
	assert_int_equal(image_verify_files(img, NULL, 0), 0);
	f = image_file_at(img, 1);
	assert_non_null(f->hash);
	assert_int_equal(image_file_verify(f), 0);
	image_close(img);

	/* One payload byte flipped: the signature still holds (it covers
	 * the hashes), the file does not. */
	buf[slen + 4096 + 2] ^= 1;
	assert_int_equal(image_open_mem(buf, len, &img, NULL, 0), 0);
	assert_int_equal(
	    image_verify(img, (const uint8_t(*)[32])pk, 1, NULL, NULL, 0), 0);
	assert_int_equal(image_file_verify(image_file_at(img, 0)), 0);
	assert_int_equal(
	    image_file_verify(image_file_at(img, 1)), IMAGE_E_HASH);
	assert_int_equal(image_verify_files(img, NULL, 0), IMAGE_E_HASH);
	image_close(img);
	buf[slen + 4096 + 2] ^= 1;

	/* A byte of the padding after the program: opening does not read
	 * the payload; the program's own check (hash and padding) fails,
	 * the next file's does not. */
	buf[slen + 4095] ^= 1;
	assert_int_equal(image_open_mem(buf, len, &img, NULL, 0), 0);
	assert_int_equal(
	    image_verify(img, (const uint8_t(*)[32])pk, 1, NULL, NULL, 0), 0);
	assert_int_equal(image_file_at(img, 0)->pad, 4096 - sizeof(prog));
	assert_int_equal(
	    image_file_verify(image_file_at(img, 0)), IMAGE_E_HASH);
	assert_int_equal(image_file_verify(image_file_at(img, 1)), 0);
	assert_int_equal(image_verify_files(img, NULL, 0), IMAGE_E_HASH);
	image_close(img);
	buf[slen + 4095] ^= 1;

	/* One manifest byte flipped (a file's hash): the signature fails. */
	buf[IMG_TABLES + IMG_CMD_LEN + IMG_FILE_LEN + IMG_F_HASH] ^= 1;
	assert_int_equal(image_open_mem(buf, len, &img, NULL, 0), 0);
	assert_int_equal(
	    image_verify(img, (const uint8_t(*)[32])pk, 1, NULL, NULL, 0),
	    IMAGE_E_SIGNATURE);
	image_close(img);
	free(buf);
}

/* keep run's record of checked files: what it encodes decodes back
 * under the same key only, and nothing else decodes. */
static void
test_verified_record(void **state)
{
	struct image_verified_key key, other;
	/* Ten files and the signature. */
	uint8_t checked[11] = { 1, 0, 0, 1, 0, 0, 0, 0, 1, 0, 1 }, got[11];
	uint8_t *rec;
	size_t len, i;

	(void)state;
	memset(&key, 0, sizeof(key));
	memcpy(key.boot_id, "0123456789abcdef0123456789abcdef0123", 36);
	key.dev = 0x803;
	key.ino = 42;
	key.size = 1 << 20;
	key.ctime_sec = 1700000000;
	key.ctime_nsec = 123;
	memset(key.sig, 0x5a, sizeof(key.sig));
	key.nfiles = 10;
	assert_non_null(rec = image_verified_encode(&key, checked, &len));
	assert_int_equal(len, sizeof(struct image_verified_hdr) + 2);
	memset(got, 7, sizeof(got));
	assert_int_equal(image_verified_decode(rec, len, &key, got), 0);
	assert_memory_equal(got, checked, sizeof(got));

	/* Any byte of the key changed: another file, boot or signature. */
	for (i = 0; i < sizeof(key); i++) {
		other = key;
		((uint8_t *)&other)[i] ^= 1;
		assert_int_equal(
		    image_verified_decode(rec, len, &other, got), -1);
	}
	/* Every count of files round-trips, those whose bits and the
	 * signature's fill whole bytes included (7, 15: a decoder that
	 * took one byte more once accepted what the encoder never wrote). */
	for (uint32_t nf = 0; nf < 18; nf++) {
		uint8_t all[19], back[19];
		uint8_t *r2;
		size_t l2;

		other = key;
		other.nfiles = nf;
		memset(all, 1, sizeof(all));
		assert_non_null(r2 = image_verified_encode(&other, all, &l2));
		assert_int_equal(
		    l2, sizeof(struct image_verified_hdr) + (nf + 1 + 7) / 8);
		memset(back, 0, sizeof(back));
		assert_int_equal(
		    image_verified_decode(r2, l2, &other, back), 0);
		assert_memory_equal(back, all, nf + 1);
		r2 = realloc(r2, l2 + 1);
		r2[l2] = 0;
		assert_int_equal(
		    image_verified_decode(r2, l2 + 1, &other, back), -1);
		free(r2);
	}
	/* Cut short, one byte more, a bit past the last file, the magic. */
	assert_int_equal(image_verified_decode(rec, len - 1, &key, got), -1);
	rec = realloc(rec, len + 1);
	rec[len] = 0;
	assert_int_equal(image_verified_decode(rec, len + 1, &key, got), -1);
	rec[len - 1] |= 0x80;
	assert_int_equal(image_verified_decode(rec, len, &key, got), -1);
	rec[len - 1] &= 0x7f;
	rec[0] ^= 1;
	assert_int_equal(image_verified_decode(rec, len, &key, got), -1);
	free(rec);
}

static int
setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));

	crypto_sign_keypair(fx->pk, fx->sk);
	crypto_sign_keypair(fx->other_pk, fx->other_sk);
	fx->img = make_image(fx->sk, &fx->len);
	*state = fx;
	return 0;
}

static int
teardown(void **state)
{
	struct fixture *fx = *state;
	free(fx->img);
	free(fx);
	return 0;
}

/* Open and verify a buffer; 0 when accepted. */
static int
check(struct fixture *fx, const uint8_t *buf, size_t len, char *err,
    size_t errlen)
{
	struct image *img;
	uint8_t *copy = malloc(len ? len : 1);
	int rc;

	memcpy(copy, buf, len);
	rc = image_open_mem(copy, len, &img, err, errlen);
	if (rc == 0) {
		rc = image_verify(
		    img, (const uint8_t(*)[32])fx->pk, 1, NULL, err, errlen);
		image_close(img);
	}
	free(copy);
	return rc;
}

static void
test_round_trip(void **state)
{
	struct fixture *fx = *state;
	struct image *img;
	const struct image_command *c;
	char kid[IMAGE_KID_MAX], err[256];

	assert_int_equal(
	    image_open_mem(fx->img, fx->len, &img, err, sizeof(err)), 0);
	assert_string_equal(image_name(img), "demo");
	assert_string_equal(image_version(img), "1.0");
	assert_int_equal(image_memory(img), 16 << 20);
	assert_int_equal(image_caps(img), CAP_BIT(CAP_EGRESS));
	assert_int_equal(image_ncommands(img), 2);
	assert_int_equal(image_nfiles(img), 2);
	c = image_command(img, "alias");
	assert_non_null(c);
	assert_string_equal(c->program->path, "/bin/demo");
	assert_null(image_command(img, "missing"));
	/* Files start on page boundaries so a loader can map them. */
	assert_int_equal((image_file_at(img, 0)->data - fx->img) % 4096, 0);
	assert_int_equal((image_file_at(img, 1)->data - fx->img) % 4096, 0);
	assert_memory_equal(image_file_at(img, 1)->data, "read-only data", 15);
	assert_int_equal(image_verify(img, (const uint8_t(*)[32])fx->pk, 1, kid,
	                     err, sizeof(err)),
	    0);
	/* Another key: untrusted, named in the message. */
	assert_int_equal(image_verify(img, (const uint8_t(*)[32])fx->other_pk,
	                     1, NULL, err, sizeof(err)),
	    IMAGE_E_UNTRUSTED);
	assert_non_null(strstr(err, "not trusted"));
	image_close(img);
}

/* image_open_trusted_fd keeps the file open for the VMM to map (its
 * descriptor reads the bytes mapped at image_fd's base); image_open and
 * image_open_mem keep none. */
static void
test_open_fd(void **state)
{
	struct fixture *fx = *state;
	char path[] = "/tmp/test_image_fd.XXXXXX", err[256];
	struct image *img;
	const uint8_t *base;
	uint8_t head[64];
	size_t len;
	int fd = mkstemp(path), kept;

	assert_true(fd >= 0);
	assert_int_equal(write(fd, fx->img, fx->len), (ssize_t)fx->len);
	close(fd);
	assert_int_equal(
	    image_open_trusted_fd(
	        path, (const uint8_t(*)[32])fx->pk, 1, &img, err, sizeof(err)),
	    0);
	kept = image_fd(img, &base, &len);
	assert_true(kept >= 0);
	assert_int_equal(len, fx->len);
	assert_int_equal(pread(kept, head, sizeof(head), 0), sizeof(head));
	assert_memory_equal(head, base, sizeof(head));
	image_close(img);
	assert_int_equal(fcntl(kept, F_GETFD), -1); /* closed with it */

	assert_int_equal(image_open(path, &img, err, sizeof(err)), 0);
	assert_int_equal(image_fd(img, &base, &len), -1);
	image_close(img);
	assert_int_equal(
	    image_open_mem(fx->img, fx->len, &img, err, sizeof(err)), 0);
	assert_int_equal(image_fd(img, &base, &len), -1);
	image_close(img);
	/* A wrong key: refused, and nothing is left open. */
	assert_int_equal(
	    image_open_trusted_fd(path, (const uint8_t(*)[32])fx->other_pk, 1,
	        &img, err, sizeof(err)),
	    IMAGE_E_UNTRUSTED);
	assert_null(img);
	unlink(path);
}

static void
test_every_byte_flipped(void **state)
{
	struct fixture *fx = *state;
	char err[256];

	for (size_t i = 0; i < fx->len; i++) {
		fx->img[i] ^= 0x01;
		if (check(fx, fx->img, fx->len, err, sizeof(err)) == 0)
			fail_msg("flipping byte %zu was accepted", i);
		fx->img[i] ^= 0x01;
	}
	assert_int_equal(check(fx, fx->img, fx->len, err, sizeof(err)), 0);
}

static void
test_truncated_and_appended(void **state)
{
	struct fixture *fx = *state;
	uint8_t *bigger = malloc(fx->len + 1);
	char err[256];

	for (size_t n = 0; n < fx->len; n++)
		assert_int_not_equal(
		    check(fx, fx->img, n, err, sizeof(err)), 0);
	memcpy(bigger, fx->img, fx->len);
	bigger[fx->len] = 0;
	assert_int_equal(
	    check(fx, bigger, fx->len + 1, err, sizeof(err)), IMAGE_E_FORMAT);
	assert_non_null(strstr(err, "truncated or appended"));
	free(bigger);
	/* Unsigned: the body alone opens, but verify refuses it. */
	assert_int_equal(
	    check(fx, fx->img, fx->len - IMAGE_TRAILER_LEN, err, sizeof(err)),
	    IMAGE_E_UNSIGNED);
}

static void
test_absurd_counts(void **state)
{
	struct fixture *fx = *state;
	static const uint32_t counts[] = { 0, 0xffffffff, 0x80000000, 4097,
		257 };
	char err[256];

	for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
		uint8_t *copy = malloc(fx->len);
		memcpy(copy, fx->img, fx->len);
		img_put32(copy + IMG_H_NFILES, counts[i]);
		assert_int_equal(
		    check(fx, copy, fx->len, err, sizeof(err)), IMAGE_E_FORMAT);
		memcpy(copy, fx->img, fx->len);
		img_put32(copy + IMG_H_NCOMMANDS, counts[i]);
		assert_int_equal(
		    check(fx, copy, fx->len, err, sizeof(err)), IMAGE_E_FORMAT);
		memcpy(copy, fx->img, fx->len);
		img_put64(copy + IMG_H_PAYLOAD_LEN, (uint64_t)counts[i] << 32);
		assert_int_equal(
		    check(fx, copy, fx->len, err, sizeof(err)), IMAGE_E_FORMAT);
		free(copy);
	}
}

static void
test_builder_refusals(void **state)
{
	struct image_builder *b;

	(void)state;
	assert_int_equal(
	    image_builder_new("bad name", "1", 16 << 20, 0, &b), IMAGE_E_INVAL);
	assert_int_equal(
	    image_builder_new("ok", "1", 1000, 0, &b), IMAGE_E_INVAL);
	assert_int_equal(image_builder_new("ok", "1", 16 << 20, 0, &b), 0);
	assert_int_equal(
	    image_builder_add_file(b, "relative", (uint8_t *)"x", 1, 0644),
	    IMAGE_E_INVAL);
	assert_int_equal(
	    image_builder_add_file(b, "/a/../b", (uint8_t *)"x", 1, 0644),
	    IMAGE_E_INVAL);
	assert_int_equal(
	    image_builder_add_file(b, "/a", (uint8_t *)"x", 1, 04755),
	    IMAGE_E_INVAL);
	assert_int_equal(
	    image_builder_add_file(b, "/a", (uint8_t *)"x", 1, 0644), 0);
	assert_int_equal(
	    image_builder_add_file(b, "/a", (uint8_t *)"y", 1, 0644),
	    IMAGE_E_INVAL);
	assert_int_equal(image_builder_add_command(b, "c", "c", "/missing"), 0);
	/* A command whose program is not in the image is refused on write. */
	assert_int_equal(image_builder_write(b, -1, NULL, 0), IMAGE_E_INVAL);
	image_builder_free(b);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
		    test_round_trip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_open_fd, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_every_byte_flipped, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_truncated_and_appended, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_absurd_counts, setup, teardown),
		cmocka_unit_test(test_builder_refusals),
		cmocka_unit_test(test_check_str),
		cmocka_unit_test(test_path_order),
		cmocka_unit_test(test_deferred),
		cmocka_unit_test(test_verified_record),
	};
	if (sodium_init() < 0)
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
