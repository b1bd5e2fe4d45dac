"""The zoo's microcontroller models (byoc_compiler/zoo/tiny): MLPerf Tiny's shapes, float32 and int8 QDQ.

- architecture: layer counts and parameter counts worked out by hand from the MLPerf Tiny reference
  models (batch norm folded), the input and output shapes;
- quantization conventions (TFLite's): per-channel symmetric int8 weights, int32 biases at input scale
  x weight scale, softmax output 1/256 with zero point -128, pools keeping their input's parameters;
- the int8 models import as integer ops and equal onnxruntime's integer session (QDQ fused into
  QLinearConv/QGemm/..., `session.qdqisint8allowed=1`) on every element of several seeded inputs; the
  float twins equal onnxruntime's float session within float32 rounding;
- builds: host-only and wholly in ccompiler equal byoc's integer reference bit for bit. By default one
  host build and one ccompiler build; every model on both behind the `int8` marker (and MobileNetV2
  0.35's checks, seconds each);
- the .tflite form: TensorFlow Lite Micro and LiteRT run it, byoc's import equals TFLM, the float
  .tflite equals the float ONNX model, the int8 one is within two steps of the QDQ model, and the file
  carries the Spec's weights and parameters on TFLite's quantized dimensions.
"""
from __future__ import annotations

import numpy as np
import onnx
import pytest

import tflite_models as tm
import byoc_compiler as byoc
from byoc_compiler import zoo
from byoc_compiler.ir import Call, Op, post_order
from byoc_compiler.testing.quantize import integer_session
from byoc_compiler.testing.reference import run_reference
from byoc_compiler.zoo import tiny

MLPERF = ["ds_cnn", "resnet8", "mobilenet_v1_025", "fc_autoencoder"]
MODELS = MLPERF + ["mobilenet_v2_035", "micro_cnn", "transformer_encoder", "concat_cnn"]
SEEDS = range(4)
# seeds per model where one reference run takes seconds
FEWER_SEEDS = {"mobilenet_v2_035": range(1)}
# MobileNetV2 0.35 (1.7 M weights) takes seconds per check: by default only its architecture, its
# checks behind the `int8` marker
HEAVY = {"mobilenet_v2_035"}


def _cases(names):
    return [pytest.param(n, id=n, marks=[pytest.mark.int8] if n in HEAVY else []) for n in names]


def _session(name: str, int8_kernels: bool = True):
    return integer_session(zoo.onnx_model(name), int8_kernels)


def _ops(mod) -> set[str]:
    return {n.op.name for n in post_order(mod["main"].body) if isinstance(n, Call) and isinstance(n.op, Op)}


# (model, weighted layers by op, parameters): parameters counted by hand from the reference models with
# batch norm folded into the conv biases:
# - DS-CNN: conv 10*4*1*64+64 = 2624, 4 depthwise 3*3*64+64 = 640, 4 pointwise 64*64+64 = 4160, fc 780;
# - ResNet-8: conv 448; stack 1: 2 * 2320; stack 2: 4640 + 9248 + shortcut 544; stack 3: 18496 + 36928
#   + shortcut 2112; fc 650;
# - MobileNet v1 0.25: conv 224; depthwise + pointwise 80+144, 160+544, 320+1056, 320+2112, 640+4160,
#   640+8320, 5 * (1280+16512), 1280+33024, 2560+65792; fc 514;
# - autoencoder: 82048 + 3 * 16512 + 1032 + 1152 + 3 * 16512 + 82560.
ARCHITECTURE = [
    ("ds_cnn", {"conv": 5, "depthwise": 4, "fc": 1}, 22604, (1, 49, 10, 1), (1, 12)),
    ("resnet8", {"conv": 9, "fc": 1}, 77706, (1, 32, 32, 3), (1, 10)),
    ("mobilenet_v1_025", {"conv": 14, "depthwise": 13, "fc": 1}, 210850, (1, 96, 96, 3), (1, 2)),
    ("fc_autoencoder", {"fc": 10}, 265864, (1, 640), (1, 640)),
    # conv 3*3*3*8+8, conv 3*3*8*16+16, fc 16*10+10
    ("micro_cnn", {"conv": 2, "fc": 1}, 1562, (1, 32, 32, 3), (1, 10)),
]


