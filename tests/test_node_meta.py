"""Node meta (ir/expr.py) and the region annotations kept in it (transform/annotations.py): meta is not
structure, a pass never edits the nodes it was given, and an annotation planted on a node follows that
node through every pass of partition_for, to wherever the node ends up."""
import numpy as np
import pytest

from byoc_compiler import op
from byoc_compiler.ir import Call, Function, IRModule, Op, TensorType, Var, const, post_order
from byoc_compiler.ir.structural import structural_equal, structural_hash
from byoc_compiler.ir.visitor import graph_order
from byoc_compiler.partition import partition_for, pipeline
from byoc_compiler.target import get_targets
from byoc_compiler.transform.annotations import KEY, RegionAnnotation, region_of
from byoc_compiler.transform.infer_type import infer_type

NOTE = "note"


def _weights(shape, seed):
    return const(np.random.default_rng(seed).standard_normal(shape).astype("float32") * 0.1)


def planted_model():
    """conv2d -> batch_norm (FoldBatchNorm folds it) -> relu (with the conv: ccompiler's fused composite)
    -> tanh (ccompiler) -> nn.lrn (no target: the host) -> add of a constant that FoldConstant computes.
    Returns the module and, per planted note, the op its node computes."""
    x = Var("x", TensorType((1, 3, 8, 8), "float32"))
    conv = op.nn.conv2d(x, _weights((4, 3, 3, 3), 1), padding=(1, 1, 1, 1))
    bn = op.nn.batch_norm(conv, const(np.ones(4, "float32")), const(np.zeros(4, "float32")),
                          const(np.full(4, 0.1, "float32")), const(np.full(4, 0.9, "float32")))[0]
    relu = op.nn.relu(bn)
    tanh = op.tanh(relu)
    lrn = op.nn.lrn(tanh)
    folded = op.add(const(np.ones((1, 4, 8, 8), "float32")), const(np.ones((1, 4, 8, 8), "float32")))
    out = op.add(lrn, folded)
    planted = {"conv": (conv, "nn.conv2d"), "relu": (relu, "nn.relu"), "tanh": (tanh, "tanh"),
               "lrn": (lrn, "nn.lrn"), "out": (out, "add")}
    for name, (node, _) in planted.items():
        node.meta[NOTE] = name
    return IRModule.from_expr(out), {name: op_name for name, (_, op_name) in planted.items()}


def _notes(mod: IRModule) -> dict[str, list[tuple[str, str]]]:
    """note -> [(function, op name)] for every node of every function (composite bodies included)."""
    found: dict[str, list[tuple[str, str]]] = {}
    for fname, func in mod.items():
        for node in post_order(func.body, into_functions=True):
            note = node.meta_get(NOTE)
            if note is not None:
                found.setdefault(note, []).append((fname, node.op.name if isinstance(node.op, Op) else "?"))
    return found


def test_an_annotation_planted_on_a_node_follows_it_through_every_pass():
    mod, expected = planted_model()
    seen: list[str] = []

    def follow(pass_name, after):
        seen.append(pass_name)
        notes = _notes(after)
        assert {n: [o for _, o in where] for n, where in notes.items()} == {n: [o] for n, o in expected.items()}, \
            f"after {pass_name}: {notes}"

    part = partition_for("ccompiler", mod, trace=follow)
    assert seen == [p.name for p in pipeline(get_targets("ccompiler"))]
    where = {n: w[0][0] for n, w in _notes(part).items()}
    first, second = sorted(name for name in part.functions if name != "main")
    # conv and relu went into the fused composite, inside ccompiler's first region with tanh; lrn stayed on
    # the host, and the add after it (its constant operand folded) is ccompiler's second region
    assert where == {"conv": first, "relu": first, "tanh": first, "lrn": "main", "out": second}
    assert all(region_of(n) is None for f in part.functions.values() for n in post_order(f.body, True))


def test_region_annotations_are_node_meta_between_the_passes():
    mod, _ = planted_model()
    after: dict[str, IRModule] = {}
    partition_for("ccompiler", mod, trace=lambda name, m: after.setdefault(name, m))
    annotated = {n.op.name: region_of(n) for n in post_order(after["MergeCompilerRegions"]["main"].body)
                 if isinstance(n, Call) and isinstance(n.op, Op)}
    assert annotated["tanh"] == RegionAnnotation("ccompiler", 0)
    assert annotated["nn.lrn"] is None and annotated["add"] == RegionAnnotation("ccompiler", 1)
    composite = [n for n in post_order(after["MergeCompilerRegions"]["main"].body)
                 if isinstance(n, Call) and isinstance(n.op, Function)]
    assert [region_of(c) for c in composite] == [RegionAnnotation("ccompiler", 0)]
    assert "TargetRegions" not in after["AnnotateTarget"]["main"].attrs     # no string side table


def test_passes_never_edit_the_nodes_they_were_given():
    mod, _ = planted_model()
    before = {id(n): dict(n.meta_get(NOTE) and n.meta or {}) for n in post_order(mod["main"].body)}
    partition_for("ccompiler", mod)
    assert all(region_of(n) is None for n in post_order(mod["main"].body))
    assert {id(n): dict(n.meta_get(NOTE) and n.meta or {}) for n in post_order(mod["main"].body)} == before


@pytest.mark.parametrize("meta", [{NOTE: "a"}, {KEY: RegionAnnotation("ccompiler", 3)}], ids=["note", "region"])
def test_meta_is_not_structure(meta):
    def build(with_meta):
        x = Var("x", TensorType((2, 2), "float32"))
        y = op.tanh(x)
        if with_meta:
            y.meta.update(meta)
        return infer_type(IRModule.from_expr(op.nn.relu(y)))

    plain, marked = build(False), build(True)
    assert structural_equal(plain, marked)
    assert structural_hash(plain) == structural_hash(marked)
    assert plain.astext() == marked.astext()


def test_the_walk_a_pass_remembers_for_the_next_is_the_walk_of_its_graph():
    # annotations.write and graph_order remember a body's topological order on it, so later passes do not
    # walk again; after every pass that order must be exactly (node for node) a fresh walk's.
    mod, _ = planted_model()
    checked = []

    def same_order(pass_name, after):
        for func in after.functions.values():
            assert all(map(lambda a, b: a is b, graph_order(func.body), post_order(func.body))), pass_name
            assert len(graph_order(func.body)) == len(post_order(func.body)), pass_name
        checked.append(pass_name)

    partition_for(["ccompiler", "examplejson"], mod, trace=same_order)
    assert "MergeCompilerRegions" in checked and "PartitionGraph" in checked
