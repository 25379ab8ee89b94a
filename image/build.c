/* Building an unsigned image from files and commands. */
#include <errno.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "image/format.h"
#include "image/image.h"
#include "image/image_int.h"
#include "lib/fdio.h"

struct builder_file {
	char path[IMAGE_PATH_MAX];
	uint8_t *data;
	uint64_t len;
	uint32_t mode;
};

struct builder_cmd {
	char name[IMAGE_CMD_MAX], argv0[IMAGE_CMD_MAX];
	char program[IMAGE_PATH_MAX];
};

struct image_builder {
	char name[IMAGE_NAME_MAX], version[IMAGE_VERSION_MAX];
	uint64_t memory;
	cap_set_t caps;
	struct builder_file *files;
	size_t nfiles;
	struct builder_cmd *cmds;
	size_t ncmds;
	int deferred;
};

/* Copy s into a zero-padded field and check it as the validator will. */
static int
set_field(char *field, size_t size, const char *s, int path)
{
	memset(field, 0, size);
	if (strlen(s) >= size)
		return IMAGE_E_INVAL;
	memcpy(field, s, strlen(s));
	return image_check_str((const uint8_t *)field, size, path) == 0
	    ? 0
	    : IMAGE_E_INVAL;
}

int
image_builder_new(const char *name, const char *version, uint64_t memory,
    cap_set_t caps, struct image_builder **out)
{
	struct image_builder *b;

	*out = NULL;
	if (memory < IMG_MEMORY_MIN || memory > IMG_MEMORY_MAX ||
	    memory % IMG_PAGE != 0 || (caps & ~CAP_ALL) != 0)
		return IMAGE_E_INVAL;
	if ((b = calloc(1, sizeof(*b))) == NULL)
		return IMAGE_E_NOMEM;
	if (set_field(b->name, sizeof(b->name), name, 0) != 0 ||
	    set_field(b->version, sizeof(b->version), version, 0) != 0) {
		free(b);
		return IMAGE_E_INVAL;
	}
	b->memory = memory;
	b->caps = caps;
	*out = b;
	return 0;
}

int
image_builder_add_file(struct image_builder *b, const char *path,
    const uint8_t *data, uint64_t len, uint32_t mode)
{
	struct builder_file *f, *nf;

	if (b->nfiles >= IMAGE_MAX_FILES || (mode != 0755 && mode != 0644))
		return IMAGE_E_INVAL;
	for (size_t i = 0; i < b->nfiles; i++)
		if (strcmp(b->files[i].path, path) == 0)
			return IMAGE_E_INVAL;
	nf = reallocarray(b->files, b->nfiles + 1, sizeof(*nf));
	if (nf == NULL)
		return IMAGE_E_NOMEM;
	b->files = nf;
	f = &b->files[b->nfiles];
	memset(f, 0, sizeof(*f));
	if (set_field(f->path, sizeof(f->path), path, 1) != 0)
		return IMAGE_E_INVAL;
	if ((f->data = malloc(len ? len : 1)) == NULL)
		return IMAGE_E_NOMEM;
	if (len)
		memcpy(f->data, data, len);
	f->len = len;
	f->mode = mode;
	b->nfiles++;
	return 0;
}

int
image_builder_add_command(struct image_builder *b, const char *name,
    const char *argv0, const char *program_path)
{
	struct builder_cmd *c, *nc;

	if (b->ncmds >= IMAGE_MAX_COMMANDS)
		return IMAGE_E_INVAL;
	for (size_t i = 0; i < b->ncmds; i++)
		if (strcmp(b->cmds[i].name, name) == 0)
			return IMAGE_E_INVAL;
	nc = reallocarray(b->cmds, b->ncmds + 1, sizeof(*nc));
	if (nc == NULL)
		return IMAGE_E_NOMEM;
	b->cmds = nc;
	c = &b->cmds[b->ncmds];
	if (set_field(c->name, sizeof(c->name), name, 0) != 0 ||
	    set_field(c->argv0, sizeof(c->argv0), argv0, 0) != 0 ||
	    set_field(c->program, sizeof(c->program), program_path, 1) != 0)
		return IMAGE_E_INVAL;
	b->ncmds++;
	return 0;
}

