"""ccompiler: C source that calls a vendor C kernel library (TVM's CodegenC example), enabled by USE_CODEGENC.

This file is the op table: what the target takes and its composite patterns (the declaration module its
entry point names). The codegen is codegen.py (one C file per region, calls into the kernel library of
kernels/, described by kernels.py); build.py, the build side, sets it and the kernel sources, and byoc
imports it only when a build needs them.
"""
from functools import partial

from byoc_compiler.vendor import Target, all_of, float32_only, is_constant, is_op, partition_for, rank_at_most, wildcard

from .kernels import MAX_RANK

target = Target("ccompiler", flag="USE_CODEGENC", description="C source calling a vendor C kernel library")
# Generated C takes its workspace from the caller and the kernels allocate nothing: bare metal too.
target.runs_on("hosted", "freestanding")

ELEMENTWISE = ("add", "subtract", "multiply", "divide", "maximum", "minimum", "negative", "abs", "exp", "log",
               "sqrt", "tanh", "sigmoid", "nn.relu", "clip", "nn.leaky_relu", "nn.hard_sigmoid", "nn.hard_swish")
NN = ("nn.dense", "nn.matmul", "nn.bias_add", "nn.conv2d", "nn.max_pool2d", "nn.avg_pool2d",
      "nn.global_avg_pool2d", "nn.batch_norm")
SHAPE = ("reshape", "nn.batch_flatten", "transpose", "concatenate")
TRANSFORMER = ("nn.batch_matmul", "nn.gelu")
# Not taken, on purpose: nn.lrn (it stays on the host); softmax and layer norm only on the last axis;
# cubic and antialiased resize.

# The kernel library computes float32 tensors of at most CK_MAX_RANK dims; anything else stays on the host.
target.supports(*ELEMENTWISE, *NN, *SHAPE, *TRANSFORMER, predicate=all_of(float32_only, rank_at_most(MAX_RANK)))


def _last_axis(call) -> str | None:
    ndim = call.args[0].checked_type.ndim
    if call.attrs["axis"] % max(ndim, 1) != ndim - 1:
        return "the kernel library normalizes along the last axis only"
    return None


def _layer_norm_vectors(call) -> str | None:
    n = call.args[0].checked_type.shape[-1]
    if any(tuple(a.checked_type.shape) != (n,) for a in call.args[1:]):
        return "gamma and beta must be vectors of the last axis' length"
    return None


target.supports("nn.softmax", predicate=all_of(float32_only, _last_axis))
target.supports("nn.layer_norm", predicate=all_of(float32_only, _last_axis, _layer_norm_vectors))

# Reductions over any set of axes (none, some, all), keepdims either way.
REDUCTIONS = ("sum", "mean", "max", "min", "prod")
target.supports(*REDUCTIONS, predicate=all_of(float32_only, rank_at_most(MAX_RANK)))


def _resize_in_library(call) -> str | None:
    """ck_resize: nearest (every nearest_mode) and linear, every coordinate mode, rank 1 to MAX_RANK."""
    a = call.attrs
    if a["method"] not in ("nearest", "linear"):
        return f"the kernel library resamples nearest and linear only, not {a['method']}"
    if a["method"] == "linear" and (a["antialias"] or a["exclude_outside"]):
        return "antialias and exclude_outside are not in the kernel library's linear resize"
    if call.args[0].checked_type.ndim == 0:
        return "a scalar has nothing to resize"
    return None


# (nearest ignores antialias; exclude_outside changes no nearest pick, so it is taken there)
target.supports("image.resize", predicate=all_of(float32_only, rank_at_most(MAX_RANK), _resize_in_library))


def _relu6(call) -> str | None:
    """clip(x, 0, 6) is the kernel library's CK_ACT_RELU6; other bounds stay a separate clip."""
    if call.attrs["a_min"] != 0.0 or call.attrs["a_max"] != 6.0:
        return "clip bounds are not (0, 6)"
    return float32_only(call)


# The float fusions, one kernel call each: composite name -> the op chain of its body, producer first (conv2d
# or dense of a constant weight, bias_add of a constant bias, at most one activation). The patterns below are
# built from these chains and fusions.py derives the codegen's table from the declared patterns.
# Longest first: MergeComposite tries patterns in this order and earlier ones win.
FUSED_CHAINS = {
    "conv2d_bias_relu": ("nn.conv2d", "nn.bias_add", "nn.relu"),
    "conv2d_bias_relu6": ("nn.conv2d", "nn.bias_add", "clip"),
    "conv2d_bias": ("nn.conv2d", "nn.bias_add"),
    "dense_bias_relu": ("nn.dense", "nn.bias_add", "nn.relu"),
    "dense_bias": ("nn.dense", "nn.bias_add"),
}


def _chain_pattern(chain):
    producer, bias_add, *activations = chain
    pattern = is_op(bias_add)(is_op(producer)(wildcard(), is_constant()), is_constant())
    for op in activations:
        pattern = is_op(op)(pattern)
    return pattern


for _name, _chain in FUSED_CHAINS.items():
    target.pattern(_name, _chain_pattern(_chain), check=_relu6 if _chain[-1] == "clip" else float32_only)

# The int8/uint8 ops and qnn chains (rules_qnn.py).
from . import rules_qnn  # noqa: E402

rules_qnn.declare(target)

# TVM's spelling, for readers coming from `tvm.relay.op.contrib.ccompiler`: partition for this target alone.
partition_for_ccompiler = partial(partition_for, target)

target.build_side(__name__ + ".build")
