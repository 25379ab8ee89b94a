/*
 * KEEP_SYS_FETCH with hostile arguments: every case must come back as an
 * error code, never a crash of the host. Prints one "name=ret" per case.
 * Without keepd (keep run) a well-formed request is refused with EACCES.
 */
#include <stdio.h>
#include <string.h>

#include "../../guest/include/keep.h"

static char buf[4096];

static void
init(struct keep_fetch *f, const char *method, const char *url)
{
	memset(f, 0, sizeof(*f));
	f->version = KEEP_FETCH_VERSION;
	f->size = sizeof(*f);
	f->method = (uint64_t)(uintptr_t)method;
	f->method_len = (uint32_t)strlen(method);
	f->url = (uint64_t)(uintptr_t)url;
	f->url_len = (uint32_t)strlen(url);
	f->resp_body = (uint64_t)(uintptr_t)buf;
	f->resp_body_cap = sizeof(buf);
}

static long
raw(uint64_t addr, uint64_t size)
{
	long ret;

	__asm__ volatile("syscall"
	                 : "=a"(ret)
	                 : "a"((long)KEEP_SYS_FETCH), "D"(addr), "S"(size)
	                 : "rcx", "r11", "memory");
	return ret;
}

int
main(void)
{
	static const char url[] = "https://example.test/";
	struct keep_fetch f;

	printf("null=%ld\n", raw(0, sizeof(f)));
	printf("kernel=%ld\n", raw(0x1000, sizeof(f)));
	printf("wild=%ld\n", raw(0x7fffffff0000ull, sizeof(f)));
	init(&f, "GET", url);
	printf("size=%ld\n", raw((uint64_t)(uintptr_t)&f, sizeof(f) - 8));
	init(&f, "GET", url);
	f.version = 2;
	printf("version=%ld\n", keep_fetch(&f));
	init(&f, "GET", url);
	f.reserved = 1;
	printf("reserved=%ld\n", keep_fetch(&f));
	init(&f, "GET", url);
	f.url = 0x10;
	printf("url_ptr=%ld\n", keep_fetch(&f));
	init(&f, "GET", url);
	f.url_len = 1u << 20;
	printf("url_len=%ld\n", keep_fetch(&f));
	init(&f, "GET", url);
	f.resp_body = (uint64_t)-4096;
	printf("resp_wrap=%ld\n", keep_fetch(&f));
	init(&f, "GET", url);
	f.req_body = (uint64_t)(uintptr_t)buf;
	f.req_body_len = (uint64_t)-1;
	printf("body_len=%ld\n", keep_fetch(&f));
	init(&f, "GET", "ftp://example.test/");
	printf("scheme=%ld\n", keep_fetch(&f));
	init(&f, "G\001T", url);
	printf("method=%ld\n", keep_fetch(&f));
	init(&f, "GET", url);
	f.req_headers = (uint64_t)(uintptr_t) "no colon here\r\n";
	f.req_headers_len = 15;
	printf("header=%ld\n", keep_fetch(&f));
	init(&f, "GET", url);
	printf("ok=%ld reason=%s\n", keep_fetch(&f), f.reason);
	return 0;
}
