/*
 * bench/store: audit appends per second, single (one durable transaction
 * each) and batched, beside the floor of a bare LMDB put+commit of the
 * same size in the same environment; then store round trips per second
 * over a SOCK_SEQPACKET socketpair (a child serves store_service_handle),
 * beside an empty ping-pong on the same kind of link and the direct call
 * without IPC. Each figure runs for BENCH_SECONDS (default 1).
 */
#include <sys/socket.h>
#include <sys/wait.h>

#include <lmdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "host/msg.h"
#include "host/proc.h"
#include "host/store/store.h"
#include "host/store/store_int.h"
#include "host/store/store_wire.h"

static double secs = 1.0;

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void
report(const char *what, long n, double t, double base)
{
	printf("%-44s %10.0f /s  %9.2f us each", what, n / t, t * 1e6 / n);
	if (base > 0)
		printf("  (%.2fx the floor)", (n / t) / base);
	printf("\n");
}

static struct store_audit
entry(void)
{
	struct store_audit e;

	memset(&e, 0, sizeof(e));
	e.time_ms = 1700000000000;
	e.request_id = "req-0123456789";
	e.principal = "agent-b";
	e.jti = "Zm9vYmFyYmF6cXV4MTIzNDU2";
	e.action = "sandbox:write";
	e.target = "sbx_0123456789";
	e.decision = STORE_DECISION_ALLOW;
	e.rule = "role builder (policy/main.policy:12)";
	e.detail = "";
	return e;
}

/* The floor: one put of an audit-sized value and a commit, in a bare
 * LMDB environment with the store's flags, beside the store's. */
static double
bare_lmdb(const char *dir, size_t vlen)
{
	uint8_t key[8], *val = calloc(1, vlen);
	MDB_env *env;
	MDB_dbi dbi;
	MDB_txn *txn;
	static uint64_t seq = 1;
	double t0, t;
	long n = 0;

	if (mdb_env_create(&env) != 0 || mdb_env_set_maxdbs(env, 1) != 0 ||
	    mdb_env_set_mapsize(env, 64u << 20) != 0 ||
	    mdb_env_open(env, dir, 0, 0600) != 0 ||
	    mdb_txn_begin(env, NULL, 0, &txn) != 0 ||
	    mdb_dbi_open(txn, "bench", MDB_CREATE, &dbi) != 0 ||
	    mdb_txn_commit(txn) != 0) {
		fprintf(stderr, "bare LMDB set-up failed\n");
		exit(1);
	}
	t0 = now_s();
	do {
		MDB_val k = { 8, key }, v = { vlen, val };

		store_be64(key, seq++);
		if (mdb_txn_begin(env, NULL, 0, &txn) != 0 ||
		    mdb_put(txn, dbi, &k, &v, MDB_APPEND) != 0 ||
		    mdb_txn_commit(txn) != 0) {
			fprintf(stderr, "bare LMDB put failed\n");
			exit(1);
		}
		n++;
	} while ((t = now_s() - t0) < secs);
	mdb_env_close(env);
	free(val);
	report("bare LMDB put+commit (floor)", n, t, 0);
	return n / t;
}

static void
appends(struct store *st, const char *label, size_t batch, double floor)
{
	struct store_audit *e = calloc(batch, sizeof(*e));
	double t0 = now_s(), t;
	long n = 0;

	for (size_t i = 0; i < batch; i++)
		e[i] = entry();
	do {
		int rc;

		if ((rc = store_audit_append(st, e, batch, NULL)) != STORE_OK) {
			fprintf(
			    stderr, "append failed: %s\n", store_strerror(rc));
			exit(1);
		}
		n += (long)batch;
	} while ((t = now_s() - t0) < secs);
	report(label, n, t, floor);
	free(e);
}

/* The child: serve requests on fd until EOF. */
static void
serve(int fd, struct store *st, int echo)
{
	static uint8_t buf[MSG_BUFSZ];
	struct store_service svc;

	memset(&svc, 0, sizeof(svc));
	svc.st = st;
	for (;;) {
		struct msg_hdr h;
		uint16_t rtype;
		void *reply;
		size_t len, rlen;
		int mfd;

		if (msg_recv(fd, buf, sizeof(buf), &len, &mfd) != MSG_OK)
			_exit(0);
		memcpy(&h, buf, sizeof(h));
		if (echo) {
			msg_send(fd, h.type, MSG_F_REPLY, h.reqid, NULL, 0, -1);
			continue;
		}
		(void)store_service_handle(&svc, (uint16_t)h.type, PROC_FRONT,
		    h.reqid, buf + sizeof(h), h.len, &rtype, &reply, &rlen);
		msg_send(fd, rtype, MSG_F_REPLY, h.reqid, reply, rlen, -1);
		free(reply);
	}
}

