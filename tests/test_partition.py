"""AnnotateTarget, MergeCompilerRegions, PartitionGraph and partition_for on small hand-made graphs."""
import pytest

from byoc_compiler import op
from byoc_compiler.ir import (Call, Constant, Function, GlobalVar, IRModule, Tuple, TupleGetItem, TensorType, Var,
                              post_order)
from byoc_compiler.ir.expr import with_inputs
from byoc_compiler.partition import PartitionError, partition_for, summarize
from byoc_compiler.partition.invariants import check_partitioned
from byoc_compiler.transform.annotations import Annotations, RegionAnnotation, graph_nodes, read, write
from byoc_compiler.transform import (AnnotateTarget, MergeCompilerRegions, PartitionGraph, annotate_target,
                                     infer_type, merge_compiler_regions, partition_graph)
from byoc_compiler.transform.partition_graph import PartitionInvariantError

from partition_helpers import F32, assert_same_outputs, cst, rand, registered


@pytest.fixture(autouse=True)
def toy_targets():
    with registered() as targets:
        yield targets


def externals(mod):
    return {name: f for name, f in mod.items() if "Compiler" in f.attrs}


def ops_of(func):
    return sorted(n.op.name for n in post_order(func.body) if isinstance(n, Call) and hasattr(n.op, "name"))


def host_ops(mod):
    return sorted(n.op.name for n in post_order(mod["main"].body)
                  if isinstance(n, Call) and not isinstance(n.op, GlobalVar) and hasattr(n.op, "name"))


def pipeline(mod, targets, **kwargs):
    return partition_graph(merge_compiler_regions(annotate_target(mod, targets)), **kwargs)


X = {"x": rand((1, 8))}


# --- region shapes --------------------------------------------------------------------------------

def diamond():
    x = Var("x", F32)
    a = op.add(x, x)
    host = op.tanh(a)           # tA does not take tanh
    b = op.nn.relu(a)
    return IRModule.from_expr(op.add(host, b))


def chain():
    x = Var("x", F32)
    return IRModule.from_expr(op.exp(op.nn.relu(op.add(x, x))))


REGION_CASES = [
    # id, module factory, targets, expected regions {symbol: ops}, expected host ops
    ("chain-one-region", chain, ["tA"], {"tvmgen_default_tA_main_0": ["add", "exp", "nn.relu"]}, []),
    ("diamond-not-merged", diamond, ["tA"],
     {"tvmgen_default_tA_main_0": ["add", "nn.relu"], "tvmgen_default_tA_main_1": ["add"]}, ["tanh"]),
    ("diamond-two-targets", diamond, ["tA", "tB"],
     {"tvmgen_default_tA_main_0": ["add", "nn.relu"], "tvmgen_default_tB_main_0": ["tanh"],
      "tvmgen_default_tA_main_1": ["add"]}, []),
    ("priority-B-first", diamond, ["tB", "tA"],
     {"tvmgen_default_tB_main_0": ["add", "tanh"], "tvmgen_default_tA_main_0": ["nn.relu"],
      "tvmgen_default_tB_main_1": ["add"]}, []),
]


@pytest.mark.parametrize("make,targets,regions,host", [c[1:] for c in REGION_CASES], ids=[c[0] for c in REGION_CASES])
def test_regions(make, targets, regions, host):
    before = make()
    after = partition_for(targets, before)
    assert {name: ops_of(f) for name, f in externals(after).items()} == regions
    assert host_ops(after) == host
    assert_same_outputs(before, after, X)


def test_diamond_region_never_feeds_and_consumes_the_host_op():
    after = partition_for(["tA"], diamond())
    main = after["main"].body
    # main: tA_main_1(tanh(tA_main_0(x)), tA_main_0(x)) — the host op sits between the two regions
    assert isinstance(main, Call) and main.op == GlobalVar("tvmgen_default_tA_main_1")
    tanh_call = [a for a in main.args if isinstance(a, Call) and getattr(a.op, "name", "") == "tanh"]
    assert len(tanh_call) == 1


def test_predicate_falls_through_to_next_target():
    x = Var("x", TensorType((1, 3)))
    before = IRModule.from_expr(op.subtract(x, x))   # tA rejects width 3
    after = partition_for(["tA", "tB"], before)
    assert list(externals(after)) == ["tvmgen_default_tB_main_0"]
    report = summarize(partition_for(["tA"], before))
    assert [(h.op, h.why) for h in report.host] == [("subtract", "tA: width 3")]


# --- naming and signatures ------------------------------------------------------------------------

