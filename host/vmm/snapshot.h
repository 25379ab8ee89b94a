/*
 * A paused context's memory image on disk (docs/contexts.md, "Pause,
 * persist, resume"): written by the context's vm process when the vmm
 * pauses it (host/vmm/snapshot.c), sealed by the vmm, and read back by
 * the next vm process of that context. What the vmm reads of it is this
 * seal only; the rest is the vm processes' business, and is parsed by
 * vm_snap_parse as hostile input.
 */
#ifndef KEEP_VMM_SNAPSHOT_H
#define KEEP_VMM_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>

#define VM_SNAP_MAGIC "KEEPMEM1"
#define VM_SNAP_END "KEEPMEMZ"
/* 3 (2026-12-06): the state holds the CPU-time timers and where the
 * stack's argument and environment strings lie; a version 2 image is
 * refused, and its context resumes from its journal. */
#define VM_SNAP_VERSION 3
#define VM_SNAP_META_MAX (64u << 20)

/* How a context's vm process ended when the vmm asked it to pause. */
#define VMM_EXIT_SAVED 90 /* the image is whole in its file */
#define VMM_EXIT_RESTORE_FAILED 91 /* it could not start from one */
#define VMM_EXIT_UNSAVED 92 /* its state cannot be saved (docs) */

/* At offset 0. The vm process writes everything but cells, image and
 * sealed, which the vmm writes once the vm process ended with
 * VMM_EXIT_SAVED and it checked file_len against the file. */
struct vm_snap_seal {
	char magic[8];
	uint32_t version;
	uint32_t seal_len; /* sizeof(struct vm_snap_seal) */
	uint64_t file_len; /* the whole file */
	uint64_t meta_len; /* the seal and everything before the pages */
	uint64_t memsz; /* the guest memory it was taken of */
	uint64_t cells; /* the context's acknowledged cells it holds */
	uint8_t image[32]; /* the digest of the image it was taken on */
	uint64_t sealed; /* 1 once the vmm sealed it */
};

/* The file's last bytes. */
struct vm_snap_end {
	char magic[8];
	uint64_t file_len;
};

/*
 * What a restore may accept, and what a parse found: vm_snap_parse
 * checks meta (meta_len bytes read from the start of a file of file_len
 * bytes) against the booting VM's layout, structure only (no guest
 * state is applied). 0, or -1 with err saying why.
 */
struct vm_snap_layout {
	uint64_t memsz, low_end, mmap_lo, mmap_hi, nfds, nfiles;
	uint64_t file_len;
};

int vm_snap_parse(const uint8_t *meta, size_t meta_len,
    const struct vm_snap_layout *lay, char *err, size_t errlen);

#endif
