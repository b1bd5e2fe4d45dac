"""The dnnl target: what its op table takes and refuses, the JSON it writes, the oneDNN runtime module against
the numpy reference, malformed JSON at init, mixed targets, and the CPUs it builds for.

Skipped as a whole only when oneDNN is not installed (scripts/setup.sh installs libdnnl-dev)."""
from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import needs

import byoc_compiler as byoc
from byoc_compiler import op, testing
from byoc_compiler.target import SystemLibrary, Target, get_target, register_target, unregister_target
from byoc_compiler.check import deterministic_inputs
from byoc_compiler.errors import ByocError
from byoc_compiler.ir import IRModule, TensorType, Var
from byoc_compiler.ir.expr import Constant, Tuple, TupleGetItem

DNNL = get_target("dnnl")


@pytest.fixture(autouse=True)
def _onednn_installed():
    """oneDNN is a system library (scripts/setup.sh installs libdnnl-dev): missing, it skips here and fails in CI."""
    if DNNL.missing() is not None:
        needs.missing(DNNL.missing())


RNG = np.random.default_rng(7)


def var(name, *shape):
    return Var(name, TensorType(shape, "float32"))


def const(*shape, positive=False):
    data = RNG.standard_normal(shape).astype(np.float32)
    return Constant(np.abs(data) + 0.5 if positive else data)


def model(body, *params) -> IRModule:
    from byoc_compiler.ir.expr import Function

    return IRModule.from_expr(Function(list(params), body))


def x4(c=4, h=9, w=9, name="x"):
    return var(name, 1, c, h, w)


