"""IRModule: the named global functions of a model; `main` is the entry."""
from __future__ import annotations

from typing import Iterator, Mapping

from .analysis import free_vars_and_order
from .expr import Function, GlobalVar
from .show import as_text
from .visitor import remember_order


class IRModule:
    """An ordered map from global names to Functions.

    Modules are values: passes return new modules. `mod["main"]` is the entry
    function; external functions made by PartitionGraph live beside it.
    """

    def __init__(self, functions: Mapping[str, Function] | None = None):
        self._functions: dict[str, Function] = {}
        for name, func in (functions or {}).items():
            self._set(name, func)

    @classmethod
    def from_expr(cls, expr, name: str = "main") -> "IRModule":
        """Wrap a Function, or an expression whose free vars become parameters, as a module."""
        if not isinstance(expr, Function):
            params, order = free_vars_and_order(expr)
            if order is not None:       # the walk is the body's graph order: the first pass need not walk again
                remember_order(expr, order)
            expr = Function(params, expr)
        return cls({name: expr})

    def _set(self, name: str, func: Function) -> None:
        if isinstance(name, GlobalVar):
            name = name.name_hint
        if not isinstance(func, Function):
            raise TypeError(f"IRModule[{name!r}] must be a Function, got {type(func).__name__}")
        self._functions[str(name)] = func

    @property
    def functions(self) -> dict[str, Function]:
        """Global name -> Function, in definition order (a copy: modules are values)."""
        return dict(self._functions)

    def __getitem__(self, name: str | GlobalVar) -> Function:
        key = name.name_hint if isinstance(name, GlobalVar) else name
        try:
            return self._functions[key]
        except KeyError:
            known = ", ".join(self._functions) or "none"
            raise KeyError(f"the module has no global function {key!r} (it has: {known})") from None

    def __contains__(self, name: object) -> bool:
        key = name.name_hint if isinstance(name, GlobalVar) else name
        return key in self._functions

    def __iter__(self) -> Iterator[str]:
        return iter(self._functions)

    def __len__(self) -> int:
        return len(self._functions)

    def items(self):
        return self._functions.items()

    def with_function(self, name: str, func: Function) -> "IRModule":
        """A copy of this module with `name` set to `func` (added at the end if new)."""
        out = IRModule(self._functions)
        out._set(name, func)
        return out

    def without_function(self, name: str) -> "IRModule":
        return IRModule({k: v for k, v in self._functions.items() if k != name})

    def get_global_var(self, name: str) -> GlobalVar:
        if name not in self._functions:
            self[name]  # raises the clear KeyError
        return GlobalVar(name)

    @property
    def main(self) -> Function:
        return self["main"]

    def astext(self) -> str:
        return as_text(self)

    def __str__(self) -> str:
        return self.astext()

    def __repr__(self) -> str:
        return self.astext()
