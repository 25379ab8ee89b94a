/*
 * What an ELF file needs from the loader: its PT_INTERP path, its
 * DT_NEEDED names and its DT_RUNPATH (or DT_RPATH). The image builder
 * (keep image build --deb) follows these to put the whole shared-library
 * closure of a package's executables and extension modules in the image.
 * Pure: no I/O, no allocation; the file is untrusted (fuzz/image_elfdeps.c).
 */
#ifndef KEEP_IMAGE_ELFDEPS_H
#define KEEP_IMAGE_ELFDEPS_H

#include <stddef.h>
#include <stdint.h>

#define ELFDEPS_MAX_NEEDED 64
#define ELFDEPS_NAME_MAX 256 /* NUL included */
#define ELFDEPS_RUNPATH_MAX 1024

struct elfdeps {
	char interp[ELFDEPS_NAME_MAX]; /* "" when none */
	char needed[ELFDEPS_MAX_NEEDED][ELFDEPS_NAME_MAX];
	size_t nneeded;
	char runpath[ELFDEPS_RUNPATH_MAX]; /* colon-separated, "" when none */
};

/* 1: buf is not an ELF file (nothing to follow); 0: parsed into out;
 * -1: an ELF file this reader refuses (not x86-64, a table out of the
 * file, a name too long, too many names), with a reason in err. */
int elfdeps_parse(const uint8_t *buf, size_t len, struct elfdeps *out,
    char *err, size_t errlen);

#endif
