"""Quantized versions of the zoo's ONNX models, made the documented onnxruntime way (tests, benchmarks).

    path = quantized_zoo_model("resnet50", "qdq", per_channel=True)

`onnxruntime.quantization.shape_inference.quant_pre_process` first (shape inference, batch norm folded
into the convolutions), then `quantize_static` calibrated on four seeded random batches; activations
uint8, weights int8 (U8S8, onnxruntime's recommendation for x86). Needs onnxruntime.

Quantizing is deterministic, so the result is kept in a cache directory under a name that carries a
digest of everything it depends on (the float model's bytes, the recipe, onnxruntime's and onnx's
versions): a changed zoo model or a new onnxruntime makes a new file, an unchanged one is reused by
every test, worker and benchmark. The cache is `directory=` when given, else `$BYOC_QUANTIZED_CACHE`,
else `$XDG_CACHE_HOME/byoc/quantized` (`~/.cache/byoc/quantized`). A file appears there atomically
(written beside it, then renamed), so processes quantizing the same model at once are safe.

Besides the zoo's ONNX models, `tiny_cnn` (below) is a quantization-friendly CNN of a few layers for
the test matrix's cheap lanes.
"""
from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

import numpy as np
import onnx
import onnxruntime
from onnx import helper, numpy_helper
from onnxruntime import quantization

from .. import zoo
from ..zoo.onnx_graph import GraphBuilder, checked_model

FORMATS = ("qdq", "qop")
# Bump when the recipe below changes in a way the digest's inputs do not show.
RECIPE = "pre_process+quantize_static:U8S8:minmax:4 seeded normal batches:v1"


def tiny_cnn():
    """A small ONNX CNN covering the quantized ops of both zoo architectures on 1x3x16x16: conv + batch
    norm + relu, max pool, depthwise conv + relu6, a 1x1 conv with a residual add, global average pool
    and a Gemm classifier (10 classes)."""
    b = GraphBuilder("tiny_cnn", seed=7)
    x = b.input("data", (1, 3, 16, 16))
    h = b.relu(b.batch_norm(b.conv(x, 8, 3)))
    h = b.max_pool(h, 2, 2, 0)
    d = b.relu6(b.batch_norm(b.conv(h, 8, 3, groups=8)))
    h = b.relu(b.add(b.batch_norm(b.conv(d, 8, 1)), h))
    h = b.conv(h, 16, 3, stride=2, bias=True)
    return b.model(b.fc(b.global_avg_pool_flatten(b.relu(h)), 10))


def attention_block(seq: int = 8, hidden: int = 16, heads: int = 2):
    """One self-attention block on (1, seq, hidden): Q, K, V and output projections (MatMul of a 3-D input
    by 2-D weights), heads split by Reshape + Transpose, scores and context by 4-D batched MatMul of two
    activations, Softmax on the last axis: the quantized MatMuls of an int8 transformer."""
    rng = np.random.default_rng(11)
    size = hidden // heads
    inits = {f"w{n}": (rng.standard_normal((hidden, hidden)) / np.sqrt(hidden)).astype(np.float32) for n in "qkvo"}
    inits.update(split=np.array([1, seq, heads, size], np.int64), merge=np.array([1, seq, hidden], np.int64))
    nodes = [helper.make_node("MatMul", ["x", f"w{n}"], [n]) for n in "qkv"]
    for n in "qkv":
        nodes += [helper.make_node("Reshape", [n, "split"], [f"{n}_split"]),
                  helper.make_node("Transpose", [f"{n}_split"], [f"{n}_heads"],
                                   perm=[0, 2, 3, 1] if n == "k" else [0, 2, 1, 3])]
    nodes += [helper.make_node("MatMul", ["q_heads", "k_heads"], ["scores"]),
              helper.make_node("Softmax", ["scores"], ["probs"], axis=-1),
              helper.make_node("MatMul", ["probs", "v_heads"], ["context"]),
              helper.make_node("Transpose", ["context"], ["context_t"], perm=[0, 2, 1, 3]),
              helper.make_node("Reshape", ["context_t", "merge"], ["merged"]),
              helper.make_node("MatMul", ["merged", "wo"], ["out"])]
    return checked_model("attention_block", nodes, [("x", (1, seq, hidden))], [("out", (1, seq, hidden))], inits)


# Float models quantized here that are not in the zoo: name -> builder of the onnx.ModelProto.
EXTRA_MODELS = {"tiny_cnn": tiny_cnn, "attention_block": attention_block}


