"""One home per op: every op of the registry has every attribute of op/attrs.py's KEYS (its host kernel rule,
error model, random-graph maker and FLOP count), each registered by the layer that owns it; a missing one is
named per op; `op` itself imports none of those layers."""
from __future__ import annotations

import importlib
import subprocess
import sys

import numpy as np
import pytest

from byoc_compiler.debug.flops import call_flops
from byoc_compiler.ir.expr import Function, Var
from byoc_compiler.ir.module import IRModule
from byoc_compiler.ir.types import TensorType
from byoc_compiler.op import attrs, registry
from byoc_compiler.op.attrs import KEYS, get_op_attr, missing_op_attrs, op_attr_table, register_op_attr
from byoc_compiler.op.registry import OpError, make_call
from byoc_compiler.transform.infer_type import infer_type

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


def test_the_planted_op_is_gone_afterwards():
    assert "test.planted" not in registry.all_ops()
    assert all("test.planted" not in op_attr_table(key) for key in KEYS)


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


def test_op_imports_none_of_the_owners():
    owners = [owner for owner, _ in KEYS.values()]
    code = ("import sys, byoc_compiler.op; "
            f"print([m for m in {owners!r} if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


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
