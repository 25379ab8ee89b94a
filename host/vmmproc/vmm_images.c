/*
 * The vmm's images: verified before use against the image keys, listed,
 * uploaded and deleted over the API.
 */
#include "host/vmmproc/vmm_int.h"
#include "lib/fdio.h"

/* ---- images ----------------------------------------------------------- */

static void
decode_keys(struct proc_ctx *ctx, struct vmm_state *vs)
{
	uint32_t i;

	if (vs->keys_for == ctx->image_keys)
		return;
	vs->keys_for = ctx->image_keys;
	vs->nkeys = 0;
	for (i = 0; ctx->image_keys != NULL && i < ctx->image_keys->n; i++)
		if (paserk_public_decode(vs->keys[vs->nkeys],
		        ctx->image_keys->keys[i],
		        strlen(ctx->image_keys->keys[i])) == 0)
			vs->nkeys++;
}

static void image_forget(struct vmm_state *vs, const char *name);

/* A vm process's hints cost the vmm this much hashing per loop turn at
 * most, so a large image's first runs do not stall the loop. */
#define SETTLE_BUDGET (8u << 20)
#define SETTLE_EVERY_MS 100

static int
same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino &&
	    a->st_size == b->st_size &&
	    a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
	    a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
	    a->st_ctim.tv_sec == b->st_ctim.tv_sec &&
	    a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

/* The image's verdicts: the vmm's to write, every vm process's to read
 * and none's to change (memfd_owned_view), so one guest's vm process
 * cannot mark a file checked for another's runs. */
static int
checked_map(struct loaded_image *li, size_t n)
{
	void *rw;
	const void *ro;

	if (memfd_owned_view("keep-image-checked", n, &rw, &ro) == -1)
		return -1;
	li->checked = rw;
	li->checked_ro = ro;
	li->checked_pid = getpid();
	return 0;
}

static void
loaded_clear(struct loaded_image *li)
{
	image_close(li->img);
	/* A forked child has no writable view: its address may hold
	 * something else of the child's by now. */
	if (li->checked != NULL && li->checked_pid == getpid())
		munmap(li->checked, li->nfiles);
	if (li->checked_ro != NULL)
		munmap((void *)li->checked_ro, li->nfiles);
	free(li->files);
	if (li->hints != NULL)
		munmap((void *)li->hints, li->nfiles);
	memset(li, 0, sizeof(*li));
}

static struct loaded_image *
loaded_find(struct vmm_state *vs, const struct image *img)
{
	size_t i;

	for (i = 0; i < VMM_IMAGES_MAX; i++)
		if (vs->images[i].img == img && img != NULL)
			return &vs->images[i];
	return NULL;
}

/* The image named name, opened and verified once, and again when its
 * file changed (replaced, or written in place: its inode, size, mtime
 * or ctime differ). */
struct image *
vmm_image_get(struct proc_ctx *ctx, struct vmm_state *vs, const char *name)
{
	char path[RUN_NAME_MAX + 16], err[256];
	struct loaded_image *li;
	struct image *img;
	struct stat sb;
	size_t i, n, slot = VMM_IMAGES_MAX;

	if (!vmm_safe_name(name, RUN_NAME_MAX))
		return NULL;
	decode_keys(ctx, vs);
	for (i = 0; i < VMM_IMAGES_MAX; i++) {
		li = &vs->images[i];
		if (li->img != NULL && strcmp(li->name, name) == 0) {
			if (fstatat(AT_FDCWD, li->path, &sb,
			        AT_SYMLINK_NOFOLLOW) == 0 &&
			    same_file(&sb, &li->sb))
				return li->img;
			log_info(
			    "image %s changed on disk: opening it again", name);
			image_forget(vs, name);
		}
	}
	for (i = 0; i < VMM_IMAGES_MAX && slot == VMM_IMAGES_MAX; i++)
		if (vs->images[i].img == NULL)
			slot = i;
	snprintf(path, sizeof(path), "images/%s.img", name);
	if (!vmm_exists(path))
		snprintf(path, sizeof(path), "uploads/%s.img", name);
	/* Taken before the file is read: a change after it, even during
	 * the open, makes the next use open it again. */
	if (fstatat(AT_FDCWD, path, &sb, AT_SYMLINK_NOFOLLOW) == -1)
		memset(&sb, 0, sizeof(sb));
	/* Kept open: a run's guest maps the image's pages copy-on-write
	 * through it rather than copies (docs/vmm.md, "Image pages"). */
	if (image_open_trusted_fd(path, (const uint8_t(*)[32])vs->keys,
	        vs->nkeys, &img, err, sizeof(err)) != 0) {
		log_warnx("image %s refused: %s", name, err);
		return NULL;
	}
	if (slot == VMM_IMAGES_MAX) {
		image_close(img);
		return NULL;
	}
	li = &vs->images[slot];
	n = image_nfiles(img);
	li->img = img;
	li->nfiles = n;
	li->sb = sb;
	strlcpy(li->name, name, sizeof(li->name));
	strlcpy(li->path, path, sizeof(li->path));
	if (n > 0 &&
	    (checked_map(li, n) == -1 ||
	        (li->files = calloc(n, sizeof(*li->files))) == NULL ||
	        (li->hints = mmap(NULL, n, PROT_READ | PROT_WRITE,
	             MAP_SHARED | MAP_ANONYMOUS, -1, 0)) == MAP_FAILED)) {
		li->hints = NULL;
		loaded_clear(li);
		return NULL;
	}
	for (i = 0; i < n; i++) {
		const struct image_file *f = image_file_at(img, i);

		li->files[i].path = f->path;
		li->files[i].data = f->data;
		li->files[i].len = f->len;
		li->files[i].mode = f->mode;
		li->files[i].hash = f->hash;
		li->files[i].pad = f->pad;
	}
	log_info("image %s %s verified", image_name(img), image_version(img));
	return img;
}

