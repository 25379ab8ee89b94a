/* The file set of an image built from Debian packages (cli/image_deb.h). */
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/image_deb.h"
#include "image/elfdeps.h"
#include "image/image.h"

#define DPKG_INFO "/var/lib/dpkg/info"
#define MAX_OUTPUT (64u << 20) /* dpkg-query's answer for one package */

/* Where ld.so looks when neither RUNPATH nor ld.so.cache names a
 * directory: glibc's built-in system directories on x86-64 Debian. */
static const char *const system_dirs[] = {
	"/lib/x86_64-linux-gnu",
	"/usr/lib/x86_64-linux-gnu",
	"/lib",
	"/usr/lib",
};

/* Files a guest never reads: documentation, manuals, bug-report
 * scripts, lintian overrides and message catalogues (guests run in the
 * C locale). */
static const char *const skipped_dirs[] = {
	"/usr/share/doc/",
	"/usr/share/man/",
	"/usr/share/info/",
	"/usr/share/lintian/",
	"/usr/share/bug/",
	"/usr/share/locale/",
};

static int deb_fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int
deb_fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

/* ---- the set ---------------------------------------------------------- */

static struct deb_entry *
set_find(const struct deb_set *s, const char *guest)
{
	size_t i;

	/* Linear, newest first: the closure asks mostly about what it has
	 * just added; a set holds a few thousand entries. */
	for (i = s->n; i-- > 0;)
		if (strcmp(s->v[i].guest, guest) == 0)
			return &s->v[i];
	return NULL;
}

static int
set_add(struct deb_set *s, const char *guest, const char *host, int explicit_)
{
	struct deb_entry *nv;

	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 256;

		if ((nv = reallocarray(s->v, cap, sizeof(*nv))) == NULL)
			return -1;
		s->v = nv;
		s->cap = cap;
	}
	s->v[s->n].guest = strdup(guest);
	s->v[s->n].host = strdup(host);
	s->v[s->n].explicit_ = explicit_;
	s->v[s->n].pyc_source = NULL;
	if (s->v[s->n].guest == NULL || s->v[s->n].host == NULL) {
		free(s->v[s->n].guest);
		free(s->v[s->n].host);
		return -1;
	}
	s->n++;
	return 0;
}

int
deb_set_add_explicit(struct deb_set *s, const char *guest, const char *host,
    char *err, size_t errlen)
{
	if (set_find(s, guest) != NULL)
		return deb_fail(err, errlen, "%s is given twice", guest);
	if (set_add(s, guest, host, 1) != 0)
		return deb_fail(err, errlen, "out of memory");
	return 0;
}

static int
by_guest(const void *a, const void *b)
{
	return strcmp(((const struct deb_entry *)a)->guest,
	    ((const struct deb_entry *)b)->guest);
}

void
deb_set_sort(struct deb_set *s)
{
	if (s->n > 1)
		qsort(s->v, s->n, sizeof(*s->v), by_guest);
}

void
deb_set_free(struct deb_set *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->v[i].guest);
		free(s->v[i].host);
		free(s->v[i].pyc_source);
	}
	free(s->v);
	memset(s, 0, sizeof(*s));
}

/* ---- dpkg ------------------------------------------------------------- */

/* Run argv (no shell) and collect its standard output. The exit status,
 * or -1 when it could not run. */
