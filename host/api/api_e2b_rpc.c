/*
 * envd's Connect RPC (docs/e2b.md): the services filesystem.Filesystem
 * and process.Process that E2B's SDK calls for sandbox.files.list,
 * exists, getInfo, makeDir, remove and sandbox.commands.run. The SDK
 * speaks Connect with the JSON codec (protobuf's JSON mapping: field
 * names in lowerCamelCase, enums by name, 64-bit integers as strings,
 * bytes in base64), so these are JSON routes: a unary call is a JSON
 * object each way, a server stream is enveloped JSON (e2b_wire.h).
 * Methods not here are 404, which Connect reads as unimplemented.
 */
#include <signal.h>
#include <sodium.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/api/api_int.h"
#include "host/api/e2b_wire.h"
#include "lib/util.h"

#define BE(r) ((r)->api->be)
#define MAX_TIMEOUT_MS (24ULL * 3600 * 1000)
/* Bytes of output per data event (base64 makes a third more). */
#define EVENT_BYTES 49152
#define PTY_DIM_MAX 1000 /* a pty's columns or rows, as the terminal's */

/* filesystem.FileType by keep's entry type. */
static const char *
file_type(const char *t)
{
	if (strcmp(t, "file") == 0)
		return "FILE_TYPE_FILE";
	if (strcmp(t, "dir") == 0)
		return "FILE_TYPE_DIRECTORY";
	if (strcmp(t, "link") == 0)
		return "FILE_TYPE_SYMLINK";
	/* The SDK leaves out what it cannot name. */
	return "FILE_TYPE_UNSPECIFIED";
}

/* filesystem.EntryInfo of entry e of directory dir (path: dir/name). */
static json_t *
entry_json(const char *dir, const struct api_dirent *e)
{
	char path[PATH_MAX_API + 256 + 2];
	size_t dl = strlen(dir);
	char size[24];
	json_t *o;

	snprintf(path, sizeof(path), "%s%s%s", dir,
	    dl > 0 && dir[dl - 1] == '/' ? "" : "/", e->name);
	snprintf(size, sizeof(size), "%llu", (unsigned long long)e->size);
	o = json_pack("{s:o,s:s,s:o,s:s}", "name",
	    bytes_string(e->name, strlen(e->name)), "type", file_type(e->type),
	    "path", bytes_string(path, strlen(path)), "size", size);
	if (o != NULL && e->mtime != 0)
		json_object_set_new(o, "modifiedTime", iso_time(e->mtime));
	return o;
}

/* A directory's EntryInfo with only what keep knows of it. */
static json_t *
dir_json(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base != NULL && base[1] != '\0' ? base + 1 : path;
	return json_pack("{s:o,s:s,s:o}", "name",
	    bytes_string(base, strlen(base)), "type", "FILE_TYPE_DIRECTORY",
	    "path", bytes_string(path, strlen(path)));
}

/* A request's path field (name: "path" unless said): required, inside
 * the workspace. */
static int
rpc_path_field(
    struct rq *r, json_t *obj, const char *name, char path[PATH_MAX_API])
{
	const char *p;

	if (rq_str(r, obj, name, 1, &p))
		return -1;
	if (p[0] == '\0') {
		rq_error(r, API_EBADREQ, "%s is empty", name);
		return -1;
	}
	/* envd's relative paths are its user's home's. */
	return rq_e2b_path(r, p, path, PATH_MAX_API);
}

static int
rpc_path(struct rq *r, json_t *obj, char path[PATH_MAX_API])
{
	return rpc_path_field(r, obj, "path", path);
}

/* ListDir {"path","depth"}: one level, as keep's files/list. */
void
h_e2b_list_dir(struct rq *r)
{
	static const char *const fields[] = { "path", "depth", NULL };
	char path[PATH_MAX_API];
	struct api_dirent *ents = NULL;
	struct api_error err;
	uint64_t depth;
	size_t n = 0;
	json_t *arr;
	int rc;

	if (rq_fields(r, r->body, fields) || rpc_path(r, r->body, path) ||
	    rq_uint(r, r->body, "depth", UINT32_MAX, &depth))
		return;
	/* Each level would be another listing, and another decision. */
	if (depth > 1) {
		rq_error(r, API_EBADREQ,
		    "depth above 1 is not served: list each directory");
		return;
	}
	memset(&err, 0, sizeof(err));
	rc = BE(r)->file_list(
	    BE(r)->ctx, &r->call, r->id, path, &ents, &n, &err);
	if (rc != API_OK) {
		free(ents);
		rq_backend_error(r, rc, &err);
		return;
	}
	arr = json_array();
	for (size_t i = 0; i < n; i++) {
		ents[i].name[sizeof(ents[i].name) - 1] = '\0';
		ents[i].type[sizeof(ents[i].type) - 1] = '\0';
		json_array_append_new(arr, entry_json(path, &ents[i]));
	}
	free(ents);
	rq_json(r, 200, json_pack("{s:o}", "entries", arr));
}

