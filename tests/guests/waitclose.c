/*
 * What a parent finds once wait4 has reaped a child: the child's
 * descriptors closed, as Linux closes them before a child becomes a
 * zombie. The ends of a pipe and of a socketpair the child held read
 * end-of-file at once, without waiting. Each child first reads 16 MiB
 * from /dev/zero, which keep's vm process writes into the guest's memory
 * for it, so that the child's host process takes a while to tear down
 * after it ends: keep reaps a child from its tree's table, not from its
 * host process (docs/vmm.md, "The trap platform: Fork"). And a wait
 * for one child is not cut short (EINTR) by another child's end, with
 * SIGCHLD left at its default. Usage: waitclose [rounds]
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CHILD_MEM (16u << 20)

int
main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 5, r, st, pipe_eof = 0,
	    sock_eof = 0;
	int p[2], sv[2];
	char c;
	pid_t pid;

	for (r = 0; r < rounds; r++) {
		if (pipe(p) != 0 ||
		    socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
			return 1;
		if ((pid = fork()) == 0) {
			char *m = malloc(CHILD_MEM);
			int z = open("/dev/zero", O_RDONLY);
			size_t at;

			close(p[0]);
			close(sv[0]);
			if (m == NULL || z < 0)
				_exit(4);
			for (at = 0; at < CHILD_MEM; at += 1u << 20)
				if (read(z, m + at, 1u << 20) != 1 << 20)
					_exit(4);
			_exit(3);
		}
		close(p[1]);
		close(sv[1]);
		if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
		    WEXITSTATUS(st) != 3) {
			printf("round %d: the child did not exit 3\n", r);
			return 1;
		}
		fcntl(p[0], F_SETFL, O_NONBLOCK);
		if (read(p[0], &c, 1) == 0)
			pipe_eof++;
		else
			printf("round %d: pipe: %s\n", r,
			    errno == EAGAIN ? "still open" : strerror(errno));
		if (recv(sv[0], &c, 1, MSG_DONTWAIT) == 0)
			sock_eof++;
		else
			printf("round %d: socket: %s\n", r,
			    errno == EAGAIN ? "still open" : strerror(errno));
		close(p[0]);
		close(sv[0]);
	}
	printf("after wait4: pipe at its end %d of %d, socket %d of %d\n",
	    pipe_eof, rounds, sock_eof, rounds);
	for (r = 0; r < rounds; r++) {
		pid_t slow, quick, got;

		if ((slow = fork()) == 0) {
			nanosleep(&(struct timespec){ 0, 200000000 }, NULL);
			_exit(5);
		}
		if ((quick = fork()) == 0)
			_exit(6);
		got = waitpid(slow, &st, 0);
		if (got != slow || !WIFEXITED(st) || WEXITSTATUS(st) != 5) {
			printf("round %d: waitpid for the slow child: %s\n", r,
			    got == -1 ? strerror(errno) : "another child");
			return 1;
		}
		if (waitpid(quick, &st, 0) != quick || WEXITSTATUS(st) != 6)
			return 1;
	}
	printf("a wait for one child outlasts another's end\n");
	return 0;
}
