"""InferType: types of every node, global and composite calls, tuples, and located error messages."""
from __future__ import annotations

import numpy as np
import pytest

from byoc_compiler import op, transform
from byoc_compiler.ir import (Call, Function, GlobalVar, IRModule, Span, TensorType, Tuple, TupleGetItem, TupleType,
                              Var, const, post_order)
from byoc_compiler.transform.infer_type import InferType, TypeInferenceError, infer_type


def f32(*shape):
    return TensorType(shape, "float32")


def test_every_node_gets_a_type_and_main_a_ret_type():
    x = Var("x", f32(1, 3, 8, 8))
    w = const(np.ones((4, 3, 3, 3), np.float32))
    y = op.nn.max_pool2d(op.nn.relu(op.nn.conv2d(x, w, padding=1)), pool_size=2, strides=2)
    mod = infer_type(IRModule.from_expr(Function([x], y)))
    assert mod["main"].ret_type == f32(1, 4, 4, 4)
    for node in post_order(mod["main"].body):
        assert node.checked_type is not None, node
    assert w.checked_type == f32(4, 3, 3, 3)
    assert x.checked_type == f32(1, 3, 8, 8)


def test_pass_object_and_function_agree_and_return_a_new_module():
    x = Var("x", f32(2))
    mod = IRModule.from_expr(Function([x], op.exp(x)))
    out = InferType()(mod)
    assert isinstance(out, IRModule) and out is not mod
    assert transform.InferType()(mod)["main"].ret_type == f32(2)
    assert transform.infer_type(mod)["main"].ret_type == f32(2)
    assert mod["main"].ret_type is None  # the input module is left as it was


def test_tuple_and_tuple_getitem():
    x = Var("x", f32(2, 6))
    parts = op.split(x, (1, 4), axis=1)
    body = Tuple([TupleGetItem(parts, 2), TupleGetItem(parts, 0)])
    mod = infer_type(IRModule.from_expr(Function([x], body)))
    assert mod["main"].ret_type == TupleType((f32(2, 2), f32(2, 1)))
    assert parts.checked_type == TupleType((f32(2, 1), f32(2, 3), f32(2, 2)))


def test_tuple_getitem_out_of_range():
    x = Var("x", f32(4))
    mod = IRModule.from_expr(Function([x], TupleGetItem(op.split(x, 2), 2)))
    with pytest.raises(TypeInferenceError, match=r"index out of range for a tuple of 2 fields \(valid: 0..1\)"):
        infer_type(mod)


def test_tuple_getitem_of_a_tensor():
    x = Var("x", f32(4))
    with pytest.raises(TypeInferenceError, match="expected a tuple, found a float32 tensor of shape"):
        infer_type(IRModule.from_expr(Function([x], TupleGetItem(op.nn.relu(x), 0))))


def test_param_without_annotation_is_named():
    x = Var("images")
    with pytest.raises(TypeInferenceError, match="parameter %images of @main has no type annotation"):
        infer_type(IRModule.from_expr(Function([x], op.nn.relu(x))))


def test_free_variable_is_named():
    x, y = Var("x", f32(2)), Var("stray", f32(2))
    with pytest.raises(TypeInferenceError, match="%stray is used in @main but is not a parameter"):
        infer_type(IRModule({"main": Function([x], op.add(x, y))}))


def _external(name="ext_0"):
    a, b = Var("a", f32(2, 2)), Var("b", f32(2, 2))
    return Function([a, b], op.multiply(op.add(a, b), b), attrs={"Compiler": "ccompiler", "global_symbol": name})


def test_global_call_is_typed_from_the_callee_defined_later():
    x = Var("x", f32(2, 2))
    main = Function([x], op.nn.relu(Call(GlobalVar("ext_0"), [x, x])))
    mod = infer_type(IRModule({"main": main, "ext_0": _external()}))
    assert mod["main"].ret_type == f32(2, 2)
    assert mod["ext_0"].ret_type == f32(2, 2)
    assert mod["ext_0"].attrs["Compiler"] == "ccompiler"


def test_global_call_argument_mismatch():
    x = Var("x", f32(3, 2))
    main = Function([x], Call(GlobalVar("ext_0"), [x, x]))
    with pytest.raises(TypeInferenceError) as info:
        infer_type(IRModule({"main": main, "ext_0": _external()}))
    message = str(info.value)
    assert "@ext_0" in message and "'a'" in message and "(2, 2)" in message and "(3, 2)" in message


def test_missing_global_and_recursion():
    x = Var("x", f32(2))
    with pytest.raises(TypeInferenceError, match="calls @nowhere, which the module does not define"):
        infer_type(IRModule({"main": Function([x], Call(GlobalVar("nowhere"), [x]))}))
    y = Var("y", f32(2))
    loop = Function([y], Call(GlobalVar("loop"), [y]))
    with pytest.raises(TypeInferenceError, match="calls itself"):
        infer_type(IRModule({"main": Function([x], Call(GlobalVar("loop"), [x])), "loop": loop}))


