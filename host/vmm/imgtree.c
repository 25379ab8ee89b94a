/*
 * The image's files as a tree (docs/vmm.md, "Files"): an index of
 * cfg->files sorted by path, so that finding a file, telling whether a
 * path is a directory and listing a directory cost a binary search, not a
 * walk of every file. An image from Debian packages holds thousands of
 * files and CPython stats and lists hundreds of paths while it starts.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "host/vmm/vm_int.h"

static int
less(const struct vmm_config *cfg, uint32_t a, uint32_t b)
{
	return strcmp(cfg->files[a].path, cfg->files[b].path) < 0;
}

/* Heapsort of the indexes by path: in place, no allocation, and no
 * qsort (glibc's asks sysinfo(2), outside the vm process's allowlist). */
static void
sift_down(const struct vmm_config *cfg, uint32_t *v, size_t root, size_t n)
{
	for (;;) {
		size_t child = 2 * root + 1;
		uint32_t t;

		if (child >= n)
			return;
		if (child + 1 < n && less(cfg, v[child], v[child + 1]))
			child++;
		if (!less(cfg, v[root], v[child]))
			return;
		t = v[root];
		v[root] = v[child];
		v[child] = t;
		root = child;
	}
}

static void
sort_by_path(const struct vmm_config *cfg, uint32_t *v, size_t n)
{
	size_t i;

	for (i = n / 2; i-- > 0;)
		sift_down(cfg, v, i, n);
	for (i = n; i-- > 1;) {
		uint32_t t = v[0];

		v[0] = v[i];
		v[i] = t;
		sift_down(cfg, v, 0, i);
	}
}

int
vm_img_init(struct vm *vm)
{
	const struct vmm_config *cfg = vm->cfg;
	size_t i;
	int sorted = 1;

	if (cfg->nfiles == 0)
		return VMM_OK;
	if (cfg->nfiles > UINT32_MAX ||
	    (vm->img_order = calloc(cfg->nfiles, sizeof(uint32_t))) == NULL ||
	    (vm->img_checked = calloc(cfg->nfiles, 1)) == NULL ||
	    (vm->img_pos = calloc(cfg->nfiles, sizeof(uint32_t))) == NULL)
		return VMM_E_NOMEM;
	/* An image's order was checked as it was opened (image/validate.c):
	 * a pass of strcmp over every path again was for nothing. */
	for (i = 0; i < cfg->nfiles; i++) {
		vm->img_order[i] = (uint32_t)i;
		if (cfg->files_checked != NULL && cfg->files_checked[i])
			vm->img_checked[i] = 1;
		if (i > 0 && !cfg->files_sorted &&
		    strcmp(cfg->files[i - 1].path, cfg->files[i].path) >= 0)
			sorted = 0;
	}
	/* Images keep's builder writes are sorted already. */
	if (!sorted)
		sort_by_path(cfg, vm->img_order, cfg->nfiles);
	for (i = 0; i < cfg->nfiles; i++)
		vm->img_pos[vm->img_order[i]] = (uint32_t)i;
	return VMM_OK;
}

void
vm_img_free(struct vm *vm)
{
	free(vm->img_order);
	vm->img_order = NULL;
	free(vm->img_checked);
	vm->img_checked = NULL;
	free(vm->img_pos);
	vm->img_pos = NULL;
}

int
vm_img_verify(struct vm *vm, const struct vmm_file *f)
{
	size_t i = (size_t)(f - vm->cfg->files);
	int known = vm->cfg->files != NULL && f >= vm->cfg->files &&
	    i < vm->cfg->nfiles;
	uint64_t k;
	uint8_t h[32];

	if (f->hash == NULL ||
	    (known && vm->img_checked != NULL && vm->img_checked[i]) ||
	    (known && vm->cfg->files_checked != NULL &&
	        vm->cfg->files_checked[i]))
		return 0;
	crypto_generichash(h, sizeof(h), f->data, f->len, NULL, 0);
	if (vm->res != NULL)
		__atomic_fetch_add(&vm->res->files_hashed, 1, __ATOMIC_RELAXED);
	if (sodium_memcmp(h, f->hash, sizeof(h)) != 0)
		return -1;
	/* The image's padding after the file is part of its check. */
	for (k = 0; k < f->pad; k++)
		if (f->data[f->len + k] != 0)
			return -1;
	if (known && vm->img_checked != NULL) {
		vm->img_checked[i] = 1;
		vm_fast_checked(vm, i);
	}
	if (known && vm->cfg->file_hints != NULL)
		vm->cfg->file_hints[i] = 1;
	return 0;
}

