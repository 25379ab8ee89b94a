/*
 * Files in a sandbox's workspace, from the front's side: each op is one
 * MSG_VMM_FILE to the vmm with the policy's grant (artifact:read or
 * artifact:write on the sandbox), bytes both ways in a memfd.
 */
#include <sys/mman.h>
#include <sys/stat.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host/front/front_backend_int.h"
#include "host/vmm_msg.h"
#include "lib/fdio.h"

static int
errno_error(int e, struct api_error *err)
{
	switch (e) {
	case ENOENT:
	case ENOTDIR:
		return fb_fail(err, API_ENOTFOUND, "No such file or directory");
	case EXDEV:
	case ELOOP:
		return fb_fail(
		    err, API_EFORBIDDEN, "The path leads out of the workspace");
	case EEXIST:
		return fb_fail(err, API_ECONFLICT, "It exists already");
	case EISDIR:
		return fb_fail(err, API_EBADREQ, "It is a directory");
	case ENOTEMPTY:
		return fb_fail(
		    err, API_ECONFLICT, "The directory is not empty");
	case EFBIG:
		return fb_fail(err, API_ETOOLARGE, "The file is too large");
	case EDQUOT:
	case ENOSPC:
		return fb_fail(err, API_ESTORAGE, "The workspace is full");
	case ENAMETOOLONG:
	case EINVAL:
	case EBUSY:
		return fb_fail(err, API_EBADREQ, "Bad path");
	default:
		return fb_fail(err, API_EINTERNAL, "Internal error");
	}
}

/*
 * One file op. data/len: bytes to write; *rfd gets the reply's memfd
 * when the caller wants it (else it is closed).
 */
static int
file_call(struct front_backend *fb, const struct api_call *call, const char *id,
    uint32_t op, const char *path, const void *data, size_t len,
    struct msg_vmm_file_reply *r, int *rfd, struct api_error *err)
{
	const struct fb_authz *a = call->authz;
	struct msg_vmm_file q;
	size_t rlen = sizeof(*r);
	int mfd, fd = -1, rc;

	if (a == NULL || a->link != PROC_VMM)
		return fb_fail(err, API_EINTERNAL, "Internal error");
	memset(&q, 0, sizeof(q));
	q.grant = a->d.grant;
	strlcpy(q.id, id, sizeof(q.id));
	q.op = op;
	q.len = len;
	if (strlcpy(q.path, path, sizeof(q.path)) >= sizeof(q.path))
		return fb_fail(err, API_EBADREQ, "Path too long");
	if ((mfd = memfd_make_sealed("keep-file", data, len)) == -1)
		return fb_fail(err, API_EINTERNAL, "Internal error");
	rc = fb_call(fb, PROC_VMM, MSG_VMM_FILE, a->reqid, &q, sizeof(q), mfd,
	    MSG_VMM_FILE_REPLY, FB_R_FD, r, &rlen, &fd, err);
	close(mfd);
	if (rc != API_OK)
		return rc > API_ERR_COUNT ? API_EUNAVAIL : rc;
	if (r->status != SBX_OK)
		rc = fb_sbx_error((int)r->status, err);
	else if (r->error != 0)
		rc = errno_error(r->error, err);
	if (rc == API_OK && rfd != NULL) {
		*rfd = fd;
		return API_OK;
	}
	close(fd);
	return rc;
}

/* The reply memfd's len bytes (all it holds, sealed), malloc'ed. */
static int
slurp(int fd, uint64_t len, char **out, struct api_error *err)
{
	if ((*out = memfd_read(fd, len, FILE_READ_MAX)) == NULL)
		return fb_fail(err, API_EINTERNAL, "Internal error");
	return API_OK;
}

static int
fb_file_read(void *arg, const struct api_call *call, const char *id,
    const char *path, char **data, size_t *len, struct api_error *err)
{
	struct msg_vmm_file_reply r;
	int fd, rc;

	if ((rc = file_call(arg, call, id, FILE_READ, path, NULL, 0, &r, &fd,
	         err)) != API_OK)
		return rc;
	rc = slurp(fd, r.len, data, err);
	close(fd);
	if (rc == API_OK)
		*len = r.len;
	return rc;
}

static int
fb_file_write(void *arg, const struct api_call *call, const char *id,
    const char *path, const void *data, size_t len, struct api_error *err)
{
	struct msg_vmm_file_reply r;

	return file_call(
	    arg, call, id, FILE_WRITE, path, data, len, &r, NULL, err);
}