void
vmm_images_shed(struct vmm_state *vs, const uint8_t *keep)
{
	const uint8_t *base;
	size_t i, len;

	for (i = 0; i < VMM_IMAGES_MAX; i++)
		if (vs->images[i].img != NULL &&
		    (image_fd(vs->images[i].img, &base, &len), base != keep))
			loaded_clear(&vs->images[i]);
}

int
vmm_image_file_check(
    struct vmm_state *vs, const struct image *img, const struct image_file *f)
{
	struct loaded_image *li = loaded_find(vs, img);
	size_t i = li != NULL ? (size_t)(f - image_file_at(img, 0)) : 0;

	if (li != NULL && i < li->nfiles && li->checked_ro[i])
		return 0;
	if (image_file_verify(f) != 0)
		return IMAGE_E_HASH;
	if (li != NULL && i < li->nfiles)
		li->checked[i] = 1;
	return 0;
}

struct vmm_file *
vmm_image_files(struct vmm_state *vs, const struct image *img, size_t extra,
    volatile uint8_t **hints)
{
	struct loaded_image *li = loaded_find(vs, img);
	size_t i, n = image_nfiles(img);
	struct vmm_file *fv;

	*hints = li != NULL ? li->hints : NULL;
	if ((fv = calloc(n + extra, sizeof(*fv))) == NULL)
		return NULL;
	for (i = 0; i < n; i++) {
		const struct image_file *f = image_file_at(img, i);

		fv[i].path = f->path;
		fv[i].data = f->data;
		fv[i].len = f->len;
		fv[i].mode = f->mode;
		fv[i].hash = li != NULL && i < li->nfiles && li->checked_ro[i]
		    ? NULL
		    : f->hash;
		fv[i].pad = fv[i].hash != NULL ? f->pad : 0;
	}
	return fv;
}

const struct vmm_file *
vmm_image_files_shared(struct vmm_state *vs, const struct image *img,
    volatile uint8_t **hints, const volatile uint8_t **checked)
{
	struct loaded_image *li = loaded_find(vs, img);

	*hints = NULL;
	*checked = NULL;
	if (li == NULL || li->files == NULL)
		return NULL;
	*hints = li->hints;
	*checked = li->checked_ro;
	return li->files;
}

void
vmm_images_settle(struct vmm_state *vs)
{
	uint64_t budget = SETTLE_BUDGET, now = mono_ms();
	size_t i, k;

	/* A look through every file's hint costs microseconds on a large
	 * image: not at every turn of the loop. */
	if (now < vs->settle_at)
		return;
	vs->settle_at = now + SETTLE_EVERY_MS;
	for (i = 0; i < VMM_IMAGES_MAX; i++) {
		struct loaded_image *li = &vs->images[i];

		for (k = 0; li->hints != NULL && k < li->nfiles; k++) {
			const struct image_file *f;

			if (!li->hints[k] || li->checked_ro[k])
				continue;
			if (budget == 0)
				return;
			f = image_file_at(li->img, k);
			budget -= f->len < budget ? f->len : budget;
			if (image_file_verify(f) == 0)
				li->checked[k] = 1;
			else {
				/* A vm process that lied, or the file changed
				 * since it looked (the image's next use then
				 * opens it again). */
				log_warnx("image %s: %s does not match its "
				          "hash",
				    li->name, f->path);
				li->hints[k] = 0;
			}
		}
	}
}

