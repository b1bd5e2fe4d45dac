"""Random well-typed graphs over the whole op set, from a seed, and a shrinker for failing ones.

One idea per module:

* recipe.py -- the model: a `Recipe` is a list of values (inputs, constants, op steps naming earlier
  values) and the indices of the outputs; `Recipe.to_module()` gives the IRModule;
* builder.py -- the generator's state: values with their types and magnitude bounds; a step is kept only
  if the op's own type inference accepts it and it stays in range (no int32 overflow, floats within
  float32's comfortable range);
* makers/ -- one maker per op, registered as the op's "random_maker" attribute (op/attrs.py): it picks
  attributes that fit an operand's type (shapes that broadcast, odd sizes, 1-element and large-prime
  dims); log, sqrt and divide get positive operands through explicit abs/add guards;
* generate.py -- `random_recipe(seed)` grows a graph one op at a time;
* shrink.py -- `shrink(recipe, still_fails)` reduces a failing recipe while `still_fails` holds;
* reproducer.py -- `save_reproducer` writes it as a text-IR model plus its recipe.

A seed gives the same graph on every run and machine (bench/random_graph_digest.py prints a digest of
many seeds' graphs to compare two trees with).
"""
from .builder import PRIME_DIMS, SMALL_DIMS
from .generate import random_recipe
from .recipe import Const, Data, Input, Recipe, Step, compact, value_types
from .reproducer import save_reproducer
from .shrink import shrink

__all__ = ["Const", "Data", "Input", "PRIME_DIMS", "Recipe", "SMALL_DIMS", "Step", "compact", "random_recipe",
           "save_reproducer", "shrink", "value_types"]
