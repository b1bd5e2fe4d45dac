"""Test-only targets and small graph builders shared by the partitioning tests."""
from __future__ import annotations

import contextlib

import numpy as np

from byoc_compiler import op
from byoc_compiler.target import Target, register_target, unregister_target
from byoc_compiler.ir import IRModule, TensorType, Var, const
from byoc_compiler.pattern import is_constant, is_op, wildcard

F32 = TensorType((1, 8), "float32")


def make_targets() -> dict[str, Target]:
    """tA: elementwise + concat + batch_norm; tB: add/subtract/tanh/softmax; tP: a pattern only."""
    ta = Target("tA", description="test target A")
    ta.supports("add", "multiply", "nn.relu", "exp", "concatenate", "nn.batch_norm", "nn.dense", "nn.bias_add",
                "split")
    ta.supports("subtract", predicate=lambda call: None if call.checked_type.shape[-1] != 3 else "width 3")
    tb = Target("tB", description="test target B")
    tb.supports("add", "subtract", "tanh", "nn.softmax")
    tp = Target("tP", description="test target with a composite pattern only")
    tp.pattern("dense_bias_relu", is_op("nn.relu")(is_op("nn.bias_add")(is_op("nn.dense")(wildcard(), is_constant()),
                                                                          is_constant())))
    return {"tA": ta, "tB": tb, "tP": tp}


@contextlib.contextmanager
def registered():
    targets = make_targets()
    for t in targets.values():
        register_target(t)
    try:
        yield targets
    finally:
        for name in targets:
            unregister_target(name)


def x_var(name: str = "x", ty: TensorType = F32) -> Var:
    return Var(name, ty)


def module(expr) -> IRModule:
    return IRModule.from_expr(expr)


def rand(shape, seed: int = 0, dtype: str = "float32") -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def cst(shape, seed: int = 1):
    return const(rand(shape, seed))


__all__ = ["make_targets", "registered", "x_var", "module", "rand", "cst", "op", "F32"]


def assert_same_outputs(before, after, inputs, rtol=1e-6, atol=1e-6):
    """Partitioning keeps the meaning: the reference interpreter gives `after` the outputs of `before`."""
    from byoc_compiler.testing import run_reference

    want = run_reference(before, inputs)
    got = run_reference(after, inputs)
    assert len(got) == len(want)
    for w, g in zip(want, got):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
