/*
 * inotify as Linux gives it (host/vmm/sys_inotify.c): `inotify BASE`
 * works in directory BASE and prints one line per check, the events by
 * name and kind, so that its output natively and in keep can be
 * compared byte for byte. `inotify BASE keep` then checks what only a
 * guest has: /proc watched without events, a workspace symlink to a
 * host path that leads nowhere outside.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lines.h"

static char base[512];

static void passed(void);

static const char *
at(const char *name)
{
	static char p[2][1024];
	static int i;

	i ^= 1;
	snprintf(p[i], sizeof(p[i]), "%s/%s", base, name);
	return p[i];
}

static const char *
kind(uint32_t m)
{
	static const struct {
		uint32_t bit;
		const char *name;
	} k[] = { { IN_CREATE, "CREATE" }, { IN_MODIFY, "MODIFY" },
		{ IN_CLOSE_WRITE, "CLOSE_WRITE" },
		{ IN_MOVED_FROM, "MOVED_FROM" }, { IN_MOVED_TO, "MOVED_TO" },
		{ IN_DELETE, "DELETE" }, { IN_ATTRIB, "ATTRIB" },
		{ IN_IGNORED, "IGNORED" }, { IN_DELETE_SELF, "DELETE_SELF" } };
	static char out[128];
	size_t i;

	out[0] = '\0';
	for (i = 0; i < sizeof(k) / sizeof(k[0]); i++)
		if (m & k[i].bit) {
			if (out[0] != '\0')
				strcat(out, "|");
			strcat(out, k[i].name);
		}
	if (m & IN_ISDIR)
		strcat(out, "|ISDIR");
	return out[0] != '\0' ? out : "?";
}

/* Every event queued now, as "wd-label KIND name" lines; the two halves
 * of a rename say whether their cookies agree. */
static void
drain(int fd, int wd1, int wd2)
{
	char buf[4096] __attribute__((aligned(8)));
	const struct inotify_event *e;
	uint32_t cookie = 0;
	ssize_t n, off;

	while ((n = read(fd, buf, sizeof(buf))) > 0)
		for (off = 0; off < n;
		     off += (ssize_t)sizeof(*e) + (ssize_t)e->len) {
			e = (const struct inotify_event *)(buf + off);
			printf("  %s %s %s",
			    e->wd == wd1       ? "dir"
			        : e->wd == wd2 ? "file"
			                       : "other",
			    kind(e->mask), e->len > 0 ? e->name : "-");
			if (e->mask & IN_MOVED_FROM)
				cookie = e->cookie;
			if (e->mask & IN_MOVED_TO)
				printf(" (%s cookie)",
				    e->cookie == cookie && cookie != 0
				        ? "same"
				        : "other");
			printf("\n");
		}
	if (n == -1 && errno != EAGAIN)
		printf("  read: %s\n", strerror(errno));
}

/* "what: ok", or errno's words: watch descriptors differ by run. */
static void
said(const char *what, long rc)
{
	printf("%s: %s\n", what, rc >= 0 ? "ok" : strerror(errno));
}