/*
 * Stat {"path"}: the entry, from its directory's listing (keep has no
 * stat of its own; the right is the same, artifact:read). NotFound is
 * how the SDK's files.exists learns "no".
 */
void
h_e2b_stat(struct rq *r)
{
	static const char *const fields[] = { "path", NULL };
	char path[PATH_MAX_API], parent[PATH_MAX_API];
	struct api_dirent *ents = NULL;
	struct api_error err;
	const char *name, *slash;
	size_t n = 0, len;
	json_t *entry = NULL;
	int rc;

	if (rq_fields(r, r->body, fields) || rpc_path(r, r->body, path))
		return;
	len = strlen(path);
	while (len > 1 && path[len - 1] == '/')
		path[--len] = '\0';
	if (strcmp(path, "/") == 0) {
		rq_json(r, 200, json_pack("{s:o}", "entry", dir_json(path)));
		return;
	}
	slash = strrchr(path, '/');
	if (slash == NULL || slash == path) {
		strlcpy(parent, "/", sizeof(parent));
		name = slash != NULL ? slash + 1 : path;
	} else {
		memcpy(parent, path, (size_t)(slash - path));
		parent[slash - path] = '\0';
		name = slash + 1;
	}
	memset(&err, 0, sizeof(err));
	rc = BE(r)->file_list(
	    BE(r)->ctx, &r->call, r->id, parent, &ents, &n, &err);
	if (rc != API_OK) {
		free(ents);
		rq_backend_error(r, rc, &err);
		return;
	}
	for (size_t i = 0; i < n && entry == NULL; i++) {
		ents[i].name[sizeof(ents[i].name) - 1] = '\0';
		ents[i].type[sizeof(ents[i].type) - 1] = '\0';
		if (strcmp(ents[i].name, name) == 0)
			entry = entry_json(parent, &ents[i]);
	}
	free(ents);
	if (entry == NULL) {
		rq_error(r, API_ENOTFOUND, "No such file or directory");
		return;
	}
	/* The path as asked, not as joined. */
	json_object_set_new(entry, "path", bytes_string(path, len));
	rq_json(r, 200, json_pack("{s:o}", "entry", entry));
}

/* MakeDir {"path"}: with its parents, each decided as files/mkdir;
 * AlreadyExists when it was there, which the SDK's makeDir answers as
 * false. */
void
h_e2b_make_dir(struct rq *r)
{
	static const char *const fields[] = { "path", NULL };
	char path[PATH_MAX_API];
	struct api_error err;
	int rc;

	if (rq_fields(r, r->body, fields) || rpc_path(r, r->body, path))
		return;
	memset(&err, 0, sizeof(err));
	if ((rc = e2b_mkdirs(r, path, 1, 1, &err)) != API_OK) {
		if (rc != E2B_REPLIED)
			rq_backend_error(r, rc, &err);
		return;
	}
	rq_json(r, 200, json_pack("{s:o}", "entry", dir_json(path)));
}

/* Remove {"path"}: a file or an empty directory, as keep's files/remove. */
void
h_e2b_remove(struct rq *r)
{
	static const char *const fields[] = { "path", NULL };
	char path[PATH_MAX_API];
	struct api_error err;
	int rc;

	if (rq_fields(r, r->body, fields) || rpc_path(r, r->body, path))
		return;
	memset(&err, 0, sizeof(err));
	rc = BE(r)->file_remove(BE(r)->ctx, &r->call, r->id, path, &err);
	if (rc != API_OK) {
		rq_backend_error(r, rc, &err);
		return;
	}
	rq_json(r, 200, json_object());
}

/*
 * Move {"source","destination"}: rename(2) in the workspace, decided as
 * keep's files/write (a move writes the destination). The reply is the
 * entry at its destination, which the SDK's files.rename returns.
 */
