"""A model that reaches every parallel path of ccompiler's kernels (tests/test_parallel_kernels.py,
tests/test_threads.py): the gemm split into column chunks and row groups (3x3 conv on a 24x24 plane, 112
channels), the pixel-major tiles reading the bordered input in place (3x3 stride 1 on 7x7), reading a 1x1
input as it lies, and packing per K block (3x3 stride 2 onto 7x7), the one-channel-per-group kernels on
per-thread bordered planes (depthwise 3x3), a prepacked dense, and a batch-1 dense (the unpacked dot
kernel over ranges of 512 columns); on the depthwise output: broadcasting binary ops cut into element ranges
that start inside rows (a channel scale, and an add where both sides broadcast), reductions over the innermost
axes (mean, max: ranges of outputs) and over an outer one (sum: ranges of output tiles), and a linear 2x resize
(ranges of output rows)."""
import numpy as np

from byoc_compiler import op, partition_for
from byoc_compiler.ir import Function, IRModule, Tuple, Var, const
from byoc_compiler.ir.types import TensorType


def _w(shape, seed, scale=0.3):
    return const((np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32))


def every_parallel_path():
    """(partitioned for ccompiler, the unpartitioned reference module)."""
    x1, x2 = Var("x1", TensorType((1, 8, 24, 24), "float32")), Var("x2", TensorType((1, 32, 7, 7), "float32"))
    x3, x5 = Var("x3", TensorType((1, 16, 14, 14), "float32")), Var("x5", TensorType((3, 300), "float32"))
    x6 = Var("x6", TensorType((1, 256), "float32"))
    gemm = op.nn.relu(op.nn.bias_add(op.nn.conv2d(x1, _w((112, 8, 3, 3), 1), padding=(1, 1)), _w((112,), 2)))
    depthwise = op.nn.conv2d(gemm, _w((112, 1, 3, 3), 3), padding=(1, 1), groups=112)
    in_place = op.nn.bias_add(op.nn.conv2d(x2, _w((100, 32, 3, 3), 4), padding=(1, 1)), _w((100,), 5))
    pointwise = op.nn.conv2d(x2, _w((72, 32, 1, 1), 6))
    packed = op.nn.conv2d(x3, _w((64, 16, 3, 3), 7), strides=(2, 2), padding=(1, 1))
    dense = op.nn.dense(x5, _w((200, 300), 8))
    gemv = op.nn.dense(x6, _w((1200, 256), 9))
    scaled = op.multiply(depthwise, op.mean(depthwise, axis=(2, 3), keepdims=True))
    both_broadcast = op.add(op.max(depthwise, axis=(3,), keepdims=True), op.sum(depthwise, axis=(1,), keepdims=True))
    resized = op.resize(depthwise, size=(1, 112, 48, 48), scales=(1.0, 1.0, 2.0, 2.0), method="linear")
    ref = IRModule.from_expr(Function([x1, x2, x3, x5, x6],
                                      Tuple([depthwise, in_place, pointwise, packed, dense, gemv, scaled,
                                             both_broadcast, resized])))
    return partition_for(["ccompiler"], ref), ref
