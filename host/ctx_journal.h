/*
 * A live context's journal (docs/contexts.md, "Pause, persist,
 * resume"): the cells the context acknowledged, in order, so that a new
 * interpreter that runs them again comes to the same state. One file per
 * context (contexts/SANDBOX/CONTEXT under the state directory) and per
 * named snapshot (contexts/SANDBOX/snap-NAME): a fixed header, then
 * records.
 *
 *   header   struct ctx_journal_head, magic "KEEPJRN1"
 *   record   u32 len, 16-byte BLAKE2b of the payload, payload[len]
 *   payload  u32 code_len, u32 nenv, code, nenv x (u32 len, KEY=VALUE)
 *
 * A record is appended and fsynced before its cell's reply is sent: an
 * acknowledged cell is on disk. A record cut short by a crash fails its
 * length or hash and ends the journal there.
 *
 * ctx_journal_scan is pure (no I/O) and treats its input as hostile: the
 * files are the vmm's own, but a journal is also read back after crashes
 * and from disk another process could have touched.
 */
#ifndef KEEP_HOST_CTX_JOURNAL_H
#define KEEP_HOST_CTX_JOURNAL_H

#include <stddef.h>
#include <stdint.h>

#include "host/grant.h"
#include "host/vmm_msg.h"

#define CTX_JOURNAL_MAGIC "KEEPJRN1"
#define CTX_JOURNAL_HASH 16
#define CTX_JOURNAL_REC_HDR (4 + CTX_JOURNAL_HASH)
/* A cell's code and variables fit the cell pipe (1 MiB): with room. */
#define CTX_JOURNAL_PAYLOAD_MAX (4u << 20)
#define CTX_SNAP_NAME_MAX CTX_ID_MAX

enum ctx_journal_kind { CTX_JOURNAL_CONTEXT = 0, CTX_JOURNAL_SNAPSHOT = 1 };

struct ctx_journal_head {
	char magic[8];
	char name[CTX_ID_MAX]; /* the context's id, or the snapshot's name */
	char from[CTX_ID_MAX]; /* a snapshot's context, else "" */
	char sbx[SBX_ID_MAX];
	char owner[GRANT_PRINCIPAL_MAX];
	char cwd[CTX_CWD_MAX];
	uint32_t language; /* enum ctx_lang */
	uint32_t kind; /* enum ctx_journal_kind */
	int64_t created_at; /* unix seconds */
	uint64_t mem_max; /* the grant's at create, 0: the image's */
	uint64_t pause_ms; /* idle time before a pause, 0: never */
	uint64_t disk_max; /* the principal's snapshot quota, 0: none */
};

/*
 * Check a journal's bytes. On success (0) *head is the header, *cells the
 * number of whole, intact records and *valid the bytes up to the end of
 * the last of them (the rest, if any, is a torn tail to cut off). -1: not
 * a journal (bad magic, size, strings, language or kind).
 */
int ctx_journal_scan(const uint8_t *buf, size_t len,
    struct ctx_journal_head *head, uint64_t *cells, size_t *valid);

/* A payload's own shape: lengths that add up, no NUL in the code or a
 * variable. 0 when well-formed. */
int ctx_journal_payload_ok(const uint8_t *p, size_t len);

/* The record for payload p: header into rec[CTX_JOURNAL_REC_HDR]. */
void ctx_journal_record_head(
    const uint8_t *p, size_t len, uint8_t rec[CTX_JOURNAL_REC_HDR]);

#endif
