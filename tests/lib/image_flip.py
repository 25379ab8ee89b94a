"""Flip one byte (xor 0x40) in the middle of one file of a keep image,
written in place (the image's inode stays), so a deferred hash no longer
matches; run twice, the byte is back. With "pad", the byte flipped is in
the middle of the zero padding after the file instead. Tests only
(docs/image-format.md gives the layout).

usage: image_flip.py IMAGE GUEST-PATH [pad]
       (exit 1: no such file, or no padding after it)
"""
import struct
import sys

HEADER, COMMAND, FILE_ENTRY = 160, 80, 192


def main():
    path, want = sys.argv[1], sys.argv[2].encode()
    pad = sys.argv[3:] == ["pad"]
    with open(path, "r+b") as f:
        b = f.read()
        ncommands, nfiles = struct.unpack_from("<II", b, 28)
        payload = struct.unpack_from("<Q", b, 40)[0]
        for i in range(nfiles):
            e = HEADER + ncommands * COMMAND + i * FILE_ENTRY
            if b[e:e + 128].rstrip(b"\0") == want:
                off, size = struct.unpack_from("<QQ", b, e + 128)
                at = payload + off + size // 2
                if pad:
                    gap = -size % 4096
                    if gap == 0:
                        return 1
                    at = payload + off + size + gap // 2
                f.seek(at)
                f.write(bytes([b[at] ^ 0x40]))
                return 0
    return 1


sys.exit(main())
