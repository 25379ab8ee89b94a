/*
 * The dynamic loader of a PT_INTERP program (docs/vmm.md, "Dynamic
 * executables"). The program's own segments are placed by load_program
 * (kvm.c) as a static one's are; the interpreter it names
 * (/lib64/ld-linux-x86-64.so.2) is read from the image's files, placed
 * in the mmap area as Linux places it, and started in the program's
 * stead with AT_BASE pointing at it. Everything after that (the shared
 * libraries, their relocation, dlopen) is the loader's own work, through
 * openat, mmap and mprotect.
 */
#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/vmm/vm_int.h"

/* strcmp(a, b) with b's length given: b need not end with a NUL. */
static int
path_cmp(const char *a, const char *b, size_t blen)
{
	size_t alen = strlen(a);
	int c = memcmp(a, b, alen < blen ? alen : blen);

	if (c != 0)
		return c;
	return alen < blen ? -1 : alen > blen;
}

const struct vmm_file *
vm_cfg_file(const struct vmm_config *cfg, const char *path, size_t len)
{
	size_t i, lo = 0, hi = cfg->nfiles;

	if (!cfg->files_sorted) {
		for (i = 0; i < cfg->nfiles; i++)
			if (path_cmp(cfg->files[i].path, path, len) == 0)
				return &cfg->files[i];
		return NULL;
	}
	/* The caller answers for the order (an image's, checked as it was
	 * opened): a search, not a walk of every path (22,600 in the
	 * machine image) before the program starts. */
	while (lo < hi) {
		int c;

		i = lo + (hi - lo) / 2;
		if ((c = path_cmp(cfg->files[i].path, path, len)) == 0)
			return &cfg->files[i];
		if (c < 0)
			lo = i + 1;
		else
			hi = i;
	}
	return NULL;
}

int
vm_load_interp(struct vm *vm, char *err, size_t errlen)
{
	const struct vmm_config *cfg = vm->cfg;
	const char *path = (const char *)cfg->elf + vm->elf.interp_off;
	size_t plen = (size_t)vm->elf.interp_len;
	const struct vmm_file *f;
	struct elf_info probe, *in = &vm->interp;
	uint64_t span, at;
	size_t i;

	if ((f = vm_cfg_file(cfg, path, plen)) == NULL) {
		snprintf(err, errlen,
		    "the program's interpreter %.*s is not in the image",
		    (int)plen, path);
		return VMM_E_ELF;
	}
	if (vm_img_verify(vm, f) != 0) {
		snprintf(err, errlen,
		    "%s does not match its hash (tampered image)", f->path);
		return VMM_E_ELF;
	}
	/* Parsed once at base 0 for its extent, then again where the
	 * mmap area has room for it: the checks run on the final place. */
	if (elf_parse_at(f->data, f->len, 0, 0, UINT64_MAX / 2, &probe, err,
	        errlen) != 0)
		return VMM_E_ELF;
	if (probe.type != ET_DYN || probe.interp_len != 0) {
		snprintf(err, errlen,
		    "%s: an interpreter must be a position-independent ELF "
		    "without an interpreter of its own",
		    f->path);
		return VMM_E_ELF;
	}
	span = probe.hi - probe.lo;
	if ((at = vm_mmap_alloc(vm, span)) == 0) {
		snprintf(err, errlen, "%s: does not fit guest memory", f->path);
		return VMM_E_TOOBIG;
	}
	if (elf_parse_at(f->data, f->len, at - probe.lo, vm->mmap_lo,
	        vm->mmap_hi, in, err, errlen) != 0)
		return VMM_E_ELF;
	for (i = 0; i < in->nload; i++) {
		const struct elf_load *l = &in->load[i];

		vm_mem_copy(
		    vm, vm->mem + l->vaddr, f->data + l->offset, l->filesz);
	}
	vm->interp_base = in->base;
	vm->start = in->entry;
	return VMM_OK;
}

/* NAME=VALUE with a C identifier for NAME and printable ASCII after. */
static int
env_line_ok(const char *s, size_t n)
{
	size_t i, eq = 0;

	if (n == 0 ||
	    !((s[0] >= 'A' && s[0] <= 'Z') || (s[0] >= 'a' && s[0] <= 'z') ||
	        s[0] == '_'))
		return 0;
	for (i = 0; i < n; i++) {
		char c = s[i];

		if (c == '=' && eq == 0)
			eq = i;
		else if (eq == 0 &&
		    !((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		        (c >= '0' && c <= '9') || c == '_'))
			return 0;
		else if (c < 0x20 || c > 0x7e)
			return 0;
	}
	return eq > 0;
}

static int
env_has(const char *const *envp, const char *s, size_t namelen)
{
	for (; envp != NULL && *envp != NULL; envp++)
		if (strncmp(*envp, s, namelen) == 0 && (*envp)[namelen] == '=')
			return 1;
	return 0;
}

int
vm_env_parse(const uint8_t *data, size_t len, const char *const *envp,
    char ***out, size_t *n)
{
	char **v = NULL, *buf;
	size_t i, start, count = 0;

	*out = NULL;
	*n = 0;
	if (len == 0)
		return 0;
	if (len > VM_IMAGE_ENV_MAX)
		return -1;
	if ((buf = malloc(len + 1)) == NULL ||
	    (v = calloc(VM_IMAGE_ENV_LINES + 2, sizeof(*v))) == NULL) {
		free(buf);
		return -1;
	}
	memcpy(buf, data, len);
	buf[len] = '\n';
	for (start = 0, i = 0; i <= len; i++) {
		size_t linelen = i - start, namelen;

		if (buf[i] != '\n')
			continue;
		buf[i] = '\0';
		if (linelen > 0 && buf[start] != '#') {
			if (!env_line_ok(buf + start, linelen) ||
			    count == VM_IMAGE_ENV_LINES) {
				free(buf);
				free(v);
				return -1;
			}
			namelen = strcspn(buf + start, "=");
			/* The caller's variables win; glibc's getenv would
			 * take the first, CPython's os.environ the last. */
			if (!env_has(envp, buf + start, namelen))
				v[count++] = buf + start;
		}
		start = i + 1;
	}
	if (count == 0) {
		free(buf);
		free(v);
		return 0;
	}
	v[VM_IMAGE_ENV_LINES + 1] = buf; /* past the NULL: freed with v */
	*out = v;
	*n = count;
	return 0;
}

int
vm_image_env(struct vm *vm, char ***out, size_t *n)
{
	const struct vmm_file *f;

	*out = NULL;
	*n = 0;
	if ((f = vm_cfg_file(vm->cfg, VM_IMAGE_ENV, strlen(VM_IMAGE_ENV))) ==
	        NULL ||
	    f->len == 0)
		return 0;
	if (f->len > VM_IMAGE_ENV_MAX || vm_img_check(vm, f) != 0)
		return -1;
	return vm_env_parse(f->data, f->len, vm->cfg->envp, out, n);
}

void
vm_image_env_free(char **v)
{
	if (v == NULL)
		return;
	free(v[VM_IMAGE_ENV_LINES + 1]);
	free(v);
}