void
h_e2b_move(struct rq *r)
{
	static const char *const fields[] = { "source", "destination", NULL };
	char from[PATH_MAX_API], to[PATH_MAX_API], parent[PATH_MAX_API];
	struct api_dirent ent;
	struct api_error err;
	const char *slash;
	json_t *entry;
	size_t len;
	int rc;

	if (rq_fields(r, r->body, fields) ||
	    rpc_path_field(r, r->body, "source", from) ||
	    rpc_path_field(r, r->body, "destination", to))
		return;
	len = strlen(to);
	while (len > 1 && to[len - 1] == '/')
		to[--len] = '\0';
	memset(&err, 0, sizeof(err));
	memset(&ent, 0, sizeof(ent));
	rc =
	    BE(r)->file_move(BE(r)->ctx, &r->call, r->id, from, to, &ent, &err);
	if (rc != API_OK) {
		rq_backend_error(r, rc, &err);
		return;
	}
	ent.name[sizeof(ent.name) - 1] = '\0';
	ent.type[sizeof(ent.type) - 1] = '\0';
	slash = strrchr(to, '/');
	if (slash == NULL || slash == to)
		strlcpy(parent, "/", sizeof(parent));
	else {
		memcpy(parent, to, (size_t)(slash - to));
		parent[slash - to] = '\0';
	}
	if (ent.name[0] == '\0') {
		/* Moved on before keep saw it: its name and path alone. */
		strlcpy(
		    ent.name, slash != NULL ? slash + 1 : to, sizeof(ent.name));
		entry = json_pack("{s:o,s:o}", "name",
		    bytes_string(ent.name, strlen(ent.name)), "path",
		    bytes_string(to, len));
	} else {
		entry = entry_json(parent, &ent);
		/* The path as asked, not as joined. */
		if (entry != NULL)
			json_object_set_new(
			    entry, "path", bytes_string(to, len));
	}
	rq_json(r, 200, json_pack("{s:o}", "entry", entry));
}

/* --- process.Process/Start -------------------------------------------- */

static void
put_event(struct http_buf *b, json_t *ev)
{
	char *s;

	if (ev == NULL || (s = json_dumps(ev, JSON_COMPACT)) == NULL) {
		json_decref(ev);
		b->oom = 1;
		return;
	}
	json_decref(ev);
	e2b_envelope_put(b, 0, s, strlen(s));
	free(s);
}

void
e2b_process_output(struct http_buf *b, int started, uint64_t pid,
    const char *field, const void *data, size_t len)
{
	const unsigned char *d = data;

	/* The run's pid, which SendSignal and List take (0: a run that
	 * ended before its start was told: nothing left to signal). */
	if (!started)
		put_event(b,
		    json_pack("{s:{s:{s:I}}}", "event", "start", "pid",
		        (json_int_t)pid));
	for (size_t off = 0; off < len && !b->oom; off += EVENT_BYTES) {
		size_t n = len - off < EVENT_BYTES ? len - off : EVENT_BYTES;
		size_t bl = sodium_base64_ENCODED_LEN(
		    n, sodium_base64_VARIANT_ORIGINAL);
		char *s = malloc(bl);

		if (s == NULL) {
			b->oom = 1;
			return;
		}
		sodium_bin2base64(
		    s, bl, d + off, n, sodium_base64_VARIANT_ORIGINAL);
		put_event(
		    b, json_pack("{s:{s:{s:s}}}", "event", "data", field, s));
		free(s);
	}
}

/* The stream's end: {} or {"error":{...}}. */
static void
put_end(struct http_buf *b, json_t *end)
{
	char *s;

	if (end == NULL || (s = json_dumps(end, JSON_COMPACT)) == NULL) {
		json_decref(end);
		b->oom = 1;
		return;
	}
	json_decref(end);
	e2b_envelope_put(b, E2B_ENV_END, s, strlen(s));
	free(s);
}

void
e2b_process_events(struct http_buf *b, int started, int pty, int rc,
    const struct api_run_result *res, const struct api_error *err)
{
	char status[96], msg[API_MSG_MAX];
	json_t *end;

	if (rc != API_OK) {
		if (rc <= API_OK || rc >= API_ERR_COUNT)
			rc = API_EINTERNAL;
		memcpy(msg, err->message, sizeof(msg));
		msg[sizeof(msg) - 1] = '\0';
		put_end(b,
		    json_pack("{s:{s:s,s:s}}", "error", "code",
		        e2b_connect_code(api_err_status(rc)), "message", msg));
		return;
	}
	e2b_process_output(
	    b, started, 0, pty ? "pty" : "stdout", res->out, res->out_len);
	e2b_process_output(
	    b, 1, 0, pty ? "pty" : "stderr", res->err, res->err_len);
	/* envd's status is Go's ProcessState's text; keep's reason says
	 * why a run was stopped (timeout, output-limit, fault, killed). */
	if (res->reason[0] != '\0')
		snprintf(status, sizeof(status), "%s", res->reason);
	else
		snprintf(
		    status, sizeof(status), "exit status %d", res->exit_code);
	/* A run keep stopped did not exit: -1, as Go's ExitCode() says of
	 * a process a signal ended (envd's), so the SDK's wait raises
	 * CommandExitError rather than reading it as a success. */
	end = json_pack("{s:i,s:b,s:s}", "exitCode",
	    res->reason[0] != '\0' ? -1 : res->exit_code, "exited",
	    res->reason[0] == '\0', "status", status);
	if (end != NULL && res->reason[0] != '\0') {
		snprintf(msg, sizeof(msg), "keep stopped the command: %s",
		    res->reason);
		json_object_set_new(end, "error", json_string(msg));
	}
	put_event(b, json_pack("{s:{s:o}}", "event", "end", end));
	put_end(b, json_object());
}

