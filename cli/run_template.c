/*
 * keep run --template (docs/templates.md, "keep run"): a run of an image
 * command its template serves goes to a template holder, a background
 * `keep` process of the same user that booted the template once and
 * holds it; the holder forks a copy-on-write clone for each run, which
 * uses the caller's stdin, stdout, stderr and workspace (passed over a
 * unix socket) and answers with the run's result. Without a holder the
 * run boots cold, and a holder is started for the next one; it exits
 * after RUN_TPL_IDLE_S without a run.
 *
 * The socket is $XDG_RUNTIME_DIR (or /run for root)/keep-template-KEY:
 * KEY hashes the image file's path and identity (device, inode, size,
 * modification time), the command, the guest memory size, the trusted
 * keys and the identity of the keep executable itself, so a changed
 * image, another memory size or another build of keep (whose holder
 * would speak another layout of the messages) is another holder. Both
 * ends check that the peer is the same user.
 */
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "cli/run_template.h"
#include "image/template.h"

#define RUN_TPL_MAGIC 0x4b52544cU /* "KRTL" */
#define RUN_TPL_IDLE_S 300
#define RUN_TPL_BOOT_MS 120000
#define RUN_TPL_CONNS 16
#define RUN_TPL_STRINGS_MAX (8u << 20)

enum { FD_STRINGS, FD_STDIN, FD_STDOUT, FD_STDERR, FD_WS, NFDS };

struct tpl_req {
	uint32_t magic;
	uint32_t nargs, nenv;
	uint32_t has_ws;
	uint64_t strings_len;
	uint64_t timeout_ms, output_max, workspace_max;
	uint32_t max_procs, trace;
};

struct tpl_reply {
	uint32_t magic;
	int32_t rc; /* VMM_OK or a VMM_E_* */
	struct vmm_result res;
	char err[256];
};

static int
socket_path(const char *image_path, const char *command, uint64_t memory,
    const uint8_t (*trust)[32], size_t ntrust, char *out, size_t outlen)
{
	crypto_generichash_state h;
	unsigned char key[8];
	char real[4096];
	const char *dir = geteuid() == 0 ? "/run" : getenv("XDG_RUNTIME_DIR");
	struct stat st, self;
	uint64_t id[9];
	size_t i;

	if (dir == NULL || dir[0] != '/' ||
	    realpath(image_path, real) == NULL || stat(real, &st) == -1 ||
	    stat("/proc/self/exe", &self) == -1)
		return -1;
	id[0] = (uint64_t)st.st_dev;
	id[1] = (uint64_t)st.st_ino;
	id[2] = (uint64_t)st.st_size;
	id[3] = (uint64_t)st.st_mtim.tv_sec * 1000000000ULL +
	    (uint64_t)st.st_mtim.tv_nsec;
	id[4] = memory;
	id[5] = (uint64_t)self.st_dev;
	id[6] = (uint64_t)self.st_ino;
	id[7] = (uint64_t)self.st_size;
	id[8] = (uint64_t)self.st_mtim.tv_sec * 1000000000ULL +
	    (uint64_t)self.st_mtim.tv_nsec;
	crypto_generichash_init(&h, NULL, 0, sizeof(key));
	crypto_generichash_update(
	    &h, (const unsigned char *)real, strlen(real) + 1);
	crypto_generichash_update(
	    &h, (const unsigned char *)command, strlen(command) + 1);
	crypto_generichash_update(&h, (const unsigned char *)id, sizeof(id));
	for (i = 0; i < ntrust; i++)
		crypto_generichash_update(&h, trust[i], 32);
	crypto_generichash_final(&h, key, sizeof(key));
	if (snprintf(out, outlen, "%s/keep-template-", dir) >= (int)outlen)
		return -1;
	for (i = 0; i < sizeof(key); i++)
		snprintf(
		    out + strlen(out), outlen - strlen(out), "%02x", key[i]);
	return strlen(out) + 1 < sizeof(((struct sockaddr_un *)0)->sun_path)
	    ? 0
	    : -1;
}

static int
same_user(int fd)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);

	return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) == 0 &&
	    cr.uid == geteuid();
}

static int
send_fds(int sock, const void *buf, size_t len, const int *fds, size_t nfds)
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int) * NFDS)];
	} u;
	struct iovec iov = { (void *)buf, len };
	struct msghdr mh;
	struct cmsghdr *c;

	memset(&u, 0, sizeof(u));
	memset(&mh, 0, sizeof(mh));
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = u.b;
	mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
	c = CMSG_FIRSTHDR(&mh);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
	memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
	return sendmsg(sock, &mh, MSG_NOSIGNAL) == (ssize_t)len ? 0 : -1;
}

