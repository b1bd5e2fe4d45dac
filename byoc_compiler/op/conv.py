"""nn.conv2d (NCHW data, OIHW weight; strides, padding, dilation, groups incl. depthwise)."""
from __future__ import annotations

import numpy as np

from .attr_forms import all_non_negative, all_positive, padding4, pair
from .registry import Attr, OpTypeError, float_result, register
from .typecheck import FLOAT, shape_text, tensor_arg, tensor_type


def window_count(size: int, pad_total: int, kernel: int, stride: int, dilation: int) -> int:
    """How many windows of a (dilated) kernel fit in the padded extent (floor mode)."""
    return (size + pad_total - dilation * (kernel - 1) - 1) // stride + 1


def _infer_conv2d(types, attrs):
    name = "nn.conv2d"
    data = tensor_arg(name, "data", types[0], FLOAT, ndim=4)
    weight = tensor_arg(name, "weight", types[1], FLOAT, ndim=4)
    n, c, h, w = data.shape
    o, i, kh, kw = weight.shape
    groups = attrs.groups
    if c % groups:
        raise OpTypeError(name, "data", f"input channels divisible by groups={groups}", f"{c} channels")
    if i * groups != c:
        raise OpTypeError(name, "weight", f"{c // groups} input channels per group (shape[1] of OIHW, "
                          f"data has {c} channels, groups={groups})", f"shape {shape_text(weight.shape)}")
    if o % groups:
        raise OpTypeError(name, "weight", f"output channels divisible by groups={groups}",
                          f"shape {shape_text(weight.shape)}")
    if attrs.channels is not None and attrs.channels != o:
        raise OpTypeError(name, "weight", f"{attrs.channels} output channels (attribute channels)",
                          f"shape {shape_text(weight.shape)}")
    if attrs.kernel_size is not None and tuple(attrs.kernel_size) != (kh, kw):
        raise OpTypeError(name, "weight", f"kernel {shape_text(attrs.kernel_size)} (attribute kernel_size)",
                          f"shape {shape_text(weight.shape)}")
    pt, pl, pb, pr = attrs.padding
    oh = window_count(h, pt + pb, kh, attrs.strides[0], attrs.dilation[0])
    ow = window_count(w, pl + pr, kw, attrs.strides[1], attrs.dilation[1])
    if oh < 1 or ow < 1:
        raise OpTypeError(name, "data", f"spatial size at least the dilated kernel {kh}x{kw} after padding",
                          f"shape {shape_text(data.shape)}")
    return tensor_type((n, o, oh, ow), data.dtype)


def strided_window(padded: np.ndarray, start_h: int, start_w: int, out_h: int, out_w: int,
                   stride: tuple[int, int]) -> np.ndarray:
    """padded[..., start_h + stride*y, start_w + stride*x] for every output position (y, x)."""
    sh, sw = stride
    return padded[..., start_h:start_h + sh * (out_h - 1) + 1:sh, start_w:start_w + sw * (out_w - 1) + 1:sw]


def _conv2d_ref(args, attrs):
    return float_result(conv2d_float64(args[0].astype(np.float64), args[1].astype(np.float64), attrs), args[0])


def conv2d_float64(x: np.ndarray, w: np.ndarray, attrs) -> np.ndarray:
    """The convolution in float64 (zero padding); exact for integer data whose sums stay below 2**53."""
    o, i, kh, kw = w.shape
    pt, pl, pb, pr = attrs.padding
    dh, dw = attrs.dilation
    padded = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    out_h = window_count(x.shape[2], pt + pb, kh, attrs.strides[0], dh)
    out_w = window_count(x.shape[3], pl + pr, kw, attrs.strides[1], dw)
    groups, n = attrs.groups, x.shape[0]
    # Channels split into groups: [N, G, I, H, W] against [G, O/G, I, kh, kw], all groups in one einsum.
    grouped = padded.reshape(n, groups, i, *padded.shape[2:])
    w_g = w.reshape(groups, o // groups, i, kh, kw)
    out = np.zeros((n, groups, o // groups, out_h, out_w))
    for y in range(kh):
        for z in range(kw):
            patch = strided_window(grouped, y * dh, z * dw, out_h, out_w, attrs.strides)
            out += np.einsum("ngihw,goi->ngohw", patch, w_g[:, :, :, y, z], optimize=True)
    return out.reshape(n, o, out_h, out_w)


CONV2D_ATTRS = (
    Attr("strides", "ints", (1, 1), convert=pair, check=all_positive),
    Attr("padding", "ints", (0, 0, 0, 0), convert=padding4, check=all_non_negative),
    Attr("dilation", "ints", (1, 1), convert=pair, check=all_positive),
    Attr("groups", "int", 1, check=all_positive),
    Attr("channels", "int_or_none", None, check=all_positive),
    Attr("kernel_size", "ints_or_none", None, convert=pair, check=all_positive),
    Attr("data_layout", "str", "NCHW", choices=("NCHW",)),
    Attr("kernel_layout", "str", "OIHW", choices=("OIHW",)),
    Attr("out_dtype", "str", "", choices=("", "float32")),
)

register("nn.conv2d", ("data", "weight"), CONV2D_ATTRS, infer=_infer_conv2d, ref=_conv2d_ref, family="nn",
         doc="2-D convolution, NCHW data and OIHW weight, padding (top, left, bottom, right)")
