"""Flip one byte (xor 0x40) in the middle of one file of a keep image,
written in place (the image's inode stays), so a deferred hash no longer
matches; run twice, the byte is back. Tests only (docs/image-format.md
gives the layout).

usage: image_flip.py IMAGE GUEST-PATH   (exit 1: no such file)
"""
import struct
import sys

HEADER, COMMAND, FILE_ENTRY = 160, 80, 192


def main():
    path, want = sys.argv[1], sys.argv[2].encode()
    with open(path, "r+b") as f:
        b = f.read()
        ncommands, nfiles = struct.unpack_from("<II", b, 28)
        payload = struct.unpack_from("<Q", b, 40)[0]
        for i in range(nfiles):
            e = HEADER + ncommands * COMMAND + i * FILE_ENTRY
            if b[e:e + 128].rstrip(b"\0") == want:
                off, size = struct.unpack_from("<QQ", b, e + 128)
                at = payload + off + size // 2
                f.seek(at)
                f.write(bytes([b[at] ^ 0x40]))
                return 0
    return 1


sys.exit(main())
