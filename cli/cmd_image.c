/*
 * keep image build --name N --version V [--memory SIZE] [--cap CAP]...
 *                  [--command NAME[=PROGRAM]]... [--file DEST=SRC]...
 *                  [--deb PKG]... [--manifest FILE] [--defer-hashes]
 *                  [PROGRAM] -o OUT
 * keep image sign --key SECRET IMAGE
 * keep image verify --trust PUBLIC [--trust PUBLIC]... IMAGE
 * keep image inspect [--json] IMAGE
 *
 * PROGRAM is stored as /bin/<basename>. A --command NAME runs PROGRAM with
 * argv[0] NAME; NAME=PATH runs the image file at guest PATH (argv[0]
 * NAME). Without --command, one command named after PROGRAM.
 * --deb PKG adds an installed Debian package's files and the shared
 * libraries its ELF files need (cli/image_deb.h); PROGRAM is then
 * optional. A manifest gives the same items a line each.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <libgen.h>
#include <limits.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cmd.h"
#include "cli/image_deb.h"
#include "image/image.h"
#include "image/pyc.h"
#include "lib/units.h"
#include "token/paserk.h"
#include "token/token_err.h"

#define MAX_TRUST 16

static int
image_usage_fp(FILE *fp)
{
	fprintf(fp,
	    "usage: keep image build --name N --version V [--memory SIZE] "
	    "[--cap CAP]...\n"
	    "           [--command NAME[=PROGRAM]]... [--file DEST=SRC]... "
	    "[--deb PKG]...\n"
	    "           [--manifest FILE] [--defer-hashes] [--env "
	    "NAME=VALUE]... "
	    "[PROGRAM] -o OUT\n"
	    "       keep image sign --key SECRET IMAGE\n"
	    "       keep image verify --trust PUBLIC [--trust PUBLIC]... "
	    "IMAGE\n"
	    "       keep image inspect [--json] IMAGE\n");
	return EXIT_USAGE;
}

/* The usage, on stdout when asked for (--help), else on stderr. */
static int
image_usage(void)
{
	return image_usage_fp(stderr);
}

static uint8_t *
read_file(const char *path, uint64_t *len, uint32_t *mode)
{
	struct stat sb;
	uint8_t *buf;
	size_t got = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd == -1 || fstat(fd, &sb) == -1 || !S_ISREG(sb.st_mode)) {
		fprintf(stderr, "keep image: %s: %s\n", path,
		    fd == -1 ? strerror(errno) : "not a regular file");
		if (fd != -1)
			close(fd);
		return NULL;
	}
	if ((buf = malloc(sb.st_size ? (size_t)sb.st_size : 1)) == NULL) {
		close(fd);
		return NULL;
	}
	while (got < (size_t)sb.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)sb.st_size - got);
		if (n <= 0) {
			fprintf(stderr, "keep image: %s: short read\n", path);
			free(buf);
			close(fd);
			return NULL;
		}
		got += (size_t)n;
	}
	close(fd);
	*len = got;
	*mode = (sb.st_mode & 0111) ? 0755 : 0644;
	return buf;
}

/* Write to a temporary file beside out and rename it into place. */
static int
open_temp(const char *out, char *tmp, size_t tmplen)
{
	int fd;

	if (snprintf(tmp, tmplen, "%s.tmp.XXXXXX", out) >= (int)tmplen)
		return -1;
	if ((fd = mkstemp(tmp)) == -1)
		fprintf(stderr, "keep image: %s: %s\n", tmp, strerror(errno));
	else
		fchmod(fd, 0644);
	return fd;
}

static int
finish_temp(int fd, const char *tmp, const char *out)
{
	if (fsync(fd) == -1 || close(fd) == -1 || rename(tmp, out) == -1) {
		fprintf(stderr, "keep image: %s: %s\n", out, strerror(errno));
		unlink(tmp);
		return 1;
	}
	return 0;
}

