"""`random_recipe(seed)`: a well-typed random graph, grown one op at a time from the ops' makers."""
from __future__ import annotations

import numpy as np

from ...op.attrs import op_attr_table
from . import makers  # noqa: F401 - registers every op's "random_maker"
from .builder import Builder, random_shape
from .recipe import Recipe, compact


def random_recipe(seed: int, steps: int = 12, ops: tuple[str, ...] | None = None, int_inputs: bool = True) -> Recipe:
    """A well-typed random graph of about `steps` ops drawn from `ops` (default: every op), from `seed`."""
    rng = np.random.default_rng(seed)
    b = Builder(rng)
    table = op_attr_table("random_maker")
    names = list(ops or table)
    b.input(random_shape(b), "float32")
    if rng.random() < 0.5:
        b.input(random_shape(b), "float32")
    if int_inputs and rng.random() < 0.3:
        b.input(random_shape(b), "int32")
    made, attempts = [], 0
    while len(made) < steps and attempts < steps * 20:
        attempts += 1
        x = b.pick()
        made_index = table[names[int(rng.integers(len(names)))]](b, x)
        if made_index is not None:
            made.append(made_index)
    if not made:
        made.append(b.step("negative", [0], 1.0))
    outputs = [made[-1]]
    extra = [i for i in made[:-1] if rng.random() < 0.15]
    outputs += extra[:2]
    return compact(Recipe(tuple(b.values), tuple(outputs), seed))