def _conv(**kw):
    x = x4()
    return model(op.nn.conv2d(x, const(6, 4 // kw.get("groups", 1), 3, 3), **kw), x)


def _residual():
    x = x4()
    y = op.nn.bias_add(op.nn.conv2d(x, const(4, 4, 3, 3), padding=(1, 1, 1, 1)), const(4))
    return model(op.nn.relu(op.add(x, y)), x)


def _conv_bias(x, cin, cout, k=3, relu=True):
    """conv2d (same padding) + bias (+ relu)."""
    y = op.nn.bias_add(op.nn.conv2d(x, const(cout, cin, k, k), padding=(k // 2,) * 4), const(cout))
    return op.nn.relu(y) if relu else y


def _block(summand_after=None):
    """A ResNet block: y = conv(x); the block's convs; relu(last conv + y). The summand y is a value the
    region computed, so the sum post-op accumulates into y's own bytes -- unless `summand_after`
    reads y again after the block ("output": y is also an output; "multiply": a later op reads it)."""
    x = x4(h=7, w=7)
    y = _conv_bias(x, 4, 8, 1)
    out = op.nn.relu(op.add(_conv_bias(_conv_bias(y, 8, 8, 3), 8, 8, 1, relu=False), y))
    if summand_after == "output":
        return model(Tuple([out, y]), x)
    if summand_after == "multiply":
        return model(op.multiply(out, y), x)
    return model(out, x)


def _downsample_block():
    """ResNet's first block of a stage: relu(a strided 1x1 conv's shortcut + the main branch, whose first
    conv is a strided 1x1 too)."""
    x = x4(h=9, w=9)
    y = _conv_bias(x, 4, 16, 3)
    shortcut = op.nn.bias_add(op.nn.conv2d(y, const(32, 16, 1, 1), strides=(2, 2)), const(32))
    branch = op.nn.relu(op.nn.bias_add(op.nn.conv2d(y, const(8, 16, 1, 1), strides=(2, 2)), const(8)))
    return model(op.nn.relu(op.add(_conv_bias(branch, 8, 32, 1, relu=False), shortcut)), x)


def _grouped_block(relu=True):
    """ShuffleNet's unit: relu(a grouped 1x1 conv + its input), 4 channels per group: oneDNN runs such convs on its
    gemm-based implementation, where the runtime computes the residual sum as a binary add after the conv."""
    x = x4(12, 6, 6)
    y = op.nn.bias_add(op.nn.conv2d(x, const(12, 4, 1, 1), groups=3), const(12))
    out = op.add(y, x)
    return model(op.nn.relu(out) if relu else out, x)


def _grouped_wide(source="input", summand=True, kernel=1):
    """A grouped conv with 16 input and 8 output channels per group (3 groups): oneDNN's blocked layouts divide the
    groups, so the runtime runs one ungrouped primitive per group over channel slices of the values. `source`:
    the region input itself (slices of the caller's bytes) or a conv's output (slices of the arena); `summand`:
    relu(conv + a residual of the conv's own shape), accumulated into the output's slices."""
    x = x4(48, 7, 7)
    y = x if source == "input" else _conv_bias(x, 48, 48, 1)
    conv = op.nn.bias_add(op.nn.conv2d(y, const(24, 16, kernel, kernel), groups=3, padding=(kernel // 2,) * 4),
                          const(24))
    if summand:
        return model(op.nn.relu(op.add(conv, _conv_bias(y, 48, 24, 1, relu=False))), x)
    return model(op.nn.relu(conv), x)


def _pool_after_conv(pool, c=16, h=11, w=10):
    """A pooling over a conv's output (oneDNN's channel-blocked layout, which the runtime pools itself)."""
    x = x4(4, h, w)
    return model(pool(_conv_bias(x, 4, c, 3)), x)


def _grouped_gemm(post):
    """A grouped 1x1 conv with 5 channels per group and an activation after it: oneDNN's gemm-based convolution
    where the activation does not keep zeros (a clip above 0; else 8-channel windows), which the runtime runs as
    an eltwise primitive after the conv."""
    x = x4(15, 6, 6)
    return model(post(op.nn.bias_add(op.nn.conv2d(x, const(15, 5, 1, 1), groups=3), const(15))), x)


def _grouped_windows(channels=60, out_per_group=16, summand=True, source="conv"):
    """A grouped 1x1 conv, 3 groups, whose input groups do not fill 8-channel blocks but whose output groups do
    (ShuffleNet's 60 -> 240): each group reads a block-aligned window of the blocked value around its channels.
    From a depthwise conv's output (blocked) or the region input; with the unit's residual sum and relu."""
    x = x4(channels, 7, 7)
    y = x if source == "input" else op.nn.bias_add(op.nn.conv2d(x, const(channels, 1, 3, 3), groups=channels,
                                                                 padding=(1, 1, 1, 1)), const(channels))
    out = 3 * out_per_group
    conv = op.nn.bias_add(op.nn.conv2d(y, const(out, channels // 3, 1, 1), groups=3), const(out))
    if summand:
        return model(op.nn.relu(op.add(conv, _conv_bias(x, channels, out, 1, relu=False))), x)
    return model(conv, x)


def _grouped_out_windows(post=op.nn.relu, channels=48, out=36):
    """A grouped 1x1 conv, 3 groups, whose output groups do not fill 8-channel blocks (ShuffleNet's 240 -> 60):
    each group writes an aligned window of the blocked value, the windows overlapping, so each adds into the
    zeroed value before `post`."""
    x = x4(8, 6, 6)
    y = _conv_bias(x, 8, channels, 3)
    return model(post(op.nn.bias_add(op.nn.conv2d(y, const(out, channels // 3, 1, 1), groups=3), const(out))), x)


def _dense():
    x = var("x", 3, 16)
    return model(op.nn.relu(op.nn.bias_add(op.nn.dense(x, const(8, 16)), const(8))), x)


def _unary(make):
    x = x4()
    return model(make(x), x)


def _unary_of(x, make):
    return model(make(x), x)


def _binary(make, a_shape, b_shape):
    a, b = var("a", *a_shape), var("b", *b_shape)
    return model(make(a, b), a, b)


def _batch_norm():
    x = x4()
    bn = op.nn.batch_norm(x, const(4), const(4), const(4), const(4, positive=True), epsilon=1e-3)
    return model(op.nn.relu(TupleGetItem(bn, 0)), x)


def _concat():
    a, b, c = x4(2, name="a"), x4(3, name="b"), x4(1, name="c")
    return model(op.concatenate(Tuple([op.nn.relu(a), b, op.tanh(c)]), axis=1), a, b, c)


def _concat_blocked():
    """Two conv outputs (oneDNN's blocked layout) and the region input (plain), 16 + 8 + 8 channels: one copy per
    operand into its slice of the result, in the blocked layout."""
    x = x4(8, 5, 5)
    return model(op.nn.relu(op.concatenate(Tuple([_conv_bias(x, 8, 16, 3), _conv_bias(x, 8, 8, 1), x]), axis=1)), x)


def _shuffle(x, shape, groups, axes=None):
    """ShuffleNet's channel shuffle of x (of `shape`): reshape (n, c, ...) -> (n, groups, c / groups, ...), swap
    axes 1 and 2 (or `axes`), reshape back."""
    n, c, *rest = shape
    grouped = op.reshape(x, (n, groups, c // groups, *rest))
    swapped = op.transpose(grouped, axes or (0, 2, 1, *range(3, 3 + len(rest))))
    return op.reshape(swapped, (n, c, *rest))


def _shuffle_between_convs():
    """grouped conv -> shuffle -> conv: the shuffle reads and writes oneDNN's blocked layout."""
    x = x4(12, 5, 5)
    grouped = op.nn.relu(op.nn.bias_add(op.nn.conv2d(x, const(24, 4, 1, 1), groups=3), const(24)))
    return model(_conv_bias(_shuffle(grouped, (1, 24, 5, 5), 3), 24, 16, 3), x)


def _shuffle_after_conv(post=op.nn.relu, also_read=False):
    """conv + bias (+ post) -> shuffle -> conv: the shuffle folds into the first conv's output channels, unless
    `also_read` reads the first conv's output again (then it stays)."""
    x = x4(12, 5, 5)
    y = post(op.nn.bias_add(op.nn.conv2d(x, const(24, 12, 1, 1)), const(24)))
    out = _conv_bias(_shuffle(y, (1, 24, 5, 5), 4), 24, 16, 3)
    return model(Tuple([out, y]) if also_read else out, x)


def _shuffle_before_depthwise(stride=2):
    """grouped conv -> shuffle -> depthwise 3x3 conv (+ bias) -> conv, ShuffleNet's unit: at stride 2 the shuffle
    moves behind the depthwise conv."""
    x = x4(12, 9, 9)
    grouped = op.nn.relu(op.nn.bias_add(op.nn.conv2d(x, const(24, 4, 1, 1), groups=3), const(24)))
    depthwise = op.nn.bias_add(op.nn.conv2d(_shuffle(grouped, (1, 24, 9, 9), 3), const(24, 1, 3, 3), groups=24,
                                            strides=(stride, stride), padding=(1, 1, 1, 1)), const(24))
    return model(_conv_bias(depthwise, 24, 8, 1), x)


def _shuffle_3d():
    y = var("y", 2, 12, 5)
    return model(_shuffle(y, (2, 12, 5), 4), y)


# (id, model, ops dnnl must take) -- every op of the table, through the runner, against the reference.
CASES = [
    ("conv2d-strided-padded", lambda: _conv(strides=(2, 2), padding=(1, 2, 0, 1)), {"nn.conv2d"}),
    ("conv2d-dilated-grouped", lambda: _conv(dilation=(2, 2), groups=2), {"nn.conv2d"}),
    ("conv2d-depthwise", lambda: _unary(lambda x: op.nn.conv2d(x, const(4, 1, 3, 3), groups=4)), {"nn.conv2d"}),
    ("conv2d-bias-add-relu", _residual, {"nn.conv2d", "add", "nn.relu"}),
    ("conv2d-bias-clip", lambda: _unary(lambda x: op.clip(op.nn.bias_add(op.nn.conv2d(x, const(4, 4, 1, 1)), const(4)),
                                                           0.0, 6.0)), {"nn.conv2d", "clip"}),
    # strided 1x1 convs read a compact copy of the pixels they use: from a region input (an alias of the
    # caller's bytes), from a conv's output (oneDNN's layout), odd sizes, unequal strides, into a residual
    ("conv2d-1x1-strided-input", lambda: _unary(lambda x: op.nn.conv2d(x, const(6, 4, 1, 1), strides=(2, 3))),
     {"nn.conv2d"}),
    ("conv2d-1x1-strided-after-conv", lambda: _unary(lambda x: op.nn.bias_add(op.nn.conv2d(
        _conv_bias(x, 4, 16, 3), const(32, 16, 1, 1), strides=(2, 2)), const(32))), {"nn.conv2d"}),
    ("downsample-block", _downsample_block, {"nn.conv2d", "add", "nn.relu"}),
    ("block-sum-in-place", _block, {"nn.conv2d", "add", "nn.relu"}),
    ("block-summand-also-output", lambda: _block(summand_after="output"), {"nn.conv2d", "add"}),
    ("block-summand-read-later", lambda: _block(summand_after="multiply"), {"nn.conv2d", "add", "multiply"}),
    ("grouped-block-sum-split", _grouped_block, {"nn.conv2d", "add", "nn.relu"}),
    ("grouped-block-sum-split-no-relu", lambda: _grouped_block(relu=False), {"nn.conv2d", "add"}),
    ("grouped-per-group-of-input", lambda: _grouped_wide(summand=False), {"nn.conv2d", "nn.relu"}),
    ("grouped-per-group-sum", lambda: _grouped_wide("conv"), {"nn.conv2d", "add", "nn.relu"}),
    ("grouped-per-group-3x3-sum-of-input", lambda: _grouped_wide(kernel=3), {"nn.conv2d", "add", "nn.relu"}),
    # groups of 20, 4 and 5 channels read through 8-channel windows: the last window past the value's channels
    # (into the layout's padding), windows shared by two groups, from the region input, without the sum
    ("grouped-windows-20-sum", _grouped_windows, {"nn.conv2d", "add", "nn.relu"}),
    ("grouped-windows-4", lambda: _grouped_windows(12, 8, summand=False), {"nn.conv2d"}),
    ("grouped-windows-5-of-input", lambda: _grouped_windows(15, 8, source="input"), {"nn.conv2d", "add", "nn.relu"}),
    # output groups of 12 and 20 channels written through overlapping 8-channel windows that accumulate; a clip
    # whose range holds no 0 (not accumulated: the gemm-based conv)
    ("grouped-out-windows-relu", _grouped_out_windows, {"nn.conv2d", "nn.relu"}),
    ("grouped-out-windows-clip", lambda: _grouped_out_windows(lambda y: op.clip(y, -0.5, 0.5)), {"nn.conv2d", "clip"}),
    ("grouped-out-windows-clip-above-0", lambda: _grouped_out_windows(lambda y: op.clip(y, 0.1, 0.5)),
     {"nn.conv2d", "clip"}),
    ("grouped-both-windows", lambda: _grouped_out_windows(channels=60, out=60), {"nn.conv2d", "nn.relu"}),
    ("dense-bias-relu", _dense, {"nn.dense"}),
    ("matmul-transposed", lambda: _binary(lambda a, b: op.nn.matmul(a, b, transpose_a=True, transpose_b=True),
                                          (5, 3), (4, 5)), {"nn.matmul"}),
    ("eltwise-chain", lambda: _unary(lambda x: op.sqrt(op.exp(op.sigmoid(op.tanh(op.nn.leaky_relu(
        op.clip(x, -0.5, 2.0), 0.2)))))), {"clip", "nn.leaky_relu", "tanh", "sigmoid", "exp", "sqrt"}),
    ("add-broadcast-first", lambda: _binary(op.add, (1, 4, 1, 1), (1, 4, 5, 5)), {"add"}),
    ("multiply-broadcast-rank", lambda: _binary(op.multiply, (3, 4), (4,)), {"multiply"}),
    ("batch-norm", _batch_norm, {"nn.batch_norm"}),
    ("max-pool-ceil", lambda: _unary(lambda x: op.nn.max_pool2d(x, (3, 3), (2, 2), padding=(1, 1, 0, 0),
                                                                 ceil_mode=True)), {"nn.max_pool2d"}),
    ("avg-pool-exclude", lambda: _unary(lambda x: op.nn.avg_pool2d(x, (2, 2), (2, 2), padding=(1, 1, 1, 1))),
     {"nn.avg_pool2d"}),
    ("avg-pool-include", lambda: _unary(lambda x: op.nn.avg_pool2d(x, (3, 3), (2, 2), padding=(1, 1, 1, 1),
                                                                    count_include_pad=True)), {"nn.avg_pool2d"}),
    ("global-avg-pool", lambda: _unary(op.nn.global_avg_pool2d), {"nn.global_avg_pool2d"}),
    # poolings over channel-blocked values (the runtime's own loops): borders, ceil mode, dilation, 16-lane
    # blocks, windows wider than the plane, a plain input reordered into blocks
    ("blocked-max-pool-padded", lambda: _pool_after_conv(lambda y: op.nn.max_pool2d(y, (3, 3), (2, 2),
                                                                                    padding=(1, 1, 1, 1))),
     {"nn.max_pool2d"}),
    ("blocked-max-pool-ceil-dilated", lambda: _pool_after_conv(lambda y: op.nn.max_pool2d(
        y, (3, 2), (2, 3), padding=(1, 0, 1, 1), dilation=(2, 1), ceil_mode=True)), {"nn.max_pool2d"}),
    ("blocked-avg-pool-exclude", lambda: _pool_after_conv(lambda y: op.nn.avg_pool2d(y, (3, 3), (2, 2),
                                                                                     padding=(1, 1, 1, 1))),
     {"nn.avg_pool2d"}),
    ("blocked-avg-pool-include-32", lambda: _pool_after_conv(lambda y: op.nn.avg_pool2d(
        y, (2, 3), (1, 2), padding=(1, 1, 0, 1), count_include_pad=True), c=32), {"nn.avg_pool2d"}),
    ("blocked-global-avg-pool", lambda: _pool_after_conv(op.nn.global_avg_pool2d, c=24, h=7, w=7),
     {"nn.global_avg_pool2d"}),
    ("blocked-avg-pool-of-input", lambda: _unary_of(x4(16, 8, 8), lambda x: op.nn.avg_pool2d(x, (3, 3), (2, 2),
                                                                                            padding=(1, 1, 1, 1))),
     {"nn.avg_pool2d"}),
    ("grouped-5-relu", lambda: _grouped_gemm(op.nn.relu), {"nn.conv2d", "nn.relu"}),
    ("grouped-gemm-clip", lambda: _grouped_gemm(lambda y: op.clip(y, 0.1, 0.5)), {"nn.conv2d", "clip"}),
    ("concatenate", _concat, {"concatenate"}),
    ("concatenate-blocked-and-plain", _concat_blocked, {"concatenate", "nn.conv2d"}),
    ("softmax-axis1", lambda: _unary(lambda x: op.nn.softmax(x, axis=1)), {"nn.softmax"}),
    ("lrn", lambda: _unary(lambda x: op.nn.lrn(x, size=3, bias=1.5, alpha=0.3, beta=0.6)), {"nn.lrn"}),
    ("flatten-dense", lambda: _unary(lambda x: op.nn.dense(op.nn.batch_flatten(op.nn.relu(x)), const(5, 324))),
     {"nn.batch_flatten", "nn.dense"}),
    ("channel-shuffle-between-convs", _shuffle_between_convs, {"transpose", "nn.conv2d"}),
    ("channel-shuffle-folded-relu", _shuffle_after_conv, {"transpose", "nn.conv2d"}),
    ("channel-shuffle-folded-clip", lambda: _shuffle_after_conv(lambda y: op.clip(y, -0.3, 0.4)),
     {"transpose", "nn.conv2d"}),
    ("channel-shuffle-not-folded-conv-read-twice", lambda: _shuffle_after_conv(also_read=True),
     {"transpose", "nn.conv2d"}),
    ("channel-shuffle-behind-depthwise", _shuffle_before_depthwise, {"transpose", "nn.conv2d"}),
    ("channel-shuffle-before-depthwise-unstrided", lambda: _shuffle_before_depthwise(stride=1),
     {"transpose", "nn.conv2d"}),
    ("channel-shuffle-of-input", lambda: _unary(lambda x: op.nn.relu(_shuffle(x, (1, 4, 9, 9), 2))), {"transpose"}),
    ("channel-shuffle-3d", _shuffle_3d, {"transpose"}),
]


def dnnl_ops(part) -> set[str]:
    return {o for r in byoc.partition.summarize(part).regions_of("dnnl") for o in r.ops}


@pytest.mark.parametrize("make, taken", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_op_runs_in_onednn_and_matches_reference(make, taken):
    mod = make()
    part = byoc.partition_for("dnnl", mod)
    assert taken <= dnnl_ops(part)
    lib = byoc.build(part)
    inputs = deterministic_inputs(mod, 0)
    # twice: a step that depends on bytes an earlier run left (an accumulation not zeroed) gives another result
    got = lib.run_runner(inputs, repeat=2)
    for g, want in zip(got, testing.run_reference(mod, inputs)):
        np.testing.assert_allclose(g, want, rtol=1e-4, atol=1e-5)


# The tests that read oneDNN's log of what ran check how the runtime builds on oneDNN's AVX2 choices (8-channel
# blocks, its gemm-based convolution for groups off the blocks): oneDNN picks implementations and layouts per CPU
# (on AVX-512, 16-channel blocks and nhwc 1x1 convolutions, which the per-group windows and the runtime's pooling
# leave to oneDNN), so those runs cap its ISA at AVX2 (ONEDNN_MAX_CPU_ISA, read once at start-up) on every CPU.
# The other dnnl tests run oneDNN's own choice for the CPU.
def _onednn_log_env() -> dict:
    return {**os.environ, "DNNL_VERBOSE": "1", "ONEDNN_MAX_CPU_ISA": "AVX2"}


def test_gemm_convolution_sums_in_a_binary_add(tmp_path):
    """Where oneDNN picks its gemm-based convolution the sum post-op is left out of it (it ran 15x slower than the
    conv) and a binary add with the relu after it sums the residual: read from oneDNN's own log of what ran."""
    mod = _grouped_block()
    lib = byoc.build(byoc.partition_for("dnnl", mod))
    np.save(tmp_path / "x.npy", deterministic_inputs(mod, 0)["x"])
    run = subprocess.run([str(lib.runner()), "--out", str(tmp_path), str(tmp_path / "x.npy")], capture_output=True,
                         text=True, env=_onednn_log_env(), check=True)
    ran = [line.split(",") for line in run.stdout.splitlines() if line.startswith("onednn_verbose,exec,cpu,")]
    convs = [r for r in ran if r[3] == "convolution"]
    assert convs and all("gemm" in r[4] and "sum" not in ",".join(r) for r in convs), ran
    assert any(r[3] == "binary" and "eltwise_relu" in ",".join(r) for r in ran), ran


def _onednn_log(lib, tmp_path, inputs, threads=1):
    for name, value in inputs.items():
        np.save(tmp_path / f"{name}.npy", value)
    run = subprocess.run([str(lib.runner()), "--threads", str(threads), "--out", str(tmp_path),
                          *(str(tmp_path / f"{name}.npy") for name in inputs)], capture_output=True, text=True,
                         env=_onednn_log_env(), check=True)
    return [line.split(",") for line in run.stdout.splitlines() if line.startswith("onednn_verbose,exec,cpu,")]


@pytest.mark.parametrize("channels", [60, 15])
def test_groups_off_the_blocks_run_ungrouped_on_windows(tmp_path, channels):
    """A grouped conv whose input groups straddle channel blocks runs as 3 ungrouped 1x1 convolutions (oneDNN's log:
    no gemm, no `g3`) over 8-channel-aligned windows (`ic24` for 20-channel groups, `ic16` for 5)."""
    mod = _grouped_windows(channels, 8)
    ran = _onednn_log(byoc.build(byoc.partition_for("dnnl", mod)), tmp_path, deterministic_inputs(mod, 0))
    window = {60: "ic24oc8_", 15: "ic16oc8_"}[channels]
    grouped = [r for r in ran if r[3] == "convolution" and window in ",".join(r)]
    assert len(grouped) == 3 and not any("gemm" in r[4] or "g3mb" in ",".join(r) for r in grouped), ran


@pytest.mark.parametrize("post, window, windowed", [
    (op.nn.relu, "ic16oc16_", True), (lambda y: op.clip(y, 0.1, 0.5), "ic16oc16_", False)], ids=["relu", "clip-0.1"])
def test_output_groups_off_the_blocks_accumulate_in_windows(tmp_path, post, window, windowed):
    """Output groups of 12 channels: 3 ungrouped convolutions into 16-channel windows, each with a sum post-op
    (oneDNN's log), unless the activation would not keep the zeros (a clip to [0.1, 0.5]: the gemm-based conv)."""
    mod = _grouped_out_windows(post)
    ran = _onednn_log(byoc.build(byoc.partition_for("dnnl", mod)), tmp_path, deterministic_inputs(mod, 0))
    grouped = [r for r in ran if r[3] == "convolution" and window in ",".join(r) and "sum" in ",".join(r)]
    assert len(grouped) == (3 if windowed else 0), ran
    assert any("gemm" in r[4] for r in ran if r[3] == "convolution") != windowed, ran


def test_gemm_convolution_activation_is_an_eltwise_primitive(tmp_path):
    """oneDNN's gemm-based convolution applies an eltwise post-op in a scalar loop; the runtime leaves it out of the
    conv and runs an eltwise clip over the conv's output after it (oneDNN's log)."""
    mod = _grouped_gemm(lambda y: op.clip(y, 0.1, 0.5))
    ran = _onednn_log(byoc.build(byoc.partition_for("dnnl", mod)), tmp_path, deterministic_inputs(mod, 0))
    kinds = [(r[3], "gemm" in r[4], "eltwise_clip" in ",".join(r)) for r in ran]
    conv = kinds.index(("convolution", True, False))
    assert kinds[conv + 1] == ("eltwise", False, True), ran


class _PoolShape(ctypes.Structure):
    """bd_internal.h's BdPoolShape."""
    _fields_ = [(name, ctypes.c_int64) for name in ("images", "blocks", "block", "ih", "iw", "oh", "ow", "kh", "kw",
                                                     "sh", "sw", "ph", "pw", "dh", "dw")] + \
               [("max", ctypes.c_int), ("include_pad", ctypes.c_int)]


def _pool_reference(x, kind, kernel, stride, pad, dilation, out):
    """An explicit loop over NCHW: max, or the mean over the taps inside the plane ("avg") or over the window
    ("avg-include"); windows start at -pad."""
    n, c, h, w = x.shape
    y = np.zeros((n, c) + out, np.float32)
    for oy in range(out[0]):
        for ox in range(out[1]):
            ys = [oy * stride[0] - pad[0] + k * dilation[0] for k in range(kernel[0])]
            xs = [ox * stride[1] - pad[1] + k * dilation[1] for k in range(kernel[1])]
            taps = x[:, :, [t for t in ys if 0 <= t < h]][:, :, :, [t for t in xs if 0 <= t < w]]
            taps = taps.reshape(n, c, -1)
            if kind == "max":
                y[:, :, oy, ox] = taps.max(axis=2)
            else:
                y[:, :, oy, ox] = taps.sum(axis=2) / (kernel[0] * kernel[1] if kind == "avg-include" else taps.shape[2])
    return y


def _blocked(x, lanes):
    n, c, h, w = x.shape
    return np.ascontiguousarray(x.reshape(n, c // lanes, lanes, h, w).transpose(0, 1, 3, 4, 2))


# (id, lanes, channels, plane, kind, kernel, stride, pad, dilation, out) -- the runtime's pooling on both block widths
# (this CPU's oneDNN may never hand it 16-channel blocks), windows clipped on every side, two images
POOL_KERNEL = [
    ("max-3x3-s2-8", 8, 16, (9, 8), "max", (3, 3), (2, 2), (1, 1), (1, 1), (5, 4)),
    ("max-3x3-s2-16", 16, 32, (9, 8), "max", (3, 3), (2, 2), (1, 1), (1, 1), (5, 4)),
    ("avg-2x3-dilated-16", 16, 16, (7, 9), "avg", (2, 3), (1, 2), (1, 0), (2, 1), (7, 4)),
    ("avg-include-3x3-16", 16, 48, (6, 6), "avg-include", (3, 3), (2, 2), (1, 1), (1, 1), (3, 3)),
    ("global-avg-16", 16, 16, (5, 7), "avg", (5, 7), (1, 1), (0, 0), (1, 1), (1, 1)),
]


@pytest.fixture(scope="module")
def pool_library(tmp_path_factory):
    """A dnnl model's shared library: bd_pool_compute is one of the runtime's symbols."""
    mod = _pool_after_conv(lambda y: op.nn.max_pool2d(y, (3, 3), (2, 2), padding=(1, 1, 1, 1)))
    path = byoc.build(byoc.partition_for("dnnl", mod)).export_library(tmp_path_factory.mktemp("pool") / "pool.so")
    lib = ctypes.CDLL(str(path))
    lib.bd_pool_compute.argtypes = [ctypes.POINTER(_PoolShape), ctypes.c_void_p, ctypes.c_void_p]
    return lib


@pytest.mark.parametrize("lanes, channels, plane, kind, kernel, stride, pad, dilation, out",
                         [p[1:] for p in POOL_KERNEL], ids=[p[0] for p in POOL_KERNEL])
def test_runtime_pooling_matches_an_explicit_loop(pool_library, lanes, channels, plane, kind, kernel, stride, pad,
                                                  dilation, out):
    x = RNG.standard_normal((2, channels) + plane).astype(np.float32)
    src = _blocked(x, lanes)
    dst = np.full((2, channels // lanes) + out + (lanes,), np.nan, np.float32)
    shape = _PoolShape(2, channels // lanes, lanes, *plane, *out, *kernel, *stride, *pad, *dilation,
                       int(kind == "max"), int(kind == "avg-include"))
    pool_library.bd_pool_compute(ctypes.byref(shape), src.ctypes.data, dst.ctypes.data)
    want = _blocked(_pool_reference(x, kind, kernel, stride, pad, dilation, out), lanes)
    np.testing.assert_allclose(dst, want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_blocked_pooling_runs_in_the_runtime_for_every_thread_count(tmp_path, threads):
    """A pooling over a blocked value runs no oneDNN pooling primitive (the runtime's loops, split over OpenMP's
    threads) and gives the reference's result at every thread count."""
    mod = _pool_after_conv(lambda y: op.nn.max_pool2d(y, (3, 3), (2, 2), padding=(1, 1, 1, 1)), c=32, h=23, w=21)
    lib = byoc.build(byoc.partition_for("dnnl", mod))
    inputs = deterministic_inputs(mod, 0)
    ran = _onednn_log(lib, tmp_path, inputs, threads)
    assert ran and not any(r[3].startswith("pooling") for r in ran), ran
    np.testing.assert_allclose(np.load(tmp_path / "out0.npy"), testing.run_reference(mod, inputs)[0], rtol=1e-5,
                               atol=1e-6)


@pytest.mark.parametrize("source", ["input", "conv"])
def test_grouped_convolution_runs_one_primitive_per_group(tmp_path, source):
    """A grouped conv whose groups fill oneDNN's channel blocks runs as 3 ungrouped convolutions (oneDNN's own log:
    no `g3` in their shapes) on slices of the values, and gives the reference's result."""
    mod = _grouped_wide(source)
    lib = byoc.build(byoc.partition_for("dnnl", mod))
    inputs = deterministic_inputs(mod, 0)
    np.save(tmp_path / "x.npy", inputs["x"])
    run = subprocess.run([str(lib.runner()), "--out", str(tmp_path), str(tmp_path / "x.npy")], capture_output=True,
                         text=True, env=_onednn_log_env(), check=True)
    convs = [line for line in run.stdout.splitlines()
             if line.startswith("onednn_verbose,exec,cpu,convolution") and "ic16oc8_" in line]
    assert len(convs) == 3 and not any("g3mb" in c for c in convs), run.stdout
    np.testing.assert_allclose(np.load(tmp_path / "out0.npy"), testing.run_reference(mod, inputs)[0], rtol=1e-4, atol=1e-4)


# The runtime's rewrites of oneDNN's primitives (the sum and activations split out of a gemm-based conv, one conv
# per group over slices, a concat as copies into slices, a pooling on a blocked copy, its own blocked pooling), built with -fsanitize=address,undefined:
# the matrix's random graphs seldom reach them.
SANITIZED = ["grouped-block-sum-split", "grouped-per-group-sum", "concatenate-blocked-and-plain", "avg-pool-exclude",
             "blocked-max-pool-ceil-dilated", "grouped-gemm-clip", "grouped-windows-20-sum", "grouped-windows-4",
             "grouped-both-windows"]


@pytest.mark.parametrize("make", [c[1] for c in CASES if c[0] in SANITIZED], ids=SANITIZED)
def test_runtime_rewrites_are_clean_under_asan_ubsan(make):
    mod = make()
    lib = byoc.build(byoc.partition_for("dnnl", mod), toolchain="gcc-asan-ubsan")
    inputs = deterministic_inputs(mod, 0)
    for g, want in zip(lib.run_runner(inputs), testing.run_reference(mod, inputs)):
        np.testing.assert_allclose(g, want, rtol=1e-4, atol=1e-5)


def _typed(call):
    from byoc_compiler.transform import infer_type

    infer_type(IRModule.from_expr(call))
    return call


# (id, call, the reason the predicate gives)
REFUSED = [
    ("add-two-way-broadcast", lambda: op.add(var("a", 3, 1), var("b", 1, 4)), "broadcasts only one operand"),
    ("lrn-even-size", lambda: op.nn.lrn(x4(), size=4), "even size 4"),
    ("batch-norm-axis", lambda: TupleGetItem(op.nn.batch_norm(x4(), *(const(9) for _ in range(4)), axis=3), 0).tuple_value,
     "axis 3"),
    ("rank-6", lambda: op.nn.relu(var("x", 1, 1, 1, 1, 1, 2)), "rank 6"),
    ("dense-3d", lambda: op.nn.dense(var("x", 2, 3, 4), const(5, 4)), "2-D data"),
    ("avg-include-overhang", lambda: op.nn.avg_pool2d(x4(h=8, w=8), (3, 3), (2, 2), padding=(0, 0, 0, 0),
                                                      ceil_mode=True, count_include_pad=True), "overhang"),
]


@pytest.mark.parametrize("make, reason", [r[1:] for r in REFUSED], ids=[r[0] for r in REFUSED])
def test_predicates_refuse_what_onednn_cannot_take(make, reason):
    why = DNNL.check(_typed(make()))
    assert why is not None and reason in why


# (id, a reshape-transpose-reshape that is no channel shuffle, the reason the pattern's check gives)
NOT_SHUFFLES = [
    ("other-axes", lambda x: _shuffle(x, (1, 4, 9, 9), 2, axes=(0, 1, 2, 4, 3)), "swaps axes 1 and 2 only"),
    ("split-of-rows", lambda x: op.reshape(op.transpose(op.reshape(x, (1, 4, 3, 3, 9)), (0, 2, 1, 3, 4)), (1, 4, 9, 9)),
     "does not cut axis 1"),
]


@pytest.mark.parametrize("make, reason", [r[1:] for r in NOT_SHUFFLES], ids=[r[0] for r in NOT_SHUFFLES])
def test_only_a_channel_shuffle_becomes_one_kernel(make, reason):
    from byoc_compiler.contrib.dnnl.patterns import shuffle_groups

    x = x4()
    root = _typed(make(x))
    assert reason in shuffle_groups(root)[1]
    assert "transpose" not in dnnl_ops(byoc.partition_for("dnnl", model(make(x), x)))


# (id, model, channel shuffles left in the graph, of them read from a depthwise conv)
SHUFFLE_FOLDS = [
    ("after-conv-relu", _shuffle_after_conv, 0, 0),
    ("after-conv-read-twice", lambda: _shuffle_after_conv(also_read=True), 1, 0),
    ("after-grouped-conv", _shuffle_between_convs, 1, 0),
    ("before-depthwise-strided", _shuffle_before_depthwise, 1, 1),
    ("before-depthwise-unstrided", lambda: _shuffle_before_depthwise(stride=1), 1, 0),
]


@pytest.mark.parametrize("make, left, after_depthwise", [f[1:] for f in SHUFFLE_FOLDS], ids=[f[0] for f in SHUFFLE_FOLDS])
def test_shuffles_fold_into_convs_or_move_behind_strided_depthwise(tmp_path, make, left, after_depthwise):
    """A channel shuffle right after an ungrouped conv whose output nothing else reads is that conv with its output
    channels reordered: no shuffle node in the graph, none in oneDNN's log. One before a strided depthwise conv
    moves behind it (the conv's channels reordered the other way)."""
    mod = make()
    lib = byoc.build(byoc.partition_for("dnnl", mod))
    graph = json.loads(lib.get_source("dnnl"))
    nodes = graph["nodes"]
    shuffles = [n for n in nodes if n.get("name") == "channel_shuffle"]
    assert len(shuffles) == left
    assert sum(nodes[s["inputs"][0]]["attrs"].get("groups") == s["shape"][1] for s in shuffles) == after_depthwise
    assert [n["id"] for n in nodes] == list(range(len(nodes)))
    assert all(i < n["id"] for n in nodes for i in n.get("inputs", []))
    ran = _onednn_log(lib, tmp_path, deterministic_inputs(mod, 0))
    assert sum(r[3] == "shuffle" for r in ran) == left, ran


def test_json_graph_is_json_and_holds_no_weights():
    mod = _residual()
    lib = byoc.build(byoc.partition_for("dnnl", mod))
    text = lib.get_source("dnnl")
    graph = json.loads(text)
    assert graph["format"] == "byoc-dnnl" and graph["version"] == 1
    kinds = [n["op"] for n in graph["nodes"]]
    assert kinds[0] == "input" and "const" in kinds
    conv = next(n for n in graph["nodes"] if n["op"] == "kernel")
    assert conv["name"] == "nn.conv2d" and conv["attrs"]["post_ops"] == ["sum", "relu"]
    artifact = next(iter(lib.artifacts.values()))
    weight = next(a for a in artifact.constants.values() if a.ndim == 4)
    # the weight's values are bound by name from the model's data, never printed in the JSON
    assert f"{weight.reshape(-1)[0]:.6g}"[:6] not in text
    assert set(artifact.constants) == {n["name"] for n in graph["nodes"] if n["op"] == "const"}


def _graph(nodes, heads, symbol="r"):
    return json.dumps({"format": "byoc-dnnl", "version": 1, "symbol": symbol, "nodes": nodes, "heads": heads})


GOOD_NODES = [
    {"id": 0, "op": "input", "name": "input0", "shape": [1, 2, 4, 4], "dtype": "float32"},
    {"id": 1, "op": "const", "name": "w", "shape": [3, 2, 3, 3], "dtype": "float32"},
    {"id": 2, "op": "kernel", "name": "nn.conv2d", "inputs": [0, 1], "shape": [1, 3, 4, 4], "dtype": "float32",
     "attrs": {"strides": [1, 1], "padding": [1, 1, 1, 1], "dilation": [1, 1], "groups": 1, "data_layout": "NCHW",
               "kernel_layout": "OIHW", "bias": 0, "post_ops": ["relu"]}},
]
W = RNG.standard_normal((3, 2, 3, 3)).astype(np.float32)


def test_hand_written_graph_runs():
    from byoc_compiler.contrib.dnnl.loader import DnnlModule

    x = RNG.standard_normal((1, 2, 4, 4)).astype(np.float32)
    (out,) = DnnlModule(_graph(GOOD_NODES, [2]), {"w": W}).run(x)
    xv = var("x", 1, 2, 4, 4)
    ref = testing.run_reference(model(op.nn.conv2d(xv, Constant(W), padding=(1, 1, 1, 1)), xv), [x])[0]
    np.testing.assert_allclose(out, np.maximum(ref, 0), rtol=1e-5, atol=1e-5)


def _nhwc_conv(x, w, b=None, stride=1, pad=0):
    """NHWC data, HWIO weight, in float64 by explicit taps (independent of the runtime and the op table)."""
    kh, kw, _, cout = w.shape
    xp = np.pad(x.astype(np.float64), ((0, 0), (pad, pad), (pad, pad), (0, 0)))
    oh, ow = (xp.shape[1] - kh) // stride + 1, (xp.shape[2] - kw) // stride + 1
    out = np.zeros((x.shape[0], oh, ow, cout))
    for i in range(kh):
        for j in range(kw):
            tap = xp[:, i:i + stride * (oh - 1) + 1:stride, j:j + stride * (ow - 1) + 1:stride, :]
            out += tap @ w[i, j].astype(np.float64)
    return out if b is None else out + b


def _nhwc_graph(summand_also_output: bool):
    """x (NHWC) -> y = relu(conv1x1 + b) -> relu(conv3x3 + b) -> relu(conv1x1 + b + y): a ResNet block in NHWC."""
    nodes = [{"id": 0, "op": "input", "name": "input0", "shape": [1, 5, 6, 4], "dtype": "float32"}]
    consts = {}

    def conv(data, k, cin, cout, post_ops, summand=None):
        w, b = f"w{len(consts)}", f"b{len(consts)}"
        consts[w] = RNG.standard_normal((k, k, cin, cout)).astype(np.float32)
        consts[b] = RNG.standard_normal(cout).astype(np.float32)
        for name, shape in ((w, [k, k, cin, cout]), (b, [cout])):
            nodes.append({"id": len(nodes), "op": "const", "name": name, "shape": shape, "dtype": "float32"})
        inputs = [data, len(nodes) - 2, len(nodes) - 1] + ([summand] if summand is not None else [])
        nodes.append({"id": len(nodes), "op": "kernel", "name": "nn.conv2d", "inputs": inputs, "shape": [1, 5, 6, cout],
                      "dtype": "float32", "attrs": {"strides": [1, 1], "padding": [k // 2] * 4, "dilation": [1, 1],
                                                    "groups": 1, "data_layout": "NHWC", "kernel_layout": "HWIO",
                                                    "bias": 1, "post_ops": post_ops}})
        return len(nodes) - 1

    y = conv(0, 1, 4, 8, ["relu"])
    z = conv(y, 3, 8, 8, ["relu"])
    out = conv(z, 1, 8, 8, ["sum", "relu"], summand=y)
    return _graph(nodes, [out, y] if summand_also_output else [out]), consts


@pytest.mark.parametrize("summand_also_output", [False, True], ids=["sum-in-place", "summand-also-output"])
def test_nhwc_block_runs_in_its_layout(summand_also_output):
    """NHWC convolutions read and write row-major NHWC where the values are: three convolutions and the
    output's copy are the steps of a run; the summand's copy into dst is a step only when the summand
    is read after the sum (here: it is also an output, so its bytes must survive)."""
    from byoc_compiler.contrib.dnnl.loader import DnnlModule

    text, consts = _nhwc_graph(summand_also_output)
    x = RNG.standard_normal((1, 5, 6, 4)).astype(np.float32)
    module = DnnlModule(text, consts)
    got = module.run(x)
    relu = lambda v: np.maximum(v, 0)  # noqa: E731
    y = relu(_nhwc_conv(x, consts["w0"], consts["b0"]))
    z = relu(_nhwc_conv(y, consts["w2"], consts["b2"], pad=1))
    out = relu(_nhwc_conv(z, consts["w4"], consts["b4"]) + y)
    np.testing.assert_allclose(got[0], out, rtol=1e-4, atol=1e-4)
    if summand_also_output:
        np.testing.assert_allclose(got[1], y, rtol=1e-4, atol=1e-4)
    assert module.num_steps() == (3 + 1 + 2 if summand_also_output else 3 + 1)


def test_nhwc_strided_conv_without_bias():
    from byoc_compiler.contrib.dnnl.loader import DnnlModule

    w = RNG.standard_normal((3, 3, 3, 5)).astype(np.float32)
    nodes = [{"id": 0, "op": "input", "name": "input0", "shape": [2, 9, 8, 3], "dtype": "float32"},
             {"id": 1, "op": "const", "name": "w", "shape": [3, 3, 3, 5], "dtype": "float32"},
             {"id": 2, "op": "kernel", "name": "nn.conv2d", "inputs": [0, 1], "shape": [2, 5, 4, 5], "dtype": "float32",
              "attrs": {"strides": [2, 2], "padding": [1, 1, 1, 1], "dilation": [1, 1], "groups": 1,
                        "data_layout": "NHWC", "kernel_layout": "HWIO", "bias": 0, "post_ops": []}}]
    x = RNG.standard_normal((2, 9, 8, 3)).astype(np.float32)
    (got,) = DnnlModule(_graph(nodes, [2]), {"w": w}).run(x)
    np.testing.assert_allclose(got, _nhwc_conv(x, w, stride=2, pad=1), rtol=1e-4, atol=1e-4)


def _with(node_id, **changes):
    nodes = json.loads(json.dumps(GOOD_NODES))
    nodes[node_id].update(changes)
    return nodes


# (id, json text, constants, fragments of the one error) -- never a crash, always the node named.
MALFORMED = [
    ("truncated", _graph(GOOD_NODES, [2])[:-40], {"w": W}, ["dnnl region ?", "malformed", "truncated"]),
    ("wrong-shape", _graph(_with(2, shape=[1, 3, 5, 5]), [2]), {"w": W},
     ["node 2 (nn.conv2d)", "shape (1, 3, 5, 5)", "give (1, 3, 4, 4)"]),
    ("unknown-op", _graph(_with(2, name="nn.conv3d"), [2]), {"w": W}, ["node 2 (nn.conv3d)", "unknown op"]),
    ("const-wrong-size", _graph(GOOD_NODES, [2]), {"w": W[:2]}, ["node 1 (const w)", "bound to 144 bytes",
                                                                 "needs 216"]),
    ("const-missing", _graph(GOOD_NODES, [2]), {}, ["node 1 (const w)", "no constant named 'w'"]),
    ("const-unknown", _graph(GOOD_NODES, [2]), {"w": W, "v": W}, ["binds constant 'v'"]),
    ("input-after-use", _graph(_with(2, inputs=[0, 3]), [2]), {"w": W}, ["node 2", "inputs[1]"]),
    ("unknown-attr", _graph(_with(2, attrs={**GOOD_NODES[2]["attrs"], "fused": 1}), [2]), {"w": W},
     ["node 2", "unknown key \"fused\""]),
    ("bad-post-ops", _graph(_with(2, attrs={**GOOD_NODES[2]["attrs"], "post_ops": ["relu", "sum"]}), [2]),
     {"w": W}, ["node 2", "post_ops must be"]),
    ("head-out-of-range", _graph(GOOD_NODES, [9]), {"w": W}, ["heads[0]"]),
    ("clip-post-op-reversed", _graph(_with(2, attrs={**GOOD_NODES[2]["attrs"], "post_ops": [{"clip": [6, 0]}]}), [2]),
     {"w": W}, ["node 2", "min 6 is above its max 0"]),
    ("not-float32", _graph(_with(0, dtype="int8"), [2]), {"w": W}, ["node 0 (input input0)", "dtype int8"]),
    ("huge-shape", _graph(_with(0, shape=[1 << 20, 1 << 20, 4, 4]), [2]), {"w": W}, ["node 0", "elements"]),
    ("shuffle-groups-not-dividing", _graph([*GOOD_NODES, {"id": 3, "op": "kernel", "name": "channel_shuffle",
                                                          "inputs": [2], "shape": [1, 3, 4, 4], "dtype": "float32",
                                                          "attrs": {"axis": 1, "groups": 2}}], [3]),
     {"w": W}, ["node 3 (channel_shuffle)", "2 groups do not divide axis 1's 3 channels"]),
]


@pytest.mark.parametrize("text, constants, fragments", [m[1:] for m in MALFORMED], ids=[m[0] for m in MALFORMED])
def test_malformed_graph_fails_at_init_naming_the_node(text, constants, fragments):
    from byoc_compiler.contrib.dnnl.loader import DnnlModule

    with pytest.raises(ByocError) as info:
        DnnlModule(text, constants, symbol="r")
    message = str(info.value)
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message, message


def test_mixed_targets_give_dnnl_priority():
    from byoc_compiler import zoo

    mod = zoo.get("byoc_guide")          # add, subtract, multiply: dnnl takes add and multiply
    part = byoc.partition_for(["dnnl", "ccompiler"], mod)
    lib = byoc.build(part)
    by_target = {}
    for symbol, target in lib.region_targets.items():
        by_target.setdefault(target.name, []).append(symbol)
    assert len(by_target["dnnl"]) == 2 and len(by_target["ccompiler"]) == 1
    assert "subtract" in lib.get_source("ccompiler")
    inputs = deterministic_inputs(mod, 0)
    np.testing.assert_allclose(lib.run_runner(inputs)[0], testing.run_reference(mod, inputs)[0], rtol=1e-5)


def test_foreign_cpu_is_refused_in_one_sentence():
    part = byoc.partition_for("dnnl", _dense())
    with pytest.raises(ByocError) as info:
        byoc.build(part, toolchain="aarch64-gcc")
    assert "target 'dnnl' builds only for x86_64" in str(info.value) and "aarch64" in str(info.value)
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    proc = subprocess.run([sys.executable, "-m", "SCons", "-Q", "-C", str(root), "target=dnnl", "toolchain=aarch64-gcc",
                           "model=mlp", "build_root=build/.refused"], capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0
    lines = [line for line in proc.stderr.splitlines() if "byoc:" in line]
    assert len(lines) == 1 and "builds only for x86_64" in lines[0] and "toolchain 'aarch64-gcc'" in lines[0]


def test_missing_library_names_the_package():
    lib = SystemLibrary("libnothing", header="nothing_here.h", library="nothing_here", package="libnothing-dev")
    target = Target("needs_nothing")
    target.requires(lib)
    register_target(target)
    try:
        row = next(t for t in byoc.targets() if t.name == "needs_nothing")
    finally:
        unregister_target("needs_nothing")
    assert row.missing is not None and "apt-get install -y libnothing-dev" in row.missing
    assert target.libraries == ["nothing_here"]
