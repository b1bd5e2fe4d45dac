"""Host fusion (backend/host_fusion.py, host_kernels/qnn_fused.py): a quantized chain the host computes is one
step with no int32 or float32 tensor, and its outputs equal byoc's integer reference on every element.

Each graph quantizes a float input and runs one kind of chain on it; the int8 (or uint8) result is main's
output, compared exactly with the reference interpreter's (op by op in numpy). The structural checks say
which chains become one step and which stay op by op (an inner value with a second user)."""
from __future__ import annotations

import numpy as np
import pytest

import byoc_compiler as byoc
from byoc_compiler.backend.host_fusion import fuse_host_chains
from byoc_compiler.ir import Constant, Function, IRModule, Tuple, Var
from byoc_compiler.ir.types import TensorType
from byoc_compiler.op.registry import make_call
from byoc_compiler.testing.reference import run_reference
from byoc_compiler.transform import InferType

RNG = np.random.default_rng(24)


def _quantized(shape, zp=-3, dtype="int8"):
    data = Var("data", TensorType(shape, "float32"))
    return data, make_call("qnn.quantize", data, scale=[0.02], zero_point=[zp], out_dtype=dtype)


def _requantize(acc, channels: int, rounding: str, out_dtype="int8", per_channel=True, taps: int = 1):
    """Scales that spread the sums of `taps` products over the output's range (few saturate)."""
    spread = 0.02 * 40 / (np.sqrt(taps) * 60 * 74)      # |x - zp| ~ 60, |w| ~ 74
    scales = [float(s) for s in RNG.uniform(0.5, 1.5, channels if per_channel else 1) * spread]
    return make_call("qnn.requantize", acc, input_scale=scales, output_scale=[0.02],
                     output_zero_point=[7 if out_dtype == "uint8" else -5], out_dtype=out_dtype, rounding=rounding)


def _conv(shape, wshape, bias=True, rounding="float32", out_dtype="int8", per_channel=True, **attrs):
    data, x = _quantized(shape)
    w = Constant(RNG.integers(-128, 128, size=wshape).astype(np.int8))
    acc = make_call("qnn.conv2d", x, w, input_zero_point=-3, kernel_zero_point=[0] * wshape[0], **attrs)
    if bias:
        acc = make_call("add", acc, Constant(RNG.integers(-3000, 3000, size=(wshape[0], 1, 1)).astype(np.int32)))
    return Function([data], _requantize(acc, wshape[0], rounding, out_dtype, per_channel, int(np.prod(wshape[1:]))))


def _dense(shape, units, rounding="float32"):
    data, x = _quantized(shape)
    w = Constant(RNG.integers(-128, 128, size=(units, shape[-1])).astype(np.int8))
    acc = make_call("qnn.dense", x, w, input_zero_point=-3, kernel_zero_point=[0] * units)
    acc = make_call("add", acc, Constant(RNG.integers(-3000, 3000, size=(units,)).astype(np.int32)))
    return Function([data], _requantize(acc, units, rounding, taps=shape[-1]))


def _qdq_add(shape, relu=True):
    data, x = _quantized(shape)
    y = make_call("qnn.requantize", x, input_scale=[0.02], output_scale=[0.03], output_zero_point=[4])
    s = make_call("add", make_call("qnn.dequantize", x, scale=[0.02], zero_point=[-3]),
                  make_call("qnn.dequantize", y, scale=[0.03], zero_point=[4]))
    s = make_call("nn.relu", s) if relu else s
    return Function([data], make_call("qnn.quantize", s, scale=[0.025], zero_point=[-128]))


# (id, main, input shape, the fused step's composite)
CASES = [
    ("conv-padded-strided-per-channel",
     lambda: _conv((1, 3, 9, 11), (8, 3, 3, 3), strides=(2, 1), padding=(1, 2, 0, 1)), (1, 3, 9, 11),
     "host.qnn_conv2d_requantize"),
    ("conv-depthwise-dilated-fixed-point-uint8",
     lambda: _conv((1, 6, 10, 10), (6, 1, 3, 3), rounding="fixed_point", out_dtype="uint8", groups=6,
                   dilation=(2, 2), padding=(2, 2, 2, 2)), (1, 6, 10, 10), "host.qnn_conv2d_requantize"),
    ("conv-no-bias-per-tensor", lambda: _conv((1, 4, 5, 5), (2, 4, 1, 1), bias=False, per_channel=False),
     (1, 4, 5, 5), "host.qnn_conv2d_requantize"),
    # 33,100 taps: sums past int32 for 8-bit values, the int64 one-output-at-a-time path
    ("conv-wide-sums", lambda: _conv((1, 33100, 1, 2), (2, 33100, 1, 1)), (1, 33100, 1, 2),
     "host.qnn_conv2d_requantize"),
    ("dense-batch-3", lambda: _dense((3, 40), 6), (3, 40), "host.qnn_dense_requantize"),
    ("dense-fixed-point", lambda: _dense((1, 17), 5, rounding="fixed_point"), (1, 17), "host.qnn_dense_requantize"),
    ("qdq-add-relu", lambda: _qdq_add((1, 4, 6, 6)), (1, 4, 6, 6), "host.qdq_add"),
    ("qdq-add", lambda: _qdq_add((2, 30), relu=False), (2, 30), "host.qdq_add"),
]


@pytest.mark.parametrize("make,shape,composite", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_fused_chain_equals_the_reference(make, shape, composite):
    mod = InferType()(IRModule({"main": make()}))
    x = (RNG.standard_normal(shape) * 2).astype(np.float32)
    want = run_reference(mod, {"data": x})[0]
    lib = byoc.build(mod, toolchain="gcc", executor="aot", interface="unpacked")
    assert lib.program.steps[-1].op_name == composite
    for step in lib.program.steps:      # no step writes an int32 or float32 tensor but main's input's quantize
        assert all(lib.program.tensors[t].type.dtype in ("int8", "uint8") for t in step.outputs)
    (got,) = lib.run_runner([x])
    assert got.dtype == want.dtype and len(np.unique(want)) >= min(want.size // 2, 20)    # not all saturated
    np.testing.assert_array_equal(got, want)


def test_chain_with_a_shared_inner_value_stays_op_by_op():
    """The conv's int32 sum is also an output of main: the chain is not fused (its sum must exist)."""
    data, x = _quantized((1, 2, 4, 4))
    acc = make_call("qnn.conv2d", x, Constant(np.ones((3, 2, 1, 1), np.int8)), input_zero_point=-3,
                    kernel_zero_point=[0, 0, 0])
    out = _requantize(acc, 3, "float32")
    mod = InferType()(IRModule({"main": Function([data], Tuple([out, acc]))}))
    fused, changed = fuse_host_chains(mod)
    assert not changed and fused is mod


def test_tflite_rounding_stays_op_by_op():
    """TFLite's requantization (its own kernel, tflite_qnn.py) is not one of the fused kernels' roundings."""
    mod = InferType()(IRModule({"main": _conv((1, 2, 4, 4), (3, 2, 1, 1), rounding="tflite")}))
    assert not fuse_host_chains(mod)[1]