void
e2b_process_reply(struct rq *r, struct api_run_result *res)
{
	struct http_buf b;

	http_buf_init(&b);
	e2b_process_events(&b, 0, 0, API_OK, res, NULL);
	api_lines_reply(r, res, &b, "application/connect+json");
}

/*
 * The program of a ProcessConfig's cmd: an executable's name, or its
 * path in one of the directories where the images' commands live
 * (E2B's SDK runs "/bin/bash"); keep runs the image's command of that
 * name, as its policy's exec allowlist names it. NULL: not one.
 */
static const char *
program(const char *cmd)
{
	static const char *const dirs[] = { "/bin/", "/usr/bin/",
		"/usr/local/bin/", "/sbin/", "/usr/sbin/" };
	const char *name = NULL;

	if (strchr(cmd, '/') == NULL)
		name = cmd;
	for (size_t i = 0; name == NULL && i < nitems(dirs); i++)
		if (strncmp(cmd, dirs[i], strlen(dirs[i])) == 0)
			name = cmd + strlen(dirs[i]);
	return name != NULL && api_valid_cmd(name) ? name : NULL;
}

/* A terminal's type from the pty's TERM, as keep's terminal route
 * takes it; another, or none, is xterm-256color (the SDK's). */
static const char *
pty_term(const struct api_kv *env, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(env[i].key, "TERM") == 0 &&
		    api_term_name_ok(env[i].value))
			return env[i].value;
	return "xterm-256color";
}

/* PTY {"size":{"cols","rows"}}: 1 to 1000 each, as the terminal's. */
static int
parse_pty(struct rq *r, json_t *pty, struct api_terminal *t)
{
	static const char *const fields[] = { "size", NULL };
	static const char *const sfields[] = { "cols", "rows", NULL };
	json_t *size, *c, *w;

	if (!json_is_object(pty) || rq_fields(r, pty, fields))
		goto bad;
	size = json_object_get(pty, "size");
	if (!json_is_object(size) || rq_fields(r, size, sfields))
		goto bad;
	c = json_object_get(size, "cols");
	w = json_object_get(size, "rows");
	if (!json_is_integer(c) || !json_is_integer(w) ||
	    json_integer_value(c) < 1 || json_integer_value(c) > PTY_DIM_MAX ||
	    json_integer_value(w) < 1 || json_integer_value(w) > PTY_DIM_MAX)
		goto bad;
	t->cols = (unsigned)json_integer_value(c);
	t->rows = (unsigned)json_integer_value(w);
	return 0;
bad:
	if (r->status == 0)
		rq_error(r, API_EBADREQ,
		    "pty must be {\"size\":{\"cols\":1-1000,\"rows\":1-1000}}");
	return -1;
}

/* StartRequest {"process":{"cmd","args","envs","cwd"},"pty","stdin",
 * "tag"}; a pty's size goes into *t (t->cols 0: no pty). */
static int
parse_start(struct rq *r, struct api_command *c, const char ***args,
    struct api_kv **env, struct api_terminal *t, char cwd[PATH_MAX_API])
{
	static const char *const fields[] = { "process", "pty", "tag", "stdin",
		NULL };
	static const char *const pfields[] = { "cmd", "args", "envs", "cwd",
		NULL };
	const struct http_header *h;
	const char *cmd, *tag;
	json_t *p, *v;

