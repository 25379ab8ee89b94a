/*
 * keep api: a client of the HTTP API on libcurl.
 *
 *   keep api [--url URL] [--token TOKEN] [--json] COMMAND ...
 *
 * The token comes from --token or KEEP_TOKEN. Human output by default;
 * --json prints the server's JSON reply unchanged. Exit status: 0 success,
 * 1 an error reply or a transport failure (the error envelope's message
 * and code on stderr), 2 usage; `run` and `exec` exit with the run's own
 * exit code when it is not 0.
 */
#include <sys/ioctl.h>

#include <curl/curl.h>
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include <sodium.h>

#include "cli/cmd.h"
#include "host/http/ws.h"

#define DEFAULT_URL "http://127.0.0.1:8421"
#define MAX_REPLY (64UL << 20)

struct client {
	const char *url;
	const char *token;
	const char *cacert; /* NULL: the system's trust store */
	int json;
	CURL *curl;
	/* A stream's reader instead of the reply buffer (files watch). */
	size_t (*sink)(char *, size_t, size_t, void *);
	void *sink_arg;
};

struct reply {
	long status;
	char *data;
	size_t len;
	int too_big;
};

static void
usage_fp(FILE *fp)
{
	fprintf(fp,
	    "usage: keep api [--url URL] [--token TOKEN] [--cacert PEM] "
	    "[--json] "
	    "COMMAND\n"
	    "  sandbox create [--image IMAGE] [--ttl SECONDS] [--env K=V]...\n"
	    "  sandbox list | get ID | delete ID | token ID\n"
	    "  sandbox fork ID [--ttl SECONDS]\n"
	    "  sandbox link ID PORT [--ttl DURATION]\n"
	    "  exec [--language python|javascript] [--context CTX] "
	    "[--env K=V]... SANDBOX CODE|-\n"
	    "  contexts create SANDBOX [--cwd DIR | --snapshot NAME] | list "
	    "SANDBOX\n"
	    "  contexts delete SANDBOX CTX | restart SANDBOX CTX | fork "
	    "SANDBOX CTX\n"
	    "  contexts snapshot SANDBOX CTX NAME | snapshots SANDBOX CTX\n"
	    "  contexts snapshot-delete SANDBOX CTX NAME\n"
	    "  run [--env K=V]... [--cwd DIR] SANDBOX CMD [ARG...]\n"
	    "  files put SANDBOX LOCAL REMOTE | get SANDBOX REMOTE [LOCAL]\n"
	    "  files ls SANDBOX [PATH] | rm SANDBOX PATH | mkdir SANDBOX PATH\n"
	    "  files watch SANDBOX DIR\n"
	    "  env get SANDBOX | set SANDBOX K=V... | unset SANDBOX KEY\n"
	    "  secrets set NAME [VALUE|-] | list | delete NAME\n"
	    "  terminal SANDBOX\n"
	    "  audit [--limit N]\n"
	    "  revoke [--fleet FILE] [--expires-at UNIX] [--] JTI\n"
	    "  schedules create (--cron EXPR | --at TIME) [--tz ZONE]\n"
	    "      (--sandbox ID | --image IMAGE) [--missed skip|once] "
	    "[--disabled]\n"
	    "      [--name NAME] [--timeout MS]\n"
	    "      (--exec [--language L] CODE|- | --cmd CMD [ARG...])\n"
	    "  schedules create --spec FILE|-\n"
	    "  schedules update ID [--enable|--disable] [--cron EXPR] "
	    "[--at TIME]\n"
	    "      [--tz ZONE] [--missed skip|once] [--spec FILE|-]\n"
	    "  schedules list | get ID | delete ID | runs ID\n"
	    "  health\n");
}

/* The usage, on stdout when asked for (--help), else on stderr. */
static void
usage(void)
{
	usage_fp(stderr);
}

static size_t
on_data(char *p, size_t size, size_t n, void *arg)
{
	struct reply *r = arg;
	size_t len = size * n;
	char *d;

	if (r->len + len > MAX_REPLY) {
		r->too_big = 1;
		return 0;
	}
	if ((d = realloc(r->data, r->len + len + 1)) == NULL)
		return 0;
	r->data = d;
	memcpy(r->data + r->len, p, len);
	r->len += len;
	r->data[r->len] = '\0';
	return len;
}

/*
 * One request. path is appended to the base URL; body may be NULL.
 * Returns 0 with *r filled (any status), -1 on a transport failure.
 */
static int
request(struct client *c, const char *method, const char *path,
    const void *body, size_t blen, const char *ctype, struct reply *r)
{
	struct curl_slist *h = NULL;
	char *url, *auth = NULL;
	CURLcode rc;

	memset(r, 0, sizeof(*r));
	if (asprintf(&url, "%s%s", c->url, path) == -1)
		return -1;
	curl_easy_reset(c->curl);
	curl_easy_setopt(c->curl, CURLOPT_URL, url);
	curl_easy_setopt(c->curl, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(
	    c->curl, CURLOPT_WRITEFUNCTION, c->sink ? c->sink : on_data);
	curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, c->sink ? c->sink_arg : r);
	curl_easy_setopt(c->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c->curl, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c->curl, CURLOPT_CONNECTTIMEOUT, 10L);
	if (c->cacert != NULL)
		curl_easy_setopt(c->curl, CURLOPT_CAINFO, c->cacert);
	if (c->token != NULL) {
		if (asprintf(&auth, "Authorization: Bearer %s", c->token) ==
		    -1) {
			free(url);
			return -1;
		}
		h = curl_slist_append(h, auth);
	}
	/* Bodies are small; waiting for 100-continue only adds latency. */
	h = curl_slist_append(h, "Expect:");
	if (body != NULL) {
		char ct[96];
		snprintf(ct, sizeof(ct), "Content-Type: %s", ctype);
		h = curl_slist_append(h, ct);
		curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(
		    c->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)blen);
	}
	curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, h);
	rc = curl_easy_perform(c->curl);
	curl_slist_free_all(h);
	free(auth);
	free(url);
	if (rc != CURLE_OK) {
		fprintf(stderr, "keep api: %s: %s\n", c->url,
		    r->too_big ? "reply too large" : curl_easy_strerror(rc));
		free(r->data);
		r->data = NULL;
		return -1;
	}
	curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &r->status);
	return 0;
}

static int
request_json(struct client *c, const char *method, const char *path,
    json_t *body, struct reply *r)
{
	char *s = NULL;
	int rc;

	if (body != NULL &&
	    (s = json_dumps(body, JSON_COMPACT | JSON_ENSURE_ASCII)) == NULL) {
		fprintf(stderr, "keep api: out of memory\n");
		return -1;
	}
	rc = request(
	    c, method, path, s, s ? strlen(s) : 0, "application/json", r);
	free(s);
	json_decref(body);
	return rc;
}

/* Print the error envelope of a failed reply; returns 1. */
static int
report_error(const struct reply *r)
{
	json_t *j = r->data ? json_loadb(r->data, r->len, 0, NULL) : NULL;
	json_t *e = json_object_get(j, "error");
	const char *msg = json_string_value(json_object_get(e, "message"));
	const char *code = json_string_value(json_object_get(e, "code"));

	if (msg != NULL && code != NULL)
		fprintf(stderr, "keep api: %s (%s, HTTP %ld)\n", msg, code,
		    r->status);
	else
		fprintf(stderr, "keep api: HTTP %ld\n", r->status);
	json_decref(j);
	return 1;
}

/* Parse a 2xx JSON reply, or report. Returns NULL on any failure. */
static json_t *
ok_json(struct client *c, struct reply *r)
{
	json_t *j;

	if (r->status < 200 || r->status > 299) {
		report_error(r);
		return NULL;
	}
	if (r->status == 204)
		return json_object();
	if ((j = json_loadb(r->data ? r->data : "", r->len, 0, NULL)) == NULL) {
		fprintf(stderr, "keep api: the server's reply is not JSON\n");
		return NULL;
	}
	if (c->json)
		printf("%.*s\n", (int)r->len, r->data);
	return j;
}