/* What a build is made of, from options and manifest lines alike. */
struct build_spec {
	char **cmds, **files, **debs, **envs;
	size_t ncmds, nfiles, ndebs, nenvs;
	char **owned; /* strings read from a manifest, freed at the end */
	size_t nowned;
};

static int
spec_push(char ***v, size_t *n, char *s)
{
	char **nv = reallocarray(*v, *n + 1, sizeof(**v));

	if (nv == NULL)
		return -1;
	*v = nv;
	(*v)[(*n)++] = s;
	return 0;
}

static void
spec_free(struct build_spec *sp)
{
	for (size_t i = 0; i < sp->nowned; i++)
		free(sp->owned[i]);
	free(sp->owned);
	free(sp->cmds);
	free(sp->files);
	free(sp->debs);
	free(sp->envs);
}

/*
 * A manifest: one item a line, as the options give them.
 *   deb PKG
 *   file DEST=SRC
 *   command NAME[=PATH]
 *   env NAME=VALUE
 * Blank lines and lines starting with '#' are ignored.
 */
static int
spec_manifest(struct build_spec *sp, const char *path)
{
	char line[4096];
	unsigned lineno = 0;
	FILE *f = fopen(path, "re");
	int rc = 0;

	if (f == NULL) {
		fprintf(stderr, "keep image: %s: %s\n", path, strerror(errno));
		return -1;
	}
	while (rc == 0 && fgets(line, sizeof(line), f) != NULL) {
		char *p = line, *word, *arg, *dup;

		lineno++;
		line[strcspn(line, "\r\n")] = '\0';
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p == '\0' || *p == '#')
			continue;
		word = p;
		p += strcspn(p, " \t");
		if (*p != '\0')
			*p++ = '\0';
		while (*p == ' ' || *p == '\t')
			p++;
		arg = p;
		if (*arg == '\0' || strpbrk(arg, " \t") != NULL ||
		    (dup = strdup(arg)) == NULL ||
		    spec_push(&sp->owned, &sp->nowned, dup) != 0) {
			fprintf(stderr,
			    "keep image: %s:%u: want KIND ARGUMENT\n", path,
			    lineno);
			rc = -1;
			break;
		}
		if (strcmp(word, "deb") == 0)
			rc = spec_push(&sp->debs, &sp->ndebs, dup);
		else if (strcmp(word, "file") == 0)
			rc = spec_push(&sp->files, &sp->nfiles, dup);
		else if (strcmp(word, "command") == 0)
			rc = spec_push(&sp->cmds, &sp->ncmds, dup);
		else if (strcmp(word, "env") == 0)
			rc = spec_push(&sp->envs, &sp->nenvs, dup);
		else {
			fprintf(stderr,
			    "keep image: %s:%u: unknown item %s (deb, file, "
			    "command, env)\n",
			    path, lineno, word);
			rc = -1;
		}
	}
	fclose(f);
	return rc;
}

/* The image's default environment (docs/vmm.md): a file of NAME=VALUE
 * lines the VMM appends after the caller's variables. Written to a
 * temporary file so it joins the sorted set like any other. */
#define IMAGE_ENV_PATH "/etc/keep/environment"

static int
write_env_file(const struct build_spec *sp, char *path, size_t max)
{
	FILE *f;
	int fd;

	snprintf(path, max, "/tmp/keep-image-env.XXXXXX");
	if ((fd = mkstemp(path)) == -1) {
		path[0] = '\0';
		fprintf(stderr, "keep image: temporary file: %s\n",
		    strerror(errno));
		return -1;
	}
	if ((f = fdopen(fd, "w")) == NULL) {
		close(fd);
		return -1;
	}
	for (size_t i = 0; i < sp->nenvs; i++) {
		const char *e = sp->envs[i], *eq = strchr(e, '=');

		if (eq == NULL || eq == e || strpbrk(e, "\n\r") != NULL) {
			fprintf(stderr,
			    "keep image: --env wants NAME=VALUE, "
			    "not %s\n",
			    e);
			fclose(f);
			return -1;
		}
		fprintf(f, "%s\n", e);
	}
	return fclose(f) == 0 ? 0 : -1;
}