	memset(c, 0, sizeof(*c));
	memset(t, 0, sizeof(*t));
	*args = NULL;
	*env = NULL;
	if (rq_fields(r, r->body, fields) || rq_str(r, r->body, "tag", 0, &tag))
		return -1;
	if ((v = json_object_get(r->body, "pty")) != NULL && !json_is_null(v) &&
	    parse_pty(r, v, t))
		return -1;
	/* stdin: true, a stream that SendInput feeds and CloseStdin ends;
	 * without it the command's stdin is empty, as envd's. A pty's
	 * input is the pty's whatever stdin says. */
	if ((v = json_object_get(r->body, "stdin")) != NULL &&
	    !json_is_boolean(v) && !json_is_null(v)) {
		rq_error(r, API_EBADREQ, "stdin must be a boolean");
		return -1;
	}
	c->stdin_stream = json_is_true(v) && t->cols == 0;
	p = json_object_get(r->body, "process");
	if (!json_is_object(p)) {
		rq_error(r, API_EBADREQ, "process must be an object");
		return -1;
	}
	if (rq_fields(r, p, pfields) || rq_str(r, p, "cmd", 1, &cmd) ||
	    rq_str(r, p, "cwd", 0, &c->cwd))
		return -1;
	if ((c->cmd = program(cmd)) == NULL) {
		rq_error(r, API_EBADREQ,
		    "cmd must be an executable's name, or its path in /bin, "
		    "/usr/bin, /usr/local/bin, /sbin or /usr/sbin");
		return -1;
	}
	/* E2B's user's home unless said, relative ones under it; then a
	 * directory of the workspace (the vmm's to say). */
	if (c->cwd != NULL &&
	    strlen(c->cwd) != json_string_length(json_object_get(p, "cwd"))) {
		rq_error(r, API_EBADREQ, "cwd must not hold a NUL");
		return -1;
	}
	if (rq_e2b_path(
	        r, c->cwd != NULL ? c->cwd : E2B_HOME, cwd, PATH_MAX_API))
		return -1;
	c->cwd = cwd;
	if (rq_command_args(r, p, args, c))
		return -1;
	if (rq_kv(r, p, "envs", env, &c->nenv))
		return -1;
	c->env = *env;
	if (t->cols != 0) {
		t->term = pty_term(*env, c->nenv);
		t->cmd = c->cmd;
		t->args = c->args;
		t->nargs = c->nargs;
		t->env = c->env;
		t->nenv = c->nenv;
		t->cwd = c->cwd;
	}
	/* The SDK's timeoutMs (60 s unless it is told otherwise). */
	h = http_find_header(r->req, "connect-timeout-ms");
	if (h != NULL) {
		if (e2b_timeout_ms(h->value, h->valuelen, &c->timeout_ms) !=
		    0) {
			rq_error(r, API_EBADREQ,
			    "Connect-Timeout-Ms must be 1 to 10 digits");
			return -1;
		}
		if (c->timeout_ms > MAX_TIMEOUT_MS)
			c->timeout_ms = MAX_TIMEOUT_MS;
	}
	return 0;
}

/*
 * A pty: keep's terminal (docs/terminal.md) running the SDK's program
 * ("/bin/bash -i -l", decided as any command), whose output streams as
 * pty data and whose input and size come by SendInput and Update.
 */
static void
pty_start(struct rq *r, const struct api_terminal *t)
{
	struct api_error err;
	int rc;

	memset(&err, 0, sizeof(err));
	rc = BE(r)->terminal_open(BE(r)->ctx, &r->call, r->id, t, &err);
	if (rc == API_PENDING && r->pending != NULL) {
		api_pty_link(r->api, r->pending);
		return;
	}
	if (rc == API_OK || rc == API_PENDING)
		rc = API_EINTERNAL;
	rq_backend_error(r, rc, &err);
}

/*
 * Start: a command, as keep's commands/run, its output streamed as it
 * comes: start, data events, end, then the stream's end; or a pty. A
 * command is listed for its input: a stream when stdin is true, else
 * input to it is refused as envd refuses it (failed_precondition).
 */
void
h_e2b_process_start(struct rq *r)
{
	struct api_command c;
	struct api_terminal t;
	const char **args = NULL, *msg;
	struct api_kv *env = NULL;
	char cwd[PATH_MAX_API];
	size_t mlen;

	if (e2b_envelope_one(r->req->body, r->req->body_len, &msg, &mlen) !=
	    0) {
		rq_error(r, API_EBADREQ,
		    "The body is not one uncompressed Connect envelope");
		return;
	}
	if ((r->body = rq_load_json(r, msg, mlen)) == NULL)
		return;
	if (parse_start(r, &c, &args, &env, &t, cwd) == 0) {
		if (t.cols != 0)
			pty_start(r, &t);
		else {
			rq_command_run(r, &c);
			if (r->pending != NULL)
				api_input_link(r->api, r->pending,
				    c.stdin_stream ? STDIN_OPEN : STDIN_NONE);
		}
	}
	free(args);
	free(env);
}

/* {"pid": N} of a request's "process": the pid, or 0 (a 400 sent). */
static uint64_t
rpc_pid(struct rq *r)
{
	static const char *const pfields[] = { "pid", "tag", NULL };
	json_t *p = json_object_get(r->body, "process"), *pid;

	if (json_is_object(p) && json_object_get(p, "tag") != NULL) {
		rq_error(r, API_EBADREQ,
		    "a process by tag is not served: keep's runs have pids");
		return 0;
	}
	if (!json_is_object(p) || rq_fields(r, p, pfields) ||
	    !json_is_integer(pid = json_object_get(p, "pid")) ||
	    json_integer_value(pid) <= 0 ||
	    json_integer_value(pid) > UINT32_MAX) {
		if (r->status == 0)
			rq_error(r, API_EBADREQ,
			    "process must be {\"pid\": a run's pid}");
		return 0;
	}
	return (uint64_t)json_integer_value(pid);
}

