"""The examplejson codegen: golden texts of zoo regions (constants' data elided, checked bit-exact
separately), the guide's conventions (inputs first, last op is the result, `output` only when needed),
and one clear error for what ExampleJSON cannot express. BYOC_UPDATE_GOLDEN=1 rewrites the golden files."""
import base64
import os
import re
from pathlib import Path

import numpy as np
import pytest

import byoc_compiler
from byoc_compiler import op, zoo
from byoc_compiler.errors import ByocError
from byoc_compiler.ir.expr import Constant, Function, Tuple, Var
from byoc_compiler.ir.module import IRModule
from byoc_compiler.ir.types import TensorType
from byoc_compiler.transform import InferType
from byoc_compiler.contrib.examplejson.codegen import examplejson_codegen, subgraph_text

GOLDEN = Path(__file__).parent / "golden" / "examplejson"
DATA = re.compile(r"data: (\S+)")


def _regions(name):
    mod = InferType()(byoc_compiler.partition_for("examplejson", zoo.get(name)))
    return [(str(f.attrs["global_symbol"]), f) for g, f in mod.items() if g != "main"]


def _elided(text):
    return DATA.sub("data: ...", text)


@pytest.mark.parametrize("name", ["mlp", "small_cnn", "multi_output", "residual_block"])
def test_zoo_regions_match_golden_text(name):
    text = "".join(examplejson_codegen(f, s).text for s, f in _regions(name))
    path = GOLDEN / f"{name}.ej"
    if os.environ.get("BYOC_UPDATE_GOLDEN"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_elided(text))
    assert path.exists(), f"no golden file {path}; create it with BYOC_UPDATE_GOLDEN=1"
    assert _elided(text) == path.read_text()


def test_constants_are_little_endian_float32_bit_exact():
    (symbol, func), = _regions("mlp")
    text = examplejson_codegen(func, symbol).text
    consts = [n.data for n in _constants(func)]
    blobs = [base64.b64decode(m) for m in DATA.findall(text)]
    assert len(blobs) == len(consts) == 6
    for blob, const in zip(blobs, consts):
        assert np.array_equal(np.frombuffer(blob, "<f4").reshape(const.shape), const)


def _constants(func):
    from byoc_compiler.ir.visitor import post_order

    return [n for n in post_order(func.body) if isinstance(n, Constant)]


def _func(params, body):
    return InferType()(IRModule.from_expr(Function(params, body)))["main"]


X = Var("x", TensorType((2, 3), "float32"))
Y = Var("y", TensorType((2, 3), "float32"))

CASES = {
    "last-op-is-result": (lambda: _func([X, Y], op.nn.relu(op.add(X, Y))),
                          "r\n  input 0 2 3\n  input 1 2 3\n  add 2 inputs: 0 1 shape: 2 3\n"
                          "  nn.relu 3 inputs: 2 shape: 2 3\n"),
    "tuple-result": (lambda: _func([X], Tuple([op.exp(X), X])),
                     "r\n  input 0 2 3\n  exp 1 inputs: 0 shape: 2 3\n  output 1 0\n"),
    "earlier-op-result": (lambda: _func([X], (lambda e: Tuple([e, op.negative(e)]))(op.exp(X))),
                          "r\n  input 0 2 3\n  exp 1 inputs: 0 shape: 2 3\n  negative 2 inputs: 1 shape: 2 3\n"
                          "  output 1 2\n"),
    "scalar-const-and-floats": (lambda: _func([X], op.nn.leaky_relu(op.clip(op.multiply(X, Constant(np.float32(2))),
                                                                           -1.5, float("inf")), alpha=0.25)),
                                "r\n  input 0 2 3\n  const 1 data: AAAAQA==\n  multiply 2 inputs: 0 1 shape: 2 3\n"
                                "  clip 3 inputs: 2 shape: 2 3 a_min: -1.5 a_max: inf\n"
                                "  nn.leaky_relu 4 inputs: 3 shape: 2 3 alpha: 0.25\n"),
    "reused-input": (lambda: _func([X], op.multiply(X, X)),
                     "r\n  input 0 2 3\n  multiply 1 inputs: 0 0 shape: 2 3\n"),
}


@pytest.mark.parametrize("name", CASES)
def test_small_regions(name):
    make, expected = CASES[name]
    assert subgraph_text(make(), "r") == expected


def test_artifact_is_the_text_and_names_the_runtime():
    art = examplejson_codegen(CASES["reused-input"][0](), "r")
    assert art.kind == "examplejson" and art.blob == art.text.encode()
    assert {Path(s).name for s in art.runtime_sources} == {"ej_parse.c", "ej_ops.c", "ej_kernels.c", "ej_module.c"}


def _unary(fn, ty):
    v = Var("v", ty)
    return _func([v], fn(v))


UNSUPPORTED = {
    "op": (lambda: _func([X], op.transpose(X)), "ExampleJSON has no op transpose"),
    "dtype": (lambda: _unary(op.negative, TensorType((2,), "int32")), "dtype int32"),
    "rank": (lambda: _unary(op.exp, TensorType((1,) * 9, "float32")), "up to 8 dims"),
}


@pytest.mark.parametrize("name", UNSUPPORTED)
def test_unsupported_regions_fail_with_one_message(name):
    make, fragment = UNSUPPORTED[name]
    with pytest.raises(ByocError, match=re.escape(fragment)):
        examplejson_codegen(make(), "r")
