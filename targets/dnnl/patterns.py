"""Composite patterns that oneDNN runs as one primitive with post-ops.

| pattern | primitive | post-ops |
| --- | --- | --- |
| conv2d_bias_add_relu | convolution with bias | sum (the residual input, accumulated into dst), eltwise relu |
| conv2d_bias_add | convolution with bias | sum |
| conv2d_bias_relu | convolution with bias | eltwise relu |
| conv2d_bias_clip | convolution with bias | eltwise clip (relu6 of MobileNets) |
| conv2d_bias | convolution with bias | - |
| dense_bias_relu | inner product with bias | eltwise relu |
| dense_bias | inner product with bias | - |
| channel_shuffle | shuffle (on the value in whatever layout its producer chose) | - |

Longest first: MergeComposite tries them in this order. Each check asks the op table's predicate
of the conv2d or dense inside, that the bias is along the output channels (axis 1, or 3 for an NHWC
conv2d), and for `add` that the residual has the conv's own shape (sum post-op adds elementwise,
no broadcast). `channel_shuffle` is ShuffleNet's reshape (n, c, ...) -> (n, g, c / g, ...), transpose of
axes 1 and 2, reshape back: taken whole, the model stays one region (its transpose alone is no oneDNN
primitive, and every region boundary costs a reorder out of and back into oneDNN's blocked layouts).
"""
from __future__ import annotations

from byoc_compiler.vendor import Call, Op, TensorType, is_constant, is_op, wildcard

from .ops import MAX_NDIM


def _conv_bias():
    return is_op("nn.bias_add")(is_op("nn.conv2d")(wildcard(), is_constant()), is_constant())


def _dense_bias():
    return is_op("nn.bias_add")(is_op("nn.dense")(wildcard(), is_constant()), is_constant())


def _residual():
    conv = _conv_bias()
    return is_op("add")(conv, wildcard()) | is_op("add")(wildcard(), conv)


def _find(call, name: str):
    """The call to op `name` inside the composite rooted at `call`: walks relu -> add (its bias_add side)
    -> bias_add -> conv2d/dense, and never past the conv2d or dense into the model before it."""
    node = call
    while isinstance(node, Call) and isinstance(node.op, Op):
        if node.op.name == name:
            return node
        if node.op.name in ("nn.conv2d", "nn.dense"):
            return None
        if node.op.name == "add":
            node = next((a for a in node.args if isinstance(a, Call) and isinstance(a.op, Op)
                         and a.op.name == "nn.bias_add"), None)
        else:
            node = node.args[0]
    return None


def _check(target, anchor: str):
    def check(root):
        inner = _find(root, anchor)
        bias = _find(root, "nn.bias_add")
        reason = target.check(inner)
        if reason:
            return reason
        channel = inner.attrs.data_layout.index("C") if anchor == "nn.conv2d" else 1
        if bias.attrs.axis not in (channel, channel - len(bias.checked_type.shape)):
            return f"bias along axis {bias.attrs.axis}; oneDNN's bias is per output channel (axis {channel})"
        add = _find(root, "add")
        if add is not None:
            if not (isinstance(add.checked_type, TensorType) and add.checked_type == bias.checked_type
                    and all(a.checked_type == bias.checked_type for a in add.args)):
                return "a residual add that broadcasts; oneDNN's sum post-op adds a tensor of dst's shape"
        return None
    return check


def _shape_of(expr) -> tuple[int, ...]:
    ty = expr.checked_type
    return tuple(int(d) for d in ty.shape) if isinstance(ty, TensorType) else ()


def shuffle_groups(root) -> tuple[int | None, str | None]:
    """(groups, None) if `root` = reshape(transpose(reshape(x))) is a channel shuffle of x along axis 1, else
    (None, why not)."""
    transpose = root.args[0]
    split = transpose.args[0]
    x, grouped, out = _shape_of(split.args[0]), _shape_of(split), _shape_of(root)
    if not 2 <= len(x) <= MAX_NDIM - 1 or out != x:
        return None, f"reshape-transpose-reshape of shape {x} to {out}: not a channel shuffle of a 2-D to 4-D value"
    if len(grouped) != len(x) + 1 or grouped[0] != x[0] or grouped[1] * grouped[2] != x[1] or grouped[3:] != x[2:]:
        return None, f"the split {grouped} does not cut axis 1 of {x} into groups"
    axes = transpose.attrs.axes
    if axes is None or tuple(int(a) % len(grouped) for a in axes) != (0, 2, 1, *range(3, len(grouped))):
        return None, f"transpose axes {axes}: a channel shuffle swaps axes 1 and 2 only"
    return grouped[1], None


def _shuffle_check(target):
    def check(root):
        return target.check(root) or shuffle_groups(root)[1]
    return check


def declare_patterns(target) -> None:
    conv, dense = _check(target, "nn.conv2d"), _check(target, "nn.dense")
    target.pattern("conv2d_bias_add_relu", is_op("nn.relu")(_residual()), check=conv)
    target.pattern("conv2d_bias_add", _residual(), check=conv)
    target.pattern("conv2d_bias_relu", is_op("nn.relu")(_conv_bias()), check=conv)
    target.pattern("conv2d_bias_clip", is_op("clip")(_conv_bias()), check=conv)
    target.pattern("conv2d_bias", _conv_bias(), check=conv)
    target.pattern("dense_bias_relu", is_op("nn.relu")(_dense_bias()), check=dense)
    target.pattern("dense_bias", _dense_bias(), check=dense)
    target.pattern("channel_shuffle", is_op("reshape")(is_op("transpose")(is_op("reshape")(wildcard()))),
                   check=_shuffle_check(target))