/* --- process.Process/List and SendSignal --------------------------------- */

/*
 * ListRequest {}: the sandbox's runs still running, each as envd's
 * ProcessInfo. keep keeps a run's program name, not its arguments or
 * environment: config holds the name alone (docs/e2b.md).
 */
void
h_e2b_process_list(struct rq *r)
{
	static const char *const fields[] = { NULL };
	struct api_process *ps = NULL;
	struct api_error err;
	size_t n = 0;
	json_t *arr, *p;
	int rc;

	if (rq_fields(r, r->body, fields))
		return;
	memset(&err, 0, sizeof(err));
	rc = BE(r)->processes(BE(r)->ctx, &r->call, r->id, &ps, &n, &err);
	if (rc != API_OK) {
		free(ps);
		rq_backend_error(r, rc, &err);
		return;
	}
	if ((arr = json_array()) == NULL) {
		free(ps);
		rq_error(r, API_EINTERNAL, "Out of memory");
		return;
	}
	for (size_t i = 0; i < n; i++) {
		ps[i].cmd[sizeof(ps[i].cmd) - 1] = '\0';
		ps[i].status[sizeof(ps[i].status) - 1] = '\0';
		if (strcmp(ps[i].status, "running") != 0 ||
		    ps[i].pid > UINT32_MAX)
			continue;
		p = json_pack("{s:I,s:{s:o,s:[],s:{}}}", "pid",
		    (json_int_t)ps[i].pid, "config", "cmd",
		    bytes_string(ps[i].cmd, strlen(ps[i].cmd)), "args", "envs");
		if (p == NULL || json_array_append_new(arr, p) != 0) {
			json_decref(arr);
			free(ps);
			rq_error(r, API_EINTERNAL, "Out of memory");
			return;
		}
	}
	free(ps);
	rq_json(r, 200, json_pack("{s:o}", "processes", arr));
}

/* envd's Signal enum, by name (Connect's JSON) or number. */
static int
rpc_signal(json_t *v)
{
	static const struct {
		const char *name;
		int num;
	} sigs[] = { { "SIGNAL_SIGKILL", SIGKILL },
		{ "SIGNAL_SIGTERM", SIGTERM } };

	for (size_t i = 0; i < nitems(sigs); i++)
		if ((json_is_string(v) &&
		        strcmp(json_string_value(v), sigs[i].name) == 0) ||
		    (json_is_integer(v) &&
		        json_integer_value(v) == sigs[i].num))
			return sigs[i].num;
	return -1;
}

/*
 * SendSignalRequest {"process":{"pid"|"tag"},"signal"}: keep's kill of
 * the run (every process of its guest tree; TERM first lets them end,
 * KILL follows 5 s later). A pid that is no running run is not_found,
 * which the SDK's kill answers false to. A tag is not kept: 400.
 */
void
h_e2b_process_signal(struct rq *r)
{
	static const char *const fields[] = { "process", "signal", NULL };
	struct api_error err;
	uint64_t pid;
	int sig, rc;

	if (rq_fields(r, r->body, fields) || (pid = rpc_pid(r)) == 0)
		return;
	if ((sig = rpc_signal(json_object_get(r->body, "signal"))) < 0) {
		rq_error(r, API_EBADREQ,
		    "signal must be SIGNAL_SIGKILL or SIGNAL_SIGTERM");
		return;
	}
	memset(&err, 0, sizeof(err));
	rc = BE(r)->kill(BE(r)->ctx, &r->call, r->id, pid, sig, &err);
	if (rc != API_OK) {
		rq_backend_error(r, rc, &err);
		return;
	}
	rq_json(r, 200, json_object());
}

/* --- process.Process/SendInput and Update ---------------------------------- */

/* The run of pid in the request's sandbox whose input comes by other
 * requests (a pty, a streaming command), or NULL (a 404 sent). Only the
 * principal that started it reaches it (api_input_find). */
static struct api_pending *
rpc_proc(struct rq *r, uint64_t pid)
{
	struct api_pending *p = api_input_find(r->api, r->id, r->who.sub, pid);

	if (p == NULL)
		rq_error(r, API_ENOTFOUND,
		    "process with pid %llu not found in this sandbox",
		    (unsigned long long)pid);
	return p;
}

/* envd's refusal of input a process cannot take: failed_precondition. */
static void
rpc_precondition(struct rq *r, const char *msg)
{
	rq_fail(r, 412, "PRECONDITION_FAILED", msg);
}

/*
 * SendInputRequest {"process":{"pid"},"input":{"pty"|"stdin": base64}}:
 * a pty's input, or the stdin stream of a command started with stdin
 * true, at most API_INPUT_MAX bytes a request. What the program has not
 * read past its pipe's room is dropped (docs/e2b.md).
 */
