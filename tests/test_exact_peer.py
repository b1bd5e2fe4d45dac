"""testing.quantize.weights_as_uint8: onnxruntime as an exact integer peer on every x86 CPU.

Its uint8 x int8 kernels on CPUs without VNNI sum product pairs in saturating int16; the rewrite stores
int8 weights as uint8 (+128, zero point +128). The cases here are the worst for saturation: every
activation 255, every weight 127 or -128. The peer is numpy's int64 arithmetic; that the rewrite keeps
the model's meaning is checked with ONNX's reference evaluator, which computes in int64 whatever the CPU.
"""
import numpy as np
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from byoc_compiler.testing.quantize import weights_as_uint8

K = 64


def _matmul_integer(weight: np.ndarray, weight_zp: int | None):
    inputs = ["a", "b", "az"] + (["bz"] if weight_zp is not None else [])
    inits = [numpy_helper.from_array(weight, "b"), numpy_helper.from_array(np.array(3, np.uint8), "az")]
    if weight_zp is not None:
        inits.append(numpy_helper.from_array(np.array(weight_zp, np.int8), "bz"))
    graph = helper.make_graph([helper.make_node("MatMulInteger", inputs, ["y"])], "mm",
                              [helper.make_tensor_value_info("a", TensorProto.UINT8, [2, K])],
                              [helper.make_tensor_value_info("y", TensorProto.INT32, [2, weight.shape[1]])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def _qdq_matmul(weight: np.ndarray):
    """DequantizeLinear(int8 weight, no zero point) feeding a float MatMul: the QDQ form's weight."""
    nodes = [helper.make_node("DequantizeLinear", ["w", "ws"], ["wf"]), helper.make_node("MatMul", ["x", "wf"], ["y"])]
    inits = [numpy_helper.from_array(weight, "w"), numpy_helper.from_array(np.array(0.5, np.float32), "ws")]
    graph = helper.make_graph(nodes, "qdq", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, K])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, weight.shape[1]])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])


WEIGHTS = [("all-127", np.full((K, 4), 127, np.int8)), ("all-minus-128", np.full((K, 4), -128, np.int8)),
           ("mixed", np.random.default_rng(3).integers(-128, 128, (K, 4)).astype(np.int8))]


@pytest.mark.parametrize("zp", [None, -5], ids=["no-zero-point", "zero-point"])
@pytest.mark.parametrize("name,weight", WEIGHTS, ids=[w[0] for w in WEIGHTS])
def test_matmul_integer_with_uint8_weights_is_exact_in_onnxruntime(name, weight, zp):
    model = _matmul_integer(weight, zp)
    a = np.full((2, K), 255, np.uint8)
    a[1, ::2] = 0
    want = (a.astype(np.int64) - 3) @ (weight.astype(np.int64) - (zp or 0))
    rewritten = weights_as_uint8(model)
    session = onnxruntime.InferenceSession(rewritten.SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_array_equal(session.run(None, {"a": a})[0], want)
    np.testing.assert_array_equal(ReferenceEvaluator(rewritten).run(None, {"a": a})[0], want)
    assert all(t.data_type != TensorProto.INT8 for t in rewritten.graph.initializer if t.name in rewritten.graph.node[0].input)


@pytest.mark.parametrize("name,weight", WEIGHTS, ids=[w[0] for w in WEIGHTS])
def test_qdq_weight_without_zero_point_keeps_its_values(name, weight):
    model = _qdq_matmul(weight)
    x = np.random.default_rng(5).standard_normal((2, K)).astype(np.float32)
    before = ReferenceEvaluator(model).run(None, {"x": x})[0]
    rewritten = weights_as_uint8(model)
    dq = rewritten.graph.node[0]
    inits = {t.name: numpy_helper.to_array(t) for t in rewritten.graph.initializer}
    assert inits[dq.input[0]].dtype == np.uint8 and inits[dq.input[2]].dtype == np.uint8
    np.testing.assert_array_equal(ReferenceEvaluator(rewritten).run(None, {"x": x})[0], before)
    assert model.graph.node[0].input[0] == "w"   # the input model is left as it was


def test_a_model_with_int8_activations_is_left_as_it_is():
    """int8 x int8 is exact already; int8 x uint8 is not a pairing onnxruntime's QDQ fusion takes"""
    model = _matmul_integer(WEIGHTS[2][1], -5)
    model.graph.input[0].type.tensor_type.elem_type = TensorProto.INT8
    assert weights_as_uint8(model) == model
