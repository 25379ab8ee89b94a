/*
 * The guest's CPUID: KVM's supported set, fetched once per process and,
 * for `keep run`, kept across processes in a cache file (cpuid.h says why
 * and what makes a cache file valid).
 */
#include <sys/ioctl.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cpuid.h>

#include "host/vmm/cpuid.h"
#include "host/vmm/vm_int.h"
#include "lib/own_file.h"

#define CACHE_MAX                                                              \
	(sizeof(struct cpuid_cache_hdr) +                                      \
	    CPUID_MAX_ENT * sizeof(struct kvm_cpuid_entry2))
#define FLAGS_KNOWN                                                            \
	(KVM_CPUID_FLAG_SIGNIFCANT_INDEX | KVM_CPUID_FLAG_STATEFUL_FUNC |      \
	    KVM_CPUID_FLAG_STATE_READ_NEXT)

static struct kvm_cpuid2 *cpuid_table;

/* Hide what this guest has no use for or must not touch. */
static void
cpuid_filter(struct kvm_cpuid2 *c)
{
	uint32_t i;

	for (i = 0; i < c->nent; i++) {
		struct kvm_cpuid_entry2 *e = &c->entries[i];

		if (e->function == 1) {
			e->ecx &= ~(1u << 3); /* MONITOR/MWAIT */
			e->ecx &= ~(1u << 21); /* x2APIC */
			e->ecx &= ~(1u << 24); /* TSC deadline */
		} else if (e->function == 7 && e->index == 0) {
			e->ecx &= ~(1u << 3); /* PKU */
			e->ecx &= ~(1u << 4); /* OSPKE */
			e->ecx &= ~(1u << 5); /* WAITPKG */
			e->ecx &= ~(1u << 16); /* LA57 */
			e->ebx &= ~(1u << 0); /* FSGSBASE: CR4 bit is off */
		}
	}
}

static struct kvm_cpuid2 *
cpuid_alloc(uint32_t n)
{
	struct kvm_cpuid2 *c;

	c = calloc(1, sizeof(*c) + (size_t)n * sizeof(c->entries[0]));
	if (c != NULL)
		c->nent = n;
	return c;
}

/* KVM's answer, unfiltered; NULL with errno set. */
static struct kvm_cpuid2 *
cpuid_fetch(int kvm_fd)
{
	struct kvm_cpuid2 *c;
	uint32_t n = 128; /* enough here: one call, not two */
	int e;

	for (;;) {
		if ((c = cpuid_alloc(n)) == NULL)
			return NULL;
		if (ioctl(kvm_fd, KVM_GET_SUPPORTED_CPUID, c) == 0)
			return c;
		e = errno;
		free(c);
		errno = e;
		if (e != E2BIG || n >= 1024)
			return NULL;
		n *= 2;
	}
}

int
cpuid_cache_key_host(uint8_t key[CPUID_KEY_LEN])
{
	ssize_t n;
	int fd;

	/* The raw bytes, not a hash of them: nothing here is secret, and
	 * comparing them whole is all the check needs. */
	memset(key, 0, CPUID_KEY_LEN);
	fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
	if (fd == -1)
		return -1;
	n = read(fd, key, CPUID_KEY_BOOT_ID + 1);
	close(fd);
	if (n != CPUID_KEY_BOOT_ID + 1 || key[CPUID_KEY_BOOT_ID] != '\n')
		return -1;
	key[CPUID_KEY_BOOT_ID] = 0;
	/* No inode is all ones: never a KVM key. */
	memset(key + CPUID_KEY_BOOT_ID + 4, 0xff, 8);
	return 0;
}

