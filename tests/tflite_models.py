"""Small .tflite models for the tests (single operators and a small CNN), written with byoc's writer from
seeded numpy weights, and the two peers that run them: TensorFlow Lite Micro and LiteRT."""
from __future__ import annotations

import numpy as np

from byoc_compiler.frontend.tflite.writer import TFLiteWriter


class Maker:
    """A writer with seeded data helpers: int8 (quantized) or float32 tensors by one switch."""

    def __init__(self, quantized: bool, seed: int = 0, int16: bool = False):
        self.w = TFLiteWriter()
        self.q = quantized
        self.int16 = int16            # 16x8: int16 activations (zero point 0), int8 weights, int64 biases
        self.bias_bits = 24
        self.rng = np.random.default_rng(seed)

    def act(self, name, shape, scale=None, zp=None):
        if not self.q:
            return self.w.tensor(name, shape, "float32")
        if self.int16:
            scale = float(self.rng.uniform(0.0001, 0.0004)) if scale is None else scale
            return self.w.tensor(name, shape, "int16", scale=scale, zero_point=0)
        scale = float(self.rng.uniform(0.02, 0.08)) if scale is None else scale
        zp = int(self.rng.integers(-20, 20)) if zp is None else zp
        return self.w.tensor(name, shape, "int8", scale=scale, zero_point=zp)

    def weight(self, name, shape, axis=0, per_channel=True):
        if not self.q:
            return self.w.tensor(name, shape, "float32", data=self.rng.standard_normal(shape) * 0.3)
        n = shape[axis] if per_channel else 1
        # 16x8: smaller weight steps keep the int16 outputs mostly unsaturated
        scales = self.rng.uniform(0.0002, 0.001, n) if self.int16 else self.rng.uniform(0.002, 0.01, n)
        return self.w.tensor(name, shape, "int8", data=self.rng.integers(-127, 128, shape), scale=scales,
                             zero_point=0, quantized_dimension=axis)

    def bias(self, name, n, in_scale, weight_index):
        if not self.q:
            return self.w.tensor(name, (n,), "float32", data=self.rng.standard_normal(n) * 0.1)
        wscales = np.asarray(self.w.tensors[weight_index].scale, np.float64)
        scales = np.float32(in_scale) * wscales
        if self.int16:      # 16x8's biases are int64, here up to 2**bias_bits
            bound = 2 ** self.bias_bits
            return self.w.tensor(name, (n,), "int64", data=self.rng.integers(-bound, bound, n), scale=list(scales),
                                 zero_point=0)
        return self.w.tensor(name, (n,), "int32", data=self.rng.integers(-2000, 2000, n), scale=list(scales),
                             zero_point=0)

    def scale(self, index):
        return self.w.tensors[index].scale[0] if self.q else 1.0

    def ints(self, name, values):
        values = np.asarray(values, np.int32)
        return self.w.tensor(name, values.shape, "int32", data=values)

    def finish(self, inputs, outputs):
        return self.w.finish(inputs, outputs)


