"""What oneDNN's primitives take, op by op: a predicate per op that says exactly why a call is refused.

Every value is float32 with 1 to MAX_NDIM dims and no zero-sized dimension (oneDNN's plain tags
`a` .. `abcde`). The rest is per primitive:

| op | oneDNN primitive | conditions |
| --- | --- | --- |
| nn.conv2d | convolution (direct/JIT) | NCHW data with OIHW weight, or NHWC with HWIO (groups 1); any groups, dilation, padding |
| nn.dense | inner product | 2-D data [M, K], weight [N, K] |
| nn.matmul | matmul | 2-D operands, either transposed |
| relu, clip, sigmoid, tanh, leaky_relu, exp, sqrt | eltwise | - |
| add, multiply | binary | one operand has the result's shape, the other broadcasts to it (dims 1 or equal) |
| nn.batch_norm | batch normalization (inference) | channel axis 1, rank 2 to 5 |
| nn.max_pool2d, nn.avg_pool2d | pooling | NCHW; avg with count_include_pad only without a ceil-mode overhang |
| nn.global_avg_pool2d | pooling (window = the whole plane) | NCHW |
| concatenate | concat | 1 to 64 inputs of the same rank |
| nn.softmax | softmax | any axis |
| nn.lrn | LRN across channels | axis 1, odd size, rank 4 |
| reshape, nn.batch_flatten | a view of a plain buffer | - |
"""
from __future__ import annotations

from byoc_compiler.vendor import TensorType, all_of, flatten_type, float32_only, pool_out_size

MAX_NDIM = 5           # plain tags a .. abcde; DNNL_MAX_NDIMS is 12 but no primitive here needs more
MAX_CONCAT_INPUTS = 64  # DNNL_RUNTIME_MAX_CONCAT_INPUTS of the runtime (a fixed array, no allocation)


def _types(call):
    for expr in (*call.args, call):
        if expr.checked_type is not None:
            yield from flatten_type(expr.checked_type)


def plain_tensors(call) -> str | None:
    """float32 values of 1..MAX_NDIM dims, none of them empty (oneDNN has no 0-D memory)."""
    for ty in _types(call):
        if ty.ndim < 1 or ty.ndim > MAX_NDIM:
            return f"rank {ty.ndim}; oneDNN memory here has 1 to {MAX_NDIM} dims"
        if any(d == 0 for d in ty.shape):
            return f"an empty dimension in shape {tuple(ty.shape)}"
    return None


def _shape(expr) -> tuple[int, ...]:
    ty = expr.checked_type
    return tuple(ty.shape) if isinstance(ty, TensorType) else ()


def conv2d(call) -> str | None:
    a = call.attrs
    if (a.data_layout, a.kernel_layout) == ("NCHW", "OIHW"):
        return None
    if (a.data_layout, a.kernel_layout) == ("NHWC", "HWIO") and a.groups == 1:
        return None
    return (f"layouts {a.data_layout}/{a.kernel_layout} with groups={a.groups}; oneDNN takes NCHW/OIHW, or "
            "NHWC/HWIO without groups")


def dense(call) -> str | None:
    if len(_shape(call.args[0])) != 2:
        return f"data of rank {len(_shape(call.args[0]))}; oneDNN's inner product here takes 2-D data"
    return None


def matmul(call) -> str | None:
    if len(_shape(call.args[0])) != 2 or len(_shape(call.args[1])) != 2:
        return "operands not 2-D"
    return None


def binary(call) -> str | None:
    """oneDNN's binary: src0 has the destination's shape, src1 broadcasts to it (each dim 1 or equal).
    add and multiply commute, so either operand may be the full one."""
    out = _shape(call)
    for full, other in ((0, 1), (1, 0)):
        a, b = _shape(call.args[full]), _shape(call.args[other])
        if len(a) == len(out) and a == out and len(b) <= len(out):
            b = (1,) * (len(out) - len(b)) + b
            if all(d in (1, o) for d, o in zip(b, out)):
                return None
    return (f"shapes {_shape(call.args[0])} and {_shape(call.args[1])}: oneDNN broadcasts only one operand "
            "to the other's shape")


def batch_norm(call) -> str | None:
    ndim = len(_shape(call.args[0]))
    if ndim < 2:
        return "data of rank < 2"
    if call.attrs.axis not in (1, 1 - ndim):
        return f"axis {call.attrs.axis}; oneDNN normalizes over axis 1"
    return None


def _nchw(call) -> str | None:
    return None if call.attrs.layout == "NCHW" else f"layout {call.attrs.layout}; oneDNN pooling here is NCHW"


def pool_padding_right(size: int, before: int, after: int, kernel: int, stride: int, dilation: int,
                       ceil_mode: bool) -> int:
    """The trailing padding oneDNN needs to give the op's output size (more than declared in ceil mode)."""
    out = pool_out_size(size, before, after, kernel, stride, dilation, ceil_mode)
    return (out - 1) * stride + dilation * (kernel - 1) + 1 - size - before


def avg_pool(call) -> str | None:
    a = call.attrs
    if not a.count_include_pad or not a.ceil_mode:
        return _nchw(call)
    h, w = _shape(call.args[0])[2:]
    pt, pl, pb, pr = a.padding
    for size, before, after, k, s, d in ((h, pt, pb, a.pool_size[0], a.strides[0], a.dilation[0]),
                                         (w, pl, pr, a.pool_size[1], a.strides[1], a.dilation[1])):
        if pool_padding_right(size, before, after, k, s, d, True) > after:
            return ("count_include_pad with a ceil-mode window past the padding; oneDNN would count the "
                    "overhang as padding")
    return _nchw(call)


def concatenate(call) -> str | None:
    fields = flatten_type(call.args[0].checked_type) if call.args[0].checked_type is not None else []
    if not 1 <= len(fields) <= MAX_CONCAT_INPUTS:
        return f"{len(fields)} inputs; the runtime concatenates 1 to {MAX_CONCAT_INPUTS}"
    return None


def lrn(call) -> str | None:
    a = call.attrs
    if len(_shape(call.args[0])) != 4:
        return "data not 4-D"
    if a.axis not in (1, -3):
        return f"axis {a.axis}; oneDNN's LRN runs across channels (axis 1)"
    if a.size % 2 == 0:
        return f"even size {a.size}; oneDNN's window is symmetric"
    return None


BASE = all_of(float32_only, plain_tensors)
ELTWISE = ("nn.relu", "clip", "sigmoid", "tanh", "nn.leaky_relu", "exp", "sqrt")

# (op names, predicate): the op table __init__.py declares.
TABLE = (
    (("nn.conv2d",), all_of(BASE, conv2d)),
    (("nn.dense",), all_of(BASE, dense)),
    (("nn.matmul",), all_of(BASE, matmul)),
    (ELTWISE, BASE),
    (("add", "multiply"), all_of(BASE, binary)),
    (("nn.batch_norm",), all_of(BASE, batch_norm)),
    (("nn.max_pool2d",), all_of(BASE, _nchw)),
    (("nn.avg_pool2d",), all_of(BASE, avg_pool)),
    (("nn.global_avg_pool2d",), all_of(BASE, _nchw)),
    (("concatenate",), all_of(BASE, concatenate)),
    (("nn.softmax",), BASE),
    (("nn.lrn",), all_of(BASE, lrn)),
    (("reshape", "nn.batch_flatten"), BASE),
)
