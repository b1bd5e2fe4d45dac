"""The zoo's ONNX-built real-size models: the papers' architectures, sane activations, onnxruntime agrees.

The full-size models' import and reference runs are behind the `realsize` marker except where they
are cheap (building the ONNX graph, counting its weights, MobileNetV2's reference run).
"""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from byoc_compiler import zoo
from byoc_compiler.__main__ import main
from byoc_compiler.load import load_model
from byoc_compiler.ir import op_counts
from byoc_compiler.testing import run_reference

import onnxruntime  # noqa: E402 - a test dependency (pyproject's test extras), never optional

TINY = ["resnet50_tiny", "mobilenetv2_tiny"]


def _ort(name: str, inputs) -> np.ndarray:
    session = onnxruntime.InferenceSession(zoo.onnx_model(name).SerializeToString(),
                                           providers=["CPUExecutionProvider"])
    return session.run(None, inputs)[0]


def test_names_are_documented():
    assert zoo.onnx_names()[:9] == ["resnet50", "mobilenetv2", "resnet50_tiny", "mobilenetv2_tiny",
                                    "efficientnet_lite", "efficientnet_lite_tiny", "bert_tiny", "shufflenet",
                                    "shufflenet_tiny"]
    tiny = [n for model in ("ds_cnn", "resnet8", "mobilenet_v1_025", "fc_autoencoder", "mobilenet_v2_035", "micro_cnn",
                            "transformer_encoder", "concat_cnn")
            for n in (model, f"{model}_int8")]
    assert zoo.onnx_names()[9:] == tiny          # the microcontroller models (tests/test_zoo_tiny.py)
    assert set(zoo.FULL_SIZE) <= set(zoo.onnx_names())
    assert zoo.all_names() == zoo.names() + zoo.onnx_names()
    assert not set(zoo.names()) & set(zoo.onnx_names())


# Parameters as the papers count them: conv and fc weights and biases plus BN's gamma and beta
# (the running mean and variance are statistics, not parameters).
@pytest.mark.parametrize("name,parameters,convs,adds", [
    ("resnet50", 25_557_032, 53, 16),
    ("mobilenetv2", 3_504_872, 52, 10),
])
def test_full_size_architecture(name, parameters, convs, adds):
    graph = zoo.onnx_model(name).graph
    sizes = {t.name: int(np.prod(t.dims)) for t in graph.initializer}
    stats = {n for node in graph.node if node.op_type == "BatchNormalization" for n in node.input[3:5]}
    scalars = {n for n, size in sizes.items() if size == 1}            # Clip's bounds (ReLU6)
    assert sum(v for k, v in sizes.items() if k not in stats | scalars) == parameters
    ops = [node.op_type for node in graph.node]
    assert (ops.count("Conv"), ops.count("Add"), ops.count("BatchNormalization")) == (convs, adds, convs)
    (data,) = graph.input
    assert [d.dim_value for d in data.type.tensor_type.shape.dim] == [1, 3, 224, 224]
    assert [d.dim_value for d in graph.output[0].type.tensor_type.shape.dim] == [1, 1000]


def test_mobilenetv2_has_17_depthwise_convolutions():
    graph = zoo.onnx_model("mobilenetv2").graph
    groups = [a.i for node in graph.node if node.op_type == "Conv" for a in node.attribute if a.name == "group"]
    assert sum(g > 1 for g in groups) == 17


def test_shufflenet_has_16_shuffles_between_group_convolutions():
    graph = zoo.onnx_model("shufflenet").graph
    ops = [node.op_type for node in graph.node]
    assert (ops.count("Transpose"), ops.count("Reshape"), ops.count("Concat")) == (16, 32, 3)
    groups = [a.i for node in graph.node if node.op_type == "Conv" for a in node.attribute if a.name == "group"]
    # two 1x1 group convs per unit, but the first unit's first conv sees the stem's 24 channels ungrouped
    assert groups.count(3) == 2 * 16 - 1 and sum(g > 3 for g in groups) == 16