def test_composite_call_is_typed_from_its_arguments():
    a, b = Var("a"), Var("b")  # composite params need no annotation
    composite = Function([a, b], op.nn.relu(op.nn.conv2d(a, b, padding=1)), attrs={"Composite": "conv_relu"})
    x = Var("x", f32(1, 2, 5, 5))
    w = const(np.ones((3, 2, 3, 3), np.float32))
    call = Call(composite, [x, w])
    mod = infer_type(IRModule.from_expr(Function([x], op.nn.max_pool2d(call, pool_size=2))))
    assert call.checked_type == f32(1, 3, 5, 5)
    assert a.checked_type == f32(1, 2, 5, 5)
    assert mod["main"].ret_type == f32(1, 3, 4, 4)


def test_error_inside_a_composite_names_the_op():
    a, b = Var("a"), Var("b")
    composite = Function([a, b], op.nn.dense(a, b), attrs={"Composite": "dense"})
    x = Var("x", f32(2, 5))
    w = const(np.ones((3, 4), np.float32))
    with pytest.raises(TypeInferenceError, match=r"nn.dense .*'weight' expected shape \(N, 5\)"):
        infer_type(IRModule.from_expr(Function([x], Call(composite, [x, w]))))


def test_error_location_from_span():
    x = Var("x", f32(2, 3))
    bad = Call(op.add(x, x).op, [x, const(np.ones((4,), np.float32))], span=Span("model.txt", 7, 12))
    with pytest.raises(TypeInferenceError) as info:
        infer_type(IRModule.from_expr(Function([x], op.nn.relu(bad))))
    err = info.value
    assert "model.txt:7:12" in str(err)
    assert (err.op, err.argument) == ("add", "rhs")
    assert "(4,)" in err.found and "(2, 3)" in err.expected


def test_error_location_from_printed_text():
    x = Var("x", f32(1, 3, 8, 8))
    w = Var("w", f32(8, 2, 3, 3))
    body = op.nn.relu(op.nn.conv2d(op.nn.relu(x), w, padding=1))
    with pytest.raises(TypeInferenceError) as info:
        infer_type(IRModule.from_expr(Function([x, w], body)))
    message = str(info.value)
    assert message.startswith("nn.conv2d in @main, at `")
    assert "nn.conv2d(%0, %w" in message  # the line as the printer shows it
    assert "'weight' expected 3 input channels" in message and "found shape (8, 2, 3, 3)" in message


def test_declared_return_type_is_checked():
    x = Var("x", f32(2))
    with pytest.raises(TypeInferenceError, match="declares return type"):
        infer_type(IRModule({"main": Function([x], op.nn.relu(x), ret_type=f32(3))}))


def test_wrong_argument_count_for_an_op():
    x = Var("x", f32(2))
    call = Call(op.nn.relu(x).op, [x, x])
    with pytest.raises(TypeInferenceError, match=r"nn.relu .*expected 1 arguments \(data\), found 2"):
        infer_type(IRModule.from_expr(Function([x], call)))


def test_rejects_non_module():
    with pytest.raises(TypeError, match="IRModule.from_expr"):
        infer_type(Var("x"))


def test_type_inference_error_is_a_type_error():
    assert issubclass(TypeInferenceError, TypeError)


def _callee(shape):
    p = Var("p", f32(4))
    return Function([p], op.reshape(p, newshape=shape), attrs={"Compiler": "ccompiler", "global_symbol": "f"})


def test_a_typed_graph_is_typed_again_where_a_callee_changed():
    # Types already on nodes are kept unless an input's type changed in this run: here the module's @f
    # changes its return type, so main's call of it and the ops after it are typed again.
    x = Var("x", f32(4))
    y = op.exp(op.nn.relu(Call(GlobalVar("f"), [x])))
    typed = infer_type(IRModule({"f": _callee((2, 2)), "main": Function([x], y)}))
    assert typed["main"].body.checked_type == f32(2, 2)
    again = infer_type(IRModule({"f": _callee((1, 4)), "main": Function([x], y)}))
    assert [n.checked_type for n in post_order(again["main"].body) if isinstance(n, Call)] == [f32(1, 4)] * 3


def test_a_node_made_without_a_type_between_typed_ones_is_typed_and_its_users_again():
    x = Var("x", f32(2, 3))
    first = op.nn.relu(x)
    top = op.exp(first)
    infer_type(IRModule.from_expr(Function([x], top)))
    # a pass replaced `first` by an untyped node of another shape, copying top with its old type
    new_first = op.reshape(x, newshape=(3, 2))
    new_top = Call(top.op, [new_first], top.attrs)
    new_top.checked_type = top.checked_type
    out = infer_type(IRModule.from_expr(Function([x], new_top)))
    assert new_first.checked_type == f32(3, 2) and out["main"].body.checked_type == f32(3, 2)
