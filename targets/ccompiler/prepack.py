"""Which constant weights the ccompiler codegen packs once, at codegen time, instead of on every call.

One table, PREPACK: op -> Prepack. For a step of that op whose weight input is a constant, `when` says
whether packing pays, `pack` makes the packed array (numpy mirrors of the kernel library's packers, in
kernels.py) and the step becomes `op` (a RULES entry calling the library's *_prepacked function on it).
passes.prepack_weights applies the table; one packed copy per (constant, op, `key`), and a raw weight
nothing else reads is dropped.

Every layout here is the same for every CPU the library dispatches to (24-row slivers of A for conv2d,
32-column slivers of B for the gemms, whatever micro-kernel runs), so what is decided here holds on the
machine that runs the code, cross toolchains included (the codegen's byte-order writer stores the array).

When:
  - conv2d: always, unless padding each group's output channels to 24 adds more than a quarter to the
    weight (few channels per group; depthwise is never packed, its direct kernel reads the weight);
  - dense, matmul, batch_matmul (constant B): when each product has more than one row (batch x sequence
    rows in a transformer). One row runs a dot-product kernel straight on the unpacked weight (nothing
    is packed per call there), 2.5x faster than the register tiles on a packed one (bench/kernels.py,
    fc 2048->1000). Two rows run two such passes when not packed (ck_gemm.c): faster while the weight
    is in cache (fc 2048->1000: 245 against 310 us), slower from memory (4096 x 4096: 6.1 against
    4.2 ms); packed it is, real models' weights being the large ones. Not packed either where padding
    N to 32 columns adds more than a quarter (a 10-class classifier: packing per call costs little
    next to the rows).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from . import kernels, winograd
from .rules import conv2d_params, matmul_mnk
from .rules_transformer import batch_matmul_dims

MAX_GROWTH = 1.25   # a packed copy at most this many times the weight's bytes


@dataclass(frozen=True)
class Prepack:
    op: str                       # the rule that runs on the packed constant
    weight: int                   # which input of the step is the weight
    when: Callable                # step -> packing pays
    pack: Callable                # (step, weight ndarray) -> the packed array
    key: Callable = lambda step: ()  # what else (besides the constant) the packed layout depends on
    function: str = ""            # the kernel the note names
    pick: Callable | None = None  # step -> another Prepack that applies instead (an algorithm chosen per shape), or None


def _fits(packed_bytes: int, step, index: int) -> bool:
    return 0 < packed_bytes <= MAX_GROWTH * step.ins[index].buffer.nbytes


# ---- conv2d ----------------------------------------------------------------------------------------

def _conv2d_when(step) -> bool:
    return _fits(kernels.conv2d_packed_weight_bytes(conv2d_params(step)), step, 1)


def _conv2d_pack(step, weight):
    return kernels.pack_conv2d_weight(conv2d_params(step), weight)


def _conv2d_pick(step):
    """Stride-1 3x3 convolutions where winograd.tile picks F(m x m, 3 x 3): its transformed weight instead."""
    return WINOGRAD if winograd.tile(conv2d_params(step)) else None


def _winograd_pack(step, weight):
    p = conv2d_params(step)
    return winograd.pack_weight(p, winograd.tile(p), weight)


# (the transformed weight is 16/9 of the weight's size for F(2x2): no MAX_GROWTH test)
WINOGRAD = Prepack("conv2d_winograd", 1, lambda step: True, _winograd_pack,
                   key=lambda step: tuple(sorted(conv2d_params(step).items())), function="ck_conv2d_winograd")


# ---- dense, matmul, batch_matmul: B packed ahead ------------------------------------------------------

def _dense_when(step) -> bool:
    data, weight = step.ins[0], step.ins[1]
    rows = kernels.element_count(data.type.shape[:-1])
    n, k = (int(d) for d in weight.type.shape)
    return rows > 1 and _fits(4 * kernels.gemm_packed_b_floats(n, k), step, 1)


def _dense_pack(step, weight):
    return kernels.pack_gemm_b(weight.T)          # B[k, n] = weight[n, k]^T


def _matmul_b(step, b):
    """op(b) as [k, n] (a view)."""
    return b.T if step.attrs["transpose_b"] else b


def _matmul_when(step) -> bool:
    m, n, k = matmul_mnk(step)
    return m > 1 and _fits(4 * kernels.gemm_packed_b_floats(n, k), step, 1)


def _matmul_pack(step, b):
    return kernels.pack_gemm_b(_matmul_b(step, b))


def _batch_matmul_when(step) -> bool:
    _, m, k, n = batch_matmul_dims(step)
    matrices = kernels.element_count(step.ins[1].type.shape[:-2])
    return m > 1 and _fits(4 * matrices * kernels.gemm_packed_b_floats(n, k), step, 1)


def _batch_matmul_pack(step, b):
    """Each of B's own matrices packed, one after the other (rules_transformer's offsets count in them)."""
    flat = b.reshape((-1,) + b.shape[-2:])
    return np.concatenate([kernels.pack_gemm_b(_matmul_b(step, matrix)) for matrix in flat])


def _transpose_b(step):
    return (bool(step.attrs["transpose_b"]),)


PREPACK: dict[str, Prepack] = {
    "nn.conv2d": Prepack("conv2d_prepacked", 1, _conv2d_when, _conv2d_pack,
                         key=lambda step: tuple(sorted(conv2d_params(step).items())), function="ck_conv2d_prepacked",
                         pick=_conv2d_pick),
    "nn.dense": Prepack("dense_prepacked", 1, _dense_when, _dense_pack, function="ck_dense_prepacked"),
    "nn.matmul": Prepack("matmul_prepacked", 1, _matmul_when, _matmul_pack, key=_transpose_b,
                         function="ck_matmul_prepacked"),
    "nn.batch_matmul": Prepack("batch_matmul_prepacked", 1, _batch_matmul_when, _batch_matmul_pack,
                               key=_transpose_b, function="ck_batch_matmul_prepacked"),
}