def test_names_params_and_attrs_exactly():
    x = Var("x", F32)
    a = op.nn.relu(op.add(x, x))
    h = op.nn.softmax(a)                    # host for tA
    b = op.exp(h)
    after = partition_for(["tA"], IRModule.from_expr(b), mod_name="my-net")
    ext = externals(after)
    assert list(ext) == ["tvmgen_my_net_tA_main_0", "tvmgen_my_net_tA_main_1"]
    for n, (name, func) in enumerate(ext.items()):
        assert dict(func.attrs) == {"Compiler": "tA", "global_symbol": name, "Primitive": 1, "Inline": 1}
        assert [p.name_hint for p in func.params] == [f"tA_{n}_i0"]
    calls = [c.op.name_hint for c in post_order(after["main"].body) if isinstance(c, Call)
             and isinstance(c.op, GlobalVar)]
    assert calls == ["tvmgen_my_net_tA_main_0", "tvmgen_my_net_tA_main_1"]


def test_target_name_is_sanitized_in_symbols_and_params(toy_targets):
    from byoc_compiler.target import Target, register_target, unregister_target

    register_target(Target("my-npu").supports("add"))
    try:
        x = Var("x", F32)
        after = partition_for(["my-npu"], IRModule.from_expr(op.add(x, x)))
    finally:
        unregister_target("my-npu")
    (name, func), = externals(after).items()
    assert name == "tvmgen_default_my_npu_main_0"
    assert func.attrs["Compiler"] == "my-npu"
    assert func.params[0].name_hint == "my_npu_0_i0"


def test_numbering_per_target_without_gaps_in_graph_order():
    x = Var("x", F32)
    v = x
    for i in range(3):
        v = op.nn.softmax(op.add(v, v))      # tA region, then a host op, three times
    after = partition_for(["tA"], IRModule.from_expr(v))
    assert list(externals(after)) == [f"tvmgen_default_tA_main_{n}" for n in range(3)]


def test_multi_output_region_returns_tuple_read_by_get_item():
    x = Var("x", F32)
    a = op.add(x, x)
    b = op.nn.relu(a)
    before = IRModule.from_expr(Tuple([op.tanh(a), op.tanh(b)]))
    after = partition_for(["tA"], before)
    (name, func), = externals(after).items()
    assert isinstance(func.body, Tuple) and len(func.body.fields) == 2
    items = [n for n in post_order(after["main"].body) if isinstance(n, TupleGetItem)]
    assert sorted(i.index for i in items) == [0, 1]
    assert all(isinstance(i.tuple_value, Call) and i.tuple_value.op == GlobalVar(name) for i in items)
    assert_same_outputs(before, after, X)


def test_output_used_many_times_is_one_output():
    x = Var("x", F32)
    a = op.add(x, x)
    before = IRModule.from_expr(Tuple([op.tanh(a), op.nn.softmax(a), a]))
    after = partition_for(["tA"], before)
    (name, func), = externals(after).items()
    assert not isinstance(func.body, Tuple)
    calls = [n for n in post_order(after["main"].body) if isinstance(n, Call) and isinstance(n.op, GlobalVar)]
    assert len(calls) == 1
    assert_same_outputs(before, after, X)


def test_input_passed_twice_is_one_param():
    x = Var("x", F32)
    before = IRModule.from_expr(op.multiply(op.add(x, x), x))
    after = partition_for(["tA"], before)
    (name, func), = externals(after).items()
    assert [p.name_hint for p in func.params] == ["tA_0_i0"]
    call = after["main"].body
    assert call.args == (after["main"].params[0],)


@pytest.mark.parametrize("bind,params,const_args", [(True, 1, 0), (False, 2, 1)], ids=["bound", "as-argument"])
def test_constants_bound_inside_or_passed(bind, params, const_args):
    x = Var("x", F32)
    before = IRModule.from_expr(op.add(x, cst((1, 8))))
    after = partition_for(["tA"], before, bind_constants=bind)
    (name, func), = externals(after).items()
    assert len(func.params) == params
    inner_consts = [n for n in post_order(func.body) if isinstance(n, Constant)]
    assert len(inner_consts) == 1 - const_args
    assert sum(isinstance(a, Constant) for a in after["main"].body.args) == const_args
    assert_same_outputs(before, after, X)


# --- tuples stay whole ----------------------------------------------------------------------------

def test_batch_norm_travels_with_its_get_items():
    x = Var("x", TensorType((1, 4, 2, 2)))
    c = cst((4,))
    bn = op.nn.batch_norm(x, c, c, c, op.abs(c))
    before = IRModule.from_expr(op.nn.softmax(op.nn.relu(TupleGetItem(bn, 0))))
    after = partition_for(["tA"], before)
    (name, func), = externals(after).items()
    assert ops_of(func) == ["nn.batch_norm", "nn.relu"]
    assert_same_outputs(before, after, {"x": rand((1, 4, 2, 2))})


