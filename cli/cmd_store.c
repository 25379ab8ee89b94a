/*
 * keep store backup [--data DIR] BACKUP
 * keep store restore [--data DIR] BACKUP
 *
 * backup: a consistent, compacted copy of keepd's LMDB environment
 * (mdb_env_copy2 with MDB_CP_COMPACT, one read transaction), taken
 * beside a running keepd: LMDB lets a reader in another process see one
 * committed state while the store keeps writing. The copy's audit chain
 * is verified before the command reports success.
 *
 * restore: refuses while any process has the environment open (keepd's
 * store holds a shared lock on lock.mdb for as long as it runs), checks
 * that the backup opens and its audit chain verifies, moves the current
 * environment aside (db.before-restore-<time>) and puts the backup in
 * its place with the old directory's owner and modes.
 *
 * Exit 0 success, 1 failure, 2 usage. See keep-store(1).
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cmd.h"
#include "host/store/store.h"

#define DEFAULT_STATE "/var/lib/keep"
#define ARG_MAX_LEN 1024 /* a directory named on the command line */
#define PATH_LEN (ARG_MAX_LEN + 128)

/* The usage, on stdout when asked for (--help), else on stderr. */
static int
store_usage_to(FILE *fp, int status)
{
	fprintf(fp,
	    "usage: keep store backup [--data DIR] BACKUP\n"
	    "       keep store restore [--data DIR] BACKUP\n");
	return status;
}

static int
store_usage(void)
{
	return store_usage_to(stderr, EXIT_USAGE);
}

static int
has_file(const char *dir, const char *name)
{
	char p[PATH_LEN];
	struct stat sb;

	snprintf(p, sizeof(p), "%.*s/%s", ARG_MAX_LEN + 8, dir, name);
	return stat(p, &sb) == 0;
}

/* The environment directory: DIR when it holds data.mdb, else DIR/db
 * (keepd's layout: the store is chrooted to <state_dir>/db). */
static void
env_dir(const char *data, char *out, size_t outlen)
{
	char p[PATH_LEN];
	struct stat sb;

	snprintf(p, sizeof(p), "%.*s/db", ARG_MAX_LEN, data);
	if (!has_file(data, "data.mdb") && stat(p, &sb) == 0 &&
	    S_ISDIR(sb.st_mode))
		snprintf(out, outlen, "%.*s", ARG_MAX_LEN + 8, p);
	else
		snprintf(out, outlen, "%.*s", ARG_MAX_LEN, data);
}

/* Open read-only and verify the audit chain; prints the result as
 * "what: audit log intact: N entries". Returns 0, or 1 (printed). */
static int
open_verified(const char *dir, const char *what)
{
	struct store_config cfg = { 0, 0, 1, 0, 0 };
	struct store_verify v;
	struct store *st;
	int rc;

	if ((rc = store_open(dir, &cfg, &st)) != STORE_OK) {
		fprintf(stderr, "keep store: %s: %s\n", dir,
		    rc == STORE_E_NOTFOUND ? "no store here"
		                           : store_strerror(rc));
		return 1;
	}
	rc = store_audit_verify(st, NULL, &v);
	store_close(st);
	if (rc != STORE_OK) {
		fprintf(stderr, "keep store: %s: audit log %s: %s\n", dir,
		    rc == STORE_E_CHAIN ? "BROKEN" : "unreadable",
		    rc == STORE_E_CHAIN ? v.message : store_strerror(rc));
		return 1;
	}
	printf("%s: audit log intact: %" PRIu64 " entries\n", what, v.entries);
	return 0;
}

static int
do_backup(const char *data, const char *backup)
{
	struct store_config cfg = { 0, 0, 1, 0, 0 };
	char src[PATH_LEN], p[PATH_LEN];
	struct store *st;
	struct stat sb;
	FILE *fp;
	int rc;

	env_dir(data, src, sizeof(src));
	if (mkdir(backup, 0700) == -1 && errno != EEXIST) {
		fprintf(
		    stderr, "keep store: %s: %s\n", backup, strerror(errno));
		return 1;
	}
	if (has_file(backup, "data.mdb")) {
		fprintf(stderr,
		    "keep store: %s already holds a backup; name an empty "
		    "directory\n",
		    backup);
		return 1;
	}
	if ((rc = store_open(src, &cfg, &st)) != STORE_OK) {
		fprintf(stderr, "keep store: %s: %s\n", src,
		    rc == STORE_E_NOTFOUND ? "no store here"
		                           : store_strerror(rc));
		return 1;
	}
	rc = store_copy(st, backup);
	store_close(st);
	if (rc != STORE_OK) {
		fprintf(stderr, "keep store: copy to %s: %s (%s)\n", backup,
		    store_strerror(rc), strerror(errno));
		return 1;
	}
	snprintf(p, sizeof(p), "%.*s/BACKUP", ARG_MAX_LEN, backup);
	if ((fp = fopen(p, "w")) != NULL) {
		fprintf(fp,
		    "keep store backup\nfrom: %s\ntime: %lld\nschema: %d\n",
		    src, (long long)time(NULL), STORE_SCHEMA_VERSION);
		fclose(fp);
	}
	snprintf(p, sizeof(p), "%.*s/data.mdb", ARG_MAX_LEN, backup);
	if (stat(p, &sb) == 0)
		printf("backup: %s/data.mdb, %lld bytes (compacted) from %s\n",
		    backup, (long long)sb.st_size, src);
	return open_verified(backup, "backup");
}

