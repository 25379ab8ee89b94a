/*
 * Directory listings for the guest (getdents64): the workspace's from
 * the host kernel, followed at "/" by the names that exist there without
 * being in the workspace (/dev, /proc, the image's top level); the
 * image's directories, made of its files' paths; and /proc and /dev,
 * from the list procfs.c made. Each entry in the kernel's
 * linux_dirent64 form, which is what the guest expects.
 */
#include <sys/stat.h>
#include <sys/syscall.h>

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "host/vmm/fs_int.h"
#include "host/vmm/vm_int.h"
#include "lib/util.h"

struct g_dirent {
	uint64_t ino;
	int64_t off;
	uint16_t reclen;
	uint8_t type;
	char name[];
};
/* Where the name starts (19): sizeof would count the padding after. */
#define DIRENT_NAME offsetof(struct g_dirent, name)

static int
is_root_dir(const struct vfd *f)
{
	return strcmp(f->path, "/") == 0;
}

/* Entries of a directory made of image paths: each child name once;
 * the root also holds /dev and /proc (an image's own names for them are
 * shadowed, as its paths there are). */
static int64_t
vdir_getdents(struct vm *vm, struct vfd *f, uint64_t buf, uint64_t len)
{
	uint8_t *g;
	size_t used = 0, extra = is_root_dir(f) ? 2 : 0;
	char name[VM_PATH_MAX];

	if ((g = vm_gptr(vm, buf, len)) == NULL)
		return -EFAULT;
	for (;;) {
		uint64_t idx = f->off;
		uint8_t type = 4; /* DT_DIR */
		size_t nl, reclen;
		int is_dir;

		if (idx == 0)
			strlcpy(name, ".", sizeof(name));
		else if (idx == 1)
			strlcpy(name, "..", sizeof(name));
		else if (idx < 2 + extra)
			strlcpy(name, idx == 2 ? "dev" : "proc", sizeof(name));
		else if (vm_img_child(vm, f->path, (size_t)(idx - 2 - extra),
		             name, sizeof(name), &is_dir) != 0) {
			f->dir_end = f->off + 1;
			break;
		} else if (extra != 0 &&
		    (strcmp(name, "dev") == 0 || strcmp(name, "proc") == 0)) {
			f->off++;
			continue;
		} else if (!is_dir)
			type = 8; /* DT_REG */
		nl = strlen(name);
		reclen = (DIRENT_NAME + nl + 1 + 7) & ~(size_t)7;
		if (used + reclen > len)
			return used > 0 ? (int64_t)used : -EINVAL;
		struct g_dirent d = { .ino = idx + 2,
			.off = (int64_t)idx + 1,
			.reclen = (uint16_t)reclen,
			.type = type };
		memset(g + used, 0, reclen);
		memcpy(g + used, &d, DIRENT_NAME);
		memcpy(g + used + DIRENT_NAME, name, nl);
		used += reclen;
		f->off++;
	}
	return (int64_t)used;
}

/* Entries of a /proc or /dev directory (procfs.c made the list). */
static int64_t
sdir_getdents(struct vm *vm, struct vfd *f, uint64_t buf, uint64_t len)
{
	uint8_t *g;
	size_t used = 0, idx = 0, pos = 0;

	if ((g = vm_gptr(vm, buf, len)) == NULL)
		return -EFAULT;
	while (pos < f->len) {
		uint8_t type = f->data[pos];
		const char *name = (const char *)f->data + pos + 1;
		size_t nl = strnlen(name, f->len - pos - 1), reclen;

		pos += 2 + nl;
		if (idx++ < f->off)
			continue;
		reclen = (DIRENT_NAME + nl + 1 + 7) & ~(size_t)7;
		if (used + reclen > len)
			return used > 0 ? (int64_t)used : -EINVAL;
		struct g_dirent d = { .ino = idx + 1,
			.off = (int64_t)idx,
			.reclen = (uint16_t)reclen,
			.type = type };
		memset(g + used, 0, reclen);
		memcpy(g + used, &d, DIRENT_NAME);
		memcpy(g + used + DIRENT_NAME, name, nl);
		used += reclen;
		f->off++;
	}
	return (int64_t)used;
}