static int
common(void)
{
	struct pollfd p;
	int fd, wd, fwd, f, bfd, st;
	char buf[4096];
	pid_t pid;

	mkdir(at("w"), 0755);
	said("init1 with a bad flag", inotify_init1(0x4));
	fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	said("init1", fd);
	said("add_watch with no event", inotify_add_watch(fd, at("w"), 0));
	said("add_watch on a missing path",
	    inotify_add_watch(fd, at("missing"), IN_CREATE));
	said("add_watch on stdin's descriptor",
	    inotify_add_watch(0, at("w"), IN_CREATE));
	said("add_watch on a closed descriptor",
	    inotify_add_watch(99, at("w"), IN_CREATE));
	wd = inotify_add_watch(fd, at("w"),
	    IN_ALL_EVENTS & ~(IN_ACCESS | IN_OPEN | IN_CLOSE_NOWRITE));
	said("add_watch on a directory", wd);
	said("the same directory again: the same wd",
	    inotify_add_watch(fd, at("w"), IN_CREATE | IN_MASK_ADD) == wd ? 0
	                                                                  : -1);
	said("IN_MASK_ADD with IN_MASK_CREATE",
	    inotify_add_watch(
	        fd, at("w"), IN_CREATE | IN_MASK_ADD | IN_MASK_CREATE));

	p.fd = fd;
	p.events = POLLIN;
	printf("ready before a change: %d\n", poll(&p, 1, 0));
	f = open(at("w/a"), O_CREAT | O_WRONLY, 0644);
	printf("ready after a create: %d\n", poll(&p, 1, 0));
	if (write(f, "hi", 2) != 2)
		printf("write failed\n");
	close(f);
	fwd = inotify_add_watch(
	    fd, at("w/a"), IN_MODIFY | IN_ATTRIB | IN_DELETE_SELF | IN_ONLYDIR);
	said("IN_ONLYDIR on a file", fwd);
	fwd = inotify_add_watch(
	    fd, at("w/a"), IN_MODIFY | IN_ATTRIB | IN_DELETE_SELF);
	said("add_watch on a file", fwd);
	f = open(at("w/a"), O_WRONLY | O_APPEND);
	if (write(f, "!", 1) != 1)
		printf("write failed\n");
	close(f);
	chmod(at("w/a"), 0600);
	rename(at("w/a"), at("w/b"));
	mkdir(at("w/d"), 0755);
	unlink(at("w/b"));
	printf("events:\n");
	drain(fd, wd, fwd);

	/* Through a symlink: the directory it leads to. */
	symlink("w", at("link"));
	said("add_watch through a symlink: the directory's wd",
	    inotify_add_watch(fd, at("link"), IN_CREATE | IN_MASK_ADD) == wd
	        ? 0
	        : -1);
	said("IN_DONT_FOLLOW: the link's own wd",
	    inotify_add_watch(fd, at("link"), IN_ATTRIB | IN_DONT_FOLLOW) != wd
	        ? 0
	        : -1);

	said("rm_watch", inotify_rm_watch(fd, wd));
	said("rm_watch again", inotify_rm_watch(fd, wd));
	close(open(at("w/after"), O_CREAT | O_WRONLY, 0644));
	printf("after rm_watch:\n");
	drain(fd, wd, fwd);

	/* A blocking instance, read by a forked child that waits. */
	bfd = inotify_init();
	inotify_add_watch(bfd, at("w"), IN_CREATE);
	fflush(stdout);
	if ((pid = fork()) == 0) {
		ssize_t n = read(bfd, buf, sizeof(buf));
		const struct inotify_event *e =
		    (const struct inotify_event *)buf;

		printf("the child's blocking read: %s\n",
		    n > 0 && (e->mask & IN_CREATE) ? e->name : "nothing");
		fflush(stdout);
		_exit(0);
	}
	usleep(200000);
	close(open(at("w/for-the-child"), O_CREAT | O_WRONLY, 0644));
	waitpid(pid, &st, 0);
	printf("child: %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	passed();
	return 0;
}

/* An instance passed to another process (SCM_RIGHTS) is one there:
 * the child watches through it and reads what the parent makes. */
static void
passed(void)
{
	char b, buf[4096];
	int sv[2], fd, st;

	socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
	fflush(stdout);
	if (fork() == 0) {
		const struct inotify_event *e = (const void *)buf;

		if ((fd = fd_take(sv[1])) < 0)
			_exit(1);
		said("a passed instance watches",
		    inotify_add_watch(fd, at("w"), IN_CREATE));
		if (write(sv[1], "w", 1) != 1)
			_exit(1);
		printf("and reads: %s\n",
		    read(fd, buf, sizeof(buf)) > 0 ? e->name : "nothing");
		_exit(0);
	}
	unlink(at("w/passed"));
	fd = inotify_init();
	fd_pass(sv[0], fd);
	if (read(sv[0], &b, 1) == 1)
		close(open(at("w/passed"), O_CREAT | O_WRONLY, 0644));
	wait(&st);
	printf("child: %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}

/* Only in keep: what a guest must not reach or cannot change. */
static int
guest_only(void)
{
	struct pollfd p;
	int fd, wd;

	fd = inotify_init1(IN_NONBLOCK);
	wd = inotify_add_watch(fd, "/proc/self", IN_ALL_EVENTS);
	printf("/proc/self: %s\n",
	    wd >= 0x40000000 ? "a still wd" : strerror(errno));
	said("/proc/nonexistent",
	    inotify_add_watch(fd, "/proc/nonexistent", IN_ALL_EVENTS));
	said("rm_watch of a still wd", inotify_rm_watch(fd, wd));
	/* The test put a symlink "escape" here to a host directory outside
	 * the workspace, and changes that directory while we wait. */
	said(
	    "the escape link", inotify_add_watch(fd, "/escape", IN_ALL_EVENTS));
	said("the escape link's own",
	    inotify_add_watch(fd, "/escape", IN_ALL_EVENTS | IN_DONT_FOLLOW));
	said("the escape link, with ..",
	    inotify_add_watch(fd, "/w/../../../../escape", IN_ALL_EVENTS));
	fflush(stdout);
	sleep(1);
	p.fd = fd;
	p.events = POLLIN;
	printf("events from outside: %d\n", poll(&p, 1, 0));
	drain(fd, -1, -1);
	return 0;
}

int
main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	snprintf(
	    base, sizeof(base), "%s", strcmp(argv[1], "/") == 0 ? "" : argv[1]);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc > 2)
		return guest_only();
	return common();
}
