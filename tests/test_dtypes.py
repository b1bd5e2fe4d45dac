"""The narrow and wide dtypes (int8, int16, uint8, uint16, float16, float64) through the whole stack:
the cast rule against explicit per-element Python, casts in the runner's C against numpy, ONNX import
and its messages. The round trips (text format, params, graph.json, .npy in both byte orders, both
executors, big-endian) are the table of tests/test_dtype_round_trips.py."""
from __future__ import annotations

import json
import math

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from byoc_compiler import op
from byoc_compiler.backend.build import build
from byoc_compiler.frontend import from_onnx
from byoc_compiler.ir import Constant, Function, IRModule, Tuple, Var
from byoc_compiler.ir.types import TensorType
from byoc_compiler.op.cast_rule import cast_array
from byoc_compiler.testing.reference import run_reference

NEW = ("int8", "int16", "uint8", "uint16", "float16", "float64")
ONNX_TYPES = {"int8": TensorProto.INT8, "int16": TensorProto.INT16, "uint8": TensorProto.UINT8,
              "uint16": TensorProto.UINT16, "float16": TensorProto.FLOAT16, "float64": TensorProto.DOUBLE}


def sample(dtype: str, shape, seed: int = 0) -> np.ndarray:
    """Values covering the dtype: both extremes for integers; -0, denormals, large values for floats."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        a = rng.integers(info.min, info.max, shape, endpoint=True).astype(dt)
        a.flat[0], a.flat[-1] = info.min, info.max
        return a
    a = (rng.standard_normal(shape) * 100).astype(dt)
    a.flat[0] = -0.0
    a.flat[1] = np.finfo(dt).smallest_subnormal
    a.flat[-1] = np.finfo(dt).max
    return a


# ---- the cast rule, against per-element Python -----------------------------------------------------

def _python_float_to_int(v: float, lo: int, hi: int) -> int:
    if math.isnan(v):
        return 0
    if math.isinf(v):
        return hi if v > 0 else lo
    return min(max(math.trunc(v), lo), hi)


@pytest.mark.parametrize("src", ["float16", "float32", "float64"])
@pytest.mark.parametrize("dst", ["int8", "int16", "int32", "int64", "uint8", "uint16"])
def test_float_to_int_truncates_and_saturates(src, dst):
    values = [0.0, -0.0, 0.5, -0.5, 1.99, -1.99, 127.5, -128.5, 128.0, -129.0, 255.9, 256.0, 32767.5, -32768.9,
              65535.5, 65536.0, 2.0 ** 31, -2.0 ** 31 - 1e3, 2.0 ** 63, -2.0 ** 63, 1e30, -1e30,
              math.inf, -math.inf, math.nan]
    with np.errstate(over="ignore"):
        x = np.array(values, np.float64).astype(src)
    info = np.iinfo(dst)
    want = [_python_float_to_int(float(v), int(info.min), int(info.max)) for v in x]
    got = cast_array(x, dst)
    assert got.dtype == np.dtype(dst)
    assert got.tolist() == want


@pytest.mark.parametrize("src", ["int16", "int32", "int64", "uint16"])
@pytest.mark.parametrize("dst", ["int8", "uint8", "int16"])
def test_int_to_narrower_int_wraps(src, dst):
    info_src = np.iinfo(src)
    x = np.array([info_src.min, -1 if info_src.min < 0 else 0, 127, 128, 255, 256, 32767, info_src.max], src)
    bits = np.iinfo(dst).bits
    signed = np.iinfo(dst).min < 0

    def wrap(v: int) -> int:
        v %= 1 << bits
        return v - (1 << bits) if signed and v >= 1 << (bits - 1) else v

    assert cast_array(x, dst).tolist() == [wrap(int(v)) for v in x]


def test_float16_rounds_half_to_even_from_the_exact_value():
    # 1 + 2^-11 is halfway between two halves: ties go to the even one (1.0); a float64 just above the
    # tie rounds up even though its float32 rounding is the tie itself.
    x = np.array([1 + 2.0 ** -11, 1 + 3 * 2.0 ** -11, 1 + 2.0 ** -11 + 2.0 ** -40, 65519.0, 65520.0], np.float64)
    got = cast_array(x, "float16").astype(np.float64).tolist()
    assert got == [1.0, 1 + 2 * 2.0 ** -10, 1 + 2.0 ** -10, 65504.0, math.inf]


# ---- text format, params, graph.json, .npy: tests/test_dtype_round_trips.py (dtype x path table) ------

# ---- the runner: .npy in both byte orders, graph.json, both executors --------------------------------

def _model(dtype: str):
    x = Var("x", TensorType((2, 3), dtype))
    y = Var("y", TensorType((1, 3), dtype))
    c = Constant(sample(dtype, (7, 3), seed=11))   # 21 elements: a parameter, not an inline literal
    body = Tuple([op.concatenate([x, y, c], axis=0), op.cast(x, "float64"), op.cast(y, "int64")
                  if np.dtype(dtype).kind in "iu" else op.cast(y, "float32")])
    return IRModule.from_expr(Function([x, y], body)), c.data


# One executor per dtype, alternating: the round-trip table builds both for every dtype.
@pytest.mark.parametrize("dtype,executor", [(d, ("graph", "aot")[i % 2]) for i, d in enumerate(NEW)])
def test_runner_reads_both_byte_orders_and_writes_the_dtype(dtype, executor):
    mod, c = _model(dtype)
    x, y = sample(dtype, (2, 3), seed=1), sample(dtype, (1, 3), seed=2)
    lib = build(mod, executor=executor, interface="packed")
    if executor == "graph":
        graph = json.loads(lib.graph_json)
        assert dtype in graph["attrs"]["dltype"][1]
    # x little-endian, y big-endian in the .npy files the runner reads
    got = lib.run_runner([x.astype(x.dtype.newbyteorder("<")), y.astype(y.dtype.newbyteorder(">"))], werror=True)
    with np.errstate(over="ignore"):   # float64's max is beyond float32: inf
        want = [np.concatenate([x, y, c]), x.astype(np.float64),
                y.astype(np.int64) if np.dtype(dtype).kind in "iu" else y.astype(np.float32)]
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        assert g.tobytes() == w.tobytes()
    ref = run_reference(mod, {"x": x, "y": y})
    assert all(r.tobytes() == w.tobytes() for r, w in zip(ref, want))


# ---- ONNX ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", NEW)
def test_onnx_imports_the_dtype_and_casts(dtype):
    """x (dtype) -> Cast(float) -> Add w -> Cast(back to dtype); checked against onnxruntime."""
    import onnxruntime as ort  # a test dependency (pyproject's test extras), never optional
    elem = ONNX_TYPES[dtype]
    small = sample(dtype, (2, 4), seed=5)
    if np.dtype(dtype).kind in "iu":
        # keep x + w in range: ONNX leaves out-of-range casts undefined
        small = (small // 4 + (3 if dtype.startswith("u") else 0)).astype(dtype)
    w = np.arange(8, dtype=np.float32).reshape(2, 4) - 3.0
    graph = helper.make_graph(
        [helper.make_node("Cast", ["x"], ["xf"], to=TensorProto.FLOAT),
         helper.make_node("Add", ["xf", "w"], ["s"]),
         helper.make_node("Cast", ["s"], ["y"], to=elem)],
        "g", [helper.make_tensor_value_info("x", elem, [2, 4])], [helper.make_tensor_value_info("y", elem, [2, 4])],
        [onnx.numpy_helper.from_array(w, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    if dtype == "float16":
        small = np.clip(small, -1000, 1000).astype(np.float16)
    mod = from_onnx(model)
    assert mod["main"].params[0].type_annotation.dtype == dtype
    (want,) = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, {"x": small})
    (got,) = build(mod).run_runner([small])
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, want)