static int
run_capture(char *const argv[], char **out, size_t *outlen)
{
	int p[2], status;
	size_t len = 0, cap = 65536;
	char *buf;
	pid_t pid;

	*out = NULL;
	*outlen = 0;
	if ((buf = malloc(cap + 1)) == NULL)
		return -1;
	if (pipe2(p, O_CLOEXEC) == -1) {
		free(buf);
		return -1;
	}
	if ((pid = fork()) == -1) {
		close(p[0]);
		close(p[1]);
		free(buf);
		return -1;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		dup2(p[1], 1);
		if (null >= 0)
			dup2(null, 2);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(p[1]);
	for (;;) {
		ssize_t n;

		if (len == cap) {
			char *nb;

			if (cap >= MAX_OUTPUT ||
			    (nb = realloc(buf, cap * 2 + 1)) == NULL)
				break;
			buf = nb;
			cap *= 2;
		}
		n = read(p[0], buf + len, cap - len);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(p[0]);
	while (waitpid(pid, &status, 0) == -1 && errno == EINTR)
		;
	buf[len] = '\0';
	*out = buf;
	*outlen = len;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Debian package names: lower-case letters, digits, + - . (and an
 * architecture qualifier after ':'). Anything else never reaches dpkg. */
static int
pkg_name_ok(const char *p)
{
	size_t n = strlen(p);

	if (n < 2 || n > 128 ||
	    !((p[0] >= 'a' && p[0] <= 'z') || (p[0] >= '0' && p[0] <= '9')))
		return 0;
	for (; *p != '\0'; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
		        *p == '+' || *p == '-' || *p == '.' || *p == ':'))
			return 0;
	return 1;
}

static int
pkg_installed(const char *pkg)
{
	char *argv[] = { "dpkg-query", "-W", "-f=${db:Status-Status}", NULL,
		NULL };
	char *out;
	size_t len;
	int rc, yes;

	argv[3] = (char *)pkg;
	rc = run_capture(argv, &out, &len);
	yes = rc == 0 && out != NULL && strcmp(out, "installed") == 0;
	free(out);
	return yes;
}

/* Every path any installed package lists (the .list files of DPKG_INFO),
 * sorted:
 * the owner check for libraries the closure brings in. */
struct owned {
	char **v;
	size_t n;
};

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int
owned_load(struct owned *o)
{
	DIR *d;
	struct dirent *de;
	size_t cap = 0;

	if (o->v != NULL)
		return 0;
	if ((d = opendir(DPKG_INFO)) == NULL)
		return -1;
	while ((de = readdir(d)) != NULL) {
		char path[PATH_MAX], line[PATH_MAX];
		size_t nl = strlen(de->d_name);
		FILE *f;

		if (nl < 6 || strcmp(de->d_name + nl - 5, ".list") != 0)
			continue;
		snprintf(path, sizeof(path), DPKG_INFO "/%s", de->d_name);
		if ((f = fopen(path, "re")) == NULL)
			continue;
		while (fgets(line, sizeof(line), f) != NULL) {
			line[strcspn(line, "\n")] = '\0';
			if (o->n == cap) {
				char **nv;

				cap = cap ? cap * 2 : 65536;
				if ((nv = reallocarray(
				         o->v, cap, sizeof(*nv))) == NULL) {
					fclose(f);
					closedir(d);
					return -1;
				}
				o->v = nv;
			}
			if ((o->v[o->n] = strdup(line)) == NULL) {
				fclose(f);
				closedir(d);
				return -1;
			}
			o->n++;
		}
		fclose(f);
	}
	closedir(d);
	qsort(o->v, o->n, sizeof(*o->v), cmp_str);
	return o->v != NULL ? 0 : -1;
}

static int
owned_has(const struct owned *o, const char *path)
{
	return o->n > 0 &&
	    bsearch(&path, o->v, o->n, sizeof(*o->v), cmp_str) != NULL;
}

/* The file a host path leads to belongs to a package if a package
 * lists it, or lists it under the name /usr-merge gives it (/lib for
 * /usr/lib, /bin for /usr/bin). */
static int
owned_target(const struct owned *o, const char *path)
{
	static const char *const merged[] = { "/lib/", "/lib64/", "/bin/",
		"/sbin/" };
	char real[PATH_MAX], alt[PATH_MAX];
	size_t i;

	if (realpath(path, real) == NULL)
		return 0;
	if (owned_has(o, real))
		return 1;
	for (i = 0; i < sizeof(merged) / sizeof(merged[0]); i++) {
		size_t n = strlen(merged[i]);

		if (strncmp(real, "/usr", 4) == 0 &&
		    strncmp(real + 4, merged[i], n) == 0 &&
		    snprintf(alt, sizeof(alt), "%s", real + 4) <
		        (int)sizeof(alt) &&
		    owned_has(o, alt))
			return 1;
	}
	return 0;
}

/* A host file belongs to a package if a package lists it or the file it
 * leads to. */
static int
owned_file(const struct owned *o, const char *path)
{
	return owned_has(o, path) || owned_target(o, path);
}

static void
owned_free(struct owned *o)
{
	for (size_t i = 0; i < o->n; i++)
		free(o->v[i]);
	free(o->v);
}

/* ---- a package's files ----------------------------------------------- */

static int
skipped(const char *path)
{
	for (size_t i = 0; i < sizeof(skipped_dirs) / sizeof(skipped_dirs[0]);
	     i++)
		if (strncmp(path, skipped_dirs[i], strlen(skipped_dirs[i])) ==
		    0)
			return 1;
	return 0;
}

/* Add guest path `path` holding host file `path` when it is a regular
 * file (or a link to one); directories and dangling links are skipped.
 * A link must lead to a file some package holds: a package may link to
 * a file the machine generated or its administrator wrote (systemd's
 * /usr/lib/environment.d/99-environment.conf is /etc/environment),
 * which is the build machine's, not the package's; --file takes one
 * on purpose. */
/* 1 when the format can name `path`: printable ASCII but the space and
 * the backslash (docs/image-format.md). */
static int
nameable(const char *path)
{
	for (const unsigned char *c = (const unsigned char *)path; *c; c++)
		if (*c <= 0x20 || *c >= 0x7f || *c == '\\')
			return 0;
	return 1;
}

static int
add_listed(struct deb_set *s, struct owned *o, const char *path, char *err,
    size_t errlen)
{
	struct stat sb;

	if (skipped(path) || set_find(s, path) != NULL)
		return 0;
	/* A few package files have names the format cannot hold: scipy's
	 * test data "Transparent Busy.ani", setuptools' Windows launcher
	 * manifest, a CA certificate named in Hungarian. They are left
	 * out, each said aloud, rather than the whole package. */
	if (!nameable(path)) {
		fprintf(stderr,
		    "keep image: leaving out %s (a byte the format cannot "
		    "name)\n",
		    path);
		return 0;
	}
	if (stat(path, &sb) == -1 || !S_ISREG(sb.st_mode))
		return 0;
	if (lstat(path, &sb) == -1)
		return deb_fail(err, errlen, "%s: %s", path, strerror(errno));
	if (S_ISLNK(sb.st_mode)) {
		if (owned_load(o) != 0)
			return deb_fail(
			    err, errlen, "cannot read %s", DPKG_INFO);
		if (!owned_target(o, path))
			return deb_fail(err, errlen,
			    "%s links to a file outside the installed packages "
			    "(give it with --file to take it)",
			    path);
	}
	if (strlen(path) >= IMAGE_PATH_MAX)
		return deb_fail(err, errlen,
		    "%s: path longer than the image format's %d bytes", path,
		    IMAGE_PATH_MAX - 1);
	if (set_add(s, path, path, 0) != 0)
		return deb_fail(err, errlen, "out of memory");
	return 0;
}

/* The bytecode Debian compiled at install for a listed Python source
 * (DIR/__pycache__/NAME.*.pyc): without it every run compiles again,
 * and cannot cache the result in a read-only image. Each is marked with
 * its source, to be stored hash-based (image/pyc.h). Optimized bytecode
 * (NAME.*.opt-1.pyc, opt-2) is left out: Debian does not ship it, so
 * there is only what a `python -O` on the build machine happened to
 * write, which would make the image depend on that machine's past. */
static int
add_bytecode(struct deb_set *s, struct owned *o, const char *py, char *err,
    size_t errlen)
{
	char pat[PATH_MAX];
	const char *slash = strrchr(py, '/');
	size_t dl = (size_t)(slash - py), nl = strlen(slash + 1) - 3;
	glob_t g;
	int rc = 0;

	if (snprintf(pat, sizeof(pat), "%.*s/__pycache__/%.*s.*.pyc", (int)dl,
	        py, (int)nl, slash + 1) >= (int)sizeof(pat))
		return 0;
	if (glob(pat, 0, NULL, &g) != 0)
		return 0;
	for (size_t i = 0; i < g.gl_pathc && rc == 0; i++) {
		size_t before = s->n;

		if (strstr(g.gl_pathv[i] + dl, ".opt-") != NULL)
			continue;
		rc = add_listed(s, o, g.gl_pathv[i], err, errlen);
		if (rc == 0 && s->n > before &&
		    (s->v[s->n - 1].pyc_source = strdup(py)) == NULL)
			rc = deb_fail(err, errlen, "out of memory");
	}
	globfree(&g);
	return rc;
}

static int
add_package(struct deb_set *s, struct owned *o, const char *pkg, char *err,
    size_t errlen)
{
	char *argv[] = { "dpkg-query", "-L", NULL, NULL };
	char *out, *line, *save = NULL;
	size_t len;
	int rc = 0;

	if (!pkg_name_ok(pkg))
		return deb_fail(err, errlen, "%s: not a package name", pkg);
	if (!pkg_installed(pkg))
		return deb_fail(
		    err, errlen, "package %s is not installed", pkg);
	argv[2] = (char *)pkg;
	if (run_capture(argv, &out, &len) != 0) {
		free(out);
		return deb_fail(err, errlen, "dpkg-query -L %s failed", pkg);
	}
	for (line = strtok_r(out, "\n", &save); line != NULL && rc == 0;
	     line = strtok_r(NULL, "\n", &save)) {
		size_t n = strlen(line);

		if (line[0] != '/')
			continue; /* "diverted by ..." and the like */
		rc = add_listed(s, o, line, err, errlen);
		if (rc == 0 && n > 3 && strcmp(line + n - 3, ".py") == 0 &&
		    !skipped(line))
			rc = add_bytecode(s, o, line, err, errlen);
	}
	free(out);
	return rc;
}

/* ---- the shared-library closure -------------------------------------- */

static int
map_file(const char *path, const uint8_t **buf, size_t *len)
{
	struct stat sb;
	void *p;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	*buf = NULL;
	*len = 0;
	if (fd == -1)
		return -1;
	if (fstat(fd, &sb) == -1 || !S_ISREG(sb.st_mode)) {
		close(fd);
		return -1;
	}
	if (sb.st_size == 0) {
		close(fd);
		return 0;
	}
	p = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return -1;
	*buf = p;
	*len = (size_t)sb.st_size;
	return 0;
}

/* Bring in the file the loader will open at guest path `guest` (a
 * library found in dir, or the interpreter) unless the set has it. */
static int
add_library(struct deb_set *s, struct owned *o, const char *guest,
    const char *needer, char *err, size_t errlen)
{
	if (set_find(s, guest) != NULL)
		return 1;
	if (access(guest, R_OK) != 0)
		return 0;
	if (owned_load(o) != 0)
		return deb_fail(err, errlen, "cannot read %s", DPKG_INFO);
	if (!owned_file(o, guest))
		return deb_fail(err, errlen,
		    "%s (needed by %s) belongs to no installed package; give "
		    "it with --file if it should be in the image",
		    guest, needer);
	if (strlen(guest) >= IMAGE_PATH_MAX)
		return deb_fail(err, errlen, "%s: path too long", guest);
	if (set_add(s, guest, guest, 0) != 0)
		return deb_fail(err, errlen, "out of memory");
	return 1;
}

/* One RUNPATH directory with $ORIGIN (the needer's directory) put in. */
static int
expand_origin(
    const char *dir, size_t dl, const char *needer, char *out, size_t max)
{
	const char *slash = strrchr(needer, '/');
	int ol = (int)(slash - needer);
	int n;

	if (dl >= 7 && strncmp(dir, "$ORIGIN", 7) == 0)
		n = snprintf(
		    out, max, "%.*s%.*s", ol, needer, (int)(dl - 7), dir + 7);
	else if (dl >= 9 && strncmp(dir, "${ORIGIN}", 9) == 0)
		n = snprintf(
		    out, max, "%.*s%.*s", ol, needer, (int)(dl - 9), dir + 9);
	else
		n = snprintf(out, max, "%.*s", (int)dl, dir);
	return n > 0 && (size_t)n < max ? 0 : -1;
}

static int
resolve_needed(struct deb_set *s, struct owned *o, const struct elfdeps *d,
    const char *needer, const char *name, char *err, size_t errlen)
{
	char dir[PATH_MAX], guest[PATH_MAX];
	const char *p = d->runpath;
	size_t i;
	int rc;

	if (strchr(name, '/') != NULL)
		return deb_fail(err, errlen,
		    "%s needs %s by path, which the builder does not follow",
		    needer, name);
	while (*p != '\0') {
		size_t dl = strcspn(p, ":");

		if (dl > 0 &&
		    expand_origin(p, dl, needer, dir, sizeof(dir)) == 0 &&
		    snprintf(guest, sizeof(guest), "%s/%s", dir, name) <
		        (int)sizeof(guest)) {
			/* Lexical: ld.so does not normalize either, and the
			 * guest's files are found by exact path. */
			if ((rc = add_library(
			         s, o, guest, needer, err, errlen)) != 0)
				return rc < 0 ? -1 : 0;
		}
		p += dl + (p[dl] == ':');
	}
	for (i = 0; i < sizeof(system_dirs) / sizeof(system_dirs[0]); i++) {
		snprintf(guest, sizeof(guest), "%s/%s", system_dirs[i], name);
		if ((rc = add_library(s, o, guest, needer, err, errlen)) != 0)
			return rc < 0 ? -1 : 0;
	}
	return deb_fail(
	    err, errlen, "cannot resolve %s (needed by %s)", name, needer);
}

int
deb_set_collect(struct deb_set *s, const char *const *pkgs, size_t npkgs,
    char *err, size_t errlen)
{
	struct owned o = { NULL, 0 };
	size_t i, k;
	int rc = 0;

	for (i = 0; i < npkgs && rc == 0; i++)
		rc = add_package(s, &o, pkgs[i], err, errlen);
	/* The set grows as libraries come in; each is then visited too. */
	for (i = 0; i < s->n && rc == 0; i++) {
		struct elfdeps d;
		const uint8_t *buf;
		size_t len;
		char why[160];
		char *guest = s->v[i].guest;
		int r;

		if (map_file(s->v[i].host, &buf, &len) != 0) {
			rc = deb_fail(err, errlen, "%s: %s", s->v[i].host,
			    strerror(errno));
			break;
		}
		r = buf != NULL ? elfdeps_parse(buf, len, &d, why, sizeof(why))
		                : 1;
		if (buf != NULL)
			munmap((void *)buf, len);
		if (r < 0) {
			rc = deb_fail(err, errlen, "%s: %s", s->v[i].host, why);
			break;
		}
		if (r > 0)
			continue;
		if (d.interp[0] != '\0') {
			r = add_library(s, &o, d.interp, guest, err, errlen);
			if (r == 0)
				r = deb_fail(err, errlen,
				    "cannot find %s's interpreter %s", guest,
				    d.interp);
			if (r < 0) {
				rc = -1;
				break;
			}
			guest = s->v[i].guest; /* set_add may move s->v */
		}
		for (k = 0; k < d.nneeded && rc == 0; k++) {
			rc = resolve_needed(
			    s, &o, &d, guest, d.needed[k], err, errlen);
			guest = s->v[i].guest;
		}
	}
	owned_free(&o);
	return rc;
}
