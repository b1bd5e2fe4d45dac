"""Expressions of the dataflow IR.

Nodes have identity semantics (two `Var("x")` are different variables) and are
treated as immutable: passes build new nodes instead of editing old ones. The
one mutable slot is `checked_type`, a cache that `transform.InferType` fills;
it is a pure function of the node's structure, so sharing nodes between
modules is safe.

`meta` is structured data about a node that is not what it computes (torch.fx's
`Node.meta` is the model): the partitioner's region annotation, or a user's note.
It is left out of structural equality and hashing and never printed as IR; a pass
that replaces a node by a new one carries the old node's meta over (`carry_meta`).
A pass that changes meta makes a new node with a new dict (never edits the dict
of a node it was given), so modules stay values.

A second cache, `_order`, holds the topological order of the graph under a node
(visitor.graph_order): also a pure function of structure, filled only for the
bodies of functions, so that the passes of a pipeline walk an unchanged body once.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from . import op_table
from .attrs import Attrs
from .show import as_text
from .types import TensorType, Type


class Span:
    """Where a node came from in a text file: 1-based line and column."""

    __slots__ = ("source", "line", "column")

    def __init__(self, source: str, line: int, column: int):
        self.source, self.line, self.column = source, line, column

    def __str__(self) -> str:
        return f"{self.source}:{self.line}:{self.column}"


class Expr:
    __slots__ = ("checked_type", "span", "_meta", "_order")   # _order: unset until graph_order fills it

    def __init__(self, span: Span | None = None):
        self.checked_type: Type | None = None
        self.span = span
        self._meta: dict | None = None     # made on first use: most nodes never carry any

    @property
    def meta(self) -> dict:
        """This node's meta dict (module docstring): not its computation, not its structure."""
        if self._meta is None:
            self._meta = {}
        return self._meta

    @meta.setter
    def meta(self, value: dict) -> None:
        self._meta = dict(value) if value else None

    def meta_get(self, key: str, default: Any = None) -> Any:
        """meta[key], or `default` (without making a dict for a node that has none)."""
        meta = self._meta
        return meta.get(key, default) if meta else default

    @property
    def type(self) -> Type:
        """The inferred type; raises if InferType has not run on this expression."""
        if self.checked_type is None:
            raise ValueError(f"the type of {type(self).__name__} is not known yet; run transform.InferType first")
        return self.checked_type

    def children(self) -> tuple["Expr", ...]:
        """The expressions this node reads, in evaluation order (not descending into Function bodies)."""
        return ()

    def __repr__(self) -> str:
        try:
            return as_text(self)
        except Exception:  # a repr must never raise
            return f"<{type(self).__name__} at {id(self):#x}>"

    # Operator sugar so that models read like numpy code.
    def __add__(self, other):
        return op_table.make_call("add", self, _as_expr(other))

    def __sub__(self, other):
        return op_table.make_call("subtract", self, _as_expr(other))

    def __mul__(self, other):
        return op_table.make_call("multiply", self, _as_expr(other))

    def __truediv__(self, other):
        return op_table.make_call("divide", self, _as_expr(other))

    def __neg__(self):
        return op_table.make_call("negative", self)

    def __getitem__(self, index: int) -> "TupleGetItem":
        return TupleGetItem(self, index)


def carry_meta(old: Expr, new: Expr, drop: str | None = None) -> Expr:
    """`new`, a node just made to replace `old`, given a copy of old's meta (entries new has already
    win; `drop`: a key not carried). Returns `new`."""
    meta = old._meta
    if not meta or new is old:
        return new
    carried = {k: v for k, v in meta.items() if k != drop}
    if new._meta:
        carried.update(new._meta)
    new._meta = carried or None
    return new


def meta_of(nodes: Sequence[Expr], key: str) -> dict[int, Any]:
    """Position -> meta[key] for the nodes of `nodes` that have it (one look per node, no dict made)."""
    return {pos: node._meta[key] for pos, node in enumerate(nodes) if node._meta and key in node._meta}


_COPY = object()   # with_inputs' default meta: a copy of the node's


def with_inputs(node: Expr, inputs: Sequence[Expr], meta: Any = _COPY) -> Expr:
    """A new node like `node` (a Call, Tuple or TupleGetItem: same op, attrs, index, span, type and a copy
    of its meta, or `meta`, a dict made for the new node alone, or None) that reads `inputs` instead of
    its own dataflow inputs (a Call's args, a Tuple's fields, a TupleGetItem's tuple). Passes that copy
    whole graphs call this for every node, hence the direct slot writes instead of the checking
    constructors."""
    kind = type(node)
    out = object.__new__(kind)
    out.checked_type = node.checked_type
    out.span = node.span
    if meta is _COPY:
        meta = dict(node._meta) if node._meta else None
    out._meta = meta or None
    if kind is Call:
        out.op, out.args, out.attrs = node.op, tuple(inputs), node.attrs
    elif kind is Tuple:
        out.fields = tuple(inputs)
    elif kind is TupleGetItem:
        out.tuple_value, out.index = inputs[0], node.index
    else:
        raise TypeError(f"with_inputs: a {kind.__name__} has no dataflow inputs to replace")
    return out


