/*
 * keep key generate --out DIR [--name NAME]
 *     DIR/NAME.secret (k4.secret, mode 0600) and DIR/NAME.public
 *     (k4.public); NAME defaults to "keep"; existing files are kept.
 * keep key id PUBLIC
 *     prints the k4.pid of a public key (PASERK text or file).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cmd.h"
#include "token/paserk.h"
#include "token/token_err.h"

static int
key_usage_fp(FILE *fp)
{
	fprintf(fp,
	    "usage: keep key generate --out DIR [--name NAME]\n"
	    "       keep key id PUBLIC\n");
	return EXIT_USAGE;
}

/* The usage, on stdout when asked for (--help), else on stderr. */
static int
key_usage(void)
{
	return key_usage_fp(stderr);
}

static int
write_new(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
	size_t len = strlen(text);

	if (fd == -1) {
		fprintf(stderr, "keep key: %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (write(fd, text, len) != (ssize_t)len || write(fd, "\n", 1) != 1 ||
	    fsync(fd) == -1) {
		fprintf(stderr, "keep key: %s: %s\n", path, strerror(errno));
		close(fd);
		unlink(path);
		return -1;
	}
	return close(fd);
}

static int
key_generate(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "out", required_argument, NULL, 'o' },
		{ "name", required_argument, NULL, 'n' }, { NULL, 0, NULL, 0 }
	};
	const char *out = NULL, *name = "keep";
	char sec[PASERK_SECRET_LEN + 1], pub[PASERK_PUBLIC_LEN + 1];
	char spath[PATH_MAX], ppath[PATH_MAX];
	uint8_t pk[32], sk[64];
	int c, rc = 1;

	optind = 1;
	while ((c = getopt_long(argc, argv, "o:n:", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			out = optarg;
			break;
		case 'n':
			name = optarg;
			break;
		default:
			return key_usage();
		}
	}
	if (out == NULL || optind != argc || name[0] == '\0' ||
	    strchr(name, '/') != NULL)
		return key_usage();
	if (snprintf(spath, sizeof(spath), "%s/%s.secret", out, name) >=
	        (int)sizeof(spath) ||
	    snprintf(ppath, sizeof(ppath), "%s/%s.public", out, name) >=
	        (int)sizeof(ppath))
		return key_usage();
	if (access(spath, F_OK) == 0 || access(ppath, F_OK) == 0) {
		fprintf(stderr, "keep key: %s or %s exists; not overwritten\n",
		    spath, ppath);
		return 1;
	}
	if (sodium_init() < 0)
		return 1;
	crypto_sign_keypair(pk, sk);
	paserk_secret_encode(sec, sizeof(sec), sk);
	paserk_public_encode(pub, sizeof(pub), pk);
	if (write_new(spath, sec, 0600) == 0) {
		if (write_new(ppath, pub, 0644) == 0) {
			char pid[PASERK_PID_LEN + 1];
			paserk_pid(pid, sizeof(pid), pk);
			printf("%s\n", pid);
			rc = 0;
		} else {
			unlink(spath);
		}
	}
	sodium_memzero(sk, sizeof(sk));
	sodium_memzero(sec, sizeof(sec));
	return rc;
}

static int
key_id(int argc, char **argv)
{
	char pid[PASERK_PID_LEN + 1];
	uint8_t pk[32];
	int rc;

	if (argc != 2)
		return key_usage();
	if ((rc = paserk_load_public(argv[1], pk)) != 0) {
		fprintf(stderr, "keep key id: %s\n", token_strerror(rc));
		return 1;
	}
	paserk_pid(pid, sizeof(pid), pk);
	printf("%s\n", pid);
	return 0;
}

int
cmd_key(int argc, char **argv)
{
	if (cli_wants_help(argc, argv)) {
		key_usage_fp(stdout);
		return 0;
	}
	if (argc < 2)
		return key_usage();
	if (strcmp(argv[1], "generate") == 0)
		return key_generate(argc - 1, argv + 1);
	if (strcmp(argv[1], "id") == 0)
		return key_id(argc - 1, argv + 1);
	return key_usage();
}
