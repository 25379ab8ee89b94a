/*
 * GET/POST /v1/images, DELETE /v1/images/{name}: the images live with the
 * vmm, which verifies every upload against the trusted image keys before
 * a byte of it is kept (host/vmm_msg.h). An upload travels as a sealed
 * memfd.
 */
#include <sys/mman.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host/front/front_backend_int.h"
#include "host/vmm_msg.h"
#include "lib/log.h"

static int
images_call(struct front_backend *fb, const struct api_call *call,
    uint32_t type, const char *name, int fd, uint64_t size,
    struct msg_vmm_images *r, struct api_error *err)
{
	const struct fb_authz *a = call->authz;
	struct msg_vmm_image_ref q;
	size_t rlen = sizeof(*r);
	int rc;

	if (a == NULL || a->link != PROC_VMM)
		return fb_fail(err, API_EINTERNAL, "Internal error");
	memset(&q, 0, sizeof(q));
	q.grant = a->d.grant;
	if (strlcpy(q.name, name, sizeof(q.name)) >= sizeof(q.name))
		return fb_fail(err, API_ENOTFOUND, "Image not found");
	q.size = size;
	rc = fb_call(fb, PROC_VMM, type, a->reqid, &q, sizeof(q), fd,
	    MSG_VMM_IMAGES, 0, r, &rlen, NULL, err);
	if (rc != API_OK)
		return rc > API_ERR_COUNT ? API_EUNAVAIL : rc;
	r->reason[sizeof(r->reason) - 1] = '\0';
	if (r->n > VMM_IMAGE_LIST_MAX)
		r->n = 0;
	return API_OK;
}

static void
to_api(struct vmm_image_info *i, struct api_image *out)
{
	i->name[sizeof(i->name) - 1] = '\0';
	i->version[sizeof(i->version) - 1] = '\0';
	i->digest[sizeof(i->digest) - 1] = '\0';
	i->languages[sizeof(i->languages) - 1] = '\0';
	memset(out, 0, sizeof(*out));
	strlcpy(out->name, i->name, sizeof(out->name));
	strlcpy(out->version, i->version, sizeof(out->version));
	snprintf(out->digest, sizeof(out->digest), "blake2b:%.64s", i->digest);
	out->size = i->size;
	strlcpy(out->languages, i->languages, sizeof(out->languages));
}

static int
fb_image_list(void *arg, const struct api_call *call, struct api_image **out,
    size_t *n, struct api_error *err)
{
	struct msg_vmm_images *r;
	size_t i;
	int rc;

	if ((r = malloc(sizeof(*r))) == NULL)
		return fb_fail(err, API_EINTERNAL, "Out of memory");
	rc = images_call(arg, call, MSG_VMM_IMAGE_LIST, "", -1, 0, r, err);
	if (rc == API_OK &&
	    (rc = fb_sbx_error((int)r->status, err)) == API_OK) {
		if ((*out = calloc(r->n ? r->n : 1, sizeof(**out))) == NULL)
			rc = fb_fail(err, API_EINTERNAL, "Out of memory");
		else {
			for (i = 0; i < r->n; i++)
				to_api(&r->im[i], &(*out)[i]);
			*n = r->n;
		}
	}
	free(r);
	return rc;
}

static int
fb_image_upload(void *arg, const struct api_call *call, const void *blob,
    size_t len, struct api_image *out, struct api_error *err)
{
	struct front_backend *fb = arg;
	struct msg_vmm_images *r = NULL;
	int fd, rc;

	if (len > VMM_IMAGE_MAX_BYTES)
		return fb_fail(err, API_ETOOLARGE, "An image is at most %u MiB",
		    VMM_IMAGE_MAX_BYTES >> 20);
	if ((fd = memfd_make_sealed("keep-image", blob, len)) == -1)
		return fb_fail(err, API_EINTERNAL, "Internal error");
	if ((r = malloc(sizeof(*r))) == NULL) {
		close(fd);
		return fb_fail(err, API_EINTERNAL, "Internal error");
	}
	rc = images_call(fb, call, MSG_VMM_IMAGE_PUT, "", fd, len, r, err);
	close(fd);
	if (rc == API_OK) {
		if (r->status == SBX_E_IMAGE)
			rc = fb_fail(err, API_EBADREQ,
			    "Not a signed image from a trusted key: %s",
			    r->reason);
		else if (r->status == SBX_E_EXISTS)
			rc = fb_fail(err, API_ECONFLICT, "%s", r->reason);
		else if ((rc = fb_sbx_error((int)r->status, err)) == API_OK &&
		    r->n == 1) {
			to_api(&r->im[0], out);
			fb_audit_event(
			    fb, call, "image.upload", out->name, out->digest);
			/* The file is the image; the record is its history. */
			if (fb_persist_image(fb, call->who, out, err) != API_OK)
				log_warnx("image %s not recorded: %s",
				    out->name, err->message);
		} else if (rc == API_OK)
			rc = fb_fail(err, API_EINTERNAL, "Internal error");
	}
	free(r);
	return rc;
}

static int
fb_image_delete(void *arg, const struct api_call *call, const char *name,
    struct api_error *err)
{
	struct msg_vmm_images *r;
	int rc;

	if ((r = malloc(sizeof(*r))) == NULL)
		return fb_fail(err, API_EINTERNAL, "Out of memory");
	rc = images_call(arg, call, MSG_VMM_IMAGE_DELETE, name, -1, 0, r, err);
	if (rc == API_OK) {
		if (r->status == SBX_E_EXISTS)
			rc = fb_fail(err, API_EFORBIDDEN,
			    "Image %s was installed by the operator", name);
		else if (r->status == SBX_E_NOTFOUND)
			rc = fb_fail(err, API_ENOTFOUND, "Image not found");
		else if ((rc = fb_sbx_error((int)r->status, err)) == API_OK) {
			fb_audit_event(arg, call, "image.delete", name, "");
			if (fb_forget_image(arg, call->who, name, err) !=
			    API_OK)
				log_warnx("image %s: record not deleted: %s",
				    name, err->message);
		}
	}
	free(r);
	return rc;
}

void
fb_image_ops(struct api_backend *ops)
{
	ops->image_list = fb_image_list;
	ops->image_upload = fb_image_upload;
	ops->image_delete = fb_image_delete;
}