static const char *
jstr(json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));

	return s ? s : "-";
}

static char *
esc(struct client *c, const char *s)
{
	char *e = curl_easy_escape(c->curl, s, 0);

	if (e == NULL) {
		fprintf(stderr, "keep api: out of memory\n");
		exit(1);
	}
	return e;
}

static int
valid_id(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 64)
		return 0;
	return strspn(s,
	           "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	           "0123456789-_.") == n;
}

static int
need_id(const char *s)
{
	if (!valid_id(s)) {
		fprintf(stderr, "keep api: invalid sandbox id\n");
		return 0;
	}
	return 1;
}

static void
print_sandbox(json_t *s)
{
	printf("%-24s %-10s %-8s %s\n", jstr(s, "id"), jstr(s, "image"),
	    jstr(s, "status"), jstr(s, "expires_at"));
}

static int
kv_into(json_t *obj, const char *arg)
{
	const char *eq = strchr(arg, '=');
	char *k;

	if (eq == NULL || eq == arg) {
		fprintf(stderr, "keep api: expected KEY=VALUE, got %s\n", arg);
		return -1;
	}
	if ((k = strndup(arg, (size_t)(eq - arg))) == NULL)
		return -1;
	json_object_set_new(obj, k, json_string(eq + 1));
	free(k);
	return 0;
}

/* A created (or forked) sandbox: its id and the token scoped to it. */
static void
print_created(json_t *j)
{
	printf("id: %s\nauth_token: %s\ntoken_expires_at: %s\n", jstr(j, "id"),
	    jstr(j, "auth_token"), jstr(j, "token_expires_at"));
}

static int
cmd_sandbox(struct client *c, int argc, char **argv)
{
	struct reply r;
	json_t *j;
	char path[256];
	int rc = 1;

	if (argc < 1) {
		usage();
		return EXIT_USAGE;
	}
	if (strcmp(argv[0], "create") == 0) {
		json_t *body = json_pack("{s:s}", "image", "python");
		json_t *env = json_object();
		for (int i = 1; i < argc; i++) {
			if (strcmp(argv[i], "--image") == 0 && i + 1 < argc)
				json_object_set_new(
				    body, "image", json_string(argv[++i]));
			else if (strcmp(argv[i], "--ttl") == 0 && i + 1 < argc)
				json_object_set_new(body, "ttl",
				    json_integer(strtoll(argv[++i], NULL, 10)));
			else if (strcmp(argv[i], "--env") == 0 &&
			    i + 1 < argc) {
				if (kv_into(env, argv[++i]) != 0)
					return EXIT_USAGE;
			} else {
				usage();
				return EXIT_USAGE;
			}
		}
		json_object_set_new(body, "env", env);
		if (request_json(c, "POST", "/v1/sandboxes", body, &r) != 0)
			return 1;
		if ((j = ok_json(c, &r)) != NULL) {
			if (!c->json)
				print_created(j);
			rc = 0;
		}
	} else if (strcmp(argv[0], "fork") == 0 &&
	    (argc == 2 || (argc == 4 && strcmp(argv[2], "--ttl") == 0))) {
		json_t *body = argc == 4
		    ? json_pack("{s:I}", "ttl",
		          (json_int_t)strtoll(argv[3], NULL, 10))
		    : json_object();

		if (!need_id(argv[1])) {
			json_decref(body);
			return 1;
		}
		snprintf(path, sizeof(path), "/v1/sandboxes/%s/fork", argv[1]);
		if (request_json(c, "POST", path, body, &r) != 0)
			return 1;
		if ((j = ok_json(c, &r)) != NULL) {
			if (!c->json)
				print_created(j);
			rc = 0;
		}
	} else if (strcmp(argv[0], "link") == 0 &&
	    (argc == 3 || (argc == 5 && strcmp(argv[3], "--ttl") == 0))) {
		/* A signed, expiring link to a port (no token needed). */
		char *end;
		long port = strtol(argv[2], &end, 10);
		json_t *body;

		if (!need_id(argv[1]))
			return 1;
		if (*end != '\0' || port < 1 || port > 65535) {
			fprintf(stderr, "keep api: bad port '%s'\n", argv[2]);
			return EXIT_USAGE;
		}
		body = argc == 5
		    ? json_pack("{s:i,s:s}", "port", (int)port, "ttl", argv[4])
		    : json_pack("{s:i}", "port", (int)port);
		snprintf(path, sizeof(path), "/v1/sandboxes/%s/links", argv[1]);
		if (request_json(c, "POST", path, body, &r) != 0)
			return 1;
		if ((j = ok_json(c, &r)) != NULL) {
			if (!c->json) {
				printf("url: %s\n", jstr(j, "url"));
				if (json_object_get(j, "host_url") != NULL)
					printf("host_url: %s\n",
					    jstr(j, "host_url"));
				printf("id: %s\nexpires_at: %s\n",
				    jstr(j, "id"), jstr(j, "expires_at"));
			}
			rc = 0;
		}
	} else if (strcmp(argv[0], "list") == 0 && argc == 1) {
		if (request(c, "GET", "/v1/sandboxes?limit=100", NULL, 0, NULL,
		        &r) != 0)
			return 1;
		if ((j = ok_json(c, &r)) != NULL) {
			json_t *s;
			size_t i;
			if (!c->json)
				json_array_foreach(
				    json_object_get(j, "sandboxes"), i, s)
				    print_sandbox(s);
			rc = 0;
		}
	} else if ((strcmp(argv[0], "get") == 0 ||
	               strcmp(argv[0], "delete") == 0 ||
	               strcmp(argv[0], "token") == 0) &&
	    argc == 2) {
		int del = argv[0][0] == 'd', tok = argv[0][0] == 't';
		if (!need_id(argv[1]))
			return 1;
		snprintf(path, sizeof(path), "/v1/sandboxes/%s%s", argv[1],
		    tok ? "/token" : "");
		if (request(c,
		        del       ? "DELETE"
		            : tok ? "POST"
		                  : "GET",
		        path, NULL, 0, NULL, &r) != 0)
			return 1;
		if ((j = ok_json(c, &r)) != NULL) {
			if (!c->json && tok)
				printf("auth_token: %s\ntoken_expires_at: %s\n",
				    jstr(j, "auth_token"),
				    jstr(j, "token_expires_at"));
			else if (!c->json && !del)
				print_sandbox(j);
			rc = 0;
		}
	} else {
		usage();
		return EXIT_USAGE;
	}
	json_decref(j);
	free(r.data);
	return rc;
}

/* Print a run reply; the exit status is the run's. */
/* A context cell's main result (as a REPL shows it) and its error. A
 * plain execute's reply has no execution_count: its output stays
 * exactly the program's. */
static void
print_cell(json_t *j)
{
	json_t *res, *err = json_object_get(j, "error"), *tb;
	size_t i;

	if (json_object_get(j, "execution_count") == NULL)
		return;
	json_array_foreach(json_object_get(j, "results"), i,
	    res) if (json_is_true(json_object_get(res, "is_main_result")) &&
	    json_is_string(json_object_get(res, "text")))
	    printf("%s\n", json_string_value(json_object_get(res, "text")));
	if (!json_is_object(err))
		return;
	tb = json_object_get(err, "traceback");
	if (json_is_string(tb) && json_string_length(tb) > 0)
		fputs(json_string_value(tb), stderr);
	else
		fprintf(stderr, "%s: %s\n",
		    json_string_value(json_object_get(err, "name")),
		    json_string_value(json_object_get(err, "value")));
}

static int
print_run(struct client *c, struct reply *r)
{
	json_t *j = ok_json(c, r);
	json_t *out, *err, *reason;
	int code;

	if (j == NULL)
		return 1;
	out = json_object_get(j, "stdout");
	err = json_object_get(j, "stderr");
	reason = json_object_get(j, "reason");
	code = (int)json_integer_value(json_object_get(j, "exit_code"));
	if (!c->json) {
		fwrite(
		    json_string_value(out), 1, json_string_length(out), stdout);
		fwrite(
		    json_string_value(err), 1, json_string_length(err), stderr);
		print_cell(j);
		if (json_is_string(reason))
			fprintf(stderr, "keep api: run stopped: %s\n",
			    json_string_value(reason));
	}
	json_decref(j);
	return code < 0 || code > 255 ? 1 : code;
}

