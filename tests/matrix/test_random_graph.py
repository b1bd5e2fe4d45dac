"""The random graph generator and shrinker (byoc_compiler.testing.random_graph), checked without building:
graphs are well-typed, deterministic, cover the op set and the awkward shapes, and shrink to small reproducers."""
from __future__ import annotations

import math

import numpy as np
import pytest

from byoc_compiler.check import deterministic_inputs
from byoc_compiler.text import parse
from byoc_compiler.op.registry import all_ops
from byoc_compiler.testing import run_reference
from byoc_compiler.op.attrs import op_attr_table
from byoc_compiler.testing.random_graph import PRIME_DIMS, Step, random_recipe, save_reproducer, shrink, value_types

SEEDS = range(120)


@pytest.fixture(scope="module")
def recipes():
    return [random_recipe(seed) for seed in SEEDS]


def test_same_seed_same_graph():
    assert random_recipe(7).to_text() == random_recipe(7).to_text()
    assert random_recipe(7).to_text() != random_recipe(8).to_text()


def test_every_op_of_the_registry_is_generated(recipes):
    used = {v.op for r in recipes for v in r.values if isinstance(v, Step)}
    assert sorted(set(all_ops()) - used) == []


def test_shapes_include_one_element_odd_and_large_prime_dims(recipes):
    dims = {d for r in recipes for ty in value_types(r) for d in ty.shape}
    assert 1 in dims
    assert {3, 5, 7, 13} <= dims
    assert dims & set(PRIME_DIMS)


def test_broadcasting_operands_have_different_shapes(recipes):
    broadcasts = 0
    for r in recipes:
        types = value_types(r)
        for i, v in enumerate(r.values):
            if isinstance(v, Step) and v.op in ("add", "subtract", "multiply", "divide", "maximum", "minimum"):
                a, b = (types[j].shape for j in v.args)
                broadcasts += a != b
    assert broadcasts >= 20


@pytest.mark.parametrize("seed", [0, 3, 11, 23, 37, 41, 57, 99])
def test_graph_parses_back_and_the_reference_is_finite(seed):
    recipe = random_recipe(seed, steps=14)
    mod = parse(recipe.to_text())
    outputs = run_reference(mod, deterministic_inputs(mod, 0))
    assert len(outputs) == len(recipe.outputs)
    for out in outputs:
        if out.dtype.kind == "f":
            assert np.isfinite(out).all()
        else:
            assert np.abs(out.astype(np.int64)).max(initial=0) < 2**31


def test_int32_divide_never_sees_zero():
    for seed in SEEDS:
        recipe = random_recipe(seed)
        types = value_types(recipe)
        for v in recipe.values:
            if isinstance(v, Step) and v.op == "divide":
                # the divisor is add(abs(y), 1): built that way so C and numpy agree and nothing traps
                divisor = recipe.values[v.args[1]]
                assert isinstance(divisor, Step) and divisor.op == "add", (seed, types)


def test_shrinker_keeps_the_failure_and_drops_the_rest(tmp_path):
    # A stand-in bug: "any graph with a softmax fails". The shrinker must keep one softmax and little else.
    # (float ops only: the stand-in predicate and the seed search were written for them)
    float_ops = tuple(op for op in op_attr_table("random_maker") if not op.startswith("qnn."))
    recipe = next(r for r in (random_recipe(s, steps=20, ops=float_ops) for s in range(200))
                  if any(isinstance(v, Step) and v.op == "nn.softmax" for v in r.values) and r.op_steps >= 12)

    def has_softmax(r):
        return any(isinstance(v, Step) and v.op == "nn.softmax" for v in r.values)

    small = shrink(recipe, has_softmax)
    assert has_softmax(small)
    assert small.op_steps <= 2 < recipe.op_steps
    path = save_reproducer(small, tmp_path / "repro", "softmax_case", note="stand-in failure")
    assert parse(path.read_text()) is not None
    assert (tmp_path / "repro" / "softmax_case.json").exists()




def test_graphs_stay_small_enough_to_build_quickly(recipes):
    for r in recipes:
        assert all(math.prod(t.shape) <= 4096 for t in value_types(r))
