"""The dnnl codegen: one region (external function) -> one JSON graph (FORMAT.md), constants bound by name.

    artifact = dnnl_codegen(func, "tvmgen_default_dnnl_main_0")
    print(artifact.text)        # the JSON graph, as `lib.get_source("dnnl")` shows it
    artifact.constants          # {"tvmgen_default_dnnl_main_0_const0": ndarray, ...}

Nodes are numbered in topological order: the region's parameters first (`input`), then
constants (`const`, data not in the text) and op calls (`kernel`) as the walk meets them.
A composite call (patterns.py) is one kernel whose `post_ops` name what oneDNN fuses.
`TupleGetItem(batch_norm(...), 0)` is the batch_norm node itself (inference uses only the
normalized value). The runtime (runtime/) re-checks everything; this writer only refuses what
the op table should have kept out of a region.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from byoc_compiler.vendor import (BlobArtifact, ByocError, Call, Constant, Function, Op, TensorType, Tuple, TupleGetItem,
                                  Var, post_order, runtime_source_dir)

from .fold import fold_shuffles
from .ops import MAX_NDIM
from .patterns import shuffle_groups

RUNTIME_DIR = Path(__file__).resolve().parent / "runtime"
# The runtime's own files plus the core runtime's strict JSON reader (json.c, json.h), shared with the
# graph executor: the build compiles a file once even when two parts of a model list it.
RUNTIME_SOURCES = (*(RUNTIME_DIR / name for name in ("bd_parse.c", "bd_build.c", "bd_plan.c", "bd_pool.c", "bd_module.c")),
                   Path(runtime_source_dir()) / "json.c")
INCLUDE_DIRS = (RUNTIME_DIR, Path(runtime_source_dir()))
KIND = "dnnl"
FORMAT = "byoc-dnnl"
VERSION = 1


def _ints(values) -> list[int]:
    return [int(v) for v in values]


def _pool(a) -> dict:
    return {"pool_size": _ints(a.pool_size), "strides": _ints(a.strides), "dilation": _ints(a.dilation),
            "padding": _ints(a.padding), "ceil_mode": int(bool(a.ceil_mode))}


def _conv(a) -> dict:
    return {"strides": _ints(a.strides), "padding": _ints(a.padding), "dilation": _ints(a.dilation),
            "groups": int(a.groups), "data_layout": a.data_layout, "kernel_layout": a.kernel_layout}


# Relay op -> the attributes its kernel node carries (all of them, always: the runtime needs no defaults).
ATTRS = {
    "nn.conv2d": _conv,
    "nn.dense": lambda a: {},
    "nn.matmul": lambda a: {"transpose_a": int(bool(a.transpose_a)), "transpose_b": int(bool(a.transpose_b))},
    "nn.relu": lambda a: {},
    "clip": lambda a: {"a_min": float(a.a_min), "a_max": float(a.a_max)},
    "sigmoid": lambda a: {},
    "tanh": lambda a: {},
    "nn.leaky_relu": lambda a: {"alpha": float(a.alpha)},
    "exp": lambda a: {},
    "sqrt": lambda a: {},
    "add": lambda a: {},
    "multiply": lambda a: {},
    "nn.batch_norm": lambda a: {"epsilon": float(a.epsilon), "center": int(bool(a.center)),
                                "scale": int(bool(a.scale))},
    "nn.max_pool2d": _pool,
    "nn.avg_pool2d": lambda a: {**_pool(a), "count_include_pad": int(bool(a.count_include_pad))},
    "nn.global_avg_pool2d": lambda a: {},
    "concatenate": lambda a: {"axis": int(a.axis)},
    "nn.softmax": lambda a: {"axis": int(a.axis)},
    "nn.lrn": lambda a: {"size": int(a.size), "bias": float(a.bias), "alpha": float(a.alpha), "beta": float(a.beta)},
    "reshape": lambda a: {},
    "nn.batch_flatten": lambda a: {},
}
# Ops with a fused form: the anchor's attributes plus bias and post_ops.
FUSABLE = ("nn.conv2d", "nn.dense")


def _tensor_type(ty, what: str) -> TensorType:
    if not isinstance(ty, TensorType):
        raise ByocError(f"{what} has type {ty}; dnnl values are single tensors")
    if ty.dtype != "float32":
        raise ByocError(f"{what} has dtype {ty.dtype}; the dnnl target computes float32")
    if not 1 <= ty.ndim <= MAX_NDIM or any(d < 1 for d in ty.shape):
        raise ByocError(f"{what} has shape {tuple(ty.shape)}; dnnl takes 1 to {MAX_NDIM} dims, each >= 1")
    return ty


def _composite_parts(func: Function, args) -> tuple[Call, Call, Call | None, Call | None, dict]:
    """(anchor conv2d/dense, its bias_add, the residual add or None, the final relu/clip or None,
    param -> argument) of a composite."""
    bound = {id(p): a for p, a in zip(func.params, args)}
    node, relu, add = func.body, None, None
    if isinstance(node, Call) and isinstance(node.op, Op) and node.op.name in ("nn.relu", "clip"):
        relu, node = node, node.args[0]
    if isinstance(node, Call) and isinstance(node.op, Op) and node.op.name == "add":
        add = node
        node = next((a for a in node.args if isinstance(a, Call) and isinstance(a.op, Op)
                     and a.op.name == "nn.bias_add"), None)
    if not (isinstance(node, Call) and isinstance(node.op, Op) and node.op.name == "nn.bias_add"):
        raise ByocError(f"composite {func.attrs.get('Composite')} is not a conv2d/dense + bias chain")
    anchor = node.args[0]
    if not (isinstance(anchor, Call) and isinstance(anchor.op, Op) and anchor.op.name in FUSABLE):
        raise ByocError(f"composite {func.attrs.get('Composite')} has no conv2d or dense")
    return anchor, node, add, relu, bound


class _Writer:
    def __init__(self, symbol: str):
        self.symbol = symbol
        self.nodes: list[dict] = []
        self.ids: dict[int, int] = {}
        self.constants: dict[str, np.ndarray] = {}

    def add(self, node: dict, expr=None) -> int:
        nid = len(self.nodes)
        self.nodes.append({"id": nid, **node})
        if expr is not None:
            self.ids[id(expr)] = nid
        return nid

    def ref(self, expr, bound=None) -> int:
        """The node id of an argument (through a composite's parameter binding)."""
        if bound is not None and id(expr) in bound:
            expr = bound[id(expr)]
        if id(expr) not in self.ids:
            raise ByocError(f"an argument is a {type(expr).__name__} the dnnl graph does not hold")
        return self.ids[id(expr)]

    def const(self, c: Constant) -> None:
        ty = _tensor_type(c.tensor_type, "a constant")
        name = f"{self.symbol}_const{len(self.constants)}"
        self.constants[name] = np.ascontiguousarray(c.data, dtype=np.float32)
        self.add({"op": "const", "name": name, "shape": _ints(ty.shape), "dtype": ty.dtype}, c)

    def kernel(self, call: Call) -> None:
        name = call.op.name
        if name not in ATTRS:
            raise ByocError(f"the dnnl graph has no op {name}; it takes: {', '.join(ATTRS)}")
        if name == "concatenate":
            fields = call.args[0].fields if isinstance(call.args[0], Tuple) else None
            if fields is None:
                raise ByocError("concatenate of a value that is not a tuple literal")
            inputs = [self.ref(f) for f in fields]
        elif name == "nn.batch_norm":
            inputs = [self.ref(a) for a in call.args]
            ty = _tensor_type(call.checked_type.fields[0], "the result of nn.batch_norm")
            self.add({"op": "kernel", "name": name, "inputs": inputs, "shape": _ints(ty.shape), "dtype": ty.dtype,
                      "attrs": ATTRS[name](call.attrs)}, call)
            return
        else:
            inputs = [self.ref(a) for a in call.args]
        attrs = ATTRS[name](call.attrs)
        if name in FUSABLE:
            attrs.update({"bias": 0, "post_ops": []})
        self._emit(name, inputs, call, attrs)

    def composite(self, call: Call) -> None:
        if call.op.attrs["Composite"] == "dnnl.channel_shuffle":
            self.shuffle(call)
            return
        anchor, bias, add, relu, bound = _composite_parts(call.op, call.args)
        inputs = [self.ref(a, bound) for a in anchor.args] + [self.ref(bias.args[1], bound)]
        post_ops = []
        if add is not None:
            residual = next(a for a in add.args if a is not bias)
            inputs.append(self.ref(residual, bound))
            post_ops.append("sum")
        if relu is not None and relu.op.name == "nn.relu":
            post_ops.append("relu")
        elif relu is not None:
            post_ops.append({"clip": [float(relu.attrs.a_min), float(relu.attrs.a_max)]})
        attrs = {**ATTRS[anchor.op.name](anchor.attrs), "bias": 1, "post_ops": post_ops}
        self._emit(anchor.op.name, inputs, call, attrs)

    def shuffle(self, call: Call) -> None:
        groups, why = shuffle_groups(call.op.body)
        if why:
            raise ByocError(f"composite dnnl.channel_shuffle: {why}")
        data = self.ref(call.args[0], {id(p): a for p, a in zip(call.op.params, call.args)})
        self._emit("channel_shuffle", [data], call, {"axis": 1, "groups": groups})

    def _emit(self, name: str, inputs: list[int], call: Call, attrs: dict) -> None:
        ty = _tensor_type(call.checked_type, f"the result of {name}")
        self.add({"op": "kernel", "name": name, "inputs": inputs, "shape": _ints(ty.shape), "dtype": ty.dtype,
                  "attrs": attrs}, call)


def region_graph(func: Function, symbol: str) -> tuple[dict, dict[str, np.ndarray]]:
    """(the JSON graph as a dict, constants by name) of one region."""
    w = _Writer(symbol)
    for k, param in enumerate(func.params):
        ty = _tensor_type(param.checked_type or param.type_annotation, f"region parameter {param.name_hint!r}")
        w.add({"op": "input", "name": f"input{k}", "shape": _ints(ty.shape), "dtype": ty.dtype}, param)
    for node in post_order(func.body):
        if id(node) in w.ids or isinstance(node, (Op, Function)):
            continue
        if isinstance(node, Var):
            raise ByocError(f"variable {node.name_hint!r} is not a parameter of the region")
        if isinstance(node, Constant):
            w.const(node)
        elif isinstance(node, Call) and isinstance(node.op, Op):
            w.kernel(node)
        elif isinstance(node, Call) and isinstance(node.op, Function) and "Composite" in node.op.attrs:
            w.composite(node)
        elif isinstance(node, TupleGetItem):
            src = node.tuple_value
            if not (isinstance(src, Call) and isinstance(src.op, Op) and src.op.name == "nn.batch_norm"
                    and node.index == 0):
                raise ByocError("the dnnl graph reads only element 0 (the normalized value) of nn.batch_norm")
            w.ids[id(node)] = w.ref(src)
        elif isinstance(node, Tuple):
            continue        # concatenate's operand, or the region's results
        else:
            raise ByocError(f"the dnnl graph cannot express a {type(node).__name__} inside a region")
    results = list(func.body.fields) if isinstance(func.body, Tuple) else [func.body]
    graph = {"format": FORMAT, "version": VERSION, "symbol": symbol, "nodes": w.nodes,
             "heads": [w.ref(r) for r in results]}
    return graph, w.constants


def graph_text(graph: dict) -> str:
    """One node per line: readable in `get_source`, small, and valid JSON."""
    nodes = ",\n    ".join(json.dumps(n, separators=(", ", ": ")) for n in graph["nodes"])
    head = {k: v for k, v in graph.items() if k not in ("nodes", "heads")}
    fields = ",\n  ".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in head.items())
    return (f"{{\n  {fields},\n  \"nodes\": [\n    {nodes}\n  ],\n"
            f"  \"heads\": {json.dumps(graph['heads'])}\n}}\n")


def dnnl_codegen(func: Function, symbol: str) -> BlobArtifact:
    """(region, symbol) -> its JSON graph as a blob; constants travel by name in the model's data."""
    graph, constants = fold_shuffles(*region_graph(func, symbol))
    text = graph_text(graph)
    return BlobArtifact(symbol=symbol, kind=KIND, blob=text.encode("ascii"), text=text,
                        runtime_sources=RUNTIME_SOURCES, include_dirs=INCLUDE_DIRS, constants=constants)
