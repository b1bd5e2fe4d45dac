"""Partitioned zoo models build and match the reference of the UNPARTITIONED model, for every enabled
target that has a codegen, in every executor x interface (gcc, -Werror, through the runner)."""
import pytest

from byoc_compiler import zoo
from byoc_compiler.backend.build import build
from byoc_compiler.target import targets
from byoc_compiler.testing.reference import run_reference
from byoc_compiler.testing.tolerance import assert_close, tolerance_for_module

# Every enabled target with a codegen; one without a codegen has nothing to build (decided here, not skipped).
TARGETS = [t.name for t in targets() if t.enabled and t.has_codegen]
COMBOS = [(e, i) for e in ("graph", "aot") for i in ("packed", "unpacked")]


@pytest.mark.parametrize("executor,interface", COMBOS, ids=[f"{e}-{i}" for e, i in COMBOS])
@pytest.mark.parametrize("name", zoo.names())
@pytest.mark.parametrize("target", TARGETS)
def test_partitioned_matches_unpartitioned_reference(target, name, executor, interface):
    import byoc_compiler

    # no except: a partition error (an invariant broken by a pass, a ByocError) is a failure of this test
    mod = byoc_compiler.partition_for(target, zoo.get(name))
    lib = build(mod, executor=executor, interface=interface)
    unpartitioned = zoo.get(name)
    inputs = zoo.inputs(name)
    expected = run_reference(unpartitioned, inputs)
    got = lib.run_runner(inputs, werror=True)
    assert len(got) == len(expected)
    for k, (g, e) in enumerate(zip(got, expected)):
        rtol, atol = tolerance_for_module(unpartitioned, e.dtype)
        assert_close(g, e, rtol, atol, what=f"{target}/{name} output {k}")


def test_a_broken_invariant_fails_not_skips(monkeypatch):
    """Plant an invariant failure in the partition pipeline: the test above must fail with it, not skip."""
    import byoc_compiler.partition as partition
    from byoc_compiler.transform.partition_graph import PartitionInvariantError

    def planted(before, after, pass_name):
        raise PartitionInvariantError(pass_name, "planted by test_a_broken_invariant_fails_not_skips")

    monkeypatch.setattr(partition, "check_partitioned", planted)   # the check the pipeline runs at its end
    try:
        test_partitioned_matches_unpartitioned_reference(TARGETS[0], "mlp", "graph", "packed")
    except PartitionInvariantError as exc:
        assert "planted" in str(exc)
    except pytest.skip.Exception as exc:
        pytest.fail(f"a broken invariant was reported as a skip: {exc}")
    else:
        pytest.fail("the planted invariant failure went unnoticed")
