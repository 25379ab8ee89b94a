/*
 * keep run's record of the files of an image it has checked (why, and
 * what makes a record valid: image/verified.h).
 */
#include <sys/stat.h>
#include <sys/vfs.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "image/format.h"
#include "image/image_int.h"
#include "image/verified.h"
#include "lib/own_file.h"

/* File systems whose ctime changes with every write and whose inode
 * numbers stay a file's own while it exists (statfs f_type). */
static const long local_fs[] = {
	0xEF53, /* ext2, ext3, ext4 */
	0x58465342, /* xfs */
	0x9123683E, /* btrfs */
	0xF2F52010, /* f2fs */
	0x01021994, /* tmpfs */
};

static int
boot_id(uint8_t out[IMAGE_VERIFIED_BOOT_ID + 4])
{
	ssize_t n;
	int fd;

	memset(out, 0, IMAGE_VERIFIED_BOOT_ID + 4);
	fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
	if (fd == -1)
		return -1;
	n = read(fd, out, IMAGE_VERIFIED_BOOT_ID + 1);
	close(fd);
	if (n != IMAGE_VERIFIED_BOOT_ID + 1 ||
	    out[IMAGE_VERIFIED_BOOT_ID] != '\n')
		return -1;
	out[IMAGE_VERIFIED_BOOT_ID] = 0;
	return 0;
}

int
image_verified_key(const struct image *img, struct image_verified_key *key)
{
	struct statfs sfs;
	struct stat sb;
	size_t i;

	memset(key, 0, sizeof(*key));
	if (img->fd < 0 || !img->signed_ || img->nfiles > UINT32_MAX ||
	    fstat(img->fd, &sb) == -1 || !S_ISREG(sb.st_mode) ||
	    (uint64_t)sb.st_size != img->len || fstatfs(img->fd, &sfs) == -1)
		return -1;
	for (i = 0; i < sizeof(local_fs) / sizeof(local_fs[0]); i++)
		if ((long)sfs.f_type == local_fs[i])
			break;
	if (i == sizeof(local_fs) / sizeof(local_fs[0]) ||
	    boot_id(key->boot_id) != 0)
		return -1;
	key->dev = (uint64_t)sb.st_dev;
	key->ino = (uint64_t)sb.st_ino;
	key->size = (uint64_t)sb.st_size;
	key->mtime_sec = (int64_t)sb.st_mtim.tv_sec;
	key->mtime_nsec = (int64_t)sb.st_mtim.tv_nsec;
	key->ctime_sec = (int64_t)sb.st_ctim.tv_sec;
	key->ctime_nsec = (int64_t)sb.st_ctim.tv_nsec;
	memcpy(
	    key->sig, img->base + img->body_len + IMG_T_SIG, sizeof(key->sig));
	key->nfiles = (uint32_t)img->nfiles;
	return 0;
}

static size_t
record_len(uint32_t nfiles)
{
	/* A bit a file, and the signature's. */
	return sizeof(struct image_verified_hdr) + ((size_t)nfiles + 1 + 7) / 8;
}

int
image_verified_decode(const uint8_t *buf, size_t len,
    const struct image_verified_key *key, uint8_t *checked)
{
	struct image_verified_hdr h;
	const uint8_t *bits = buf + sizeof(h);
	uint32_t i, n = key->nfiles + 1;

	if (len != record_len(key->nfiles))
		return -1;
	memcpy(&h, buf, sizeof(h));
	if (memcmp(h.magic, IMAGE_VERIFIED_MAGIC, sizeof(h.magic)) != 0 ||
	    memcmp(&h.key, key, sizeof(*key)) != 0)
		return -1;
	/* The bits past the last file are zero: nothing is ignored. */
	if (n % 8 != 0 && (bits[n / 8] >> (n % 8)) != 0)
		return -1;
	for (i = 0; i < n; i++)
		checked[i] = (bits[i / 8] >> (i % 8)) & 1;
	return 0;
}

uint8_t *
image_verified_encode(
    const struct image_verified_key *key, const uint8_t *checked, size_t *len)
{
	struct image_verified_hdr h;
	uint8_t *buf;
	uint32_t i;

	*len = record_len(key->nfiles);
	if ((buf = calloc(1, *len)) == NULL)
		return NULL;
	memset(&h, 0, sizeof(h));
	memcpy(h.magic, IMAGE_VERIFIED_MAGIC, sizeof(h.magic));
	h.key = *key;
	memcpy(buf, &h, sizeof(h));
	for (i = 0; i <= key->nfiles; i++)
		if (checked[i])
			buf[sizeof(h) + i / 8] |= (uint8_t)(1u << (i % 8));
	return buf;
}

int
image_verified_load(
    const char *path, const struct image_verified_key *key, uint8_t *checked)
{
	size_t want = record_len(key->nfiles), len;
	uint8_t *buf;
	int rc = -1;

	if ((buf = own_file_read(path, want, &len)) != NULL && len == want)
		rc = image_verified_decode(buf, len, key, checked);
	free(buf);
	return rc;
}

void
image_verified_store(const char *path, const struct image_verified_key *key,
    const uint8_t *checked)
{
	uint8_t *buf;
	size_t len;

	if ((buf = image_verified_encode(key, checked, &len)) == NULL)
		return;
	own_file_write(path, buf, len, 0600);
	free(buf);
}