def test_tuple_result_used_whole_stays_on_host_with_reason():
    x = Var("x", TensorType((1, 8)))
    before = IRModule.from_expr(op.split(op.add(x, x), 2, axis=1))
    after = partition_for(["tA"], before)
    assert host_ops(after) == ["split"]
    (why,) = [h.why for h in summarize(after).host]
    assert "tA takes split" in why and "tuple" in why


def test_concatenate_takes_its_tuple_along():
    x = Var("x", F32)
    a = op.add(x, x)
    before = IRModule.from_expr(op.nn.softmax(op.concatenate([a, op.tanh(x)], axis=1)))
    after = partition_for(["tA"], before)
    (name, func), = externals(after).items()
    assert ops_of(func) == ["add", "concatenate"]
    assert_same_outputs(before, after, X)


# --- idempotence ----------------------------------------------------------------------------------

def mixed():
    x = Var("x", F32)
    a = op.add(x, x)
    b = op.tanh(a)
    c = op.subtract(b, op.nn.relu(a))
    d = op.nn.softmax(c)
    return IRModule.from_expr(op.multiply(d, op.add(d, b)))


def test_annotate_twice_is_annotate_once():
    once = annotate_target(mixed(), ["tA", "tB"])
    twice = annotate_target(once, ["tA", "tB"])
    assert read(twice["main"]) == read(once["main"]) != Annotations.empty()


def test_annotate_list_equals_one_after_the_other():
    together = annotate_target(mixed(), ["tA", "tB"])
    in_turn = annotate_target(annotate_target(mixed(), ["tA"]), ["tB"])
    assert read(together["main"]) == read(in_turn["main"]) != Annotations.empty()


def test_partition_results_print_identically_for_both_orders_of_annotation():
    m = mixed()
    a = partition_graph(merge_compiler_regions(annotate_target(m, ["tA", "tB"])))
    b = partition_graph(merge_compiler_regions(annotate_target(annotate_target(m, "tA"), "tB")))
    assert a.astext() == b.astext()


def test_passes_are_pure():
    m = infer_type(mixed())  # InferType fills the type cache of shared nodes; nothing else may change
    text = m.astext()
    partition_for(["tA", "tB"], m)
    assert m.astext() == text


def test_tvm_style_factories():
    m = mixed()
    via_factories = PartitionGraph()(MergeCompilerRegions()(AnnotateTarget(["tA", "tB"])(m)))
    assert via_factories.astext() == pipeline(m, ["tA", "tB"]).astext()


# --- reports, strictness, invariants ----------------------------------------------------------------

def test_strict_raises_with_the_table():
    with pytest.raises(PartitionError) as info:
        partition_for(["tA"], mixed(), strict=True)
    message = str(info.value)
    assert "nn.softmax" in message and "no target supports nn.softmax" in message
    assert "tanh" in message
    assert {h.op for h in info.value.report.host} == {"nn.softmax", "tanh"}


def test_strict_passes_when_everything_is_taken():
    after = partition_for(["tA", "tB"], mixed(), strict=True)
    assert host_ops(after) == []


def test_summary_counts_regions_and_ops():
    report = summarize(partition_for(["tA", "tB"], mixed()))
    per_target = {t: sum(sum(r.ops.values()) for r in report.regions_of(t)) for t in ("tA", "tB")}
    assert per_target == {"tA": 5, "tB": 2}
    table = report.table()
    assert table.splitlines()[0].split()[:3] == ["target", "regions", "ops"]


def test_summary_is_made_on_demand_for_the_targets_partitioned_for():
    # partition_for keeps its targets and makes the report when first asked for it (a build never asks)
    after = partition_for(["tA", "tB"], mixed())
    report = summarize(after)
    assert summarize(after) is report
    assert report.table(regions=True) == summarize(after, targets=["tA", "tB"]).table(regions=True)
    assert report.table(regions=True) != summarize(after, targets=["tB", "tA"]).table(regions=True)


def test_summary_reasons_name_each_target():
    i = Var("i", TensorType((4,), "int32"))
    before = IRModule.from_expr(op.nn.lrn(op.reshape(op.cast(op.add(i, i), "float32"), (1, 4, 1, 1))))
    report = summarize(partition_for(["ccompiler", "examplejson"], before))
    why = {h.op: h.why for h in report.host}
    assert why["add"] == "ccompiler: dtype int32 not supported; examplejson: dtype int32 not supported"
    assert why["nn.lrn"] == "no target supports nn.lrn"
    assert why["cast"] == "no target supports cast"


def test_non_convex_region_is_caught_and_blamed():
    m = infer_type(diamond())
    main = m["main"]
    nodes = graph_nodes(main)
    calls = [i for i, n in enumerate(nodes) if isinstance(n, Call)]
    first_add, last_add = calls[0], calls[-1]
    bad = Annotations({first_add: "tA", last_add: "tA"}, {first_add: 0, last_add: 0})
    broken = m.with_function("main", write(main, bad))
    with pytest.raises(PartitionInvariantError, match="MergeCompilerRegions"):
        partition_graph(broken)


