#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes TensorFlow TensorProto files whose dim 0 is BATCH, made by repeating the rows of
the given ones (dtype, shape and tensor_content; no TensorFlow needed).

    repeat_feeds.py feed_0.pb [feed_1.pb ...] BATCH OUT_DIR    -> OUT_DIR/feed_<i>.pb
"""
import os
import sys


def varint(buf, i):
    v, shift = 0, 0
    while True:
        b = buf[i]
        i += 1
        v |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return v, i


def enc_varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def fields(buf):
    i = 0
    while i < len(buf):
        key, i = varint(buf, i)
        num, wire = key >> 3, key & 7
        if wire == 0:
            v, i = varint(buf, i)
        elif wire == 2:
            n, i = varint(buf, i)
            v, i = buf[i:i + n], i + n
        else:
            raise SystemExit(f"unsupported wire type {wire}")
        yield num, v


def field(num, payload):
    if isinstance(payload, int):
        return enc_varint(num << 3) + enc_varint(payload)
    return enc_varint(num << 3 | 2) + enc_varint(len(payload)) + payload


def main():
    *files, batch, out = sys.argv[1:]
    batch = int(batch)
    os.makedirs(out, exist_ok=True)
    for k, path in enumerate(files):
        dtype, dims, content = None, [], None
        for num, v in fields(open(path, "rb").read()):
            if num == 1:
                dtype = v
            elif num == 2:
                dims = [dict(fields(d)).get(1, 0) for n, d in fields(v) if n == 2]
            elif num == 4:
                content = v
        if dtype is None or not dims or content is None:
            raise SystemExit(f"{path}: expected dtype, a shape and tensor_content")
        row = len(content) // dims[0]
        rows = [content[i * row:(i + 1) * row] for i in range(dims[0])]
        data = b"".join(rows[i % dims[0]] for i in range(batch))
        shape = b"".join(field(2, field(1, d)) for d in [batch] + dims[1:])
        with open(os.path.join(out, f"feed_{k}.pb"), "wb") as f:
            f.write(field(1, dtype) + field(2, shape) + field(4, data))


if __name__ == "__main__":
    main()