/* A .pyc Debian compiled, made loadable without its source's time,
 * which the image does not keep (image/pyc.h); left as it is when it
 * is not current for its source. */
static void
pyc_for_image(const char *source, uint8_t **data, uint64_t *len)
{
	struct stat sb;
	uint8_t *src, *out;
	uint64_t srclen;
	uint32_t mode;
	size_t outlen;

	if (stat(source, &sb) == -1 ||
	    (src = read_file(source, &srclen, &mode)) == NULL)
		return;
	if (pyc_make_unchecked(*data, (size_t)*len, src, (size_t)srclen,
	        (int64_t)sb.st_mtime, &out, &outlen) == 1) {
		free(*data);
		*data = out;
		*len = outlen;
	}
	free(src);
}

static int
add_set_file(struct image_builder *b, const struct deb_entry *e)
{
	uint64_t len;
	uint32_t mode;
	uint8_t *data = read_file(e->host, &len, &mode);

	if (data == NULL)
		return -1;
	if (e->pyc_source != NULL)
		pyc_for_image(e->pyc_source, &data, &len);
	if (image_builder_add_file(b, e->guest, data, len, mode)) {
		fprintf(stderr, "keep image: bad or duplicate file path %s\n",
		    e->guest);
		free(data);
		return -1;
	}
	free(data);
	return 0;
}

