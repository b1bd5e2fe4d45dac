"""Partitioned zoo models build and match the reference of the UNPARTITIONED model, for every enabled
target that has a codegen, in every executor x interface (gcc, -Werror, through the runner)."""
import pytest

from byoc_compiler import zoo
from byoc_compiler.backend.build import build
from byoc_compiler.spec import targets
from byoc_compiler.errors import ByocError
from byoc_compiler.testing.reference import run_reference
from byoc_compiler.testing.tolerance import assert_close, tolerance_for_module

TARGETS = [t.name for t in targets() if t.enabled]
COMBOS = [(e, i) for e in ("graph", "aot") for i in ("packed", "unpacked")]


def _partition(target, name):
    import byoc_compiler
    from byoc_compiler.spec import get_target

    if get_target(target).codegen is None:
        pytest.skip(f"target {target} has no codegen yet")
    return byoc_compiler.partition_for(target, zoo.get(name))


@pytest.mark.parametrize("executor,interface", COMBOS, ids=[f"{e}-{i}" for e, i in COMBOS])
@pytest.mark.parametrize("name", zoo.names())
@pytest.mark.parametrize("target", TARGETS)
def test_partitioned_matches_unpartitioned_reference(target, name, executor, interface):
    try:
        mod = _partition(target, name)
    except ByocError as exc:
        pytest.skip(str(exc))
    lib = build(mod, executor=executor, interface=interface)
    unpartitioned = zoo.get(name)
    inputs = zoo.inputs(name)
    expected = run_reference(unpartitioned, inputs)
    got = lib.run_runner(inputs, werror=True)
    assert len(got) == len(expected)
    for k, (g, e) in enumerate(zip(got, expected)):
        rtol, atol = tolerance_for_module(unpartitioned, e.dtype)
        assert_close(g, e, rtol, atol, what=f"{target}/{name} output {k}")
