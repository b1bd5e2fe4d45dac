"""Host kernels against each op's numpy reference: every op of the registry, many shapes
(broadcasting, 0-d, 1-element, odd/prime dims), both interfaces, gcc and clang with
-Wall -Wextra -Werror, and one sanitizer batch (ASan + UBSan) through a C driver program."""
from __future__ import annotations

import ctypes
import os
import subprocess
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

import needs
from shared_library import compile_shared, shared_source

from byoc_compiler import ctext
from byoc_compiler.backend.host_kernels import HostKernelError, emit_kernel
from byoc_compiler.ir import Tuple, TupleType, Var
from byoc_compiler.ir.types import TensorType
from byoc_compiler.op.registry import all_ops, get_op_def, make_call

ROOT = Path(__file__).resolve().parent.parent
RUNTIME = ROOT / "byoc_compiler" / "runtime"
COMPILERS = needs.compilers()   # config.toml's [build] toolchains: a missing one skips, or fails in CI
WARNINGS = ["-std=c99", "-Wall", "-Wextra", "-Werror"]
F, I32, I64, B = "float32", "int32", "int64", "bool"
F16, F64, I8, I16, U8, U16 = "float16", "float64", "int8", "int16", "uint8", "uint16"
ALL_DTYPES = (F, F16, F64, I8, I16, I32, I64, U8, U16, B)


# ---- the case table -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Arg:
    shape: tuple
    dtype: str = F
    values: str = "normal"  # how to draw the input, see draw()


@dataclass(frozen=True)
class Case:
    id: str
    op: str
    args: tuple
    attrs: dict = field(default_factory=dict)

    @property
    def symbol(self) -> str:
        return ctext.sanitize_identifier("k_" + self.id)


def draw(arg: Arg, rng: np.random.Generator) -> np.ndarray:
    shape, kind = arg.shape, arg.values
    if kind == "normal":
        a = rng.standard_normal(shape) * 2.0
    elif kind == "positive":
        a = rng.uniform(0.05, 4.0, shape)
    elif kind == "negative":
        a = -rng.uniform(0.05, 4.0, shape)
    elif kind == "small":  # float values that convert to every integer dtype
        a = rng.uniform(-100.0, 100.0, shape)
    elif kind == "ints":
        a = rng.integers(-20, 21, shape)
    elif kind == "nonzero":
        a = rng.integers(1, 21, shape) * rng.choice([-1, 1], shape)
    elif kind == "full":  # the dtype's whole range: wrap-around must match numpy
        info = np.iinfo(arg.dtype if np.dtype(arg.dtype).kind in "iu" else np.int32)
        a = rng.integers(info.min, info.max, shape, dtype=np.int64, endpoint=True)
    elif kind == "acc":  # int32 accumulators of an int8 conv: up to ~2**20
        a = rng.integers(-(2 ** 20), 2 ** 20, shape)
    elif kind == "acc64":  # int64 accumulators of a 16x8 conv: magnitudes 2**4 .. 2**47 (TFLite's range), and
        # a few past it (the C wraps like numpy)
        bits = rng.integers(4, 48, shape)
        a = rng.integers(-(2 ** 47), 2 ** 47, shape, dtype=np.int64) >> (47 - bits)
        a.flat[1::23] = rng.integers(-(2 ** 62), 2 ** 62, a.flat[1::23].shape, dtype=np.int64)
    elif kind == "wide":  # floats beyond every integer range, NaN and infinities: cast must saturate
        a = rng.standard_normal(shape) * 10.0 ** rng.integers(0, 21, shape)
        a.flat[::5] = np.nan
        a.flat[1::9] = np.inf
        a.flat[2::9] = -np.inf
        a.flat[3::11] = 127.5
        a.flat[4::11] = -128.5
    elif kind.startswith("index"):  # in and out of range, negative too
        n = int(kind.split(":")[1])
        a = rng.integers(-2 * n - 1, 2 * n + 2, shape)
    elif kind == "special":  # NaN and infinities among normal values: NaN must propagate like numpy's
        a = rng.standard_normal(shape) * 2.0
        a.flat[::3] = np.nan
        a.flat[1::7] = np.inf
        a.flat[2::7] = -np.inf
    elif kind == "bool":
        a = rng.integers(0, 2, shape).astype(bool)
    else:
        raise AssertionError(kind)
    with np.errstate(over="ignore"):  # "wide" floats overflow float16 to inf on purpose
        return np.asarray(a).astype(arg.dtype)


def _binary_cases():
    shapes = {"same": ((2, 3), (2, 3)), "bcast315_41": ((3, 1, 5), (4, 1)), "scalar_lhs": ((), (7,)),
              "one": ((1,), (1,)), "row": ((5, 7), (7,)), "4d": ((2, 1, 3, 1), (1, 4, 1, 5)),
              "prime": ((13, 1), (1, 11))}
    cases = []
    for name in ("add", "subtract", "multiply", "divide", "maximum", "minimum"):
        cases.append(Case(f"{name}-f32-special", name, (Arg((5, 7), F, "special"), Arg((7,), F, "special"))))
        for sid, (a, b) in shapes.items():
            rhs_kind = "positive" if name == "divide" else "normal"
            cases.append(Case(f"{name}-f32-{sid}", name, (Arg(a), Arg(b, values=rhs_kind))))
        for sid in ("same", "bcast315_41", "scalar_lhs", "prime"):
            a, b = shapes[sid]
            lhs_kind = "ints" if name == "divide" else "full"
            rhs_kind = "nonzero" if name == "divide" else "full"
            cases.append(Case(f"{name}-i32-{sid}", name, (Arg(a, I32, lhs_kind), Arg(b, I32, rhs_kind))))
    return cases


def _unary_cases():
    cases = []
    float_ops = {"negative": "normal", "abs": "normal", "exp": "normal", "log": "positive", "sqrt": "positive",
                 "tanh": "normal", "sigmoid": "normal", "nn.relu": "normal"}
    for name, kind in float_ops.items():
        for sid, shape in (("3d", (2, 3, 5)), ("0d", ()), ("prime", (13,))):
            cases.append(Case(f"{name}-f32-{sid}", name, (Arg(shape, F, kind),)))
    for name in ("negative", "abs", "nn.relu"):
        cases.append(Case(f"{name}-i32", name, (Arg((3, 7), I32, "full"),)))
    cases += [
        Case("leaky_relu", "nn.leaky_relu", (Arg((4, 9)),), {"alpha": 0.1}),
        Case("leaky_relu-default", "nn.leaky_relu", (Arg((1,)),)),
        Case("clip-f32", "clip", (Arg((5, 6)),), {"a_min": -1.25, "a_max": 0.7}),
        Case("clip-i32-fractional", "clip", (Arg((5, 6), I32, "ints"),), {"a_min": -3.5, "a_max": 4.5}),
        Case("clip-f32-inverted", "clip", (Arg((7,)),), {"a_min": 1.0, "a_max": -1.0}),
        Case("clip-f32-special", "clip", (Arg((4, 5), F, "special"),), {"a_min": -1.0, "a_max": 1.0}),
        *[Case(f"{name}-f32-special", name, (Arg((6, 7), F, "special"),))
          for name in ("nn.relu", "exp", "sigmoid", "tanh", "abs", "negative", "log")],
        Case("leaky_relu-special", "nn.leaky_relu", (Arg((5, 5), F, "special"),)),
    ]
    for src in ALL_DTYPES:
        for dst in ALL_DTYPES:
            kind = {B: "bool"}.get(src, "small" if src.startswith("float") else "full")
            cases.append(Case(f"cast-{src}-{dst}", "cast", (Arg((3, 5), src, kind),), {"dtype": dst}))
    for src in (F, F16, F64):   # out of range, NaN, inf: the saturation rule of op/cast_rule.py
        for dst in (I8, I16, I32, I64, U8, U16, B, F16, F):
            if dst != src:
                cases.append(Case(f"cast-wide-{src}-{dst}", "cast", (Arg((7, 9), src, "wide"),), {"dtype": dst}))
    # the other dtypes' arithmetic: narrow ints wrap, float16 rounds once at the store, float64 is double
    for dtype in (F16, F64, I8, I16, U8, U16):
        kind = "normal" if dtype.startswith("float") else "full"
        for name in ("add", "subtract", "multiply", "maximum", "minimum"):
            cases.append(Case(f"{name}-{dtype}", name, (Arg((3, 1, 5), dtype, kind), Arg((4, 1), dtype, kind))))
        for name in ("negative", "abs", "nn.relu"):
            cases.append(Case(f"{name}-{dtype}", name, (Arg((2, 7), dtype, kind),)))
        cases.append(Case(f"clip-{dtype}", "clip", (Arg((5, 6), dtype, kind),), {"a_min": -100.5, "a_max": 90.0}))
    for dtype in (F16, F64):
        cases.append(Case(f"divide-{dtype}", "divide", (Arg((3, 4), dtype), Arg((4,), dtype, "positive"))))
        for name, kind in (("exp", "normal"), ("log", "positive"), ("sqrt", "positive"), ("tanh", "normal"),
                           ("sigmoid", "normal")):
            cases.append(Case(f"{name}-{dtype}", name, (Arg((3, 5), dtype, kind),)))
        cases.append(Case(f"leaky_relu-{dtype}", "nn.leaky_relu", (Arg((4, 5), dtype),), {"alpha": 0.1}))
    cases += [Case(f"transpose-{d}", "transpose", (Arg((2, 3, 4), d, "full"),)) for d in (I8, U8, I16, U16)]
    cases += [Case("concatenate-i8", "concatenate", (Arg((2, 3), I8, "full"), Arg((2, 2), I8, "full")), {"axis": 1}),
              Case("concatenate-f16", "concatenate", (Arg((2, 3), F16), Arg((1, 3), F16)))]
    return cases