/* A request: exactly its size and NFDS - 1 or NFDS descriptors (the
 * workspace's only when has_ws), else -1 with whatever came closed. */
static int
recv_req(int sock, struct tpl_req *q, int fds[NFDS])
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int) * NFDS)];
	} u;
	struct iovec iov = { q, sizeof(*q) };
	struct msghdr mh;
	struct cmsghdr *c;
	size_t n = 0, i, k;
	ssize_t r;

	memset(&mh, 0, sizeof(mh));
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = u.b;
	mh.msg_controllen = sizeof(u.b);
	if ((r = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC)) <= 0)
		return -1;
	for (c = CMSG_FIRSTHDR(&mh); c != NULL; c = CMSG_NXTHDR(&mh, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
			for (k = 0;
			     k < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			     k++) {
				int fd;

				memcpy(&fd, CMSG_DATA(c) + k * sizeof(int),
				    sizeof(fd));
				if (n < NFDS)
					fds[n++] = fd;
				else
					close(fd);
			}
	if (r != (ssize_t)sizeof(*q) || (mh.msg_flags & MSG_CTRUNC) != 0 ||
	    q->magic != RUN_TPL_MAGIC || q->has_ws > 1 ||
	    n != (q->has_ws ? NFDS : NFDS - 1) || q->nargs == 0 ||
	    q->nargs > 4096 || q->nenv > 4096 ||
	    q->strings_len > RUN_TPL_STRINGS_MAX || q->max_procs > 1024) {
		for (i = 0; i < n; i++)
			close(fds[i]);
		return -1;
	}
	if (!q->has_ws)
		fds[FD_WS] = -1;
	return 0;
}

static int
put_strings(int fd, const char *const *v, uint32_t *n, uint64_t *len)
{
	size_t l;

	for (*n = 0; v != NULL && v[*n] != NULL; (*n)++) {
		l = strlen(v[*n]) + 1;
		if (write(fd, v[*n], l) != (ssize_t)l)
			return -1;
		*len += l;
	}
	return 0;
}

/* nargs then nenv NUL-terminated strings, exactly, into argv and envp
 * (both in one NULL-separated vector). */
static int
get_strings(const struct tpl_req *q, int fd, char ***argv, char ***envp)
{
	size_t i, off = 0, n = (size_t)q->nargs + q->nenv;
	char *buf, **v, *nul;

	if ((buf = malloc(q->strings_len + 1)) == NULL ||
	    (v = calloc(n + 2, sizeof(*v))) == NULL ||
	    pread(fd, buf, q->strings_len, 0) != (ssize_t)q->strings_len)
		return -1;
	for (i = 0; i < n; i++) {
		if (off >= q->strings_len ||
		    (nul = memchr(buf + off, '\0', q->strings_len - off)) ==
		        NULL)
			return -1;
		v[i + (i >= q->nargs)] = buf + off;
		off = (size_t)(nul - buf) + 1;
	}
	if (off != q->strings_len)
		return -1;
	*argv = v;
	*envp = v + q->nargs + 1;
	return 0;
}

static int clone_out[2];

static void
clone_output(void *arg, int fd, const void *buf, size_t len)
{
	const char *p = buf;
	ssize_t n;

	(void)arg;
	while (len > 0) {
		if ((n = write(clone_out[fd == 2], p, len)) <= 0) {
			if (n == -1 && errno == EINTR)
				continue;
			return;
		}
		p += n;
		len -= (size_t)n;
	}
}

/* In the holder's child: one run on the clone, the reply, exit. The
 * request's argv starts with its first argument; argv[0] is the
 * command's, from the image. */
static void __attribute__((noreturn))
serve_one(struct vmm_template *t, const struct vmm_config *boot,
    const char *argv0, int conn, const struct tpl_req *q, int fds[NFDS])
{
	struct vmm_config cfg;
	struct tpl_reply r;
	char **argv, **envp;

	memset(&r, 0, sizeof(r));
	r.magic = RUN_TPL_MAGIC;
	if (get_strings(q, fds[FD_STRINGS], &argv, &envp) != 0) {
		r.rc = VMM_E_INVAL;
		strlcpy(r.err, "malformed request", sizeof(r.err));
	} else {
		argv[0] = (char *)argv0;
		cfg = *boot;
		cfg.argv = (const char *const *)argv;
		cfg.envp = (const char *const *)envp;
		cfg.stdin_fd = fds[FD_STDIN];
		clone_out[0] = fds[FD_STDOUT];
		clone_out[1] = fds[FD_STDERR];
		cfg.output = clone_output;
		cfg.workspace = NULL;
		cfg.workspace_fd = fds[FD_WS];
		cfg.timeout_ms = q->timeout_ms;
		cfg.output_max = q->output_max;
		cfg.workspace_max = q->workspace_max;
		cfg.max_procs = q->max_procs;
		cfg.trace = (int)q->trace;
		r.rc = vmm_template_run(t, &cfg, &r.res, r.err, sizeof(r.err));
	}
	(void)send(conn, &r, sizeof(r), MSG_NOSIGNAL);
	_exit(0);
}

/* The holder: boot, then serve until idle. Never returns. */
static void __attribute__((noreturn)) holder(const char *path,
    struct vmm_config boot, const struct image *img, const char *command)
{
	struct image_template spec;
	const struct image_command *first;
	const struct image_file *f = NULL;
	const char *argv[IMAGE_TEMPLATE_ARGS + 2], *envp[1] = { NULL };
	struct sockaddr_un sa;
	struct vmm_template *t;
	struct pollfd pfd[1 + RUN_TPL_CONNS];
	struct tpl_req q;
	pid_t kids[RUN_TPL_CONNS];
	int conns[RUN_TPL_CONNS], lfd, devnull, lock, fds[NFDS], c, n;
	char err[256];
	size_t i;

	/* One holder per key: a second one, started while the first boots,
	 * goes away. The lock is held for the holder's life. */
	snprintf(err, sizeof(err), "%s.lock", path);
	umask(077);
	if ((lock = open(err, O_RDWR | O_CREAT | O_CLOEXEC, 0600)) == -1 ||
	    flock(lock, LOCK_EX | LOCK_NB) == -1)
		_exit(0);
	devnull = open("/dev/null", O_RDWR);
	if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(devnull, 1) < 0 ||
	    dup2(devnull, 2) < 0)
		_exit(1);
	f = image_file_find(img, IMAGE_TEMPLATE_PATH);
	if (f == NULL || image_file_verify(f) != 0 ||
	    image_template_parse(f->data, f->len, &spec, err, sizeof(err)) !=
	        0 ||
	    !image_template_serves(&spec, command) ||
	    (first = image_command(img, spec.commands[0])) == NULL ||
	    first->program != image_command(img, command)->program)
		_exit(1);
	argv[0] = first->argv0;
	for (i = 0; i < spec.nargs; i++)
		argv[i + 1] = spec.args[i];
	argv[spec.nargs + 1] = NULL;
	boot.elf = first->program->data;
	boot.elf_len = first->program->len;
	boot.argv = argv;
	boot.envp = envp;
	boot.workspace = NULL;
	boot.workspace_fd = -1;
	boot.stdin_fd = -1;
	boot.output = NULL;
	boot.timeout_ms = RUN_TPL_BOOT_MS;
	boot.output_max = 0;
	boot.trace = 0;
	if (vmm_template_boot(&boot, &t, err, sizeof(err)) != VMM_OK)
		_exit(1);
	(void)vmm_template_learn(t);
	/* Listen only once the template is held: a run that connects is
	 * served at once. A stale socket of a dead holder is replaced. */
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	strlcpy(sa.sun_path, path, sizeof(sa.sun_path));
	unlink(path);
	if ((lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0)) == -1 ||
	    bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) == -1 ||
	    listen(lfd, 16) == -1)
		_exit(1);
	for (i = 0; i < RUN_TPL_CONNS; i++) {
		conns[i] = -1;
		kids[i] = 0;
	}
	for (;;) {
		pfd[0].fd = lfd;
		pfd[0].events = POLLIN;
		for (i = 0; i < RUN_TPL_CONNS; i++) {
			pfd[i + 1].fd = conns[i];
			pfd[i + 1].events = 0; /* hang-ups only */
		}
		n = poll(pfd, 1 + RUN_TPL_CONNS, RUN_TPL_IDLE_S * 1000);
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		if (n == 0) {
			for (i = 0; i < RUN_TPL_CONNS; i++)
				if (conns[i] >= 0)
					break;
			if (i == RUN_TPL_CONNS)
				break; /* idle */
			continue;
		}
		/* A caller that went away (^C) takes its run with it; a
		 * run that ended has answered and closes its end. */
		for (i = 0; i < RUN_TPL_CONNS; i++)
			if (conns[i] >= 0 &&
			    (pfd[i + 1].revents & (POLLHUP | POLLERR))) {
				if (kids[i] > 0)
					kill(kids[i], SIGKILL);
				close(conns[i]);
				conns[i] = -1;
				kids[i] = 0;
			}
		if (!(pfd[0].revents & POLLIN) ||
		    (c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC)) == -1)
			continue;
		for (i = 0; i < RUN_TPL_CONNS && conns[i] >= 0; i++)
			;
		if (i == RUN_TPL_CONNS || !same_user(c) ||
		    recv_req(c, &q, fds) != 0) {
			close(c);
			continue;
		}
		conns[i] = c;
		if ((kids[i] = fork()) == 0) {
			close(lfd);
			serve_one(t, &boot, image_command(img, command)->argv0,
			    c, &q, fds);
		}
		for (n = 0; n < NFDS; n++)
			if (fds[n] >= 0)
				close(fds[n]);
		if (kids[i] < 0) {
			close(c);
			conns[i] = -1;
			kids[i] = 0;
		}
	}
	unlink(path);
	snprintf(err, sizeof(err), "%s.lock", path);
	unlink(err);
	_exit(0);
}

