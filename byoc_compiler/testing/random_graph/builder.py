"""The generator's state: the values built so far with their types and magnitude bounds, and the random
choices the makers draw from. `Builder.step` appends an op only if its own type inference accepts it and
the result stays in range (no int32 overflow, floats within FLOAT_BOUND), so a recipe is well-typed by
construction.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ...ir.types import TensorType, TupleType
from ...op.registry import get_op_def
from .recipe import Const, Input, Step


# Dimension sizes drawn for new tensors: 1-element, odd, small primes; large primes for short ranks.
SMALL_DIMS = (1, 2, 3, 4, 5, 7, 8, 13)
PRIME_DIMS = (31, 61, 97)
MAX_ELEMENTS = 4096
FLOAT_BOUND = 1e4        # no float value grows past this (exp is guarded by clip)
INT_BOUND = 1 << 20      # int32 values stay far from overflow


@dataclass
class _Slot:
    ty: TensorType
    bound: float


@dataclass
class Builder:
    rng: np.random.Generator
    values: list = field(default_factory=list)
    slots: list = field(default_factory=list)
    const_seed: int = 0

    def shape(self, i: int) -> tuple[int, ...]:
        return tuple(self.slots[i].ty.shape)

    def dtype(self, i: int) -> str:
        return self.slots[i].ty.dtype

    def bound(self, i: int) -> float:
        return self.slots[i].bound

    def input(self, shape, dtype) -> int:
        name = f"x{sum(isinstance(v, Input) for v in self.values)}"
        return self._push(Input(name, tuple(shape), dtype), TensorType(tuple(shape), dtype),
                          1.0 if dtype == "float32" else 8.0)

    def const(self, shape, dtype, low=-1.0, high=1.0) -> int:
        self.const_seed += 1
        return self._push(Const(tuple(shape), dtype, low, high, self.const_seed), TensorType(tuple(shape), dtype),
                          max(abs(low), abs(high)))

    def step(self, op: str, args, bound: float, field_: int | None = None, **attrs) -> int | None:
        """Append `op(args, **attrs)` if it type-checks and stays in range; its index, else None."""
        opdef = get_op_def(op)
        try:
            normalized = opdef.normalize_attrs(attrs)
            arg_types = [self.slots[i].ty for i in args]
            if opdef.tuple_input:
                arg_types = [TupleType(arg_types)]
            ty = opdef.infer(arg_types, normalized)
        except (TypeError, ValueError):
            return None
        if isinstance(ty, TupleType):
            ty = ty.fields[field_ or 0]
            field_ = field_ or 0
        if not isinstance(ty, TensorType) or 0 in ty.shape or math.prod(ty.shape) > MAX_ELEMENTS:
            return None
        limit = FLOAT_BOUND if ty.dtype == "float32" else INT_BOUND
        if not bound <= limit:
            return None
        return self._push(Step(op, tuple(args), tuple(sorted(attrs.items())), field_), ty, bound)

    def _push(self, value, ty, bound) -> int:
        self.values.append(value)
        self.slots.append(_Slot(ty, float(bound)))
        return len(self.values) - 1

    def pick(self, dtype: str | None = None, rank: int | None = None, min_rank: int = 0) -> int | None:
        """A random earlier value (recent ones more likely) of this dtype/rank."""
        candidates = [i for i, s in enumerate(self.slots)
                      if (dtype is None or s.ty.dtype == dtype) and (rank is None or len(s.ty.shape) == rank)
                      and len(s.ty.shape) >= min_rank and not isinstance(self.values[i], Const)]
        if not candidates:
            return None
        weights = np.arange(1, len(candidates) + 1, dtype=float) ** 2
        return int(self.rng.choice(candidates, p=weights / weights.sum()))

    def choice(self, seq):
        return seq[int(self.rng.integers(len(seq)))]


def broadcast_partner(b: Builder, x: int) -> tuple[int, ...]:
    """A shape that broadcasts with x's: some dims set to 1, maybe fewer leading dims, maybe a 1 in front."""
    shape = list(b.shape(x))
    out = [1 if b.rng.random() < 0.4 else d for d in shape]
    if out and b.rng.random() < 0.3:
        out = out[int(b.rng.integers(len(out))):]
    if len(out) < 4 and b.rng.random() < 0.15:
        out = [1] + out
    return tuple(out)


def random_shape(b: Builder) -> tuple[int, ...]:
    while True:
        shape = _draw_shape(b)
        if math.prod(shape) <= MAX_ELEMENTS:
            return shape


def _draw_shape(b: Builder) -> tuple[int, ...]:
    rank = int(b.rng.integers(1, 5))
    if rank <= 2 and b.rng.random() < 0.4:
        dims = [b.choice(PRIME_DIMS)] + [b.choice(SMALL_DIMS) for _ in range(rank - 1)]
        b.rng.shuffle(dims)
        return tuple(dims)
    return tuple(b.choice(SMALL_DIMS) for _ in range(rank))
