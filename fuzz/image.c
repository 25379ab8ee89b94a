/*
 * Fuzz the image validator and signature check. Whatever validates must
 * be safe to walk: every command's program and every file are read in
 * full, so an out-of-bounds pointer faults under ASan.
 */
#include <sodium.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "image/image.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t pk[32], sk[64];
	static int ready;
	struct image *img;
	uint8_t h[16];
	char err[256];

	if (!ready) {
		uint8_t seed[32] = { 1 };
		if (sodium_init() < 0)
			abort();
		crypto_sign_seed_keypair(pk, sk, seed);
		ready = 1;
	}
	if (image_open_mem(data, size, &img, err, sizeof(err)) != 0)
		return 0;
	for (size_t i = 0; i < image_ncommands(img); i++) {
		const struct image_command *c = image_command_at(img, i);
		if (strlen(c->name) >= IMAGE_CMD_MAX || c->program == NULL)
			abort();
		crypto_generichash(
		    h, sizeof(h), c->program->data, c->program->len, NULL, 0);
	}
	for (size_t i = 0; i < image_nfiles(img); i++) {
		const struct image_file *f = image_file_at(img, i);
		if (f->data < data || f->data + f->len > data + size)
			abort();
		/* Deferred hashes: the hash lies in the manifest, and the
		 * check reads the file in full. */
		if (f->hash != NULL &&
		    (!image_is_deferred(img) || f->hash < data ||
		        f->hash + 32 > data + size))
			abort();
		(void)image_file_verify(f);
	}
	{
		size_t slen, blen;
		const uint8_t *s = image_signed_bytes(img, &slen);
		const uint8_t *b = image_bytes(img, &blen);

		if (s != data || b != data || slen > blen || blen > size ||
		    (!image_is_deferred(img) && slen != blen))
			abort();
	}
	(void)image_verify(
	    img, (const uint8_t(*)[32])pk, 1, NULL, err, sizeof(err));
	image_close(img);
	return 0;
}