#define ROOT_NAMES_MAX 64 /* distinct top-level names listed at "/" */

struct root_name {
	char name[256];
	uint8_t type;
};

/* The names at "/" that are not the workspace's: /dev, /proc, then the
 * image's top-level names, each once, in one pass over its files (an
 * image may hold thousands; its top level holds a few names). */
static size_t
root_names(struct vm *vm, struct root_name *out, size_t max)
{
	size_t i, j, nl, n = 0;

	strlcpy(out[n].name, "dev", sizeof(out[n].name));
	out[n++].type = 4; /* DT_DIR */
	strlcpy(out[n].name, "proc", sizeof(out[n].name));
	out[n++].type = 4;
	for (i = 0; i < vm->cfg->nfiles && n < max; i++) {
		const char *p = vm->cfg->files[i].path + 1, *e = strchr(p, '/');

		nl = e != NULL ? (size_t)(e - p) : strlen(p);
		if (nl == 0 || nl >= sizeof(out[n].name))
			continue;
		for (j = 0; j < n; j++)
			if (strncmp(out[j].name, p, nl) == 0 &&
			    out[j].name[nl] == '\0')
				break;
		if (j < n)
			continue;
		memcpy(out[n].name, p, nl);
		out[n].name[nl] = '\0';
		out[n++].type = e != NULL ? 4 : 8; /* DT_DIR, DT_REG */
	}
	return n;
}

/* The root's own entries after the workspace's: /dev, /proc and the
 * image's top-level names exist at "/" but are not in the workspace
 * directory, and a program that lists "/" (ls, find, os.listdir) should
 * find them there, as it would on Linux. A name the workspace holds is
 * listed once, from the workspace. f->off counts the extras returned. */
static int64_t
root_extras(struct vm *vm, struct vfd *f, uint8_t *g, uint64_t len)
{
	struct root_name names[ROOT_NAMES_MAX];
	size_t i, n, nl, reclen, used = 0, idx = 0;
	struct stat st;

	n = root_names(vm, names, nitems(names));
	for (i = 0; i < n; i++) {
		if (fstatat(vm->ws_fd, names[i].name, &st,
		        AT_SYMLINK_NOFOLLOW) == 0)
			continue;
		if (idx++ < f->off)
			continue;
		nl = strlen(names[i].name);
		reclen = (DIRENT_NAME + nl + 1 + 7) & ~(size_t)7;
		if (used + reclen > len)
			return used > 0 ? (int64_t)used : -EINVAL;
		struct g_dirent d = { .ino = 0x100000000ULL + idx,
			.off = INT64_MAX - 64 + (int64_t)idx,
			.reclen = (uint16_t)reclen,
			.type = names[i].type };
		memset(g + used, 0, reclen);
		memcpy(g + used, &d, DIRENT_NAME);
		memcpy(g + used + DIRENT_NAME, names[i].name, nl);
		used += reclen;
		f->off++;
	}
	return (int64_t)used;
}

int64_t
vm_getdents(struct vm *vm, uint64_t fd, uint64_t buf, uint64_t len)
{
	struct vfd *f = vm_fd(vm, fd);
	void *g;
	long n;

	if (f == NULL)
		return -EBADF;
	if (len > VM_DIR_CHUNK)
		len = VM_DIR_CHUNK;
	if (f->kind == VFD_VDIR)
		return vdir_getdents(vm, f, buf, len);
	if (f->kind == VFD_SDIR)
		return sdir_getdents(vm, f, buf, len);
	if (f->kind != VFD_HOST)
		return -ENOTDIR;
	if ((g = vm_gptr(vm, buf, len)) == NULL)
		return -EFAULT;
	/* The kernel's linux_dirent64 is what the guest expects. */
	n = syscall(SYS_getdents64, f->hostfd, g, (unsigned)len);
	if (n == 0 && f->path != NULL && strcmp(f->path, "/") == 0)
		return root_extras(vm, f, g, len);
	return n == -1 ? -errno : n;
}