int
run_template(const char *image_path, const char *command,
    const char *const *args, const struct vmm_config *cfg, uint64_t memory,
    const uint8_t (*trust)[32], size_t ntrust, struct vmm_result *res,
    char *err, size_t errlen)
{
	struct sockaddr_un sa;
	struct tpl_req q;
	struct tpl_reply r;
	char path[108];
	int s = -1, sfd = -1, fds[NFDS], ws = -1, rc = -1;
	ssize_t n;

	if (socket_path(image_path, command, memory, trust, ntrust, path,
	        sizeof(path)) != 0)
		return -1;
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	strlcpy(sa.sun_path, path, sizeof(sa.sun_path));
	if ((s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0)) == -1)
		return -1;
	if (connect(s, (struct sockaddr *)&sa, sizeof(sa)) == -1 ||
	    !same_user(s))
		goto out;
	memset(&q, 0, sizeof(q));
	q.magic = RUN_TPL_MAGIC;
	q.timeout_ms = cfg->timeout_ms;
	q.output_max = cfg->output_max;
	q.workspace_max = cfg->workspace_max;
	q.max_procs = cfg->max_procs;
	q.trace = (uint32_t)cfg->trace;
	/* An empty string where argv[0] goes: the holder puts the
	 * command's there. */
	if ((sfd = memfd_create("keep-run-argv", MFD_CLOEXEC)) == -1 ||
	    write(sfd, "", 1) != 1 ||
	    put_strings(sfd, args, &q.nargs, &q.strings_len) != 0 ||
	    put_strings(sfd, cfg->envp, &q.nenv, &q.strings_len) != 0)
		goto out;
	q.nargs++;
	q.strings_len++;
	if (q.strings_len > RUN_TPL_STRINGS_MAX)
		goto out;
	if (cfg->workspace != NULL &&
	    (ws = open(cfg->workspace, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) ==
	        -1) {
		snprintf(
		    err, errlen, "%s: %s", cfg->workspace, strerror(errno));
		rc = -2;
		goto out;
	}
	q.has_ws = ws >= 0;
	fds[FD_STRINGS] = sfd;
	fds[FD_STDIN] = 0;
	fds[FD_STDOUT] = 1;
	fds[FD_STDERR] = 2;
	fds[FD_WS] = ws;
	if (send_fds(s, &q, sizeof(q), fds, q.has_ws ? NFDS : NFDS - 1) != 0)
		goto out;
	/* Sent: from here the run is the holder's, and a failure is not a
	 * reason to run it again cold. */
	rc = -2;
	do
		n = recv(s, &r, sizeof(r), 0);
	while (n == -1 && errno == EINTR);
	if (n != (ssize_t)sizeof(r) || r.magic != RUN_TPL_MAGIC) {
		snprintf(err, errlen, "the template holder failed");
		goto out;
	}
	r.err[sizeof(r.err) - 1] = '\0';
	r.res.reason[sizeof(r.res.reason) - 1] = '\0';
	if (r.rc != VMM_OK) {
		snprintf(err, errlen, "%s: %s", vmm_strerror(r.rc), r.err);
		goto out;
	}
	*res = r.res;
	rc = 0;
out:
	if (sfd >= 0)
		close(sfd);
	if (ws >= 0)
		close(ws);
	close(s);
	return rc;
}

void
run_template_start(const char *image_path, const struct image *img,
    const char *command, const struct vmm_config *cfg, uint64_t memory,
    const uint8_t (*trust)[32], size_t ntrust)
{
	char path[108];
	pid_t pid;

	if (socket_path(image_path, command, memory, trust, ntrust, path,
	        sizeof(path)) != 0)
		return;
	/* Detached: its own session, reparented at once. */
	if ((pid = fork()) == 0) {
		setsid();
		if (fork() == 0)
			holder(path, *cfg, img, command);
		_exit(0);
	}
	if (pid > 0)
		waitpid(pid, NULL, 0);
}