def float_model(name: str):
    """The float onnx.ModelProto quantized for `name`: a zoo ONNX model or one of EXTRA_MODELS."""
    return EXTRA_MODELS[name]() if name in EXTRA_MODELS else zoo.onnx_model(name)


def cache_dir() -> Path:
    explicit = os.environ.get("BYOC_QUANTIZED_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "byoc" / "quantized"


def _digest(model_bytes: bytes, fmt: str, per_channel: bool) -> str:
    h = hashlib.sha256(model_bytes)
    h.update(f"\0{fmt}\0{per_channel}\0{RECIPE}\0ort {onnxruntime.__version__}\0onnx {onnx.__version__}".encode())
    return h.hexdigest()[:16]


def quantized_zoo_model(name: str, fmt: str = "qdq", per_channel: bool = True, directory=None) -> Path:
    """The path of model `name` quantized in format `fmt` (qdq or qop), made once per content digest."""
    if fmt not in FORMATS:
        raise ValueError(f"format {fmt!r}: one of {', '.join(FORMATS)}")
    model = float_model(name)
    model_bytes = model.SerializeToString()
    directory = Path(directory) if directory is not None else cache_dir()
    directory.mkdir(parents=True, exist_ok=True)
    granularity = "per_channel" if per_channel else "per_tensor"
    dst = directory / f"{name}-int8-{fmt}-{granularity}-{_digest(model_bytes, fmt, per_channel)}.onnx"
    if dst.exists():
        return dst
    with tempfile.TemporaryDirectory(prefix=".quantizing-", dir=directory) as tmp:
        out = Path(tmp) / dst.name
        _quantize(model, model_bytes, fmt, per_channel, Path(tmp), out)
        os.replace(out, dst)       # atomic: a reader sees no file or the whole file
    return dst


def _quantize(model, model_bytes: bytes, fmt: str, per_channel: bool, work: Path, out: Path) -> None:
    inp = model.graph.input[0]
    shape = [d.dim_value for d in inp.type.tensor_type.shape.dim]
    rng = np.random.default_rng(0)

    class Reader(quantization.CalibrationDataReader):
        def __init__(self):
            self.batches = iter([{inp.name: rng.standard_normal(shape).astype(np.float32)} for _ in range(4)])

        def get_next(self):
            return next(self.batches, None)

    raw, pre = work / "raw.onnx", work / "pre.onnx"
    raw.write_bytes(model_bytes)
    quantization.shape_inference.quant_pre_process(str(raw), str(pre))
    quantization.quantize_static(
        str(pre), str(out), Reader(), per_channel=per_channel,
        quant_format=quantization.QuantFormat.QDQ if fmt == "qdq" else quantization.QuantFormat.QOperator,
        activation_type=quantization.QuantType.QUInt8, weight_type=quantization.QuantType.QInt8)


# (op domain, op type) -> the (weight input, its zero point input) slots whose int8 constants
# weights_as_uint8 rewrites; a zero point slot past the node's inputs is optional and absent.
_WEIGHT_SLOTS = {
    ("", "DequantizeLinear"): ((0, 2),),
    ("", "QLinearConv"): ((3, 5),),
    ("", "QLinearMatMul"): ((0, 2), (3, 5)),
    ("", "MatMulInteger"): ((0, 2), (1, 3)),
    ("", "ConvInteger"): ((1, 3),),
    ("com.microsoft", "QGemm"): ((3, 5),),
}


def _has_int8_activations(graph: onnx.GraphProto, inits: dict) -> bool:
    """Whether an activation is int8: a graph input, a QuantizeLinear's result (its zero point's type) or the
    data input of a QOperator op (its zero point's type)."""
    int8 = onnx.TensorProto.INT8
    if any(v.type.tensor_type.elem_type == int8 for v in graph.input if v.name not in inits):
        return True
    activation_zp_slot = {"QuantizeLinear": 2, "QLinearConv": 2, "QLinearMatMul": 2, "MatMulInteger": 2}
    for node in graph.node:
        slot = activation_zp_slot.get(node.op_type)
        if slot is not None and slot < len(node.input) and node.input[slot] in inits \
                and inits[node.input[slot]].data_type == int8:
            return True
    return False


def weights_as_uint8(model: onnx.ModelProto) -> onnx.ModelProto:
    """The same model with every int8 constant operand of an integer op (weights, the Dequantize of a
    QDQ weight) stored as uint8: value + 128 with zero point + 128, which leaves each (value - zero
    point) and so the model's arithmetic unchanged.

    Why: onnxruntime's uint8 x int8 kernels on x86 CPUs without VNNI (AVX2 and AVX-512F/BW alone) sum
    pairs of products with vpmaddubsw, which saturates at int16 (255 * 127 * 2 > 32767): its result
    is then not the exact integer product, and where a pair saturates differs with the CPU. Its
    uint8 x uint8 (and int8-activation) kernels widen to int16 first and are exact on every CPU, so
    the rewritten model makes onnxruntime an exact peer everywhere. A model with int8 activations is
    returned as it is: int8 x int8 is exact already, and int8 x uint8 is not a pairing onnxruntime's
    QDQ fusion takes. The input is not changed."""
    out = onnx.ModelProto()
    out.CopyFrom(model)
    graph = out.graph
    inits = {t.name: t for t in graph.initializer}
    if _has_int8_activations(graph, inits):
        return out
    converted: dict[str, str] = {}

    def as_uint8(name: str) -> str:
        if name not in converted:
            value = numpy_helper.to_array(inits[name]).astype(np.int16) + 128
            converted[name] = f"{name}__as_uint8"
            graph.initializer.append(numpy_helper.from_array(value.astype(np.uint8), converted[name]))
        return converted[name]

    def is_int8_constant(name: str) -> bool:
        return name in inits and inits[name].data_type == onnx.TensorProto.INT8

    for node in graph.node:
        for value_slot, zp_slot in _WEIGHT_SLOTS.get((node.domain.replace("ai.onnx", ""), node.op_type), ()):
            if value_slot >= len(node.input) or not is_int8_constant(node.input[value_slot]):
                continue
            has_zp = zp_slot < len(node.input) and node.input[zp_slot] != ""
            if has_zp and not is_int8_constant(node.input[zp_slot]):
                continue   # a zero point computed at run time: leave the pair as it is
            if not has_zp:  # the default zero point, 0 int8: 128 uint8, shaped like DequantizeLinear's scale
                per_axis = node.op_type == "DequantizeLinear"
                if per_axis and node.input[1] not in inits:
                    continue
                shape = numpy_helper.to_array(inits[node.input[1]]).shape if per_axis else ()
                zp_name = f"{node.output[0]}__zero_point_as_uint8"
                graph.initializer.append(numpy_helper.from_array(np.full(shape, 128, np.uint8), zp_name))
                while len(node.input) <= zp_slot:
                    node.input.append("")
                node.input[zp_slot] = zp_name
            else:
                node.input[zp_slot] = as_uint8(node.input[zp_slot])
            node.input[value_slot] = as_uint8(node.input[value_slot])
    return out


def integer_session(model, int8_kernels: bool = True):
    """onnxruntime's CPU session on one thread for a model (path, bytes or ModelProto): the peer the quantized
    models are compared with. int8_kernels sets `session.qdqisint8allowed=1`, so int8 (not only uint8) QDQ
    is fused into its integer kernels (QLinearConv, QGemm, ...) on x86 too; uint8 models are fused either way.
    The session runs `weights_as_uint8(model)`: exact integer arithmetic on every CPU."""
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    if int8_kernels:
        options.add_session_config_entry("session.qdqisint8allowed", "1")
    if isinstance(model, bytes):
        model = onnx.load_from_string(model)
    elif not hasattr(model, "SerializeToString"):
        model = onnx.load(str(model))
    return onnxruntime.InferenceSession(weights_as_uint8(model).SerializeToString(), options,
                                        providers=["CPUExecutionProvider"])


def sample_input(path) -> tuple[str, np.ndarray]:
    """(input name, a seeded standard-normal input) of a one-input model."""
    model = onnx.load(str(path), load_external_data=False)
    inp = model.graph.input[0]
    shape = [d.dim_value for d in inp.type.tensor_type.shape.dim]
    return inp.name, np.random.default_rng(1).standard_normal(shape).astype(np.float32)


def output_step(path) -> float:
    """The scale of the last DequantizeLinear of the model: one LSB of its int8 result in the float output
    (0.0 when the model has none)."""
    model = onnx.load(str(path))
    inits = {t.name: t for t in model.graph.initializer}
    for node in reversed(model.graph.node):
        if node.op_type == "DequantizeLinear" and node.input[1] in inits:
            return float(numpy_helper.to_array(inits[node.input[1]]).reshape(-1)[0])
    return 0.0


def int8_agreement(got: np.ndarray, want: np.ndarray, lsb: float) -> tuple[float, float]:
    """(fraction of equal elements, largest difference in LSBs) of two dequantized int8 results."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    worst = float(np.abs(got - want).max()) if got.size else 0.0
    return float(np.mean(got == want)), (worst / lsb if lsb else (0.0 if worst == 0 else float("inf")))
