/*
 * execve and execveat: a new program in a fresh address space and a new
 * VM, in the same host process (same guest pid, same descriptors less
 * the close-on-exec ones). The program comes from the image's files,
 * from the workspace (a regular file with an exec bit), or is the
 * running one again (/proc/self/exe); a "#!" script names its
 * interpreter, found the same way (one level, as a shell script needs).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host/vmm/sys.h"
#include "host/vmm/vm_int.h"

#define G_AT_FDCWD (-100)
#define EXEC_STRINGS_MAX (1u << 20) /* what build_stack accepts */
#define EXEC_VEC_MAX 4096
#define SHEBANG_MAX 256

struct vm_exec {
	struct vmm_config cfg;
	uint8_t *owned; /* a workspace program's bytes */
	char *strings;
	const char **vec; /* argv, NULL, envp, NULL */
};

void
vm_exec_free(struct vm *vm)
{
	if (vm->exec == NULL)
		return;
	free(vm->exec->owned);
	free(vm->exec->strings);
	free(vm->exec->vec);
	free(vm->exec);
	vm->exec = NULL;
}

static void
exec_release(struct vm_exec *x)
{
	free(x->owned);
	free(x->strings);
	free(x->vec);
	free(x);
}

/* Append one string to x->strings; returns its offset or -errno. */
static int64_t
add_string(struct vm_exec *x, size_t *used, const char *s, size_t len)
{
	size_t at = *used;

	if (len + 1 > EXEC_STRINGS_MAX - *used)
		return -E2BIG;
	memcpy(x->strings + at, s, len);
	x->strings[at + len] = '\0';
	*used += len + 1;
	return (int64_t)at;
}

/* A guest's NULL-terminated array of strings into offs[]; 0 or -errno. */
static int
copy_vec(struct vm *vm, struct vm_exec *x, uint64_t addr, size_t *offs,
    size_t *n, size_t *used)
{
	uint64_t p;
	const uint64_t *g;
	int rc;

	*n = 0;
	if (addr == 0)
		return 0; /* Linux takes NULL as empty */
	for (;; addr += 8) {
		if ((g = vm_gptr(vm, addr, 8)) == NULL)
			return -EFAULT;
		memcpy(&p, g, 8);
		if (p == 0)
			return 0;
		if (*n >= EXEC_VEC_MAX)
			return -E2BIG;
		rc = vm_gstr(
		    vm, p, x->strings + *used, EXEC_STRINGS_MAX - *used);
		if (rc == -ENAMETOOLONG)
			return -E2BIG;
		if (rc != 0)
			return rc;
		offs[(*n)++] = *used;
		*used += strlen(x->strings + *used) + 1;
	}
}