def test_shufflenet_under_dnnl_is_one_region_with_its_shuffles_inside():
    """dnnl takes each reshape-transpose-reshape as one channel_shuffle kernel (oneDNN's shuffle primitive): the
    whole model is one region, nothing on the host."""
    from byoc_compiler.partition import partition_for, summarize

    part = partition_for(["dnnl"], zoo.get("shufflenet_tiny"))
    assert not dict(op_counts(part["main"].body))
    (region,) = summarize(part).regions_of("dnnl")
    assert region.ops["transpose"] == 16


@pytest.mark.parametrize("name", TINY)
def test_build_is_deterministic_bits(name):
    first = zoo.ONNX_MODELS[name][0]().SerializeToString()
    assert zoo.ONNX_MODELS[name][0]().SerializeToString() == first


@pytest.mark.parametrize("name", [*TINY, "mobilenetv2", "shufflenet_tiny",
                                  pytest.param("resnet50", marks=pytest.mark.realsize)])
def test_reference_matches_onnxruntime_and_activations_are_sane(name):
    inputs = zoo.inputs(name)
    (ours,) = run_reference(zoo.get(name), inputs)
    peer = _ort(name, inputs)
    np.testing.assert_allclose(ours, peer, rtol=1e-4, atol=1e-5 * np.abs(peer).max())
    # Random weights scaled so the logits are of order one: not vanished, not exploded.
    rms = float(np.sqrt(np.mean(peer.astype(np.float64) ** 2)))
    assert 0.1 < rms < 10, rms
    other = _ort(name, zoo.inputs(name, seed=1))
    assert np.abs(other - peer).max() > 0.01 * rms        # the output depends on the input


@pytest.mark.parametrize("name", ["resnet50", "mobilenetv2"])
def test_every_activation_of_the_full_models_stays_of_order_one(name):
    """Every intermediate value, run by onnxruntime: the BN statistics track the activations."""
    model = zoo.onnx_model(name)
    names = [node.output[0] for node in model.graph.node]
    del model.graph.output[:]
    model.graph.output.extend(onnx.ValueInfoProto(name=n) for n in names)
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for value_name, value in zip(names, session.run(None, zoo.inputs(name))):
        rms = float(np.sqrt(np.mean(value.astype(np.float64) ** 2)))
        assert 0.05 < rms < 20, (value_name, rms)


def test_import_keeps_the_architecture():
    counts = op_counts(zoo.get("resnet50_tiny")["main"].body)
    assert (counts["nn.conv2d"], counts["nn.batch_norm"], counts["add"], counts["nn.max_pool2d"]) == (53, 53, 16, 1)
    assert counts["nn.relu"] == 49 and counts["nn.dense"] == 1


def test_cli_export_writes_the_zoo_model(tmp_path, capsys):
    out = tmp_path / "tiny.onnx"
    assert main(["zoo", "export", "mobilenetv2_tiny", str(out)]) == 0
    written = onnx.load(str(out))
    for mine, theirs in zip(written.graph.initializer, zoo.onnx_model("mobilenetv2_tiny").graph.initializer):
        np.testing.assert_array_equal(numpy_helper.to_array(mine), numpy_helper.to_array(theirs))
    inputs = zoo.inputs("mobilenetv2_tiny")
    np.testing.assert_array_equal(run_reference(load_model(str(out)), inputs)[0],
                                  run_reference(zoo.get("mobilenetv2_tiny"), inputs)[0])
    assert main(["zoo", "list"]) == 0
    assert "resnet50" in capsys.readouterr().out


@pytest.mark.parametrize("args,fragment", [
    (["zoo", "export", "mlp", "x.onnx"], "'mlp' is built in the IR, not as ONNX; models that export: resnet50"),
    (["zoo", "export", "resnet51", "x.onnx"], "'resnet51' is not a zoo model"),
    (["zoo", "export", "resnet50_tiny", "x.txt"], "must end in .onnx or .tflite"),
    (["zoo", "export", "resnet50_tiny", "x.tflite"], "'resnet50_tiny' has no .tflite form; models with one: ds_cnn_int8"),
], ids=["ir-model", "unknown", "suffix", "no-tflite-form"])
def test_cli_export_errors(args, fragment, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(args) == 2
    assert fragment in capsys.readouterr().err
    assert not list(tmp_path.iterdir())
