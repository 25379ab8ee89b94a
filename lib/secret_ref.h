/*
 * Secret references in a run's environment (docs/secrets.md): a value
 * such as "Bearer ${{ secrets.github-token }}" names the secret
 * github-token, whose value the vmm puts in its place. Pure functions,
 * no allocation: the front uses them to find the names a run asks for,
 * the vmm to expand them, the policy language to check names.
 *
 * Syntax: "${{", optional blanks, "secrets.", a name, optional blanks,
 * "}}". A name is 1 to SECRET_NAME_MAX letters, digits, '-' or '_'.
 * Any "${{" in a value must begin a well-formed reference: a typo is an
 * error, never text passed on as it is.
 */
#ifndef KEEP_SECRET_REF_H
#define KEEP_SECRET_REF_H

#include <stddef.h>

#define SECRET_NAME_MAX 63
#define SECRET_VALUE_MIN 4 /* shorter values could not be redacted */
#define SECRET_VALUE_MAX 4096
#define SECRET_RUN_MAX 16 /* distinct secrets in one run */

struct secret_ref {
	size_t start, end; /* the reference is s[start, end) */
	const char *name; /* inside s, not NUL-terminated */
	size_t name_len;
};

/* 1 if s[0, len) is a secret name. */
int secret_name_ok(const char *s, size_t len);

/*
 * Find the first reference in s[*pos, len). Returns 1 and fills *ref
 * (and moves *pos past it), 0 when there is none, -1 when a "${{" does
 * not begin a well-formed reference.
 */
int secret_ref_next(
    const char *s, size_t len, size_t *pos, struct secret_ref *ref);

/* The value of a name, or NULL when the run was not given it. */
typedef const char *(*secret_lookup_fn)(
    void *arg, const char *name, size_t name_len, size_t *value_len);

/*
 * Expand every reference in s[0, len) into out (outmax bytes, NUL
 * included). Returns 0 with *outlen set, -1 on a malformed reference,
 * a name lookup does not know, or an out too small.
 */
int secret_ref_expand(const char *s, size_t len, secret_lookup_fn lookup,
    void *arg, char *out, size_t outmax, size_t *outlen);

#endif