def _nn_cases():
    x4 = Arg((2, 4, 7, 9))
    return [
        Case("dense-2d", "nn.dense", (Arg((3, 5)), Arg((4, 5)))),
        Case("dense-batch-dims", "nn.dense", (Arg((2, 3, 5)), Arg((7, 5))), {"units": 7}),
        Case("dense-1d", "nn.dense", (Arg((5,)), Arg((3, 5)))),
        *[Case(f"matmul-ta{int(ta)}-tb{int(tb)}", "nn.matmul",
               (Arg((5, 3) if ta else (3, 5)), Arg((4, 5) if tb else (5, 4))),
               {"transpose_a": ta, "transpose_b": tb}) for ta in (False, True) for tb in (False, True)],
        Case("bias_add-axis1", "nn.bias_add", (Arg((2, 3, 4, 5)), Arg((3,)))),
        Case("bias_add-axis-1", "nn.bias_add", (Arg((2, 3, 5)), Arg((5,))), {"axis": -1}),
        Case("bias_add-1d", "nn.bias_add", (Arg((6,)), Arg((6,))), {"axis": 0}),
        Case("conv2d-plain", "nn.conv2d", (Arg((1, 3, 6, 5)), Arg((4, 3, 3, 3)))),
        Case("conv2d-stride-pad4", "nn.conv2d", (Arg((2, 3, 9, 8)), Arg((5, 3, 3, 2))),
             {"strides": (2, 3), "padding": (1, 2, 0, 1)}),
        Case("conv2d-dilation", "nn.conv2d", (Arg((1, 2, 11, 10)), Arg((3, 2, 3, 3))),
             {"dilation": (2, 3), "padding": (2, 2)}),
        Case("conv2d-groups2", "nn.conv2d", (Arg((1, 4, 7, 7)), Arg((6, 2, 3, 3))), {"groups": 2, "padding": 1}),
        Case("conv2d-depthwise", "nn.conv2d", (Arg((2, 5, 8, 7)), Arg((5, 1, 3, 3))),
             {"groups": 5, "strides": 2, "padding": (1, 1)}),
        Case("conv2d-depthwise-mult2", "nn.conv2d", (Arg((1, 3, 6, 6)), Arg((6, 1, 2, 2))), {"groups": 3}),
        Case("conv2d-1x1", "nn.conv2d", (Arg((1, 7, 3, 5)), Arg((2, 7, 1, 1)))),
        Case("max_pool-2x2", "nn.max_pool2d", (x4,), {"pool_size": 2, "strides": 2}),
        Case("max_pool-pad-ceil", "nn.max_pool2d", (x4,),
             {"pool_size": 3, "strides": 2, "padding": (1, 1), "ceil_mode": True}),
        Case("max_pool-dilation-asym", "nn.max_pool2d", (x4,),
             {"pool_size": (2, 3), "strides": (1, 2), "dilation": (2, 1), "padding": (1, 0, 0, 2)}),
        Case("max_pool-special", "nn.max_pool2d", (Arg((1, 2, 6, 6), F, "special"),), {"pool_size": 2}),
        Case("max_pool-negative-pad-never-wins", "nn.max_pool2d", (Arg((1, 2, 5, 5), F, "negative"),),
             {"pool_size": 3, "padding": 1}),
        *[Case(f"avg_pool-ceil{int(ceil)}-incl{int(incl)}", "nn.avg_pool2d", (x4,),
               {"pool_size": 3, "strides": 2, "padding": (1, 1, 2, 0), "ceil_mode": ceil,
                "count_include_pad": incl}) for ceil in (False, True) for incl in (False, True)],
        Case("avg_pool-dilation", "nn.avg_pool2d", (x4,), {"pool_size": 2, "dilation": 2, "padding": 1}),
        Case("global_avg_pool", "nn.global_avg_pool2d", (x4,)),
        Case("batch_norm-axis1", "nn.batch_norm",
             (Arg((2, 3, 4, 5)), Arg((3,)), Arg((3,)), Arg((3,)), Arg((3,), F, "positive"))),
        Case("batch_norm-axis-1-nocenter-noscale", "nn.batch_norm",
             (Arg((4, 6)), Arg((6,)), Arg((6,)), Arg((6,)), Arg((6,), F, "positive")),
             {"axis": -1, "center": False, "scale": False, "epsilon": 1e-3}),
        Case("softmax-last", "nn.softmax", (Arg((3, 7)),)),
        Case("softmax-axis0", "nn.softmax", (Arg((5, 2, 3)),), {"axis": 0}),
        Case("softmax-axis1-large", "nn.softmax", (Arg((2, 11, 3), F, "full"),), {"axis": 1}),
        Case("softmax-1elem", "nn.softmax", (Arg((1,)),)),
        Case("lrn-default", "nn.lrn", (Arg((1, 7, 3, 3)),)),
        Case("lrn-even-axis3", "nn.lrn", (Arg((2, 3, 2, 6)),), {"size": 4, "axis": 3, "alpha": 0.3, "beta": 0.5}),
    ]


def _shape_cases():
    return [
        Case("reshape", "reshape", (Arg((3, 4)),), {"newshape": (2, -1, 3)}),
        Case("reshape-i32-copy-dim", "reshape", (Arg((4, 6), I32, "full"),), {"newshape": (2, 0, -1)}),
        Case("squeeze-all", "squeeze", (Arg((1, 3, 1, 2)),)),
        Case("expand_dims", "expand_dims", (Arg((3, 2)),), {"axis": 1, "num_newaxis": 2}),
        Case("batch_flatten", "nn.batch_flatten", (Arg((2, 3, 2, 2)),)),
        Case("dropout", "nn.dropout", (Arg((5, 3)),)),
        Case("transpose-default-3d", "transpose", (Arg((2, 3, 4)),)),
        Case("transpose-102", "transpose", (Arg((2, 3, 5)),), {"axes": (1, 0, 2)}),
        Case("transpose-4d-i32", "transpose", (Arg((2, 3, 1, 5), I32, "full"),), {"axes": (3, 1, 0, 2)}),
        Case("transpose-bool", "transpose", (Arg((3, 1, 4), B, "bool"),)),
        Case("transpose-5d-neg-axes", "transpose", (Arg((2, 1, 3, 2, 3)),), {"axes": (-1, 0, 2, 1, 3)}),
        Case("concatenate-3-axis1", "concatenate", (Arg((2, 3, 2)), Arg((2, 1, 2)), Arg((2, 4, 2))), {"axis": 1}),
        Case("concatenate-i32-axis0", "concatenate", (Arg((2, 3), I32, "full"), Arg((1, 3), I32, "full"))),
        Case("concatenate-i64", "concatenate", (Arg((2, 2), I64, "ints"), Arg((2, 3), I64, "ints")), {"axis": 1}),
        Case("concatenate-neg-axis", "concatenate", (Arg((3, 2)), Arg((3, 5))), {"axis": -1}),
        Case("concatenate-1d", "concatenate", (Arg((3,)), Arg((1,)), Arg((2,)), Arg((5,)))),
        Case("split-sections", "split", (Arg((2, 6, 3)),), {"indices_or_sections": 3, "axis": 1}),
        Case("split-indices", "split", (Arg((7, 2), I32, "full"),), {"indices_or_sections": (2, 5)}),
        Case("split-indices-neg-axis", "split", (Arg((2, 9)),), {"indices_or_sections": (1, 1, 4), "axis": -1}),
        *[Case(f"take-{mode}-{idx}-axis{axis}", "take", (Arg((4, 5)), Arg((2, 3), idx, f"index:{n}")),
               {"axis": axis, "mode": mode})
          for mode in ("clip", "wrap") for idx in (I32, I64)
          for axis, n in ((None, 20), (0, 4), (1, 5))],
        Case("take-3d-i32data", "take", (Arg((2, 3, 4), I32, "full"), Arg((5,), I32, "index:3")), {"axis": -2}),
        Case("take-i64-data", "take", (Arg((7,), I64, "ints"), Arg((3, 2), I32, "index:7")), {"mode": "wrap"}),
        Case("take-0d-index", "take", (Arg((6,)), Arg((), I64, "index:6")), {"axis": 0, "mode": "wrap"}),
        Case("pad-constant", "nn.pad", (Arg((3, 4)),), {"pad_width": ((1, 2), (0, 3)), "pad_value": 1.5}),
        Case("pad-constant-i32", "nn.pad", (Arg((2, 3, 2), I32, "full"),),
             {"pad_width": ((1, 0), (2, 1), (0, 0)), "pad_value": -7.0}),
        Case("pad-reflect", "nn.pad", (Arg((4, 5)),), {"pad_width": ((3, 2), (1, 4)), "pad_mode": "reflect"}),
        Case("pad-edge", "nn.pad", (Arg((1, 3, 4)),), {"pad_width": ((0, 0), (2, 3), (4, 1)), "pad_mode": "edge"}),
        Case("pad-nchw", "nn.pad", (Arg((1, 2, 3, 3)),), {"pad_width": ((0, 0), (0, 0), (1, 1), (1, 1))}),
    ]


