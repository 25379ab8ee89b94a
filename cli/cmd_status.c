/*
 * keep status [-f CONFIG]
 *
 * What an operator asks first on a box: which keepd processes run, which
 * versions, which policy, how big the store is, which limits apply. It
 * reads only local state, as root on the appliance, and needs no token
 * (the production policy grants no one /metrics): the configuration, the
 * processes in /proc whose root or working directory is inside the state
 * directory (each child is chrooted there, so several keepd instances on
 * one box are told apart), the policy files as on disk, and the size of
 * the LMDB environment. Liveness is the public /healthz.
 *
 * Exit 0 when keepd runs for this configuration, 1 when it does not (or
 * the configuration does not load), 2 on a usage error.
 */
#include <sys/socket.h>
#include <sys/stat.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <glob.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cmd.h"
#include "host/config.h"
#include "host/store/store.h"
#include "lang/lang.h"
#include "lib/caps.h"
#include "lib/units.h"
#include "policy/policy.h"

#ifndef KEEP_VERSION
#define KEEP_VERSION "0.1.0"
#endif
#define TITLE_MAX 64

/* The usage, on stdout when asked for (--help), else on stderr. */
static int
status_usage_to(FILE *fp, int status)
{
	fprintf(fp, "usage: keep status [-f CONFIG]\n");
	return status;
}

static int
status_usage(void)
{
	return status_usage_to(stderr, EXIT_USAGE);
}

/* The name of uid from /etc/passwd (keep is static: no NSS), or "?". */
static void
user_name(uid_t uid, char *out, size_t len)
{
	char line[512], *name, *pw, *id;
	FILE *fp;

	snprintf(out, len, "uid %u", (unsigned)uid);
	if ((fp = fopen("/etc/passwd", "r")) == NULL)
		return;
	while (fgets(line, sizeof(line), fp) != NULL) {
		pw = line;
		name = strsep(&pw, ":");
		if (strsep(&pw, ":") == NULL || (id = strsep(&pw, ":")) == NULL)
			continue;
		if ((uid_t)strtoul(id, NULL, 10) == uid) {
			snprintf(out, len, "%s", name);
			break;
		}
	}
	fclose(fp);
}

/* Whether path (a /proc link target) is dir or inside it. */
static int
inside(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	return strncmp(path, dir, n) == 0 &&
	    (path[n] == '\0' || path[n] == '/');
}

static int
read_small(const char *path, char *buf, size_t len)
{
	FILE *fp;
	size_t n;

	if ((fp = fopen(path, "r")) == NULL)
		return -1;
	n = fread(buf, 1, len - 1, fp);
	fclose(fp);
	buf[n] = '\0';
	return (int)n;
}

/* The keepd processes of the instance whose state directory is state:
 * its children (chrooted or working inside it) and their parent. */
static int
show_processes(const char *state)
{
	char p[320], link[PATH_MAX], title[TITLE_MAX], st[4096], *s, who[64];
	pid_t parent = 0, ppid;
	struct dirent *de;
	unsigned vms = 0;
	int n = 0, len, pass;
	uid_t uid;
	DIR *d;

	/* Pass 0: the children, and so their parent's pid; pass 1: it. */
	for (pass = 0; pass < 2; pass++) {
		if ((d = opendir("/proc")) == NULL)
			return 0;
		while ((de = readdir(d)) != NULL) {
			if (de->d_name[0] < '0' || de->d_name[0] > '9')
				continue;
			snprintf(p, sizeof(p), "/proc/%s/cmdline", de->d_name);
			if (read_small(p, title, sizeof(title)) <= 0 ||
			    strncmp(title, "keepd: ", 7) != 0)
				continue;
			snprintf(p, sizeof(p), "/proc/%s/status", de->d_name);
			if (read_small(p, st, sizeof(st)) <= 0 ||
			    (s = strstr(st, "PPid:")) == NULL)
				continue;
			ppid = (pid_t)strtol(s + 5, NULL, 10);
			uid = (s = strstr(st, "Uid:")) != NULL
			    ? (uid_t)strtoul(s + 4, NULL, 10)
			    : (uid_t)-1;
			if (pass == 1) {
				if (atoi(de->d_name) != parent)
					continue;
			} else {
				snprintf(
				    p, sizeof(p), "/proc/%s/root", de->d_name);
				len = (int)readlink(p, link, sizeof(link) - 1);
				link[len > 0 ? len : 0] = '\0';
				if (!inside(link, state)) {
					snprintf(p, sizeof(p), "/proc/%s/cwd",
					    de->d_name);
					len = (int)readlink(
					    p, link, sizeof(link) - 1);
					link[len > 0 ? len : 0] = '\0';
					if (!inside(link, state))
						continue;
				}
				if (strncmp(title, "keepd: vm", 9) == 0 &&
				    (title[9] == '\0' || title[9] == ' ')) {
					vms++;
					continue;
				}
				if (parent == 0 || ppid < parent)
					parent = ppid;
			}
			user_name(uid, who, sizeof(who));
			printf(
			    "  %-8s %-16s user %s\n", de->d_name, title, who);
			n++;
		}
		closedir(d);
		if (parent == 0)
			break;
	}
	if (vms > 0)
		printf("  and %u keepd: vm processes (running guests)\n", vms);
	return n;
}

