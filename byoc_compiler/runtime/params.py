"""The params blob (docs/runtime-abi.md): magic "BYOCPRM1", u32 count, then per tensor
u32 name_len, name, u8 code, u8 bits, u16 lanes, u32 ndim, i64 shape[ndim], u64 nbytes, data;
all little-endian. The C reader is runtime/src/params.c."""
import struct

import numpy as np

from .dtypes import from_dl, to_dl

MAGIC = b"BYOCPRM1"


def save_params(params: dict) -> bytes:
    """Serialize {name: array} in the dict's order; data is written little-endian, C order."""
    out = [MAGIC, struct.pack("<I", len(params))]
    for name, value in params.items():
        if not isinstance(name, str) or not name or "\0" in name:
            raise ValueError(f"param name {name!r} must be a non-empty string without NUL")
        arr = np.asarray(value)
        code, bits, lanes = to_dl(arr.dtype)
        raw = name.encode("utf-8")
        data = np.ascontiguousarray(arr, dtype=arr.dtype.newbyteorder("<")).tobytes(order="C")
        out.append(struct.pack("<I", len(raw)) + raw)
        out.append(struct.pack("<BBHI", code, bits, lanes, arr.ndim))
        out.append(struct.pack(f"<{arr.ndim}q", *arr.shape))
        out.append(struct.pack("<Q", len(data)) + data)
    return b"".join(out)


def load_params(blob: bytes) -> dict:
    """Inverse of save_params; ValueError naming the problem on a malformed blob."""
    view = memoryview(bytes(blob))
    pos = 0

    def take(n, what):
        nonlocal pos
        if len(view) - pos < n:
            raise ValueError(f"params blob: truncated while reading {what} (offset {pos})")
        chunk = view[pos:pos + n]
        pos += n
        return chunk

    if bytes(take(8, "the magic")) != MAGIC:
        raise ValueError(f"params blob: bad magic (expected {MAGIC!r})")
    (count,) = struct.unpack("<I", take(4, "the count"))
    result = {}
    for i in range(count):
        (name_len,) = struct.unpack("<I", take(4, f"tensor {i}'s name length"))
        name = bytes(take(name_len, f"tensor {i}'s name")).decode("utf-8")
        code, bits, lanes, ndim = struct.unpack("<BBHI", take(8, f"tensor {name!r}'s dtype"))
        if ndim > 32:
            raise ValueError(f"params blob: tensor {name!r} has ndim {ndim}")
        shape = struct.unpack(f"<{ndim}q", take(8 * ndim, f"tensor {name!r}'s shape"))
        (nbytes,) = struct.unpack("<Q", take(8, f"tensor {name!r}'s byte count"))
        dtype = from_dl(code, bits, lanes)
        if any(d < 0 for d in shape) or nbytes != int(np.prod(shape, dtype=np.int64)) * dtype.itemsize:
            raise ValueError(f"params blob: tensor {name!r}: {nbytes} bytes do not match shape {shape} {dtype}")
        if name in result:
            raise ValueError(f"params blob: tensor name {name!r} appears twice")
        data = take(nbytes, f"tensor {name!r}'s data")
        result[name] = np.frombuffer(data, dtype=dtype.newbyteorder("<")).astype(dtype).reshape(shape)
    if pos != len(view):
        raise ValueError(f"params blob: {len(view) - pos} trailing bytes")
    return result
