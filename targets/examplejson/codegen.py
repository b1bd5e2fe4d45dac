"""The examplejson codegen: one region (external function) -> one ExampleJSON subgraph block.

    artifact = examplejson_codegen(func, "tvmgen_default_examplejson_main_0")
    artifact.text  ->  tvmgen_default_examplejson_main_0
                         input 0 10 10
                         input 1 10 10
                         add 2 inputs: 0 1 shape: 10 10
                         ...

The block is the guide's text (FORMAT.md): parameters become `input` lines numbered 0, 1, ... in
order, then constants (`const`, base64 of little-endian float32) and op lines in topological
order. The result of the last op line is the subgraph's result; anything else (a tuple, an input
or a constant returned directly) gets an `output` line. float32 is the default dtype and is not
written. The runtime in runtime/ parses the same text at model init (the guide's LoadFromBinary).
"""
from __future__ import annotations

import base64
from pathlib import Path

import numpy as np

from byoc_compiler.vendor import BlobArtifact, ByocError, Call, Constant, Function, Op, TensorType, Tuple, Var, post_order

RUNTIME_DIR = Path(__file__).resolve().parent / "runtime"
RUNTIME_SOURCES = tuple(RUNTIME_DIR / name for name in ("ej_parse.c", "ej_ops.c", "ej_kernels.c", "ej_module.c"))
KIND = "examplejson"
MAX_NDIM = 8   # EJ_MAX_NDIM of the runtime


def _ints(values) -> list[str]:
    return [str(int(v)) for v in values]


def _floats(*values) -> list[str]:
    return [repr(float(v)) for v in values]


def _pool(a, extra=()):
    return [("pool_size", _ints(a.pool_size)), ("strides", _ints(a.strides)), ("padding", _ints(a.padding)),
            ("dilation", _ints(a.dilation)), ("ceil_mode", [str(int(bool(a.ceil_mode)))]), *extra]


_NO_ATTRS = lambda a: []  # noqa: E731

# Relay op -> the attributes its line carries (written always, so a reader needs no defaults).
ATTRS = {
    **{name: _NO_ATTRS for name in ("add", "subtract", "multiply", "divide", "maximum", "minimum", "negative",
                                    "abs", "exp", "log", "sqrt", "tanh", "sigmoid", "nn.relu", "nn.dense",
                                    "nn.global_avg_pool2d", "reshape", "nn.batch_flatten")},
    "clip": lambda a: [("a_min", _floats(a.a_min)), ("a_max", _floats(a.a_max))],
    "nn.leaky_relu": lambda a: [("alpha", _floats(a.alpha))],
    "nn.bias_add": lambda a: [("axis", _ints([a.axis]))],
    "nn.softmax": lambda a: [("axis", _ints([a.axis]))],
    "nn.conv2d": lambda a: [("strides", _ints(a.strides)), ("padding", _ints(a.padding)),
                            ("dilation", _ints(a.dilation)), ("groups", _ints([a.groups]))],
    "nn.max_pool2d": lambda a: _pool(a),
    "nn.avg_pool2d": lambda a: _pool(a, [("count_include_pad", [str(int(bool(a.count_include_pad)))])]),
}

SUPPORTED_OPS = tuple(ATTRS)


def _tensor_type(ty, what: str) -> TensorType:
    if ty is None:
        raise ByocError(f"{what} has no type; run transform.InferType() on the module before the codegen")
    if not isinstance(ty, TensorType):
        raise ByocError(f"{what} has type {ty}; ExampleJSON values are single tensors")
    if ty.dtype != "float32":
        raise ByocError(f"{what} has dtype {ty.dtype}; the ExampleJSON runtime computes float32 only")
    if len(ty.shape) > MAX_NDIM or any(int(d) < 1 for d in ty.shape):
        raise ByocError(f"{what} has shape {tuple(ty.shape)}; ExampleJSON takes up to {MAX_NDIM} dims, each >= 1")
    return ty


def _dims(ty: TensorType) -> str:
    return " ".join(str(int(d)) for d in ty.shape)


def _const_data(data: np.ndarray) -> str:
    return base64.b64encode(np.ascontiguousarray(data, dtype="<f4").tobytes()).decode("ascii")


def subgraph_text(func: Function, symbol: str) -> str:
    """The ExampleJSON block of one region (text ending with a newline)."""
    ids: dict[int, int] = {}
    lines = [symbol]
    for param in func.params:
        ty = _tensor_type(param.checked_type or param.type_annotation, f"region parameter {param.name_hint!r}")
        ids[id(param)] = len(ids)
        lines.append(f"  input {ids[id(param)]}{' ' if ty.shape else ''}{_dims(ty)}")
    last_op = None
    for node in post_order(func.body):
        if id(node) in ids or isinstance(node, (Op, Tuple)):
            continue
        if isinstance(node, Var):
            raise ByocError(f"variable {node.name_hint!r} is not a parameter of the region")
        if isinstance(node, Constant):
            ty = _tensor_type(node.tensor_type, "a constant")
            ids[id(node)] = len(ids)
            lines.append(f"  const {ids[id(node)]}{' ' if ty.shape else ''}{_dims(ty)} data: {_const_data(node.data)}")
        elif isinstance(node, Call) and isinstance(node.op, Op):
            name = node.op.name
            if name not in ATTRS:
                raise ByocError(f"ExampleJSON has no op {name}; it takes: {', '.join(SUPPORTED_OPS)}")
            ty = _tensor_type(node.checked_type, f"the result of {name}")
            args = []
            for arg in node.args:
                if id(arg) not in ids:
                    raise ByocError(f"an argument of {name} is a {type(arg).__name__}; ExampleJSON ops take tensors")
                args.append(str(ids[id(arg)]))
            ids[id(node)] = len(ids)
            attrs = "".join(f" {key}: {' '.join(values)}" for key, values in ATTRS[name](node.attrs))
            lines.append(f"  {name} {ids[id(node)]} inputs: {' '.join(args)} shape: {_dims(ty)}".rstrip() + attrs)
            last_op = node
        else:
            raise ByocError(f"ExampleJSON cannot express a {type(node).__name__} inside a region "
                            "(only op calls, constants, and a tuple of results)")
    results = list(func.body.fields) if isinstance(func.body, Tuple) else [func.body]
    for r in results:
        if id(r) not in ids:
            raise ByocError(f"a region result is a {type(r).__name__}; ExampleJSON returns tensors")
    if not (len(results) == 1 and results[0] is last_op):
        lines.append("  output " + " ".join(str(ids[id(r)]) for r in results))
    return "\n".join(lines) + "\n"


def examplejson_codegen(func: Function, symbol: str) -> BlobArtifact:
    """(region, symbol) -> its ExampleJSON block as a blob, executed by the C runtime of runtime/."""
    text = subgraph_text(func, symbol)
    return BlobArtifact(symbol=symbol, kind=KIND, blob=text.encode("ascii"), text=text,
                        runtime_sources=RUNTIME_SOURCES, include_dirs=(RUNTIME_DIR,))
