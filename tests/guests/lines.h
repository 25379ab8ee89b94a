/*
 * What several test guests share (included, not linked: each guest is
 * one static program): a call's result as one line, the same natively
 * and in keep, and one descriptor passed over an AF_UNIX socket with
 * SCM_RIGHTS.
 */
#ifndef KEEP_TESTS_GUESTS_LINES_H
#define KEEP_TESTS_GUESTS_LINES_H

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

/* "what: VALUE", or "what: ERROR" when rc is negative (errno's). */
static inline void
say(const char *what, long rc)
{
	if (rc < 0)
		printf("%s: %s\n", what, strerror(errno));
	else
		printf("%s: %ld\n", what, rc);
}

/* Send fd over sock with one byte beside it: 0, or -1. */
static inline int
fd_pass(int sock, int fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 }, b = 'f';
	struct iovec iov = { &b, 1 };
	struct msghdr m = { .msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = cbuf,
		.msg_controllen = sizeof(cbuf) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);

	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	return sendmsg(sock, &m, 0) == 1 ? 0 : -1;
}

/* The descriptor fd_pass sent, or -1. */
static inline int
fd_take(int sock)
{
	char cbuf[CMSG_SPACE(sizeof(int))], b;
	struct iovec iov = { &b, 1 };
	struct msghdr m = { .msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = cbuf,
		.msg_controllen = sizeof(cbuf) };
	struct cmsghdr *c;
	int fd;

	if (recvmsg(sock, &m, 0) != 1 || (c = CMSG_FIRSTHDR(&m)) == NULL ||
	    c->cmsg_type != SCM_RIGHTS)
		return -1;
	memcpy(&fd, CMSG_DATA(c), sizeof(fd));
	return fd;
}

#endif