static int
fb_file_list(void *arg, const struct api_call *call, const char *id,
    const char *path, struct api_dirent **out, size_t *n, struct api_error *err)
{
	struct msg_vmm_file_reply r;
	struct vmm_dirent *d;
	char *raw = NULL;
	size_t i;
	int fd, rc;

	if ((rc = file_call(arg, call, id, FILE_LIST, path, NULL, 0, &r, &fd,
	         err)) != API_OK)
		return rc;
	if (r.len > FILE_LIST_MAX) {
		close(fd);
		return fb_fail(err, API_EINTERNAL, "Internal error");
	}
	rc = slurp(fd, r.len * sizeof(*d), &raw, err);
	close(fd);
	if (rc != API_OK)
		return rc;
	if ((*out = calloc(r.len ? r.len : 1, sizeof(**out))) == NULL) {
		free(raw);
		return fb_fail(err, API_EINTERNAL, "Out of memory");
	}
	d = (struct vmm_dirent *)raw;
	for (i = 0; i < r.len; i++) {
		d[i].name[sizeof(d[i].name) - 1] = '\0';
		d[i].type[sizeof(d[i].type) - 1] = '\0';
		strlcpy((*out)[i].name, d[i].name, sizeof((*out)[i].name));
		strlcpy((*out)[i].type, d[i].type, sizeof((*out)[i].type));
		(*out)[i].size = d[i].size;
		(*out)[i].mtime = d[i].mtime;
	}
	*n = r.len;
	free(raw);
	return API_OK;
}

static int
fb_file_exists(void *arg, const struct api_call *call, const char *id,
    const char *path, int *exists, struct api_error *err)
{
	struct msg_vmm_file_reply r;
	int rc;

	rc =
	    file_call(arg, call, id, FILE_EXISTS, path, NULL, 0, &r, NULL, err);
	if (rc == API_OK)
		*exists = r.exists != 0;
	return rc;
}

static int
fb_file_remove(void *arg, const struct api_call *call, const char *id,
    const char *path, struct api_error *err)
{
	struct msg_vmm_file_reply r;

	return file_call(
	    arg, call, id, FILE_REMOVE, path, NULL, 0, &r, NULL, err);
}

static int
fb_file_mkdir(void *arg, const struct api_call *call, const char *id,
    const char *path, struct api_error *err)
{
	struct msg_vmm_file_reply r;

	return file_call(
	    arg, call, id, FILE_MKDIR, path, NULL, 0, &r, NULL, err);
}

/* The destination travels as the request's bytes: msg_vmm_file has one
 * path field, and a second would grow every file message. */
static int
fb_file_move(void *arg, const struct api_call *call, const char *id,
    const char *from, const char *to, struct api_dirent *out,
    struct api_error *err)
{
	struct msg_vmm_file_reply r;
	struct vmm_dirent *d;
	char *raw = NULL;
	size_t len = strlen(to);
	int fd, rc;

	if (len >= FILE_PATH_MAX)
		return fb_fail(err, API_EBADREQ, "Path too long");
	if ((rc = file_call(arg, call, id, FILE_MOVE, from, to, len, &r, &fd,
	         err)) != API_OK)
		return rc;
	memset(out, 0, sizeof(*out));
	/* Moved but gone before its stat: an entry of its name alone. */
	if (r.len == 0) {
		close(fd);
		return API_OK;
	}
	rc = slurp(fd, sizeof(*d), &raw, err);
	close(fd);
	if (rc != API_OK)
		return rc;
	d = (struct vmm_dirent *)raw;
	d->name[sizeof(d->name) - 1] = '\0';
	d->type[sizeof(d->type) - 1] = '\0';
	strlcpy(out->name, d->name, sizeof(out->name));
	strlcpy(out->type, d->type, sizeof(out->type));
	out->size = d->size;
	out->mtime = d->mtime;
	free(raw);
	return API_OK;
}

void
fb_file_ops(struct api_backend *ops)
{
	ops->file_read = fb_file_read;
	ops->file_write = fb_file_write;
	ops->file_list = fb_file_list;
	ops->file_exists = fb_file_exists;
	ops->file_remove = fb_file_remove;
	ops->file_mkdir = fb_file_mkdir;
	ops->file_move = fb_file_move;
}
