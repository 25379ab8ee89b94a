#!/usr/bin/env bash
# splice, tee and vmsplice (docs/vmm.md, "Pipes and waiting"):
# tests/guests/splice.c moves a file into a pipe and a pipe into a file
# at offsets, copies a pipe with tee and leaves it whole, vmsplices both
# ways, waits in a splice for a forked writer, and makes Linux's EINVAL,
# ESPIPE, EAGAIN and EBADF; its output natively and in keep must be the
# same bytes. Before, all three were ENOSYS (CPython's test_os skipped
# its splice tests).
source "$(dirname "$0")/../lib/guest.sh"

mkdir -p "$tmp/native" "$tmp/ws"
timeout 60 "$G/splice" "$tmp/native" >"$tmp/native.out" 2>&1
"$KEEP" run --timeout "$(slow 60)s" --workspace "$tmp/ws" "$G/splice" / >"$tmp/keep.out" 2>&1
like_native "splice, tee and vmsplice in keep" "$tmp/native.out" "$tmp/keep.out"

[ $fails -eq 0 ] || exit 1