static char *
read_all(FILE *fp, size_t *len)
{
	char *buf = NULL, *p;
	size_t cap = 0, n;

	*len = 0;
	for (;;) {
		if (*len == cap) {
			cap = cap ? cap * 2 : 65536;
			if (cap > MAX_REPLY ||
			    (p = realloc(buf, cap)) == NULL) {
				free(buf);
				return NULL;
			}
			buf = p;
		}
		n = fread(buf + *len, 1, cap - *len, fp);
		*len += n;
		if (n == 0)
			break;
	}
	if (ferror(fp)) {
		free(buf);
		return NULL;
	}
	return buf;
}

static int
cmd_exec(struct client *c, int argc, char **argv)
{
	const char *lang = "python", *context = NULL;
	struct reply r;
	char path[256], *code = NULL;
	size_t len;
	json_t *body, *env = json_object();
	int rc;

	while (argc >= 2 &&
	    (strcmp(argv[0], "--language") == 0 ||
	        strcmp(argv[0], "--context") == 0 ||
	        strcmp(argv[0], "--env") == 0)) {
		if (strcmp(argv[0], "--language") == 0)
			lang = argv[1];
		else if (strcmp(argv[0], "--env") == 0) {
			if (kv_into(env, argv[1]) != 0) {
				json_decref(env);
				return EXIT_USAGE;
			}
		} else
			context = argv[1];
		argc -= 2;
		argv += 2;
	}
	if (argc != 2) {
		json_decref(env);
		usage();
		return EXIT_USAGE;
	}
	if (!need_id(argv[0])) {
		json_decref(env);
		return 1;
	}
	if (strcmp(argv[1], "-") == 0) {
		if ((code = read_all(stdin, &len)) == NULL) {
			fprintf(stderr, "keep api: cannot read stdin\n");
			json_decref(env);
			return 1;
		}
	} else if ((code = strdup(argv[1])) == NULL) {
		json_decref(env);
		return 1;
	} else
		len = strlen(code);
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/execute", argv[0]);
	body = json_pack("{s:s%,s:s}", "code", code, len, "language", lang);
	if (json_object_size(env) > 0)
		json_object_set(body, "env_vars", env);
	json_decref(env);
	if (context != NULL)
		json_object_set_new(body, "context_id", json_string(context));
	rc = request_json(c, "POST", path, body, &r);
	free(code);
	if (rc != 0)
		return 1;
	rc = print_run(c, &r);
	free(r.data);
	return rc;
}

static int
cmd_run_remote(struct client *c, int argc, char **argv)
{
	struct reply r;
	char path[256];
	json_t *args, *env = json_object(), *body;
	const char *cwd = NULL;
	int rc;

	while (argc >= 2 &&
	    (strcmp(argv[0], "--env") == 0 || strcmp(argv[0], "--cwd") == 0)) {
		if (strcmp(argv[0], "--cwd") == 0)
			cwd = argv[1];
		else if (kv_into(env, argv[1]) != 0) {
			json_decref(env);
			return EXIT_USAGE;
		}
		argc -= 2;
		argv += 2;
	}
	if (argc < 2) {
		json_decref(env);
		usage();
		return EXIT_USAGE;
	}
	if (!need_id(argv[0])) {
		json_decref(env);
		return 1;
	}
	args = json_array();
	for (int i = 2; i < argc; i++)
		json_array_append_new(args, json_string(argv[i]));
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/commands/run", argv[0]);
	body = json_pack("{s:s,s:o}", "cmd", argv[1], "args", args);
	if (json_object_size(env) > 0)
		json_object_set(body, "env", env);
	if (cwd != NULL)
		json_object_set_new(body, "cwd", json_string(cwd));
	json_decref(env);
	if (request_json(c, "POST", path, body, &r) != 0)
		return 1;
	rc = print_run(c, &r);
	free(r.data);
	return rc;
}

/* files watch: the event stream as it comes, one line an event. */
struct watch_sink {
	struct client *c;
	struct reply err; /* an error reply's body */
	char line[8192];
	size_t len;
	char event[32];
	int ended;
};

static void
watch_line(struct watch_sink *w)
{
	json_t *j;

	w->line[w->len] = '\0';
	if (strncmp(w->line, "event: ", 7) == 0)
		strlcpy(w->event, w->line + 7, sizeof(w->event));
	else if (strncmp(w->line, "data: ", 6) == 0) {
		if (strcmp(w->event, "end") == 0)
			w->ended = 1;
		if (w->c->json)
			printf("%s %s\n", w->event, w->line + 6);
		else if ((j = json_loads(w->line + 6, 0, NULL)) != NULL) {
			if (json_object_get(j, "path") != NULL)
				printf("%s %s%s\n", w->event, jstr(j, "path"),
				    strcmp(jstr(j, "type"), "dir") == 0 ? "/"
				                                        : "");
			else if (json_object_get(j, "count") != NULL)
				printf("%s %lld\n", w->event,
				    (long long)json_integer_value(
				        json_object_get(j, "count")));
			else
				printf("%s %s\n", w->event, jstr(j, "reason"));
			json_decref(j);
		}
		fflush(stdout);
	}
	w->len = 0;
}

static size_t
watch_data(char *p, size_t size, size_t n, void *arg)
{
	struct watch_sink *w = arg;
	long status = 0;

	curl_easy_getinfo(w->c->curl, CURLINFO_RESPONSE_CODE, &status);
	if (status != 200)
		return on_data(p, size, n, &w->err);
	for (size_t i = 0; i < size * n; i++) {
		if (p[i] == '\n')
			watch_line(w);
		else if (w->len < sizeof(w->line) - 1)
			w->line[w->len++] = p[i];
	}
	return size * n;
}

static int
cmd_watch(struct client *c, const char *sbx, const char *dir)
{
	struct watch_sink w;
	struct reply r;
	char *path, *e = esc(c, dir);
	int rc;

	memset(&w, 0, sizeof(w));
	w.c = c;
	if (asprintf(&path, "/v1/sandboxes/%s/files/watch?path=%s", sbx, e) ==
	    -1) {
		curl_free(e);
		return 1;
	}
	curl_free(e);
	c->sink = watch_data;
	c->sink_arg = &w;
	rc = request(c, "GET", path, NULL, 0, NULL, &r);
	c->sink = NULL;
	free(path);
	if (rc != 0) {
		free(w.err.data);
		return 1;
	}
	curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &w.err.status);
	if (w.err.status != 200) {
		report_error(&w.err);
		free(w.err.data);
		return 1;
	}
	return w.ended ? 0 : 1;
}