def _empty_cases():
    """Tensors with a zero extent: nothing to compute, nothing may be touched."""
    return [
        Case("empty-add-bcast", "add", (Arg((0, 3)), Arg((3,)))),
        Case("empty-exp", "exp", (Arg((2, 0)),)),
        Case("empty-cast", "cast", (Arg((0,)),), {"dtype": I32}),
        Case("empty-transpose", "transpose", (Arg((0, 2, 3)),)),
        Case("empty-reshape", "reshape", (Arg((0, 4)),), {"newshape": (0, 2, 2)}),
        Case("empty-concatenate-piece", "concatenate", (Arg((2, 0)), Arg((2, 3))), {"axis": 1}),
        Case("empty-split-piece", "split", (Arg((5, 2)),), {"indices_or_sections": (0, 3)}),
        Case("empty-take-indices", "take", (Arg((4, 3)), Arg((0,), I32, "index:4")), {"axis": 0}),
        Case("empty-softmax", "nn.softmax", (Arg((0, 5)),)),
        Case("empty-dense-k0", "nn.dense", (Arg((2, 0)), Arg((3, 0)))),
        Case("empty-pad", "nn.pad", (Arg((0, 2)),), {"pad_width": ((1, 1), (0, 1)), "pad_value": 3.0}),
    ]


