#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Packs an onnxruntime-gpu wheel small enough to carry to a machine that cannot download it:
the CUDA provider's device code is kept for one GPU architecture only (the other entries of its
fat binaries are zeroed, their headers kept, so the driver still finds the one it loads), the
TensorRT provider is dropped, and the rest is xz-compressed and split into pieces.

    python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 \
        --platform manylinux_2_28_x86_64 -d whl onnxruntime-gpu
    python3 benchmarks/cuda/pack_ort_gpu.py whl/onnxruntime_gpu-*.whl --arch=90 --piece-mb=36 --out=ortpack
    # there: cat ortpack/ort.tar.xz.* | xz -d | tar -x -C /tmp/ort && PYTHONPATH=/tmp/ort python3 ...

onnxruntime-gpu 1.31.1 (CUDA 13): 255 MB wheel -> 70 MB for sm_90 (the provider's fat binaries
hold sm_75, 80, 86, 89, 90 and 120 machine code and no PTX).
"""
import argparse
import io
import os
import struct
import tarfile
import zipfile

import lzma

FATBIN_MAGIC = 0xBA55ED50


def section(data, name):
    """(offset, size) of ELF64 section `name`."""
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    str_off, = struct.unpack_from("<Q", data, shoff + shstrndx * shentsize + 0x18)
    for i in range(shnum):
        base = shoff + i * shentsize
        name_at, = struct.unpack_from("<I", data, base)
        end = data.index(b"\0", str_off + name_at)
        if data[str_off + name_at:end].decode() == name:
            off, size = struct.unpack_from("<QQ", data, base + 0x18)
            return off, size
    raise SystemExit(f"no section {name}")


def keep_arch(data, arch):
    """Zeroes the payload of every fat-binary entry not for `arch`; returns bytes kept per arch."""
    off, size = section(data, ".nv_fatbin")
    pos, end, kept = off, off + size, {}
    while pos < end:
        magic, _, hsz, fsz = struct.unpack_from("<IHHQ", data, pos)
        if magic != FATBIN_MAGIC:
            pos += 8
            continue
        e, fend = pos + hsz, pos + hsz + fsz
        while e < fend:
            _, _, ehs, esz = struct.unpack_from("<HHIQ", data, e)
            a, = struct.unpack_from("<I", data, e + 28)
            kept[a] = kept.get(a, 0) + esz
            if a != arch:
                data[e + ehs:e + ehs + esz] = bytes(esz)
            e += ehs + esz
        pos = fend
    return kept


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("wheel")
    ap.add_argument("--arch", type=int, default=90)
    ap.add_argument("--piece-mb", type=int, default=36)
    ap.add_argument("--out", default="ortpack")
    a = ap.parse_args()
    buf = io.BytesIO()
    with zipfile.ZipFile(a.wheel) as z, tarfile.open(fileobj=buf, mode="w") as t:
        for info in z.infolist():
            if info.is_dir() or info.filename.endswith("libonnxruntime_providers_tensorrt.so"):
                continue
            data = bytearray(z.read(info))
            if info.filename.endswith("libonnxruntime_providers_cuda.so"):
                kept = keep_arch(data, a.arch)
                print("fat-binary bytes by architecture:", {k: round(v / 1e6, 1) for k, v in sorted(kept.items())}, "MB")
            ti = tarfile.TarInfo(info.filename)
            ti.size = len(data)
            ti.mode = 0o755 if info.filename.endswith(".so") or ".so." in info.filename else 0o644
            t.addfile(ti, io.BytesIO(bytes(data)))
    packed = lzma.compress(buf.getvalue(), preset=6)
    os.makedirs(a.out, exist_ok=True)
    step = a.piece_mb * 1000 * 1000
    for k in range(0, len(packed), step):
        with open(os.path.join(a.out, f"ort.tar.xz.{k // step:02d}"), "wb") as f:
            f.write(packed[k:k + step])
    print(f"{len(packed) / 1e6:.1f} MB in {(len(packed) + step - 1) // step} pieces under {a.out}/")


if __name__ == "__main__":
    main()