static int
cmd_files(struct client *c, int argc, char **argv)
{
	struct reply r;
	char *path = NULL, *e;
	json_t *j = NULL;
	int rc = 1;

	if (argc < 3 || !need_id(argv[1])) {
		if (argc < 3)
			usage();
		return argc < 3 ? EXIT_USAGE : 1;
	}
	if (strcmp(argv[0], "watch") == 0 && argc == 3)
		return cmd_watch(c, argv[1], argv[2]);
	if (strcmp(argv[0], "put") == 0 && argc == 4) {
		FILE *fp = strcmp(argv[2], "-") ? fopen(argv[2], "rb") : stdin;
		char *data;
		size_t len;

		if (fp == NULL) {
			fprintf(stderr, "keep api: %s: %s\n", argv[2],
			    strerror(errno));
			return 1;
		}
		data = read_all(fp, &len);
		if (fp != stdin)
			fclose(fp);
		if (data == NULL) {
			fprintf(stderr, "keep api: cannot read %s\n", argv[2]);
			return 1;
		}
		e = esc(c, argv[3]);
		if (asprintf(&path, "/v1/sandboxes/%s/files/write?path=%s",
		        argv[1], e) == -1)
			path = NULL;
		curl_free(e);
		if (path == NULL ||
		    request(c, "POST", path, data, len,
		        "application/octet-stream", &r) != 0) {
			free(data);
			free(path);
			return 1;
		}
		free(data);
		if ((j = ok_json(c, &r)) != NULL)
			rc = 0;
	} else if (strcmp(argv[0], "get") == 0 && (argc == 3 || argc == 4)) {
		e = esc(c, argv[2]);
		if (asprintf(&path, "/v1/sandboxes/%s/files/read?path=%s",
		        argv[1], e) == -1)
			path = NULL;
		curl_free(e);
		if (path == NULL ||
		    request(c, "GET", path, NULL, 0, NULL, &r) != 0) {
			free(path);
			return 1;
		}
		if (r.status != 200)
			report_error(&r);
		else if (argc == 4 && strcmp(argv[3], "-") != 0) {
			FILE *fp = fopen(argv[3], "wb");
			if (fp == NULL ||
			    fwrite(r.data, 1, r.len, fp) != r.len ||
			    fclose(fp) != 0)
				fprintf(stderr, "keep api: %s: %s\n", argv[3],
				    strerror(errno));
			else
				rc = 0;
		} else {
			fwrite(r.data ? r.data : "", 1, r.len, stdout);
			rc = 0;
		}
	} else if ((strcmp(argv[0], "ls") == 0 && argc <= 3) ||
	    ((strcmp(argv[0], "rm") == 0 || strcmp(argv[0], "mkdir") == 0) &&
	        argc == 3)) {
		const char *verb = argv[0][0] == 'l' ? "list"
		    : argv[0][0] == 'r'              ? "remove"
		                                     : "mkdir";
		const char *method = argv[0][0] == 'l' ? "GET"
		    : argv[0][0] == 'r'                ? "DELETE"
		                                       : "POST";
		e = esc(c, argc == 3 ? argv[2] : "/");
		if (asprintf(&path, "/v1/sandboxes/%s/files/%s?path=%s",
		        argv[1], verb, e) == -1)
			path = NULL;
		curl_free(e);
		if (path == NULL ||
		    request(c, method, path, NULL, 0, NULL, &r) != 0) {
			free(path);
			return 1;
		}
		if ((j = ok_json(c, &r)) != NULL) {
			json_t *ent;
			size_t i;
			if (!c->json && verb[0] == 'l')
				json_array_foreach(
				    json_object_get(j, "entries"), i, ent)
				{
					printf("%-4s %10lld  %s\n",
					    jstr(ent, "type"),
					    (long long)json_integer_value(
					        json_object_get(ent, "size")),
					    jstr(ent, "name"));
				}
			rc = 0;
		}
	} else {
		usage();
		return EXIT_USAGE;
	}
	json_decref(j);
	free(r.data);
	free(path);
	return rc;
}

static int
cmd_env(struct client *c, int argc, char **argv)
{
	struct reply r;
	char path[256];
	json_t *j;
	int rc = 1;

	if (argc < 2) {
		usage();
		return EXIT_USAGE;
	}
	if (!need_id(argv[1]))
		return 1;
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/env", argv[1]);
	if (strcmp(argv[0], "get") == 0 && argc == 2) {
		if (request(c, "GET", path, NULL, 0, NULL, &r) != 0)
			return 1;
	} else if (strcmp(argv[0], "set") == 0 && argc >= 3) {
		json_t *env = json_object();
		for (int i = 2; i < argc; i++)
			if (kv_into(env, argv[i]) != 0) {
				json_decref(env);
				return EXIT_USAGE;
			}
		if (request_json(c, "PATCH", path,
		        json_pack("{s:o}", "env", env), &r) != 0)
			return 1;
	} else if (strcmp(argv[0], "unset") == 0 && argc == 3) {
		char *e = esc(c, argv[2]), *p;
		if (asprintf(&p, "%s?key=%s", path, e) == -1) {
			curl_free(e);
			return 1;
		}
		curl_free(e);
		rc = request(c, "DELETE", p, NULL, 0, NULL, &r);
		free(p);
		if (rc != 0)
			return 1;
		rc = 1;
	} else {
		usage();
		return EXIT_USAGE;
	}
	if ((j = ok_json(c, &r)) != NULL) {
		const char *k;
		json_t *v;
		if (!c->json)
			json_object_foreach(json_object_get(j, "env"), k, v)
			    printf("%s=%s\n", k, json_string_value(v));
		rc = 0;
	}
	json_decref(j);
	free(r.data);
	return rc;
}

/*
 * keep api secrets set NAME [VALUE|-] | list | delete NAME. Without a
 * VALUE (or with -) the value is read from stdin, one trailing newline
 * dropped, so that it never shows in a process listing.
 */
static int
cmd_secrets(struct client *c, int argc, char **argv)
{
	struct reply r;
	char *path = NULL, *value = NULL, *e;
	json_t *j, *x;
	size_t i, len = 0;
	int rc = 1;

	if (argc == 1 && strcmp(argv[0], "list") == 0) {
		if (request(c, "GET", "/v1/secrets", NULL, 0, NULL, &r) != 0)
			return 1;
	} else if (argc >= 2 && argc <= 3 && strcmp(argv[0], "set") == 0) {
		if (argc == 2 || strcmp(argv[2], "-") == 0) {
			if ((value = read_all(stdin, &len)) == NULL) {
				fprintf(
				    stderr, "keep api: cannot read stdin\n");
				return 1;
			}
			if (len > 0 && value[len - 1] == '\n')
				value[--len] = '\0';
		} else if ((value = strdup(argv[2])) != NULL)
			len = strlen(value);
		e = esc(c, argv[1]);
		if (value == NULL || e == NULL ||
		    asprintf(&path, "/v1/secrets/%s", e) == -1)
			path = NULL;
		curl_free(e);
		rc = path == NULL
		    ? -1
		    : request_json(c, "PUT", path,
		          json_pack("{s:s%}", "value", value, len), &r);
		if (value != NULL) {
			explicit_bzero(value, len);
			free(value);
		}
		free(path);
		if (rc != 0)
			return 1;
		rc = 1;
	} else if (argc == 2 && strcmp(argv[0], "delete") == 0) {
		e = esc(c, argv[1]);
		if (e == NULL || asprintf(&path, "/v1/secrets/%s", e) == -1)
			path = NULL;
		curl_free(e);
		if (path == NULL ||
		    request(c, "DELETE", path, NULL, 0, NULL, &r) != 0) {
			free(path);
			return 1;
		}
		free(path);
		if (r.status == 204) {
			free(r.data);
			return 0;
		}
	} else {
		usage();
		return EXIT_USAGE;
	}
	if ((j = ok_json(c, &r)) != NULL) {
		if (!c->json && (x = json_object_get(j, "secrets")) != NULL)
			for (i = 0; i < json_array_size(x); i++)
				printf("%-32s %-20s %s\n",
				    jstr(json_array_get(x, i), "name"),
				    jstr(json_array_get(x, i), "updated_at"),
				    jstr(json_array_get(x, i), "set_by"));
		else if (!c->json)
			printf(
			    "%s %s\n", jstr(j, "name"), jstr(j, "updated_at"));
		rc = 0;
	}
	json_decref(j);
	free(r.data);
	return rc;
}

/* ---- keep api terminal: a WebSocket client (docs/terminal.md) ---- */

static volatile sig_atomic_t term_resized;

static void
on_winch(int sig)
{
	(void)sig;
	term_resized = 1;
}

/* Send all of buf on the connected handle, waiting on its socket. */
static int
term_send_all(CURL *h, curl_socket_t fd, const void *buf, size_t len)
{
	size_t off = 0, n;
	struct pollfd p = { fd, POLLOUT, 0 };
	CURLcode rc;

	while (off < len) {
		rc = curl_easy_send(h, (const char *)buf + off, len - off, &n);
		if (rc == CURLE_AGAIN) {
			if (poll(&p, 1, 10000) <= 0)
				return -1;
			continue;
		}
		if (rc != CURLE_OK)
			return -1;
		off += n;
	}
	return 0;
}