def _qnn_cases():
    """Quantized ops: per-tensor and per-channel, both 8-bit types, padding, groups, saturation."""
    pc = [0.01, 0.02, 0.005, 0.04]
    return [
        Case("quantize-i8", "qnn.quantize", (Arg((2, 3, 4), F, "normal"),), {"scale": [0.02], "zero_point": [-3]}),
        Case("quantize-u8-per-channel", "qnn.quantize", (Arg((2, 4, 3), F, "wide"),),
             {"scale": pc, "zero_point": [128, 120, 130, 127], "axis": 1, "out_dtype": "uint8"}),
        Case("quantize-ties", "qnn.quantize", (Arg((5, 7), F, "ints"),), {"scale": [2.0], "zero_point": [1]}),
        Case("quantize-tflite-ties", "qnn.quantize", (Arg((5, 7), F, "ints"),),
             {"scale": [2.0], "zero_point": [1], "rounding": "tflite"}),
        Case("dequantize-i8", "qnn.dequantize", (Arg((3, 5), I8, "full"),), {"scale": [0.1], "zero_point": [4]}),
        Case("dequantize-u8-axis0", "qnn.dequantize", (Arg((4, 5), U8, "full"),),
             {"scale": pc, "zero_point": [128, 0, 255, 7], "axis": 0}),
        Case("dequantize-i32", "qnn.dequantize", (Arg((6,), I32, "full"),), {"scale": [1e-6]}),
        Case("requantize-i32-per-channel", "qnn.requantize", (Arg((2, 4, 3, 3), I32, "acc"),),
             {"input_scale": [1e-4, 2e-4, 3.3e-5, 7e-4], "output_scale": [0.05], "output_zero_point": [-5]}),
        Case("requantize-u8", "qnn.requantize", (Arg((3, 7), U8, "full"),),
             {"input_scale": [0.1], "input_zero_point": [128], "output_scale": [0.07], "output_zero_point": [3],
              "out_dtype": "int8", "axis": -1}),
        Case("requantize-ties", "qnn.requantize", (Arg((40,), I32, "ints"),),
             {"input_scale": [1.0], "output_scale": [4.0], "axis": 0}),
        Case("requantize-fixed-point-per-channel", "qnn.requantize", (Arg((2, 4, 3, 3), I32, "acc"),),
             {"input_scale": [1e-4, 2e-4, 3.3e-5, 7e-4], "output_scale": [0.05], "output_zero_point": [-5],
              "rounding": "fixed_point"}),
        Case("requantize-fixed-point-ties", "qnn.requantize", (Arg((40,), I32, "ints"),),
             {"input_scale": [1.0], "output_scale": [4.0], "axis": 0, "rounding": "fixed_point"}),
        Case("qconv2d-i8-pad", "qnn.conv2d", (Arg((1, 3, 6, 5), I8, "full"), Arg((4, 3, 3, 3), I8, "full")),
             {"padding": 1, "input_zero_point": -7, "kernel_zero_point": [0]}),
        Case("qconv2d-u8-per-channel-stride", "qnn.conv2d",
             (Arg((2, 4, 7, 7), U8, "full"), Arg((6, 2, 3, 2), U8, "full")),
             {"strides": (2, 1), "padding": (1, 0, 2, 1), "groups": 2, "input_zero_point": 128,
              "kernel_zero_point": [3, 128, 0, 255, 1, 9]}),
        Case("qconv2d-depthwise", "qnn.conv2d", (Arg((1, 5, 6, 6), I8, "full"), Arg((5, 1, 3, 3), I8, "full")),
             {"groups": 5, "padding": 1, "dilation": 2, "input_zero_point": 10}),
        Case("qdense-i8", "qnn.dense", (Arg((3, 17), I8, "full"), Arg((5, 17), I8, "full")),
             {"input_zero_point": 2, "kernel_zero_point": [0, 1, -1, 5, 0]}),
        Case("qmatmul-u8", "qnn.matmul", (Arg((4, 9), U8, "full"), Arg((9, 3), U8, "full")),
             {"a_zero_point": 128, "b_zero_point": [127, 0, 255]}),
        Case("qadd-i8-bcast", "qnn.add", (Arg((2, 3, 4), I8, "full"), Arg((3, 1), I8, "full")),
             {"lhs_scale": [0.05], "lhs_zero_point": 3, "rhs_scale": [0.11], "rhs_zero_point": -9,
              "output_scale": [0.08], "output_zero_point": 1}),
        Case("qadd-u8", "qnn.add", (Arg((5, 6), U8, "full"), Arg((5, 6), U8, "full")),
             {"lhs_scale": [0.5], "lhs_zero_point": 128, "rhs_scale": [0.5], "rhs_zero_point": 128,
              "output_scale": [1.0], "output_zero_point": 128}),
        Case("qadd-fixed-point", "qnn.add", (Arg((5, 6), I8, "full"), Arg((6,), I8, "full")),
             {"lhs_scale": [0.05], "lhs_zero_point": 3, "rhs_scale": [0.11], "rhs_zero_point": -9,
              "output_scale": [0.08], "output_zero_point": 1, "rounding": "fixed_point"}),
        Case("qmul-i8", "qnn.mul", (Arg((4, 5), I8, "full"), Arg((5,), I8, "full")),
             {"lhs_scale": [0.05], "lhs_zero_point": 0, "rhs_scale": [0.02], "rhs_zero_point": 4,
              "output_scale": [0.03], "output_zero_point": -2}),
        Case("qconcatenate-i8", "qnn.concatenate", (Arg((2, 3, 2), I8, "full"), Arg((2, 2, 2), I8, "full")),
             {"input_scales": [0.1, 0.3], "input_zero_points": [0, 5], "output_scale": 0.1,
              "output_zero_point": 0, "axis": 1}),
        Case("qconcatenate-u8-fixed-point", "qnn.concatenate", (Arg((2, 3, 2), U8, "full"), Arg((2, 2, 2), U8, "full")),
             {"input_scales": [0.1, 0.3], "input_zero_points": [0, 5], "output_scale": 0.1,
              "output_zero_point": 0, "axis": 1, "rounding": "fixed_point"}),
        *[Case(f"qavg_pool-{d}-incl{int(incl)}", "qnn.avg_pool2d", (Arg((1, 3, 7, 6), d, "full"),),
               {"pool_size": 3, "strides": 2, "padding": 1, "count_include_pad": incl, "input_scale": [0.07],
                "input_zero_point": 3, "output_scale": [0.05], "output_zero_point": -2 if d == I8 else 9})
          for d in (I8, U8) for incl in (False, True)],
        Case("qavg_pool-2x2-ceil", "qnn.avg_pool2d", (Arg((2, 2, 5, 5), I8, "full"),),
             {"pool_size": 2, "strides": 2, "ceil_mode": True, "input_scale": [0.5], "output_scale": [0.5]}),
        Case("pad-u8-zero-point", "nn.pad", (Arg((1, 2, 3, 4), U8, "full"),),
             {"pad_width": ((0, 0), (0, 0), (1, 2), (2, 1)), "pad_value": 128.0}),
        Case("pad-i8-reflect", "nn.pad", (Arg((2, 5), I8, "full"),), {"pad_width": ((1, 0), (2, 3)), "pad_mode": "reflect"}),
        Case("argmax-u8", "argmax", (Arg((3, 7, 4), U8, "full"),), {"axis": 1}),
        Case("argmax-i8-last", "argmax", (Arg((3, 7), I8, "full"),), {"axis": -1, "select_last_index": True}),
        Case("max_pool-i8", "nn.max_pool2d", (Arg((1, 3, 7, 6), I8, "full"),),
             {"pool_size": 3, "strides": 2, "padding": 1, "ceil_mode": True}),
        Case("max_pool-u8", "nn.max_pool2d", (Arg((2, 2, 5, 5), U8, "full"),), {"pool_size": 2}),
        *[Case(f"avg_pool-{d}-incl{int(incl)}", "nn.avg_pool2d", (Arg((1, 3, 7, 6), d, "full"),),
               {"pool_size": 3, "strides": 2, "padding": 1, "count_include_pad": incl})
          for d in (I8, U8) for incl in (False, True)],
        # TFLite's arithmetic (rounding="tflite"; op/tflite_math.py, op/tflite_fixedpoint.py)
        Case("requantize-tflite-per-channel", "qnn.requantize", (Arg((2, 4, 3, 3), I32, "acc"),),
             {"input_scale": [1e-4, 2e-4, 3.3e-5, 7e-4], "output_scale": [0.05], "output_zero_point": [-5],
              "rounding": "tflite"}),
        Case("requantize-tflite-single-ties", "qnn.requantize", (Arg((40,), I32, "ints"),),
             {"input_scale": [1.0], "output_scale": [4.0], "axis": 0, "rounding": "tflite_single"}),
        Case("requantize-tflite-up", "qnn.requantize", (Arg((3, 7), I8, "full"),),
             {"input_scale": [0.3], "input_zero_point": [-4], "output_scale": [0.07], "axis": -1,
              "rounding": "tflite"}),
        # 16x8: int16 x int8 sums in int64 (or int32), TFLite's 64-bit rescale, int16 ADD and pools
        Case("requantize-tflite-i64", "qnn.requantize", (Arg((5, 64), I64, "acc64"),),
             {"input_scale": [3e-7, 1e-6, 2.5e-5, 0.004, 1.0], "output_scale": [0.01], "out_dtype": "int16",
              "axis": 0, "rounding": "tflite"}),
        Case("qconv2d-16x8", "qnn.conv2d", (Arg((1, 4, 6, 5), I16, "full"), Arg((6, 2, 3, 3), I8, "full")),
             {"groups": 2, "padding": 1, "strides": 2, "out_dtype": "int64"}),
        Case("qdense-16x8-i32", "qnn.dense", (Arg((3, 20), I16, "full"), Arg((4, 20), I8, "full"))),
        Case("qadd-tflite-i16", "qnn.add", (Arg((2, 3, 4), I16, "full"), Arg((3, 1), I16, "full")),
             {"lhs_scale": [0.0005], "rhs_scale": [0.0011], "output_scale": [0.0008], "rounding": "tflite"}),
        Case("avg_pool-i16-tflite", "nn.avg_pool2d", (Arg((1, 3, 7, 6), I16, "full"),),
             {"pool_size": 3, "strides": 2, "padding": 1, "rounding": "tflite"}),
        Case("max_pool-i16", "nn.max_pool2d", (Arg((1, 2, 5, 5), I16, "full"),), {"pool_size": 2}),
        Case("qsoftmax-i16-channels", "qnn.softmax", (Arg((2, 6, 3, 2), I16, "full"),),
             {"input_scale": 0.0004, "beta": 0.5, "axis": 1}),
        Case("qsoftmax-i16-last", "qnn.softmax", (Arg((5, 37), I16, "full"),), {"input_scale": 0.00005}),
        Case("qadd-tflite-bcast", "qnn.add", (Arg((2, 3, 4), I8, "full"), Arg((3, 1), I8, "full")),
             {"lhs_scale": [0.05], "lhs_zero_point": 3, "rhs_scale": [0.11], "rhs_zero_point": -9,
              "output_scale": [0.08], "output_zero_point": 1, "rounding": "tflite"}),
        Case("qmul-tflite", "qnn.mul", (Arg((4, 5), I8, "full"), Arg((5,), I8, "full")),
             {"lhs_scale": [0.05], "lhs_zero_point": 0, "rhs_scale": [0.02], "rhs_zero_point": 4,
              "output_scale": [0.03], "output_zero_point": -2, "rounding": "tflite"}),
        Case("avg_pool-i8-tflite", "nn.avg_pool2d", (Arg((1, 3, 7, 6), I8, "full"),),
             {"pool_size": 3, "strides": 2, "padding": 1, "rounding": "tflite"}),
        Case("qsubtract-tflite-bcast", "qnn.subtract", (Arg((2, 3, 4), I8, "full"), Arg((3, 1), I8, "full")),
             {"lhs_scale": [0.05], "lhs_zero_point": 3, "rhs_scale": [0.11], "rhs_zero_point": -9,
              "output_scale": [0.08], "output_zero_point": 1}),
        Case("qsoftmax-last", "qnn.softmax", (Arg((3, 17), I8, "full"),), {"input_scale": 0.07}),
        Case("qsoftmax-channels", "qnn.softmax", (Arg((2, 6, 3, 2), I8, "full"),),
             {"input_scale": 0.2, "beta": 0.5, "axis": 1}),
        # TFLite's quantized MEAN (1/count folded into the multiplier) and SUM
        Case("qmean-tflite-last", "qnn.mean", (Arg((2, 5, 7), I8, "full"),),
             {"axis": [-1], "keepdims": True, "input_scale": 0.05, "input_zero_point": 3, "output_scale": 0.02,
              "output_zero_point": -7}),
        Case("qmean-tflite-hw-i16", "qnn.mean", (Arg((2, 6, 5, 3), I16, "full"),),
             {"axis": [1, 2], "input_scale": 0.001, "output_scale": 0.0007}),
        Case("qsum-tflite", "qnn.sum", (Arg((3, 4, 5), I8, "full"),),
             {"axis": [1], "input_scale": 0.01, "input_zero_point": -2, "output_scale": 0.09,
              "output_zero_point": 4}),
        Case("ql2norm-last", "qnn.l2_normalize", (Arg((3, 17), I8, "full"),), {"input_zero_point": -3}),
        Case("ql2norm-channels", "qnn.l2_normalize", (Arg((2, 6, 3, 2), I8, "full"),),
             {"input_zero_point": 5, "axis": 1}),
        Case("relu-i8", "nn.relu", (Arg((3, 5), I8, "full"),)),
        Case("clip-i8-relu6", "clip", (Arg((3, 5), I8, "full"),), {"a_min": -5.0, "a_max": 50.0}),
    ]