def _left_annotated(mod):
    name, func = next(iter(externals(mod).items()))
    inner = func.body.args[0]                   # (not the root: the check must look at every node)
    body = with_inputs(func.body, [with_inputs(inner, inner.args, {"region": RegionAnnotation("tA", 0)})])
    return mod.with_function(name, Function(func.params, body, func.ret_type, func.attrs))


def _uncalled(mod):
    func = next(iter(externals(mod).values()))
    return mod.with_function("spare", func.with_attr(global_symbol="spare"))


def _calling_another(mod):
    name, func = next(iter(externals(mod).items()))
    spare = func.with_attr(global_symbol="spare")
    body = op.add(Call(GlobalVar("spare"), func.params), func.params[0])
    return mod.with_function("spare", spare).with_function(name, Function(func.params, body, None, func.attrs))


BROKEN_RESULTS = [
    # id, what breaks a partitioned module, what check_partitioned says
    ("annotation-left", _left_annotated, "still carries a region annotation"),
    ("never-called", _uncalled, "@spare is never called"),
    ("calls-a-global", _calling_another, "calls another global function"),
]


@pytest.mark.parametrize("breaks, says", [c[1:] for c in BROKEN_RESULTS], ids=[c[0] for c in BROKEN_RESULTS])
def test_a_broken_partition_result_is_caught(breaks, says):
    good = partition_for("tA", chain())
    check_partitioned(good, good, "SomePass")
    with pytest.raises(PartitionInvariantError, match=f"after SomePass, .*{says}"):
        check_partitioned(good, breaks(good), "SomePass")


def test_annotations_stay_on_their_nodes_when_the_graph_changes():
    # The annotations are on the nodes, not in a table of positions: a node added after annotating
    # (here a relu reading the annotated chain) is simply not annotated, and it stays on the host.
    annotated = annotate_target(chain(), "tA")
    main = annotated["main"]
    grown = annotated.with_function("main", main.__class__(main.params, op.nn.relu(main.body), None, main.attrs))
    before, after = read(main), read(grown["main"])
    assert after == before != Annotations.empty()
    part = partition_graph(merge_compiler_regions(grown))
    assert host_ops(part) == ["nn.relu"]


def test_printing_shows_external_functions_with_attrs():
    text = partition_for(["tA"], chain()).astext()
    assert 'def @tvmgen_default_tA_main_0(%tA_0_i0' in text
    assert 'Compiler="tA"' in text and 'global_symbol="tvmgen_default_tA_main_0"' in text
    assert "Primitive=1" in text and "Inline=1" in text


def test_targets_come_first():
    with pytest.raises(TypeError, match="targets come first"):
        partition_for(chain(), ["tA"])


def test_partitioning_a_partitioned_module_changes_nothing():
    once = partition_for(["tA"], mixed())
    twice = partition_for(["tA"], once)
    assert twice.astext() == once.astext()


# --- drawing --------------------------------------------------------------------------------------

def test_dot_clusters_coloured_by_target_and_labels_escaped():
    from byoc_compiler.dot import to_dot

    x = Var('in"put', F32)
    a = op.add(x, x)
    before = IRModule.from_expr(op.nn.softmax(op.tanh(op.nn.relu(a))))
    text = to_dot(partition_for(["tA", "tB"], before))
    clusters = [line for line in text.splitlines() if "label=\"tvmgen_" in line]
    assert len(clusters) == 2
    colours = {line.split('fillcolor="')[1].split('"')[0] for line in clusters}
    assert len(colours) == 2                       # one colour per target
    assert 'in\\"put' in text                       # names from models are escaped
    assert "nn.softmax" in text and "fillcolor=white" in text


def test_region_in_two_parts_around_another_region_is_caught():
    # Region 0 = {a, d} has two unconnected parts; region 1 = {b} reads a and feeds d: contracted, 0 -> 1 -> 0.
    x = Var("x", F32)
    a = op.add(x, x)
    b = op.tanh(a)
    d = op.multiply(b, x)
    m = infer_type(IRModule.from_expr(d))
    nodes = graph_nodes(m["main"])
    pos = {id(n): i for i, n in enumerate(nodes)}
    bad = Annotations({pos[id(a)]: "tA", pos[id(b)]: "tB", pos[id(d)]: "tA"},
                      {pos[id(a)]: 0, pos[id(b)]: 1, pos[id(d)]: 0})
    from byoc_compiler.partition.invariants import check_regions

    broken = m.with_function("main", write(m["main"], bad))
    with pytest.raises(PartitionInvariantError, match="after SomePass, a path leaves region 0 of tA"):
        check_regions(broken, "SomePass")