/* One masked client frame (RFC 6455 5.3). */
static int
term_frame(
    CURL *h, curl_socket_t fd, enum ws_opcode op, const void *data, size_t len)
{
	uint8_t *f, mask[4];
	size_t hl = 2, i;

	if ((f = malloc(len + 14)) == NULL)
		return -1;
	f[0] = (uint8_t)(0x80 | op);
	if (len < 126)
		f[1] = (uint8_t)(0x80 | len);
	else {
		f[1] = 0x80 | 126;
		f[2] = (uint8_t)(len >> 8);
		f[3] = (uint8_t)len;
		hl = 4;
	}
	randombytes_buf(mask, sizeof(mask));
	memcpy(f + hl, mask, 4);
	for (i = 0; i < len; i++)
		f[hl + 4 + i] = ((const uint8_t *)data)[i] ^ mask[i & 3];
	i = (size_t)term_send_all(h, fd, f, hl + 4 + len);
	free(f);
	return (int)i;
}

static void
term_size(unsigned *cols, unsigned *rows)
{
	struct winsize ws;

	*cols = 80;
	*rows = 24;
	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 &&
	    ws.ws_row > 0 && ws.ws_col <= 1000 && ws.ws_row <= 1000) {
		*cols = ws.ws_col;
		*rows = ws.ws_row;
	}
}

/*
 * The server's frames in buf[0, *len): output to stdout, pings answered;
 * 1 when it closed, -1 on a frame no server sends.
 */
static int
term_frames(CURL *h, curl_socket_t fd, uint8_t *buf, size_t *len)
{
	size_t hl, i;
	uint64_t n;
	int op;

	while (*len >= 2) {
		op = buf[0] & 0x0f;
		n = buf[1] & 0x7f;
		hl = 2;
		if (buf[1] & 0x80)
			return -1;
		if (n == 126) {
			if (*len < 4)
				return 0;
			n = (uint64_t)buf[2] << 8 | buf[3];
			hl = 4;
		} else if (n == 127) {
			if (*len < 10)
				return 0;
			for (n = 0, i = 2; i < 10; i++)
				n = n << 8 | buf[i];
			hl = 10;
		}
		if (n > (1u << 20))
			return -1;
		if (*len < hl + n)
			return 0;
		if (op == WS_OP_BINARY || op == WS_OP_TEXT)
			(void)!write(STDOUT_FILENO, buf + hl, (size_t)n);
		else if (op == WS_OP_PING)
			(void)term_frame(
			    h, fd, WS_OP_PONG, buf + hl, (size_t)n);
		else if (op == WS_OP_CLOSE) {
			(void)term_frame(
			    h, fd, WS_OP_CLOSE, buf + hl, n >= 2 ? 2 : 0);
			return 1;
		}
		memmove(buf, buf + hl + n, *len - hl - (size_t)n);
		*len -= hl + (size_t)n;
	}
	return 0;
}

/*
 * keep api terminal SANDBOX: the sandbox's shell on this terminal. The
 * local terminal goes raw while it runs; without one (stdin a pipe or a
 * file), the input is sent as it is and its end as ^D.
 */
static int
cmd_terminal(struct client *c, int argc, char **argv)
{
	static uint8_t buf[(1u << 20) + 16];
	struct termios saved, raw;
	struct pollfd p[2];
	curl_socket_t fd;
	char *req = NULL, *host = NULL, key[25], accept[29], in[4096];
	unsigned char nonce[16];
	size_t len = 0, n;
	unsigned cols, rows;
	int tty, rc, done = 0, sent_eof = 0;
	CURLcode cc;

	if (argc != 1) {
		usage();
		return EXIT_USAGE;
	}
	if (!need_id(argv[0]))
		return 1;
	curl_easy_reset(c->curl);
	curl_easy_setopt(c->curl, CURLOPT_URL, c->url);
	curl_easy_setopt(c->curl, CURLOPT_CONNECT_ONLY, 1L);
	curl_easy_setopt(c->curl, CURLOPT_CONNECTTIMEOUT, 10L);
	if (c->cacert != NULL)
		curl_easy_setopt(c->curl, CURLOPT_CAINFO, c->cacert);
	if ((cc = curl_easy_perform(c->curl)) != CURLE_OK ||
	    curl_easy_getinfo(c->curl, CURLINFO_ACTIVESOCKET, &fd) !=
	        CURLE_OK) {
		fprintf(stderr, "keep api: %s: %s\n", c->url,
		    curl_easy_strerror(cc));
		return 1;
	}
	randombytes_buf(nonce, sizeof(nonce));
	sodium_bin2base64(key, sizeof(key), nonce, sizeof(nonce),
	    sodium_base64_VARIANT_ORIGINAL);
	term_size(&cols, &rows);
	host = strstr(c->url, "://") + 3;
	if (asprintf(&req,
	        "GET /v1/sandboxes/%s/terminal?cols=%u&rows=%u HTTP/1.1\r\n"
	        "Host: %.*s\r\nAuthorization: Bearer %s\r\n"
	        "Upgrade: websocket\r\nConnection: Upgrade\r\n"
	        "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n",
	        argv[0], cols, rows, (int)strcspn(host, "/"), host,
	        c->token != NULL ? c->token : "", key) == -1)
		return 1;
	if (term_send_all(c->curl, fd, req, strlen(req)) != 0) {
		free(req);
		fprintf(stderr, "keep api: the request did not go out\n");
		return 1;
	}
	free(req);
	/* The head: 101 and the right accept, or the error's body. */
	p[0].fd = fd;
	p[0].events = POLLIN;
	while (memmem(buf, len, "\r\n\r\n", 4) == NULL) {
		cc = curl_easy_recv(
		    c->curl, (char *)buf + len, sizeof(buf) - 1 - len, &n);
		if (cc == CURLE_AGAIN) {
			if (poll(p, 1, 30000) <= 0)
				break;
			continue;
		}
		if (cc != CURLE_OK || n == 0)
			break;
		len += n;
	}
	buf[len] = '\0';
	ws_accept(key, strlen(key), accept);
	if (strncmp((char *)buf, "HTTP/1.1 101 ", 13) != 0 ||
	    strcasestr((char *)buf, accept) == NULL) {
		char *body = strstr((char *)buf, "\r\n\r\n");
		fprintf(stderr, "keep api: no terminal: %.*s\n",
		    (int)strcspn((char *)buf, "\r"), (char *)buf);
		if (body != NULL && body[4] != '\0')
			fprintf(stderr, "%s\n", body + 4);
		return 1;
	}
	n = (size_t)((uint8_t *)strstr((char *)buf, "\r\n\r\n") + 4 - buf);
	memmove(buf, buf + n, len - n);
	len -= n;

	tty = isatty(STDIN_FILENO);
	if (tty && tcgetattr(STDIN_FILENO, &saved) == 0) {
		raw = saved;
		cfmakeraw(&raw);
		tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw);
		signal(SIGWINCH, on_winch);
	} else
		tty = 0;
	p[1].fd = STDIN_FILENO;
	p[1].events = POLLIN;
	for (;;) {
		if ((rc = term_frames(c->curl, fd, buf, &len)) != 0) {
			rc = rc == 1 ? 0 : 1;
			break;
		}
		/* Gone without a close frame. */
		rc = 1;
		if (done)
			break;
		if (term_resized) {
			char msg[64];

			term_resized = 0;
			term_size(&cols, &rows);
			snprintf(msg, sizeof(msg),
			    "{\"type\":\"resize\",\"cols\":%u,\"rows\":%u}",
			    cols, rows);
			if (term_frame(
			        c->curl, fd, WS_OP_TEXT, msg, strlen(msg)) != 0)
				break;
		}
		p[0].revents = p[1].revents = 0;
		if (poll(p, sent_eof ? 1 : 2, -1) == -1) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[1].revents & (POLLIN | POLLHUP)) {
			ssize_t r = read(STDIN_FILENO, in, sizeof(in));

			if (r > 0) {
				if (term_frame(c->curl, fd, WS_OP_BINARY, in,
				        (size_t)r) != 0)
					break;
			} else {
				/* The end of input, as a terminal says it. */
				sent_eof = 1;
				if (term_frame(c->curl, fd, WS_OP_BINARY,
				        "\x04", 1) != 0)
					break;
			}
		}
		if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
			for (;;) {
				cc = curl_easy_recv(c->curl, (char *)buf + len,
				    sizeof(buf) - len, &n);
				if (cc == CURLE_AGAIN)
					break;
				if (cc != CURLE_OK || n == 0) {
					done = 1;
					break;
				}
				len += n;
				if (len == sizeof(buf))
					break;
			}
		}
	}
	if (tty)
		tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved);
	return rc;
}