void
h_e2b_process_input(struct rq *r)
{
	static const char *const fields[] = { "process", "input", NULL };
	static const char *const ifields[] = { "pty", "stdin", NULL };
	struct api_pending *p;
	unsigned char *bytes;
	const char *b64, *field;
	size_t blen, n, cap;
	uint64_t pid;
	json_t *in, *v;

	if (rq_fields(r, r->body, fields) || (pid = rpc_pid(r)) == 0)
		return;
	in = json_object_get(r->body, "input");
	if (!json_is_object(in) || rq_fields(r, in, ifields) ||
	    json_object_size(in) != 1) {
		if (r->status == 0)
			rq_error(r, API_EBADREQ,
			    "input must be {\"pty\"|\"stdin\": base64 bytes}");
		return;
	}
	field = json_object_get(in, "pty") != NULL ? "pty" : "stdin";
	if (!json_is_string(v = json_object_get(in, field))) {
		rq_error(
		    r, API_EBADREQ, "input.%s must be base64 bytes", field);
		return;
	}
	b64 = json_string_value(v);
	blen = json_string_length(v);
	if (blen > sodium_base64_ENCODED_LEN(
	               API_INPUT_MAX, sodium_base64_VARIANT_ORIGINAL)) {
		rq_error(r, API_ETOOLARGE,
		    "input is limited to %u bytes a request",
		    (unsigned)API_INPUT_MAX);
		return;
	}
	cap = blen / 4 * 3 + 3;
	if ((bytes = malloc(cap)) == NULL) {
		rq_error(r, API_EINTERNAL, "Out of memory");
		return;
	}
	if (sodium_base642bin(bytes, cap, b64, blen, NULL, &n, NULL,
	        sodium_base64_VARIANT_ORIGINAL) != 0) {
		free(bytes);
		rq_error(
		    r, API_EBADREQ, "input.%s must be base64 bytes", field);
		return;
	}
	if (n > API_INPUT_MAX) {
		free(bytes);
		rq_error(r, API_ETOOLARGE,
		    "input is limited to %u bytes a request",
		    (unsigned)API_INPUT_MAX);
		return;
	}
	if ((p = rpc_proc(r, pid)) != NULL) {
		const char *refused = NULL;

		if (field[0] == 'p' && !p->e2b_pty)
			refused = "tty not assigned to process: input goes to "
			          "its stdin";
		else if (field[0] == 's' && p->e2b_pty)
			refused = "tty assigned to process: input goes to the "
			          "pty";
		else if (field[0] == 's' && p->stdin_state != STDIN_OPEN)
			refused = "stdin not enabled or closed";
		if (refused != NULL)
			rpc_precondition(r, refused);
		else {
			BE(r)->terminal_input(
			    BE(r)->ctx, p, API_TERM_DATA, bytes, n, 0, 0);
			rq_json(r, 200, json_object());
		}
	}
	free(bytes);
}

/* CloseStdinRequest {"process":{"pid"}}: the stream's end, which the
 * program reads as EOF; later input is refused. */
void
h_e2b_process_close_stdin(struct rq *r)
{
	static const char *const fields[] = { "process", NULL };
	struct api_pending *p;
	uint64_t pid;

	if (rq_fields(r, r->body, fields) || (pid = rpc_pid(r)) == 0 ||
	    (p = rpc_proc(r, pid)) == NULL)
		return;
	if (p->e2b_pty) {
		rpc_precondition(r,
		    "cannot close stdin for PTY process: "
		    "send Ctrl+D (0x04) instead");
		return;
	}
	if (p->stdin_state != STDIN_OPEN) {
		rpc_precondition(r, "stdin not enabled or closed");
		return;
	}
	p->stdin_state = STDIN_CLOSED;
	BE(r)->terminal_input(BE(r)->ctx, p, API_TERM_EOF, NULL, 0, 0, 0);
	rq_json(r, 200, json_object());
}

/*
 * ConnectRequest {"process":{"pid"}} in one envelope: another reader of
 * a command's stream, which a Start of this principal's started in this
 * sandbox and which still runs (commands.connect): the start event (its
 * pid), what it writes from now on (not what it wrote before), its end.
 * A pty is not attached to (pty output is a screen; not_found).
 */