/* ---- images over the API ---------------------------------------------- */

/* The vmm's filter has newfstatat, not access. */
int
vmm_exists(const char *path)
{
	struct stat sb;

	return fstatat(AT_FDCWD, path, &sb, AT_SYMLINK_NOFOLLOW) == 0;
}

/* Forget a verified image, so the next use reads the file again. */
static void
image_forget(struct vmm_state *vs, const char *name)
{
	size_t i;

	for (i = 0; i < VMM_IMAGES_MAX; i++)
		if (vs->images[i].img != NULL &&
		    strcmp(vs->images[i].name, name) == 0) {
			vmm_templates_forget(vs, name);
			loaded_clear(&vs->images[i]);
		}
}

static void
image_info(const struct image *img, const uint8_t *bytes, size_t len,
    int uploaded, struct vmm_image_info *out)
{
	uint8_t sum[32];
	size_t i;

	memset(out, 0, sizeof(*out));
	strlcpy(out->name, image_name(img), sizeof(out->name));
	strlcpy(out->version, image_version(img), sizeof(out->version));
	/* Of what the signature covers (image_signed_bytes): for an image
	 * with deferred hashes its manifest, which holds every file's hash.
	 * A list then costs milliseconds; hashing whole files (1.2 GB for
	 * the machine image) at every list held the vmm's loop past the
	 * front's wait, and under load past the parent's, which took the
	 * vmm for hung and restarted it. */
	crypto_generichash(sum, sizeof(sum), bytes, len, NULL, 0);
	sodium_bin2hex(out->digest, sizeof(out->digest), sum, sizeof(sum));
	out->size = len;
	out->uploaded = (uint32_t)uploaded;
	for (i = 0; i < image_ncommands(img); i++) {
		const char *c = image_command_at(img, i)->name;
		const char *lang = strcmp(c, "python") == 0 ? "python"
		    : strcmp(c, "js") == 0                  ? "javascript"
		                                            : NULL;

		if (lang == NULL)
			continue;
		if (out->languages[0] != '\0')
			strlcat(out->languages, ",", sizeof(out->languages));
		strlcat(out->languages, lang, sizeof(out->languages));
	}
}

/* Every image in dir that verifies against the trusted keys. */
static void
image_scan(struct vmm_state *vs, const char *dir, int uploaded,
    struct msg_vmm_images *r)
{
	char path[300], err[256], name[RUN_NAME_MAX];
	struct dirent *e;
	struct image *img;
	const uint8_t *bytes;
	size_t len, nl;
	DIR *d;

	if ((d = opendir(dir)) == NULL)
		return;
	while ((e = readdir(d)) != NULL && r->n < VMM_IMAGE_LIST_MAX) {
		nl = strlen(e->d_name);
		if (nl <= 4 || nl - 4 >= sizeof(name) ||
		    strcmp(e->d_name + nl - 4, ".img") != 0)
			continue;
		memcpy(name, e->d_name, nl - 4);
		name[nl - 4] = '\0';
		if (!vmm_safe_name(name, sizeof(name)))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (image_open_trusted(path, (const uint8_t(*)[32])vs->keys,
		        vs->nkeys, &img, err, sizeof(err)) != 0)
			continue;
		bytes = image_signed_bytes(img, &len);
		image_info(img, bytes, len, uploaded, &r->im[r->n]);
		/* The file's name is what a sandbox asks for. */
		strlcpy(r->im[r->n].name, name, sizeof(r->im[r->n].name));
		r->n++;
		image_close(img);
	}
	closedir(d);
}

/* Write bytes to uploads/NAME.img: a temporary file, synced, renamed. */
static int
image_store(const char *name, const uint8_t *bytes, size_t len)
{
	char tmp[RUN_NAME_MAX + 32], path[RUN_NAME_MAX + 16];
	int fd, whole;

	snprintf(tmp, sizeof(tmp), "uploads/.%s.tmp", name);
	snprintf(path, sizeof(path), "uploads/%s.img", name);
	if ((fd = open(tmp,
	         O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
	         0600)) == -1)
		return -1;
	whole = write_all(fd, bytes, len) == 0;
	if (!whole || fsync(fd) == -1 || close(fd) == -1) {
		if (whole)
			fd = -1;
		if (fd != -1)
			close(fd);
		unlinkat(AT_FDCWD, tmp, 0);
		return -1;
	}
	if (renameat(AT_FDCWD, tmp, AT_FDCWD, path) == -1) {
		unlinkat(AT_FDCWD, tmp, 0);
		return -1;
	}
	return 0;
}

