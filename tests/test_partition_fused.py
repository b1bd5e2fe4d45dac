"""partition_for without a trace runs AnnotateTarget, MergeCompilerRegions and PartitionGraph as one pass
(transform/annotate_partition.py) that hands the regions on as a table; with a trace they run one by one
and hand them on as node meta. Both must give the same module: same functions in the same order, the same
text, and the same meta on every node. The independent result is the three passes run one after the
other."""
import random

import numpy as np
import pytest

from byoc_compiler import op, zoo
from byoc_compiler.ir import Call, Function, GlobalVar, IRModule, TensorType, Var, const, post_order
from byoc_compiler.partition import partition_for, pipeline, summarize
from byoc_compiler.target import get_targets
from byoc_compiler.ir.visitor import graph_order
from byoc_compiler.transform import annotate_and_partition, annotate_target
from byoc_compiler.transform.merge_composite import (composite_calls, composite_entries, find_matches, merged_order,
                                                     rewrite_matches)

from partition_helpers import registered
from test_node_meta import planted_model
from test_partition_models import random_graph


def one_by_one(targets, mod, **kwargs):
    return partition_for(targets, mod, trace=lambda name, after: None, **kwargs)


def metas(mod: IRModule) -> list[tuple[str, list]]:
    return [(name, [dict(n.meta) for n in post_order(func.body, into_functions=True)]) for name, func in mod.items()]


def types(mod: IRModule) -> list[tuple[str, object, list]]:
    """Each function's declared result type and the type on every node: the fused pass builds them, the
    one-by-one pipeline's last InferType fills them."""
    return [(name, func.ret_type, [n.checked_type for n in post_order(func.body, into_functions=True)])
            for name, func in mod.items()]


def assert_same_module(fused: IRModule, unfused: IRModule) -> None:
    assert list(fused) == list(unfused)
    assert fused.astext() == unfused.astext()
    assert metas(fused) == metas(unfused)
    assert types(fused) == types(unfused)


def bench_like(nodes: int, seed: int) -> IRModule:
    """bench/partition_scaling.py's shape, small: dense+bias(+relu) composites, ccompiler and examplejson
    ops, host-only expand_dims/squeeze, skip connections."""
    rng = random.Random(seed)
    w = const(np.random.default_rng(seed).standard_normal((8, 8)).astype("float32"))
    b = const(np.zeros(8, "float32"))
    values = [Var("x", TensorType((1, 8)))]
    for _ in range(nodes):
        last, kind = values[-1], rng.random()
        if kind < 0.1:
            v = op.nn.bias_add(op.nn.dense(last, w), b)
            v = op.nn.relu(v) if rng.random() < 0.5 else v
        elif kind < 0.45:
            v = rng.choice([op.tanh, op.nn.relu, op.nn.softmax, op.abs])(last)
        elif kind < 0.55:
            v = op.squeeze(op.expand_dims(last, 0), axis=[0])
        else:
            v = rng.choice([op.add, op.multiply, op.maximum])(last, values[max(0, len(values) - rng.randint(2, 12))])
        values.append(v)
    return IRModule.from_expr(values[-1])


TARGET_SETS = [["ccompiler", "examplejson"], ["examplejson", "ccompiler"], ["dnnl", "ccompiler"]]


@pytest.mark.parametrize("targets", TARGET_SETS, ids=["+".join(t) for t in TARGET_SETS])
@pytest.mark.parametrize("name", zoo.names())
def test_zoo_model_fused_equals_one_by_one(name, targets):
    assert_same_module(partition_for(targets, zoo.get(name)), one_by_one(targets, zoo.get(name)))


@pytest.mark.parametrize("seed", range(3))
def test_bench_shaped_graph_fused_equals_one_by_one(seed):
    targets = ["ccompiler", "examplejson"]
    fused = partition_for(targets, bench_like(200, seed))
    assert_same_module(fused, one_by_one(targets, bench_like(200, seed)))
    assert summarize(fused).regions, "the graph must have regions to compare"


