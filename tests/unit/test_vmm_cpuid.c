/* The CPUID cache file: its decoder refuses anything but an exact, keyed,
 * well-formed file, and its loader anything another user could write. */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "host/vmm/cpuid.h"

static struct kvm_cpuid2 *
table(uint32_t n)
{
	struct kvm_cpuid2 *c;
	uint32_t i;

	c = calloc(1, sizeof(*c) + n * sizeof(c->entries[0]));
	assert_non_null(c);
	c->nent = n;
	for (i = 0; i < n; i++) {
		c->entries[i].function = i;
		c->entries[i].eax = 0x1000 + i;
		c->entries[i].ebx = 0x2000 + i;
		c->entries[i].ecx = 0x3000 + i;
		c->entries[i].edx = 0x4000 + i;
	}
	c->entries[1].flags = KVM_CPUID_FLAG_SIGNIFCANT_INDEX;
	return c;
}

static const uint8_t key1[CPUID_KEY_LEN] = { 1, 2, 3 };
static const uint8_t key2[CPUID_KEY_LEN] = { 1, 2, 4 };

static int
decodes(const uint8_t *buf, size_t len)
{
	struct kvm_cpuid2 *c = cpuid_cache_decode(buf, len, key1);

	free(c);
	return c != NULL;
}

static void
test_roundtrip(void **state)
{
	struct kvm_cpuid2 *c = table(3), *d;
	uint8_t *buf;
	size_t len;

	(void)state;
	buf = cpuid_cache_encode(c, key1, &len);
	assert_non_null(buf);
	assert_int_equal(len,
	    sizeof(struct cpuid_cache_hdr) +
	        3 * sizeof(struct kvm_cpuid_entry2));
	d = cpuid_cache_decode(buf, len, key1);
	assert_non_null(d);
	assert_int_equal(d->nent, 3);
	assert_memory_equal(
	    d->entries, c->entries, 3 * sizeof(struct kvm_cpuid_entry2));
	free(d);
	free(buf);
	free(c);
}

static void
test_refusals(void **state)
{
	struct kvm_cpuid2 *c = table(3);
	struct cpuid_cache_hdr *h;
	uint8_t *buf, *big;
	size_t len;

	(void)state;
	buf = cpuid_cache_encode(c, key1, &len);
	assert_non_null(buf);
	h = (struct cpuid_cache_hdr *)buf;
	assert_true(decodes(buf, len));
	/* Made under another boot or another KVM. */
	assert_null(cpuid_cache_decode(buf, len, key2));
	/* Any size but the exact one. */
	assert_false(decodes(buf, 0));
	assert_false(decodes(buf, sizeof(*h) - 1));
	assert_false(decodes(buf, sizeof(*h)));
	assert_false(decodes(buf, len - 1));
	big = calloc(1, len + 1);
	assert_non_null(big);
	memcpy(big, buf, len);
	assert_false(decodes(big, len + 1));
	free(big);
	/* Header fields. */
	h->magic[7] = '2'; /* the format before this one */
	assert_false(decodes(buf, len));
	h->magic[7] = '3';
	h->zero = 1;
	assert_false(decodes(buf, len));
	h->zero = 0;
	h->nent = 0;
	assert_false(decodes(buf, len));
	h->nent = CPUID_MAX_ENT + 1;
	assert_false(decodes(buf, len));
	h->nent = 2; /* consistent with len only for 3 */
	assert_false(decodes(buf, len));
	h->nent = 3;
	assert_true(decodes(buf, len));
	/* Entries: unknown flags, padding. */
	{
		struct kvm_cpuid_entry2 *e =
		    (struct kvm_cpuid_entry2 *)(buf + sizeof(*h));

		e[2].flags = 0x80;
		assert_false(decodes(buf, len));
		e[2].flags = 0;
		e[0].padding[1] = 7;
		assert_false(decodes(buf, len));
		e[0].padding[1] = 0;
	}
	assert_true(decodes(buf, len));
	/* Too many entries to encode. */
	c->nent = CPUID_MAX_ENT + 1;
	assert_null(cpuid_cache_encode(c, key1, &len));
	free(buf);
	free(c);
}

static void
test_load_store(void **state)
{
	char dir[] = "/tmp/keep-cpuid-test-XXXXXX", path[128], link[128];
	struct kvm_cpuid2 *c = table(5), *d;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/keep-cpuid", dir);
	snprintf(link, sizeof(link), "%s/link", dir);
	assert_null(cpuid_cache_load(path, key1));
	cpuid_cache_store(path, key1, c);
	d = cpuid_cache_load(path, key1);
	assert_non_null(d);
	assert_int_equal(d->nent, 5);
	assert_memory_equal(
	    d->entries, c->entries, 5 * sizeof(struct kvm_cpuid_entry2));
	free(d);
	assert_null(cpuid_cache_load(path, key2));
	/* Writable by others: not to be believed. */
	assert_int_equal(chmod(path, 0666), 0);
	assert_null(cpuid_cache_load(path, key1));
	assert_int_equal(chmod(path, 0644), 0);
	/* Never through a symbolic link. */
	assert_int_equal(symlink(path, link), 0);
	assert_null(cpuid_cache_load(link, key1));
	/* A store replaces the file whole. */
	c->nent = 2;
	cpuid_cache_store(path, key2, c);
	assert_null(cpuid_cache_load(path, key1));
	d = cpuid_cache_load(path, key2);
	assert_non_null(d);
	assert_int_equal(d->nent, 2);
	free(d);
	/* A directory that cannot be written is no error. */
	cpuid_cache_store("/nonexistent/keep-cpuid", key1, c);
	unlink(link);
	unlink(path);
	assert_int_equal(rmdir(dir), 0);
	free(c);
}

static void
test_key(void **state)
{
	uint8_t a[CPUID_KEY_LEN], b[CPUID_KEY_LEN];

	(void)state;
	if (access("/sys/devices/virtual/misc/kvm", F_OK) != 0)
		skip();
	assert_int_equal(cpuid_cache_key(a), 0);
	assert_int_equal(cpuid_cache_key(b), 0);
	assert_memory_equal(a, b, CPUID_KEY_LEN);
}

/* The host's key (the trap platform's table): this boot's, stable, and
 * never a KVM key, so neither file can pass for the other. */
static void
test_key_host(void **state)
{
	uint8_t a[CPUID_KEY_LEN], b[CPUID_KEY_LEN], k[CPUID_KEY_LEN];

	(void)state;
	assert_int_equal(cpuid_cache_key_host(a), 0);
	assert_int_equal(cpuid_cache_key_host(b), 0);
	assert_memory_equal(a, b, CPUID_KEY_LEN);
	assert_int_equal(a[CPUID_KEY_BOOT_ID], 0);
	assert_int_equal(a[CPUID_KEY_BOOT_ID + 4], 0xff);
	assert_int_equal(a[CPUID_KEY_LEN - 1], 0xff);
	if (access("/sys/devices/virtual/misc/kvm", F_OK) != 0)
		return;
	assert_int_equal(cpuid_cache_key(k), 0);
	assert_memory_equal(a, k, CPUID_KEY_BOOT_ID);
	assert_memory_not_equal(a, k, CPUID_KEY_LEN);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_load_store),
		cmocka_unit_test(test_key),
		cmocka_unit_test(test_key_host),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