void
h_e2b_process_connect(struct rq *r)
{
	static const char *const fields[] = { "process", NULL };
	struct api_pending *p;
	struct api_error err;
	const char *msg;
	size_t mlen;
	uint64_t pid;
	int rc;

	if (e2b_envelope_one(r->req->body, r->req->body_len, &msg, &mlen) !=
	    0) {
		rq_error(r, API_EBADREQ,
		    "The body is not one uncompressed Connect envelope");
		return;
	}
	if ((r->body = rq_load_json(r, msg, mlen)) == NULL ||
	    rq_fields(r, r->body, fields) || (pid = rpc_pid(r)) == 0 ||
	    (p = rpc_proc(r, pid)) == NULL)
		return;
	if (p->e2b_pty) {
		rq_error(r, API_ENOTFOUND,
		    "connecting to a pty is not served (a command's stream "
		    "is)");
		return;
	}
	if (BE(r)->run_attach == NULL) {
		rq_error(r, API_ENOTIMPL, "Not implemented");
		return;
	}
	memset(&err, 0, sizeof(err));
	rc = BE(r)->run_attach(BE(r)->ctx, &r->call, p, pid, &err);
	if (rc == API_PENDING && r->pending != NULL)
		return;
	if (rc == API_OK || rc == API_PENDING)
		rc = API_EINTERNAL;
	rq_backend_error(r, rc, &err);
}

/* UpdateRequest {"process":{"pid"},"pty":{"size":{"cols","rows"}}}. */
void
h_e2b_process_update(struct rq *r)
{
	static const char *const fields[] = { "process", "pty", NULL };
	struct api_terminal t;
	struct api_pending *p;
	uint64_t pid;

	memset(&t, 0, sizeof(t));
	if (rq_fields(r, r->body, fields) || (pid = rpc_pid(r)) == 0 ||
	    parse_pty(r, json_object_get(r->body, "pty"), &t) ||
	    (p = rpc_proc(r, pid)) == NULL)
		return;
	if (!p->e2b_pty) {
		rpc_precondition(r, "tty not assigned to process");
		return;
	}
	BE(r)->terminal_input(
	    BE(r)->ctx, p, API_TERM_RESIZE, NULL, 0, t.cols, t.rows);
	rq_json(r, 200, json_object());
}

/* --- filesystem.Filesystem/WatchDir ---------------------------------------- */

/* A boolean that keep serves only as false (absent, null or false). */
static int
not_false(struct rq *r, const char *key)
{
	json_t *v = json_object_get(r->body, key);
	char msg[API_MSG_MAX];

	if (v == NULL || json_is_null(v) || json_is_false(v))
		return 0;

	snprintf(msg, sizeof(msg), "%s is not served by keep", key);
	rq_fail(r, 501, "NOT_IMPLEMENTED", msg);
	return -1;
}

/*
 * WatchDirRequest {"path","recursive","includeEntry","allowNetworkMounts"}
 * in one envelope: keep's files/watch (docs/api.yaml), its events as
 * envd's stream (api_watch.c). keep watches eight levels down whatever
 * recursive says; without it, only the directory's own entries are told.
 */
void
h_e2b_watch_dir(struct rq *r)
{
	static const char *const fields[] = { "path", "recursive",
		"includeEntry", "allowNetworkMounts", NULL };
	char path[PATH_MAX_API];
	struct api_error err;
	const char *msg;
	size_t mlen, n;
	json_t *rec;
	int rc;

	if (e2b_envelope_one(r->req->body, r->req->body_len, &msg, &mlen) !=
	    0) {
		rq_error(r, API_EBADREQ,
		    "The body is not one uncompressed Connect envelope");
		return;
	}
	if ((r->body = rq_load_json(r, msg, mlen)) == NULL ||
	    rq_fields(r, r->body, fields) || rpc_path(r, r->body, path) ||
	    not_false(r, "includeEntry") || not_false(r, "allowNetworkMounts"))
		return;
	rec = json_object_get(r->body, "recursive");
	if (rec != NULL && !json_is_boolean(rec) && !json_is_null(rec)) {
		rq_error(r, API_EBADREQ, "recursive must be a boolean");
		return;
	}
	/* keep's events name "/dir/x": the directory without a trailing
	 * slash, "/" itself kept. */
	for (n = strlen(path); n > 1 && path[n - 1] == '/'; n--)
		path[n - 1] = '\0';
	/* Before the watch: its pending reply takes these as it is made
	 * (api_defer), so even an event sent inside the op (ready) goes
	 * out as envd's. */
	if ((r->e2b_watch = strdup(path)) == NULL) {
		rq_error(r, API_EINTERNAL, "Out of memory");
		return;
	}
	r->e2b_watch_recursive = json_is_true(rec);
	memset(&err, 0, sizeof(err));
	rc = BE(r)->file_watch(BE(r)->ctx, &r->call, r->id, path, &err);
	/* Not taken: no pending reply was made. */
	free(r->e2b_watch);
	r->e2b_watch = NULL;
	if (rc == API_PENDING && r->pending != NULL)
		return;
	if (rc == API_OK || rc == API_PENDING)
		rc = API_EINTERNAL;
	rq_backend_error(r, rc, &err);
}
