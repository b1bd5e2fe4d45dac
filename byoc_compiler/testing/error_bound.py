"""The float64 reference of a model, with a per-element estimate of the error a correct float32 build has.

`reference_with_errors(mod, inputs)` runs the unpartitioned model in float64 (the op references keep
float64 inputs in float64) and, beside every value r, SAMPLES simulated float32 computations of it
(Monte Carlo arithmetic: the float64 computation with float32's rounding errors injected at random,
seeded, so the estimate is the same on every run). Each sample carries a signed error that flows
through the graph as a real error does — each op is evaluated on r + e and r subtracted, so
cancellations, ReLU cut-offs and the network's own gain act on it — and every op adds its own
rounding, in units of u = 2**-24 (float32's unit roundoff):

* an op that sums n products (dense, matmul, conv2d: n = K, or C/groups * kh * kw) and the averaging
  pools (n = window) add a Gaussian error of standard deviation u * sqrt(n / 3) * sqrt(sum p_i^2 +
  (sum p_i)^2) for the products p_i: the rounding of one-by-one summation (the error of n roundings
  grows like sqrt(n) times the partial sums); blocked or pairwise sums are more accurate than this;
* softmax adds u * (4 + sqrt(n / 3)) * |y| for its exp, n-term sum and division;
* every other op adds k * u * magnitude, uniform in [-1, 1], with k from ROUNDINGS (0 for exact ops:
  max, relu, reshape, ...; 1 for one correctly rounded operation; 4 for libm functions within a few
  ulp; GENEROUS ops: UNKNOWN_ROUNDING); magnitude is |result|, or |a| + |b| where operands can cancel
  (add, bias_add, batch_norm).

Each op's rounding rule and magnitude-shadow rule are its "error_model" attribute (ErrorModel, op/attrs.py),
registered at the end of this file.

The error estimate of an output element is the root mean square of its SAMPLES errors. Depth and
accumulation length need no separate factor: a deep model's estimate is larger because every layer
adds its rounding and carries the earlier layers' errors through its weights. Inputs and constants are
exact, so data movement of exact values keeps the estimate 0 and integer values are exact: their
comparison is exact. testing/tolerance.py turns the estimate into the check's allowance.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..ir.expr import Call, Constant, Function, GlobalVar, Op, Tuple, TupleGetItem, Var
from ..ir.module import IRModule
from ..ir.types import TensorType
from ..ir.visitor import post_order
from ..op.attrs import get_op_attr, register_op_attr
from ..op.registry import get_op_def
from ..transform.infer_type import infer_type
from .reference import _bind_inputs, release_operands, run_reference, use_counts
from .shadow import absolute, magnitude, shadow_rule

U = 2.0 ** -24      # unit roundoff of float32
SAMPLES = 4         # simulated float32 computations whose spread is the error estimate

# Own rounding of an op, in units of u * magnitude (see _magnitude). Missing ops get UNKNOWN_ROUNDING.
ROUNDINGS: dict[str, float] = {
    **dict.fromkeys(("negative", "abs", "nn.relu", "maximum", "minimum", "clip", "nn.max_pool2d", "reshape",
                     "transpose", "concatenate", "split", "squeeze", "expand_dims", "nn.batch_flatten", "take",
                     "nn.pad", "nn.dropout"), 0.0),
    **dict.fromkeys(("add", "subtract", "multiply", "divide", "sqrt", "nn.bias_add", "nn.leaky_relu"), 1.0),
    **dict.fromkeys(("exp", "log", "tanh", "sigmoid"), 4.0),
    "nn.batch_norm": 4.0,
    "nn.lrn": 16.0,
}
UNKNOWN_ROUNDING = 8.0      # see _unknown_rounding; an op that sums n products needs an _ACCUMULATIONS rule
# Ops with no precise model yet: UNKNOWN_ROUNDING ulps (_unknown_rounding). Integer results carry no error
# whatever the model, so the qnn ops and comparisons lose nothing by it; the float ones are over-allowed.
GENEROUS = ("power", "erf", "nn.hard_swish", "nn.hard_sigmoid", "nn.gelu", "equal", "less", "greater",
            "less_equal", "greater_equal", "logical_and", "logical_or", "logical_xor", "logical_not", "where",
            "sum", "mean", "max", "min", "prod", "argmax", "argmin", "strided_slice", "tile", "broadcast_to",
            "image.resize", "nn.batch_matmul", "nn.layer_norm", "qnn.quantize", "qnn.dequantize",
            "qnn.requantize", "qnn.conv2d", "qnn.dense", "qnn.matmul", "qnn.add", "qnn.mul", "qnn.concatenate",
            "qnn.avg_pool2d", "qnn.softmax", "qnn.subtract", "qnn.mean", "qnn.sum", "qnn.l2_normalize")


@dataclass(frozen=True)
class ErrorModel:
    """An op's "error_model" attribute: `rounding(ref, args, errors, attrs, rng) -> (value, error samples)` adds
    the op's own float32 rounding to the samples it carries; `shadow` is its magnitude-shadow rule
    (shadow.py)."""
    rounding: Callable
    shadow: Callable


@dataclass
class Bounded:
    """One model output: the float64 reference (ints: exact), the error estimate, the output's dtype, and
    the magnitude shadow (testing/shadow.py; None: not known, the output-wide floor applies alone)."""
    value: np.ndarray
    error: np.ndarray
    dtype: np.dtype
    magnitude: np.ndarray | None = None


def _is_float(a) -> bool:
    # numpy scalars too: arithmetic on a 0-d array (a scalar output) returns one
    return isinstance(a, (np.ndarray, np.floating)) and a.dtype.kind == "f"


def _zeros_like(value):
    if isinstance(value, tuple):
        return tuple(_zeros_like(v) for v in value)
    return np.zeros(np.shape(value), np.float64)


def _to64(value):
    if isinstance(value, tuple):
        return tuple(_to64(v) for v in value)
    value = np.asarray(value)
    return value.astype(np.float64) if value.dtype.kind == "f" else value


def _inexact(errors) -> bool:
    if isinstance(errors, tuple):
        return any(_inexact(e) for e in errors)
    return bool(np.any(errors != 0))


class _Evaluator:
    """Runs a function on (value, [error samples]) pairs; `rng` draws the simulated roundings."""

    def __init__(self, mod: IRModule, rng: np.random.Generator):
        self.mod = mod
        self.rng = rng

    def run(self, func: Function, args: list, errors: list, mags: list, record: dict | None = None):
        """`record`, when given, receives (value, error samples, shadow) of every node of `func` by id.
        Without it a node's value, samples and shadow are dropped once its last user ran: a deep model
        holds only what is live (six float64 copies of every intermediate would not fit in memory for
        ResNet-50)."""
        vals: dict[int, Any] = {id(p): a for p, a in zip(func.params, args)}
        errs: dict[int, Any] = {id(p): e for p, e in zip(func.params, errors)}
        shad: dict[int, Any] = {id(p): m for p, m in zip(func.params, mags)}
        order = post_order(func.body)
        users = use_counts(order) if record is None else None
        for node in order:
            if id(node) in vals:
                continue
            cls = type(node)
            if cls is Call:
                vals[id(node)], errs[id(node)], shad[id(node)] = self.call(
                    node, [vals[id(a)] for a in node.args], [errs[id(a)] for a in node.args],
                    [shad[id(a)] for a in node.args])
            elif cls is Constant:
                vals[id(node)] = _to64(node.data)
                errs[id(node)] = [_zeros_like(node.data)] * SAMPLES
                shad[id(node)] = absolute(vals[id(node)])
            elif cls is Tuple:
                vals[id(node)] = tuple(vals[id(f)] for f in node.fields)
                errs[id(node)] = [tuple(errs[id(f)][k] for f in node.fields) for k in range(SAMPLES)]
                shad[id(node)] = tuple(shad[id(f)] for f in node.fields)
            elif cls is TupleGetItem:
                vals[id(node)] = vals[id(node.tuple_value)][node.index]
                errs[id(node)] = [e[node.index] for e in errs[id(node.tuple_value)]]
                shad[id(node)] = shad[id(node.tuple_value)][node.index]
            elif cls is Function:
                continue
            elif cls is Var:
                raise ValueError(f"%{node.name_hint} is free: it is not a parameter")
            else:
                raise ValueError(f"cannot evaluate a {cls.__name__}")
            if users is not None:
                release_operands(node, users, (vals, errs, shad), keep=id(func.body))
        if record is not None:
            record.update({k: (v, errs[k], shad[k]) for k, v in vals.items() if k in errs})
        return vals[id(func.body)], errs[id(func.body)], shad[id(func.body)]

    def call(self, call: Call, args: list, errors: list, mags: list):
        target = call.op
        if isinstance(target, GlobalVar):
            return self.run(self.mod[target], args, errors, mags)
        if isinstance(target, Function):
            return self.run(target, args, errors, mags)
        if not isinstance(target, Op):
            raise ValueError(f"cannot call a {type(target).__name__}")
        name = target.name
        ref = get_op_def(name).ref
        # An op without a model gets the generous one: a new op is not a reason for correct builds to fail
        # (tests/test_op_attrs.py asks every op for one).
        model = get_op_attr(name, "error_model", None) or rounds(name, None)
        with np.errstate(all="ignore"):
            value, samples = model.rounding(ref, args, errors, call.attrs, self.rng)
        return value, samples, magnitude(model.shadow, ref, args, mags, call.attrs, value)


def _noise(rng, scale, gaussian: bool):
    """A simulated rounding: scale * (standard normal, or uniform in [-1, 1]) per element."""
    if isinstance(scale, tuple):
        return tuple(_noise(rng, s, gaussian) for s in scale)
    if not _is_float(scale):
        return np.zeros(np.shape(scale))
    draw = rng.standard_normal(scale.shape) if gaussian else rng.uniform(-1.0, 1.0, scale.shape)
    return np.nan_to_num(scale, nan=0.0) * draw


def _plus(a, b):
    if isinstance(a, tuple):
        return tuple(_plus(x, y) for x, y in zip(a, b))
    return a + b


def _deviation(out, base):
    """out - base for floats (a NaN where base is a number: infinite), zero for integers."""
    if isinstance(base, tuple):
        return tuple(_deviation(o, b) for o, b in zip(out, base))
    if not _is_float(base):
        return np.zeros(np.shape(base))
    d = out - base
    return np.where(np.isnan(d), np.where(np.isnan(base), 0.0, np.inf), d)


def _cast(ref, args, errors, attrs, rng):
    """float32 values are carried as float64: a cast to float32 keeps them (an int becomes a float:
    one rounding); a cast to an integer type truncates the float64 value, exactly."""
    x = args[0]
    if attrs.dtype != "float32":
        value = np.asarray(ref([x], attrs))
        return value, [np.zeros(value.shape)] * SAMPLES
    if x.dtype.kind == "f":
        return x, list(errors[0])
    value = x.astype(np.float64)
    return value, [_noise(rng, U * np.abs(value), False) for _ in range(SAMPLES)]


def _call(ref, args, attrs):
    out = ref(args, attrs)
    return tuple(np.asarray(v) for v in out) if isinstance(out, tuple) else np.asarray(out)


def _rounding(name: str, k: float | None):
    """The error model of an op that rounds once (k ulps of _magnitude; k None: _unknown_rounding's)."""
    def rule(ref, args, errors, attrs, rng):
        return _generic(name, k, ref, args, errors, attrs, rng)
    return rule


def _generic(name, k, ref, args, errors, attrs, rng):
    """The op on each perturbed sample, minus the op on the reference, plus the op's own rounding."""
    value = _call(ref, args, attrs)
    inexact = [i for i, e in enumerate(errors) if any(_inexact(s) for s in e)]
    if k is None:
        k = _unknown_rounding(name, args)
    scale = _scaled(_magnitude(name, ref, args, attrs, value), k * U) if k else None
    samples = []
    for j in range(SAMPLES):
        if inexact:
            shifted = list(args)
            for i in inexact:
                shifted[i] = _plus(args[i], errors[i][j])
            dev = _deviation(_call(ref, shifted, attrs), value)
        else:
            dev = _zeros_like(value)
        samples.append(_plus(dev, _noise(rng, scale, False)) if scale is not None else dev)
    return value, samples


def _unknown_rounding(name, args) -> float:
    """An op without a row: UNKNOWN_ROUNDING ulps, times sqrt(n) for an op of the `nn` family, which
    may sum along its input's last axis (n: that axis' length; layer norms, pools, ...). Generous on
    purpose: a new op is not a reason for correct builds to fail; give it a row to be precise."""
    if get_op_def(name).family != "nn" or not args or not np.ndim(args[0]):
        return UNKNOWN_ROUNDING
    return UNKNOWN_ROUNDING * float(np.sqrt(max(1, np.shape(args[0])[-1])))


def _scaled(magnitude, factor):
    if isinstance(magnitude, tuple):
        return tuple(_scaled(m, factor) for m in magnitude)
    return factor * np.abs(magnitude) if _is_float(magnitude) else magnitude


def _magnitude(name, ref, args, attrs, value):
    """What an op's own rounding scales with: |result|, or the operands' sizes where they can cancel."""
    if name in ("add", "subtract"):
        return np.abs(args[0]) + np.abs(args[1])
    if name in ("nn.bias_add", "nn.batch_norm"):
        # bias_add(|x|, |b|); batch_norm of |x| with mean -|mean| and |gamma|, |beta|: (|x| + |m|) |s| + |b|
        flipped = [np.abs(a) for a in args]
        if name == "nn.batch_norm":
            flipped[3] = -flipped[3]
            flipped[4] = args[4]
        return _call(ref, flipped, attrs)
    return value


# ---- accumulations -------------------------------------------------------------------------------

def _summation_scale(n: int, sum_of_squares, total):
    """Standard deviation of the rounding error of summing n terms p_i one by one in float32:
    u sqrt(sum_k S_k^2 / 3) over the partial sums S_k, about u sqrt(n / 3) sqrt(sum p_i^2 + S^2)
    (the first term for terms of random sign, the second for same-signed ones)."""
    return U * np.sqrt(n / 3.0) * np.sqrt(np.maximum(sum_of_squares, 0.0) + total * total)


def _bilinear(op_n):
    """dense, matmul, conv2d: value = f(x, w), linear in each; n products per output element."""
    def rule(ref, args, errors, attrs, rng):
        x, w = args[0], args[1]
        n = op_n(args, attrs)
        value = _call(ref, [x, w], attrs)
        scale = _summation_scale(n, _call(ref, [x * x, w * w], attrs), value)
        samples = []
        for ex, ew in zip(errors[0], errors[1]):
            e = _call(ref, [ex, w], attrs) if _inexact(ex) else 0.0
            if _inexact(ew):
                e = e + _call(ref, [x + ex, ew], attrs)
            samples.append(e + _noise(rng, scale, True))
        return value, samples
    return rule


def _dense_n(args, attrs):
    return args[0].shape[-1]


def _matmul_n(args, attrs):
    return args[0].shape[0] if attrs.transpose_a else args[0].shape[-1]


def _conv_n(args, attrs):
    return int(np.prod(args[1].shape[1:]))


def _pool_average(window_of):
    """avg_pool2d, global_avg_pool2d: the mean of n values (terms x_i / n, so sum p_i^2 = mean(x^2) / n)."""
    def rule(ref, args, errors, attrs, rng):
        x = args[0]
        n = window_of(x, attrs)
        value = _call(ref, [x], attrs)
        scale = _summation_scale(n, _call(ref, [x * x], attrs) / n, value) + U * np.abs(value)
        return value, [(_call(ref, [e], attrs) if _inexact(e) else 0.0) + _noise(rng, scale, True)
                       for e in errors[0]]
    return rule


def _softmax(ref, args, errors, attrs, rng):
    x = args[0]
    n = x.shape[attrs.axis]
    value = _call(ref, [x], attrs)
    scale = U * (4.0 + np.sqrt(n / 3.0)) * np.abs(value)      # exp, the n-term sum, the division
    return value, [(_deviation(_call(ref, [x + e], attrs), value) if _inexact(e) else 0.0)
                   + _noise(rng, scale, True) for e in errors[0]]


_ACCUMULATIONS = {
    "nn.dense": _bilinear(_dense_n),
    "nn.matmul": _bilinear(_matmul_n),
    "nn.conv2d": _bilinear(_conv_n),
    "nn.avg_pool2d": _pool_average(lambda x, attrs: int(np.prod(attrs.pool_size))),
    "nn.global_avg_pool2d": _pool_average(lambda x, attrs: int(x.shape[2] * x.shape[3])),
    "nn.softmax": _softmax,
}


def rounds(name: str, k: float | None) -> ErrorModel:
    """The error model of an op that rounds once, by k ulps of its result (of |a| + |b| for add and subtract;
    k None: UNKNOWN_ROUNDING's), with the op's shadow rule: what a new elementwise op registers."""
    return ErrorModel(_rounding(name, k), shadow_rule(name))


# Each op's "error_model" attribute (op/attrs.py): its rounding rule and its shadow rule.
for _name, _model in {**{n: rounds(n, k) for n, k in ROUNDINGS.items()},
                      **{n: ErrorModel(rule, shadow_rule(n)) for n, rule in _ACCUMULATIONS.items()},
                      "cast": ErrorModel(_cast, shadow_rule("cast")),
                      **{n: rounds(n, None) for n in GENEROUS}}.items():
    register_op_attr(_name, "error_model", _model)


def _flatten(value) -> list:
    if isinstance(value, tuple):
        return [v for item in value for v in _flatten(item)]
    return [value]


def _rounds_to_integers(func: Function) -> bool:
    """Does any call of `func` turn float values into integer ones?"""
    def is_float(ty) -> bool:
        return isinstance(ty, TensorType) and np.dtype(ty.dtype).kind == "f"

    for node in post_order(func.body):
        if isinstance(node, Call) and isinstance(node.checked_type, TensorType) \
                and np.dtype(node.checked_type.dtype).kind in "iub" \
                and any(is_float(getattr(a, "checked_type", None)) for a in node.args):
            return True
    return False


def _spread(samples) -> np.ndarray:
    """The estimate: the root mean square of the samples' errors."""
    with np.errstate(over="ignore", invalid="ignore"):
        return np.sqrt(np.mean([np.square(np.asarray(x, np.float64)) for x in samples], axis=0))


def _evaluate(mod, inputs, seed, record=None):
    if isinstance(mod, Function):
        mod = IRModule({"main": mod})
    mod = infer_type(mod)
    main = mod["main"]
    args = [_to64(a) for a in _bind_inputs(main, inputs)]
    result = _Evaluator(mod, np.random.default_rng(seed)).run(
        main, args, [[_zeros_like(a)] * SAMPLES for a in args], [absolute(a) for a in args], record)
    return mod, main, result


def reference_with_errors(mod: IRModule | Function, inputs: Mapping[str, Any] | Sequence[Any],
                          seed: int = 0) -> list[Bounded]:
    """The outputs of `mod["main"]` on `inputs` in float64, each with its error estimate (see above)."""
    mod, main, (values, samples, mags) = _evaluate(mod, inputs, seed)

    def tensor_types(ty) -> list:
        return [ty] if isinstance(ty, TensorType) else [t for f in ty.fields for t in tensor_types(f)]

    types = tensor_types(main.body.checked_type)
    values = _flatten(values)
    if _rounds_to_integers(main):
        # A float -> integer boundary (quantize, a cast to int): float64 can round a value to the other
        # integer than float32 does, so such models keep the float32 reference as the value compared
        # with (integers exactly, as before); the float outputs keep the error estimate.
        values = run_reference(mod, inputs)
    per_sample = [_flatten(sample) for sample in samples]
    out = []
    for i, (value, ty, mag) in enumerate(zip(values, types, _flatten(mags))):
        shape = np.shape(value)
        out.append(Bounded(np.asarray(value), np.broadcast_to(_spread([s[i] for s in per_sample]), shape).copy(),
                           np.dtype(ty.dtype), np.broadcast_to(np.asarray(mag, np.float64), shape).copy()))
    return out


def node_errors(mod: IRModule | Function, inputs: Mapping[str, Any] | Sequence[Any],
                seed: int = 0) -> tuple[Function, dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]]]:
    """Like reference_with_errors, for every tensor-valued node of main (by id) instead of the outputs only:
    (float64 value, error estimate, magnitude shadow). Returns the type-checked main whose nodes the ids
    refer to. Used by the per-step compare (debug/compare.py) so intermediate values are judged as the
    check judges outputs."""
    record: dict = {}
    _, main, _ = _evaluate(mod, inputs, seed, record)
    out = {}
    for key, (value, samples, mag) in record.items():
        if isinstance(value, tuple):
            continue
        shape = np.shape(value)
        out[key] = (np.asarray(value), np.broadcast_to(_spread(samples), shape).copy(),
                    np.broadcast_to(np.asarray(mag, np.float64), shape).copy())
    return main, out