static void
print_context(json_t *x)
{
	printf("%-26s %-8s %-6s %6lld %s\n", jstr(x, "id"), jstr(x, "language"),
	    jstr(x, "state"),
	    (long long)json_integer_value(
	        json_object_get(x, "execution_count")),
	    jstr(x, "cwd")[0] ? jstr(x, "cwd") : "/");
}

static void
print_snapshot(json_t *x)
{
	printf("%-31s %-26s %6lld %10lld\n", jstr(x, "name"),
	    jstr(x, "context_id"),
	    (long long)json_integer_value(
	        json_object_get(x, "execution_count")),
	    (long long)json_integer_value(json_object_get(x, "bytes")));
}

/* keep api contexts create|list|delete|restart|fork|snapshot|snapshots
 * SANDBOX [CTX [NAME]] */
static int
cmd_contexts(struct client *c, int argc, char **argv)
{
	struct reply r;
	char path[320];
	json_t *j, *x;
	size_t i;
	int rc = 1;

	if (argc < 2) {
		usage();
		return EXIT_USAGE;
	}
	if (!need_id(argv[1]) ||
	    (argc >= 3 && strcmp(argv[0], "create") && !need_id(argv[2])))
		return 1;
	if (strcmp(argv[0], "create") == 0 && (argc == 2 || argc == 4)) {
		json_t *body = json_pack("{s:s}", "language", "python");

		if (argc == 4 && strcmp(argv[2], "--snapshot") == 0) {
			json_decref(body);
			body = json_pack("{s:s}", "snapshot", argv[3]);
		} else if (argc == 4) {
			if (strcmp(argv[2], "--cwd") != 0) {
				json_decref(body);
				usage();
				return EXIT_USAGE;
			}
			json_object_set_new(body, "cwd", json_string(argv[3]));
		}
		snprintf(
		    path, sizeof(path), "/v1/sandboxes/%s/contexts", argv[1]);
		if (request_json(c, "POST", path, body, &r) != 0)
			return 1;
	} else if (strcmp(argv[0], "list") == 0 && argc == 2) {
		snprintf(
		    path, sizeof(path), "/v1/sandboxes/%s/contexts", argv[1]);
		if (request(c, "GET", path, NULL, 0, NULL, &r) != 0)
			return 1;
	} else if ((strcmp(argv[0], "delete") == 0 ||
	               strcmp(argv[0], "restart") == 0) &&
	    argc == 3) {
		snprintf(path, sizeof(path), "/v1/sandboxes/%s/contexts/%s%s",
		    argv[1], argv[2],
		    strcmp(argv[0], "restart") == 0 ? "/restart" : "");
		if (request(c,
		        strcmp(argv[0], "delete") == 0 ? "DELETE" : "POST",
		        path, NULL, 0, NULL, &r) != 0)
			return 1;
		if (r.status == 204) {
			free(r.data);
			return 0;
		}
	} else if (strcmp(argv[0], "fork") == 0 && argc == 3) {
		snprintf(path, sizeof(path),
		    "/v1/sandboxes/%s/contexts/%s/fork", argv[1], argv[2]);
		if (request(c, "POST", path, NULL, 0, NULL, &r) != 0)
			return 1;
	} else if (strcmp(argv[0], "snapshot") == 0 && argc == 4) {
		snprintf(path, sizeof(path),
		    "/v1/sandboxes/%s/contexts/%s/snapshots", argv[1], argv[2]);
		if (request_json(c, "POST", path,
		        json_pack("{s:s}", "name", argv[3]), &r) != 0)
			return 1;
	} else if (strcmp(argv[0], "snapshot-delete") == 0 && argc == 4) {
		char *e = esc(c, argv[3]), *p;

		if (asprintf(&p,
		        "/v1/sandboxes/%s/contexts/%s/snapshots?name=%s",
		        argv[1], argv[2], e) == -1) {
			curl_free(e);
			return 1;
		}
		curl_free(e);
		rc = request(c, "DELETE", p, NULL, 0, NULL, &r);
		free(p);
		if (rc != 0)
			return 1;
		if (r.status == 204) {
			free(r.data);
			return 0;
		}
		rc = 1;
	} else if (strcmp(argv[0], "snapshots") == 0 && argc == 3) {
		snprintf(path, sizeof(path),
		    "/v1/sandboxes/%s/contexts/%s/snapshots", argv[1], argv[2]);
		if (request(c, "GET", path, NULL, 0, NULL, &r) != 0)
			return 1;
	} else {
		usage();
		return EXIT_USAGE;
	}
	if ((j = ok_json(c, &r)) != NULL) {
		if (!c->json &&
		    (strcmp(argv[0], "create") == 0 ||
		        strcmp(argv[0], "fork") == 0))
			printf("%s\n", jstr(j, "id"));
		else if (!c->json && strcmp(argv[0], "snapshot") == 0)
			printf("%s\n", jstr(j, "name"));
		else if (!c->json && strcmp(argv[0], "snapshots") == 0)
			json_array_foreach(j, i, x) print_snapshot(x);
		else if (!c->json && json_is_array(j))
			json_array_foreach(j, i, x) print_context(x);
		else if (!c->json)
			print_context(j);
		rc = 0;
	}
	json_decref(j);
	free(r.data);
	return rc;
}

static int
cmd_audit_remote(struct client *c, int argc, char **argv)
{
	struct reply r;
	char path[128];
	long limit = 50;
	json_t *j, *e;
	size_t i;
	int rc = 1;

	if (argc == 2 && strcmp(argv[0], "--limit") == 0)
		limit = strtol(argv[1], NULL, 10);
	else if (argc != 0) {
		usage();
		return EXIT_USAGE;
	}
	snprintf(path, sizeof(path), "/v1/audit?limit=%ld", limit);
	if (request(c, "GET", path, NULL, 0, NULL, &r) != 0)
		return 1;
	if ((j = ok_json(c, &r)) != NULL) {
		if (!c->json)
			json_array_foreach(json_object_get(j, "entries"), i, e)
			    printf("%s %-6s %-12s %-24s %s\n", jstr(e, "time"),
			        jstr(e, "decision"), jstr(e, "principal"),
			        jstr(e, "action"), jstr(e, "target"));
		rc = 0;
	}
	json_decref(j);
	free(r.data);
	return rc;
}

/* A JSON object from a file or stdin ("-"). */
static json_t *
load_spec(const char *name)
{
	json_error_t je;
	json_t *j;

	j = strcmp(name, "-") == 0 ? json_loadf(stdin, 0, &je)
	                           : json_load_file(name, 0, &je);
	if (j == NULL || !json_is_object(j)) {
		fprintf(stderr, "keep api: %s: not a JSON object: %s\n", name,
		    j == NULL ? je.text : "");
		json_decref(j);
		return NULL;
	}
	return j;
}

/*
 * The options of create and update into body. For create, what to run
 * comes last: --exec CODE or --cmd CMD [ARG...] (the rest of the line).
 */