static struct store_config cfg = { 0, 8ull << 30, 0, 0, 0 };

static double
roundtrips(const char *dir, const char *label, uint16_t type, const void *msg,
    size_t len, int echo, double floor)
{
	static uint8_t buf[MSG_BUFSZ];
	int sv[2];
	pid_t pid;
	double t0, t;
	long n = 0;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) != 0) {
		perror("socketpair");
		exit(1);
	}
	if ((pid = fork()) == 0) {
		struct store *st = NULL;

		close(sv[0]);
		if (!echo && store_open(dir, &cfg, &st) != STORE_OK)
			_exit(1);
		serve(sv[1], st, echo);
	}
	close(sv[1]);
	t0 = now_s();
	do {
		size_t rlen;
		int fd;

		if (msg_send(sv[0], type, 0, (uint64_t)n + 1, msg, len, -1) !=
		        MSG_OK ||
		    msg_recv(sv[0], buf, sizeof(buf), &rlen, &fd) != MSG_OK) {
			fprintf(stderr, "round trip failed\n");
			exit(1);
		}
		n++;
	} while ((t = now_s() - t0) < secs);
	close(sv[0]);
	waitpid(pid, NULL, 0);
	report(label, n, t, floor);
	return n / t;
}

static void
direct(struct store *st, const char *label, uint16_t type, const void *msg,
    size_t len, double floor)
{
	struct store_service svc;
	double t0 = now_s(), t;
	long n = 0;

	memset(&svc, 0, sizeof(svc));
	svc.st = st;
	do {
		uint16_t rtype;
		void *reply;
		size_t rlen;

		(void)store_service_handle(
		    &svc, type, PROC_FRONT, 1, msg, len, &rtype, &reply, &rlen);
		free(reply);
		n++;
	} while ((t = now_s() - t0) < secs);
	report(label, n, t, floor);
}

int
main(void)
{
	char dir[] = "/tmp/bench_store.XXXXXX",
	     bare[] = "/tmp/bench_lmdb.XXXXXX";
	char path[64];
	struct store_audit e = entry();
	struct store_sandbox s;
	struct store *st;
	double floor, ping;
	void *msg, *rec;
	size_t len, rlen;

	if (getenv("BENCH_SECONDS") != NULL)
		secs = atof(getenv("BENCH_SECONDS"));
	if (secs <= 0)
		secs = 1.0;
	if (mkdtemp(dir) == NULL || mkdtemp(bare) == NULL ||
	    store_open(dir, &cfg, &st) != STORE_OK) {
		fprintf(stderr, "cannot open a store in /tmp\n");
		return 1;
	}
	printf("# store benchmark (durable commits: fdatasync each)\n");
	store_audit_encode(&e, &rec, &rlen);
	free(rec);
	floor = bare_lmdb(bare, rlen);
	appends(st, "audit append, 1 per transaction", 1, floor);
	/* Again: the first figure of a fresh file pays for its growth. */
	floor = bare_lmdb(bare, rlen);
	appends(st, "audit append, 1 per transaction", 1, floor);
	appends(st, "audit append, batches of 16", 16, floor);
	appends(st, "audit append, batches of 256", 256, floor);

	memset(&s, 0, sizeof(s));
	s.id = "sbx_1";
	s.image = "js";
	s.owner = "agent-b";
	s.status = STORE_SBX_RUNNING;
	store_sandbox_encode(&s, &rec, &rlen);
	store_put(st, STORE_DB_SANDBOXES, rec, rlen, 0);
	free(rec);

	printf("# round trips over a SOCK_SEQPACKET socketpair\n");
	ping = roundtrips(
	    dir, "empty ping-pong (IPC floor)", MSG_STORE_GET, NULL, 0, 1, 0);
	store_wire_key_encode(MSG_STORE_GET, STORE_DB_SANDBOXES, "sbx_1", NULL,
	    0, NULL, &msg, &len);
	roundtrips(dir, "GET sandbox", MSG_STORE_GET, msg, len, 0, ping);
	direct(st, "GET sandbox, direct call (no IPC)", MSG_STORE_GET, msg, len,
	    ping);
	free(msg);
	store_wire_audit_encode(&e, 1, &msg, &len);
	store_close(st);
	roundtrips(dir, "AUDIT append of 1 (durable)", MSG_STORE_AUDIT, msg,
	    len, 0, ping);
	free(msg);

	for (int i = 0; i < 2; i++) {
		const char *d = i ? bare : dir;

		snprintf(path, sizeof(path), "%s/data.mdb", d);
		unlink(path);
		snprintf(path, sizeof(path), "%s/lock.mdb", d);
		unlink(path);
		rmdir(d);
	}
	return 0;
}