def _broad_cases():
    """The ops of today's models (comparisons, reductions, slicing, resize, transformer ops)."""
    cases = [Case("power-f32", "power", (Arg((3, 4), F, "positive"), Arg((4,)))),
             Case("erf", "erf", (Arg((5, 7)),)),
             Case("hard_sigmoid", "nn.hard_sigmoid", (Arg((4, 6)),), {"alpha": 0.3, "beta": 0.4}),
             Case("hard_swish", "nn.hard_swish", (Arg((4, 9)),)),
             Case("gelu", "nn.gelu", (Arg((3, 8)),)),
             Case("gelu-tanh", "nn.gelu", (Arg((3, 8)),), {"approximate": "tanh"}),
             Case("logical_not", "logical_not", (Arg((3, 4), B, "bool"),)),
             Case("where", "where", (Arg((3, 1), B, "bool"), Arg((1, 4)), Arg((3, 4)))),
             Case("where-i64", "where", (Arg((2, 3), B, "bool"), Arg((2, 3), I64, "ints"), Arg((), I64, "ints")))]
    for name in ("equal", "less", "greater", "less_equal", "greater_equal"):
        cases.append(Case(f"{name}-f32", name, (Arg((3, 4), F, "ints"), Arg((4,), F, "ints"))))
        cases.append(Case(f"{name}-i64", name, (Arg((2, 3), I64, "ints"), Arg((2, 1), I64, "ints"))))
    cases.append(Case("equal-bool", "equal", (Arg((2, 3), B, "bool"), Arg((3,), B, "bool"))))
    cases += [Case("less-f16", "less", (Arg((2, 3), "float16", "ints"), Arg((3,), "float16", "ints"))),
              Case("greater_equal-u8", "greater_equal", (Arg((4,), "uint8", "bool"), Arg((4,), "uint8", "bool"))),
              Case("equal-f64", "equal", (Arg((2, 3), "float64", "ints"), Arg((1,), "float64", "ints")))]
    for name in ("add", "subtract", "multiply", "maximum", "minimum"):
        cases.append(Case(f"{name}-i64", name, (Arg((3, 4), I64, "ints"), Arg((4,), I64, "ints"))))
    cases += [Case("divide-i64", "divide", (Arg((3, 4), I64, "ints"), Arg((4,), I64, "nonzero"))),
              Case("power-f64", "power", (Arg((3,), "float64", "positive"), Arg((3,), "float64"))),
              Case("sum-f64", "sum", (Arg((3, 4), "float64"),), {"axis": (1,)}),
              Case("max-bool", "max", (Arg((3, 4), B, "bool"),), {"axis": (0,)}),
              Case("min-bool-empty", "min", (Arg((0, 4), B, "bool"),), {"axis": (0,)}),
              Case("argmax-f64", "argmax", (Arg((3, 4), "float64", "ints"),), {"axis": 1}),
              Case("pad-wrap", "nn.pad", (Arg((3, 4)),), {"pad_width": ((2, 5), (1, 3)), "pad_mode": "wrap"}),
              Case("batch_matmul-f64", "nn.batch_matmul", (Arg((2, 3, 4), "float64"), Arg((4, 5), "float64"))),
              Case("softmax-f64", "nn.softmax", (Arg((3, 6), "float64"),)),
              Case("where-f16", "where", (Arg((3,), B, "bool"), Arg((3,), "float16"), Arg((3,), "float16")))]
    for name in ("logical_and", "logical_or", "logical_xor"):
        cases.append(Case(name, name, (Arg((2, 3), B, "bool"), Arg((3,), B, "bool"))))
    for name in ("sum", "mean", "max", "min", "prod"):
        kind = "positive" if name == "prod" else "normal"
        cases += [Case(f"{name}-axes02", name, (Arg((3, 4, 5), F, kind),), {"axis": (0, 2)}),
                  Case(f"{name}-all-keep", name, (Arg((2, 3), F, kind),), {"keepdims": True}),
                  Case(f"{name}-none", name, (Arg((2, 3), F, kind),), {"axis": ()}),
                  Case(f"{name}-i32-last", name, (Arg((4, 5), I32, "ints"),), {"axis": (-1,)})]
    cases += [Case("max-special", "max", (Arg((4, 6), F, "special"),), {"axis": (1,)}),
              Case("sum-empty-axis", "sum", (Arg((2, 0, 3)),), {"axis": (1,)}),
              Case("max-empty-axis", "max", (Arg((2, 0)),), {"axis": (1,), "keepdims": True})]
    for name in ("argmax", "argmin"):
        cases += [Case(f"{name}-axis1", name, (Arg((3, 5, 2), F, "ints"),), {"axis": 1}),
                  Case(f"{name}-last-index", name, (Arg((4, 6), F, "ints"),), {"axis": -1, "keepdims": False,
                                                                               "select_last_index": True}),
                  Case(f"{name}-i32", name, (Arg((5, 3), I32, "ints"),)),
                  Case(f"{name}-special", name, (Arg((3, 7), F, "special"),), {"axis": 1})]
    cases += [Case("strided_slice", "strided_slice", (Arg((5, 6, 4)),),
                   {"begin": (1, -1, 0), "end": (4, -100, 4), "strides": (2, -2, 1)}),
              Case("strided_slice-i64-empty", "strided_slice", (Arg((4, 3), I64, "ints"),),
                   {"begin": (3, 0), "end": (1, 3), "strides": (1, 1)}),
              Case("tile", "tile", (Arg((2, 3)),), {"reps": (2, 3)}),
              Case("tile-bool", "tile", (Arg((3,), B, "bool"),), {"reps": (4,)}),
              Case("broadcast_to", "broadcast_to", (Arg((3, 1)),), {"shape": (2, 3, 4)}),
              Case("batch_matmul", "nn.batch_matmul", (Arg((2, 3, 5)), Arg((2, 5, 4)))),
              Case("batch_matmul-bcast-tb", "nn.batch_matmul", (Arg((2, 1, 3, 5)), Arg((3, 4, 5))),
                   {"transpose_b": True}),
              Case("batch_matmul-ta", "nn.batch_matmul", (Arg((2, 5, 3)), Arg((5, 4))), {"transpose_a": True}),
              Case("layer_norm", "nn.layer_norm", (Arg((2, 3, 8)), Arg((8,)), Arg((8,)))),
              Case("layer_norm-axis1-bcast", "nn.layer_norm", (Arg((2, 3, 4)), Arg((3, 1)), Arg((4,))),
                   {"axis": 1, "epsilon": 0.1})]
    resize = {"size": (1, 2, 7, 9), "scales": (1.0, 1.0, 7 / 4, 9 / 5)}
    for method in ("nearest", "linear", "cubic"):
        cases.append(Case(f"resize-{method}", "image.resize", (Arg((1, 2, 4, 5)),), {**resize, "method": method}))
    cases += [Case("resize-linear-down-antialias-align", "image.resize", (Arg((1, 1, 8, 7)),),
                   {"size": (1, 1, 3, 4), "scales": (1.0, 1.0, 3 / 8, 4 / 7), "method": "linear", "antialias": True}),
              Case("resize-crop-extrapolate", "image.resize", (Arg((1, 1, 4, 4)),),
                   {"size": (1, 1, 3, 3), "scales": (1.0, 1.0, 0.75, 0.75), "method": "linear",
                    "coordinate_transformation_mode": "tf_crop_and_resize",
                    "roi": (0, 0, 0.4, -0.3, 1, 1, 1.2, 0.9), "extrapolation_value": 7.5}),
              Case("resize-nearest-asym-ceil", "image.resize", (Arg((2, 3)),),
                   {"size": (4, 7), "scales": (2.0, 7 / 3), "coordinate_transformation_mode": "asymmetric",
                    "nearest_mode": "ceil"})]
    return cases


def _blocked_cases():
    """Shapes at the edges of the host GEMM's blocks (4x16 register tiles, K blocks of 256, im2col panels
    of 16 pixels that straddle output rows) and of the depthwise rows: odd sizes, one-sized dims,
    two K blocks, padding on every side, strides, dilation, groups."""
    return [
        Case("dense-gemm-3x17-k300", "nn.dense", (Arg((3, 300)), Arg((17, 300)))),
        Case("dense-gemm-5x33-k257", "nn.dense", (Arg((5, 257)), Arg((33, 257)))),
        Case("dense-dot-1x5-k37", "nn.dense", (Arg((1, 37)), Arg((5, 37)))),
        Case("dense-dot-2x3-k16", "nn.dense", (Arg((2, 16)), Arg((3, 16)))),
        *[Case(f"matmul-edges-ta{int(ta)}-tb{int(tb)}", "nn.matmul",
               (Arg((270, 6) if ta else (6, 270)), Arg((19, 270) if tb else (270, 19))),
               {"transpose_a": ta, "transpose_b": tb}) for ta in (False, True) for tb in (False, True)],
        Case("batch_matmul-edges", "nn.batch_matmul", (Arg((2, 5, 270)), Arg((270, 18)))),
        Case("conv2d-3x3-k270-7x7", "nn.conv2d", (Arg((1, 30, 7, 7)), Arg((5, 30, 3, 3))), {"padding": 1}),
        Case("conv2d-5x5-stride2-asym-pad", "nn.conv2d", (Arg((2, 3, 11, 13)), Arg((6, 3, 5, 5))),
             {"strides": 2, "padding": (1, 2, 0, 1)}),
        Case("conv2d-pointwise-5x7", "nn.conv2d", (Arg((2, 9, 5, 7)), Arg((7, 9, 1, 1)))),
        Case("conv2d-1x1-stride2", "nn.conv2d", (Arg((1, 6, 7, 9)), Arg((5, 6, 1, 1))), {"strides": 2}),
        Case("conv2d-1x1-groups3", "nn.conv2d", (Arg((1, 12, 5, 5)), Arg((9, 4, 1, 1))), {"groups": 3}),
        Case("conv2d-1x1-spatial", "nn.conv2d", (Arg((1, 4, 1, 1)), Arg((3, 4, 1, 1)))),
        Case("conv2d-dilated-stride-w2", "nn.conv2d", (Arg((1, 3, 9, 10)), Arg((4, 3, 3, 3))),
             {"dilation": 2, "padding": 2, "strides": (1, 2)}),
        Case("depthwise-5x5-w17", "nn.conv2d", (Arg((1, 4, 9, 17)), Arg((4, 1, 5, 5))), {"groups": 4, "padding": 2}),
        Case("depthwise-stride2-asym", "nn.conv2d", (Arg((1, 3, 10, 19)), Arg((3, 1, 3, 3))),
             {"groups": 3, "strides": 2, "padding": (0, 1, 1, 0)}),
        Case("depthwise-kernel-over-input", "nn.conv2d", (Arg((1, 2, 2, 3)), Arg((2, 1, 5, 5))),
             {"groups": 2, "padding": 2}),
        Case("conv2d-one-input-channel", "nn.conv2d", (Arg((1, 1, 6, 5)), Arg((3, 1, 3, 3))), {"padding": 1}),
        # transposes in 16 x 16 tiles: partial tiles on both sides, one-sized dims, 1-byte elements
        Case("transpose-tiles-nchw-nhwc", "transpose", (Arg((2, 3, 37, 19)),), {"axes": (0, 2, 3, 1)}),
        Case("transpose-tiles-0312", "transpose", (Arg((2, 3, 37, 19)),), {"axes": (0, 3, 1, 2)}),
        Case("transpose-tiles-2d", "transpose", (Arg((33, 17)),)),
        Case("transpose-tiles-unit-dims", "transpose", (Arg((1, 20, 1, 18)),), {"axes": (3, 1, 0, 2)}),
        Case("transpose-tiles-i8", "transpose", (Arg((17, 35), I8, "full"),)),
        Case("transpose-channel-shuffle", "transpose", (Arg((1, 3, 4, 5, 6)),), {"axes": (0, 2, 1, 3, 4)}),
        # max pool by rows: strided rows with the window off both edges, ceil mode past the padding
        Case("max_pool-rows-stride2-ceil", "nn.max_pool2d", (Arg((1, 3, 9, 17)),),
             {"pool_size": 3, "strides": 2, "padding": (1, 2, 0, 1), "ceil_mode": True}),
        Case("max_pool-rows-window-over-input", "nn.max_pool2d", (Arg((1, 2, 2, 3)),),
             {"pool_size": 4, "padding": 2}),
        # hard_swish decides the clip on x: integers hit -3 and 3 exactly; NaN and infinities
        Case("hard_swish-ints", "nn.hard_swish", (Arg((6, 7), F, "ints"),)),
        Case("hard_swish-special", "nn.hard_swish", (Arg((6, 7), F, "special"),)),
        Case("global_avg_pool-odd-plane", "nn.global_avg_pool2d", (Arg((1, 3, 5, 3)),)),
    ]


