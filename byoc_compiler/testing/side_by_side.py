"""Many small models as one: their mains side by side in one main, so one build (one compile, one link)
checks them all.

Building hundreds of small models one by one costs a compile and a link each; a test that builds them
side by side pays once. Model i's inputs are renamed `u<i>_<name>` (names stay unique) and its outputs
are the slice `slices[i]` of the joined main's flat output tuple, in the order a build's outputs come.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..ir import ExprMutator, Function, IRModule, Tuple, TupleGetItem, Var
from ..ir.types import TupleType
from ..transform.infer_type import infer_type


class _Rename(ExprMutator):
    def __init__(self, mapping: dict):
        super().__init__()
        self.mapping = mapping

    def rewrite_var(self, original, rebuilt):
        return self.mapping.get(original, rebuilt)


@dataclass
class Joined:
    mod: IRModule               # one main holding every model's main
    slices: list[slice]         # model i's outputs: outputs[slices[i]]

    def inputs(self, per_model: list[dict]) -> dict:
        """The joined main's inputs from each model's own (by its parameters' names)."""
        return {f"u{i}_{name}": value for i, feeds in enumerate(per_model) for name, value in feeds.items()}

    def split(self, outputs: list) -> list[list]:
        """The joined build's outputs cut back into each model's."""
        return [list(outputs[where]) for where in self.slices]


def _outputs(main: Function, body) -> list:
    if isinstance(body, Tuple):
        return list(body.fields)
    typed = infer_type(IRModule({"main": main}))["main"].body.checked_type
    if isinstance(typed, TupleType):
        return [TupleGetItem(body, k) for k in range(len(typed.fields))]
    return [body]


def join(mods: list[IRModule]) -> Joined:
    """The mains of `mods` side by side in one module (only mains: partition each model's join, not before)."""
    params, outputs, slices = [], [], []
    for i, mod in enumerate(mods):
        main = mod["main"]
        renamed = {p: Var(f"u{i}_{p.name_hint}", p.type_annotation) for p in main.params}
        fields = _outputs(main, _Rename(renamed).visit(main.body))
        params += [renamed[p] for p in main.params]
        slices.append(slice(len(outputs), len(outputs) + len(fields)))
        outputs += fields
    return Joined(IRModule({"main": Function(params, Tuple(outputs))}), slices)
