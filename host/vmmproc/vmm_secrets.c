/*
 * Secrets, on the vmm's side (docs/secrets.md). The vmm alone holds the
 * key that opens stored secrets. A run's secrets arrive just before it
 * (MSG_VMM_RUN_SECRET, one each), each with the policy's grant for
 * secret:read on its name; the vmm opens a value only under such a
 * grant, puts it where the run's environment refers to it, and keeps it
 * for the life of the run so that every occurrence of it in the run's
 * output becomes "***" before the output leaves this process.
 */
#include "host/vmmproc/vmm_int.h"
#include "lib/fdio.h"
#include "lib/redact.h"
#include "lib/secret_ref.h"
#include "host/egress/inject.h"

int
vmm_h_secret_key(struct proc_ctx *ctx, const struct msg *m)
{
	struct vmm_state *vs = ctx->arg;
	static const uint8_t zero[32];

	memcpy(&vs->secret_key, m->data, sizeof(vs->secret_key));
	vs->have_secret_key =
	    sodium_memcmp(vs->secret_key.sk, zero, sizeof(zero)) != 0;
	return 0;
}

void
vmm_secrets_free(struct vmm_run_secrets *rs)
{
	if (rs == NULL)
		return;
	sodium_memzero(rs, sizeof(*rs));
	free(rs);
}

int
vmm_h_run_secret(struct proc_ctx *ctx, const struct msg *m)
{
	struct vmm_state *vs = ctx->arg;
	struct msg_vmm_run_secret q;
	struct vmm_run_secrets *rs = vs->pending_secrets;
	struct vmm_secret *sec;
	unsigned long long len;
	struct grant g;

	memcpy(&q, m->data, sizeof(q));
	if (memchr(q.name, '\0', sizeof(q.name)) == NULL || q.pad != 0 ||
	    !secret_name_ok(q.name, strlen(q.name)) || q.sealed_len == 0 ||
	    q.sealed_len > sizeof(q.sealed) ||
	    q.sealed_len < crypto_box_SEALBYTES)
		return -1;
	/* Secrets sent for an earlier request that never came are stale. */
	if (rs != NULL && rs->reqid != m->hdr.reqid) {
		vmm_secrets_free(rs);
		vs->pending_secrets = rs = NULL;
	}
	if (vmm_check_grant(ctx, m, &q.grant, CAP_SECRET_READ, q.name, &g) != 0)
		return -1;
	if (rs == NULL) {
		if ((rs = calloc(1, sizeof(*rs))) == NULL)
			return -1;
		rs->reqid = m->hdr.reqid;
		vs->pending_secrets = rs;
	}
	if (!vs->have_secret_key || rs->n >= nitems(rs->s)) {
		log_warnx("%s: secret %s for run %llu dropped: %s", __func__,
		    q.name, (unsigned long long)m->hdr.reqid,
		    vs->have_secret_key ? "too many" : "no secrets key");
		return 0;
	}
	sec = &rs->s[rs->n];
	len = q.sealed_len - crypto_box_SEALBYTES;
	if (len < SECRET_VALUE_MIN || len > sizeof(sec->value) ||
	    crypto_box_seal_open(sec->value, q.sealed, q.sealed_len,
	        vs->secret_key.pk, vs->secret_key.sk) != 0) {
		sodium_memzero(sec, sizeof(*sec));
		log_warnx("%s: secret %s does not open with this key", __func__,
		    q.name);
		return 0;
	}
	sec->len = (size_t)len;
	strlcpy(sec->name, q.name, sizeof(sec->name));
	if (g.flags & GRANT_F_SECRET_EGRESS) {
		uint8_t r[16];

		randombytes_buf(r, sizeof(r));
		sec->at_egress = 1;
		if (egress_placeholder_make(q.name, r, sec->placeholder,
		        sizeof(sec->placeholder)) != 0) {
			sodium_memzero(sec, sizeof(*sec));
			return 0;
		}
	}
	strlcpy(sec->principal, g.principal, sizeof(sec->principal));
	rs->n++;
	return 0;
}