/* A string field "name":"value" of a small JSON reply, into out ("" when
 * absent); only plain characters are taken, up to the closing quote. */
static void
json_field(const char *json, const char *name, char *out, size_t len)
{
	char key[32];
	const char *p;
	size_t n = 0;

	out[0] = '\0';
	snprintf(key, sizeof(key), "\"%s\":", name);
	if ((p = strstr(json, key)) == NULL)
		return;
	p += strlen(key);
	while (*p == ' ')
		p++;
	if (*p++ != '"')
		return;
	while (*p != '\0' && *p != '"' && *p != '\\' && n + 1 < len)
		out[n++] = *p++;
	out[n] = '\0';
}

/* GET /healthz on the configured listener; returns the HTTP status,
 * and the body's "platform" and "reason" into the buffers (or ""). */
static int
healthz(const struct keepd_config *cfg, char *platform, size_t plen,
    char *reason, size_t rlen)
{
	struct sockaddr_storage ss;
	struct sockaddr_in *in4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
	static const char req[] =
	    "GET /healthz HTTP/1.1\r\nHost: keep\r\nConnection: close\r\n\r\n";
	char buf[1024];
	struct timeval tv = { 2, 0 };
	socklen_t sl;
	ssize_t got;
	int fd, code = 0;

	memset(&ss, 0, sizeof(ss));
	if (inet_pton(AF_INET, cfg->listen_address, &in4->sin_addr) == 1) {
		in4->sin_family = AF_INET;
		in4->sin_port = htons(cfg->listen_port);
		sl = sizeof(*in4);
	} else if (inet_pton(AF_INET6, cfg->listen_address, &in6->sin6_addr) ==
	    1) {
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(cfg->listen_port);
		sl = sizeof(*in6);
	} else
		return 0;
	/* 0.0.0.0 and :: are reached on loopback. */
	if (ss.ss_family == AF_INET && in4->sin_addr.s_addr == INADDR_ANY)
		in4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (ss.ss_family == AF_INET6 &&
	    IN6_IS_ADDR_UNSPECIFIED(&in6->sin6_addr))
		in6->sin6_addr = in6addr_loopback;
	if ((fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return 0;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&ss, sl) == 0 &&
	    write(fd, req, sizeof(req) - 1) == (ssize_t)sizeof(req) - 1 &&
	    (got = read(fd, buf, sizeof(buf) - 1)) > 12) {
		buf[got] = '\0';
		if (strncmp(buf, "HTTP/1.", 7) == 0)
			code = atoi(buf + 9);
		json_field(buf, "platform", platform, plen);
		json_field(buf, "reason", reason, rlen);
	}
	close(fd);
	return code;
}

