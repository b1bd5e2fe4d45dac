"""MergeComposite and FoldConstant, and composites travelling through partitioning as one unit."""
import numpy as np
import pytest

from byoc_compiler import op
from byoc_compiler.target import CompositePattern, Target, register_target, unregister_target
from byoc_compiler.ir import Call, Constant, Function, GlobalVar, IRModule, Tuple, TupleGetItem, TensorType, Var
from byoc_compiler.ir import post_order
from byoc_compiler.partition import partition_for, summarize
from byoc_compiler.pattern import is_constant, is_op, wildcard
from byoc_compiler.transform import fold_constant, infer_type, merge_composite

from partition_helpers import assert_same_outputs, cst, rand, registered

W = cst((4, 8), seed=2)
B = cst((4,), seed=3)


@pytest.fixture(autouse=True)
def toy_targets():
    with registered() as targets:
        yield targets


def dense_bias_relu_model(extra_use=False):
    x = Var("x", TensorType((1, 8)))
    bias = op.nn.bias_add(op.nn.dense(x, W), B)
    out = op.nn.relu(bias)
    if extra_use:
        out = Tuple([out, op.tanh(bias)])
    return IRModule.from_expr(out)


def dense_bias():
    return is_op("nn.bias_add")(is_op("nn.dense")(wildcard(), is_constant()), is_constant())


DBR = CompositePattern("tX", "dense_bias_relu", is_op("nn.relu")(dense_bias()))
DB = CompositePattern("tX", "dense_bias", dense_bias())


def composites(mod):
    return [n for n in post_order(mod["main"].body) if isinstance(n, Call) and isinstance(n.op, Function)]


CASES = [
    # id, patterns in priority order, model kwargs, expected composites, expected PartitionedFromPattern
    ("longest-first", [DBR, DB], {}, ["tX.dense_bias_relu"], ["nn.dense_nn.bias_add_nn.relu_"]),
    ("earlier-wins", [DB, DBR], {}, ["tX.dense_bias"], ["nn.dense_nn.bias_add_"]),
    ("intermediate-used-outside", [DBR], {"extra_use": True}, [], []),
    ("shorter-still-fits", [DBR, DB], {"extra_use": True}, ["tX.dense_bias"], ["nn.dense_nn.bias_add_"]),
    ("tvm-style-rows", [("tX.dense_bias_relu", DBR.pattern)], {}, ["tX.dense_bias_relu"],
     ["nn.dense_nn.bias_add_nn.relu_"]),
]