int
cpuid_cache_key(uint8_t key[CPUID_KEY_LEN])
{
	struct stat sb;
	uint64_t ino;

	if (cpuid_cache_key_host(key) != 0)
		return -1;
	/*
	 * /dev/kvm's device in sysfs. KVM registers it last thing when the
	 * vendor module (kvm_intel, kvm_amd, kvm_pvm, ...) loads and removes
	 * it when that module unloads, so any reload of KVM makes a new
	 * directory with a new inode number. Without sysfs a reload could
	 * not be seen: no cache.
	 */
	if (stat("/sys/devices/virtual/misc/kvm", &sb) == -1)
		return -1;
	ino = (uint64_t)sb.st_ino;
	memcpy(key + CPUID_KEY_BOOT_ID + 4, &ino, sizeof(ino));
	return 0;
}

struct kvm_cpuid2 *
cpuid_cache_decode(
    const uint8_t *buf, size_t len, const uint8_t key[CPUID_KEY_LEN])
{
	struct cpuid_cache_hdr h;
	struct kvm_cpuid2 *c;
	uint32_t i;

	if (len < sizeof(h))
		return NULL;
	memcpy(&h, buf, sizeof(h));
	if (memcmp(h.magic, CPUID_CACHE_MAGIC, sizeof(h.magic)) != 0 ||
	    h.zero != 0 || h.nent == 0 || h.nent > CPUID_MAX_ENT ||
	    len != sizeof(h) + h.nent * sizeof(struct kvm_cpuid_entry2) ||
	    memcmp(h.key, key, CPUID_KEY_LEN) != 0)
		return NULL;
	if ((c = cpuid_alloc(h.nent)) == NULL)
		return NULL;
	memcpy(c->entries, buf + sizeof(h),
	    h.nent * sizeof(struct kvm_cpuid_entry2));
	for (i = 0; i < c->nent; i++) {
		const struct kvm_cpuid_entry2 *e = &c->entries[i];

		if ((e->flags & ~(uint32_t)FLAGS_KNOWN) != 0 ||
		    e->padding[0] != 0 || e->padding[1] != 0 ||
		    e->padding[2] != 0) {
			free(c);
			return NULL;
		}
	}
	return c;
}

uint8_t *
cpuid_cache_encode(
    const struct kvm_cpuid2 *c, const uint8_t key[CPUID_KEY_LEN], size_t *len)
{
	struct cpuid_cache_hdr h;
	uint8_t *buf;

	if (c->nent == 0 || c->nent > CPUID_MAX_ENT)
		return NULL;
	memset(&h, 0, sizeof(h));
	memcpy(h.magic, CPUID_CACHE_MAGIC, sizeof(h.magic));
	h.nent = c->nent;
	memcpy(h.key, key, CPUID_KEY_LEN);
	*len = sizeof(h) + c->nent * sizeof(c->entries[0]);
	if ((buf = malloc(*len)) == NULL)
		return NULL;
	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(h), c->entries, c->nent * sizeof(c->entries[0]));
	return buf;
}

struct kvm_cpuid2 *
cpuid_cache_load(const char *path, const uint8_t key[CPUID_KEY_LEN])
{
	struct kvm_cpuid2 *c = NULL;
	uint8_t *buf;
	size_t len;

	if ((buf = own_file_read(path, CACHE_MAX, &len)) != NULL)
		c = cpuid_cache_decode(buf, len, key);
	free(buf);
	return c;
}

void
cpuid_cache_store(const char *path, const uint8_t key[CPUID_KEY_LEN],
    const struct kvm_cpuid2 *c)
{
	uint8_t *buf;
	size_t len;

	if ((buf = cpuid_cache_encode(c, key, &len)) == NULL)
		return;
	own_file_write(path, buf, len, 0644);
	free(buf);
}

int
vmm_prepare(int kvm_fd)
{
	return vmm_prepare_cached(kvm_fd, NULL);
}

