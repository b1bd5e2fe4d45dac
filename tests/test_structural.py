"""Structural equality and hashing: alpha-renaming is equal, any change of op/attr/constant/wiring is not."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from byoc_compiler import op
from byoc_compiler.ir import (Constant, Function, TensorType, Tuple, Var, assert_structural_equal, structural_equal,
                              structural_hash)
from byoc_compiler.text import parse, parse_expr

T = "Tensor[(2, 2), float32]"


def fn(body: str, params: str = f"%a: {T}, %b: {T}", attrs: str = "") -> str:
    return f"fn ({params}{', ' + attrs if attrs else ''}) {{\n{body}\n}}"


COMPOSITE = """\
def @main(%x: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(4, 3, 3, 3), float32]) {
  %1 = fn (%d: Tensor[(1, 3, 8, 8), float32], %k: Tensor[(4, 3, 3, 3), float32], Composite="ccompiler.conv_relu") {
    %0 = nn.conv2d(%d, %k, padding=[1, 1, 1, 1]);
    nn.relu(%0)
  };
  %1(%x, %w)
}
"""

MODULE = """\
def @main(%x: Tensor[(2, 2), float32]) {
  @ext_0(%x, %x)
}

def @ext_0(%a: Tensor[(2, 2), float32], %b: Tensor[(2, 2), float32], Compiler="ccompiler", global_symbol="ext_0") {
  add(%a, %b)
}
"""

EQUAL = {
    "alpha-renamed-params": (fn("add(%a, %b)"), fn("add(%p, %q)", f"%p: {T}, %q: {T}")),
    "different-intermediate-numbers": (fn("%0 = add(%a, %b);\n%1 = nn.relu(%0);\n%1"),
                                       fn("%7 = add(%a, %b);\nnn.relu(%7)")),
    "default-attr-written-or-not": (fn("nn.softmax(%a)"), fn("nn.softmax(%a, axis=-1)")),
    "padding-spellings": (fn("nn.conv2d(%a, %b, padding=[1, 1])"), fn("nn.conv2d(%a, %b, padding=[1, 1, 1, 1])")),
    "shared-vs-duplicated-constant": (fn("%0 = add(%a, 1f);\nmultiply(%0, %0)"),
                                      fn("%0 = add(%a, 1f);\n%1 = add(%a, 1f);\nmultiply(%0, %1)")),
    "missing-annotation-is-not-a-difference": (fn("add(%a, %b)"), fn("add(%a, %b)", "%a, %b")),
    "return-type-said-or-not": (fn("nn.relu(%a)", f"%a: {T}").replace(") {", f") -> {T} {{", 1),
                                fn("nn.relu(%a)", f"%a: {T}")),
    "composite-renamed": (COMPOSITE, COMPOSITE.replace("%d", "%data").replace("%1", "%9")),
    "module-renamed-params": (MODULE, MODULE.replace("%a", "%lhs").replace("%x", "%input")),
    "module-function-order": (MODULE, MODULE.split("\n\n")[1] + "\n" + MODULE.split("\n\n")[0] + "\n"),
    "tuples": (fn("%0 = (%a, %b);\n%1 = %0.1;\n(%1, %0)"), fn("%t = (%a, %b);\n(%t.1, %t)")),
    "nan-constants-with-equal-bits": (fn("add(%a, meta[relay.Constant][0])") + "\n#[metadata]\n"
                                      '{"relay.Constant": [{"dtype": "float32", "shape": [], "data": "AADAfw=="}]}',
                                      fn("add(%a, meta[relay.Constant][0])") + "\n#[metadata]\n"
                                      '{"relay.Constant": [{"dtype": "float32", "shape": [], "data": "AADAfw=="}]}'),
}

NOT_EQUAL = {
    "different-op": (fn("add(%a, %b)"), fn("subtract(%a, %b)"), "different callees"),
    "swapped-arguments": (fn("add(%a, %b)"), fn("add(%b, %a)"), "different variables"),
    "same-param-twice-vs-two-params": (fn("add(%a, %b)"), fn("add(%a, %a)"), "different variables"),
    "different-attr": (fn("nn.softmax(%a, axis=0)"), fn("nn.softmax(%a, axis=1)"), "axis: 0 vs 1"),
    "different-float-attr": (fn("nn.leaky_relu(%a, alpha=0.1f)"), fn("nn.leaky_relu(%a, alpha=0.2f)"), "alpha"),
    "different-constant-value": (fn("add(%a, 1f)"), fn("add(%a, 2f)"), "constants with different values"),
    "different-constant-dtype": (fn("add(%a, 1f)"), fn("add(%a, 1)"), "constants of different type"),
    "different-constant-shape": (fn("add(%a, [1f])"), fn("add(%a, 1f)"), "constants of different type"),
    "negative-zero-is-not-zero": (fn("add(%a, 0f)"), fn("add(%a, -0f)"), "constants with different values"),
    "different-tuple-index": (fn("%0 = (%a, %b);\n%0.0"), fn("%0 = (%a, %b);\n%0.1"), "tuple indices differ"),
    "different-tuple-length": (fn("(%a, %b)"), fn("(%a, %b, %a)"), "tuples of different lengths"),
    "different-param-count": (fn("%a", f"%a: {T}"), fn("%a"), "different numbers of parameters"),
    "different-param-type": (fn("%a", f"%a: {T}"), fn("%a", "%a: Tensor[(2, 3), float32]"), "parameter types differ"),
    "different-function-attrs": (fn("%a", f"%a: {T}", 'Composite="x"'), fn("%a", f"%a: {T}", 'Composite="y"'),
                                 "different function attributes"),
    "int-vs-bool-attr": (fn("%a", f"%a: {T}", "Primitive=1"), fn("%a", f"%a: {T}", "Primitive=True"),
                         "different function attributes"),
    "extra-node": (fn("nn.relu(%a)"), fn("nn.relu(nn.relu(%a))"), "different kinds of node"),
    "composite-body-differs": (COMPOSITE, COMPOSITE.replace("nn.relu(%0)", "sigmoid(%0)"), "different callees"),
    "composite-name-differs": (COMPOSITE, COMPOSITE.replace("conv_relu", "conv_relu6"),
                               "different function attributes"),
    "module-function-attr-differs": (MODULE, MODULE.replace('Compiler="ccompiler"', 'Compiler="dnnl"'), "in @ext_0"),
    "module-function-names-differ": (MODULE, MODULE.replace("ext_0", "ext_1"), "different global functions"),
}


def _read(text: str):
    return parse(text) if text.startswith("def") else parse_expr(text)


@pytest.mark.parametrize("lhs,rhs", EQUAL.values(), ids=EQUAL.keys())
def test_equal(lhs, rhs):
    a, b = _read(lhs), _read(rhs)
    assert structural_equal(a, b) and structural_equal(b, a)
    assert structural_hash(a) == structural_hash(b)
    assert_structural_equal(a, b)


@pytest.mark.parametrize("lhs,rhs,why", NOT_EQUAL.values(), ids=NOT_EQUAL.keys())
def test_not_equal(lhs, rhs, why):
    a, b = _read(lhs), _read(rhs)
    assert not structural_equal(a, b) and not structural_equal(b, a)
    if why != "parameter types differ":  # the hash ignores types (a missing annotation matches any type)
        assert structural_hash(a) != structural_hash(b)
    with pytest.raises(AssertionError) as info:
        assert_structural_equal(a, b)
    assert why in str(info.value)


def test_assertion_shows_a_diff_of_both_texts():
    with pytest.raises(AssertionError) as info:
        assert_structural_equal(parse_expr(fn("nn.softmax(%a, axis=0)")), parse_expr(fn("nn.softmax(%a, axis=1)")))
    message = str(info.value)
    assert "-  nn.softmax(%a, axis=0)" in message and "+  nn.softmax(%a, axis=1)" in message


def test_free_vars_need_identity_unless_mapped():
    x, y = Var("x", TensorType((2,))), Var("x", TensorType((2,)))
    assert structural_equal(op.nn.relu(x), op.nn.relu(x))
    assert not structural_equal(op.nn.relu(x), op.nn.relu(y))
    assert structural_equal(op.nn.relu(x), op.nn.relu(y), map_free_vars=True)
    # Mapping is one-to-one: x->y fixed by the first use, so add(x, x) differs from add(y, x2).
    z = Var("z", TensorType((2,)))
    assert not structural_equal(op.add(x, x), op.add(y, z), map_free_vars=True)
    assert structural_hash(op.nn.relu(x)) == structural_hash(op.nn.relu(y))


def test_a_param_is_not_a_free_var():
    a = Var("a", TensorType((2,)))
    inner = Var("a", TensorType((2,)))
    assert not structural_equal(Function([a], op.nn.relu(a)), Function([inner], op.nn.relu(a)))


def test_module_vs_function_is_not_equal():
    mod = parse(MODULE)
    assert not structural_equal(mod, mod["main"])


def test_hash_is_deterministic_across_processes():
    code = ("from byoc_compiler.text import parse; import sys; "
            "print(__import__('byoc_compiler.ir', fromlist=['x']).structural_hash(parse(sys.stdin.read())))")
    runs = {subprocess.run([sys.executable, "-c", code], input=MODULE, capture_output=True, text=True,
                           check=True).stdout for _ in range(2)}
    assert runs == {f"{structural_hash(parse(MODULE))}\n"}


def test_chains_far_beyond_the_recursion_limit():
    # 20,000 nodes: twenty times Python's recursion limit, so a recursive walk fails (tests/test_chain.py takes
    # a 100,000-node chain through every whole-graph stage)
    def chain(n: int, last_axis: int):
        x = Var("x", TensorType((4,)))
        expr = x
        for _ in range(n):
            expr = op.nn.relu(expr)
        return Function([x], op.nn.softmax(expr, axis=last_axis))

    a, b = chain(20_000, 0), chain(20_000, 0)
    c = Function(a.params, op.nn.softmax(a.body.args[0], axis=-1))  # same chain, different last attr
    assert structural_equal(a, b) and structural_hash(a) == structural_hash(b)
    assert not structural_equal(a, c) and structural_hash(a) != structural_hash(c)


def test_constants_compared_by_bytes():
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert structural_equal(Constant(data), Constant(data.copy()))
    assert not structural_equal(Constant(data), Constant(data.reshape(3, 2)))
    assert not structural_equal(Constant(data), Constant(data.astype(np.int32)))
    assert structural_equal(Tuple([Constant(data)]), Tuple([Constant(data.copy())]))