def _mobilenet_v2_parameters(alpha: float, classes: int) -> tuple[int, int]:
    """(weighted layers, parameters) of MobileNetV2 without batch norm, from the paper's block table."""
    from byoc_compiler.zoo.mobilenet import BLOCKS, _divisible
    c = _divisible(32 * alpha)
    layers, total = 1, 27 * c + c
    for t, out, repeats, _ in BLOCKS:
        for _ in range(repeats):
            hidden = c * t
            total += (c * hidden + hidden if t != 1 else 0) + 10 * hidden + hidden * _divisible(out * alpha)
            total += _divisible(out * alpha)
            layers += 3 if t != 1 else 2
            c = _divisible(out * alpha)
    return layers + 2, total + c * 1280 + 1280 + 1280 * classes + classes


def test_mobilenet_v2_035_architecture():
    spec = tiny.spec("mobilenet_v2_035")
    weighted = [layer for layer in spec.layers if layer.weight is not None]
    assert (len(weighted), sum(w.weight.size + w.bias.size for w in weighted)) == _mobilenet_v2_parameters(0.35, 1000)
    assert sum(layer.op == "depthwise" for layer in weighted) == 17
    assert sum(layer.op == "add" for layer in spec.layers) == 10
    assert (spec.input_shape, spec.layers[-1].shape) == ((1, 96, 96, 3), (1, 1000))


@pytest.mark.parametrize("name,weighted,parameters,in_shape,out_shape", ARCHITECTURE, ids=[a[0] for a in ARCHITECTURE])
def test_architecture(name, weighted, parameters, in_shape, out_shape):
    spec = tiny.spec(name)
    layers = [layer for layer in spec.layers if layer.weight is not None]
    assert {op: sum(layer.op == op for layer in layers) for op in weighted} == weighted
    assert len(layers) == sum(weighted.values())
    assert sum(layer.weight.size + layer.bias.size for layer in layers) == parameters
    assert (spec.input_shape, spec.layers[-1].shape) == (in_shape, out_shape)


def test_names_and_twins():
    for name in [n for n in MODELS if n not in HEAVY]:
        assert {name, f"{name}_int8"} <= set(zoo.onnx_names())
        float_inits = {t.name for t in zoo.onnx_model(name).graph.initializer}
        assert not any(n.endswith("_quantized") for n in float_inits)


@pytest.mark.parametrize("name", _cases(MODELS))
def test_quantization_follows_tflite_conventions(name):
    q = tiny.quantized(name)
    for layer in q.spec.layers:
        scale, zp = q.act[layer.output]
        assert scale.dtype == np.float32 and -128 <= zp <= 127
        if layer.op == "softmax":
            assert (float(scale), zp) == (1 / 256, -128)
        if layer.op in ("avg_pool", "max_pool", "flatten"):
            assert q.act[layer.output] == q.act[layer.inputs[0]]
        if layer.attrs.get("act") in ("relu", "relu6"):
            assert zp == -128                          # a relu's range starts at zero
        if layer.weight is None:
            continue
        w, scales = q.weight[layer.output]
        axis = 3 if layer.op == "depthwise" else 0
        assert w.dtype == np.int8 and w.min() >= -127 and scales.shape == (layer.weight.shape[axis],)
        assert np.all(np.abs(w).max(axis=tuple(a for a in range(w.ndim) if a != axis)) == 127)
        bias_scale = np.float32(q.act[layer.inputs[0]][0]) * scales
        np.testing.assert_allclose(q.bias[layer.output] * bias_scale.astype(np.float64), layer.bias,
                                   atol=float(bias_scale.max()) / 2 * 1.0001)


@pytest.mark.parametrize("name", _cases(MODELS))
def test_int8_model_equals_onnxruntime_integer_session(name):
    mod = zoo.get(f"{name}_int8")
    ops = _ops(mod)
    assert ("qnn.dense" in ops) and {"nn.conv2d", "nn.dense"}.isdisjoint(ops)
    session = _session(f"{name}_int8")
    for seed in FEWER_SEEDS.get(name, SEEDS):
        x = zoo.inputs(f"{name}_int8", seed)
        np.testing.assert_array_equal(run_reference(mod, x)[0], session.run(None, x)[0], err_msg=f"seed {seed}")


