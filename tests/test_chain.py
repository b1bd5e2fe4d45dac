"""A 100,000-node chain goes through every whole-graph stage without RecursionError."""
from __future__ import annotations

import numpy as np
import pytest

from byoc_compiler import op
from byoc_compiler.ir import Call, ExprMutator, ExprVisitor, Function, IRModule, TensorType, Var
from byoc_compiler.testing import run_reference
from byoc_compiler.transform.infer_type import infer_type

LENGTH = 100_000


@pytest.fixture(scope="module")
def chain():
    x = Var("x", TensorType((3,), "float32"))
    value = x
    for i in range(LENGTH):
        value = op.add(value, x) if i % 2 == 0 else op.nn.relu(value)
    return IRModule.from_expr(Function([x], value))


def test_chain_type_checks(chain):
    mod = infer_type(chain)
    assert mod["main"].ret_type == TensorType((3,), "float32")
    assert mod["main"].body.checked_type == TensorType((3,), "float32")


def test_chain_visitor_sees_every_call(chain):
    class Count(ExprVisitor):
        calls = 0

        def visit_call(self, call):
            self.calls += 1

    counter = Count()
    counter.visit(chain["main"].body)
    assert counter.calls == LENGTH


def test_chain_mutator_rewrites_every_relu(chain):
    class ReluToAbs(ExprMutator):
        def rewrite_call(self, original, rebuilt):
            if original.op.name == "nn.relu":
                return op.abs(rebuilt.args[0])
            return rebuilt

    body = ReluToAbs().visit(chain["main"].body)
    assert isinstance(body, Call) and body.op.name == "abs"
    mod = IRModule.from_expr(Function(chain["main"].params, body))
    x = np.array([-1.0, 0.0, 2.0], np.float32)
    (out,) = run_reference(mod, [x])
    want = x.astype(np.float64)
    for i in range(LENGTH):
        want = want + x if i % 2 == 0 else np.abs(want)
    np.testing.assert_allclose(out, want, rtol=1e-6)


def test_chain_runs_in_the_reference(chain):
    x = np.array([-1.0, 0.0, 2.0], np.float32)
    (out,) = run_reference(chain, [x])
    want = x.astype(np.float64)
    for i in range(LENGTH):
        want = want + x if i % 2 == 0 else np.maximum(want, 0)
    np.testing.assert_allclose(out, want, rtol=1e-6)
