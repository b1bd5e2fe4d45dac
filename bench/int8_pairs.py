"""ccompiler's int8 convolutions on a pair-safe weight (vpmaddubsw + corrections) against the plain one, per layer.

    python bench/int8_pairs.py [--model resnet50|mobilenetv2] [--repeat 9] [--cc gcc]

For every distinct convolution geometry (depthwise ones aside) of the quantized ResNet-50 or MobileNetV2 (real
weights: onnxruntime's static quantization of the zoo model, `testing.quantize.quantized_zoo_model`), this prints the share of the pair-safe
weight's row k-steps that carry a correction entry (`qkernels.pack_weight_pairs`), the time of ck_qconv2d on the
plain weight (`.pairs = 0`: the exact widening kernel on AVX2) and on the pair-safe one (`.pairs = 1`), medians of
--repeat rounds of the calling thread's CPU time, one thread (every form takes its turn in each round), their ratio, for
a 1x1 convolution the same with its input channels in `pair_order.channel_order` (`.channel_order`: entries and time
over the plain weight's), and what the codegen asks for that weight on an AVX2 CPU without an int8 dot product
(`qkernels.pairs_plan`, whose PAIRS_MAX_ENTRIES threshold this table sets). Outputs are
checked equal. The library is built with -O3 -march=native and runs the GEMM kernel this CPU picks (its name is
printed); on a CPU with an int8 dot product both forms run vpdpbusd and the ratio shows what the corrections cost.
"""
from __future__ import annotations

import argparse
import ctypes
import statistics
import sys
import tempfile
import time
from pathlib import Path
from unittest import mock

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
from byoc_compiler.contrib.ccompiler import kernels as K  # noqa: E402
from byoc_compiler.contrib.ccompiler import qkernels as Q  # noqa: E402
from byoc_compiler.contrib.ccompiler import pair_order  # noqa: E402
from qconv_chunks import _Conv, _library, _Params, _ptr, _Q  # noqa: E402


def _convs(model_name: str) -> list[tuple[str, tuple, np.ndarray, tuple, tuple]]:
    """(name, data shape, int8 OIHW weight, stride, padding) of the int8 zoo model's ungrouped convolutions, the first
    of each distinct geometry."""
    import onnx
    from onnx import numpy_helper
    from byoc_compiler.testing.quantize import quantized_zoo_model
    model = onnx.shape_inference.infer_shapes(onnx.load(str(quantized_zoo_model(model_name, "qdq", True))))
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    shapes = {v.name: tuple(d.dim_value for d in v.type.tensor_type.shape.dim)
              for v in list(model.graph.value_info) + list(model.graph.input)}
    dequantized = {n.output[0]: n.input[0] for n in model.graph.node if n.op_type == "DequantizeLinear"}
    convs, seen = [], set()
    for node in model.graph.node:
        if node.op_type != "Conv":
            continue
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        weight = inits[dequantized[node.input[1]]]
        data = shapes[node.input[0]]
        stride, pads = tuple(attrs.get("strides", (1, 1))), tuple(attrs.get("pads", (0, 0, 0, 0)))
        key = (data, weight.shape, stride, pads)
        if attrs.get("group", 1) != 1 or key in seen:
            continue
        seen.add(key)
        name = f"{weight.shape[2]}x{weight.shape[3]}{'/2' if stride[0] == 2 else ''} {weight.shape[1]}->" \
               f"{weight.shape[0]} @{data[2]}"
        convs.append((name, data, weight, stride, (pads[0], pads[1], pads[2], pads[3])))
    return convs


def _time(lib, forms, x, bias, scale, repeat: int) -> list[float]:
    """Median CPU microseconds of ck_qconv2d per form (params, weight, workspace, out), the forms alternated."""
    times = [[] for _ in forms]
    for _ in range(repeat + 1):          # the first round warms up and is dropped
        for (params, weight, ws, out), spent in zip(forms, times):
            t = time.thread_time()
            for _ in range(5):
                lib.ck_qconv2d(ctypes.byref(params), _ptr(x), _ptr(weight), _ptr(bias), _ptr(scale), _ptr(out),
                               _ptr(ws))
            spent.append((time.thread_time() - t) / 5 * 1e6)
    return [statistics.median(t[1:]) for t in times]


def _layer(lib, layer, repeat: int, rng) -> str:
    name, dshape, w, stride, pad = layer
    p = K.conv2d_params(dshape, w.shape, stride, pad, (1, 1), 1)
    x = rng.integers(0, 256, size=dshape).astype(np.uint8)
    bias = rng.integers(-1000, 1000, size=w.shape[0]).astype(np.int32)
    scale = rng.uniform(1e-4, 1e-3, size=w.shape[0]).astype(np.float32)
    oh, ow = Q._output_hw(p)
    order = pair_order.channel_order(w) if w.shape[2:] == (1, 1) else None
    forms = []
    for pairs, weight, channels in ((0, Q.pack_weight(1, w), None), (1, Q.pack_weight_pairs(1, w), None),
                                    (1, Q.pack_weight_pairs(1, w, order), order)):
        params = _Params(_Conv(**p), _Q(**Q.qparams("uint8", "uint8", 3, 5)), 0, 0, pairs)
        if channels is not None:
            params.channel_order = channels.ctypes.data_as(ctypes.POINTER(ctypes.c_int32))
        ws = np.zeros(lib.ck_qconv2d_workspace_bytes(ctypes.byref(params)), np.uint8)
        forms.append((params, weight, ws, np.zeros((1, w.shape[0], oh, ow), np.uint8)))
    plain, safe, ordered = _time(lib, forms, x, bias, scale, repeat)
    assert all(np.array_equal(forms[0][3], f[3]) for f in forms[1:]), f"{name}: a pair-safe weight's output differs"
    entries = Q.pair_entry_share(1, w)
    entries_ordered = entries if order is None else Q.pair_entry_share(1, w[:, order])
    with mock.patch.object(Q, "build_cpu_features", lambda: frozenset({"avx2"})):   # the table's AVX2 CPU
        asked, asked_order = Q.pairs_plan(p, 0, False, w)
    asked_text = ("pair-safe, reordered" if asked_order is not None else "pair-safe") if asked else "plain"
    ordered_cells = "- | -" if order is None else f"{100 * entries_ordered:.1f}% | {ordered / plain:.2f}"
    return (f"| {name} | {100 * entries:.1f}% | {plain:.0f} | {safe:.0f} | {safe / plain:.2f} | {ordered_cells} | "
            f"{asked_text} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", choices=("resnet50", "mobilenetv2"), default="resnet50")
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--cc", default="gcc")
    args = ap.parse_args()
    convs = _convs(args.model)
    with tempfile.TemporaryDirectory() as tmp:
        lib = _library(args.cc, Path(tmp) / "libck.so")     # the pool held at one thread
        lib.ck_qgemm_kernel_name.restype = ctypes.c_char_p
        rng = np.random.default_rng(2026)
        print(f"int8 {args.model}'s convolutions, kernel {lib.ck_qgemm_kernel_name().decode()}, one thread, CPU time "
              f"of the calling thread, medians of {args.repeat} alternated rounds")
        print("| conv | entries | plain us | pair-safe us | pair-safe / plain | entries reordered | reordered / plain "
              "| codegen asks |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- |")
        for layer in convs:
            print(_layer(lib, layer, args.repeat, rng), flush=True)


if __name__ == "__main__":
    main()