static int
image_build(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "name", required_argument, NULL, 'n' },
		{ "version", required_argument, NULL, 'v' },
		{ "memory", required_argument, NULL, 'm' },
		{ "cap", required_argument, NULL, 'c' },
		{ "command", required_argument, NULL, 'C' },
		{ "file", required_argument, NULL, 'f' },
		{ "deb", required_argument, NULL, 'd' },
		{ "manifest", required_argument, NULL, 'M' },
		{ "defer-hashes", no_argument, NULL, 'D' },
		{ "env", required_argument, NULL, 'e' },
		{ "out", required_argument, NULL, 'o' },
		{ NULL, 0, NULL, 0 },
	};
	const char *name = NULL, *version = NULL, *out = NULL;
	struct build_spec sp;
	struct deb_set set = { NULL, 0, 0 };
	uint64_t memory = 64ULL << 20;
	cap_set_t caps = 0;
	struct image_builder *b = NULL;
	char err[512], progpath[IMAGE_PATH_MAX] = "", tmp[PATH_MAX];
	char envtmp[PATH_MAX] = "";
	int c, fd, rc = 1, deferred = 0, envfile;

	memset(&sp, 0, sizeof(sp));
	optind = 1;
	while ((c = getopt_long(argc, argv, "o:", opts, NULL)) != -1) {
		switch (c) {
		case 'n':
			name = optarg;
			break;
		case 'v':
			version = optarg;
			break;
		case 'm':
			if (units_parse_size(optarg, strlen(optarg), &memory)) {
				fprintf(stderr, "keep image: bad --memory\n");
				rc = EXIT_USAGE;
				goto out;
			}
			break;
		case 'c': {
			int id = cap_lookup(optarg, strlen(optarg));
			if (id < 0) {
				fprintf(stderr,
				    "keep image: unknown capability %s\n",
				    optarg);
				rc = EXIT_USAGE;
				goto out;
			}
			caps |= CAP_BIT(id);
			break;
		}
		case 'C':
			if (spec_push(&sp.cmds, &sp.ncmds, optarg) != 0)
				goto out;
			break;
		case 'f':
			if (spec_push(&sp.files, &sp.nfiles, optarg) != 0)
				goto out;
			break;
		case 'd':
			if (spec_push(&sp.debs, &sp.ndebs, optarg) != 0)
				goto out;
			break;
		case 'M':
			if (spec_manifest(&sp, optarg) != 0)
				goto out;
			break;
		case 'D':
			deferred = 1;
			break;
		case 'e':
			if (spec_push(&sp.envs, &sp.nenvs, optarg) != 0)
				goto out;
			break;
		case 'o':
			out = optarg;
			break;
		default:
			rc = image_usage();
			goto out;
		}
	}
	/* PROGRAM may be left out when packages bring the programs. */
	if (name == NULL || version == NULL || out == NULL ||
	    optind < argc - 1 || (optind == argc && sp.ndebs == 0)) {
		rc = image_usage();
		goto out;
	}
	if (sp.ncmds > IMAGE_MAX_COMMANDS || sp.nfiles > IMAGE_MAX_FILES) {
		fprintf(stderr,
		    "keep image: %zu commands and %zu files given; an image "
		    "holds at most %d and %d\n",
		    (size_t)sp.ncmds, (size_t)sp.nfiles, IMAGE_MAX_COMMANDS,
		    IMAGE_MAX_FILES);
		rc = EXIT_USAGE;
		goto out;
	}
	if (image_builder_new(name, version, memory, caps, &b) != 0) {
		fprintf(stderr,
		    "keep image: bad name, version or memory "
		    "(names: letters, digits, . _ - +; memory "
		    "2M..16G in pages)\n");
		rc = EXIT_USAGE;
		goto out;
	}
	if (optind == argc - 1) {
		char *dup = strdup(argv[optind]);

		snprintf(progpath, sizeof(progpath), "/bin/%s",
		    dup ? basename(dup) : "program");
		free(dup);
		if (deb_set_add_explicit(
		        &set, progpath, argv[optind], err, sizeof(err)) != 0) {
			fprintf(stderr, "keep image: %s\n", err);
			goto out;
		}
	}
	for (size_t i = 0; i < sp.nfiles; i++) {
		char *eq = strchr(sp.files[i], '=');

		if (eq == NULL) {
			fprintf(stderr, "keep image: --file wants DEST=SRC\n");
			goto out;
		}
		*eq = '\0';
		if (deb_set_add_explicit(
		        &set, sp.files[i], eq + 1, err, sizeof(err)) != 0) {
			fprintf(stderr, "keep image: %s\n", err);
			goto out;
		}
	}
	if (sp.nenvs > 0 &&
	    (envfile = write_env_file(&sp, envtmp, sizeof(envtmp))) != 0)
		goto out;
	if (sp.nenvs > 0 &&
	    deb_set_add_explicit(
	        &set, IMAGE_ENV_PATH, envtmp, err, sizeof(err)) != 0) {
		fprintf(stderr, "keep image: %s\n", err);
		goto out;
	}
	if (sp.ndebs > 0 &&
	    deb_set_collect(&set, (const char *const *)sp.debs, sp.ndebs, err,
	        sizeof(err)) != 0) {
		fprintf(stderr, "keep image: %s\n", err);
		goto out;
	}
	if (deferred)
		image_builder_defer_hashes(b);
	/* Sorted, so the same inputs give the same image. */
	deb_set_sort(&set);
	for (size_t i = 0; i < set.n; i++)
		if (add_set_file(b, &set.v[i]) != 0)
			goto out;
	if (sp.ncmds == 0) {
		if (progpath[0] == '\0') {
			fprintf(stderr,
			    "keep image: give --command NAME=PATH "
			    "for an image without PROGRAM\n");
			rc = EXIT_USAGE;
			goto out;
		}
		if (image_builder_add_command(
		        b, progpath + 5, progpath + 5, progpath) != 0) {
			fprintf(stderr, "keep image: bad command name %s\n",
			    progpath + 5);
			goto out;
		}
	}
	for (size_t i = 0; i < sp.ncmds; i++) {
		char *eq = strchr(sp.cmds[i], '=');
		const char *prog = progpath;

		if (eq != NULL) {
			*eq = '\0';
			prog = eq + 1;
		}
		if (image_builder_add_command(
		        b, sp.cmds[i], sp.cmds[i], prog)) {
			fprintf(stderr,
			    "keep image: bad or duplicate command "
			    "%s\n",
			    sp.cmds[i]);
			goto out;
		}
	}
	if ((fd = open_temp(out, tmp, sizeof(tmp))) == -1)
		goto out;
	if (image_builder_write(b, fd, err, sizeof(err)) != 0) {
		fprintf(stderr, "keep image: %s\n", err);
		close(fd);
		unlink(tmp);
		goto out;
	}
	rc = finish_temp(fd, tmp, out);
