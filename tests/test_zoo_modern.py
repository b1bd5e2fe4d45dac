"""The zoo's models of today's ops: an EfficientNet-lite-style CNN (HardSwish, squeeze-excite gates,
depthwise convs) and a BERT-tiny-like encoder (embedding gather, layer norm, attention with batched
matmul and softmax, gelu MLP; sequence 128). Each imports and matches onnxruntime through the numpy
reference, and built host-only and partitioned for ccompiler its outputs match onnxruntime's."""
from __future__ import annotations

import numpy as np
import pytest

from byoc_compiler import partition_for, zoo
from byoc_compiler.backend.build import build
from byoc_compiler.ir import op_counts
from byoc_compiler.testing import run_reference

import onnxruntime  # noqa: E402 - a test dependency (pyproject's test extras), never optional


def _ort(name: str, inputs) -> np.ndarray:
    session = onnxruntime.InferenceSession(zoo.onnx_model(name).SerializeToString(),
                                           providers=["CPUExecutionProvider"])
    return session.run(None, inputs)[0]


def _close(ours, peer, what):
    np.testing.assert_allclose(ours, peer, rtol=1e-4, atol=1e-4 * np.abs(peer).max(), err_msg=what)


def test_bert_tiny_architecture():
    graph = zoo.onnx_model("bert_tiny").graph
    ops = [n.op_type for n in graph.node]
    assert ops.count("LayerNormalization") == 5 and ops.count("Gelu") == 2 and ops.count("Softmax") == 2
    assert ops.count("MatMul") == 2 * (4 + 2 + 2) and ops.count("Gather") == 1
    assert [d.dim_value for d in graph.input[0].type.tensor_type.shape.dim] == [1, 128]


def test_efficientnet_lite_architecture():
    graph = zoo.onnx_model("efficientnet_lite").graph
    ops = [n.op_type for n in graph.node]
    groups = [a.i for n in graph.node if n.op_type == "Conv" for a in n.attribute if a.name == "group"]
    assert sum(g > 1 for g in groups) == 16                  # one depthwise conv per MBConv block
    assert ops.count("HardSigmoid") == 16 and ops.count("HardSwish") >= 30


@pytest.mark.parametrize("name", ["bert_tiny", "efficientnet_lite_tiny",
                                  pytest.param("efficientnet_lite", marks=pytest.mark.realsize)])
def test_reference_matches_onnxruntime(name):
    inputs = zoo.inputs(name)
    mod = zoo.get(name)
    (ours,) = run_reference(mod, inputs)
    peer = _ort(name, inputs)
    _close(ours, peer, name)
    rms = float(np.sqrt(np.mean(peer.astype(np.float64) ** 2)))
    assert 0.05 < rms < 100, rms        # not vanished, not exploded
    other = _ort(name, zoo.inputs(name, seed=1))
    assert np.abs(other - peer).max() > 0.01 * rms        # the output depends on the input


def test_bert_tiny_uses_the_transformer_ops():
    counts = op_counts(zoo.get("bert_tiny")["main"])
    assert counts["nn.batch_matmul"] == 4 and counts["nn.layer_norm"] == 5 and counts["nn.gelu"] == 2
    assert counts["nn.softmax"] == 2 and counts["take"] == 1


@pytest.mark.parametrize("targets", [(), ("ccompiler",)], ids=["host", "ccompiler"])
@pytest.mark.parametrize("name", ["bert_tiny", "efficientnet_lite_tiny"])
def test_built_model_matches_onnxruntime(name, targets):
    mod = zoo.get(name)
    part = partition_for(list(targets), mod) if targets else mod
    if targets:
        regions = [f for f in part.functions.values() if f.attrs.get("Compiler") == "ccompiler"]
        assert regions
    loaded = build(part, toolchain="gcc").load(werror=True)
    inputs = zoo.inputs(name)
    for key, value in inputs.items():
        loaded.set_input(key, value)
    loaded.run()
    _close(loaded.get_output(0), _ort(name, inputs), f"{name} built for {targets or 'host'}")
