"""ccompiler's transformer kernels (ck_transformer.c) built into a region and run: batched matmul with
broadcast batch dims and transposes, softmax and layer norm on the last axis, both gelus; against the
numpy reference of the unpartitioned model, on gcc and clang. Off-last-axis softmax stays on the host."""
from __future__ import annotations

import numpy as np
import pytest

import needs

from byoc_compiler import op, partition_for
from byoc_compiler.backend.build import build
from byoc_compiler.ir import Function, IRModule, TensorType, Var, const
from byoc_compiler.testing.reference import run_reference

RNG = np.random.default_rng(21)
COMPILERS = needs.compilers()   # config.toml's [build] toolchains: a missing one skips, or fails in CI


def _w(*shape):
    return const(RNG.standard_normal(shape).astype(np.float32))


def _model():
    x = Var("x", TensorType((2, 1, 5, 12)))
    y = Var("y", TensorType((3, 7, 12)))
    scores = op.nn.batch_matmul(x, y, transpose_b=True)                 # (2, 3, 5, 7), broadcast batch
    probs = op.nn.softmax(scores, axis=-1)
    context = op.nn.batch_matmul(probs, y)                              # (2, 3, 5, 12)
    h = op.nn.layer_norm(context, _w(12), _w(12), epsilon=1e-3)
    h = op.add(op.nn.gelu(h), op.nn.gelu(h, "tanh"))
    h = op.nn.batch_matmul(_w(5, 2), h, transpose_a=True)              # (2, 3, 2, 12)
    side = op.nn.softmax(h, axis=1)                                     # not the last axis: host
    return IRModule.from_expr(Function([x, y], op.add(h, side)))


@pytest.mark.parametrize("cc", COMPILERS)
def test_transformer_kernels_match_reference(cc):
    needs.programs(cc)
    mod = _model()
    part = partition_for("ccompiler", mod)
    region_ops = {n.op.name for f in part.functions.values() if f.attrs.get("Compiler") == "ccompiler"
                  for n in __import__("byoc_compiler.ir", fromlist=["post_order"]).post_order(f.body)
                  if hasattr(n, "op") and hasattr(n.op, "name")}
    assert {"nn.batch_matmul", "nn.softmax", "nn.layer_norm", "nn.gelu"} <= region_ops
    inputs = [RNG.standard_normal((2, 1, 5, 12)).astype(np.float32), RNG.standard_normal((3, 7, 12)).astype(np.float32)]
    loaded = build(part, toolchain=cc).load(werror=True)
    loaded.set_input("x", inputs[0])
    loaded.set_input("y", inputs[1])
    loaded.run()
    want = run_reference(mod, inputs)[0]
    np.testing.assert_allclose(loaded.get_output(0), want, rtol=1e-4, atol=1e-5)
