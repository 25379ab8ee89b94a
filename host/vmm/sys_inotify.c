/*
 * inotify (docs/vmm.md, "File change events"): what dev servers and
 * their watchers (Node's fs.watch under Vite, webpack and nodemon;
 * Python's watchfiles under uvicorn --reload) wait on.
 *
 * A guest inotify instance is a host one, behind a guest descriptor as
 * an eventfd is: its queue, blocking, poll, epoll, FIONREAD and the
 * events' layout are the kernel's, and it crosses fork as it is. Only
 * the workspace changes, and only its objects are watched on the host:
 * a watch is added from the directory that holds the object (fchdir to
 * a descriptor opened beneath the workspace, then the one last name
 * with IN_DONT_FOLLOW), so neither a symlink nor a rename racing the
 * call can point a host watch outside the workspace; a guest's symlink
 * is followed here, as a guest path, as open follows it. The image's
 * files and directories and the synthetic /proc and /dev never change:
 * a watch on them is accepted with a descriptor of its own that no
 * event ever names.
 */
#include <sys/inotify.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "host/vmm/fs_int.h"
#include "host/vmm/sys.h"
#include "host/vmm/vm_int.h"
#include "host/vmm/workspace.h"

#define LINK_HOPS 40 /* Linux's MAXSYMLINKS */
/* Watch descriptors of paths that never change: far above the host's,
 * which count up from 1 per instance. */
#define STILL_WD_FIRST 0x40000000

static int64_t
make_inotify(struct vm *vm, uint64_t flags)
{
	int hfd;

	if ((flags & ~(uint64_t)(IN_NONBLOCK | IN_CLOEXEC)) != 0)
		return -EINVAL;
	if ((hfd = inotify_init1(IN_CLOEXEC | (int)(flags & IN_NONBLOCK))) ==
	    -1)
		return -errno;
	return vm_fd_add_anon(vm, hfd, (flags & IN_CLOEXEC) != 0,
	    (flags & IN_NONBLOCK) != 0, VM_ANON_INOTIFY);
}

int64_t
sys_inotify_init(struct vm *vm, const uint64_t a[6])
{
	return make_inotify(vm, 0);
}

int64_t
sys_inotify_init1(struct vm *vm, const uint64_t a[6])
{
	return make_inotify(vm, (uint32_t)a[0]);
}

/* A host watch on name in directory dfd, added from inside it. */
static int64_t
watch_in(int hostfd, int dfd, const char *name, uint32_t mask)
{
	int back, wd, err;

	if ((back = vm_cwd_enter(dfd)) < 0)
		return back;
	wd = inotify_add_watch(hostfd, name, mask | IN_DONT_FOLLOW);
	err = errno;
	vm_cwd_leave(back);
	return wd == -1 ? -err : wd;
}

static int64_t
still_wd(struct vm *vm)
{
	return STILL_WD_FIRST + (int64_t)(vm->inotify_still_wds++ % 0x3fffffff);
}

/*
 * A watch on guest path `path`: in the workspace (followed as a guest
 * path when it is a symlink and the guest did not say IN_DONT_FOLLOW),
 * or a still descriptor for the image's and the synthetic paths.
 */
static int64_t
add_watch(struct vm *vm, struct vfd *f, char *path, uint32_t mask)
{
	char name[VM_PATH_MAX], target[VM_PATH_MAX], dir[VM_PATH_MAX];
	int64_t rc = -ENOENT;
	struct stat st;
	unsigned hops;
	ssize_t n;
	int dfd;

	for (hops = 0;; hops++) {
		if (vm_img_find(vm, path) != NULL || vm_synth_path(path))
			break; /* an image file shadows the workspace's */
		if (strcmp(path, "/") == 0 || strcmp(path, "/dev/shm") == 0) {
			/* No parent to watch it from: the directory itself. */
			if ((dfd = vm_ws_open(vm, path,
			         O_PATH | O_DIRECTORY | O_CLOEXEC, 0)) < 0) {
				rc = dfd;
				break;
			}
			rc = watch_in(f->hostfd, dfd, ".", mask);
			close(dfd);
			return rc;
		}
		if ((dfd = vm_ws_parent(vm, path, name, sizeof(name))) < 0) {
			rc = dfd;
			break;
		}
		if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == -1) {
			rc = -errno;
			close(dfd);
			break;
		}
		if (!S_ISLNK(st.st_mode) || (mask & IN_DONT_FOLLOW)) {
			rc = (mask & IN_ONLYDIR) && !S_ISDIR(st.st_mode)
			    ? -ENOTDIR
			    : watch_in(f->hostfd, dfd, name, mask);
			close(dfd);
			return rc;
		}
		n = readlinkat(dfd, name, target, sizeof(target) - 1);
		close(dfd);
		if (n <= 0)
			return n == 0 ? -ENOENT : -errno;
		target[n] = '\0';
		if (hops == LINK_HOPS)
			return -ELOOP;
		/* The link's directory: the path less its last name. */
		strlcpy(dir, path, sizeof(dir));
		*strrchr(dir, '/') = '\0';
		if (ws_normalize(dir[0] != '\0' ? dir : "/", target, path,
		        VM_PATH_MAX) != 0)
			return -ENAMETOOLONG;
	}
	/* Where the workspace has nothing: a path that never changes. */
	if (vm_img_find(vm, path) != NULL)
		return (mask & IN_ONLYDIR) ? -ENOTDIR : still_wd(vm);
	if (vm_img_is_dir(vm, path) ||
	    (vm_synth_path(path) && vm_synth_stat(vm, path, 0, &st) == 0))
		return still_wd(vm);
	return rc;
}

int64_t
sys_inotify_add_watch(struct vm *vm, const uint64_t a[6])
{
	char path[VM_PATH_MAX];
	uint32_t mask = (uint32_t)a[2];
	struct vfd *f;
	int64_t rc;

	if ((f = vm_fd_anon(vm, a[0], VM_ANON_INOTIFY, &rc)) == NULL)
		return rc;
	/* Linux's checks, before the path's. */
	if ((mask & IN_ALL_EVENTS) == 0 ||
	    ((mask & IN_MASK_ADD) && (mask & IN_MASK_CREATE)))
		return -EINVAL;
	if ((rc = vm_path(vm, G_AT_FDCWD, a[1], path, sizeof(path), 0)) != 0)
		return rc;
	return add_watch(vm, f, path, mask);
}

int64_t
sys_inotify_rm_watch(struct vm *vm, const uint64_t a[6])
{
	int32_t wd = (int32_t)a[1];
	struct vfd *f;
	int64_t rc;

	if ((f = vm_fd_anon(vm, a[0], VM_ANON_INOTIFY, &rc)) == NULL)
		return rc;
	if (wd >= STILL_WD_FIRST)
		return 0;
	return inotify_rm_watch(f->hostfd, wd) == -1 ? -errno : 0;
}