CASES = (_binary_cases() + _unary_cases() + _nn_cases() + _shape_cases() + _empty_cases() + _qnn_cases()
         + _broad_cases() + _blocked_cases())
CASE_BY_ID = {c.id: c for c in CASES}


# ---- building calls, kernels and libraries --------------------------------------------------------

def typed_call(case: Case):
    """The call of `case` with checked types filled by the op's own type inference."""
    opdef = get_op_def(case.op)
    params = []
    for i, arg in enumerate(case.args):
        v = Var(f"p{i}", TensorType(arg.shape, arg.dtype))
        v.checked_type = v.type_annotation
        params.append(v)
    if opdef.tuple_input:
        tup = Tuple(params)
        tup.checked_type = TupleType(tuple(p.checked_type for p in params))
        args = [tup]
    else:
        args = params
    call = make_call(case.op, *args, **case.attrs)
    call.checked_type = opdef.infer([a.checked_type for a in args], call.attrs)
    return call


def reference(case: Case, inputs: list[np.ndarray]) -> list[np.ndarray]:
    opdef = get_op_def(case.op)
    attrs = typed_call(case).attrs
    args = [list(inputs)] if opdef.tuple_input else inputs
    with np.errstate(all="ignore"):
        out = opdef.ref(args, attrs)
    return [np.asarray(o) for o in (out if isinstance(out, tuple) else (out,))]


def inputs_for(case: Case) -> list[np.ndarray]:
    rng = np.random.default_rng(zlib.crc32(case.id.encode()))
    return [draw(a, rng) for a in case.args]


def run(cmd, **kw):
    needs.programs(str(cmd[0]))          # a compiler config.toml lists: skip here, fail in CI
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)
    assert proc.returncode == 0, f"{' '.join(map(str, cmd))}\n{proc.stdout}\n{proc.stderr}"
    return proc


def build_library(cc: str, cases, defines=(), flags=("-O1",)) -> ctypes.CDLL:
    """All kernels of `cases` in ONE C file (as the build concatenates them) + the runtime, as a .so (built once
    per run for every worker: tests/shared_library.py)."""
    needs.programs(cc)
    source = shared_source("\n".join(emit_kernel(typed_call(c), c.symbol).code for c in cases), "kernels.c")
    # the GEMM's column panels run on the runtime's thread pool
    lib = compile_shared([cc, *WARNINGS, *flags, "-fPIC", "-shared", f"-I{RUNTIME / 'include'}", *defines,
                          str(source), str(RUNTIME / "src" / "runtime.c"), str(RUNTIME / "src" / "parallel.c"),
                          "-lm", "-lpthread"], "libkernels.so")
    return ctypes.CDLL(str(lib))


_LIBS: dict[tuple[str, str], ctypes.CDLL] = {}


@pytest.fixture(scope="module")
def libs():
    def get(cc: str, interface: str) -> ctypes.CDLL:
        key = (cc, interface)
        if key not in _LIBS:
            defines = ["-DBYOC_UNPACKED_API"] if interface == "unpacked" else []
            # Optimized code is tested in the unpacked libraries; -O0 keeps the packed ones (and the
            # sanitizer batch) quick to build.
            flags = ("-O1",) if interface == "unpacked" else ("-O0",)
            _LIBS[key] = build_library(cc, CASES, defines, flags)
        return _LIBS[key]
    return get


# ---- calling kernels ------------------------------------------------------------------------------

class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class ByocValue(ctypes.Union):
    _fields_ = [("v_int64", ctypes.c_int64), ("v_float64", ctypes.c_double), ("v_handle", ctypes.c_void_p),
                ("v_str", ctypes.c_char_p)]


def dltensor(array: np.ndarray, keep: list) -> DLTensor:
    shape = (ctypes.c_int64 * max(1, array.ndim))(*array.shape)
    keep.append(shape)
    code, bits = ctext.DL_DTYPES[str(array.dtype)]
    code = {"kDLInt": 0, "kDLUInt": 1, "kDLFloat": 2}[code]
    return DLTensor(array.ctypes.data, DLDevice(1, 0), array.ndim, DLDataType(code, bits, 1),
                    shape if array.ndim else None, None, 0)


def call_packed(fn, arrays: list[np.ndarray]) -> int:
    keep: list = []
    tensors = [dltensor(a, keep) for a in arrays]
    values = (ByocValue * max(1, len(arrays)))()
    for i, t in enumerate(tensors):
        values[i].v_handle = ctypes.cast(ctypes.pointer(t), ctypes.c_void_p)
    codes = (ctypes.c_int32 * max(1, len(arrays)))(*([7] * len(arrays)))
    fn.restype = ctypes.c_int32
    return fn(values, codes, ctypes.c_int32(len(arrays)), None)


def call_unpacked(fn, arrays: list[np.ndarray]) -> int:
    fn.restype = ctypes.c_int32
    fn.argtypes = [ctypes.c_void_p] * len(arrays)
    return fn(*[a.ctypes.data for a in arrays])


def last_error(lib) -> str:
    lib.byoc_get_last_error.restype = ctypes.c_char_p
    return lib.byoc_get_last_error().decode()


def empty_outputs(case: Case) -> list[np.ndarray]:
    ty = typed_call(case).checked_type
    types = list(ty.fields) if isinstance(ty, TupleType) else [ty]
    # Filled with a marker so that an element the kernel forgets to write shows up.
    return [np.full(t.shape, 77, dtype=t.dtype) for t in types]


_FLOAT_SUMS = ("nn.dense", "nn.matmul", "nn.batch_matmul", "nn.conv2d")   # float32 kernels summing in float


def float_sum_bound(case: Case, inputs: list[np.ndarray]) -> np.ndarray | None:
    """Per output element, the worst-case error of a float32 sum of K products in any order:
    (K + 1) * 2^-24 * sum |a * b| (the reference run on the inputs' absolute values), so sums of
    large terms that cancel are judged against what float arithmetic can do, not against rtol."""
    if case.op not in _FLOAT_SUMS or inputs[0].dtype != np.float32:
        return None
    attrs = typed_call(case).attrs
    if case.op == "nn.conv2d":
        k = int(np.prod(inputs[1].shape[1:]))
    elif case.op == "nn.dense":
        k = inputs[0].shape[-1]
    else:
        k = inputs[0].shape[-2] if attrs.transpose_a else inputs[0].shape[-1]
    magnitude = reference(case, [np.abs(a) for a in inputs])[0].astype(np.float64)
    return (k + 1) * 2.0 ** -24 * magnitude


