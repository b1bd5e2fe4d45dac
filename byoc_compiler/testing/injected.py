"""Named injected bugs: what a kernel with a realistic defect computes, as overrides of one call of the
float32 reference (`run_reference(mod, inputs, overrides={call: fn})`).

They measure the check from the failing side: tests/test_tolerance_bounds.py asserts each fails, and
bench/tolerance_curve.py reports the allowance factor each needs to pass (the check catches a bug at
factor F when the bug needs more than F). BUGS names (op, which call of that op, override): each must
fail the check; SUBTLE ones are only measured.
`conv_bn_net` is the 8-layer conv + BatchNorm net whose BatchNorm epsilon a kernel can drop.
"""
from __future__ import annotations

import numpy as np

from .. import op
from ..ir import Call, Function, TensorType, Var, post_order
from ..ir.expr import const
from ..ir.module import IRModule


def bias_off(relative: float):
    """bias_add with the bias `relative` too large."""
    def fn(args, attrs, ref):
        return ref([args[0], (args[1] * np.float32(1 + relative)).astype(np.float32)], attrs)
    return fn


def channels_swapped(args, attrs, ref):
    out = np.array(ref(args, attrs))
    out[:, [0, 1]] = out[:, [1, 0]]
    return out


def dense_float16(args, attrs, ref):
    """x @ w.T accumulated in a float16 register (products rounded to float16, one by one)."""
    x, w = args[0], args[1]
    acc = np.zeros((x.shape[0], w.shape[0]), np.float16)
    for k in range(x.shape[1]):
        acc = (acc + (x[:, k:k + 1] * w[None, :, k]).astype(np.float16)).astype(np.float16)
    return acc.astype(np.float32)


def conv_float16(args, attrs, ref):
    """conv2d with every output's sum over (channel, ky, kx) accumulated in float16: the float32 result
    of each kernel tap, summed in float16."""
    x, w = args[0], args[1]
    acc = np.zeros(ref(args, attrs).shape, np.float16)
    for c in range(w.shape[1]):
        for ky in range(w.shape[2]):
            for kx in range(w.shape[3]):
                one = np.zeros_like(w)
                one[:, c, ky, kx] = w[:, c, ky, kx]
                acc = (acc + ref([x, one], attrs).astype(np.float16)).astype(np.float16)
    return acc.astype(np.float32)


def batch_norm_without_epsilon(args, attrs, ref):
    """(x - mean) / sqrt(var) * gamma + beta: the epsilon under the square root dropped."""
    x, gamma, beta, mean, var = (np.asarray(a, np.float32) for a in args)
    shape = [1] * x.ndim
    shape[attrs.axis % x.ndim] = -1
    def along(v):
        return v.reshape(shape)
    out = (x - along(mean)) / np.sqrt(along(var)) * along(gamma) + along(beta)
    return out.astype(np.float32), args[3], args[4]


BUGS = {
    "bias_1e-3_off_in_fc": ("nn.bias_add", -1, bias_off(1e-3)),
    "channels_swapped_early_conv": ("nn.conv2d", 2, channels_swapped),
    "channels_swapped_last_conv": ("nn.conv2d", -1, channels_swapped),
    "fc_accumulates_in_float16": ("nn.dense", -1, dense_float16),
    "conv_accumulates_in_float16": ("nn.conv2d", 1, conv_float16),
}
# Measured by bench/tolerance_curve.py, not required to fail: the classifier's bias 1e-5 off (relative)
# moves the logits by about 1e-5 of the bias, a few float32 roundings of the output (needs 5 to 11).
SUBTLE = {"bias_1e-5_off_in_fc": ("nn.bias_add", -1, bias_off(1e-5))}


def calls(mod: IRModule, op_name: str) -> list[Call]:
    return [n for n in post_order(mod["main"].body) if isinstance(n, Call) and getattr(n.op, "name", "") == op_name]


def conv_bn_net(layers: int = 8, channels: int = 32, size: int = 16, seed: int = 0) -> IRModule:
    """`layers` x (3x3 conv, BatchNorm, ReLU); BatchNorm's running variances drawn from [0.5, 2], its
    means and beta from [-0.5, 0.5], gamma from [0.5, 1.5]; conv weights scaled to keep the gain ~1."""
    rng = np.random.default_rng(seed)
    x = Var("x", TensorType((1, 3, size, size), "float32"))
    h, c = x, 3
    def vec(lo, hi):
        return const(rng.uniform(lo, hi, channels).astype(np.float32))
    for _ in range(layers):
        w = (rng.standard_normal((channels, c, 3, 3)) / np.sqrt(c * 9)).astype(np.float32)
        h = op.nn.conv2d(h, const(w), padding=(1, 1))
        gamma, beta, mean = vec(0.5, 1.5), vec(-0.5, 0.5), vec(-0.5, 0.5)
        h = op.nn.relu(op.nn.batch_norm(h, gamma, beta, mean, vec(0.5, 2.0))[0])
        c = channels
    return IRModule({"main": Function([x], h)})


def without_epsilon(mod: IRModule) -> dict:
    """Overrides dropping the epsilon of every BatchNorm of `mod`."""
    return {call: batch_norm_without_epsilon for call in calls(mod, "nn.batch_norm")}
