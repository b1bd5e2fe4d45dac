"""The op registry: one `OpDef` per op, holding everything the toolkit knows about it.

An OpDef is a row of a table: the attribute schema (names, kinds, defaults,
validation), type inference and the numpy reference. Everything that needs
per-op knowledge (the parser, InferType, the reference interpreter, host
codegen, targets' predicates) reads it from here, so adding an op is adding
one registration.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from ..errors import ByocError
from ..ir.attrs import Attrs
from ..ir.expr import Call, Expr, Op, Tuple, const
from ..ir.types import Type

REQUIRED = object()

# Attribute kinds and the Python values they accept.
ATTR_KINDS = ("int", "float", "bool", "str", "ints", "floats", "int_or_none", "ints_or_none",
              "int_pairs", "int_or_ints")


class OpError(ByocError, ValueError):
    """Bad use of an op: unknown name, bad attribute. The message names the fix."""


class OpTypeError(ByocError, TypeError):
    """A call whose argument types the op does not accept.

    `op`, `argument`, `expected`, `found` are kept apart so that InferType can add
    where in the model the call is.
    """

    def __init__(self, op: str, argument: str, expected: str, found: str):
        self.op, self.argument, self.expected, self.found = op, argument, expected, found
        super().__init__(f"{op}: argument {argument!r} expected {expected}, found {found}")


@dataclass(frozen=True)
class Attr:
    name: str
    kind: str
    default: Any = REQUIRED
    choices: tuple | None = None
    # Returns an error message, or None when the value is fine.
    check: Callable[[Any], str | None] | None = None
    # Normalizes an already coerced value (e.g. padding of 1, 2 or 4 ints -> 4 ints);
    # raises ValueError with a message when the value has no normal form.
    convert: Callable[[Any], Any] | None = None

    def normalize(self, op: str, value: Any) -> Any:
        where = f"{op}: attribute {self.name!r}"
        try:
            value = _coerce(self.kind, value)
        except OverflowError as exc:
            raise OpError(f"{where}: {exc}") from None
        except (TypeError, ValueError):
            raise OpError(f"{where} must be {_KIND_TEXT[self.kind]}, got {value!r}") from None
        flat = value if isinstance(value, tuple) else (value,)
        _check_int64_attr(where, [v for item in flat for v in (item if isinstance(item, tuple) else (item,))])
        if self.convert is not None and value is not None:
            try:
                value = self.convert(value)
            except ValueError as exc:
                raise OpError(f"{where}: {exc}") from None
        if self.choices is not None and value not in self.choices:
            raise OpError(f"{where} must be one of {', '.join(map(repr, self.choices))}, got {value!r}")
        if self.check is not None and value is not None:
            problem = self.check(value)
            if problem:
                raise OpError(f"{where}: {problem} (got {value!r})")
        return value


def _check_int64_attr(where: str, values) -> None:
    try:
        _check_int64(v for v in values if _is_int(v))
    except OverflowError as exc:
        raise OpError(f"{where}: {exc}") from None


_KIND_TEXT = {
    "int": "an integer", "float": "a number", "bool": "true or false", "str": "a string",
    "ints": "a list of integers", "floats": "a list of numbers",
    "int_or_none": "an integer or None", "ints_or_none": "a list of integers or None",
    "int_pairs": "a list of (before, after) integer pairs", "int_or_ints": "an integer or a list of integers",
}


_INT64 = (-(1 << 63), (1 << 63) - 1)


def _is_int(v: Any) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def _check_int64(values) -> None:
    """Integer attributes are int64 in generated C: a larger one is refused here, not by the C compiler."""
    for v in values:
        if not _INT64[0] <= v <= _INT64[1]:
            raise OverflowError(f"{v} does not fit in int64 (the largest is {_INT64[1]})")


def _coerce(kind: str, value: Any) -> Any:
    if kind.endswith("_or_none"):
        if value is None:
            return None
        kind = kind[: -len("_or_none")]
    if kind == "int":
        if not _is_int(value):
            raise TypeError
        return int(value)
    if kind == "float":
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise TypeError
        return float(value)
    if kind == "bool":
        if isinstance(value, (bool, np.bool_)) or (_is_int(value) and value in (0, 1)):
            return bool(value)
        raise TypeError
    if kind == "str":
        if not isinstance(value, str):
            raise TypeError
        return value
    if kind == "ints":
        if _is_int(value):
            return (int(value),)
        if not isinstance(value, (list, tuple)) or not all(_is_int(v) for v in value):
            raise TypeError
        return tuple(int(v) for v in value)
    if kind == "int_or_ints":
        if _is_int(value):
            return int(value)
        return _coerce("ints", list(value) if isinstance(value, (list, tuple)) else value)
    if kind == "int_pairs":
        if not isinstance(value, (list, tuple)):
            raise TypeError
        return tuple(_pair_of_ints(v) for v in value)
    if kind == "floats":
        if not isinstance(value, (list, tuple)):
            raise TypeError
        return tuple(_coerce("float", v) for v in value)
    raise AssertionError(f"unknown attribute kind {kind}")


def _pair_of_ints(value: Any) -> tuple[int, int]:
    if not isinstance(value, (list, tuple)) or len(value) != 2 or not all(_is_int(v) for v in value):
        raise TypeError
    return (int(value[0]), int(value[1]))


@dataclass(frozen=True)
class OpDef:
    """Everything about one op.

    name     -- "add", "nn.conv2d", ...
    inputs   -- argument names, for messages and the text form ("data", "weight")
    attrs    -- the attribute schema, in printing order
    infer    -- (arg_types, attrs) -> result Type; raises OpTypeError
    ref      -- (arg_arrays, attrs) -> ndarray, or a tuple of them for tuple-typed results
    family   -- "elementwise", "nn", "shape": groups ops for tolerances and tables
    tuple_input -- the op's single argument is a Tuple (concatenate)
    """

    name: str
    inputs: tuple[str, ...]
    attrs: tuple[Attr, ...]
    infer: Callable[[Sequence[Type], Attrs], Type]
    ref: Callable[[Sequence[np.ndarray], Attrs], Any]
    family: str
    tuple_input: bool = False
    doc: str = ""
    attr_index: dict = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self):
        self.attr_index.update({a.name: a for a in self.attrs})

    def normalize_attrs(self, given: dict[str, Any]) -> Attrs:
        """Check names, kinds and values of `given` against the schema; fill defaults."""
        unknown = [k for k in given if k not in self.attr_index]
        if unknown:
            allowed = ", ".join(self.attr_index) or "none"
            raise OpError(f"{self.name}: unknown attribute {unknown[0]!r} (allowed: {allowed})")
        out: dict[str, Any] = {}
        for attr in self.attrs:
            if attr.name in given:
                out[attr.name] = attr.normalize(self.name, given[attr.name])
            elif attr.default is REQUIRED:
                raise OpError(f"{self.name}: attribute {attr.name!r} is required")
            else:
                out[attr.name] = attr.default
        return Attrs(out)


_REGISTRY: dict[str, OpDef] = {}


def float_result(value, like) -> np.ndarray:
    """A float op reference's result: float32 (rounded once) for the models' float32 tensors, float64
    when the input `like` is float64 (the float64 reference of testing/error_bound.py)."""
    return np.asarray(value).astype(np.float64 if np.asarray(like).dtype == np.float64 else np.float32)


def register(name: str, inputs: Sequence[str], attrs: Sequence[Attr] = (), *, infer, ref,
             family: str, tuple_input: bool = False, doc: str = "") -> OpDef:
    if name in _REGISTRY:
        raise OpError(f"op {name!r} is registered twice")
    opdef = OpDef(name, tuple(inputs), tuple(attrs), infer, ref, family, tuple_input, doc)
    _REGISTRY[name] = opdef
    return opdef


def did_you_mean(name: str, known) -> str:
    """" Did you mean a, b?" for the names of `known` close to `name`; "" when none is."""
    close = difflib.get_close_matches(name, known, n=3)
    return f" Did you mean {', '.join(close)}?" if close else ""


def get_op_def(name: str) -> OpDef:
    try:
        return _REGISTRY[name]
    except KeyError:
        raise OpError(f"unknown op {name!r}.{did_you_mean(name, _REGISTRY)} Known ops: "
                      "`python -m byoc_compiler ops`") from None


def default_attrs(name: str) -> dict:
    """attr -> default for the attributes of op `name` that have one; {} for an unknown op."""
    opdef = _REGISTRY.get(name)
    return {} if opdef is None else {a.name: a.default for a in opdef.attrs if a.default is not REQUIRED}


def all_ops() -> dict[str, OpDef]:
    """name -> OpDef for every registered op, in registration order."""
    return dict(_REGISTRY)


def _as_arg(value: Any) -> Expr:
    return value if isinstance(value, Expr) else const(value)


def make_call(name: str, *args: Any, **attrs: Any) -> Call:
    """Build a call of a registered op, checking the argument count and the attrs."""
    opdef = get_op_def(name)
    if opdef.tuple_input:
        if len(args) == 1 and isinstance(args[0], (list, tuple)):
            args = (Tuple([_as_arg(a) for a in args[0]]),)
        if len(args) != 1:
            raise OpError(f"{name} takes one argument, a list or Tuple of tensors")
    elif len(args) != len(opdef.inputs):
        raise OpError(f"{name} takes {len(opdef.inputs)} arguments ({', '.join(opdef.inputs)}), got {len(args)}")
    return Call(Op(name), [_as_arg(a) for a in args], opdef.normalize_attrs(attrs))
