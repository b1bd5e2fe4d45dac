"""The zoo: every model builds, type-checks, runs, is deterministic, and computes what it claims."""
from __future__ import annotations

import numpy as np
import pytest

from byoc_compiler import zoo
from byoc_compiler.ir import Constant, Function, Tuple, Var, op_counts, post_order
from byoc_compiler.testing import run_reference

NAMES = ["byoc_guide", "mlp", "small_cnn", "residual_block", "multi_output"]


def test_names():
    assert zoo.names() == NAMES


@pytest.mark.parametrize("name", NAMES)
def test_model_is_typed_runs_and_is_deterministic(name):
    mod = zoo.get(name)
    main = mod["main"]
    assert main.ret_type is not None
    outs = run_reference(mod, zoo.inputs(name))
    again = run_reference(zoo.get(name), zoo.inputs(name))
    for a, b in zip(outs, again):
        np.testing.assert_array_equal(a, b)
        assert a.dtype == np.float32 and np.all(np.isfinite(a))
    other = run_reference(mod, zoo.inputs(name, seed=1))
    assert not np.array_equal(outs[0], other[0])


@pytest.mark.parametrize("name", NAMES)
def test_weights_are_constants_and_inputs_are_params(name):
    main = zoo.get(name)["main"]
    nodes = post_order(main.body, into_functions=True)
    vars_used = {id(n) for n in nodes if isinstance(n, Var)}
    assert vars_used == {id(p) for p in main.params}
    assert set(zoo.inputs(name)) == {p.name_hint for p in main.params}
    consts = [n for n in nodes if isinstance(n, Constant)]
    assert all(c.data.dtype == np.float32 for c in consts)
    if name != "byoc_guide":
        assert consts


def test_get_returns_fresh_modules():
    assert zoo.get("mlp")["main"] is not zoo.get("mlp")["main"]


def test_byoc_guide_is_add_subtract_multiply():
    main = zoo.get("byoc_guide")["main"]
    assert [p.name_hint for p in main.params] == ["a", "b", "c", "d"]
    calls = [n.op.name for n in post_order(main.body) if hasattr(n, "op")]
    assert calls == ["add", "subtract", "multiply"]
    inputs = zoo.inputs("byoc_guide")
    (out,) = run_reference(zoo.get("byoc_guide"), inputs)
    a, b, c, d = (inputs[k] for k in "abcd")
    np.testing.assert_array_equal(out, (a + b - c) * d)  # float32 all the way, like the C kernels
    assert out.shape == (10, 10)


def test_mlp_matches_a_direct_numpy_computation():
    main = zoo.get("mlp")["main"]
    consts = [n.data.astype(np.float64) for n in post_order(main.body) if isinstance(n, Constant)]
    x = zoo.inputs("mlp")["x"].astype(np.float64)
    h = x
    for i in range(3):
        w, b = consts[2 * i], consts[2 * i + 1]
        h = h @ w.T + b
        if i < 2:
            h = np.maximum(h, 0)
    h = np.exp(h - h.max()) / np.exp(h - h.max()).sum()
    (out,) = run_reference(zoo.get("mlp"), zoo.inputs("mlp"))
    np.testing.assert_allclose(out, h, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("name,ops", [
    ("mlp", {"nn.dense": 3, "nn.bias_add": 3, "nn.relu": 2, "nn.softmax": 1}),
    ("small_cnn", {"nn.conv2d": 2, "nn.batch_norm": 2, "nn.relu": 2, "nn.max_pool2d": 2, "nn.batch_flatten": 1,
                   "nn.dense": 1, "nn.bias_add": 1, "nn.softmax": 1}),
    ("residual_block", {"nn.conv2d": 2, "nn.batch_norm": 2, "nn.relu": 2, "add": 1}),
    ("multi_output", {"nn.lrn": 1, "concatenate": 1, "split": 1}),
], ids=lambda v: v if isinstance(v, str) else "")
def test_model_structure(name, ops):
    counts = op_counts(zoo.get(name)["main"].body)
    for op_name, n in ops.items():
        assert counts[op_name] == n, (op_name, counts)


def test_multi_output_returns_a_tuple_from_one_input():
    main = zoo.get("multi_output")["main"]
    assert isinstance(main.body, Tuple) and len(main.body.fields) == 3
    assert len(main.params) == 1
    assert len(run_reference(zoo.get("multi_output"), zoo.inputs("multi_output"))) == 3


def test_residual_block_adds_the_input():
    # With the input shifted by a constant the skip path shifts too: relu(f(x) + x) differs.
    mod = zoo.get("residual_block")
    (out,) = run_reference(mod, zoo.inputs("residual_block"))
    assert out.shape == (1, 8, 8, 8) and out.min() >= 0


def test_small_cnn_output_is_a_distribution():
    (out,) = run_reference(zoo.get("small_cnn"), zoo.inputs("small_cnn"))
    assert out.shape == (1, 10)
    np.testing.assert_allclose(out.sum(), 1.0, rtol=1e-6)


def test_unknown_model_lists_the_zoo():
    with pytest.raises(ValueError, match="unknown zoo model 'resnet51'; the zoo has: byoc_guide, mlp.*, resnet50"):
        zoo.get("resnet51")
    with pytest.raises(ValueError, match="unknown zoo model"):
        zoo.inputs("resnet51")


def test_zoo_functions_are_functions():
    assert all(isinstance(zoo.get(n)["main"], Function) for n in NAMES)
