"""Dataflow patterns: small trees that describe a shape of the expression graph.

Build them with the constructors of this package (`is_op`, `wildcard`,
`is_constant`, ...); `pattern.match(expr)` says whether `expr` is a root of
the shape, `pattern.find(expr)` returns what matched (see matcher.py).

A pattern object used twice in one pattern (e.g. `x = wildcard(); is_op("add")(x, x)`)
must match the same expression both times.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

from ..ir.expr import Expr
from ..op.registry import get_op_def


def _no_matcher(pattern, expr):
    raise RuntimeError("the pattern matcher is not loaded: import byoc_compiler.pattern")


# The matcher reads the pattern classes, so this module cannot import it back: matcher.py installs its
# `match` here when it is imported (pattern/__init__ imports it, so whenever the patterns are).
_matcher: Callable = _no_matcher


def install_matcher(match: Callable) -> None:
    global _matcher
    _matcher = match


class Pattern:
    """Base of every pattern; gives the combinators."""

    # Leaf patterns bind the inputs of a match; the others are the match's own nodes.
    is_leaf = False

    def __or__(self, other: "Pattern") -> "AltPattern":
        return AltPattern(self, _as_pattern(other))

    def __call__(self, *args: Any) -> "CallPattern":
        return CallPattern(self, [_as_pattern(a) for a in args])

    def optional(self, wrap: "Callable[[Pattern], Pattern]") -> "AltPattern":
        """`self` with or without `wrap` around it, the longer form tried first.

        `wrap` is a function of a pattern, or an op pattern such as `is_op("nn.relu")`:
        `conv.optional(is_op("nn.relu"))` matches `relu(conv)` and `conv`.
        """
        wrapped = wrap(self)
        return AltPattern(wrapped, self)

    def has_attr(self, attrs: Mapping[str, Any]) -> "AttrPattern":
        return AttrPattern(self, dict(attrs))

    def has_dtype(self, dtype: str) -> "TypePattern":
        return TypePattern(self, dtype=dtype)

    def has_shape(self, shape: Sequence[int]) -> "TypePattern":
        return TypePattern(self, shape=tuple(int(d) for d in shape))

    def match(self, expr) -> bool:
        return _matcher(self, expr) is not None

    def find(self, expr):
        """The `Match` of this pattern rooted at `expr`, or None."""
        return _matcher(self, expr)

    def __repr__(self) -> str:
        return self.describe()

    def describe(self) -> str:
        raise NotImplementedError


class WildcardPattern(Pattern):
    is_leaf = True

    def describe(self) -> str:
        return "*"


class ExprPattern(Pattern):
    """Matches one given expression object."""

    is_leaf = True

    def __init__(self, expr):
        self.expr = expr

    def describe(self) -> str:
        return f"expr({type(self.expr).__name__})"


class VarPattern(Pattern):
    is_leaf = True

    def __init__(self, name: str = ""):
        self.name = name

    def describe(self) -> str:
        return f"var({self.name})" if self.name else "var"


class ConstantPattern(Pattern):
    is_leaf = True

    def describe(self) -> str:
        return "const"


class OpPattern(Pattern):
    """The operator of a call: `is_op("nn.conv2d")`; call it with argument patterns."""

    def __init__(self, name: str):
        self.name = name

    def describe(self) -> str:
        return self.name


class CallPattern(Pattern):
    def __init__(self, op: Pattern, args: Sequence[Pattern]):
        self.op = op
        self.args = tuple(args)

    def describe(self) -> str:
        return f"{self.op.describe()}({', '.join(a.describe() for a in self.args)})"


class TuplePattern(Pattern):
    def __init__(self, fields: Sequence[Pattern]):
        self.fields = tuple(_as_pattern(f) for f in fields)

    def describe(self) -> str:
        return "(" + ", ".join(f.describe() for f in self.fields) + ")"


class TupleGetItemPattern(Pattern):
    def __init__(self, tuple_value: Pattern, index: int | None = None):
        self.tuple_value = _as_pattern(tuple_value)
        self.index = index

    def describe(self) -> str:
        return f"{self.tuple_value.describe()}.{'*' if self.index is None else self.index}"


class AltPattern(Pattern):
    """Either pattern; the left one is tried first."""

    def __init__(self, left: Pattern, right: Pattern):
        self.left, self.right = left, right

    def describe(self) -> str:
        return f"({self.left.describe()} | {self.right.describe()})"


class AttrPattern(Pattern):
    """`inner` whose call attributes (or function attrs) include `attrs`."""

    def __init__(self, inner: Pattern, attrs: dict):
        self.inner, self.attrs = inner, attrs

    @property
    def is_leaf(self) -> bool:  # type: ignore[override]
        return self.inner.is_leaf

    def describe(self) -> str:
        return f"{self.inner.describe()}{{{', '.join(f'{k}={v!r}' for k, v in self.attrs.items())}}}"


class TypePattern(Pattern):
    """`inner` whose inferred type has the given dtype and/or shape."""

    def __init__(self, inner: Pattern, dtype: str | None = None, shape: tuple | None = None):
        self.inner, self.dtype, self.shape = inner, dtype, shape

    @property
    def is_leaf(self) -> bool:  # type: ignore[override]
        return self.inner.is_leaf

    def describe(self) -> str:
        parts = [p for p in (self.dtype, self.shape and str(self.shape)) if p]
        return f"{self.inner.describe()}:{'/'.join(parts)}"


def _as_pattern(value: Any) -> Pattern:
    if isinstance(value, Pattern):
        return value
    if isinstance(value, Expr):
        return ExprPattern(value)
    raise TypeError(f"expected a Pattern or an expression, got {type(value).__name__}")


# --- constructors (the public spelling) --------------------------------------------------------

def wildcard() -> WildcardPattern:
    """Matches any expression; it becomes an input of the match."""
    return WildcardPattern()


def is_op(name: str) -> OpPattern:
    """The op `name` (checked against the op registry): `is_op("nn.relu")(wildcard())`."""
    get_op_def(name)  # an unknown op name fails here, with a did-you-mean
    return OpPattern(name)


def is_constant() -> ConstantPattern:
    return ConstantPattern()


def is_var(name: str = "") -> VarPattern:
    """A function parameter (with that name_hint when `name` is given)."""
    return VarPattern(name)


def is_expr(expr) -> ExprPattern:
    """Exactly this expression object."""
    return ExprPattern(expr)


def is_tuple(fields: Sequence[Pattern]) -> TuplePattern:
    return TuplePattern(fields)


def is_tuple_get_item(tuple_value: Pattern, index: int | None = None) -> TupleGetItemPattern:
    """Field `index` (any field when None) of a tuple-valued expression."""
    return TupleGetItemPattern(tuple_value, index)