out:
	if (envtmp[0] != '\0')
		unlink(envtmp);
	image_builder_free(b);
	deb_set_free(&set);
	spec_free(&sp);
	return rc;
}

static int
image_sign_cmd(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "key", required_argument, NULL, 'k' },
		{ NULL, 0, NULL, 0 },
	};
	const char *key = NULL;
	struct image *img;
	uint8_t sk[64], trailer[IMAGE_TRAILER_LEN];
	const uint8_t *body;
	size_t blen, sblen;
	char err[256], tmp[PATH_MAX];
	int c, fd, rc;

	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c != 'k')
			return image_usage();
		key = optarg;
	}
	if (key == NULL || optind != argc - 1)
		return image_usage();
	if ((rc = paserk_load_secret(key, sk)) != 0) {
		fprintf(stderr, "keep image sign: %s: %s\n", key,
		    token_strerror(rc));
		return 1;
	}
	if (image_open(argv[optind], &img, err, sizeof(err)) != 0) {
		fprintf(stderr, "keep image sign: %s: %s\n", argv[optind], err);
		return 1;
	}
	/* What is signed is checked first: with deferred hashes the
	 * signature covers the files' hashes, not the files. */
	for (size_t i = 0; i < image_nfiles(img); i++)
		if (image_file_verify(image_file_at(img, i)) != 0) {
			fprintf(stderr,
			    "keep image sign: %s: %s does not match its "
			    "hash\n",
			    argv[optind], image_file_at(img, i)->path);
			sodium_memzero(sk, sizeof(sk));
			image_close(img);
			return 1;
		}
	body = image_signed_bytes(img, &sblen);
	image_sign(body, sblen, sk, trailer);
	body = image_bytes(img, &blen);
	sodium_memzero(sk, sizeof(sk));
	rc = 1;
	if ((fd = open_temp(argv[optind], tmp, sizeof(tmp))) != -1) {
		if (write(fd, body, blen) == (ssize_t)blen &&
		    write(fd, trailer, sizeof(trailer)) ==
		        (ssize_t)sizeof(trailer))
			rc = finish_temp(fd, tmp, argv[optind]);
		else {
			fprintf(stderr, "keep image sign: write: %s\n",
			    strerror(errno));
			close(fd);
			unlink(tmp);
		}
	}
	image_close(img);
	return rc;
}

static int
image_verify_cmd(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "trust", required_argument, NULL, 't' },
		{ NULL, 0, NULL, 0 },
	};
	uint8_t keys[MAX_TRUST][32];
	size_t nkeys = 0;
	struct image *img;
	char err[256], kid[IMAGE_KID_MAX + 1];
	int c, rc;

	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c != 't' || nkeys == MAX_TRUST)
			return image_usage();
		if ((rc = paserk_load_public(optarg, keys[nkeys])) != 0) {
			fprintf(stderr, "keep image verify: %s: %s\n", optarg,
			    token_strerror(rc));
			return 1;
		}
		nkeys++;
	}
	if (nkeys == 0 || optind != argc - 1)
		return image_usage();
	if (image_open(argv[optind], &img, err, sizeof(err)) != 0 ||
	    image_verify(img, (const uint8_t(*)[32])keys, nkeys, kid, err,
	        sizeof(err)) != 0 ||
	    image_verify_files(img, err, sizeof(err)) != 0) {
		fprintf(
		    stderr, "keep image verify: %s: %s\n", argv[optind], err);
		if (img != NULL)
			image_close(img);
		return 1;
	}
	kid[IMAGE_KID_MAX] = '\0';
	printf("%s: OK: %s %s signed by %s\n", argv[optind], image_name(img),
	    image_version(img), kid);
	image_close(img);
	return 0;
}

