/*
 * Fuzz the front's connection state machine: the input is a byte stream
 * from one client, delivered over a socketpair in pieces whose size the
 * first byte chooses, through the real event loop (parser, chunked
 * decoder with in-place compaction, pipelining, backpressure, lingering
 * close, replies deferred and resumed out of band) and the API over the
 * fake backend. Properties: no crash, no
 * leak, and once the client closes, the front lets the connection go.
 */
#include <sys/socket.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/api_fake.h"
#include "host/http/front.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct front *front;
static struct front_limits lim;
static struct api_fake *fake;

static void
init(void)
{
	static struct api_backend be;
	struct api *api;

	fake = api_fake_new(NULL, NULL);
	api_fake_backend(fake, &be);
	api_fake_add_token(fake, "t", "admin", CAP_ALL, NULL, 0);
	if ((api = api_new(&be, NULL)) == NULL)
		abort();
	front_limits_default(&lim);
	lim.http.max_body = 8192;
	lim.http.max_head = 2048;
	lim.max_pending_out = 2048;
	lim.max_conns = 4;
	if ((front = front_new(-1, api, &lim, NULL)) == NULL)
		abort();
}

static void
drain(int fd)
{
	char buf[65536];

	while (read(fd, buf, sizeof(buf)) > 0)
		;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t off = 1, piece;
	int sv[2];

	if (size < 1 || size > 65536)
		return 0;
	if (front == NULL)
		init();
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0,
	        sv) == -1)
		return 0;
	if (front_adopt(front, sv[0]) != 0) {
		close(sv[1]);
		return 0;
	}
	piece = 1 + data[0] % 64;
	for (int spins = 0; off < size && spins < 100000; spins++) {
		size_t n = size - off < piece ? size - off : piece;
		/* The front may close first (a lingering close ends after
		 * LINGER_MS of wall time, which a stalled machine reaches
		 * within one input): that is EPIPE here, not SIGPIPE. */
		ssize_t w = send(sv[1], data + off, n, MSG_NOSIGNAL);

		if (w > 0)
			off += (size_t)w;
		front_step(front, 0);
		/* Runs finish at arbitrary points of the stream. */
		if (data[0] & 0x80)
			api_fake_flush(fake);
		drain(sv[1]);
		if (w <= 0 && front_nconns(front) == 0)
			break;
	}
	shutdown(sv[1], SHUT_WR);
	for (int i = 0; i < 50 && front_nconns(front) > 0; i++) {
		api_fake_flush(fake);
		front_step(front, 0);
		drain(sv[1]);
	}
	close(sv[1]);
	for (int i = 0; i < 50 && front_nconns(front) > 0; i++) {
		api_fake_flush(fake);
		front_step(front, 0);
	}
	if (front_nconns(front) != 0)
		abort();
	return 0;
}