@pytest.mark.parametrize("seed", range(4))
def test_random_graph_fused_equals_one_by_one(seed):
    with registered():
        targets = [["tA"], ["tA", "tB"], ["tB", "tA"]][seed % 3]
        mod = random_graph(seed, size=15 + 9 * seed)
        assert_same_module(partition_for(targets, mod), one_by_one(targets, mod))


def test_marks_already_present_are_kept_the_same_way():
    # AnnotateTarget keeps the marks a module has; the fused pass reads them from the same nodes
    with registered():
        marked = annotate_target(random_graph(5, size=30), ["tB"])
        assert_same_module(partition_for(["tA", "tB"], marked), one_by_one(["tA", "tB"], marked))


def test_notes_follow_their_nodes_the_same_way():
    mod, _ = planted_model()
    assert_same_module(partition_for("ccompiler", mod), one_by_one("ccompiler", mod))


def test_the_fused_pass_is_the_last_five_passes_of_the_pipeline():
    targets = get_targets(["ccompiler", "examplejson"])
    names = [p.name for p in pipeline(targets)]
    fused = [p.name for p in pipeline(targets, fused=True)]
    assert names[3:] == ["MergeComposite", "AnnotateTarget", "MergeCompilerRegions", "PartitionGraph", "InferType"]
    assert fused == names[:3] + ["+".join(names[3:])]
    typed = pipeline(targets)[0](bench_like(60, 1))
    one_by_one = typed
    for step in pipeline(targets)[3:]:
        one_by_one = step(one_by_one)
    patterns = [p for t in targets for p in t.patterns]
    assert_same_module(annotate_and_partition(typed, targets, patterns=patterns), one_by_one)
    without_composites = typed
    for step in pipeline(targets)[4:]:
        without_composites = step(without_composites)
    assert_same_module(annotate_and_partition(typed, targets), without_composites)


def test_composites_of_a_function_beside_main_are_merged_the_same_way():
    # MergeComposite rewrites every function without a Compiler; the fused pass merges main's matches
    # itself and leaves the others to MergeComposite
    w = const(np.ones((8, 8), "float32"))
    b = const(np.zeros(8, "float32"))
    x, y = Var("x", TensorType((1, 8))), Var("y", TensorType((1, 8)))
    helper = Function([y], op.nn.relu(op.nn.bias_add(op.nn.dense(y, w), b)))
    main_body = op.tanh(Call(GlobalVar("helper"), [op.nn.bias_add(op.nn.dense(op.abs(x), w), b)]))
    mod = IRModule({"helper": helper, "main": Function([x], main_body)})
    fused = partition_for("ccompiler", mod)
    assert "Composite" in fused.astext().split("def @main")[0], "the helper's match must be merged"
    assert_same_module(fused, one_by_one("ccompiler", mod))


def shape_of(nodes) -> list[tuple]:
    """What a node is, not which object: the merged order's nodes are the originals where the rewrite
    copied them."""
    return [(type(n).__name__, getattr(getattr(n, "op", None), "name", None), len(getattr(n, "args", ())),
             n.checked_type) for n in nodes]


@pytest.mark.parametrize("name", ["bench_like", *zoo.names()])
def test_merged_order_is_the_walk_of_the_merged_graph(name):
    # the fused pass takes main's order less the matches' inner nodes, roots replaced by their composite
    # calls, for the order of MergeComposite's graph; the independent result: that graph made and walked
    targets = get_targets(["dnnl", "ccompiler"] if name != "bench_like" else ["ccompiler", "examplejson"])
    mod = pipeline(targets)[0](bench_like(300, 2) if name == "bench_like" else zoo.get(name))
    entries = composite_entries([p for t in targets for p in t.patterns])
    order = graph_order(mod["main"].body)
    matches = find_matches(mod["main"].body, entries, order)
    walked = [n for n in post_order(rewrite_matches(order, matches)) if not isinstance(n, Function)]
    assert shape_of(merged_order(order, matches, composite_calls(matches))) == shape_of(walked)