/* The secrets sent for this run, those granted to its principal; NULL
 * when none. The pending set is forgotten either way. */
struct vmm_run_secrets *
vmm_secrets_take(struct vmm_state *vs, uint64_t reqid, const char *principal)
{
	struct vmm_run_secrets *rs = vs->pending_secrets;
	size_t i, k = 0;

	vs->pending_secrets = NULL;
	if (rs == NULL || rs->reqid != reqid) {
		vmm_secrets_free(rs);
		return NULL;
	}
	for (i = 0; i < rs->n; i++)
		if (strcmp(rs->s[i].principal, principal) == 0) {
			if (k != i)
				rs->s[k] = rs->s[i];
			k++;
		}
	for (i = k; i < rs->n; i++)
		sodium_memzero(&rs->s[i], sizeof(rs->s[i]));
	rs->n = k;
	if (k == 0) {
		vmm_secrets_free(rs);
		return NULL;
	}
	return rs;
}

static const char *
lookup(void *arg, const char *name, size_t name_len, size_t *value_len)
{
	const struct vmm_run_secrets *rs = arg;
	size_t i;

	for (i = 0; rs != NULL && i < rs->n; i++)
		if (strlen(rs->s[i].name) == name_len &&
		    memcmp(rs->s[i].name, name, name_len) == 0) {
			/* Injected at egress: the guest gets the
			 * placeholder only. */
			if (rs->s[i].at_egress) {
				*value_len = strlen(rs->s[i].placeholder);
				return rs->s[i].placeholder;
			}
			*value_len = rs->s[i].len;
			return (const char *)rs->s[i].value;
		}
	return NULL;
}

/*
 * For the run's egress relay (host/vmm_egress.h): the value and
 * placeholder of a secret the run was given to be injected at egress.
 * 0, or -1 when the run holds no such secret. With name NULL: whether
 * the run holds any (nothing is returned).
 */
int
vmm_secrets_for_egress(void *arg, const char *name, const uint8_t **value,
    size_t *len, const char **placeholder)
{
	const struct job *j = arg;
	const struct vmm_run_secrets *rs = j->secrets;
	size_t i;

	for (i = 0; rs != NULL && i < rs->n; i++)
		if (rs->s[i].at_egress && name == NULL)
			return 0;
		else if (rs->s[i].at_egress &&
		    strcmp(rs->s[i].name, name) == 0) {
			*value = rs->s[i].value;
			*len = rs->s[i].len;
			*placeholder = rs->s[i].placeholder;
			return 0;
		}
	return -1;
}

/*
 * Put the secrets' values into the request's variables envp[0, n) that
 * refer to them ("K=... ${{ secrets.NAME }} ..."). A variable that was
 * expanded points into bufs[i] (malloc; the caller zeroes and frees).
 * -1 when a reference names a secret this run was not given (or a value
 * holds a NUL, which a variable cannot carry).
 */
int
vmm_secrets_expand(
    const struct vmm_run_secrets *rs, const char **envp, size_t n, char **bufs)
{
	size_t i, k, room, out;
	const char *eq;

	for (i = 0; i < n; i++) {
		bufs[i] = NULL;
		if (strstr(envp[i], "${{") == NULL)
			continue;
		if ((eq = strchr(envp[i], '=')) == NULL)
			return -1;
		k = (size_t)(eq + 1 - envp[i]);
		/* Each reference is at least 14 bytes and becomes at most
		 * a value's length. */
		room = strlen(envp[i]) + 1 +
		    (strlen(envp[i]) / 14 + 1) * sizeof(rs->s[0].value);
		if ((bufs[i] = malloc(room)) == NULL)
			return -1;
		memcpy(bufs[i], envp[i], k);
		if (secret_ref_expand(eq + 1, strlen(eq + 1), lookup,
		        (void *)rs, bufs[i] + k, room - k, &out) != 0 ||
		    memchr(bufs[i] + k, '\0', out) != NULL)
			return -1;
		envp[i] = bufs[i];
	}
	return 0;
}

