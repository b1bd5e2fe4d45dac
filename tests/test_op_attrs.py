"""One home per op: every op of the registry has every attribute of op/attrs.py's KEYS (its host kernel rule,
error model, random-graph maker and FLOP count), each registered by the layer that owns it; a missing one is
named per op. (That `op` imports none of those layers is .importlinter's layers contract, tests/test_layers.py.)"""
from __future__ import annotations

import importlib
import math
import subprocess

import numpy as np
import pytest

import needs

from byoc_compiler.backend.host_kernels import emit_kernel
from byoc_compiler.debug.flops import call_flops
from byoc_compiler.ir.expr import Function, Var
from byoc_compiler.ir.module import IRModule
from byoc_compiler.ir.types import TensorType
from byoc_compiler.op import attrs, registry
from byoc_compiler.op.attrs import KEYS, get_op_attr, missing_op_attrs, op_attr_table, register_op_attr
from byoc_compiler.op.registry import OpError, make_call
from byoc_compiler.testing import error_bound
from byoc_compiler.testing.error_bound import reference_with_errors
from byoc_compiler.testing.random_graph import Step, random_recipe
from byoc_compiler.transform.infer_type import infer_type
from byoc_compiler.vendor import runtime_include_flags

for _owner, _ in KEYS.values():       # the owners register on import
    importlib.import_module(_owner)


def test_every_op_has_every_attribute():
    missing = missing_op_attrs()
    assert missing == {}, "\n".join(f"{op}: no {', '.join(keys)}" for op, keys in missing.items())


@pytest.fixture
def planted(monkeypatch):
    """A registered op `test.planted` with every attribute but "flops"; the registries are restored after."""
    name = "test.planted"
    monkeypatch.setitem(registry._REGISTRY, name, registry.OpDef(
        name, ("data",), (), lambda types, a: types[0], lambda args, a: np.asarray(args[0]), "elementwise"))
    for key in KEYS:
        monkeypatch.setitem(attrs._TABLES, key, dict(attrs._TABLES[key]))
    for key in KEYS:
        if key != "flops":
            register_op_attr(name, key, object())
    return name


def test_a_planted_op_without_an_attribute_is_named(planted):
    assert missing_op_attrs() == {planted: ["flops"]}


def _double_rule(ctx) -> str:
    n = math.prod(ctx.outputs[0].shape)
    return f"  for (int64_t i = 0; i < {n}; ++i) out0[i] = in0[i] * 2.0f;"


def _double_maker(b, x):
    return b.step("test.double", [x], 2 * b.bound(x)) if b.dtype(x) == "float32" else None


@pytest.fixture
def double(monkeypatch):
    """A whole new op: `test.double` (x * 2, exact) is its OpDef plus one value per key, nothing else."""
    name = "test.double"
    monkeypatch.setitem(registry._REGISTRY, name, registry.OpDef(
        name, ("data",), (), lambda types, a: types[0], lambda args, a: args[0] * args[0].dtype.type(2),
        "elementwise"))
    for key in KEYS:
        monkeypatch.setitem(attrs._TABLES, key, dict(attrs._TABLES[key]))
    register_op_attr(name, "host_kernel", _double_rule)
    register_op_attr(name, "error_model", error_bound.rounds(name, 0.0))
    register_op_attr(name, "random_maker", _double_maker)
    register_op_attr(name, "flops", lambda call: 0)
    return name


def test_a_new_op_is_its_opdef_and_its_attributes(double, tmp_path):
    assert missing_op_attrs() == {}
    recipe = random_recipe(3, steps=4, ops=(double,))
    steps = [v for v in recipe.values if isinstance(v, Step)]
    assert steps and all(v.op == double and v.args == (i,) for i, v in enumerate(steps))    # a chain on x0
    mod = recipe.to_module()
    x = np.linspace(-3, 3, math.prod(mod["main"].params[0].type_annotation.shape), dtype=np.float32)
    out = reference_with_errors(mod, [x.reshape(mod["main"].params[0].type_annotation.shape)])[0]
    np.testing.assert_array_equal(out.value.reshape(-1), x.astype(np.float64) * 2 ** recipe.op_steps)
    assert not out.error.any()                        # doubling is exact
    call = _typed(double, (3, 5))
    assert call_flops(call) == 0
    source = tmp_path / "k.c"
    source.write_text(emit_kernel(call, "k_double").code)
    needs.programs("gcc")
    subprocess.run(["gcc", "-std=c99", "-Wall", "-Wextra", "-Werror", "-fsyntax-only", *runtime_include_flags(),
                    str(source)], check=True)


def test_the_planted_op_is_gone_afterwards():
    assert not {"test.planted", "test.double"} & set(registry.all_ops())
    assert all(not {"test.planted", "test.double"} & set(op_attr_table(key)) for key in KEYS)


BAD_REGISTRATIONS = [
    pytest.param(lambda: register_op_attr("nn.conv", "flops", 0), "unknown op 'nn.conv'", id="unknown-op"),
    pytest.param(lambda: register_op_attr("nn.conv2d", "flop", 0), "unknown op attribute 'flop'. Did you mean flops?",
                 id="unknown-key"),
    pytest.param(lambda: register_op_attr("nn.conv2d", "flops", 0),
                 "op 'nn.conv2d' has attribute 'flops' registered twice", id="twice"),
    pytest.param(lambda: get_op_attr("test.planted", "flops"), "op 'test.planted' has no attribute 'flops'",
                 id="get-missing"),
]


@pytest.mark.parametrize("call, message", BAD_REGISTRATIONS)
def test_bad_registrations_say_what_is_wrong(planted, call, message):
    with pytest.raises(OpError, match=message.replace(".", r"\.").replace("(", r"\(")):
        call()


def _typed(name, *shapes, **kw):
    params = [Var(f"p{i}", TensorType(s, "float32")) for i, s in enumerate(shapes)]
    mod = infer_type(IRModule({"main": Function(params, make_call(name, *params, **kw))}))
    return mod["main"].body


# op, operand shapes, attrs, multiply-adds x 2 counted by hand
FLOPS = [
    pytest.param("nn.batch_matmul", [(3, 4, 5), (3, 5, 6)], {}, 2 * 3 * 4 * 6 * 5, id="batch_matmul"),
    pytest.param("nn.batch_matmul", [(2, 5, 4), (2, 6, 5)], {"transpose_a": True, "transpose_b": True},
                 2 * 2 * 4 * 6 * 5, id="batch_matmul-transposed"),
    pytest.param("nn.matmul", [(7, 3), (3, 2)], {}, 2 * 7 * 2 * 3, id="matmul"),
    pytest.param("nn.dense", [(4, 9), (5, 9)], {}, 2 * 4 * 5 * 9, id="dense"),
    pytest.param("add", [(4, 9), (4, 9)], {}, 0, id="add"),
]


@pytest.mark.parametrize("name, shapes, kw, expected", FLOPS)
def test_flops_attribute_counts_multiply_adds(name, shapes, kw, expected):
    assert call_flops(_typed(name, *shapes, **kw)) == expected