static char *
policy_text(const char *dir, size_t *len, size_t *nfiles)
{
	char pattern[CONFIG_PATH_MAX + 16], err[512], *text = NULL;
	glob_t g;

	/* As keepd's parent reads them (lang_source_load), so that the
	 * hash is the one keepd logs. */
	*len = *nfiles = 0;
	snprintf(pattern, sizeof(pattern), "%s/*.policy", dir);
	memset(&g, 0, sizeof(g));
	if (glob(pattern, 0, NULL, &g) == 0) {
		*nfiles = g.gl_pathc;
		if (lang_source_load((const char *const *)g.gl_pathv,
		        g.gl_pathc, &text, len, err, sizeof(err)) != 0) {
			printf("  %s\n", err);
			text = NULL;
			*len = 0;
		}
	}
	globfree(&g);
	return text;
}

static void
print_limit(const char *label, uint64_t v, int duration)
{
	char b[64];

	if (duration)
		units_format_duration(b, sizeof(b), v);
	else
		units_format_size(b, sizeof(b), v);
	printf("  %-18s %s\n", label, b);
}

static void
show_policy(const struct keepd_config *cfg)
{
	const struct policy_limits *l;
	struct policy *p = NULL;
	char err[512], b[64], hex[65], *text;
	size_t len, nfiles, i;
	uint32_t k;

	text = policy_text(cfg->policy_dir, &len, &nfiles);
	printf("policy: %s, %zu file%s\n", cfg->policy_dir, nfiles,
	    nfiles == 1 ? "" : "s");
	if (nfiles == 0 ||
	    policy_compile_text(cfg->policy_dir, text != NULL ? text : "", len,
	        &p, err, sizeof(err)) != POLICY_OK) {
		printf("  %s\n",
		    nfiles == 0 ? "none: every request is denied" : err);
		free(text);
		return;
	}
	for (i = 0; i < sizeof(p->hash); i++)
		snprintf(hex + 2 * i, 3, "%02x", p->hash[i]);
	printf("  blake2b %s (as keepd loads it and logs it)\n", hex);
	printf("  %u principals, %u rules\n", p->npr, p->nrules);
	if (p->npr > 0)
		printf("  %-20s %-9s %-9s %-5s %-10s %-7s %-7s %s\n", "quotas",
		    "read", "write", "conc", "budget", "memory", "timeout",
		    "output");
	for (k = 0; k < p->npr; k++) {
		l = &p->pr[k].lim;
		printf("  %-20.20s", p->pr[k].name);
		for (i = 0; i < 2; i++) {
			if (l->rate_count[i] != 0)
				snprintf(b, sizeof(b), "%llu/%llus",
				    (unsigned long long)l->rate_count[i],
				    (unsigned long long)l->rate_period_ms[i] /
				        1000);
			else
				snprintf(b, sizeof(b), "-");
			printf(" %-9s", b);
		}
		if (l->concurrent)
			printf(" %-5u", l->concurrent);
		else
			printf(" %-5s", "-");
		if (l->budget != POLICY_UNLIMITED)
			printf(" %-10llu", (unsigned long long)l->budget);
		else
			printf(" %-10s", "-");
		units_format_size(b, sizeof(b), l->mem_max);
		printf(" %-7s", l->mem_max ? b : "-");
		units_format_duration(b, sizeof(b), l->timeout_ms);
		printf(" %-7s", l->timeout_ms ? b : "-");
		units_format_size(b, sizeof(b), l->output_max);
		printf(" %s\n", l->output_max ? b : "-");
	}
	policy_free(p);
	free(text);
}

