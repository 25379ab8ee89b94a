/*
 * Live contexts on disk (docs/contexts.md, "Pause, persist, resume"):
 * each context's journal of acknowledged cells (host/ctx_journal.h) and
 * its named snapshots, under contexts/SANDBOX/ in the state directory.
 * The journal is what survives: an interpreter paused for idleness, one
 * lost with a vmm killed with -9, or one stopped by keepd's restart is
 * brought back by running its journal's cells again in a new one
 * (host/vmmproc/vmm_context.c). A restarted vmm adopts the journals of the
 * sandboxes it restored; the directories of sandboxes that are gone are
 * removed.
 */
#include "host/ctx_journal.h"
#include "host/vmmproc/vmm_int.h"
#include "lib/fdio.h"
#include "lib/tree.h"

#define CTX_DIR "contexts"

/* contexts/SBX, made if missing; a directory fd or -1. */
static int
sbx_dir(const char *sbx, int create)
{
	int top, fd;

	if (create && mkdir(CTX_DIR, 0700) == -1 && errno != EEXIST)
		return -1;
	if ((top = open(CTX_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return -1;
	if (create && mkdirat(top, sbx, 0700) == -1 && errno != EEXIST) {
		close(top);
		return -1;
	}
	fd = openat(top, sbx, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	close(top);
	return fd;
}

static void
file_name(char *out, size_t len, int kind, const char *name)
{
	snprintf(out, len, "%s%s", kind == CTX_JOURNAL_SNAPSHOT ? "snap-" : "",
	    name);
}

/*
 * A new journal file: the header, then the records of src (an open
 * journal, NULL for none) up to src_bytes, written to a temporary name,
 * fsynced and renamed in. Returns an O_APPEND descriptor or -1.
 */
int
vmm_ctxdisk_create(const struct ctx_journal_head *h, int src_fd,
    uint64_t src_bytes, int keep_open)
{
	char name[CTX_ID_MAX + 8], tmp[CTX_ID_MAX + 16];
	uint8_t buf[65536];
	uint64_t at = sizeof(*h);
	ssize_t n;
	int dir, fd = -1;

	file_name(name, sizeof(name), (int)h->kind, h->name);
	snprintf(tmp, sizeof(tmp), "%s.tmp", name);
	if ((dir = sbx_dir(h->sbx, 1)) == -1)
		return -1;
	if ((fd = openat(dir, tmp,
	         O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600)) ==
	        -1 ||
	    write_all(fd, h, sizeof(*h)) != 0)
		goto fail;
	while (src_fd >= 0 && at < src_bytes) {
		size_t want =
		    src_bytes - at < sizeof(buf) ? src_bytes - at : sizeof(buf);

		if ((n = pread(src_fd, buf, want, (off_t)at)) <= 0 ||
		    write_all(fd, buf, (size_t)n) != 0)
			goto fail;
		at += (uint64_t)n;
	}
	if (fsync(fd) == -1 || renameat(dir, tmp, dir, name) == -1 ||
	    fsync(dir) == -1)
		goto fail;
	close(dir);
	if (!keep_open) {
		close(fd);
		return 0;
	}
	/* O_APPEND from here on: records only ever go at the end. */
	if (fcntl(fd, F_SETFL, O_APPEND) == -1) {
		close(fd);
		return -1;
	}
	return fd;
fail:
	log_warn("%s: %s/%s/%s", __func__, CTX_DIR, h->sbx, tmp);
	if (fd != -1)
		close(fd);
	unlinkat(dir, tmp, 0);
	close(dir);
	return -1;
}

/* Append one acknowledged cell and fsync it; on failure the file is cut
 * back to what it was. */
int
vmm_ctxdisk_append(int fd, uint64_t *bytes, const uint8_t *payload, size_t len)
{
	uint8_t rec[CTX_JOURNAL_REC_HDR];

	ctx_journal_record_head(payload, len, rec);
	if (write_all(fd, rec, sizeof(rec)) != 0 ||
	    write_all(fd, payload, len) != 0 || fsync(fd) == -1) {
		log_warn("%s", __func__);
		if (ftruncate(fd, (off_t)*bytes) == -1)
			log_warn("%s: ftruncate", __func__);
		return -1;
	}
	*bytes += sizeof(rec) + len;
	return 0;
}

/* The record at *at (checked again: the file is on disk), malloc'd into
 * *payload; *at moves past it. */
int
vmm_ctxdisk_read(int fd, uint64_t *at, uint8_t **payload, size_t *len)
{
	uint8_t rec[CTX_JOURNAL_REC_HDR], h[CTX_JOURNAL_HASH], *p;
	uint32_t l;

	*payload = NULL;
	if (pread(fd, rec, sizeof(rec), (off_t)*at) != (ssize_t)sizeof(rec))
		return -1;
	l = (uint32_t)rec[0] | (uint32_t)rec[1] << 8 | (uint32_t)rec[2] << 16 |
	    (uint32_t)rec[3] << 24;
	if (l > CTX_JOURNAL_PAYLOAD_MAX || (p = malloc(l ? l : 1)) == NULL)
		return -1;
	if (pread(fd, p, l, (off_t)(*at + sizeof(rec))) != (ssize_t)l ||
	    crypto_generichash(h, sizeof(h), p, l, NULL, 0) != 0 ||
	    sodium_memcmp(h, rec + 4, sizeof(h)) != 0 ||
	    ctx_journal_payload_ok(p, l) != 0) {
		free(p);
		return -1;
	}
	*payload = p;
	*len = l;
	*at += sizeof(rec) + l;
	return 0;
}

/* Back to no cells (a restart). */
int
vmm_ctxdisk_reset(int fd, uint64_t *bytes)
{
	if (ftruncate(fd, sizeof(struct ctx_journal_head)) == -1 ||
	    fsync(fd) == -1)
		return -1;
	*bytes = sizeof(struct ctx_journal_head);
	return 0;
}

/* A journal or snapshot file, read-only (the source of a copy). */
int
vmm_ctxdisk_open(const char *sbx, int kind, const char *name)
{
	char f[CTX_ID_MAX + 8];
	int dir, fd;

	if ((dir = sbx_dir(sbx, 0)) == -1)
		return -1;
	file_name(f, sizeof(f), kind, name);
	fd = openat(dir, f, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	close(dir);
	return fd;
}

void
vmm_ctxdisk_unlink(const char *sbx, int kind, const char *name)
{
	char f[CTX_ID_MAX + 8];
	int dir;

	if ((dir = sbx_dir(sbx, 0)) == -1)
		return;
	file_name(f, sizeof(f), kind, name);
	if (unlinkat(dir, f, 0) == -1 && errno != ENOENT)
		log_warn("%s: %s/%s/%s", __func__, CTX_DIR, sbx, f);
	close(dir);
}

/* A sandbox is gone: its contexts' journals and snapshots with it. */
void
vmm_contexts_sandbox_gone(const char *sbx)
{
	int top;

	if ((top = open(CTX_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return;
	if (tree_remove(top, sbx) == -1)
		log_warn("%s: %s/%s", __func__, CTX_DIR, sbx);
	close(top);
}

/* Check a journal file (mapped whole, read-only) ; the torn tail, if
 * any, is cut off. Returns an open descriptor (O_APPEND) or -1. */
static int
adopt_file(int dir, const char *name, struct ctx_journal_head *h,
    uint64_t *cells, uint64_t *bytes)
{
	struct stat st;
	uint8_t *buf = MAP_FAILED;
	size_t valid;
	int fd;

	if ((fd = openat(dir, name, O_RDWR | O_CLOEXEC | O_NOFOLLOW)) == -1)
		return -1;
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size < sizeof(*h) ||
	    (buf = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd,
	         0)) == MAP_FAILED ||
	    ctx_journal_scan(buf, (size_t)st.st_size, h, cells, &valid) != 0)
		goto fail;
	munmap(buf, (size_t)st.st_size);
	buf = MAP_FAILED;
	if (valid != (size_t)st.st_size) {
		log_warnx("%s: %s: a torn record cut off (%zu of %lld bytes)",
		    __func__, name, valid, (long long)st.st_size);
		if (ftruncate(fd, (off_t)valid) == -1 || fsync(fd) == -1)
			goto fail;
	}
	if (fcntl(fd, F_SETFL, O_APPEND) == -1)
		goto fail;
	*bytes = valid;
	return fd;
fail:
	if (buf != MAP_FAILED)
		munmap(buf, (size_t)st.st_size);
	close(fd);
	return -1;
}

static int
ends_with(const char *s, const char *end)
{
	size_t n = strlen(s), e = strlen(end);

	return n > e && strcmp(s + n - e, end) == 0;
}

/* A stream over directory dir on a descriptor of its own (seccomp has
 * no dup), which closedir closes; NULL when it cannot be made. */
static DIR *
dir_stream(int dir)
{
	DIR *d;
	int fd;

	if ((fd = openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return NULL;
	if ((d = fdopendir(fd)) == NULL)
		close(fd);
	return d;
}

/* Memory images whose context's journal is not there: removed. */
static void
drop_orphan_images(int dir)
{
	char base[CTX_ID_MAX + 16];
	struct dirent *e;
	struct stat st;
	DIR *d;

	if ((d = dir_stream(dir)) == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		if (!ends_with(e->d_name, ".mem") ||
		    strlen(e->d_name) - 4 >= sizeof(base))
			continue;
		memcpy(base, e->d_name, strlen(e->d_name) - 4);
		base[strlen(e->d_name) - 4] = '\0';
		if (fstatat(dir, base, &st, AT_SYMLINK_NOFOLLOW) == -1)
			unlinkat(dir, e->d_name, 0);
	}
	closedir(d);
}

static void
adopt_sandbox(struct vmm_state *vs, struct sandbox *s, int dir)
{
	struct ctx_journal_head h;
	struct dirent *e;
	uint64_t cells, bytes;
	DIR *d;
	int fd;

	if ((d = dir_stream(dir)) == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		const char *n = e->d_name;
		int snap = strncmp(n, "snap-", 5) == 0;

		if (n[0] == '.')
			continue;
		if (strstr(n, ".tmp") != NULL) { /* never renamed in */
			unlinkat(dir, n, 0);
			continue;
		}
		if (ends_with(n, ".mem")) {
			/* A context's memory image: its context, once
			 * adopted, looks for it (vmm_context_adopt). */
			continue;
		}
		fd = adopt_file(dir, n, &h, &cells, &bytes);
		if (fd == -1 || strcmp(h.sbx, s->id) != 0 ||
		    strcmp(h.owner, s->owner) != 0 ||
		    h.kind !=
		        (snap ? CTX_JOURNAL_SNAPSHOT : CTX_JOURNAL_CONTEXT) ||
		    strcmp(snap ? n + 5 : n, h.name) != 0 ||
		    !vmm_safe_name(h.name, sizeof(h.name))) {
			log_warnx("%s: %s/%s/%s is not a journal of this "
			          "sandbox: removed",
			    __func__, CTX_DIR, s->id, n);
			unlinkat(dir, n, 0);
			if (fd != -1)
				close(fd);
			continue;
		}
		if ((snap ? vmm_snapshot_adopt(vs, &h, cells, bytes)
		          : vmm_context_adopt(vs, &h, fd, cells, bytes)) != 0) {
			/* Well-formed, but no room in the vmm: left for a
			 * later start rather than lost. */
			log_warnx("%s: %s/%s/%s: no room in the vmm, left on "
			          "disk",
			    __func__, CTX_DIR, s->id, n);
			close(fd);
			continue;
		}
		if (snap)
			close(fd);
	}
	closedir(d);
	drop_orphan_images(dir);
}

/* After the sandboxes are restored: their contexts back (paused), the
 * rest removed. */
void
vmm_contexts_adopt(struct vmm_state *vs)
{
	struct dirent *e;
	struct sandbox *s;
	size_t i;
	DIR *d;
	int top, fd;

	if ((top = open(CTX_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return;
	if ((d = dir_stream(top)) == NULL) {
		close(top);
		return;
	}
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		s = NULL;
		for (i = 0; i < VMM_SANDBOXES_MAX && s == NULL; i++)
			if (vs->sbx[i].used &&
			    strcmp(vs->sbx[i].id, e->d_name) == 0)
				s = &vs->sbx[i];
		if (s == NULL ||
		    (fd = openat(top, e->d_name,
		         O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW)) ==
		        -1) {
			(void)tree_remove(top, e->d_name);
			continue;
		}
		adopt_sandbox(vs, s, fd);
		close(fd);
	}
	closedir(d);
	close(top);
}

/* ---- memory images (host/vmm/snapshot.h) ------------------------------ */

static void
mem_name(char *out, size_t len, const char *id, int tmp)
{
	snprintf(out, len, "%s.mem%s", id, tmp ? ".tmp" : "");
}

/* The file a context's vm process writes its image into when paused:
 * contexts/SBX/ID.mem.tmp, empty, read-write; -1 when it cannot be
 * made (the context then pauses to its journal only). */
int
vmm_ctxdisk_mem_out(const char *sbx, const char *id)
{
	char f[CTX_ID_MAX + 16];
	int dir, fd;

	if ((dir = sbx_dir(sbx, 1)) == -1)
		return -1;
	mem_name(f, sizeof(f), id, 1);
	fd = openat(
	    dir, f, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	close(dir);
	return fd;
}

/* The seal at the start of fd, when the file is whole: its length and
 * end say so. 0 or -1. */
static int
mem_seal_read(int fd, struct vm_snap_seal *s, uint64_t *size)
{
	struct vm_snap_end e;
	struct stat st;

	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) ||
	    pread(fd, s, sizeof(*s), 0) != (ssize_t)sizeof(*s) ||
	    memcmp(s->magic, VM_SNAP_MAGIC, 8) != 0 ||
	    s->version != VM_SNAP_VERSION || s->seal_len != sizeof(*s) ||
	    s->file_len != (uint64_t)st.st_size ||
	    s->file_len < sizeof(*s) + sizeof(e) ||
	    pread(fd, &e, sizeof(e), (off_t)(s->file_len - sizeof(e))) !=
	        (ssize_t)sizeof(e) ||
	    memcmp(e.magic, VM_SNAP_END, 8) != 0 || e.file_len != s->file_len)
		return -1;
	*size = (uint64_t)st.st_size;
	return 0;
}

/*
 * The vm process ended with VMM_EXIT_SAVED: seal its image with the
 * cells it holds and the image it was taken on, sync it and rename it
 * in as contexts/SBX/ID.mem. Its size, or 0 when it is not whole (then
 * it is gone).
 */
uint64_t
vmm_ctxdisk_mem_seal(
    const char *sbx, const char *id, uint64_t cells, const uint8_t image[32])
{
	char tmp[CTX_ID_MAX + 16], name[CTX_ID_MAX + 16];
	struct vm_snap_seal s;
	uint64_t size = 0;
	int dir, fd = -1;

	if ((dir = sbx_dir(sbx, 0)) == -1)
		return 0;
	mem_name(tmp, sizeof(tmp), id, 1);
	mem_name(name, sizeof(name), id, 0);
	if ((fd = openat(dir, tmp, O_RDWR | O_CLOEXEC | O_NOFOLLOW)) == -1 ||
	    mem_seal_read(fd, &s, &size) != 0)
		goto fail;
	s.cells = cells;
	memcpy(s.image, image, sizeof(s.image));
	s.sealed = 1;
	if (pwrite(fd, &s, sizeof(s), 0) != (ssize_t)sizeof(s) ||
	    fsync(fd) == -1 || renameat(dir, tmp, dir, name) == -1 ||
	    fsync(dir) == -1)
		goto fail;
	close(fd);
	close(dir);
	return size;
fail:
	log_warnx("%s: %s/%s/%s is not a whole memory image: removed", __func__,
	    CTX_DIR, sbx, tmp);
	if (fd != -1)
		close(fd);
	unlinkat(dir, tmp, 0);
	close(dir);
	return 0;
}

/* A sealed image of exactly cells cells taken on image (NULL: any),
 * read-only, with its size; -1 when there is none that fits. */
int
vmm_ctxdisk_mem_in(const char *sbx, const char *id, uint64_t cells,
    const uint8_t image[32], uint64_t *size)
{
	char f[CTX_ID_MAX + 16];
	struct vm_snap_seal s;
	int dir, fd;

	if ((dir = sbx_dir(sbx, 0)) == -1)
		return -1;
	mem_name(f, sizeof(f), id, 0);
	fd = openat(dir, f, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	close(dir);
	if (fd == -1)
		return -1;
	if (mem_seal_read(fd, &s, size) != 0 || s.sealed != 1 ||
	    s.cells != cells ||
	    (image != NULL && memcmp(s.image, image, sizeof(s.image)) != 0)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* The sealed image; with tmp_too, the one being written too. */
void
vmm_ctxdisk_mem_unlink(const char *sbx, const char *id, int tmp_too)
{
	char f[CTX_ID_MAX + 16];
	int dir, tmp;

	if ((dir = sbx_dir(sbx, 0)) == -1)
		return;
	for (tmp = 0; tmp < 1 + (tmp_too != 0); tmp++) {
		mem_name(f, sizeof(f), id, tmp);
		if (unlinkat(dir, f, 0) == -1 && errno != ENOENT)
			log_warn("%s: %s/%s/%s", __func__, CTX_DIR, sbx, f);
	}
	close(dir);
}

/* A fork's memory image: the sealed image of context `id` in sandbox
 * sbx linked in as the image of `to_id` in to_sbx. Sealed images are
 * never written again (a vm process writes only its .mem.tmp), so the
 * two share the file's blocks; each unlinks its own name when it is
 * used. 0, or -1 (then the fork resumes from its journal). */
int
vmm_ctxdisk_mem_link(
    const char *sbx, const char *id, const char *to_sbx, const char *to_id)
{
	char f[CTX_ID_MAX + 16], t[CTX_ID_MAX + 16];
	int dir, to_dir, rc = -1;

	if ((dir = sbx_dir(sbx, 0)) == -1)
		return -1;
	if ((to_dir = sbx_dir(to_sbx, 1)) == -1) {
		close(dir);
		return -1;
	}
	mem_name(f, sizeof(f), id, 0);
	mem_name(t, sizeof(t), to_id, 0);
	if (linkat(dir, f, to_dir, t, 0) == 0 && fsync(to_dir) == 0)
		rc = 0;
	else
		log_warn("%s: %s/%s/%s", __func__, CTX_DIR, to_sbx, t);
	close(dir);
	close(to_dir);
	return rc;
}

/* The journal header's `from` (a context's: what its memory image is,
 * docs/contexts.md "Fork and snapshots"), written in place and synced.
 * The journal's descriptor appends: the header is written through a
 * descriptor of its own. */
int
vmm_ctxdisk_set_from(const char *sbx, const char *id, const char *from)
{
	char f[CTX_ID_MAX + 8], v[CTX_ID_MAX];
	int dir, fd, rc = -1;

	if ((dir = sbx_dir(sbx, 0)) == -1)
		return -1;
	file_name(f, sizeof(f), CTX_JOURNAL_CONTEXT, id);
	fd = openat(dir, f, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	close(dir);
	if (fd == -1)
		return -1;
	memset(v, 0, sizeof(v));
	strlcpy(v, from, sizeof(v));
	if (pwrite(fd, v, sizeof(v),
	        (off_t)offsetof(struct ctx_journal_head, from)) ==
	        (ssize_t)sizeof(v) &&
	    fsync(fd) == 0)
		rc = 0;
	close(fd);
	return rc;
}