int
vm_exec_shebang(const uint8_t *data, size_t len, char *interp, size_t ilen,
    char *arg, size_t alen)
{
	char line[SHEBANG_MAX + 1];
	char *p, *e, *a;
	size_t n = len < SHEBANG_MAX ? len : SHEBANG_MAX;

	if (len < 2 || data[0] != '#' || data[1] != '!')
		return -ENOEXEC;
	memcpy(line, data, n);
	line[n] = '\0';
	if ((e = memchr(line, '\n', n)) == NULL)
		return -ENOEXEC;
	*e = '\0';
	for (p = line + 2; *p == ' ' || *p == '\t'; p++)
		;
	for (a = p; *a != '\0' && *a != ' ' && *a != '\t'; a++)
		;
	if (*a != '\0')
		*a++ = '\0';
	while (*a == ' ' || *a == '\t')
		a++;
	for (e = a + strlen(a);
	     e > a && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r');)
		*--e = '\0';
	if (*p == '\0' || strlcpy(interp, p, ilen) >= ilen ||
	    strlcpy(arg, a, alen) >= alen)
		return -ENOEXEC;
	return 0;
}

static int
is_elf(const uint8_t *d, size_t len)
{
	return len >= 4 && memcmp(d, "\177ELF", 4) == 0;
}

int
vm_boot_script(struct vm *vm, char *err, size_t errlen)
{
	const struct vmm_config *cfg = vm->cfg;
	const struct vmm_file *script = NULL, *in;
	char interp[SHEBANG_MAX], iarg[SHEBANG_MAX];
	const char *lead[3];
	struct vm_exec *x;
	size_t i, nlead = 0, argc, bytes = 0, n = 0;
	char *s;

	if (cfg->elf == NULL || is_elf(cfg->elf, cfg->elf_len) ||
	    vm_exec_shebang(cfg->elf, cfg->elf_len, interp, sizeof(interp),
	        iarg, sizeof(iarg)) != 0)
		return VMM_OK;
	/* The script's path is its argument, as execve's name for it is:
	 * the image's file, since the caller hands the VMM its bytes. */
	for (i = 0; i < cfg->nfiles && script == NULL; i++)
		if (cfg->files[i].data == cfg->elf &&
		    cfg->files[i].len == cfg->elf_len)
			script = &cfg->files[i];
	if (script == NULL) {
		snprintf(err, errlen,
		    "a #! script runs only as one of the image's files");
		return VMM_E_ELF;
	}
	/* Its interpreter from the image too: the workspace is the user's,
	 * and a run must not start what the user put there. */
	if (interp[0] != '/' ||
	    (in = vm_cfg_file(cfg, interp, strlen(interp))) == NULL) {
		snprintf(err, errlen,
		    "%s: its interpreter %s is not in the image", script->path,
		    interp);
		return VMM_E_ELF;
	}
	/* One level, as execve here (do_exec). */
	if ((in->mode & 0111) == 0 || !is_elf(in->data, in->len)) {
		snprintf(err, errlen,
		    "%s: its interpreter %s is not an executable ELF",
		    script->path, in->path);
		return VMM_E_ELF;
	}
	if (vm_img_verify(vm, in) != 0) {
		snprintf(err, errlen,
		    "%s does not match its hash (tampered image)", in->path);
		return VMM_E_ELF;
	}
	lead[nlead++] = interp;
	if (iarg[0] != '\0')
		lead[nlead++] = iarg;
	lead[nlead++] = script->path;
	for (argc = 0; cfg->argv != NULL && cfg->argv[argc] != NULL; argc++)
		if (argc >= EXEC_VEC_MAX)
			goto toobig;
	for (i = 0; i < nlead; i++)
		bytes += strlen(lead[i]) + 1;
	for (i = 1; i < argc; i++) {
		size_t len = strlen(cfg->argv[i]);

		if (len + 1 > EXEC_STRINGS_MAX - bytes)
			goto toobig;
		bytes += len + 1;
	}
	if ((x = calloc(1, sizeof(*x))) == NULL ||
	    (x->strings = malloc(bytes)) == NULL ||
	    (x->vec = calloc(nlead + argc + 1, sizeof(*x->vec))) == NULL) {
		if (x != NULL)
			exec_release(x);
		snprintf(err, errlen, "out of memory");
		return VMM_E_NOMEM;
	}
	/* The caller's argv[0] gives way to the script's path, as in
	 * do_exec. */
	for (s = x->strings, i = 0; i < nlead + argc - (argc > 0); i++) {
		const char *a = i < nlead ? lead[i] : cfg->argv[i - nlead + 1];
		size_t len = strlen(a);

		memcpy(s, a, len + 1);
		x->vec[n++] = s;
		s += len + 1;
	}
	x->cfg = *cfg;
	x->cfg.elf = in->data;
	x->cfg.elf_len = in->len;
	x->cfg.argv = x->vec;
	vm->boot = x;
	vm->cfg = &x->cfg;
	return VMM_OK;
toobig:
	snprintf(err, errlen, "arguments too large");
	return VMM_E_TOOBIG;
}

void
vm_boot_script_free(struct vm *vm)
{
	if (vm->boot == NULL)
		return;
	exec_release(vm->boot);
	vm->boot = NULL;
}

static int64_t
do_exec(struct vm *vm, const char *gpath, uint64_t argv, uint64_t envp)
{
	struct vm_exec *x;
	size_t *offs = NULL, nargv = 0, nenv = 0, used = 0, i, k;
	char path[VM_PATH_MAX], interp[SHEBANG_MAX], iarg[SHEBANG_MAX];
	char err[160] = "";
	const uint8_t *data;
	size_t len;
	uint8_t *owned;
	int64_t rc;
	int script = 0;

	if ((rc = vm_fs_program(
	         vm, gpath, path, sizeof(path), &data, &len, &owned)) != 0)
		return rc;
	if ((x = calloc(1, sizeof(*x))) == NULL ||
	    (x->strings = malloc(EXEC_STRINGS_MAX)) == NULL ||
	    (offs = calloc(2 * EXEC_VEC_MAX + 4, sizeof(*offs))) == NULL) {
		free(owned);
		rc = -ENOMEM;
		goto fail;
	}
	x->owned = owned;
	if (!is_elf(data, len)) {
		if (vm_exec_shebang(data, len, interp, sizeof(interp), iarg,
		        sizeof(iarg)) != 0) {
			rc = -ENOEXEC;
			goto fail;
		}
		/* argv becomes: interp [arg] path argv[1..] */
		script = 1;
		offs[nargv++] =
		    (size_t)add_string(x, &used, interp, strlen(interp));
		if (iarg[0] != '\0')
			offs[nargv++] =
			    (size_t)add_string(x, &used, iarg, strlen(iarg));
		offs[nargv++] =
		    (size_t)add_string(x, &used, gpath, strlen(gpath));
		free(x->owned);
		x->owned = NULL;
		if ((rc = vm_fs_program(vm, interp, path, sizeof(path), &data,
		         &len, &x->owned)) != 0)
			goto fail;
		if (!is_elf(data, len)) {
			rc = -ENOEXEC;
			goto fail;
		}
	}
	k = nargv;
	if ((rc = copy_vec(vm, x, argv, offs + k, &nargv, &used)) != 0)
		goto fail;
	if (script && nargv > 0) {
		/* The script's own argv[0] gives way to its path. */
		memmove(offs + k, offs + k + 1, (nargv - 1) * sizeof(*offs));
		nargv--;
	}
	nargv += k;
	if (nargv == 0) {
		/* Linux gives a program argv[0] = "" when it got none. */
		offs[nargv++] = (size_t)add_string(x, &used, "", 0);
	}
	if ((rc = copy_vec(vm, x, envp, offs + nargv + 1, &nenv, &used)) != 0)
		goto fail;
	if ((x->vec = calloc(nargv + nenv + 2, sizeof(*x->vec))) == NULL) {
		rc = -ENOMEM;
		goto fail;
	}
	for (i = 0; i < nargv; i++)
		x->vec[i] = x->strings + offs[i];
	for (i = 0; i < nenv; i++)
		x->vec[nargv + 1 + i] = x->strings + offs[nargv + 1 + i];
	x->cfg = *vm->cfg;
	x->cfg.elf = data;
	x->cfg.elf_len = len;
	x->cfg.argv = x->vec;
	x->cfg.envp = x->vec + nargv + 1;
	free(offs);
	offs = NULL;
	switch (vm_exec_image(vm, &x->cfg, err, sizeof(err))) {
	case 0:
		break;
	case -1:
		/* (Linux's answer for an interpreter it cannot find is
		 * ENOENT, as for the program itself) */
		rc = strstr(err, "not in the image") != NULL ? -ENOENT
		    : strstr(err, "memory") != NULL          ? -ENOMEM
		    : strstr(err, "large") != NULL           ? -E2BIG
		                                             : -ENOEXEC;
		goto fail;
	default:
		/* Past the point of no return: the old program is gone. */
		vm_stop(vm, VMM_FAULT, -1, "fault: execve: %s", err);
		vm_exec_free(vm);
		vm->exec = x;
		return 0;
	}
	vm_exec_free(vm);
	vm->exec = x;
	vm->regs_replaced = 1;
	vm_signal_exec(vm);
	vm_thread_reset(vm);
	vm_proc_program(vm, gpath);
	vm_fs_exec_close(vm);
	if (vm->vfork_fd >= 0) {
		/* A vfork parent waits until here. */
		close(vm->vfork_fd);
		vm->vfork_fd = -1;
	}
	return 0;
fail:
	free(offs);
	if (x != NULL)
		exec_release(x);
	return rc;
}

static int64_t
execve_at(struct vm *vm, int64_t dirfd, uint64_t path, uint64_t argv,
    uint64_t envp, uint64_t flags)
{
	char p[VM_PATH_MAX];
	int rc;

	if (flags != 0)
		return -EINVAL; /* AT_EMPTY_PATH, AT_SYMLINK_NOFOLLOW */
	if ((rc = vm_gstr(vm, path, p, sizeof(p))) != 0)
		return rc;
	if (p[0] != '/' && (int32_t)dirfd != G_AT_FDCWD)
		return -ENOSYS; /* relative to a descriptor: docs/vmm.md */
	return do_exec(vm, p, argv, envp);
}

int64_t
sys_execve(struct vm *vm, const uint64_t a[6])
{
	return execve_at(vm, G_AT_FDCWD, a[0], a[1], a[2], 0);
}

int64_t
sys_execveat(struct vm *vm, const uint64_t a[6])
{
	return execve_at(vm, (int64_t)a[0], a[1], a[2], a[3], a[4]);
}
