#!/usr/bin/env python3
"""Writes the hand-made seeds of the ld.so.cache fuzz corpus (ok-ldconfig-*.cache come from
`ldconfig -r <root> -C /etc/ld.so.cache [-c compat]` on a root holding libz and libzstd)."""
import os
import struct
import sys


def new_format(records):
    header = 48
    strings = b""
    entries = b""
    base = header + 24 * len(records)
    for flags, name, path in records:
        key = base + len(strings)
        strings += name.encode() + b"\0"
        value = base + len(strings)
        strings += path.encode() + b"\0"
        entries += struct.pack("<iIIIQ", flags, key, value, 0, 0)
    head = b"glibc-ld.so.cache1.1" + struct.pack("<IIB3xI12x", len(records), len(strings), 2, 0)
    return head + entries + strings


def main(out):
    recs = [(0x0303, "libcuda.so.1", "/usr/lib/x86_64-linux-gnu/libcuda.so.1"),
            (0x0003, "libcuda.so.1", "/usr/lib/i386-linux-gnu/libcuda.so.1")]
    seeds = {
        "ok-two-entries.cache": new_format(recs),
        "ok-empty-table.cache": new_format([]),
        "err-truncated.cache": new_format(recs)[:60],
        "err-legacy-only.cache": b"ld.so-1.7.0\0" + struct.pack("<I", 0),
    }
    for name, data in seeds.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "corpus", "ld_so_cache"))
