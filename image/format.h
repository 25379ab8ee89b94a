/*
 * The on-disk layout (little-endian, fixed offsets; docs/image-format.md).
 * Private to image/: everything else uses image.h.
 */
#ifndef KEEP_IMAGE_FORMAT_H
#define KEEP_IMAGE_FORMAT_H

#include <stdint.h>
#include <string.h>

#define IMG_MAGIC "KEEPIMG" /* 8 bytes with its NUL */
#define IMG_SIG_MAGIC "KEEPSIG" /* 8 bytes with its NUL */
#define IMG_VERSION 1
#define IMG_PAGE 4096u
/* Header flags. IMG_FLAG_DEFERRED: the signature covers the manifest
 * (header and tables, which hold every file's hash), not the payload;
 * each file's hash is checked when the file is first used. */
#define IMG_FLAG_DEFERRED 1u

/* Header, 64 bytes at offset 0. */
#define IMG_H_MAGIC 0
#define IMG_H_VERSION 8
#define IMG_H_FLAGS 12
#define IMG_H_MEMORY 16
#define IMG_H_CAPS 24
#define IMG_H_NCOMMANDS 28
#define IMG_H_NFILES 32
#define IMG_H_RESERVED0 36
#define IMG_H_PAYLOAD_OFF 40
#define IMG_H_PAYLOAD_LEN 48
#define IMG_H_RESERVED1 56
#define IMG_HEADER_LEN 64

/* Manifest fixed part: name[64] version[32], then the tables. */
#define IMG_M_NAME 64
#define IMG_M_VERSION 128
#define IMG_TABLES 160

/* Command entry, 80 bytes: name[32] argv0[32] file u32, reserved. */
#define IMG_CMD_LEN 80
#define IMG_C_NAME 0
#define IMG_C_ARGV0 32
#define IMG_C_FILE 64

/* File entry, 192 bytes: path[128] offset u64 size u64 hash[32] mode u32,
 * reserved. offset is relative to the payload and page aligned. */
#define IMG_FILE_LEN 192
#define IMG_F_PATH 0
#define IMG_F_OFFSET 128
#define IMG_F_SIZE 136
#define IMG_F_HASH 144
#define IMG_F_MODE 176

/* Trailer, 128 bytes after the body: magic[8] kid[52] zero[4] sig[64]. */
#define IMG_T_KID 8
#define IMG_T_SIG 64
#define IMG_SIG_CONTEXT "keep image v1" /* 14 bytes with its NUL */

#define IMG_MEMORY_MIN (2ULL << 20)
#define IMG_MEMORY_MAX (16ULL << 30)

static inline uint32_t
img_get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	    (uint32_t)p[3] << 24;
}

static inline uint64_t
img_get64(const uint8_t *p)
{
	return (uint64_t)img_get32(p) | (uint64_t)img_get32(p + 4) << 32;
}

static inline void
img_put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline void
img_put64(uint8_t *p, uint64_t v)
{
	img_put32(p, (uint32_t)v);
	img_put32(p + 4, (uint32_t)(v >> 32));
}

static inline uint64_t
img_round_page(uint64_t n)
{
	return (n + IMG_PAGE - 1) & ~(uint64_t)(IMG_PAGE - 1);
}

#endif
