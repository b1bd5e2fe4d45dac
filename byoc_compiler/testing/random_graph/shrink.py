"""`shrink(recipe, still_fails)`: a failing recipe reduced (fewer outputs, steps bypassed or turned into
inputs) while it still fails."""
from __future__ import annotations

from dataclasses import replace
from typing import Callable

from .recipe import Const, Data, Input, Recipe, Step, compact, value_types


def _candidates(recipe: Recipe):
    """Smaller variants of `recipe`, most aggressive first."""
    if len(recipe.outputs) > 1:
        for k in range(len(recipe.outputs)):
            yield replace(recipe, outputs=(recipe.outputs[k],))
    types = value_types(recipe)
    steps = [i for i, v in enumerate(recipe.values) if isinstance(v, Step)]
    for i in reversed(steps):
        v = recipe.values[i]
        # bypass: uses of i read one of its same-typed arguments instead
        for a in v.args:
            if types[a] == types[i] and not isinstance(recipe.values[a], (Const, Data)):
                yield compact(_substitute(recipe, i, a))
        # cut: the value becomes a new input of main
        ty = types[i]
        values = list(recipe.values)
        values[i] = Input("cut", tuple(ty.shape), ty.dtype, v.tag)
        yield compact(Recipe(tuple(values), recipe.outputs, recipe.seed))


def _substitute(recipe: Recipe, old: int, new: int) -> Recipe:
    values = [replace(v, args=tuple(new if a == old else a for a in v.args)) if isinstance(v, Step) else v
              for v in recipe.values]
    outputs = tuple(new if o == old else o for o in recipe.outputs)
    if any(isinstance(values[o], (Input, Const, Data)) for o in outputs):
        return recipe                     # an output must stay computed
    return Recipe(tuple(values), outputs, recipe.seed)


def shrink(recipe: Recipe, still_fails: Callable[[Recipe], bool], max_tries: int = 200) -> Recipe:
    """The smallest variant of a failing `recipe` found greedily for which `still_fails` holds."""
    tries = 0
    improved = True
    while improved and tries < max_tries:
        improved = False
        for candidate in _candidates(recipe):
            if candidate == recipe or candidate.op_steps > recipe.op_steps or (
                    candidate.op_steps == recipe.op_steps and len(candidate.values) >= len(recipe.values)):
                continue
            tries += 1
            if still_fails(candidate):
                recipe, improved = candidate, True
                break
            if tries >= max_tries:
                break
    return recipe
