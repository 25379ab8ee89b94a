/*
 * The guest's CPUID table and its cache file (host/vmm/cpuid.c).
 *
 * The table is what KVM_GET_SUPPORTED_CPUID answers, filtered. That ioctl
 * costs about 0.3 ms here (the kernel runs the host's `cpuid` for every
 * leaf, and under nested virtualization each one traps to the outer
 * hypervisor), a sixth of a whole boot. KVM computes the answer once, when
 * its modules load, so it holds until they are reloaded or the machine
 * reboots: `keep run`, a fresh process each time, keeps it in a file keyed
 * to exactly that (the boot id and the sysfs identity of /dev/kvm, which
 * KVM registers anew whenever it loads).
 *
 * The trap platform's table is the host's own CPUID, read leaf by leaf
 * (about 0.5 ms here: every `cpuid` traps to the hypervisor under it);
 * it holds for the boot, and keep run keeps it the same way in a file
 * of its own, keyed to the boot alone.
 *
 * A cache file is untrusted bytes: cpuid_cache_decode() accepts only a
 * file of exactly the right size, magic and key, with sane entries; the
 * loader accepts only a regular file owned by the caller's user and
 * writable by nobody else. Anything else is a miss, and a miss asks KVM.
 */
#ifndef KEEP_VMM_CPUID_H
#define KEEP_VMM_CPUID_H

#include <linux/kvm.h>
#include <stddef.h>
#include <stdint.h>

/* The key: the boot id's 36 characters and 4 zero bytes, then the inode
 * number of /dev/kvm's device directory in sysfs. */
#define CPUID_KEY_BOOT_ID 36
#define CPUID_KEY_LEN (CPUID_KEY_BOOT_ID + 4 + 8)
#define CPUID_MAX_ENT 256
#define CPUID_CACHE_MAGIC "KEEPCPU3"

/* The file: this header, then nent struct kvm_cpuid_entry2, host order. */
struct cpuid_cache_hdr {
	char magic[8];
	uint32_t nent;
	uint32_t zero;
	uint8_t key[CPUID_KEY_LEN];
};

/* The key of this boot and these KVM modules; -1 when it cannot be told
 * (no boot id, no /sys/module/kvm): then nothing may be cached. */
int cpuid_cache_key(uint8_t key[CPUID_KEY_LEN]);
/* The key of the host's own CPUID (the trap platform's table): this
 * boot's, with an inode no KVM key has. */
int cpuid_cache_key_host(uint8_t key[CPUID_KEY_LEN]);

/* The table in buf (malloc'd) if buf is one well-formed cache file made
 * under key, else NULL. */
struct kvm_cpuid2 *cpuid_cache_decode(
    const uint8_t *buf, size_t len, const uint8_t key[CPUID_KEY_LEN]);

/* The file's bytes for table c under key (malloc'd, *len set), or NULL. */
uint8_t *cpuid_cache_encode(
    const struct kvm_cpuid2 *c, const uint8_t key[CPUID_KEY_LEN], size_t *len);

/* Read path (NULL on any miss) / replace it atomically (best effort). */
struct kvm_cpuid2 *cpuid_cache_load(
    const char *path, const uint8_t key[CPUID_KEY_LEN]);
void cpuid_cache_store(const char *path, const uint8_t key[CPUID_KEY_LEN],
    const struct kvm_cpuid2 *c);

#endif