def meta_with(node: Expr, key: str, value: Any) -> dict | None:
    """A new meta dict for a node replacing `node`: node's meta with meta[key] = value (value None: without
    key); None when that leaves it empty."""
    meta = node._meta
    if value is not None:
        if not meta:
            return {key: value}
        meta = dict(meta)
        meta[key] = value
        return meta
    if not meta or (len(meta) == 1 and key in meta):
        return None
    return {k: v for k, v in meta.items() if k != key}


def _as_expr(value: Any) -> Expr:
    if isinstance(value, Expr):
        return value
    return const(value)


class Var(Expr):
    """A function parameter. `name_hint` is for humans; identity is the object."""

    __slots__ = ("name_hint", "type_annotation")

    def __init__(self, name_hint: str, type_annotation: Type | None = None, span: Span | None = None):
        super().__init__(span)
        self.name_hint = str(name_hint)
        self.type_annotation = type_annotation


class Constant(Expr):
    __slots__ = ("data",)

    def __init__(self, data: np.ndarray, span: Span | None = None):
        super().__init__(span)
        data = np.asarray(data)
        if not data.flags.c_contiguous:  # (np.ascontiguousarray would turn a 0-d scalar into shape (1,))
            data = np.ascontiguousarray(data)
        data.setflags(write=False)
        self.data = data

    @property
    def tensor_type(self) -> TensorType:
        return TensorType(self.data.shape, str(self.data.dtype))


def const(value: Any, dtype: str | None = None) -> Constant:
    """A Constant from a Python scalar, list or numpy array (floats default to float32)."""
    arr = np.asarray(value, dtype=dtype)
    if dtype is None and arr.dtype == np.float64:
        arr = arr.astype(np.float32)
    if dtype is None and arr.dtype == np.int64 and not isinstance(value, np.ndarray):
        arr = arr.astype(np.int32)
    return Constant(arr)


class GlobalVar(Expr):
    """A reference to a global function of the module, by name."""

    __slots__ = ("name_hint",)

    def __init__(self, name_hint: str, span: Span | None = None):
        super().__init__(span)
        self.name_hint = str(name_hint)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GlobalVar) and other.name_hint == self.name_hint

    def __hash__(self) -> int:
        return hash(("GlobalVar", self.name_hint))


class Op:
    """A primitive operator, by name (`Op("nn.relu")`); its definition is `op.registry.get_op_def(name)`."""

    __slots__ = ("name",)
    _interned: dict[str, "Op"] = {}

    def __new__(cls, name: str):
        op = cls._interned.get(name)
        if op is None:
            op = super().__new__(cls)
            op.name = name
            cls._interned[name] = op
        return op

    def __repr__(self) -> str:
        return f"Op({self.name})"


_NO_ATTRS = Attrs()     # what a node made without attrs carries: Attrs are immutable, so one serves all


class Call(Expr):
    """`op(args..., attrs)`; `op` is an Op, a Function (composite) or a GlobalVar (external function)."""

    __slots__ = ("op", "args", "attrs")

    def __init__(self, op: "Op | Function | GlobalVar", args: Sequence[Expr],
                 attrs: Mapping[str, Any] | None = None, span: Span | None = None):
        super().__init__(span)
        self.op = op
        self.args = tuple(args)
        self.attrs = attrs if isinstance(attrs, Attrs) else Attrs(attrs) if attrs else _NO_ATTRS

    def children(self) -> tuple[Expr, ...]:
        if isinstance(self.op, Function):
            return (self.op,) + self.args
        return self.args


class Tuple(Expr):
    __slots__ = ("fields",)

    def __init__(self, fields: Sequence[Expr], span: Span | None = None):
        super().__init__(span)
        self.fields = tuple(fields)

    def children(self) -> tuple[Expr, ...]:
        return self.fields


class TupleGetItem(Expr):
    __slots__ = ("tuple_value", "index")

    def __init__(self, tuple_value: Expr, index: int, span: Span | None = None):
        super().__init__(span)
        self.tuple_value = tuple_value
        self.index = int(index)

    def children(self) -> tuple[Expr, ...]:
        return (self.tuple_value,)


class Function(Expr):
    """A function: parameters, a body and string-keyed attrs (Compiler, global_symbol, Composite, ...)."""

    __slots__ = ("params", "body", "ret_type", "attrs")

    def __init__(self, params: Sequence[Var], body: Expr, ret_type: Type | None = None,
                 attrs: Mapping[str, Any] | None = None, span: Span | None = None):
        super().__init__(span)
        self.params = list(params)
        self.body = body
        self.ret_type = ret_type
        self.attrs = attrs if isinstance(attrs, Attrs) else Attrs(attrs) if attrs else _NO_ATTRS

    def children(self) -> tuple[Expr, ...]:
        # A function is a scope: its body is reached through visit_function, not as a dataflow input.
        return ()

    def with_attr(self, **attrs: Any) -> "Function":
        return Function(self.params, self.body, self.ret_type, self.attrs.with_(**attrs), self.span)
