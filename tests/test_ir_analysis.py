"""ir.analysis.flat_value: the tensors of a Tuple / TupleGetItem, as both lowerings (host program, ccompiler) use it."""
import pytest

from byoc_compiler.ir import Function, IRModule, TensorType, Tuple, TupleGetItem, Var, post_order
from byoc_compiler.ir.analysis import flat_value
from byoc_compiler.transform import infer_type

VARS = [Var(name, TensorType((1, k), "float32")) for k, name in enumerate("abcd", start=1)]
a, b, c, d = VARS
NESTED = Tuple([a, Tuple([b, c]), d])

# (id, expression, its tensors when each var is one tensor named after it) -- written out by hand
CASES = [
    ("flat-tuple", Tuple([a, b]), ["a", "b"]),
    ("nested-tuple", NESTED, ["a", "b", "c", "d"]),
    ("item-before-nested", TupleGetItem(NESTED, 0), ["a"]),
    ("item-nested", TupleGetItem(NESTED, 1), ["b", "c"]),
    ("item-after-nested", TupleGetItem(NESTED, 2), ["d"]),
    ("item-of-item", TupleGetItem(TupleGetItem(NESTED, 1), 1), ["c"]),
]


@pytest.mark.parametrize("expr,expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_flat_value(expr, expected):
    body = infer_type(IRModule({"main": Function(VARS, expr)}))["main"].body
    values = {}
    for node in post_order(body):
        values[id(node)] = [node.name_hint] if isinstance(node, Var) else flat_value(node, values)
    assert values[id(body)] == expected