int
image_builder_write(struct image_builder *b, int fd, char *err, size_t errlen)
{
	uint64_t tables_end, poff, off = 0;
	uint8_t *head;
	size_t hlen;
	int rc = 0;

	if (b->ncmds == 0 || b->nfiles == 0)
		return image_fail(err, errlen, IMAGE_E_INVAL,
		    "an image needs at least one file and one command");
	tables_end =
	    IMG_TABLES + b->ncmds * IMG_CMD_LEN + b->nfiles * IMG_FILE_LEN;
	poff = img_round_page(tables_end);
	hlen = (size_t)poff;
	if ((head = calloc(1, hlen)) == NULL)
		return image_fail(err, errlen, IMAGE_E_NOMEM, "out of memory");
	memcpy(head, IMG_MAGIC, 8);
	img_put32(head + IMG_H_VERSION, IMG_VERSION);
	img_put32(head + IMG_H_FLAGS, b->deferred ? IMG_FLAG_DEFERRED : 0);
	img_put64(head + IMG_H_MEMORY, b->memory);
	img_put32(head + IMG_H_CAPS, b->caps);
	img_put32(head + IMG_H_NCOMMANDS, (uint32_t)b->ncmds);
	img_put32(head + IMG_H_NFILES, (uint32_t)b->nfiles);
	img_put64(head + IMG_H_PAYLOAD_OFF, poff);
	memcpy(head + IMG_M_NAME, b->name, IMAGE_NAME_MAX);
	memcpy(head + IMG_M_VERSION, b->version, IMAGE_VERSION_MAX);
	for (size_t i = 0; i < b->ncmds; i++) {
		uint8_t *e = head + IMG_TABLES + i * IMG_CMD_LEN;
		size_t fi;

		for (fi = 0; fi < b->nfiles; fi++)
			if (strcmp(b->files[fi].path, b->cmds[i].program) == 0)
				break;
		if (fi == b->nfiles) {
			rc = image_fail(err, errlen, IMAGE_E_INVAL,
			    "command %s runs %s, which is not in the image",
			    b->cmds[i].name, b->cmds[i].program);
			goto out;
		}
		memcpy(e + IMG_C_NAME, b->cmds[i].name, IMAGE_CMD_MAX);
		memcpy(e + IMG_C_ARGV0, b->cmds[i].argv0, IMAGE_CMD_MAX);
		img_put32(e + IMG_C_FILE, (uint32_t)fi);
	}
	for (size_t i = 0; i < b->nfiles; i++) {
		uint8_t *e = head + IMG_TABLES + b->ncmds * IMG_CMD_LEN +
		    i * IMG_FILE_LEN;

		memcpy(e + IMG_F_PATH, b->files[i].path, IMAGE_PATH_MAX);
		img_put64(e + IMG_F_OFFSET, off);
		img_put64(e + IMG_F_SIZE, b->files[i].len);
		crypto_generichash(e + IMG_F_HASH, 32, b->files[i].data,
		    b->files[i].len, NULL, 0);
		img_put32(e + IMG_F_MODE, b->files[i].mode);
		off += b->files[i].len;
		if (i + 1 < b->nfiles)
			off = img_round_page(off);
	}
	img_put64(head + IMG_H_PAYLOAD_LEN, off);
	if (write_all(fd, head, hlen) != 0) {
		rc = image_fail(
		    err, errlen, IMAGE_E_IO, "write: %s", strerror(errno));
		goto out;
	}
	for (size_t i = 0; i < b->nfiles; i++) {
		static const uint8_t zeros[IMG_PAGE];
		uint64_t pad = i + 1 < b->nfiles
		    ? img_round_page(b->files[i].len) - b->files[i].len
		    : 0;

		if (write_all(fd, b->files[i].data, b->files[i].len) != 0 ||
		    write_all(fd, zeros, (size_t)pad) != 0) {
			rc = image_fail(err, errlen, IMAGE_E_IO, "write: %s",
			    strerror(errno));
			goto out;
		}
	}
out:
	free(head);
	return rc;
}

void
image_builder_defer_hashes(struct image_builder *b)
{
	b->deferred = 1;
}

void
image_builder_free(struct image_builder *b)
{
	if (b == NULL)
		return;
	for (size_t i = 0; i < b->nfiles; i++)
		free(b->files[i].data);
	free(b->files);
	free(b->cmds);
	free(b);
}
