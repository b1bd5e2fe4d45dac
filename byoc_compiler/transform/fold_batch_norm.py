"""FoldBatchNorm: fold inference batch norm and per-channel scale/shift by constants into the conv2d or
dense before them.

    conv2d(x, W) [-> bias_add(b)] -> batch_norm(gamma, beta, mean, var)[0] [-> multiply(c)] [-> add(d)]
      ==>  conv2d(x, W * s) -> bias_add(t)      s, t per output channel (computed in float64)

A chain starts at an `nn.conv2d` (NCHW/OIHW) or `nn.dense` whose weight is a constant and extends
through ops that are an affine map per output channel with constant coefficients: `nn.bias_add`,
element 0 of `nn.batch_norm` (its mean/var outputs unused), and `multiply`/`add`/`subtract` by a
constant that broadcasts along the channel axis only. Every value inside the chain must have no other
consumer, otherwise the unscaled value is still needed and nothing folds (the conv's output is not
duplicated). Grouped and depthwise convolutions fold alike: their weight's axis 0 is the output
channel. A chain that is just one bias_add is left as it is.

Why: a batch norm after every convolution is a whole pass over the activations at run time; folded,
it is free, and the conv + bias_add (+ relu) that remains is what targets' fused composites match,
so partition_for runs this before MergeComposite. The result differs from the unfolded model by
float32 rounding of the folded weights only.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir.analysis import use_counts
from ..ir.expr import Call, Constant, Expr, Function, Op, TupleGetItem, carry_meta
from ..ir.module import IRModule
from ..ir.types import TensorType
from ..ir.visitor import ExprMutator, graph_order
from ..op.nn import bias_add
from .named_pass import NamedPass, rewrite_bodies, typed


@dataclass
class _Chain:
    """node == s * anchor_without_bias + t along `axis` (s, t float64 vectors over the channels)."""
    anchor: Call
    axis: int
    scale: np.ndarray
    shift: np.ndarray
    folded: tuple[str, ...] = ()   # the ops folded so far, in order


def _tensor_type(expr: Expr) -> TensorType | None:
    ty = expr.checked_type
    return ty if isinstance(ty, TensorType) else None


def _anchor(call: Call) -> _Chain | None:
    """A chain of length 0 at a conv2d/dense with a constant float weight."""
    name = call.op.name
    weight = call.args[1] if len(call.args) > 1 else None
    out = _tensor_type(call)
    if not isinstance(weight, Constant) or out is None or weight.data.dtype.kind != "f":
        return None
    if name == "nn.conv2d":
        attrs = call.attrs
        if attrs["data_layout"] != "NCHW" or attrs["kernel_layout"] != "OIHW" or attrs.get("out_dtype", "") not in (
                "", out.dtype):
            return None
        axis = 1
    elif name == "nn.dense":
        if out.ndim < 1:
            return None
        axis = out.ndim - 1
    else:
        return None
    channels = int(out.shape[axis])
    return _Chain(call, axis, np.ones(channels), np.zeros(channels))


def _channel_vector(const: Expr, chain: _Chain, out: TensorType) -> np.ndarray | None:
    """The constant as a per-channel float64 vector, when it broadcasts along the chain's axis only."""
    if not isinstance(const, Constant) or const.data.dtype.kind != "f" or const.data.ndim > out.ndim:
        return None
    shape = (1,) * (out.ndim - const.data.ndim) + tuple(const.data.shape)
    channels = out.shape[chain.axis]
    if any(d != 1 for k, d in enumerate(shape) if k != chain.axis) or shape[chain.axis] not in (1, channels):
        return None
    return np.broadcast_to(const.data.astype(np.float64).reshape(-1), (channels,)).copy()


def _extend(node: Expr, chains: dict[int, _Chain], uses: dict[int, int]) -> tuple[Expr, _Chain] | None:
    """(the chain's previous node, the chain through `node`) when `node` extends a chain."""
    if isinstance(node, TupleGetItem):
        bn = node.tuple_value
        if node.index != 0 or not isinstance(bn, Call) or not isinstance(bn.op, Op) or \
                bn.op.name != "nn.batch_norm" or uses.get(id(bn)) != 1:
            return None
        prev = bn.args[0]
        chain = chains.get(id(prev))
        if chain is None or uses.get(id(prev)) != 1 or not all(isinstance(a, Constant) for a in bn.args[1:]):
            return None
        out = _tensor_type(prev)
        if bn.attrs["axis"] % out.ndim != chain.axis:
            return None
        gamma, beta, mean, var = (a.data.astype(np.float64) for a in bn.args[1:])
        k = 1.0 / np.sqrt(var + float(bn.attrs["epsilon"]))
        if bn.attrs["scale"]:
            k = k * gamma
        shift = (chain.shift - mean) * k + (beta if bn.attrs["center"] else 0.0)
        return prev, _Chain(chain.anchor, chain.axis, chain.scale * k, shift, chain.folded + ("nn.batch_norm",))
    if not isinstance(node, Call) or not isinstance(node.op, Op):
        return None
    name = node.op.name
    if name == "nn.bias_add":
        prev, const = node.args
    elif name in ("multiply", "add") and node.args[0] is not node.args[1]:
        prev, const = node.args if id(node.args[0]) in chains else node.args[::-1]
    elif name == "subtract":
        prev, const = node.args
    else:
        return None
    chain = chains.get(id(prev))
    out = _tensor_type(prev)
    if chain is None or uses.get(id(prev)) != 1 or out is None or _tensor_type(node) != out:
        return None
    if name == "nn.bias_add" and node.attrs["axis"] % out.ndim != chain.axis:
        return None
    if name == "nn.bias_add":   # a vector along the axis (InferType checked its length), not numpy broadcasting
        vec = const.data.astype(np.float64) if isinstance(const, Constant) else None
    else:
        vec = _channel_vector(const, chain, out)
    if vec is None:
        return None
    scale, shift = chain.scale, chain.shift
    if name == "multiply":
        scale, shift = scale * vec, shift * vec
    elif name == "subtract":
        shift = shift - vec
    else:
        shift = shift + vec
    return prev, _Chain(chain.anchor, chain.axis, scale, shift, chain.folded + (name,))