def check_outputs(case: Case, got: list[np.ndarray], want: list[np.ndarray], inputs=None) -> None:
    assert len(got) == len(want)
    bound = float_sum_bound(case, inputs) if inputs is not None else None
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.shape == w.shape and g.dtype == w.dtype, f"output {i}: {g.shape} {g.dtype} vs {w.shape} {w.dtype}"
        if bound is not None:
            allowed = np.maximum(bound, 1e-6 + 1e-5 * np.abs(w.astype(np.float64)))
            within = np.abs(g.astype(np.float64) - w.astype(np.float64)) <= allowed    # False for NaN
            assert within.all(), f"{case.id} output {i}: {int((~within).sum())} elements beyond the bound"
        elif g.dtype == np.float32:
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, err_msg=f"{case.id} output {i}")
        elif g.dtype == np.float16 and case.op in ("exp", "log", "sqrt", "tanh", "sigmoid", "nn.leaky_relu"):
            # float32 math rounded to half vs float64 math rounded to half: at most one half ulp apart
            np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-7, err_msg=f"{case.id} output {i}")
        elif g.dtype == np.float64 and case.op in ("exp", "log", "sqrt", "tanh", "sigmoid"):
            np.testing.assert_allclose(g, w, rtol=1e-14, atol=0, err_msg=f"{case.id} output {i}")
        elif g.dtype == np.float64 and case.op in ("nn.batch_matmul", "nn.softmax", "power", "sum"):
            # sums in another order than numpy's (pairwise, BLAS): a few ulp apart
            np.testing.assert_allclose(g, w, rtol=1e-13, atol=1e-15, err_msg=f"{case.id} output {i}")
        else:
            np.testing.assert_array_equal(g, w, err_msg=f"{case.id} output {i}")


# ---- tests ----------------------------------------------------------------------------------------

def test_every_registered_op_has_a_case():
    """(That every op has a host rule is tests/test_op_attrs.py's.)"""
    assert {c.op for c in CASES} == set(all_ops())


def _library_params() -> list:
    """(compiler, interface) of the kernel libraries: the default run takes one pairing of each compiler with each
    interface (gcc's -O1 unpacked library, clang's -O0 packed one: every kernel through both compilers, both calling
    conventions and both levels), the other two wait for `every_toolchain`; the matrix builds models with every
    compiler and interface by default."""
    default = {("gcc", "unpacked"), ("clang", "packed")}
    return [pytest.param(cc, interface, id=f"{cc}-{interface}",
                         marks=[] if (cc, interface) in default or len(COMPILERS) == 1 else [pytest.mark.every_toolchain])
            for cc in COMPILERS for interface in ("unpacked", "packed")]


@pytest.mark.parametrize("cc, interface", _library_params())
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_kernel_matches_reference(case, cc, interface, libs):
    lib = libs(cc, interface)
    inputs = inputs_for(case)
    outputs = empty_outputs(case)
    fn = getattr(lib, case.symbol)
    rc = (call_unpacked if interface == "unpacked" else call_packed)(fn, inputs + outputs)
    assert rc == 0, last_error(lib)
    check_outputs(case, outputs, reference(case, inputs), inputs)


INT_MIN = np.iinfo(np.int32).min
INT_MAX = np.iinfo(np.int32).max

# Hand-picked int32 values where C and numpy could disagree.
EDGE_CASES = [
    ("divide-truncates", "divide", [np.array([7, -7, 7, -7, 0, INT_MIN], np.int32),
                                    np.array([2, 2, -2, -2, 5, -1], np.int32)], [3, -3, -3, 3, 0, INT_MIN]),
    ("add-wraps", "add", [np.array([INT_MAX, INT_MIN], np.int32), np.array([1, -1], np.int32)], [INT_MIN, INT_MAX]),
    ("negative-min", "negative", [np.array([INT_MIN, 5], np.int32)], [INT_MIN, -5]),
    ("abs-min", "abs", [np.array([INT_MIN, -5], np.int32)], [INT_MIN, 5]),
]


@pytest.mark.parametrize("cc", COMPILERS)
@pytest.mark.parametrize("name,op,inputs,expected", EDGE_CASES, ids=[e[0] for e in EDGE_CASES])
def test_int32_edge_values(name, op, inputs, expected, cc):
    case = Case(name, op, tuple(Arg(a.shape, I32) for a in inputs))
    lib = build_library(cc, [case], ["-DBYOC_UNPACKED_API"], flags=("-O2",))
    out = np.zeros(len(expected), np.int32)
    assert call_unpacked(getattr(lib, case.symbol), [*inputs, out]) == 0
    np.testing.assert_array_equal(out, np.array(expected, np.int32))
    np.testing.assert_array_equal(reference(case, inputs)[0], out)


def test_int32_division_by_zero_is_an_error_not_a_crash():
    case = Case("divide-by-zero", "divide", (Arg((2, 3), I32), Arg((3,), I32)))
    lib = build_library(COMPILERS[0], [case], ["-DBYOC_UNPACKED_API"])
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    out = np.zeros((2, 3), np.int32)
    rc = call_unpacked(getattr(lib, case.symbol), [a, np.array([1, 0, 2], np.int32), out])
    assert rc != 0
    assert "division by zero" in last_error(lib) and case.symbol in last_error(lib)


PACKED_MISMATCHES = [
    ("too-few-args", lambda a: a[:-1], "expected 3 arguments"),
    ("wrong-dtype", lambda a: [a[0].astype(np.int32), a[1], a[2]], "dtype"),
    ("wrong-shape", lambda a: [a[0].reshape(3, 2), a[1], a[2]], "shape"),
    ("wrong-output-shape", lambda a: [a[0], a[1], np.zeros((2, 4), np.float32)], "shape"),
]


@pytest.mark.parametrize("what,mutate,message", PACKED_MISMATCHES, ids=[m[0] for m in PACKED_MISMATCHES])
def test_packed_entry_rejects_mismatched_arguments(what, mutate, message, libs):
    lib = libs(COMPILERS[0], "packed")
    case = CASE_BY_ID["add-f32-same"]
    arrays = [np.ones((2, 3), np.float32), np.ones((2, 3), np.float32), np.zeros((2, 3), np.float32)]
    rc = call_packed(getattr(lib, case.symbol), mutate(arrays))
    assert rc != 0
    assert message in last_error(lib) and case.symbol in last_error(lib)


def test_packed_entry_rejects_non_tensor_type_code(libs):
    lib = libs(COMPILERS[0], "packed")
    fn = getattr(lib, CASE_BY_ID["exp-f32-3d"].symbol)
    values = (ByocValue * 2)()
    codes = (ctypes.c_int32 * 2)(0, 7)
    fn.restype = ctypes.c_int32
    assert fn(values, codes, 2, None) != 0
    assert "type code" in last_error(lib)


def test_kernels_share_one_file_without_clashes():
    """Two kernels of the same op in one translation unit: helpers and headers must not collide."""
    a, b = CASE_BY_ID["pad-reflect"], CASE_BY_ID["pad-edge"]
    code = emit_kernel(typed_call(a), "first").code + emit_kernel(typed_call(b), "second").code
    assert code.count("int32_t first_(") == 2 and code.count("int32_t second_(") == 2


@pytest.mark.parametrize("bad", ["1abc", "x; system(\"rm -rf /\")", "int", ""])
def test_emit_kernel_refuses_unsanitized_symbols(bad):
    with pytest.raises(HostKernelError, match="sanitize_identifier"):
        emit_kernel(typed_call(CASE_BY_ID["exp-f32-3d"]), bad)


def test_emit_kernel_needs_types():
    call = make_call("exp", Var("x", TensorType((2,))))
    with pytest.raises(HostKernelError, match="InferType"):
        emit_kernel(call, "k")


# ---- a C driver program runs every kernel on exactly-sized heap buffers: sanitizers, other CPUs ------

