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
