/*
 * keep.h: the keep-specific system call for guest programs (image
 * authors include this one file; no library is needed).
 *
 * KEEP_SYS_FETCH: one outbound HTTP(S) request through the host's egress
 * process, allowed only when the policy grants the run's principal the
 * `egress` capability for the URL's host and port (docs/egress.md).
 * Guests have no network device: this is their only way out.
 *
 * The call. A guest program issues the Linux `syscall` instruction with
 *   rax = KEEP_SYS_FETCH, rdi = guest address of a struct keep_fetch,
 *   rsi = sizeof(struct keep_fetch).
 * The number lies far above Linux's table, so no Linux program calls it
 * by accident. It blocks until the response is in (or the request failed).
 * Return value in rax: 0 when a response came back (whatever its HTTP
 * status), or a negative errno:
 *   -EACCES    no grant for egress, or the policy or the egress checks
 *              refused the destination (reason in `error` and `reason`:
 *              not on the allowlist, http where https is required, an
 *              address that is not public, a redirect to a refused host)
 *   -EFAULT    a pointer/length pair lies outside guest memory
 *   -EINVAL    a field out of range (size, version, reserved not zero,
 *              malformed URL, method or headers)
 *   -E2BIG     request larger than the limit
 *   -EMSGSIZE  response larger than the limit, or than the guest's
 *              buffers (status and the needed lengths are still set)
 *   -ETIMEDOUT total or connect time exceeded
 *   -EIO       transfer failed (connect, TLS, protocol)
 *   -EAGAIN    the principal has its maximum of requests running
 *
 * The host never trusts this struct: the vm process copies it out once,
 * checks every (address, length) pair with its one overflow-checked
 * guest-range helper, copies the IN buffers out, and writes only the OUT
 * fields and the bytes of the two response buffers. Lengths the guest
 * wrote into OUT fields beforehand are ignored.
 *
 * Headers, both ways, are "Name: value\r\n" lines, without the status
 * line; the request's must not contain Host, Content-Length,
 * Transfer-Encoding, Connection or Proxy-* (refused with -EINVAL).
 * Redirects are followed only to the same granted host and port; any
 * other hop is refused.
 */
#ifndef KEEP_GUEST_KEEP_H
#define KEEP_GUEST_KEEP_H

#include <stdint.h>

#define KEEP_SYS_FETCH 0x4b50 /* 'K' 'P' */

/*
 * KEEP_SYS_READY: the ready point of an image's template
 * (docs/templates.md). rdi = guest address of a buffer, rsi = its
 * length (4 KiB .. 64 MiB). The program calls it once, when it has done
 * the work every run shares (an interpreter: started, its usual modules
 * imported) and waits for the run's request.
 *
 * While keep boots the template, the call does not return: the VMM
 * parks the guest there and keeps it. Each run then continues from a
 * copy-on-write clone of the parked guest, in which the call returns
 * the length of the request it wrote into the buffer:
 *   u32 argc, u32 envc (little-endian), then argc + envc strings, each
 *   NUL-terminated: the run's argv (argv[0] included) and its whole
 *   environment (the caller's and the image's, as a cold boot's
 *   environ would hold them).
 * The program then does what a cold start with that argv and
 * environment would have done. Clones share everything the template
 * held, PRNG state included: a program refreshes its generators from
 * getrandom(2) after the call returns.
 * Errors: -EFAULT (the buffer is not the guest's), -EINVAL (length out
 * of range, or the program has other processes or threads), -ENOSYS (a
 * cold run: the program was not started as a template), -EALREADY (a
 * clone that has had its request).
 */
#define KEEP_SYS_READY 0x4b51 /* 'K' 'Q' */
#define KEEP_READY_MIN 4096
#define KEEP_READY_MAX (64u << 20)
#define KEEP_FETCH_VERSION 1
#define KEEP_FETCH_REASON_MAX 128

#ifndef IN
#define IN /* guest -> host */
#define OUT /* host -> guest */
#endif

struct keep_fetch {
	IN uint32_t version; /* KEEP_FETCH_VERSION */
	IN uint32_t size; /* sizeof(struct keep_fetch) */
	IN uint64_t method; /* "GET", "POST", ...: address */
	IN uint32_t method_len; /* 1..16 */
	IN uint32_t url_len; /* 1..2048 */
	IN uint64_t url;
	IN uint64_t req_headers;
	IN uint64_t req_headers_len;
	IN uint64_t req_body;
	IN uint64_t req_body_len;
	IN uint64_t resp_headers; /* buffer for the response headers */
	IN uint64_t resp_headers_cap;
	IN uint64_t resp_body; /* buffer for the response body */
	IN uint64_t resp_body_cap;
	IN uint32_t timeout_ms; /* 0: the policy's; else the lesser */
	IN uint32_t reserved; /* 0 */
	OUT uint32_t status; /* HTTP status, 0 if none */
	OUT int32_t error; /* EGRESS_E_* code, 0 if none */
	OUT uint64_t resp_headers_len; /* bytes written (or needed) */
	OUT uint64_t resp_body_len;
	OUT char reason[KEEP_FETCH_REASON_MAX]; /* NUL-terminated, ASCII */
};

_Static_assert(sizeof(struct keep_fetch) == 256, "keep_fetch layout");

/*
 * For image authors (static x86-64 programs): issue the call. Returns 0
 * or a negative errno, as above. The guest's own checks of f are a
 * convenience only; the host checks everything again.
 */
static inline long
keep_fetch(struct keep_fetch *f)
{
	long ret;

	__asm__ volatile(
	    "syscall"
	    : "=a"(ret)
	    : "a"((long)KEEP_SYS_FETCH), "D"(f), "S"((long)sizeof(*f))
	    : "rcx", "r11", "memory");
	return ret;
}

#endif