def _driver_source(cases) -> str:
    """main(in.bin, out.bin): per case, load the inputs, run the kernel, append the outputs.
    Files are little-endian; the driver swaps bytes on a big-endian CPU."""
    lines = ["#include <stdint.h>", "#include <stdio.h>", "#include <stdlib.h>", "",
             "static int big_endian(void) { const uint16_t one = 1; return *(const unsigned char*)&one == 0; }",
             "static void swap(void* p, size_t n, size_t width) {",
             "  unsigned char* b = (unsigned char*)p;",
             "  if (!big_endian() || width == 1) return;",
             "  for (size_t i = 0; i < n; i += width)",
             "    for (size_t j = 0; j < width / 2; ++j) {",
             "      unsigned char t = b[i + j]; b[i + j] = b[i + width - 1 - j]; b[i + width - 1 - j] = t;",
             "    }",
             "}",
             "static void* load(FILE* f, size_t n, size_t width) {",
             "  void* p = malloc(n ? n : 1);",
             "  if (p == NULL || (n && fread(p, 1, n, f) != n)) { fprintf(stderr, \"short input\\n\"); exit(2); }",
             "  swap(p, n, width);",
             "  return p;",
             "}",
             "static void save(FILE* f, void* p, size_t n, size_t width) {",
             "  swap(p, n, width);",
             "  if (n && fwrite(p, 1, n, f) != n) { fprintf(stderr, \"short write\\n\"); exit(2); }",
             "}", ""]
    kernels = [emit_kernel(typed_call(c), c.symbol) for c in cases]
    for c, ks in zip(cases, kernels):
        lines.append(ctext.core_signature(c.symbol, ks.input_types, ks.output_types) + ";")
    lines += ["", "int main(int argc, char** argv) {",
              "  FILE* in; FILE* out;",
              "  if (argc != 3) return 2;",
              "  in = fopen(argv[1], \"rb\"); out = fopen(argv[2], \"wb\");",
              "  if (in == NULL || out == NULL) return 2;"]
    for c, ks in zip(cases, kernels):
        types = ks.input_types + ks.output_types
        n_in = len(ks.input_types)
        lines.append("  {")
        for i, t in enumerate(types):
            width = np.dtype(t.dtype).itemsize
            if i < n_in:
                lines.append(f"    void* b{i} = load(in, {t.nbytes}u, {width}u);")
            else:
                lines.append(f"    void* b{i} = malloc({t.nbytes or 1}u);")
        args = ", ".join(f"b{i}" for i in range(len(types)))
        lines.append(f"    if ({c.symbol}({args}) != 0) {{ fprintf(stderr, \"{c.symbol} failed\\n\"); return 1; }}")
        for i in range(n_in, len(types)):
            lines.append(f"    save(out, b{i}, {types[i].nbytes}u, {np.dtype(types[i].dtype).itemsize}u);")
        lines += [f"    free(b{i});" for i in range(len(types))]
        lines.append("  }")
    lines += ["  fclose(in);", "  return fclose(out) == 0 ? 0 : 1;", "}"]
    return "\n".join(lines) + "\n"


def _toolchains(pick):
    from byoc_compiler.config import load_config
    from byoc_compiler.toolchain import can_load_here

    tcs = load_config(ROOT / "config.toml").toolchains.values()
    return [pytest.param(tc, id=tc.name, marks=[pytest.mark.every_toolchain] if tc.name in BEYOND_DEFAULT else [])
            for tc in tcs if pick(tc, can_load_here(tc))]


# clang's sanitizers, 32-bit armhf and big-endian s390x run the batch with `-m every_toolchain`; the default
# run has gcc's sanitizers (the matrix's clang-asan-ubsan, armhf and s390x lanes run host code by default:
# random37-host-s390x_gcc among them).
BEYOND_DEFAULT = ("clang-asan-ubsan", "armhf-gcc", "s390x-gcc")


@pytest.mark.parametrize("tc", _toolchains(lambda tc, here: tc.sanitizer)
                         + _toolchains(lambda tc, here: tc.arch in ("s390x", "armhf")))
def test_driver_batch_on_toolchain(tc, tmp_path):
    """Every case in one program: under ASan+UBSan (host toolchains with sanitizers), and on a
    big-endian (s390x) and a 32-bit (armhf) CPU under qemu-user. At -O0: every access stays instrumented,
    and the one large file builds in a third of -O1's time (-O1 code runs in the unpacked libraries)."""
    needs.toolchain(tc)
    source = tmp_path / "kernels.c"
    source.write_text("\n".join(emit_kernel(typed_call(c), c.symbol).code for c in CASES))
    driver = tmp_path / "driver.c"
    driver.write_text(_driver_source(CASES))
    exe = tmp_path / "driver"
    run([tc.cc, *tc.cflags, *WARNINGS, "-O0", "-DBYOC_UNPACKED_API", f"-I{RUNTIME / 'include'}",
         source, driver, RUNTIME / "src" / "runtime.c", RUNTIME / "src" / "parallel.c", "-o", exe, *tc.ldflags])
    all_inputs = [inputs_for(c) for c in CASES]
    (tmp_path / "in.bin").write_bytes(b"".join(a.astype(a.dtype.newbyteorder("<")).tobytes()
                                               for ins in all_inputs for a in ins))
    run([*tc.run, exe, tmp_path / "in.bin", tmp_path / "out.bin"], timeout=600,
        env={**os.environ, "ASAN_OPTIONS": "detect_leaks=1", "UBSAN_OPTIONS": "print_stacktrace=1"})
    data = (tmp_path / "out.bin").read_bytes()
    offset = 0
    for case, inputs in zip(CASES, all_inputs):
        outs = []
        for template in empty_outputs(case):
            n = template.nbytes
            little = template.dtype.newbyteorder("<")
            outs.append(np.frombuffer(data[offset:offset + n], little).astype(template.dtype).reshape(template.shape))
            offset += n
        check_outputs(case, outs, reference(case, inputs), inputs)
    assert offset == len(data)


def test_emit_kernel_refuses_calls_that_are_not_ops():
    from byoc_compiler.ir import Call, GlobalVar

    call = Call(GlobalVar("region_0"), [Var("x", TensorType((2,)))])
    with pytest.raises(HostKernelError, match="registered ops only"):
        emit_kernel(call, "k")


def test_kernel_source_fields():
    case = CASE_BY_ID["batch_norm-axis1"]
    ks = emit_kernel(typed_call(case), "bn")
    assert ks.symbol == "bn"
    assert [t.shape for t in ks.input_types] == [a.shape for a in case.args]
    assert [t.shape for t in ks.output_types] == [(2, 3, 4, 5), (3,), (3,)]
    assert "int32_t bn_(const float* in0" in ks.code and "#ifdef BYOC_UNPACKED_API" in ks.code


# clang's -Wunused-function reports an unused static inline helper, gcc's does not: the default run checks with
# clang, gcc waits for `every_toolchain`.
@pytest.mark.parametrize("cc", [pytest.param(cc, marks=[] if "clang" in str(cc) else [pytest.mark.every_toolchain])
                                for cc in COMPILERS])
def test_each_kernel_alone_uses_every_helper_it_defines(cc, tmp_path):
    """A kernel is one translation unit in a region's host.c next to unrelated kernels, but it may also be
    alone: every static helper it defines must be called (clang: -Wunused-function is an error)."""
    with_helpers = [c for c in CASES if "static inline" in emit_kernel(typed_call(c), c.symbol).code]
    assert with_helpers
    _syntax_check_each_alone(cc, with_helpers, tmp_path)


def _syntax_check_each_alone(cc: str, cases, tmp_path) -> None:
    """Each case's kernel in a file of its own, all checked by one compiler run (each file given on the command
    line is a translation unit of its own; one process instead of one per kernel)."""
    sources = []
    for case in cases:
        sources.append(tmp_path / f"{case.symbol}.c")
        sources[-1].write_text(emit_kernel(typed_call(case), case.symbol).code)
    run([cc, *WARNINGS, f"-I{RUNTIME / 'include'}", "-DBYOC_UNPACKED_API", "-fsyntax-only", *sources])



def test_each_kernel_with_an_error_path_compiles_alone(tmp_path):
    """A kernel that can fail (integer division by zero, take from an empty tensor) records its message with
    the runtime's byoc_set_last_error: alone in its file it must include the header that declares it (the
    batch above shares one file, where an earlier kernel's include would hide a missing one)."""
    with_errors = [c for c in CASES if "byoc_set_last_error" in emit_kernel(typed_call(c), c.symbol).code.split(
        "/* host kernel ", 1)[1].split("#ifdef BYOC_UNPACKED_API", 1)[0]]
    assert {c.op for c in with_errors} >= {"divide"}
    _syntax_check_each_alone(COMPILERS[0], with_errors, tmp_path)

# Big enough that the kernels split their work into several pool tasks.
PARALLEL_CASES = [
    Case("parallel-conv2d-3x3", "nn.conv2d", (Arg((1, 16, 32, 32)), Arg((32, 16, 3, 3))), {"padding": 1}),
    Case("parallel-dense", "nn.dense", (Arg((64, 300)), Arg((200, 300)))),
    # planes in tasks (cwriter.plane_tasks)
    Case("parallel-depthwise", "nn.conv2d", (Arg((1, 32, 56, 56)), Arg((32, 1, 3, 3))), {"groups": 32, "padding": 1}),
    Case("parallel-max_pool", "nn.max_pool2d", (Arg((1, 64, 64, 64)),), {"pool_size": 3, "padding": 1}),
]


@pytest.fixture(scope="module")
def parallel_lib():
    return build_library(COMPILERS[0], PARALLEL_CASES, ["-DBYOC_UNPACKED_API"])


@pytest.mark.parametrize("case", PARALLEL_CASES, ids=lambda c: c.id)
def test_pool_tasks_give_the_same_bits_for_every_thread_count(case, parallel_lib):
    lib = parallel_lib
    inputs = inputs_for(case)
    results = []
    for threads in (1, 2, 3, 8):
        assert lib.byoc_set_num_threads(threads) == 0
        outputs = empty_outputs(case)
        assert call_unpacked(getattr(lib, case.symbol), inputs + outputs) == 0, last_error(lib)
        results.append(outputs[0])
    check_outputs(case, results[:1], reference(case, inputs), inputs)
    for threads, got in zip((2, 3, 8), results[1:]):
        np.testing.assert_array_equal(got, results[0], err_msg=f"{threads} threads")