/* Whether a process has the environment open: LMDB holds a shared
 * fcntl lock on byte 0 of lock.mdb for as long as an env is open. */
static int
env_in_use(const char *dir)
{
	struct flock fl;
	char p[PATH_LEN];
	int fd, busy;

	snprintf(p, sizeof(p), "%.*s/lock.mdb", ARG_MAX_LEN + 8, dir);
	if ((fd = open(p, O_RDWR | O_CLOEXEC)) == -1)
		return errno == ENOENT ? 0 : -1;
	memset(&fl, 0, sizeof(fl));
	fl.l_type = F_WRLCK;
	fl.l_whence = SEEK_SET;
	fl.l_start = 0;
	fl.l_len = 1;
	busy = fcntl(fd, F_GETLK, &fl) == -1 ? -1 : fl.l_type != F_UNLCK;
	close(fd);
	return busy;
}

static int
copy_file(const char *from, const char *to, uid_t uid, gid_t gid)
{
	char buf[65536];
	ssize_t n;
	int in, out, rc = -1;

	if ((in = open(from, O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	if ((out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600)) ==
	    -1) {
		close(in);
		return -1;
	}
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n)
			goto out;
	if (n == 0 && fchown(out, uid, gid) == 0 && fsync(out) == 0)
		rc = 0;
out:
	close(in);
	if (close(out) == -1)
		rc = -1;
	return rc;
}

static int
do_restore(const char *data, const char *backup)
{
	char dst[PATH_LEN], aside[PATH_LEN], from[PATH_LEN], to[PATH_LEN];
	struct stat sb;
	struct tm tm;
	time_t now = time(NULL);
	int busy;

	env_dir(data, dst, sizeof(dst));
	if ((busy = env_in_use(dst)) != 0) {
		fprintf(stderr,
		    busy > 0 ? "keep store: %s is open (keepd runs): stop it "
		               "first (systemctl stop keepd)\n"
		             : "keep store: %s: cannot check whether keepd "
		               "runs\n",
		    dst);
		return 1;
	}
	if (!has_file(backup, "data.mdb")) {
		fprintf(stderr, "keep store: %s holds no backup (data.mdb)\n",
		    backup);
		return 1;
	}
	if (open_verified(backup, "backup") != 0)
		return 1;
	/* The restored directory gets the owner and mode keepd gave the
	 * one it replaces (root's 0700 if there was none). */
	memset(&sb, 0, sizeof(sb));
	sb.st_mode = 0700;
	if (stat(dst, &sb) == 0) {
		localtime_r(&now, &tm);
		snprintf(aside, sizeof(aside), "%.*s.before-restore-",
		    ARG_MAX_LEN + 8, dst);
		strftime(aside + strlen(aside), 32, "%Y%m%dT%H%M%S", &tm);
		if (rename(dst, aside) == -1) {
			fprintf(stderr, "keep store: move %s aside: %s\n", dst,
			    strerror(errno));
			return 1;
		}
		printf("restore: the store it replaces is kept in %s\n", aside);
	}
	snprintf(from, sizeof(from), "%.*s/data.mdb", ARG_MAX_LEN, backup);
	snprintf(to, sizeof(to), "%.*s/data.mdb", ARG_MAX_LEN + 8, dst);
	if (mkdir(dst, sb.st_mode & 07777) == -1 ||
	    chown(dst, sb.st_uid, sb.st_gid) == -1 ||
	    copy_file(from, to, sb.st_uid, sb.st_gid) == -1) {
		fprintf(stderr, "keep store: restore into %s: %s\n", dst,
		    strerror(errno));
		return 1;
	}
	printf("restore: %s now holds the backup from %s\n", dst, backup);
	if (open_verified(dst, "restored store") != 0)
		return 1;
	/* Opening it made lock.mdb, as root: give it to keepd's store. */
	snprintf(to, sizeof(to), "%.*s/lock.mdb", ARG_MAX_LEN + 8, dst);
	if (chown(to, sb.st_uid, sb.st_gid) == -1 && errno != ENOENT) {
		fprintf(stderr, "keep store: %s: %s\n", to, strerror(errno));
		return 1;
	}
	return 0;
}

int
cmd_store(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "data", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *data = DEFAULT_STATE, *verb;
	int ch;

	if (cli_wants_help(argc, argv))
		return store_usage_to(stdout, 0);
	if (argc < 2)
		return store_usage();
	verb = argv[1];
	argc--;
	argv++;
	optind = 1;
	while ((ch = getopt_long(argc, argv, "d:h", opts, NULL)) != -1) {
		switch (ch) {
		case 'd':
			data = optarg;
			break;
		case 'h':
			return store_usage_to(stdout, 0);
		default:
			return store_usage();
		}
	}
	if (optind != argc - 1)
		return store_usage();
	if (strlen(data) > ARG_MAX_LEN || strlen(argv[optind]) > ARG_MAX_LEN) {
		fprintf(stderr, "keep store: directory name too long\n");
		return EXIT_USAGE;
	}
	if (strcmp(verb, "backup") == 0)
		return do_backup(data, argv[optind]);
	if (strcmp(verb, "restore") == 0)
		return do_restore(data, argv[optind]);
	fprintf(stderr, "keep store: unknown command '%s'\n", verb);
	return store_usage();
}