@pytest.mark.parametrize("patterns,kwargs,names,froms", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_merge_composite(patterns, kwargs, names, froms):
    before = dense_bias_relu_model(**kwargs)
    after = merge_composite(before, patterns)
    found = composites(after)
    assert [c.op.attrs["Composite"] for c in found] == names
    assert [c.op.attrs["PartitionedFromPattern"] for c in found] == froms
    assert_same_outputs(before, after, {"x": rand((1, 8))}, atol=0)


def test_composite_arguments_are_the_bound_inputs():
    after = merge_composite(dense_bias_relu_model(), [DBR])
    (call,) = composites(after)
    assert call.args[1] is W and call.args[2] is B
    assert isinstance(call.args[0], Var)
    assert len(call.op.params) == 3


@pytest.mark.parametrize("verdict", [False, "weights too large"], ids=["false", "reason"])
def test_failing_check_leaves_graph_unchanged(verdict):
    before = infer_type(dense_bias_relu_model())
    rejecting = CompositePattern("tX", "dense_bias_relu", DBR.pattern, check=lambda root: verdict)
    after = merge_composite(before, [rejecting])
    assert after["main"].body is before["main"].body


def test_check_sees_the_typed_root():
    seen = []
    entry = CompositePattern("tX", "p", DBR.pattern, check=lambda root: seen.append(root.checked_type) or True)
    merge_composite(dense_bias_relu_model(), [entry])
    assert seen == [TensorType((1, 4))]


def test_composite_goes_to_the_target_of_its_prefix_as_one_unit():
    # tP declares only the pattern; tA takes every op of it one by one but tP's composite wins the unit.
    before = dense_bias_relu_model()
    after = partition_for(["tA", "tP"], before)
    ext = {n: f for n, f in after.items() if "Compiler" in f.attrs}
    assert list(ext) == ["tvmgen_default_tP_main_0"]
    body = ext["tvmgen_default_tP_main_0"].body
    assert isinstance(body.op, Function) and body.op.attrs["Composite"] == "tP.dense_bias_relu"
    assert_same_outputs(before, after, {"x": rand((1, 8))}, atol=0)


def test_ccompiler_conv2d_bias_relu_composite():
    x = Var("x", TensorType((1, 3, 6, 6)))
    conv = op.nn.conv2d(x, cst((4, 3, 3, 3)), padding=(1, 1))
    before = IRModule.from_expr(op.nn.relu(op.nn.bias_add(conv, cst((4,)))))
    after = partition_for("ccompiler", before)
    func = after["tvmgen_default_ccompiler_main_0"]
    assert func.body.op.attrs["Composite"] == "ccompiler.conv2d_bias_relu"
    assert func.body.op.attrs["PartitionedFromPattern"] == "nn.conv2d_nn.bias_add_nn.relu_"


# --- FoldConstant ---------------------------------------------------------------------------------

def test_fold_constant_evaluates_constant_subgraphs():
    c = rand((3, 2), seed=5)
    x = Var("x", TensorType((2, 3)))
    folded = fold_constant(infer_type(IRModule.from_expr(op.add(x, op.exp(op.transpose(Constant(c)))))))
    body = folded["main"].body
    assert body.op.name == "add" and isinstance(body.args[1], Constant)
    np.testing.assert_allclose(body.args[1].data, np.exp(c.T), rtol=1e-6)


def test_fold_constant_get_item_of_tuple():
    x, y = Var("x", TensorType((2,))), Var("y", TensorType((2,)))
    folded = fold_constant(infer_type(IRModule.from_expr(op.nn.relu(TupleGetItem(Tuple([x, y]), 1)))))
    assert folded["main"].body.args[0] is y


def test_fold_constant_tuple_valued_op():
    data = rand((1, 4), seed=6)
    x = Var("x", TensorType((1, 2)))
    parts = op.split(Constant(data), 2, axis=1)
    folded = fold_constant(infer_type(IRModule.from_expr(op.add(x, TupleGetItem(parts, 1)))))
    np.testing.assert_allclose(folded["main"].body.args[1].data, data[:, 2:])


def test_fold_constant_skips_external_functions():
    x = Var("x", TensorType((2,)))
    inner = Var("p", TensorType((2,)))
    ext = Function([inner], op.add(inner, op.exp(Constant(np.ones(2, "float32")))),
                   attrs={"Compiler": "tA", "global_symbol": "f"})
    mod = IRModule({"main": Function([x], Call(GlobalVar("f"), [x])), "f": ext})
    folded = fold_constant(infer_type(mod))
    assert folded["f"].body.args[1].op.name == "exp"


def test_fold_constant_leaves_variable_graphs_alone():
    mod = infer_type(dense_bias_relu_model())
    assert fold_constant(mod) is mod


def _dense_only(x):
    return IRModule.from_expr(op.nn.relu(op.nn.dense(x, W)))


def _refusing_target():
    t = Target("tQ", description="a composite whose check refuses wide outputs")
    t.pattern("dense_bias_relu", is_op("nn.relu")(dense_bias()),
              check=lambda root: "4 output units; takes at most 2" if root.checked_type.shape[-1] > 2 else None)
    return t


# host op -> why, when a target takes the op only inside a composite that did not take it here
WHY_COMPOSITE_REFUSED = [
    pytest.param(["tP"], lambda: dense_bias_relu_model(extra_use=True), "nn.dense",
                 "tP takes it only inside composite tP.dense_bias_relu, which refused here: "
                 "an intermediate value of the match is used outside it", id="match-escapes"),
    pytest.param(["tQ"], dense_bias_relu_model, "nn.dense",
                 "tQ takes it only inside composite tQ.dense_bias_relu, which refused here: "
                 "4 output units; takes at most 2", id="check-reason"),
    pytest.param(["tP"], lambda: _dense_only(Var("x", TensorType((1, 8)))), "nn.dense",
                 "tP take(s) nn.dense only inside composites, and none matched here", id="no-match"),
]


@pytest.mark.parametrize("targets, model, op_name, why", WHY_COMPOSITE_REFUSED)
def test_why_not_reports_composite_refusals(targets, model, op_name, why):
    register_target(_refusing_target())
    try:
        report = summarize(partition_for(targets, model()))
    finally:
        unregister_target("tQ")
    assert {h.op: h.why for h in report.host}[op_name] == why