static void
show_store(const char *state)
{
	char p[PATH_MAX + 32];
	struct store_config cfg;
	struct store *st;
	struct stat sb;
	uint64_t room;

	snprintf(p, sizeof(p), "%s/db/data.mdb", state);
	if (stat(p, &sb) == -1) {
		printf("store: %s: %s\n", p, strerror(errno));
		return;
	}
	memset(&cfg, 0, sizeof(cfg));
	printf("store: %s, schema %d\n", p, STORE_SCHEMA_VERSION);
	printf("  %lld bytes (file), %lld bytes on disk\n",
	    (long long)sb.st_size, (long long)sb.st_blocks * 512);
	snprintf(p, sizeof(p), "%s/db", state);
	cfg.map_size = 0;
	cfg.map_max = STORE_KEEPD_MAP_MAX;
	cfg.readonly = 1;
	if (store_open(p, &cfg, &st) != STORE_OK)
		return;
	room = store_room(st);
	store_close(st);
	if (room == UINT64_MAX)
		return;
	printf("  %llu MiB left to write (the map's and the disk's room, the "
	       "reserve included)\n",
	    (unsigned long long)(room >> 20));
	if (room < STORE_UNATTRIBUTED_FLOOR)
		printf(
		    "  warning: below %llu MiB: refusals without a token are "
		    "no longer recorded, and when it is spent every request "
		    "is refused 507; free room now: keep audit prune, or a "
		    "larger disk (docs/store.md)\n",
		    (unsigned long long)(STORE_UNATTRIBUTED_FLOOR >> 20));
	else if (room < STORE_ROOM_WARN)
		printf("  warning: the store is near full (below %llu MiB "
		       "left): prune the audit log (keep audit prune) or "
		       "give the state directory more room (docs/store.md)\n",
		    (unsigned long long)(STORE_ROOM_WARN >> 20));
}

int
cmd_status(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *path = CONFIG_DEFAULT_PATH;
	struct keepd_config cfg;
	struct config_diag diag;
	char state[PATH_MAX];
	int ch, nproc, health;
	char platform[16], reason[160];

	if (cli_wants_help(argc, argv))
		return status_usage_to(stdout, 0);
	optind = 1;
	while ((ch = getopt_long(argc, argv, "f:h", opts, NULL)) != -1) {
		switch (ch) {
		case 'f':
			path = optarg;
			break;
		case 'h':
			return status_usage_to(stdout, 0);
		default:
			return status_usage();
		}
	}
	if (optind != argc)
		return status_usage();
	if (config_load(path, &cfg, &diag) != CONFIG_OK) {
		fprintf(stderr, "keep status: %s\n",
		    diag.nerrors > 0 ? diag.errors[0] : path);
		return 1;
	}
	if (realpath(cfg.state_dir, state) == NULL)
		snprintf(state, sizeof(state), "%s", cfg.state_dir);

	printf("keep %s, configuration %s\n", KEEP_VERSION, path);
	health =
	    healthz(&cfg, platform, sizeof(platform), reason, sizeof(reason));
	printf("keepd: %s, API %s port %u: %s\n", state, cfg.listen_address,
	    cfg.listen_port,
	    health == 200    ? "healthy (/healthz 200)"
	        : health > 0 ? "answers, but /healthz is not 200"
	                     : "not answering");
	/* What runs guests (docs/vmm.md): keepd's word when it answers,
	 * else what keepd.yaml and this box would give. */
	if (platform[0] != '\0')
		printf(
		    "platform: %s (keepd.yaml: %s)\n", platform, cfg.platform);
	else
		printf("platform: keepd.yaml says %s; /dev/kvm %s here\n",
		    cfg.platform,
		    access("/dev/kvm", R_OK | W_OK) == 0 ? "opens"
		                                         : "does not open");
	if (reason[0] != '\0')
		printf("  warning: %s\n", reason);
	nproc = show_processes(state);
	if (nproc == 0)
		printf("  no keepd process for this state directory\n");
	show_policy(&cfg);
	show_store(state);
	printf("limits (keepd.yaml):\n");
	printf("  %-18s %u\n", "max_sandboxes", cfg.max_sandboxes);
	printf("  %-18s %u\n", "max_connections", cfg.max_connections);
	print_limit("max_request_body", cfg.max_request_body, 0);
	print_limit("memory_default", cfg.memory_default, 0);
	print_limit("memory_max", cfg.memory_max, 0);
	print_limit("timeout_default", cfg.timeout_default_ms, 1);
	print_limit("timeout_max", cfg.timeout_max_ms, 1);
	print_limit("output_max", cfg.output_max, 0);
	print_limit("workspace_max", cfg.workspace_max, 0);
	printf("  %-18s %zu\n", "issuer keys", cfg.nissuer_keys);
	return nproc > 0 && health == 200 ? 0 : 1;
}
