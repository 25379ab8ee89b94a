/*
 * The file set of an image built from installed Debian packages (keep
 * image build --deb, keep-image(1), docs/image-format.md "Images from
 * Debian packages"): the packages' files, the compiled bytecode beside
 * their Python sources, and the shared-library closure of every ELF file
 * among them, resolved as ld.so resolves it in the guest.
 *
 * A set maps guest paths to host files. Entries added with
 * deb_set_add_explicit (the builder's --file and PROGRAM) are taken as
 * given; libraries the closure adds must belong to an installed package.
 */
#ifndef KEEP_CLI_IMAGE_DEB_H
#define KEEP_CLI_IMAGE_DEB_H

#include <stddef.h>

struct deb_entry {
	char *guest; /* absolute guest path */
	char *host; /* the host file whose bytes it holds */
	int explicit_; /* given by the caller, not found by the builder */
	/* Python bytecode Debian compiled for this source: stored as an
	 * unchecked hash-based .pyc when current for it (image/pyc.h). */
	char *pyc_source;
};

struct deb_set {
	struct deb_entry *v;
	size_t n, cap;
};

/* 0, or -1 with a reason in err (a duplicate guest path). */
int deb_set_add_explicit(struct deb_set *s, const char *guest, const char *host,
    char *err, size_t errlen);

/* Add every file of each package (refused unless installed), then the
 * closure of everything in the set. 0, or -1 with a reason in err:
 * a package not installed, a path too long for the image format, a
 * library no search directory holds, a library no installed package
 * owns. */
int deb_set_collect(struct deb_set *s, const char *const *pkgs, size_t npkgs,
    char *err, size_t errlen);

/* Sort by guest path (the image's order, so the same packages give the
 * same image). */
void deb_set_sort(struct deb_set *s);

void deb_set_free(struct deb_set *s);

#endif