static void
values_of(const struct vmm_run_secrets *rs, struct redact_value *v)
{
	size_t i;

	for (i = 0; i < rs->n; i++) {
		v[i].v = rs->s[i].value;
		v[i].len = rs->s[i].len;
	}
}

/*
 * A streaming run's new output on stream s (0 stdout, 1 stderr), from
 * its memfd fd, redacted: what is decided goes out at offset sent[s] of
 * the redacted stream; a tail that may begin a value waits. Returns 1
 * if something was sent, 0 if nothing, -1 on a failed send.
 */
int
vmm_secrets_stream(struct proc_ctx *ctx, struct job *j, int s, int fd)
{
	struct {
		struct msg_vmm_run_output h;
		uint8_t data[32768];
	} m;
	struct redact_value v[16];
	uint8_t in[32768];
	struct stat st;
	size_t used, outlen;
	ssize_t n;

	if (fstat(fd, &st) == -1 || st.st_size < 0 ||
	    (uint64_t)st.st_size <= j->raw[s])
		return 0;
	if ((n = pread(fd, in, sizeof(in), (off_t)j->raw[s])) <= 0)
		return 0;
	values_of(j->secrets, v);
	used = redact_step(v, j->secrets->n, in, (size_t)n, 0, m.data, &outlen);
	sodium_memzero(in, sizeof(in));
	if (used == 0)
		return 0;
	memset(&m.h, 0, sizeof(m.h));
	m.h.stream = (uint32_t)s + 1;
	m.h.offset = j->sent[s];
	m.h.pad0 = 0;
	m.h.run_pid = 0;
	if (outlen > 0 &&
	    msg_send(ctx->fd[j->from], MSG_VMM_RUN_OUTPUT, 0, j->reqid, &m,
	        sizeof(m.h) + outlen, -1) != MSG_OK)
		return -1;
	j->raw[s] += used;
	j->sent[s] += outlen;
	return 1;
}

/* Redact the whole of fd into out; its length in *len. */
static int
redact_file(
    const struct redact_value *v, size_t nv, int fd, int out, uint64_t *len)
{
	struct stat st;
	uint8_t *in = NULL, *red = NULL;
	size_t outlen;
	int rc = -1;

	if (fstat(fd, &st) == -1 || st.st_size < 0)
		return -1;
	if (st.st_size == 0) {
		*len = 0;
		return 0;
	}
	if ((in = malloc((size_t)st.st_size)) == NULL ||
	    (red = malloc((size_t)st.st_size)) == NULL ||
	    pread(fd, in, (size_t)st.st_size, 0) != st.st_size)
		goto out;
	(void)redact_step(v, nv, in, (size_t)st.st_size, 1, red, &outlen);
	if (write_all(out, red, outlen) != 0)
		goto out;
	*len = outlen;
	rc = 0;
out:
	if (in != NULL) {
		sodium_memzero(in, (size_t)st.st_size);
		free(in);
	}
	free(red);
	return rc;
}

/*
 * At the end of a run given secrets: its stdout and stderr memfds are
 * replaced by redacted copies, before the output is joined and sent.
 * What streamed already was redacted the same way, so it is a prefix.
 */
int
vmm_secrets_redact_output(struct job *j)
{
	struct redact_value v[16];
	uint64_t len;
	int fds[2] = { -1, -1 }, s;

	values_of(j->secrets, v);
	for (s = 0; s < 2; s++) {
		if ((fds[s] = memfd_new(
		         s == 0 ? "keep-stdout" : "keep-stderr")) == -1 ||
		    redact_file(v, j->secrets->n, s == 0 ? j->outfd : j->errfd,
		        fds[s], &len) != 0)
			goto fail;
	}
	close(j->outfd);
	close(j->errfd);
	j->outfd = fds[0];
	j->errfd = fds[1];
	return 0;
fail:
	for (s = 0; s < 2; s++)
		if (fds[s] != -1)
			close(fds[s]);
	return -1;
}
