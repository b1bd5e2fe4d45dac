"""ccompiler rules of the transformer ops: batched matmul, softmax and layer norm on the last axis, gelu.

Same shape as rules.py's table (op name -> Rule); rules.py merges RULES in. The op table
(__init__.py) takes softmax and layer norm only along the last axis, so each call is a [rows, n]
kernel call.
"""
from __future__ import annotations

import numpy as np

from byoc_compiler.vendor import float_literal, int64_array, int_literal, matmul_dims

from . import kernels
from .rule import Rule


def batch_matmul_dims(step):
    a, b = step.ins
    return matmul_dims(a.type.shape, b.type.shape, step.attrs["transpose_a"], step.attrs["transpose_b"])


def _offsets(shape, batch, matrix: int | None = None) -> list[int]:
    """Where each batch element's matrix starts in an operand whose batch dims broadcast to `batch`
    (matrices of `matrix` floats; default: the last two dims)."""
    own = tuple(shape[:-2])
    matrix = int(shape[-1]) * int(shape[-2]) if matrix is None else matrix
    flat = np.arange(kernels.element_count(own), dtype=np.int64).reshape(own) if own else np.zeros((), np.int64)
    return [int(v) * matrix for v in np.broadcast_to(flat, batch).ravel()]


def _batch_matmul(step):
    a, b = step.ins
    batch, m, k, n = batch_matmul_dims(step)
    prepacked = step.op == "batch_matmul_prepacked"   # B's matrices packed one after the other (prepack.py)
    matrix = kernels.gemm_packed_b_floats(n, k) if prepacked else None
    decls = [int64_array("a_offsets", _offsets(a.type.shape, batch) or [0]),
             int64_array("b_offsets", _offsets(b.type.shape, batch, matrix) or [0])]
    count = kernels.element_count(batch)
    head = (f"({int_literal(count)}, {int_literal(m)}, {int_literal(n)}, {int_literal(k)}, {a.ptr}, a_offsets, "
            f"{int(bool(step.attrs['transpose_a']))}, {b.ptr}, b_offsets")
    if prepacked:
        return decls, f"ck_batch_matmul_prepacked{head}, {step.outs[0].ptr}, {step.scratch_ptr})"
    return decls, (f"ck_batch_matmul{head}, {int(bool(step.attrs['transpose_b']))}, {step.outs[0].ptr}, "
                   f"{step.scratch_ptr})")


def _mnk(step):
    _, m, k, n = batch_matmul_dims(step)
    return m, n, k


def _rows(step):
    shape = step.ins[0].type.shape
    return kernels.element_count(shape[:-1]), int(shape[-1])


def _softmax(step):
    rows, n = _rows(step)
    return [], f"ck_softmax_rows({int_literal(rows)}, {int_literal(n)}, {step.ins[0].ptr}, {step.outs[0].ptr})"


def _layer_norm(step):
    rows, n = _rows(step)
    x, gamma, beta = step.ins
    return [], (f"ck_layer_norm_rows({int_literal(rows)}, {int_literal(n)}, {x.ptr}, {gamma.ptr}, {beta.ptr}, "
                f"{float_literal(step.attrs['epsilon'])}, {step.outs[0].ptr})")


def _gelu(step):
    approximate = int(step.attrs["approximate"] == "tanh")
    return [], (f"ck_gelu({int_literal(step.outs[0].type.size)}, {step.ins[0].ptr}, {step.outs[0].ptr}, "
                f"{approximate})")


def rules() -> dict:
    """The table (rules.py merges it into RULES)."""
    return {
        "nn.batch_matmul": Rule(_batch_matmul, lambda step: kernels.batch_matmul_workspace_bytes(*_mnk(step)),
                                lambda step: "ck_batch_matmul_workspace_bytes("
                                             + ", ".join(int_literal(v) for v in _mnk(step)) + ")"),
        # not an op: nn.batch_matmul on a constant B the codegen packed (prepack.py)
        "batch_matmul_prepacked": Rule(_batch_matmul,
                                       lambda step: kernels.gemm_prepacked_workspace_bytes(*_mnk(step)),
                                       lambda step: "ck_gemm_prepacked_workspace_bytes("
                                                    + ", ".join(int_literal(v) for v in _mnk(step)) + ")"),
        "nn.softmax": Rule(_softmax, inplace=(0,)),
        "nn.layer_norm": Rule(_layer_norm, inplace=(0,)),
        "nn.gelu": Rule(_gelu, inplace=(0,)),
    }