def _use_counts(body: Expr, order: list[Expr]) -> dict[int, int]:
    uses = use_counts(order)
    uses[id(body)] = uses.get(id(body), 0) + 1      # the result is used by the function's caller
    return uses


_ANCHORS = ("nn.conv2d", "nn.dense")
_STEPS = ("nn.bias_add", "multiply", "add", "subtract")


def _may_extend(node: Expr, kind: type, chains: dict[int, _Chain]) -> bool:
    """Whether `node` reads the end of a chain the way _extend looks at (a quick look at every node)."""
    if kind is TupleGetItem:
        bn = node.tuple_value
        return type(bn) is Call and bool(bn.args) and id(bn.args[0]) in chains
    return kind is Call and type(node.op) is Op and node.op.name in _STEPS and \
        not chains.keys().isdisjoint(map(id, node.args))


class _UsedOnce:
    """use counts as if every value had one user: a walk with them finds every chain the real counts allow
    (and longer ones), so when it finds none worth folding there is none."""

    @staticmethod
    def get(key, default=None) -> int:
        return 1


def _chains(body: Expr) -> dict[int, _Chain]:
    """The maximal chains worth folding, keyed by the id of their last node."""
    order = graph_order(body)
    with np.errstate(all="ignore"):      # its arithmetic on chains the real walk stops is not reported
        worth = _walk(order, _UsedOnce())
    if not worth:                        # most graphs: spares counting the uses of every node
        return {}
    return _walk(order, _use_counts(body, order))


def _walk(order: list[Expr], uses) -> dict[int, _Chain]:
    chains: dict[int, _Chain] = {}
    extended: set[int] = set()
    for node in order:
        kind = type(node)
        if kind is Call:        # (every node of the graph: _may_extend's look at a call without calling it)
            op = node.op
            if type(op) is not Op:
                continue
            if op.name in _ANCHORS:
                start = _anchor(node)
                if start is not None:
                    chains[id(node)] = start
                continue
            if op.name not in _STEPS or not chains or chains.keys().isdisjoint(map(id, node.args)):
                continue
        elif kind is not TupleGetItem or not chains or not _may_extend(node, kind, chains):
            continue
        step = _extend(node, chains, uses)
        if step is not None:
            prev, chains[id(node)] = step
            extended.add(id(prev))
    return {k: c for k, c in chains.items()
            if k not in extended and c.folded and c.folded != ("nn.bias_add",)}


class _Folder(ExprMutator):
    into_functions = False  # composite bodies and regions belong to their target

    def __init__(self, chains: dict[int, _Chain]):
        super().__init__()
        self.chains = chains

    def _fold(self, original: Expr, rebuilt: Expr) -> Expr:
        chain = self.chains.get(id(original))
        if chain is None:
            return rebuilt
        anchor = chain.anchor
        weight = anchor.args[1].data
        # weight axis 0 is the output channel of both conv2d (OIHW) and dense ([units, K])
        factor = chain.scale.reshape((-1,) + (1,) * (weight.ndim - 1))
        new_weight = Constant((weight.astype(np.float64) * factor).astype(weight.dtype))
        data = self.lookup(anchor.args[0])
        out = carry_meta(anchor, Call(anchor.op, (data, new_weight), anchor.attrs, anchor.span))
        if any(op != "multiply" for op in chain.folded):
            out = bias_add(out, Constant(chain.shift.astype(weight.dtype)), axis=chain.axis)
            out.span = original.span
        return carry_meta(original, out)

    def rewrite_call(self, original: Call, rebuilt: Expr) -> Expr:
        return self._fold(original, rebuilt)

    def rewrite_tuple_getitem(self, original: TupleGetItem, rebuilt: Expr) -> Expr:
        return self._fold(original, rebuilt)


def fold_batch_norm(mod: IRModule) -> IRModule:
    def rewrite(func: Function) -> Expr | None:
        chains = {} if "Composite" in func.attrs else _chains(func.body)
        return _Folder(chains).visit(func.body) if chains else None

    return rewrite_bodies(typed(mod), rewrite)


def FoldBatchNorm() -> NamedPass:  # noqa: N802 - TVM's spelling
    return NamedPass("FoldBatchNorm", fold_batch_norm)