int
vmm_prepare_cached(int kvm_fd, const char *cache_path)
{
	uint8_t key[CPUID_KEY_LEN];
	struct kvm_cpuid2 *c = NULL;
	int keyed;

	if (cpuid_table != NULL)
		return VMM_OK;
	keyed = cache_path != NULL && cpuid_cache_key(key) == 0;
	if (keyed)
		c = cpuid_cache_load(cache_path, key);
	if (c == NULL) {
		if ((c = cpuid_fetch(kvm_fd)) == NULL)
			return errno == ENOMEM ? VMM_E_NOMEM : VMM_E_KVM;
		/* KVM's own answer is stored, not the filtered table, so
		 * a change to the filter never meets a stale file. */
		if (keyed)
			cpuid_cache_store(cache_path, key, c);
	}
	cpuid_filter(c);
	cpuid_table = c;
	return VMM_OK;
}

/*
 * The trap platform's guest runs on the host's CPU and reads its CPUID
 * itself (unless the kernel makes CPUID fault, which it does not here):
 * keep's table is the host's, so what the VMM tells the guest (AT_HWCAP,
 * XSAVE) agrees with what the guest sees. Leaves with subleaves are
 * read to their first eight.
 */
int
vm_cpuid_host(void)
{
	static const uint32_t indexed[] = { 4, 7, 0xb, 0xd, 0xf, 0x10, 0x14,
		0x17, 0x18, 0x1d, 0x1f };
	struct kvm_cpuid2 *c;
	uint32_t base, max, fn, idx, n = 0, a, b, cc, d, k, j;
	int has_idx;

	if (cpuid_table != NULL)
		return 0;
	if ((c = cpuid_alloc(CPUID_MAX_ENT)) == NULL)
		return -1;
	for (k = 0; k < 2; k++) {
		base = k == 0 ? 0 : 0x80000000U;
		__cpuid_count(base, 0, max, b, cc, d);
		if (max < base || max > base + 0x40)
			max = base;
		for (fn = base; fn <= max; fn++) {
			for (has_idx = 0, j = 0;
			     j < sizeof(indexed) / sizeof(indexed[0]); j++)
				has_idx |= indexed[j] == fn;
			for (idx = 0; idx < (has_idx ? 8U : 1U); idx++) {
				if (n == CPUID_MAX_ENT)
					break;
				__cpuid_count(fn, idx, a, b, cc, d);
				c->entries[n] = (struct kvm_cpuid_entry2){
					.function = fn,
					.index = idx,
					.flags = has_idx
					    ? KVM_CPUID_FLAG_SIGNIFCANT_INDEX
					    : 0,
					.eax = a,
					.ebx = b,
					.ecx = cc,
					.edx = d,
				};
				n++;
			}
		}
	}
	c->nent = n;
	cpuid_table = c;
	return 0;
}

int
vmm_prepare_host_cached(const char *cache_path)
{
	uint8_t key[CPUID_KEY_LEN];
	struct kvm_cpuid2 *c;
	int keyed;

	if (cpuid_table != NULL)
		return VMM_OK;
	keyed = cache_path != NULL && cpuid_cache_key_host(key) == 0;
	if (keyed && (c = cpuid_cache_load(cache_path, key)) != NULL) {
		cpuid_table = c;
		return VMM_OK;
	}
	if (vm_cpuid_host() != 0)
		return VMM_E_NOMEM;
	if (keyed)
		cpuid_cache_store(cache_path, key, cpuid_table);
	return VMM_OK;
}

const struct kvm_cpuid2 *
vm_cpuid(void)
{
	return cpuid_table;
}

uint32_t
vm_cpuid_reg(uint32_t fn, uint32_t idx, int reg)
{
	uint32_t i;

	for (i = 0; cpuid_table != NULL && i < cpuid_table->nent; i++) {
		const struct kvm_cpuid_entry2 *e = &cpuid_table->entries[i];

		if (e->function == fn && e->index == idx)
			return reg == 0 ? e->eax
			    : reg == 1  ? e->ebx
			    : reg == 2  ? e->ecx
			                : e->edx;
	}
	return 0;
}
