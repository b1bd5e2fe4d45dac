"""Types of the IR: tensors with a static shape and a dtype, and tuples of types."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# The dtypes the IR speaks; names follow numpy so that np.dtype(name) always works.
# float16 is stored as its IEEE binary16 bits in C (C99 has no portable half type); host kernels
# compute in float32 and round once when they store (docs/dtypes.md).
DTYPES = ("float32", "float16", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "bool")
FLOAT_DTYPES = ("float32", "float16", "float64")
INT_DTYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16")

# Shapes and sizes are int64 in generated C and in graph.json; the byte limit keeps a typo (a pad of 2**31)
# from reaching numpy's constant folding or the runtime's allocator as an opaque MemoryError.
INT64_MAX = (1 << 63) - 1
MAX_TENSOR_BYTES = 1 << 40


def _bytes_text(n: int) -> str:
    for unit, size in (("EiB", 1 << 60), ("PiB", 1 << 50), ("TiB", 1 << 40), ("GiB", 1 << 30)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n} bytes"


def shape_problem(shape: tuple, dtype: str) -> str | None:
    """Why a tensor of this shape cannot exist in a build (a dimension past int64, more than
    MAX_TENSOR_BYTES), or None. One sentence, for messages that say which op or input it is."""
    big = [d for d in shape if d > INT64_MAX]
    if big:
        return f"dimension {big[0]} does not fit in int64 (the largest is {INT64_MAX})"
    n = 1
    for d in shape:
        n *= d
    nbytes = n * np.dtype(dtype).itemsize
    if nbytes > MAX_TENSOR_BYTES:
        return (f"a {dtype} tensor of shape {tuple(shape)} would take {_bytes_text(nbytes)} ({n} elements); "
                f"byoc's limit is {_bytes_text(MAX_TENSOR_BYTES)} per tensor")
    return None


class Type:
    """Base class of every IR type."""

    __slots__ = ()


@dataclass(frozen=True)
class TensorType(Type):
    shape: tuple[int, ...]
    dtype: str = "float32"

    def __post_init__(self):
        shape = tuple(int(d) for d in self.shape)
        if any(d < 0 for d in shape):
            raise ValueError(f"tensor shape {shape} has a negative dimension")
        if self.dtype not in DTYPES:
            raise ValueError(f"unknown dtype {self.dtype!r}; known dtypes: {', '.join(DTYPES)}")
        problem = shape_problem(shape, self.dtype)
        if problem:
            raise ValueError(problem)
        object.__setattr__(self, "shape", shape)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def nbytes(self) -> int:
        return self.size * np.dtype(self.dtype).itemsize

    def __str__(self) -> str:
        dims = ", ".join(str(d) for d in self.shape)
        if len(self.shape) == 1:
            dims += ","
        return f"Tensor[({dims}), {self.dtype}]"


@dataclass(frozen=True)
class TupleType(Type):
    fields: tuple[Type, ...]

    def __post_init__(self):
        object.__setattr__(self, "fields", tuple(self.fields))

    def __str__(self) -> str:
        return "(" + ", ".join(str(f) for f in self.fields) + ("," if len(self.fields) == 1 else "") + ")"


def flatten_type(ty: Type) -> list[TensorType]:
    """The tensors a value of type `ty` consists of, in order (tuples flattened)."""
    if isinstance(ty, TensorType):
        return [ty]
    out: list[TensorType] = []
    for field in ty.fields:
        out.extend(flatten_type(field))
    return out