int
vm_img_check(struct vm *vm, const struct vmm_file *f)
{
	if (vm_img_verify(vm, f) != 0) {
		vm_stop(vm, VMM_FAULT, -1,
		    "image file %s does not match its hash (tampered image)",
		    f->path);
		return -EIO;
	}
	return 0;
}

static const char *
path_at(const struct vm *vm, size_t pos)
{
	return vm->cfg->files[vm->img_order[pos]].path;
}

/* The first position whose path is not below key. */
static size_t
lower_bound(const struct vm *vm, const char *key)
{
	size_t lo = 0, hi = vm->cfg->nfiles;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(path_at(vm, mid), key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

const struct vmm_file *
vm_img_find(struct vm *vm, const char *path)
{
	size_t pos;

	if (vm->img_order == NULL)
		return NULL;
	pos = lower_bound(vm, path);
	return pos < vm->cfg->nfiles && strcmp(path_at(vm, pos), path) == 0
	    ? &vm->cfg->files[vm->img_order[pos]]
	    : NULL;
}

/* dir with a '/' after it ("/" stays "/"); 0, or -1 when too long. */
static int
dir_prefix(const char *dir, char *out, size_t max)
{
	size_t n = strlen(dir);

	if (strcmp(dir, "/") == 0)
		n = 0;
	if (n + 2 > max)
		return -1;
	memcpy(out, dir, n);
	out[n] = '/';
	out[n + 1] = '\0';
	return 0;
}

int
vm_img_is_dir(struct vm *vm, const char *path)
{
	char prefix[VM_PATH_MAX + 1];
	size_t pos;

	if (strcmp(path, "/") == 0)
		return 1;
	if (vm->img_order == NULL ||
	    dir_prefix(path, prefix, sizeof(prefix)) != 0)
		return 0;
	pos = lower_bound(vm, prefix);
	return pos < vm->cfg->nfiles &&
	    strncmp(path_at(vm, pos), prefix, strlen(prefix)) == 0;
}

size_t
vm_img_first_under(struct vm *vm, const char *dir)
{
	char prefix[VM_PATH_MAX + 1];

	if (vm->img_order == NULL ||
	    dir_prefix(dir, prefix, sizeof(prefix)) != 0)
		return vm->cfg->nfiles;
	return lower_bound(vm, prefix);
}

int
vm_img_child(struct vm *vm, const char *dir, size_t idx, char *name, size_t max,
    int *is_dir)
{
	char prefix[VM_PATH_MAX + 1], key[2 * VM_PATH_MAX + 2];
	size_t pos, plen, k;

	if (vm->img_order == NULL ||
	    dir_prefix(dir, prefix, sizeof(prefix)) != 0)
		return -1;
	plen = strlen(prefix);
	pos = lower_bound(vm, prefix);
	for (k = 0;; k++) {
		const char *p, *rest;
		size_t cl;

		if (pos >= vm->cfg->nfiles)
			return -1;
		p = path_at(vm, pos);
		if (strncmp(p, prefix, plen) != 0)
			return -1;
		rest = p + plen;
		cl = strcspn(rest, "/");
		if (k == idx) {
			if (cl == 0 || cl >= max)
				return -1;
			memcpy(name, rest, cl);
			name[cl] = '\0';
			*is_dir = rest[cl] == '/';
			return 0;
		}
		if (rest[cl] != '/') {
			pos++;
			continue;
		}
		/* Past the whole subdirectory: every path under it begins
		 * with prefix + name + '/', and '0' follows '/'. */
		memcpy(key, p, plen + cl);
		key[plen + cl] = '0';
		key[plen + cl + 1] = '\0';
		pos = lower_bound(vm, key);
	}
}