int
vmm_h_images(struct proc_ctx *ctx, const struct msg *m)
{
	struct vmm_state *vs = ctx->arg;
	struct msg_vmm_image_ref q;
	struct msg_vmm_images *r;
	struct image *img = NULL;
	uint8_t *bytes = MAP_FAILED;
	const uint8_t *bytes_signed;
	size_t signed_len;
	char path[RUN_NAME_MAX + 16], err[256] = "";
	struct grant g;
	int put = m->hdr.type == MSG_VMM_IMAGE_PUT;
	int del = m->hdr.type == MSG_VMM_IMAGE_DELETE;

	memcpy(&q, m->data, sizeof(q));
	if (memchr(q.name, '\0', sizeof(q.name)) == NULL ||
	    (r = calloc(1, sizeof(*r))) == NULL) {
		if (put)
			close(m->fd);
		return -1;
	}
	decode_keys(ctx, vs);
	if (vmm_check_grant(ctx, m, &q.grant,
	        put || del ? CAP_IMAGE_WRITE : CAP_IMAGE_READ, q.name,
	        &g) != 0) {
		r->status = SBX_E_GRANT;
		goto reply;
	}
	if (del) {
		snprintf(path, sizeof(path), "images/%s.img", q.name);
		if (!vmm_safe_name(q.name, sizeof(q.name)))
			r->status = SBX_E_NOTFOUND;
		else if (vmm_exists(path)) {
			r->status = SBX_E_EXISTS;
			strlcpy(r->reason, "installed by the operator",
			    sizeof(r->reason));
		} else {
			snprintf(path, sizeof(path), "uploads/%s.img", q.name);
			r->status = unlinkat(AT_FDCWD, path, 0) == 0
			    ? SBX_OK
			    : SBX_E_NOTFOUND;
			image_forget(vs, q.name);
		}
		goto reply;
	}
	if (!put) {
		image_scan(vs, "images", 0, r);
		image_scan(vs, "uploads", 1, r);
		goto reply;
	}
	/* An upload: every byte is the client's until it verifies. */
	r->status = SBX_E_IMAGE;
	if (q.size == 0 ||
	    memfd_check(m->fd, q.size, VMM_IMAGE_MAX_BYTES) == -1) {
		strlcpy(r->reason, "size", sizeof(r->reason));
		goto reply;
	}
	if ((bytes = mmap(NULL, q.size, PROT_READ, MAP_PRIVATE, m->fd, 0)) ==
	    MAP_FAILED) {
		r->status = SBX_E_INTERNAL;
		goto reply;
	}
	if (image_open_mem(bytes, q.size, &img, err, sizeof(err)) != 0 ||
	    image_verify(img, (const uint8_t(*)[32])vs->keys, vs->nkeys, NULL,
	        err, sizeof(err)) != 0 ||
	    image_verify_files(img, err, sizeof(err)) != 0) {
		strlcpy(r->reason, err, sizeof(r->reason));
		goto reply;
	}
	if (!vmm_safe_name(image_name(img), RUN_NAME_MAX)) {
		strlcpy(r->reason, "the image's name is not a plain name",
		    sizeof(r->reason));
		goto reply;
	}
	snprintf(path, sizeof(path), "images/%s.img", image_name(img));
	if (vmm_exists(path)) {
		r->status = SBX_E_EXISTS;
		strlcpy(r->reason, "an operator image has that name",
		    sizeof(r->reason));
		goto reply;
	}
	if (image_store(image_name(img), bytes, q.size) != 0) {
		log_warn("%s: uploads/%s.img", __func__, image_name(img));
		r->status = SBX_E_INTERNAL;
		goto reply;
	}
	image_forget(vs, image_name(img));
	bytes_signed = image_signed_bytes(img, &signed_len);
	image_info(img, bytes_signed, signed_len, 1, &r->im[0]);
	r->n = 1;
	r->status = SBX_OK;
	log_info("image %s %s uploaded by %s", image_name(img),
	    image_version(img), g.principal);
reply:
	if (img != NULL)
		image_close(img);
	if (bytes != MAP_FAILED)
		munmap(bytes, q.size);
	if (put)
		close(m->fd);
	msg_reply(ctx, m, MSG_VMM_IMAGES, r, sizeof(*r), -1);
	free(r);
	return 0;
}