@pytest.mark.parametrize("name", _cases(MODELS))
def test_float_twin_equals_onnxruntime(name):
    mod, session = zoo.get(name), _session(name, int8_kernels=False)
    for seed in FEWER_SEEDS.get(name, SEEDS):
        x = zoo.inputs(name, seed)
        want = session.run(None, x)[0]
        np.testing.assert_allclose(run_reference(mod, x)[0], want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


def test_the_int8_model_is_close_to_its_float_twin():
    """The quantization means something: the int8 DS-CNN's probabilities are within a few steps of the
    float model's and pick the same class."""
    x = zoo.inputs("ds_cnn", 0)
    f, q = _session("ds_cnn", False).run(None, x)[0], _session("ds_cnn_int8").run(None, x)[0]
    assert np.abs(f - q).max() <= 4 / 256 and f.argmax() == q.argmax()


def test_models_are_deterministic():
    for name in ("ds_cnn_int8", "resnet8"):
        assert zoo.ONNX_MODELS[name][0]().SerializeToString() == zoo.ONNX_MODELS[name][0]().SerializeToString()


# (model, target): the default run builds three, the `int8` marker every model on both
BUILDS = [(n, t) for n in MODELS for t in ("host", "ccompiler")]
DEFAULT_BUILDS = {("fc_autoencoder", "host"), ("ds_cnn", "ccompiler")}


@pytest.mark.parametrize("name,target", [pytest.param(*b, id=f"{b[0]}_int8-{b[1]}",
                                                      marks=[] if b in DEFAULT_BUILDS else [pytest.mark.int8])
                                         for b in BUILDS])
def test_int8_build_equals_reference(name, target):
    mod = zoo.get(f"{name}_int8")
    x = zoo.inputs(f"{name}_int8", 1)
    if target == "ccompiler":
        mod = byoc.partition_for("ccompiler", mod)
        summary = byoc.partition.summarize(mod)
        # ccompiler has no qnn.concatenate / qnn.avg_pool2d kernel: concat_cnn keeps those on the host
        assert summary.host_op_count == 0 or name not in MLPERF, summary.table()
    (got,) = byoc.build(mod, toolchain="gcc", executor="aot", interface="unpacked").run_runner(list(x.values()))
    np.testing.assert_array_equal(got, run_reference(zoo.get(f"{name}_int8"), x)[0])
    assert onnx.checker.check_model(zoo.onnx_model(f"{name}_int8")) is None


# ---- the .tflite form ---------------------------------------------------------------------------------

def _tflite_inputs(name: str, int8: bool, seed: int) -> dict[str, np.ndarray]:
    """Seeded normal data, quantized with the model's input parameters for the int8 model (NHWC)."""
    spec = tiny.spec(name)
    x = np.random.default_rng(seed).standard_normal(spec.input_shape).astype(np.float32)
    if not int8:
        return {"input": x}
    scale, zp = tiny.quantized(name).act[spec.input]
    return {"input": np.clip(np.rint(x / scale) + zp, -128, 127).astype(np.int8)}


def _nchw(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x.transpose(0, 3, 1, 2)) if x.ndim == 4 else x


# LiteRT's reference kernels differ from TFLM where per-channel FULLY_CONNECTED rounds differently (and the
# transformer's layer norms carry the difference on): the largest gap, steps (measured: 2; 4-6 over 4 seeds)
LITERT_GAP = {"fc_autoencoder": 2, "transformer_encoder": 8}


@pytest.mark.parametrize("name", _cases(tiny.TFLITE))
def test_tflite_int8_runs_in_tflite_micro_and_litert_and_equals_byoc(name):
    """TensorFlow Lite Micro runs the written model; byoc's import of it equals TFLM on every element (the
    transformer's MEAN and RSQRT included: TFLite's integer MEAN, RSQRT looked up from its integer kernel's
    results); LiteRT's reference kernels load and run it too, equal to TFLM except per-channel
    FULLY_CONNECTED, where LiteRT's reference kernel rounds differently from TFLM's."""
    from byoc_compiler.frontend.tflite import from_tflite
    data = tiny.tflite_model(name, True)
    mod = from_tflite(data)
    for seed in FEWER_SEEDS.get(name, range(2)):
        feeds = _tflite_inputs(name, True, seed)
        (micro,) = tm.run_tflm(data, feeds)
        (litert,) = tm.run_litert(data, feeds)
        assert micro.dtype == np.int8 and micro.shape == tiny.spec(name).layers[-1].shape
        np.testing.assert_array_equal(run_reference(mod, feeds)[0], micro)
        gap = np.abs(litert.astype(np.int64) - micro).max()
        assert gap <= LITERT_GAP.get(name, 0), gap


@pytest.mark.parametrize("name", _cases(tiny.TFLITE))
def test_tflite_forms_compute_the_onnx_models(name):
    """The same weights and parameters: the float .tflite equals the float ONNX model (onnxruntime) to
    float32 rounding, in LiteRT and TFLM; the int8 .tflite's dequantized output is within a few output steps
    of the int8 QDQ model's (TFLite's fixed-point rescaling against onnxruntime's float32 one, rounding
    differences a deep net and the softmax amplify: 8 steps measured) and picks the same class."""
    f_data, q_data = tiny.tflite_model(name, False), tiny.tflite_model(name, True)
    scale, zp = tiny.quantized(name).act[tiny.spec(name).output]
    for seed in FEWER_SEEDS.get(name, range(2)):
        x = _tflite_inputs(name, False, seed)["input"]
        want = _session(name, False).run(None, {"input": _nchw(x)})[0]
        for runner in (tm.run_litert, tm.run_tflm):
            np.testing.assert_allclose(runner(f_data, {"input": x})[0], want, rtol=1e-5, atol=1e-5 * np.abs(want).max())
        q_want = _session(f"{name}_int8").run(None, {"input": _nchw(x)})[0]
        (q_got,) = tm.run_tflm(q_data, _tflite_inputs(name, True, seed))
        steps = np.abs((q_got.astype(np.float64) - zp) * scale - q_want) / scale
        assert steps.max() <= 16.0001, steps.max()
        if tiny.spec(name).layers[-1].op == "softmax":
            assert q_got.argmax() == q_want.argmax()


def _tflite_tensors(data: bytes) -> dict:
    """name -> (type, shape, scales, zero points, quantized dimension, data bytes) read with the schema package."""
    import tflite
    model = tflite.Model.GetRootAsModel(data, 0)
    graph, out = model.Subgraphs(0), {}
    for i in range(graph.TensorsLength()):
        t = graph.Tensors(i)
        q = t.Quantization()
        buf = model.Buffers(t.Buffer())
        out[t.Name().decode()] = (t.Type(), tuple(t.ShapeAsNumpy()),
                                  q.ScaleAsNumpy() if q is not None and q.ScaleLength() else None,
                                  q.ZeroPointAsNumpy() if q is not None and q.ZeroPointLength() else None,
                                  q.QuantizedDimension() if q is not None else None,
                                  buf.DataAsNumpy().tobytes() if buf.DataLength() else b"")
    return out


@pytest.mark.parametrize("name", ["ds_cnn", "mobilenet_v1_025"])
def test_tflite_carries_the_specs_numbers(name):
    """Read back with the schema package: every weight's bytes and per-channel scales are the QuantizedSpec's,
    on TFLite's quantized dimension (0 for conv and fc, 3 for depthwise); biases int32 at input x weight
    scale; softmax's output 1/256, -128."""
    tensors, q = _tflite_tensors(tiny.tflite_model(name, True)), tiny.quantized(name)
    for layer in q.spec.layers:
        kind, shape, scales, zps, qdim, _ = tensors[layer.output]
        assert (float(scales[0]), int(zps[0])) == (float(q.act[layer.output][0]), q.act[layer.output][1])
        if layer.weight is None:
            continue
        w, w_scales = q.weight[layer.output]
        _, w_shape, t_scales, _, t_qdim, raw = tensors[f"{layer.output}_w"]
        assert w_shape == w.shape and raw == w.tobytes() and t_qdim == (3 if layer.op == "depthwise" else 0)
        np.testing.assert_array_equal(t_scales, w_scales)
        _, _, b_scales, _, _, b_raw = tensors[f"{layer.output}_b"]
        assert b_raw == q.bias[layer.output].astype("<i4").tobytes()
        np.testing.assert_array_equal(b_scales, np.float32(q.act[layer.inputs[0]][0]) * w_scales)
    assert [(float(s[0]), int(z[0])) for _, _, s, z, _, _ in [tensors[q.spec.output]]] == [(1 / 256, -128)]


def _inputs_16x8(name: str, seed: int) -> dict[str, np.ndarray]:
    """Seeded normal data quantized with the 16x8 model's symmetric int16 input scale (NHWC)."""
    spec = tiny.spec(name)
    x = np.random.default_rng(seed).standard_normal(spec.input_shape).astype(np.float32)
    scale, _ = tiny.quantized16(name).act[spec.input]
    return {"input": np.clip(np.rint(x / scale), -32768, 32767).astype(np.int16)}


@pytest.mark.parametrize("name", tiny.TFLITE_16X8)
def test_tflite_16x8_equals_tflite_micro_and_computes_the_float_model(name):
    """The zoo's 16x8 .tflite (int16 activations with zero point 0, int8 weights, int64 biases, an int16 softmax):
    byoc's import equals TensorFlow Lite Micro on every element, and it computes the float model: its
    dequantized output is within 0.005 of the float .tflite's in TFLM (output step 1/32768) and picks its class."""
    from byoc_compiler.frontend.tflite import from_tflite
    data = zoo.tflite_model(f"{name}_16x8")
    mod = from_tflite(data)
    for seed in range(2):
        feeds = _inputs_16x8(name, seed)
        (micro,) = tm.run_tflm(data, feeds)
        assert micro.dtype == np.int16
        np.testing.assert_array_equal(run_reference(mod, feeds)[0], micro)
        (real,) = tm.run_tflm(zoo.tflite_model(name), _tflite_inputs(name, False, seed))
        assert np.abs(micro / 32768.0 - real).max() < 0.005 and micro.argmax() == real.argmax()


def test_tflite_export_writes_the_zoo_bytes(tmp_path):
    from byoc_compiler.__main__ import main
    assert zoo.tflite_names()[:2] == ["ds_cnn_int8", "ds_cnn"]
    assert main(["zoo", "export", "ds_cnn_int8", str(tmp_path / "kws.tflite")]) == 0
    assert (tmp_path / "kws.tflite").read_bytes() == zoo.tflite_model("ds_cnn_int8") == tiny.tflite_model("ds_cnn", True)
    assert zoo.tflite_model("ds_cnn") == tiny.tflite_model("ds_cnn", False) != zoo.tflite_model("ds_cnn_int8")
    with pytest.raises(ValueError, match="'concat_cnn_int8' has no .tflite form"):
        zoo.tflite_model("concat_cnn_int8")
    assert main(["zoo", "export", "micro_cnn_16x8", str(tmp_path / "cnn16.tflite")]) == 0
    assert (tmp_path / "cnn16.tflite").read_bytes() == tiny.tflite_model("micro_cnn", False, True)


def test_transformer_float_tflite_equals_tflite_micro():
    """The 2-layer encoder's float .tflite (FULLY_CONNECTED, BATCH_MATMUL, RESHAPE, TRANSPOSE, SOFTMAX, MEAN, SUB,
    MUL, RSQRT, ADD) imported by byoc equals TFLM within float32 rounding (its int8 form: the test above)."""
    from byoc_compiler.frontend.tflite import from_tflite
    f_data = tiny.tflite_model("transformer_encoder", False)
    x = _tflite_inputs("transformer_encoder", False, 0)
    np.testing.assert_allclose(run_reference(from_tflite(f_data), x)[0], tm.run_tflm(f_data, x)[0], rtol=1e-4,
                               atol=1e-4)


def test_the_zoo_works_without_the_tflite_package():
    """tflite is an optional extra: without it the zoo still imports and its ONNX forms build; asking for a
    .tflite form says what to install (in a fresh interpreter where `import tflite` fails)."""
    import subprocess
    import sys
    code = ("import sys; sys.modules['tflite'] = None\n"
            "from byoc_compiler import zoo\n"
            "zoo.onnx_model('micro_cnn_int8')\n"
            "try:\n    zoo.tflite_model('micro_cnn_int8')\nexcept Exception as exc:\n    print(type(exc).__name__, exc)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "ByocError" in proc.stdout and "pip install 'byoc_compiler[tflite]'" in proc.stdout, proc.stdout
