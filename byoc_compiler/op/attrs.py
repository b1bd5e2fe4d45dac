"""Op attributes: what other layers know about an op, registered by the layer that knows it.

An op is its `OpDef` (registry.py: attributes, type relation, numpy reference) plus attributes kept
here under a key, one value per (op, key). The layer that owns a piece of knowledge registers it
with `register_op_attr` when it is imported (the host kernel rule from backend, the error model and
the random-graph maker from testing, the FLOP count from debug), so `op` imports none of them, and
reads it back with `get_op_attr`. Adding an op is one `OpDef` plus one registration per key of KEYS;
`missing_op_attrs` names what an op lacks (tests/test_op_attrs.py checks every op).

TVM's `register_op_attr` is the model: attributes are plain values in a table keyed by op name.
"""
from __future__ import annotations

from typing import Any

from .registry import OpError, all_ops, did_you_mean

# The keys every op must have: key -> (the module that registers it, what the value is).
KEYS: dict[str, tuple[str, str]] = {
    "host_kernel": ("byoc_compiler.backend.host_kernels",
                    "(KernelContext) -> C statements of the op's host kernel"),
    "error_model": ("byoc_compiler.testing.error_bound",
                    "the float32 rounding error and magnitude shadow of the op (error_bound.ErrorModel)"),
    "random_maker": ("byoc_compiler.testing.random_graph",
                     "(builder, operand index) -> index of a random step of the op, or None"),
    "flops": ("byoc_compiler.debug.flops", "(typed call) -> floating-point operations of one call"),
}

_MISSING = object()
_TABLES: dict[str, dict[str, Any]] = {key: {} for key in KEYS}


def _table(key: str) -> dict[str, Any]:
    try:
        return _TABLES[key]
    except KeyError:
        raise OpError(f"unknown op attribute {key!r}.{did_you_mean(key, _TABLES)} Keys: "
                      f"{', '.join(_TABLES)}") from None


def register_op_attr(op_name: str, key: str, value: Any) -> None:
    """Set attribute `key` of op `op_name` (a registered op) to `value`; once per (op, key)."""
    table = _table(key)
    if op_name not in all_ops():
        raise OpError(f"register_op_attr: unknown op {op_name!r} (attribute {key!r}); register its OpDef "
                      f"first.{did_you_mean(op_name, all_ops())}")
    if op_name in table:
        raise OpError(f"op {op_name!r} has attribute {key!r} registered twice")
    table[op_name] = value


def get_op_attr(op_name: str, key: str, default: Any = _MISSING) -> Any:
    """Attribute `key` of op `op_name`; `default` when it has none (an OpError naming both without one)."""
    value = _table(key).get(op_name, default)
    if value is _MISSING:
        raise OpError(f"op {op_name!r} has no attribute {key!r} (registered by {KEYS[key][0]}; is it imported?)")
    return value


def op_attr_table(key: str) -> dict[str, Any]:
    """op name -> value of `key`, in registration order (a copy)."""
    return dict(_table(key))


def missing_op_attrs(keys=None) -> dict[str, list[str]]:
    """op name -> the keys (of `keys`, default all of KEYS) it has no value for; ops with all left out."""
    keys = list(KEYS if keys is None else keys)
    tables = [(k, _table(k)) for k in keys]
    missing = {name: [k for k, t in tables if name not in t] for name in all_ops()}
    return {name: ks for name, ks in missing.items() if ks}