static int
image_inspect(int argc, char **argv)
{
	struct image *img;
	char err[256], mem[32];
	int json = 0;

	if (argc == 3 && strcmp(argv[1], "--json") == 0)
		json = 1;
	else if (argc != 2)
		return image_usage();
	if (image_open(argv[argc - 1], &img, err, sizeof(err)) != 0) {
		fprintf(stderr, "keep image inspect: %s: %s\n", argv[argc - 1],
		    err);
		return 1;
	}
	units_format_size(mem, sizeof(mem), image_memory(img));
	if (json) {
		json_t *o = json_object(), *cmds = json_array(),
		       *files = json_array(), *caps = json_array();
		char *s;

		json_object_set_new(o, "name", json_string(image_name(img)));
		json_object_set_new(
		    o, "version", json_string(image_version(img)));
		json_object_set_new(
		    o, "memory", json_integer((json_int_t)image_memory(img)));
		for (int i = 0; i < CAP_COUNT; i++)
			if (image_caps(img) & CAP_BIT(i))
				json_array_append_new(
				    caps, json_string(cap_name(i)));
		json_object_set_new(o, "capabilities", caps);
		for (size_t i = 0; i < image_ncommands(img); i++) {
			const struct image_command *c =
			    image_command_at(img, i);
			json_array_append_new(cmds,
			    json_pack("{s:s,s:s,s:s}", "name", c->name, "argv0",
			        c->argv0, "program", c->program->path));
		}
		json_object_set_new(o, "commands", cmds);
		for (size_t i = 0; i < image_nfiles(img); i++) {
			const struct image_file *f = image_file_at(img, i);
			json_array_append_new(files,
			    json_pack("{s:s,s:I,s:i}", "path", f->path, "size",
			        (json_int_t)f->len, "mode", (int)f->mode));
		}
		json_object_set_new(o, "files", files);
		json_object_set_new(o, "signer",
		    image_is_signed(img)
		        ? json_stringn(image_signer(img),
		              strnlen(image_signer(img), IMAGE_KID_MAX))
		        : json_null());
		json_object_set_new(o, "signature_verified", json_false());
		s = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
		printf("%s\n", s ? s : "{}");
		free(s);
		json_decref(o);
	} else {
		printf("name:     %s\nversion:  %s\nmemory:   %s\n",
		    image_name(img), image_version(img), mem);
		printf("caps:    ");
		for (int i = 0; i < CAP_COUNT; i++)
			if (image_caps(img) & CAP_BIT(i))
				printf(" %s", cap_name(i));
		printf("\ncommands:\n");
		for (size_t i = 0; i < image_ncommands(img); i++) {
			const struct image_command *c =
			    image_command_at(img, i);
			printf("  %-12s %s (argv0 %s)\n", c->name,
			    c->program->path, c->argv0);
		}
		printf("files:\n");
		for (size_t i = 0; i < image_nfiles(img); i++) {
			const struct image_file *f = image_file_at(img, i);
			printf("  %04o %10llu %s\n", f->mode,
			    (unsigned long long)f->len, f->path);
		}
		if (image_is_signed(img))
			printf("signer:   %.*s (not verified; use keep image "
			       "verify)\n",
			    IMAGE_KID_MAX, image_signer(img));
		else
			printf("signer:   none (unsigned)\n");
	}
	image_close(img);
	return 0;
}

int
cmd_image(int argc, char **argv)
{
	if (cli_wants_help(argc, argv)) {
		image_usage_fp(stdout);
		return 0;
	}
	if (argc < 2)
		return image_usage();
	if (sodium_init() < 0)
		return 1;
	if (strcmp(argv[1], "build") == 0)
		return image_build(argc - 1, argv + 1);
	if (strcmp(argv[1], "sign") == 0)
		return image_sign_cmd(argc - 1, argv + 1);
	if (strcmp(argv[1], "verify") == 0)
		return image_verify_cmd(argc - 1, argv + 1);
	if (strcmp(argv[1], "inspect") == 0)
		return image_inspect(argc - 1, argv + 1);
	return image_usage();
}