static int
schedule_opts(json_t *body, int argc, char **argv, int create)
{
	const char *lang = "python", *timeout = NULL;
	json_t *what;

	for (int i = 0; i < argc; i++) {
		const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(o, "--enable") == 0 || strcmp(o, "--disable") == 0) {
			json_object_set_new(
			    body, "enabled", json_boolean(o[2] == 'e'));
			continue;
		}
		if (strcmp(o, "--disabled") == 0 && create) {
			json_object_set_new(body, "enabled", json_false());
			continue;
		}
		if (v == NULL)
			return -1;
		i++;
		if (strcmp(o, "--cron") == 0)
			json_object_set_new(body, "cron", json_string(v));
		else if (strcmp(o, "--at") == 0)
			json_object_set_new(body, "at", json_string(v));
		else if (strcmp(o, "--tz") == 0)
			json_object_set_new(body, "timezone", json_string(v));
		else if (strcmp(o, "--missed") == 0)
			json_object_set_new(body, "missed", json_string(v));
		else if (strcmp(o, "--name") == 0)
			json_object_set_new(body, "name", json_string(v));
		else if (strcmp(o, "--sandbox") == 0)
			json_object_set_new(body, "sandbox_id", json_string(v));
		else if (strcmp(o, "--image") == 0)
			json_object_set_new(body, "image", json_string(v));
		else if (strcmp(o, "--language") == 0)
			lang = v;
		else if (strcmp(o, "--timeout") == 0)
			timeout = v;
		else if (strcmp(o, "--exec") == 0) {
			size_t n = strlen(v);
			char *code = strcmp(v, "-") == 0 ? read_all(stdin, &n)
			                                 : strdup(v);

			if (code == NULL)
				return -1;
			json_object_set_new(body, "execute",
			    json_pack("{s:s%,s:s}", "code", code, n, "language",
			        lang));
			free(code);
		} else if (strcmp(o, "--cmd") == 0) {
			json_t *args = json_array();

			for (i++; i < argc; i++)
				json_array_append_new(
				    args, json_string(argv[i]));
			json_object_set_new(body, "command",
			    json_pack("{s:s,s:o}", "cmd", v, "args", args));
		} else if (strcmp(o, "--spec") == 0) {
			json_t *spec = load_spec(v);

			if (spec == NULL)
				return -1;
			json_object_update(body, spec);
			json_decref(spec);
		} else
			return -1;
	}
	/* --timeout MS, anywhere before --cmd: the run's time limit. */
	if (timeout != NULL) {
		if ((what = json_object_get(body, "execute")) == NULL &&
		    (what = json_object_get(body, "command")) == NULL)
			return -1;
		json_object_set_new(
		    what, "timeout", json_integer(strtoll(timeout, NULL, 10)));
	}
	return 0;
}

static void
print_schedule(json_t *s, int full)
{
	json_t *next = json_object_get(s, "next_fire_at"), *t;
	const char *when = json_string_value(json_object_get(s, "cron"));
	const char *where = json_string_value(json_object_get(s, "sandbox_id"));
	size_t i;

	if (when == NULL)
		when = jstr(s, "at");
	if (where == NULL)
		where = jstr(s, "image");
	if (!full) {
		printf("%-24s %-8s %-20s %-24s %s\n", jstr(s, "id"),
		    json_is_true(json_object_get(s, "enabled")) ? "enabled"
		                                                : "disabled",
		    when, where, jstr(json_array_get(next, 0), NULL));
		return;
	}
	printf("id: %s\nowner: %s\nwhen: %s (%s)\nwhere: %s\nenabled: %s\n"
	       "missed: %s\nfires: %lld\nlast_fire_at: %s\n",
	    jstr(s, "id"), jstr(s, "owner"), when, jstr(s, "timezone"), where,
	    json_is_true(json_object_get(s, "enabled")) ? "yes" : "no",
	    jstr(s, "missed"),
	    (long long)json_integer_value(json_object_get(s, "fires")),
	    jstr(s, "last_fire_at"));
	json_array_foreach(next, i, t)
	    printf("next_fire_at: %s\n", json_string_value(t));
}

static void
print_runs(json_t *runs)
{
	json_t *x;
	size_t i;

	json_array_foreach(runs, i, x)
	{
		const char *out =
		    json_string_value(json_object_get(x, "stdout"));
		json_t *code = json_object_get(x, "exit_code");

		char code_s[24] = "-";

		if (json_is_integer(code))
			snprintf(code_s, sizeof(code_s), "%lld",
			    (long long)json_integer_value(code));
		printf("#%lld %s %s exit %s%s%s%s\n",
		    (long long)json_integer_value(json_object_get(x, "seq")),
		    jstr(x, "fire_at"), jstr(x, "status"), code_s,
		    json_is_true(json_object_get(x, "catch_up")) ? " catch-up"
		                                                 : "",
		    json_string_length(json_object_get(x, "detail")) ? ": "
		                                                     : "",
		    json_string_length(json_object_get(x, "detail"))
		        ? jstr(x, "detail")
		        : "");
		if (out != NULL && out[0] != '\0')
			printf("  stdout: %s%s", out,
			    out[strlen(out) - 1] == '\n' ? "" : "\n");
	}
}

static int
cmd_schedules(struct client *c, int argc, char **argv)
{
	struct reply r;
	char path[256];
	json_t *j = NULL, *body;
	int rc = 1;

	if (argc < 1) {
		usage();
		return EXIT_USAGE;
	}
	if (strcmp(argv[0], "create") == 0) {
		body = json_object();
		if (schedule_opts(body, argc - 1, argv + 1, 1) != 0) {
			json_decref(body);
			usage();
			return EXIT_USAGE;
		}
		if (request_json(c, "POST", "/v1/schedules", body, &r) != 0)
			return 1;
	} else if (strcmp(argv[0], "list") == 0 && argc == 1) {
		if (request(c, "GET", "/v1/schedules", NULL, 0, NULL, &r) != 0)
			return 1;
	} else if (argc >= 2 && valid_id(argv[1]) &&
	    (strcmp(argv[0], "update") == 0 ||
	        (argc == 2 &&
	            (strcmp(argv[0], "get") == 0 ||
	                strcmp(argv[0], "delete") == 0 ||
	                strcmp(argv[0], "runs") == 0)))) {
		snprintf(path, sizeof(path), "/v1/schedules/%s%s", argv[1],
		    strcmp(argv[0], "runs") == 0 ? "/runs" : "");
		if (strcmp(argv[0], "update") == 0) {
			body = json_object();
			if (schedule_opts(body, argc - 2, argv + 2, 0) != 0) {
				json_decref(body);
				usage();
				return EXIT_USAGE;
			}
			if (request_json(c, "PATCH", path, body, &r) != 0)
				return 1;
		} else if (request(c,
		               strcmp(argv[0], "delete") == 0 ? "DELETE"
		                                              : "GET",
		               path, NULL, 0, NULL, &r) != 0)
			return 1;
	} else {
		usage();
		return EXIT_USAGE;
	}
	if ((j = ok_json(c, &r)) != NULL) {
		if (!c->json) {
			json_t *s;
			size_t i;

			if (strcmp(argv[0], "list") == 0)
				json_array_foreach(
				    json_object_get(j, "schedules"), i, s)
				    print_schedule(s, 0);
			else if (strcmp(argv[0], "runs") == 0)
				print_runs(json_object_get(j, "runs"));
			else if (strcmp(argv[0], "delete") != 0)
				print_schedule(j, 1);
		}
		rc = 0;
	}
	json_decref(j);
	free(r.data);
	return rc;
}

static int
cmd_health(struct client *c)
{
	struct reply r;
	json_t *j;

	if (request(c, "GET", "/healthz", NULL, 0, NULL, &r) != 0)
		return 1;
	j = ok_json(c, &r);
	if (j != NULL && !c->json)
		printf("%s\n", jstr(j, "status"));
	json_decref(j);
	free(r.data);
	return j == NULL;
}

