"""run_reference: inputs by name or position, clear input errors, tuple outputs, partitioned modules."""
from __future__ import annotations

import numpy as np
import pytest

from byoc_compiler import op
from byoc_compiler.ir import Call, Function, GlobalVar, IRModule, TensorType, Tuple, TupleGetItem, Var, const
from byoc_compiler.testing import run_reference


def f32(*shape):
    return TensorType(shape, "float32")


def _affine():
    x, y = Var("x", f32(2, 3)), Var("y", f32(3))
    return IRModule.from_expr(Function([x, y], op.add(op.multiply(x, const(2.0)), y)))


X = np.arange(6, dtype=np.float32).reshape(2, 3)
Y = np.array([1, -1, 0.5], np.float32)
WANT = [[1, 1, 4.5], [7, 7, 10.5]]


@pytest.mark.parametrize("inputs", [
    {"x": X, "y": Y}, {"y": Y, "x": X}, [X, Y], (X, Y), {"x": X.tolist(), "y": Y.tolist()},
], ids=["dict", "dict-other-order", "list", "tuple", "python-lists"])
def test_inputs_by_name_or_position(inputs):
    outs = run_reference(_affine(), inputs)
    assert len(outs) == 1 and outs[0].dtype == np.float32
    assert outs[0].tolist() == WANT


@pytest.mark.parametrize("inputs,fragments", [
    ({"x": X}, ["missing input 'y'", "main takes x, y"]),
    ({"x": X, "y": Y, "z": Y}, ["unknown input 'z'"]),
    ([X], ["main takes 2 inputs (x, y), got 1"]),
    ({"x": X.T.copy(), "y": Y}, ["input 'x'", "shape (2, 3)", "shape (3, 2)"]),
    ({"x": X.astype(np.float64), "y": Y}, ["input 'x'", "expected float32", "given float64"]),
    ({"x": X, "y": Y.astype(np.int32)}, ["input 'y'", "given int32"]),
    (np.stack([Y, Y]), ["a list of arrays in parameter order (x, y)", "not one array"]),
], ids=["missing", "extra", "too-few", "wrong-shape", "wrong-dtype", "int-for-float", "one-array"])
def test_bad_inputs_are_named(inputs, fragments):
    with pytest.raises(ValueError) as info:
        run_reference(_affine(), inputs)
    for fragment in fragments:
        assert fragment in str(info.value)


def test_tuple_outputs_are_flattened_in_order():
    x = Var("x", f32(4))
    halves = op.split(x, 2)
    body = Tuple([op.negative(x), Tuple([TupleGetItem(halves, 1), TupleGetItem(halves, 0)])])
    outs = run_reference(IRModule.from_expr(Function([x], body)), [np.arange(4, dtype=np.float32)])
    assert [o.tolist() for o in outs] == [[-0.0, -1, -2, -3], [2, 3], [0, 1]]


def test_tuple_valued_op_output():
    x = Var("x", f32(1, 2))
    stats = [const(np.array(v, np.float32)) for v in ([1, 1], [0, 0], [0, 2], [1, 4])]
    outs = run_reference(IRModule.from_expr(Function([x], op.nn.batch_norm(x, *stats, epsilon=0.0))),
                         [np.array([[3, 4]], np.float32)])
    assert [o.tolist() for o in outs] == [[[3, 1]], [0, 2], [1, 4]]


def _byoc_guide_partitioned():
    """(a + b - c) * d, with a + b - c handed to an external function and * d in a composite."""
    p, q, r = Var("p", f32(2, 2)), Var("q", f32(2, 2)), Var("r", f32(2, 2))
    ext = Function([p, q, r], op.subtract(op.add(p, q), r),
                   attrs={"Compiler": "ccompiler", "global_symbol": "ccompiler_0", "Primitive": 1})
    m, n = Var("m"), Var("n")
    composite = Function([m, n], op.multiply(m, n), attrs={"Composite": "mul", "Primitive": 1})
    a, b, c, d = (Var(n, f32(2, 2)) for n in "abcd")
    main = Function([a, b, c, d], Call(composite, [Call(GlobalVar("ccompiler_0"), [a, b, c]), d]))
    return IRModule({"main": main, "ccompiler_0": ext})


def test_partitioned_module_runs_globals_and_composites():
    rng = np.random.default_rng(3)
    arrays = {n: rng.standard_normal((2, 2)).astype(np.float32) for n in "abcd"}
    (out,) = run_reference(_byoc_guide_partitioned(), arrays)
    want = [[(float(arrays["a"][i, j]) + float(arrays["b"][i, j]) - float(arrays["c"][i, j])) * float(arrays["d"][i, j])
             for j in range(2)] for i in range(2)]
    np.testing.assert_allclose(out, want, rtol=1e-6)


def test_accepts_a_bare_function():
    x = Var("x", f32(2))
    assert run_reference(Function([x], op.abs(x)), [np.array([-1, 2], np.float32)])[0].tolist() == [1, 2]


def test_shared_subexpression_runs_once_and_is_reused():
    x = Var("x", f32(3))
    shared = op.exp(x)
    body = op.add(shared, shared)
    (out,) = run_reference(IRModule.from_expr(Function([x], body)), [np.zeros(3, np.float32)])
    assert out.tolist() == [2, 2, 2]


def test_type_errors_surface_before_numpy_runs():
    from byoc_compiler.transform.infer_type import TypeInferenceError

    x = Var("x", f32(2, 3))
    with pytest.raises(TypeInferenceError, match="nn.dense"):
        run_reference(IRModule.from_expr(Function([x], op.nn.dense(x, const(np.ones((2, 2), np.float32))))), [X])