def conv(quantized, padding="SAME", stride=1, act="RELU", depthwise=False, mult=1, shape=(1, 9, 9, 3), out=4,
         int16=False, bias_bits=24, out_scale=None):
    """CONV_2D or DEPTHWISE_CONV_2D; 16x8 (int16) with biases up to 2**bias_bits (past int32's range: the sums
    need int64) and the output step out_scale."""
    m = Maker(quantized, seed=1, int16=int16)
    m.bias_bits = bias_bits
    x = m.act("x", shape)
    c = shape[3]
    if depthwise:
        out = c * mult
        k = m.weight("k", (1, 3, 3, out), axis=3)
    else:
        k = m.weight("k", (out, 3, 3, c), axis=0)
    b = m.bias("b", out, m.scale(x), k)
    size = (lambda n: -(-n // stride)) if padding == "SAME" else (lambda n: (n - 3) // stride + 1)
    y = m.act("y", (1, size(shape[1]), size(shape[2]), out), scale=out_scale)
    opts = dict(padding=padding, stride_w=stride, stride_h=stride, fused_activation_function=act)
    if depthwise:
        opts["depth_multiplier"] = mult
    m.w.op("DEPTHWISE_CONV_2D" if depthwise else "CONV_2D", [x, k, b], [y], **opts)
    return m.finish([x], [y])


def fully_connected(quantized, per_channel=False, act="NONE", flatten_from=None, int16=False):
    """FC on a [1, 24] input, or after a CONV_2D and a RESHAPE that flattens (H, W, C) (flatten_from)."""
    m = Maker(quantized, seed=2, int16=int16)
    if flatten_from:
        h, w, c = flatten_from
        x = m.act("x", (1, h, w, 2))
        k = m.weight("k", (c, 1, 1, 2))
        b = m.bias("b", c, m.scale(x), k)
        feat = m.act("feat", (1, h, w, c))
        m.w.op("CONV_2D", [x, k, b], [feat], padding="VALID", stride_w=1, stride_h=1)
        flat = m.act("flat", (1, h * w * c), m.scale(feat), m.w.tensors[feat].zero_point[0] if quantized else None)
        m.w.op("RESHAPE", [feat, m.ints("shape", [1, h * w * c])], [flat], new_shape=[1, h * w * c])
        inp, depth = x, h * w * c
    else:
        inp = flat = m.act("x", (1, 24))
        depth = 24
    k2 = m.weight("fc_w", (10, depth), per_channel=per_channel)
    b2 = m.bias("fc_b", 10, m.scale(flat), k2)
    y = m.act("y", (1, 10))
    m.w.op("FULLY_CONNECTED", [flat, k2, b2], [y], fused_activation_function=act)
    return m.finish([inp], [y])


def binary(quantized, op="ADD", act="NONE", broadcast=False, out_scale=None, int16=False):
    m = Maker(quantized, seed=3, int16=int16)
    a = m.act("a", (1, 5, 5, 4))
    b = m.act("b", (1, 1, 1, 4) if broadcast else (1, 5, 5, 4))
    y = m.act("y", (1, 5, 5, 4), scale=out_scale if quantized else None)
    m.w.op(op, [a, b], [y], fused_activation_function=act)
    return m.finish([a, b], [y])


def pool(quantized, op="AVERAGE_POOL_2D", padding="SAME", size=3, stride=2, act="NONE", int16=False):
    m = Maker(quantized, seed=4, int16=int16)
    x = m.act("x", (1, 10, 10, 3))
    n = (lambda v: -(-v // stride)) if padding == "SAME" else (lambda v: (v - size) // stride + 1)
    tq = m.w.tensors[x]
    y = m.w.tensor("y", (1, n(10), n(10), 3), tq.dtype, scale=tq.scale, zero_point=tq.zero_point)
    m.w.op(op, [x], [y], padding=padding, stride_w=stride, stride_h=stride, filter_width=size,
           filter_height=size, fused_activation_function=act)
    return m.finish([x], [y])


def activation(quantized, op="SOFTMAX", shape=(2, 3, 3, 10), beta=1.0, int16=False):
    """SOFTMAX, LOGISTIC or TANH with TFLite's fixed int8 output quantization (int16 SOFTMAX: 1/32768, 0)."""
    m = Maker(quantized, seed=6, int16=int16)
    x = m.act("x", shape, scale=(0.0005 if int16 else 0.08) if quantized else None)
    out_q = {"SOFTMAX": (1 / 256, -128), "LOGISTIC": (1 / 256, -128), "TANH": (1 / 128, 0)}[op]
    if int16:
        y = m.w.tensor("y", shape, "int16", scale=1 / 32768, zero_point=0)
    elif quantized:
        y = m.w.tensor("y", shape, "int8", scale=out_q[0], zero_point=out_q[1])
    else:
        y = m.act("y", shape)
    opts = {"beta": beta} if op == "SOFTMAX" else {}
    m.w.op(op, [x], [y], **opts)
    return m.finish([x], [y])


def conv_softmax(quantized):
    """CONV_2D then SOFTMAX over its channels: the softmax of an activation held NCHW inside byoc."""
    m = Maker(quantized, seed=7)
    x = m.act("x", (1, 5, 5, 3))
    k = m.weight("k", (12, 1, 1, 3))
    b = m.bias("b", 12, m.scale(x), k)
    h = m.act("h", (1, 5, 5, 12), scale=0.1 if quantized else None)
    m.w.op("CONV_2D", [x, k, b], [h], padding="VALID", stride_w=1, stride_h=1)
    y = m.w.tensor("y", (1, 5, 5, 12), "int8", scale=1 / 256, zero_point=-128) if quantized else m.act("y", (1, 5, 5, 12))
    m.w.op("SOFTMAX", [h], [y], beta=1.0)
    return m.finish([x], [y])


def batch_matmul(quantized, adj_y=False):
    """BATCH_MATMUL of two run-time tensors, [2, 3, 5, 16] x [2, 3, 16, 7] (or its transpose with adj_y)."""
    m = Maker(quantized, seed=8)
    a = m.act("a", (2, 3, 5, 16))
    b = m.act("b", (2, 3, 7, 16) if adj_y else (2, 3, 16, 7))
    y = m.act("y", (2, 3, 5, 7), scale=0.5 if quantized else None)
    m.w.op("BATCH_MATMUL", [a, b], [y], adj_x=False, adj_y=adj_y)
    return m.finish([a, b], [y])


def reduce(quantized, op="MEAN", axes=(1, 2), keep=True, shape=(1, 5, 6, 7)):
    """MEAN or SUM over `axes` of a run-time tensor, output quantized on its own (int8: TFLite's MEAN/SUM)."""
    m = Maker(quantized, seed=10)
    x = m.act("x", shape)
    out_shape = tuple(1 if i in axes else d for i, d in enumerate(shape) if keep or i not in axes)
    y = m.act("y", out_shape, scale=0.5 if quantized and op == "SUM" else None)
    m.w.op(op, [x, m.ints("axes", list(axes))], [y], keep_dims=keep)
    return m.finish([x], [y])


def rsqrt(quantized, shape=(4, 32)):
    """RSQRT; int8 with the input's zero point at -128 (TFLite refuses inputs below the zero point)."""
    m = Maker(quantized, seed=11)
    if quantized:
        x, y = m.act("x", shape, scale=0.05, zp=-128), m.act("y", shape, scale=0.02, zp=-128)
    else:
        x, y = m.act("x", shape), m.act("y", shape)
    m.w.op("RSQRT", [x], [y])
    return m.finish([x], [y])


def resize(quantized, op="RESIZE_NEAREST_NEIGHBOR", size=(7, 10), align=False, half=False, shape=(1, 4, 5, 3)):
    """RESIZE_* of a run-time NHWC tensor to `size` (the output quantized like the input)."""
    m = Maker(quantized, seed=12)
    x = m.act("x", shape)
    tq = m.w.tensors[x]
    y = m.w.tensor("y", (shape[0], *size, shape[3]), tq.dtype, scale=tq.scale, zero_point=tq.zero_point)
    m.w.op(op, [x, m.ints("size", list(size))], [y], align_corners=align, half_pixel_centers=half)
    return m.finish([x], [y])


def space_batch(quantized, op="SPACE_TO_BATCH_ND", block=(2, 3), pads=((1, 0), (1, 1)), shape=(2, 5, 7, 3)):
    """SPACE_TO_BATCH_ND (pads: paddings) or BATCH_TO_SPACE_ND (pads: crops) of an NHWC tensor."""
    m = Maker(quantized, seed=13)
    x = m.act("x", shape, zp=0 if quantized else None)
    n, h, w, c = shape
    (bh, bw), ((t, b), (l, r)) = block, pads
    if op == "SPACE_TO_BATCH_ND":
        out = (n * bh * bw, (h + t + b) // bh, (w + l + r) // bw, c)
    else:
        out = (n // (bh * bw), h * bh - t - b, w * bw - l - r, c)
    tq = m.w.tensors[x]
    y = m.w.tensor("y", out, tq.dtype, scale=tq.scale, zero_point=tq.zero_point)
    m.w.op(op, [x, m.ints("block", list(block)), m.ints("pads", [list(p) for p in pads])], [y])
    return m.finish([x], [y])


def arg_max(quantized, axis=3, shape=(1, 4, 5, 9), output_type="int32"):
    m = Maker(quantized, seed=14)
    x = m.act("x", shape)
    y = m.w.tensor("y", tuple(d for i, d in enumerate(shape) if i != axis), output_type)
    m.w.op("ARG_MAX", [x, m.ints("axis", [axis])], [y], output_type=output_type.upper())
    return m.finish([x], [y])


def prelu(quantized, alpha_shape=(1, 1, 4), shape=(1, 5, 6, 4)):
    """PRELU with a constant alpha per channel (broadcast over H and W)."""
    m = Maker(quantized, seed=15)
    x = m.act("x", shape)
    data = m.rng.uniform(-0.5, 0.9, alpha_shape)
    if quantized:
        alpha = m.w.tensor("alpha", alpha_shape, "int8", data=np.clip(np.rint(data / 0.01) + 5, -128, 127),
                           scale=0.01, zero_point=5)
    else:
        alpha = m.w.tensor("alpha", alpha_shape, "float32", data=data)
    y = m.act("y", shape)
    m.w.op("PRELU", [x, alpha], [y])
    return m.finish([x], [y])


def transpose_conv(quantized, padding="SAME", stride=2, shape=(1, 4, 5, 3), out=6, kernel=3, bias=True):
    """TRANSPOSE_CONV (output shape, filter OHWI, input, bias) of a run-time NHWC tensor."""
    m = Maker(quantized, seed=16)
    x = m.act("x", shape)
    n, h, w, c = shape
    k = m.weight("k", (out, kernel, kernel, c), axis=0)
    size = (lambda v: v * stride) if padding == "SAME" else (lambda v: (v - 1) * stride + kernel)
    out_shape = (n, size(h), size(w), out)
    b = m.bias("b", out, m.scale(x), k) if bias else -1
    y = m.act("y", out_shape)
    m.w.op("TRANSPOSE_CONV", [m.ints("out_shape", list(out_shape)), k, x, b], [y], padding=padding,
           stride_w=stride, stride_h=stride)
    return m.finish([x], [y])


def l2_normalization(quantized, shape=(2, 3, 4, 10)):
    """L2_NORMALIZATION over the last axis; int8 with TFLite's fixed output quantization (1/128, 0)."""
    m = Maker(quantized, seed=17)
    x = m.act("x", shape)
    y = m.w.tensor("y", shape, "int8", scale=1 / 128, zero_point=0) if quantized else m.act("y", shape)
    m.w.op("L2_NORMALIZATION", [x], [y])
    return m.finish([x], [y])


def leaky_relu(quantized, alpha=0.2, shape=(2, 3, 4, 5)):
    m = Maker(quantized, seed=19)
    x, y = m.act("x", shape), m.act("y", shape)
    m.w.op("LEAKY_RELU", [x], [y], alpha=alpha)
    return m.finish([x], [y])


def hard_swish(quantized, shape=(2, 3, 4, 5), scales=(None, None)):
    m = Maker(quantized, seed=20)
    x, y = m.act("x", shape, scale=scales[0]), m.act("y", shape, scale=scales[1])
    m.w.op("HARD_SWISH", [x], [y])
    return m.finish([x], [y])


def small_cnn(quantized, int16=False):
    """conv -> depthwise conv -> conv (stride 2) -> average pool -> reshape -> fully connected."""
    m = Maker(quantized, seed=5, int16=int16)
    x = m.act("input", (1, 12, 12, 3))
    layers = [("CONV_2D", (8, 3, 3, 3), 0, (1, 12, 12, 8), 1), ("DEPTHWISE_CONV_2D", (1, 3, 3, 8), 3, (1, 12, 12, 8), 1),
              ("CONV_2D", (16, 3, 3, 8), 0, (1, 6, 6, 16), 2)]
    h = x
    for i, (name, wshape, axis, oshape, stride) in enumerate(layers):
        k = m.weight(f"w{i}", wshape, axis=axis)
        b = m.bias(f"b{i}", oshape[3], m.scale(h), k)
        y = m.act(f"act{i}", oshape)
        opts = dict(padding="SAME", stride_w=stride, stride_h=stride, fused_activation_function="RELU6")
        if name == "DEPTHWISE_CONV_2D":
            opts["depth_multiplier"] = 1
        m.w.op(name, [h, k, b], [y], **opts)
        h = y
    tq = m.w.tensors[h]
    pooled = m.w.tensor("pooled", (1, 3, 3, 16), tq.dtype, scale=tq.scale, zero_point=tq.zero_point)
    m.w.op("AVERAGE_POOL_2D", [h, ], [pooled], padding="VALID", stride_w=2, stride_h=2, filter_width=2,
           filter_height=2)
    flat = m.w.tensor("flat", (1, 144), tq.dtype, scale=tq.scale, zero_point=tq.zero_point)
    m.w.op("RESHAPE", [pooled, m.ints("shape", [1, 144])], [flat], new_shape=[1, 144])
    k = m.weight("fc_w", (10, 144), per_channel=False)
    b = m.bias("fc_b", 10, m.scale(flat), k)
    y = m.act("logits", (1, 10))
    m.w.op("FULLY_CONNECTED", [flat, k, b], [y])
    return m.finish([x], [y])


def random_inputs(data: bytes, seed: int = 0) -> dict[str, np.ndarray]:
    """Seeded inputs for every input of a model imported from `data` (int8 over the full range)."""
    from byoc_compiler.frontend.tflite.reader import read_model   # the tests' view of the file

    rng = np.random.default_rng(seed)
    model = read_model(data, "test model")
    out = {}
    for index in model.inputs:
        t = model.tensors[index]
        if t.dtype == "float32":
            out[t.name] = rng.standard_normal(t.shape).astype(np.float32)
        else:
            info = np.iinfo(t.dtype)
            out[t.name] = rng.integers(info.min, info.max + 1, t.shape).astype(t.dtype)
    return out


def run_tflm(data: bytes, inputs: dict[str, np.ndarray], arena_size: int | None = None) -> list[np.ndarray]:
    """TensorFlow Lite Micro's outputs (inputs in the model's input order); `arena_size` in bytes for models
    whose tensors outgrow its default arena."""
    from tflite_micro.python.tflite_micro import runtime   # a test extra: loaded only by the tests that use it

    interp = runtime.Interpreter.from_bytes(data, arena_size=arena_size)
    for i, value in enumerate(inputs.values()):
        interp.set_input(value, i)
    interp.invoke()
    return [interp.get_output(i) for i in range(_output_count(data))]


def _output_count(data: bytes) -> int:
    from byoc_compiler.frontend.tflite.reader import read_model   # the tests' view of the file

    return len(read_model(data, "test model").outputs)


def run_litert(data: bytes, inputs: dict[str, np.ndarray], reference: bool = True) -> list[np.ndarray]:
    """LiteRT's outputs, with its reference kernels (BUILTIN_REF) unless reference=False (XNNPACK etc.)."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType   # a test extra

    kind = OpResolverType.BUILTIN_REF if reference else OpResolverType.AUTO
    interp = Interpreter(model_content=data, experimental_op_resolver_type=kind, num_threads=1)
    interp.allocate_tensors()
    for detail, value in zip(interp.get_input_details(), inputs.values()):
        interp.set_tensor(detail["index"], value)
    interp.invoke()
    return [interp.get_tensor(d["index"]) for d in interp.get_output_details()]