/* keep api run --help, run SANDBOX --help (no command is named so). */
static int
run_wants_help(int argc, char **argv)
{
	for (int i = 1; i < argc && i <= 2; i++)
		if (strcmp(argv[i], "-h") == 0 ||
		    strcmp(argv[i], "--help") == 0)
			return 1;
	return 0;
}

/* POST /v1/tokens/revoke to one node; prints the outcome. Returns 0/1. */
static int
revoke_one(
    struct client *c, const char *node, const char *jti, json_int_t expires_at)
{
	struct reply r;
	json_t *body, *j;

	body = expires_at > 0
	    ? json_pack("{s:s,s:I}", "jti", jti, "expires_at", expires_at)
	    : json_pack("{s:s}", "jti", jti);
	if (body == NULL ||
	    request_json(c, "POST", "/v1/tokens/revoke", body, &r) != 0) {
		printf("%s %s: FAILED (no answer)\n", node, c->url);
		return 1;
	}
	if ((j = ok_json(c, &r)) != NULL && !c->json)
		printf("%s %s: revoked %s\n", node, c->url, jti);
	else if (j == NULL)
		printf("%s %s: FAILED (HTTP %ld)\n", node, c->url, r.status);
	json_decref(j);
	free(r.data);
	return j == NULL;
}

/*
 * revoke [--fleet FILE] [--expires-at UNIX] [--] JTI: the jti's revocation
 * stored by keepd (and audited there). Each box keeps its own store, so
 * a fleet (docs/scaling.md) revokes on every node: FILE lists one node a
 * line, "NAME URL" or "URL" ('#' starts a comment), and each gets the
 * request; the exit status is 1 unless every node confirmed.
 */
static int
cmd_revoke(struct client *c, int argc, char **argv)
{
	const char *fleet = NULL, *jti = NULL, *base = c->url, *errstr;
	char line[1024], *p, *name, *url;
	json_int_t expires_at = 0;
	int i, failed = 0, nodes = 0, opts = 1;
	FILE *fp;

	/* A jti is base64url: one in 64 begins with '-', so an argument
	 * that is not an option is the jti even then, and "--" ends the
	 * options for one that begins with "--". */
	for (i = 0; i < argc; i++) {
		if (opts && strcmp(argv[i], "--") == 0)
			opts = 0;
		else if (!opts || strncmp(argv[i], "--", 2) != 0) {
			if (jti != NULL) {
				usage();
				return EXIT_USAGE;
			}
			jti = argv[i];
		} else if (strcmp(argv[i], "--fleet") == 0 && i + 1 < argc)
			fleet = argv[++i];
		else if (strcmp(argv[i], "--expires-at") == 0 && i + 1 < argc) {
			expires_at = strtonum(argv[++i], 1, INT64_MAX, &errstr);
			if (errstr != NULL) {
				fprintf(stderr,
				    "keep api: --expires-at %s: %s\n", argv[i],
				    errstr);
				return EXIT_USAGE;
			}
		} else {
			usage();
			return EXIT_USAGE;
		}
	}
	if (jti == NULL || *jti == '\0') {
		usage();
		return EXIT_USAGE;
	}
	if (fleet == NULL)
		return revoke_one(c, "-", jti, expires_at);
	if ((fp = fopen(fleet, "r")) == NULL) {
		fprintf(stderr, "keep api: %s: %s\n", fleet, strerror(errno));
		return 1;
	}
	while (fgets(line, sizeof(line), fp) != NULL) {
		if (strchr(line, '\n') == NULL && !feof(fp)) {
			fprintf(stderr,
			    "keep api: %s: a line longer than %zu "
			    "bytes\n",
			    fleet, sizeof(line) - 2);
			fclose(fp);
			c->url = base;
			return 1;
		}
		if ((p = strchr(line, '#')) != NULL)
			*p = '\0';
		p = line;
		name = strsep(&p, " \t\r\n");
		while (p != NULL && (*p == ' ' || *p == '\t'))
			p++;
		url = p != NULL ? strsep(&p, " \t\r\n") : NULL;
		if (name == NULL || *name == '\0')
			continue;
		if (url == NULL || *url == '\0') {
			url = name;
			name = "-";
		}
		if (strncmp(url, "http://", 7) != 0 &&
		    strncmp(url, "https://", 8) != 0) {
			printf(
			    "%s %s: FAILED (not an http(s) URL)\n", name, url);
			failed++;
			nodes++;
			continue;
		}
		c->url = url;
		failed += revoke_one(c, name, jti, expires_at);
		nodes++;
	}
	fclose(fp);
	c->url = base;
	if (nodes == 0) {
		fprintf(stderr, "keep api: %s names no node\n", fleet);
		return 1;
	}
	if (!c->json)
		printf("revoked on %d of %d nodes\n", nodes - failed, nodes);
	return failed != 0;
}

int
cmd_api(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "url", required_argument, NULL, 'u' },
		{ "token", required_argument, NULL, 't' },
		{ "json", no_argument, NULL, 'j' },
		{ "cacert", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct client c;
	int ch, rc;

	memset(&c, 0, sizeof(c));
	c.url = DEFAULT_URL;
	c.token = getenv("KEEP_TOKEN");
	optind = 1;
	while ((ch = getopt_long(argc, argv, "+u:t:jc:h", opts, NULL)) != -1) {
		switch (ch) {
		case 'u':
			c.url = optarg;
			break;
		case 't':
			c.token = optarg;
			break;
		case 'j':
			c.json = 1;
			break;
		case 'c':
			c.cacert = optarg;
			break;
		case 'h':
			usage_fp(stdout);
			return 0;
		default:
			usage();
			return EXIT_USAGE;
		}
	}
	argc -= optind;
	argv += optind;
	if (argc < 1) {
		usage();
		return EXIT_USAGE;
	}
	/* keep api COMMAND --help: before any request. The arguments of
	 * `run` after its sandbox and command are the remote command's. */
	if (strcmp(argv[0], "run") == 0 ? run_wants_help(argc, argv)
	                                : cli_wants_help(argc, argv)) {
		usage_fp(stdout);
		return 0;
	}
	if (strncmp(c.url, "http://", 7) != 0 &&
	    strncmp(c.url, "https://", 8) != 0) {
		fprintf(
		    stderr, "keep api: --url must be http:// or https://\n");
		return EXIT_USAGE;
	}
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0 ||
	    (c.curl = curl_easy_init()) == NULL) {
		fprintf(stderr, "keep api: cannot initialise libcurl\n");
		return 1;
	}
	if (strcmp(argv[0], "sandbox") == 0)
		rc = cmd_sandbox(&c, argc - 1, argv + 1);
	else if (strcmp(argv[0], "exec") == 0)
		rc = cmd_exec(&c, argc - 1, argv + 1);
	else if (strcmp(argv[0], "run") == 0)
		rc = cmd_run_remote(&c, argc - 1, argv + 1);
	else if (strcmp(argv[0], "files") == 0)
		rc = cmd_files(&c, argc - 1, argv + 1);
	else if (strcmp(argv[0], "env") == 0)
		rc = cmd_env(&c, argc - 1, argv + 1);
	else if (strcmp(argv[0], "contexts") == 0)
		rc = cmd_contexts(&c, argc - 1, argv + 1);
	else if (strcmp(argv[0], "audit") == 0)
		rc = cmd_audit_remote(&c, argc - 1, argv + 1);
	else if (strcmp(argv[0], "schedules") == 0)
		rc = cmd_schedules(&c, argc - 1, argv + 1);
	else if (strcmp(argv[0], "secrets") == 0)
		rc = cmd_secrets(&c, argc - 1, argv + 1);
	else if (strcmp(argv[0], "terminal") == 0)
		rc = cmd_terminal(&c, argc - 1, argv + 1);
	else if (strcmp(argv[0], "health") == 0)
		rc = cmd_health(&c);
	else if (strcmp(argv[0], "revoke") == 0)
		rc = cmd_revoke(&c, argc - 1, argv + 1);
	else {
		usage();
		rc = EXIT_USAGE;
	}
	curl_easy_cleanup(c.curl);
	curl_global_cleanup();
	return rc;
}
