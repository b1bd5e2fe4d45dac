"""Host fusion: the int8 chains of a quantized model as one host step each, never an int32 or float32 tensor.

A quantized model's host part is chains like `qnn.requantize(add(qnn.conv2d(x, w), bias))` (the int32
accumulator, then the int32 sum, both as large as the output in int8 times four) and a QDQ residual add
`qnn.quantize(relu(add(qnn.dequantize(a), qnn.dequantize(b))))` (two float32 tensors). Computed op by op,
those wide tensors are what the arena holds: on a microcontroller several times the int8 activations.
This pass wraps each such chain of main into a call of a composite function (`Composite="host.<name>"`),
which lowering keeps as one host step and host_kernels/qnn_fused.py computes element by element with the
unfused kernels' own arithmetic (so the bytes do not change). Only chains whose inner values have no other
user are taken; anything else stays op by op.
"""
from __future__ import annotations

from ..ir.expr import Call, Constant, Function, Op, Tuple, TupleGetItem, Var
from ..ir.module import IRModule
from ..ir.types import TensorType
from ..ir.visitor import ExprMutator, post_order

PREFIX = "host."
CONV = "host.qnn_conv2d_requantize"
DENSE = "host.qnn_dense_requantize"
QDQ_ADD = "host.qdq_add"
_FIXED = ("float32", "fixed_point")      # the requantize roundings the fused kernels share with the op's kernel


def _is(expr, name: str) -> bool:
    return isinstance(expr, Call) and isinstance(expr.op, Op) and expr.op.name == name


def is_host_composite(func) -> bool:
    return isinstance(func, Function) and str(func.attrs.get("Composite", "")).startswith(PREFIX)


def _use_counts(body) -> dict[int, int]:
    uses: dict[int, int] = {id(body): 1}        # main's result is a use
    for node in post_order(body):
        kids = node.args if isinstance(node, Call) else node.fields if isinstance(node, Tuple) else \
            (node.tuple_value,) if isinstance(node, TupleGetItem) else ()
        for kid in kids:
            uses[id(kid)] = uses.get(id(kid), 0) + 1
    return uses


def _bias_along(bias, out: TensorType, axis: int) -> bool:
    """An int32 constant varying at most along the output's `axis` (numpy broadcasting)."""
    if not isinstance(bias, Constant) or str(bias.data.dtype) != "int32" or bias.data.ndim > len(out.shape):
        return False
    shape = (1,) * (len(out.shape) - bias.data.ndim) + tuple(bias.data.shape)
    return all(d == 1 or (k == axis and d == out.shape[axis]) for k, d in enumerate(shape))


def _gemm_chain(req, uses) -> tuple[str, list] | None:
    """(composite, [data, weight, bias?]) of requantize(add?(qnn.conv2d | qnn.dense, bias)), else None."""
    if not _is(req, "qnn.requantize") or req.attrs.rounding not in _FIXED:
        return None
    acc, bias = req.args[0], None
    if _is(acc, "add") and uses.get(id(acc)) == 1:
        acc, bias = acc.args
    name = CONV if _is(acc, "qnn.conv2d") else DENSE if _is(acc, "qnn.dense") else None
    if name is None or uses.get(id(acc)) != 1:
        return None
    out = acc.checked_type
    axis = 1 if name == CONV else len(out.shape) - 1
    per_channel = max(len(req.attrs.input_scale), len(req.attrs.output_scale), len(req.attrs.input_zero_point),
                      len(req.attrs.output_zero_point)) > 1
    if per_channel and req.attrs.axis % len(out.shape) != axis:
        return None
    if bias is not None and not _bias_along(bias, out, axis):
        return None
    return name, [*acc.args] + ([bias] if bias is not None else [])


def _qdq_add_chain(quant, uses) -> tuple[str, list] | None:
    """(composite, [a, b]) of quantize(relu?(add(dequantize(a), dequantize(b)))), per tensor, same shapes."""
    if not _is(quant, "qnn.quantize") or len(quant.attrs.scale) != 1 or len(quant.attrs.zero_point) != 1:
        return None
    x = quant.args[0]
    if _is(x, "nn.relu") and uses.get(id(x)) == 1:
        x = x.args[0]
    if not _is(x, "add") or uses.get(id(x)) != 1 or x.checked_type.dtype != "float32":
        return None
    for dq in x.args:
        if not (_is(dq, "qnn.dequantize") and uses.get(id(dq)) == 1 and len(dq.attrs.scale) == 1
                and len(dq.attrs.zero_point) == 1 and tuple(dq.checked_type.shape) == tuple(x.checked_type.shape)):
            return None
    return QDQ_ADD, [dq.args[0] for dq in x.args]


def _composite(name: str, root: Call, inputs: list, args: list) -> Call:
    """Call(Function(params, root's chain over them, Composite=name), args); `inputs` are the chain's leaves
    in the original graph, `args` their rebuilt counterparts."""
    params = {}
    for k, leaf in enumerate(inputs):
        params[id(leaf)] = Var(f"FunctionVar_{k}", leaf.checked_type)
        params[id(leaf)].checked_type = leaf.checked_type


    def copy(node):          # a chain is a few calls deep: recursion stops at its leaves
        if id(node) in params:
            return params[id(node)]
        new = Call(node.op, [copy(a) for a in node.args], node.attrs, node.span)
        new.checked_type = node.checked_type
        return new

    func = Function([params[id(leaf)] for leaf in inputs], copy(root), root.checked_type, {"Composite": name})
    call = Call(func, args)
    call.checked_type = root.checked_type
    return call


class _Fuse(ExprMutator):
    into_functions = False

    def __init__(self, chains: dict[int, tuple[str, list]]):
        super().__init__()
        self.chains = chains

    def rewrite_call(self, original: Call, rebuilt: Call):
        found = self.chains.get(id(original))
        if found is None:
            return rebuilt
        name, inputs = found
        return _composite(name, original, inputs, [self.visit(leaf) for leaf in inputs])


def fuse_host_chains(mod: IRModule) -> tuple[IRModule, bool]:
    """main with its quantized chains as host composites (typed module in); True if anything changed."""
    main = mod["main"]
    uses = _use_counts(main.body)
    chains = {}
    for node in post_order(main.body):
        found = _gemm_chain(node, uses) or _qdq_add_chain(node, uses)
        if found is not None:
            chains[id(node)] = found
    if not chains:
        return mod, False
    body = _Fuse(chains).visit(main.body)
    return mod.with_function("main", Function(main.params, body, main.ret_type, main.attrs, main.span)), True
