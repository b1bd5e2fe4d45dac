"""The op registry as the IR sees it, installed from above.

The IR names ops (`Op("nn.relu")`) but what an op *is*, its attributes, defaults and checked
constructor, belongs to `byoc_compiler.op`, a layer above. That package installs itself here when it is
imported, so the IR never imports it: the operator sugar of expressions (`x + y`) and the printer's
"leave out attributes at their default" ask through this table.
"""
from __future__ import annotations

from typing import Any, Callable, NamedTuple


class OpTable(NamedTuple):
    make_call: Callable[..., Any]              # (name, *args, **attrs) -> a checked Call
    default_attrs: Callable[[str], dict]       # op name -> {attr: default} ({} for unknown ops)


_installed: OpTable | None = None


def install(table: OpTable) -> None:
    global _installed
    _installed = table


def installed() -> OpTable | None:
    """The registry's table, or None before `byoc_compiler.op` is imported."""
    return _installed


def make_call(name: str, *args: Any) -> Any:
    if _installed is None:
        raise RuntimeError(f"building a {name} call needs the op registry: import byoc_compiler.op first "
                           "(byoc_compiler.op.add(x, y) is what `x + y` calls)")
    return _installed.make_call(name, *args)
