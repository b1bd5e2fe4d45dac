"""The IR text format: print -> parse -> print is a fixed point, parse errors point at the right place."""
from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from byoc_compiler import op
from byoc_compiler.ir import Call, Constant, Function, IRModule, TensorType, Tuple, Var, astext, structural_equal
from byoc_compiler.text import MAX_NESTING, ParseError, parse, parse_expr
from byoc_compiler.op.registry import REQUIRED, all_ops


def roundtrip(text: str) -> str:
    return astext(parse(text))


# ---- texts that are already in printed (canonical) form: print(parse(text)) == text ----------------

TVM_SNIPPET = """\
def @main(%x: Tensor[(1, 3, 16, 16), float32], %w: Tensor[(8, 3, 3, 3), float32]) {
  %0 = nn.conv2d(%x, %w, strides=[1, 1], padding=[1, 1, 1, 1]);
  %1 = nn.relu(%0);
  nn.softmax(%1, axis=1)
}
"""

CANONICAL = {
    "conv-relu-softmax": """\
def @main(%x: Tensor[(1, 3, 16, 16), float32], %w: Tensor[(8, 3, 3, 3), float32]) {
  %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1]);
  %1 = nn.relu(%0);
  nn.softmax(%1, axis=1)
}
""",
    "partitioned-module": """\
def @main(%x: Tensor[(10, 10), float32], %y: Tensor[(10, 10), float32]) -> Tensor[(10, 10), float32] {
  %0 = @tvmgen_default_ccompiler_main_0(%x, %y);
  %1 = nn.relu(%0);
  @tvmgen_default_ccompiler_main_2(%1, %y)
}

def @tvmgen_default_ccompiler_main_0(%a: Tensor[(10, 10), float32], %b: Tensor[(10, 10), float32], \
Compiler="ccompiler", global_symbol="tvmgen_default_ccompiler_main_0", Primitive=1, Inline=1) \
-> Tensor[(10, 10), float32] {
  %0 = add(%a, %b);
  multiply(%0, %0)
}

def @tvmgen_default_ccompiler_main_2(%a: Tensor[(10, 10), float32], %b: Tensor[(10, 10), float32], \
Compiler="ccompiler", global_symbol="tvmgen_default_ccompiler_main_2", Primitive=1, Inline=1) \
-> Tensor[(10, 10), float32] {
  subtract(%a, %b)
}
""",
    "tuples-and-getitem": """\
def @main(%x: Tensor[(1, 4, 8, 8), float32], %g: Tensor[(4,), float32], %b: Tensor[(4,), float32], \
%m: Tensor[(4,), float32], %v: Tensor[(4,), float32]) {
  %0 = nn.batch_norm(%x, %g, %b, %m, %v, epsilon=0.001f);
  %1 = %0.0;
  %2 = (%1, %x);
  %3 = concatenate(%2, axis=1);
  %4 = split(%3, indices_or_sections=[2, 5], axis=1);
  %5 = %4.2;
  %6 = %4.0;
  %7 = %0.1;
  (%5, %6, %7)
}
""",
    "one-tuple": """\
def @main(%x: Tensor[(2,), float32]) -> (Tensor[(2,), float32],) {
  %0 = nn.relu(%x);
  (%0,)
}
""",
    "composite-function": """\
def @main(%x: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(4, 3, 3, 3), float32], %b: Tensor[(4,), float32]) {
  %2 = fn (%data: Tensor[(1, 3, 8, 8), float32], %weight: Tensor[(4, 3, 3, 3), float32], \
%bias: Tensor[(4,), float32], Composite="ccompiler.conv2d_bias_relu", \
PartitionedFromPattern="nn.conv2d_nn.bias_add_nn.relu_") {
    %0 = nn.conv2d(%data, %weight, padding=[1, 1, 1, 1]);
    %1 = nn.bias_add(%0, %bias);
    nn.relu(%1)
  };
  %3 = %2(%x, %w, %b);
  %4 = %2(%3, %w, %b);
  nn.max_pool2d(%4, pool_size=[2, 2], strides=[2, 2])
}
""",
    "scalar-constants": """\
def @main(%x: Tensor[(4,), float32], %i: Tensor[(4,), int32], %j: Tensor[(4,), int64]) {
  %0 = add(%x, 1f);
  %1 = multiply(%0, -2.5f);
  %2 = divide(%1, 1e-05f);
  %3 = add(%i, 3);
  %4 = add(%j, 3i64);
  %5 = subtract(%i, -7);
  (%2, %3, %4, %5, True, 3.4028235e+38f)
}
""",
    "small-tensor-constants": """\
def @main(%x: Tensor[(2, 2), float32]) {
  %0 = add(%x, [[1f, 2f], [3f, 4.5f]]);
  %1 = take(%0, [1, 0, 1], axis=0);
  %2 = multiply(%1, [0.1f, -0f]);
  (%2, [1i64, -2i64], [[True, False]])
}
""",
    "hostile-names": """\
def @main(%"x; system(\\"\\");//": Tensor[(2,), float32], %"conv1.weight": Tensor[(2,), float32], \
%"0": Tensor[(2,), float32], %"": Tensor[(2,), float32], %"a\\nb\\\\c": Tensor[(2,), float32]) {
  %0 = add(%"x; system(\\"\\");//", %"conv1.weight");
  %1 = add(%0, %"0");
  %2 = add(%1, %"");
  add(%2, %"a\\nb\\\\c")
}
""",
    "quoted-global-name": """\
def @main(%x: Tensor[(2,), float32]) {
  @"my model/part 0"(%x)
}

def @"my model/part 0"(%y: Tensor[(2,), float32], Compiler="ccompiler", global_symbol="my_model_part_0") {
  nn.relu(%y)
}
""",
    "attribute-kinds": """\
def @main(%x: Tensor[(1, 2, 4, 4), float32], %w: Tensor[(2, 2), float32]) {
  %0 = nn.pad(%x, pad_width=[[0, 0], [0, 0], [1, 2], [3, 4]], pad_value=-1.5f, pad_mode="reflect");
  %1 = clip(%0, a_min=-inf, a_max=inf);
  %2 = nn.leaky_relu(%1, alpha=0.1f);
  %3 = split(%2, indices_or_sections=2, axis=1);
  %4 = %3.0;
  %5 = transpose(%4, axes=[0, 2, 3, 1]);
  %6 = squeeze(%5, axis=[3]);
  %7 = nn.dense(%w, %w, units=2);
  %8 = nn.matmul(%7, %w, transpose_b=True);
  %9 = cast(%8, dtype="int32");
  %10 = nn.conv2d(%x, %x, channels=2, kernel_size=[3, 3]);
  (%6, %9, %10)
}
""",
    "function-returning-tuple-with-types": """\
def @main(%x: Tensor[(3,), float32]) -> (Tensor[(3,), float32], Tensor[(), float32]) {
  %0 = exp(%x);
  (%0, 0f)
}
""",
}


@pytest.mark.parametrize("text", CANONICAL.values(), ids=CANONICAL.keys())
def test_canonical_text_prints_back_identically(text):
    assert roundtrip(text) == text


@pytest.mark.parametrize("text", [*CANONICAL.values(), TVM_SNIPPET], ids=[*CANONICAL.keys(), "tvm-snippet"])
def test_reparsed_module_is_structurally_equal(text):
    mod = parse(text)
    again = parse(astext(mod))
    assert structural_equal(mod, again)


def test_tvm_snippet_reads_with_defaults_filled():
    mod = parse(TVM_SNIPPET)
    softmax = mod["main"].body
    relu = softmax.args[0]
    conv = relu.args[0]
    assert (softmax.op.name, relu.op.name, conv.op.name) == ("nn.softmax", "nn.relu", "nn.conv2d")
    assert softmax.attrs["axis"] == 1
    assert conv.attrs["padding"] == (1, 1, 1, 1)
    assert conv.attrs["strides"] == (1, 1) and conv.attrs["groups"] == 1 and conv.attrs["data_layout"] == "NCHW"
    assert [p.name_hint for p in mod["main"].params] == ["x", "w"]
    assert mod["main"].params[1].type_annotation == TensorType((8, 3, 3, 3), "float32")
    # strides=[1, 1] is the default, so the printed form leaves it out; printing again changes nothing.
    printed = astext(mod)
    assert "strides" not in printed
    assert roundtrip(printed) == printed


# ---- texts as people paste them (TVM output with comments, free_var, let, ...) -----------------

PASTED = {
    "type-comments-and-version": ("""\
#[version = "0.0.5"]
def @main(%x: Tensor[(10, 10), float32] /* ty=Tensor[(10, 10), float32] */) -> Tensor[(10, 10), float32] {
  %0 = add(%x, %x) /* ty=Tensor[(10, 10), float32] */;
  // a line comment
  nn.relu(%0) /* ty=Tensor[(10, 10), float32] */
}
""", """\
def @main(%x: Tensor[(10, 10), float32]) -> Tensor[(10, 10), float32] {
  %0 = add(%x, %x);
  nn.relu(%0)
}
"""),
    "attr-value-spellings": ("""\
def @main(%x: Tensor[(1, 3, 8, 8), float32], %g: Tensor[(3,), float32]) {
  %0 = nn.batch_norm(%x, %g, %g, %g, %g, axis=1, epsilon=1e-05f, center=True, scale=False);
  %1 = nn.lrn(%0.0, size=3, bias=1f, alpha=0.5, beta=1);
  %2 = nn.avg_pool2d(%1, pool_size=[2, 2], padding=[0i64, 1i64], ceil_mode=true, count_include_pad=False);
  nn.dense(nn.batch_flatten(%2), %g, units=None)
}
""", """\
def @main(%x: Tensor[(1, 3, 8, 8), float32], %g: Tensor[(3,), float32]) {
  %0 = nn.batch_norm(%x, %g, %g, %g, %g, scale=False);
  %1 = %0.0;
  %2 = nn.lrn(%1, size=3, bias=1f, alpha=0.5f, beta=1f);
  %3 = nn.avg_pool2d(%2, pool_size=[2, 2], padding=[0, 1, 0, 1], ceil_mode=True);
  %4 = nn.batch_flatten(%3);
  nn.dense(%4, %g)
}
"""),
    "tvm-neutral-attrs-and-1d-shapes": ("""\
def @main(%data: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(4, 3, 3, 3), float32], %b: Tensor[(4), float32]) {
  %0 = nn.conv2d(%data, %w, padding=[0, 0, 0, 0], channels=4, kernel_size=[3, 3], data_layout="NCHW", \
kernel_layout="OIHW", out_layout="", out_dtype="") /* ty=Tensor[(1, 4, 6, 6), float32] */;
  %1 = nn.bias_add(%0, %b) /* ty=Tensor[(1, 4, 6, 6), float32] */;
  %2 = nn.max_pool2d(%1, pool_size=[2, 2], strides=[2, 2], padding=[0, 0, 0, 0], layout="NCHW", out_layout="");
  %3 = reshape(%2, newshape=[1, -1], allowzero=0);
  %4 = take(%3, 0 /* ty=int32 */, axis=1, batch_dims=0, mode="clip");
  nn.dense(%3, %w, units=None, out_dtype="")
}
""", """\
def @main(%data: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(4, 3, 3, 3), float32], %b: Tensor[(4,), float32]) {
  %0 = nn.conv2d(%data, %w, channels=4, kernel_size=[3, 3]);
  %1 = nn.bias_add(%0, %b);
  %2 = nn.max_pool2d(%1, pool_size=[2, 2], strides=[2, 2]);
  %3 = reshape(%2, newshape=[1, -1]);
  nn.dense(%3, %w)
}
"""),
    "let-and-trailing-semicolon-free": ("""\
def @main(%x: Tensor[(2,), float32]) {
  let %y: Tensor[(2,), float32] = nn.relu(%x);
  let %z = negative(%y);
  %z
}
""", """\
def @main(%x: Tensor[(2,), float32]) {
  %0 = nn.relu(%x);
  negative(%0)
}
"""),
    "nested-call-and-tuple-access-chain": ("""\
def @main(%x: Tensor[(1, 6), float32]) {
  %0 = (split(%x, indices_or_sections=3, axis=1), %x);
  add(%0.0.1, %0.0.2)
}
""", """\
def @main(%x: Tensor[(1, 6), float32]) {
  %0 = split(%x, indices_or_sections=3, axis=1);
  %1 = (%0, %x);
  %2 = %1.0;
  %3 = %2.1;
  %4 = %1.0;
  %5 = %4.2;
  add(%3, %5)
}
"""),
    "bare-expression-becomes-main": ("""\
free_var %x: Tensor[(2, 2), float32];
%0 = nn.relu(%x);
nn.softmax(%0)
""", """\
def @main(%x: Tensor[(2, 2), float32]) {
  %0 = nn.relu(%x);
  nn.softmax(%0)
}
"""),
    "block-comment-across-lines": ("""\
/* model exported
   by hand */ def @main(%x: Tensor[(3,), float32]) { /* nothing */ abs(%x) }
""", """\
def @main(%x: Tensor[(3,), float32]) {
  abs(%x)
}
"""),
}


@pytest.mark.parametrize("text,printed", PASTED.values(), ids=PASTED.keys())
def test_pasted_text_reads(text, printed):
    assert roundtrip(text) == printed
    assert roundtrip(printed) == printed


def test_parse_expr_function_and_free_vars():
    func = parse_expr("fn (%a: Tensor[(2,), float32], %b) { add(%a, %b) }")
    assert isinstance(func, Function) and [p.name_hint for p in func.params] == ["a", "b"]
    assert func.params[1].type_annotation is None
    assert func.body.args == tuple(func.params)
    expr = parse_expr("free_var %x: Tensor[(2,), float32];\nnn.relu(%x)")
    assert isinstance(expr, Call) and isinstance(expr.args[0], Var)
    text = astext(expr)
    assert text == "free_var %x: Tensor[(2,), float32];\nnn.relu(%x)\n"
    assert astext(parse_expr(text)) == text


def test_parsed_calls_carry_spans():
    mod = parse(TVM_SNIPPET, source_name="model.txt")
    softmax = mod["main"].body
    conv = softmax.args[0].args[0]
    assert (str(conv.span), str(softmax.span)) == ("model.txt:2:8", "model.txt:4:3")


def test_printer_numbers_and_shares():
    x = Var("x", TensorType((2,)))
    y = Var("x", TensorType((2,)))
    shared = op.nn.relu(op.add(x, y))
    func = Function([x, y], op.multiply(shared, shared))
    assert astext(func) == (
        "fn (%x: Tensor[(2,), float32], %x_1: Tensor[(2,), float32]) {\n"
        "  %0 = add(%x, %x_1);\n"
        "  %1 = nn.relu(%0);\n"
        "  multiply(%1, %1)\n"
        "}\n")
    assert repr(func) == astext(func)
    assert str(IRModule({"main": func})) == "def @main" + astext(func)[len("fn "):]


def test_show_types_comments():
    from byoc_compiler.transform import infer_type

    mod = infer_type(parse(CANONICAL["conv-relu-softmax"]))
    typed = astext(mod, show_types=True)
    assert "%1 = nn.relu(%0); /* ty=Tensor[(1, 8, 16, 16), float32] */" in typed
    assert "-> Tensor[(1, 8, 16, 16), float32]" in typed  # the return type is known once inferred
    assert astext(parse(typed)) == astext(mod)


# ---- constants ---------------------------------------------------------------------------------

def _special_floats(n: int) -> np.ndarray:
    rng = np.random.default_rng(7)
    data = rng.standard_normal(n).astype(np.float32)
    data[:6] = [np.nan, -np.inf, np.inf, -0.0, np.float32(1e-45), np.finfo(np.float32).max]
    data.view(np.uint32)[6] = 0x7FC01234  # a NaN with a payload
    return data


LARGE_CONSTANTS = {
    "float32-specials": _special_floats(64).reshape(4, 16),
    "int32": np.arange(-50, 50, dtype=np.int32).reshape(10, 10),
    "int64": (np.arange(20, dtype=np.int64) * 3_000_000_000).reshape(4, 5),
    "bool": np.arange(30) % 3 == 0,
    "uint8": np.arange(40, dtype=np.uint8),
    "empty": np.zeros((0, 3), np.float32),
    "nan-scalar": np.array(np.nan, dtype=np.float32),
    "inf-in-small-tensor": np.array([1, np.inf], dtype=np.float32),
    "big-endian": np.arange(20, dtype=">f4"),
}


@pytest.mark.parametrize("data", LARGE_CONSTANTS.values(), ids=LARGE_CONSTANTS.keys())
def test_metadata_constants_round_trip_bit_exactly(data):
    x = Var("x", TensorType((2,)))
    const = Constant(data)
    func = Function([x], Tuple([x, const, const]))
    text = astext(IRModule({"main": func}))
    assert "meta[relay.Constant][0]" in text and "meta[relay.Constant][1]" not in text  # shared: one entry
    assert "\n#[metadata]\n" in text
    back = parse(text)["main"].body
    got = back.fields[1].data
    assert got.dtype == data.dtype.newbyteorder("=") and got.shape == data.shape
    assert got.tobytes() == data.astype(data.dtype.newbyteorder("=")).tobytes()
    assert back.fields[1] is back.fields[2]  # the same meta index reads back as one constant
    assert roundtrip(text) == text


@pytest.mark.parametrize("data", LARGE_CONSTANTS.values(), ids=LARGE_CONSTANTS.keys())
def test_sidecar_constants_round_trip_bit_exactly(data):
    """With a sidecar (model.txt + model.txt.bin), every constant of 8+ bytes is out of line; both
    forms read back to the same bits, and the sidecar form prints back to the same text."""
    from byoc_compiler.ir.printer import astext_with_sidecar

    x = Var("x", TensorType((2,)))
    const = Constant(data)
    mod = IRModule({"main": Function([x], Tuple([x, const, const]))})
    text, blob = astext_with_sidecar(mod, "m.bin", sidecar_bytes=8)
    if data.nbytes >= 8:
        assert '"file": "m.bin"' in text and '"data"' not in text and len(blob) >= data.nbytes
    back = parse(text, files={"m.bin": blob})["main"].body
    got = back.fields[1].data
    assert got.dtype == data.dtype.newbyteorder("=") and got.shape == data.shape
    assert got.tobytes() == data.astype(data.dtype.newbyteorder("=")).tobytes()
    assert back.fields[1] is back.fields[2]
    assert astext_with_sidecar(parse(text, files={"m.bin": blob}), "m.bin", sidecar_bytes=8) == (text, blob)
    assert astext(parse(text, files={"m.bin": blob})) == astext(mod)       # same as the all-in-one text


def test_sidecar_offsets_are_aligned_and_large_only():
    from byoc_compiler.ir.printer import SIDECAR_ALIGNMENT, astext_with_sidecar

    x = Var("x", TensorType((2,)))
    small, big1, big2 = (Constant(np.full(n, 1.5, np.float32)) for n in (20, 300, 257))
    text, blob = astext_with_sidecar(IRModule({"main": Function([x], Tuple([x, small, big1, big2]))}), "w.bin")
    entries = json.loads(text.split("#[metadata]\n", 1)[1])["relay.Constant"]
    assert ["data" in e for e in entries] == [True, False, False]      # 80 bytes inline; 1200 and 1028 out
    assert [e["offset"] % SIDECAR_ALIGNMENT for e in entries[1:]] == [0, 0]
    assert len(blob) == entries[2]["offset"] + 1028


@pytest.mark.parametrize("files,message", [
    (None, "parsed without its files"),
    ({}, "cannot read the constant file 'w.bin'"),
    ({"w.bin": b"\0" * 10}, "past its end"),
], ids=["no-files", "missing", "short"])
def test_sidecar_problems_are_one_clear_error(files, message):
    from byoc_compiler.ir.printer import astext_with_sidecar

    x = Var("x", TensorType((2,)))
    text, _ = astext_with_sidecar(IRModule({"main": Function([x], Tuple([x, Constant(np.ones(400, np.float32))]))}),
                                  "w.bin")
    with pytest.raises(ParseError, match=message):
        parse(text, files=files)


def test_sidecar_name_cannot_leave_the_directory():
    text = ('def @main() { meta[relay.Constant][0] }\n#[metadata]\n{"relay.Constant": [{"dtype": "float32", '
            '"shape": [1], "file": "../secret", "offset": 0, "nbytes": 4}]}\n')
    with pytest.raises(ParseError, match="must be a plain file name"):
        parse(text, files=lambda name: b"\0" * 4)


INLINE_CONSTANTS = {
    "f32-scalar": (np.float32(0.1), "0.1f"),
    "f32-negative-zero": (np.float32(-0.0), "-0f"),
    "f32-tiny": (np.float32(1e-45), "1e-45f"),
    "i32-scalar": (np.int32(-3), "-3"),
    "i64-scalar": (np.int64(3), "3i64"),
    "bool-scalar": (np.bool_(False), "False"),
    "f32-16-elements": (np.arange(16, dtype=np.float32).reshape(2, 2, 4) / 4,
                        "[[[0f, 0.25f, 0.5f, 0.75f], [1f, 1.25f, 1.5f, 1.75f]], "
                        "[[2f, 2.25f, 2.5f, 2.75f], [3f, 3.25f, 3.5f, 3.75f]]]"),
    "i32-row": (np.array([[7, -8]], np.int32), "[[7, -8]]"),
}


@pytest.mark.parametrize("value,spelled", INLINE_CONSTANTS.values(), ids=INLINE_CONSTANTS.keys())
def test_inline_constants(value, spelled):
    data = np.asarray(value)
    text = astext(Constant(data))
    assert text == spelled + "\n"
    back = parse_expr(text)
    assert isinstance(back, Constant)
    assert back.data.dtype == data.dtype and back.data.shape == data.shape
    assert back.data.tobytes() == data.tobytes()


def test_seventeen_elements_go_to_metadata():
    assert "meta[relay.Constant][0]" in astext(Constant(np.zeros(17, np.float32)))


@settings(max_examples=150, deadline=None)
@given(st.floats(width=32, allow_nan=False, allow_infinity=False))
def test_any_finite_float32_scalar_round_trips(value):
    data = np.array(value, dtype=np.float32)
    back = parse_expr(astext(Constant(data)))
    assert back.data.dtype == np.float32 and back.data.tobytes() == data.tobytes()


@settings(max_examples=150, deadline=None)
@given(st.floats(allow_nan=False))
def test_any_float_attribute_round_trips(value):
    call = op.clip(Var("x", TensorType((1,))), value, 1.0)
    back = parse_expr(astext(call).replace("free_var %x;\n", "free_var %x: Tensor[(1,), float32];\n"))
    assert back.attrs["a_min"] == value and math.copysign(1, back.attrs["a_min"]) == math.copysign(1, value)


# ---- names -------------------------------------------------------------------------------------

HOSTILE_NAMES = ['x; system("");//', "conv1.weight", "0", "12abc", "", 'a"b\\c', "line\nbreak", "tab\there",
                 "ünïcödé", "emoji😀", "onnx::Conv_0", "%x", "@main", "*/ oops /*", "x_1", "\x00\x7f"]


@pytest.mark.parametrize("name", HOSTILE_NAMES, ids=[repr(n) for n in HOSTILE_NAMES])
def test_any_var_name_round_trips(name):
    plain = Var("x", TensorType((2,)))
    odd = Var(name, TensorType((2,)))
    func = Function([plain, odd], op.add(plain, op.nn.relu(odd)))
    text = astext(IRModule({"main": func}))
    assert "\n" not in text.split("{")[0]  # the header stays on one line
    back = parse(text)["main"]
    expected = [p.name_hint for p in back.params]
    assert expected[1] == (name if name != "x" else "x_1")
    assert structural_equal(back, func)
    assert roundtrip(text) == text


@settings(max_examples=200, deadline=None)
@given(name=st.text(), symbol=st.text())
def test_any_unicode_name_and_string_attr_round_trip(name, symbol):
    var = Var(name, TensorType((2,)))
    mod = IRModule({"main": Function([var], op.nn.relu(var), attrs={"global_symbol": symbol})})
    text = astext(mod)
    back = parse(text)["main"]
    assert back.params[0].name_hint == name and back.attrs["global_symbol"] == symbol
    assert astext(IRModule({"main": back})) == text


def test_duplicate_and_colliding_names_stay_distinct():
    a, b, c = Var("x"), Var("x"), Var("x_1")
    func = Function([a, b, c], Tuple([a, b, c]))
    text = astext(func)
    assert text.startswith("fn (%x, %x_1, %x_1_1) {")
    back = parse_expr(text)
    assert structural_equal(back, func)
    assert astext(back) == text


# ---- every op and every attribute kind -----------------------------------------------------

# Non-default values for every attribute of every op (kinds: int, float, bool, str, None, lists,
# nested pairs, int-or-list); ops not listed here are printed with their defaults.
NON_DEFAULT_ATTRS = {
    "clip": {"a_min": -1.25, "a_max": 6.0},
    "nn.leaky_relu": {"alpha": 0.2},
    "cast": {"dtype": "int64"},
    "nn.conv2d": {"strides": (2, 1), "padding": (1, 2, 3, 4), "dilation": (2, 2), "groups": 2, "channels": 8,
                  "kernel_size": (3, 3), "out_dtype": "float32"},
    "nn.max_pool2d": {"pool_size": (3, 3), "strides": (2, 2), "dilation": (1, 2), "padding": (1, 1, 1, 1),
                      "ceil_mode": True},
    "nn.avg_pool2d": {"pool_size": (2, 2), "padding": (0, 1, 0, 1), "count_include_pad": True, "rounding": "tflite"},
    "reshape": {"newshape": (0, -1)},
    "transpose": {"axes": (1, 0)},
    "concatenate": {"axis": -1},
    "split": {"indices_or_sections": (1, 3), "axis": 1},
    "squeeze": {"axis": (0, 2)},
    "expand_dims": {"axis": -1, "num_newaxis": 2},
    "take": {"axis": 1, "mode": "wrap"},
    "nn.pad": {"pad_width": ((0, 0), (1, 2)), "pad_value": 0.5, "pad_mode": "edge"},
    "nn.dropout": {"rate": 0.25},
    "nn.dense": {"units": 16},
    "nn.matmul": {"transpose_a": True, "transpose_b": True},
    "nn.bias_add": {"axis": -1},
    "nn.batch_norm": {"axis": 3, "epsilon": 0.001, "center": False, "scale": False},
    "nn.softmax": {"axis": 0},
    "nn.lrn": {"size": 3, "axis": 3, "bias": 1.0, "alpha": 0.001, "beta": 0.5},
    "nn.hard_sigmoid": {"alpha": 0.25, "beta": 0.75},
    "nn.gelu": {"approximate": "tanh"},
    **{name: {"axis": (0, -1), "keepdims": True} for name in ("sum", "mean", "max", "min", "prod")},
    "argmax": {"axis": 1, "keepdims": False, "select_last_index": True},
    "argmin": {"axis": -1, "keepdims": False},
    "strided_slice": {"begin": (0, -1), "end": (2, -3), "strides": (1, -1)},
    "tile": {"reps": (2, 3)},
    "broadcast_to": {"shape": (3, 2, 2)},
    "nn.batch_matmul": {"transpose_a": True, "transpose_b": True},
    "nn.layer_norm": {"axis": 0, "epsilon": 0.001},
    "image.resize": {"size": (4, 3), "scales": (2.0, 1.5), "roi": (0.0, 0.1, 1.0, 0.9), "method": "linear",
                     "coordinate_transformation_mode": "tf_crop_and_resize", "nearest_mode": "ceil",
                     "cubic_coeff_a": -0.5, "exclude_outside": True, "extrapolation_value": 1.5, "antialias": True},
}
REQUIRED_ONLY = {"clip": {"a_min": 0.0, "a_max": 6.0}, "cast": {"dtype": "int32"}, "reshape": {"newshape": (-1,)},
                 "split": {"indices_or_sections": 2}, "expand_dims": {"axis": 0},
                 "nn.pad": {"pad_width": ((1, 1),)}, "strided_slice": {"begin": (0,), "end": (1,), "strides": (1,)},
                 "tile": {"reps": (2,)}, "broadcast_to": {"shape": (2, 2)},
                 "image.resize": {"size": (4, 4), "scales": (2.0, 2.0)},
                 "qnn.quantize": {"scale": (0.5,)}, "qnn.dequantize": {"scale": (0.5,)},
                 "qnn.requantize": {"input_scale": (0.5,), "output_scale": (0.25,)},
                 "qnn.add": {"lhs_scale": (0.5,), "rhs_scale": (0.5,), "output_scale": (1.0,)},
                 "qnn.mul": {"lhs_scale": (0.5,), "rhs_scale": (0.5,), "output_scale": (1.0,)},
                 "qnn.concatenate": {"input_scales": (0.5, 0.25), "input_zero_points": (0, 1), "output_scale": 0.5},
                 "qnn.avg_pool2d": {"input_scale": (0.5,), "output_scale": (0.25,)},
                 "qnn.softmax": {"input_scale": 0.5},
                 "qnn.subtract": {"lhs_scale": (0.5,), "rhs_scale": (0.5,), "output_scale": (1.0,)},
                 "qnn.mean": {"input_scale": 0.5, "output_scale": 0.25}, "qnn.sum": {"input_scale": 0.5, "output_scale": 2.0},
                 "qnn.l2_normalize": {}}
NON_DEFAULT_ATTRS.update({
    "qnn.quantize": {"scale": (0.5, 0.25), "zero_point": (1, -2), "axis": 0, "out_dtype": "uint8",
                     "rounding": "tflite"},
    "qnn.dequantize": {"scale": (0.5, 0.25), "zero_point": (3, 4), "axis": 0},
    "qnn.requantize": {"input_scale": (0.5,), "input_zero_point": (2,), "output_scale": (0.25,),
                       "output_zero_point": (-1,), "axis": 0, "out_dtype": "uint8", "rounding": "fixed_point"},
    "qnn.conv2d": {"strides": (2, 1), "padding": (1, 0, 1, 0), "input_zero_point": 3, "kernel_zero_point": (1,)},
    "qnn.dense": {"input_zero_point": -2, "kernel_zero_point": (1, 2), "units": 2},
    "qnn.matmul": {"a_zero_point": 5, "b_zero_point": (1, 2)},
    "qnn.add": {"lhs_scale": (0.5,), "lhs_zero_point": 1, "rhs_scale": (0.5,), "rhs_zero_point": 2,
                "output_scale": (1.0,), "output_zero_point": 3, "rounding": "fixed_point"},
    "qnn.mul": {"lhs_scale": (0.5,), "lhs_zero_point": 1, "rhs_scale": (0.5,), "rhs_zero_point": 2,
                "output_scale": (1.0,), "output_zero_point": 3, "rounding": "tflite"},
    "qnn.concatenate": {"input_scales": (0.5, 0.25), "input_zero_points": (0, 1), "output_scale": 0.5,
                        "output_zero_point": 7, "axis": 1, "rounding": "fixed_point"},
    "qnn.avg_pool2d": {"pool_size": (2, 2), "strides": (2, 2), "padding": (1, 1, 1, 1), "ceil_mode": True,
                       "count_include_pad": True, "input_scale": (0.5,), "input_zero_point": 2, "output_scale": (0.25,),
                       "output_zero_point": -3},
    "qnn.softmax": {"input_scale": 0.5, "beta": 0.25, "axis": 0},
    "qnn.subtract": {"lhs_scale": (0.5,), "lhs_zero_point": 1, "rhs_scale": (0.5,), "rhs_zero_point": 2,
                     "output_scale": (1.0,), "output_zero_point": 3},
    **{name: {"axis": (0,), "keepdims": True, "input_scale": 0.5, "input_zero_point": 1, "output_scale": 0.25,
              "output_zero_point": -2} for name in ("qnn.mean", "qnn.sum")},
    "qnn.l2_normalize": {"input_zero_point": 3, "axis": 0},
})


def _call_of(name: str, attrs: dict) -> tuple[Function, Call]:
    opdef = all_ops()[name]
    params = [Var(arg, TensorType((2, 2))) for arg in opdef.inputs]
    args = [Tuple(params)] if opdef.tuple_input else params
    call = op.registry.make_call(name, *args, **attrs)
    return Function(params, call), call


@pytest.mark.parametrize("attrs_table", ["defaults", "non-defaults"])
@pytest.mark.parametrize("name", list(all_ops()))
def test_every_op_round_trips(name, attrs_table):
    table = REQUIRED_ONLY if attrs_table == "defaults" else NON_DEFAULT_ATTRS
    required = [a.name for a in all_ops()[name].attrs if a.default is REQUIRED]
    attrs = table.get(name, {})
    assert set(required) <= set(attrs), f"add {name} to the attribute tables of this test"
    func, call = _call_of(name, attrs)
    text = astext(IRModule({"main": func}))
    back = parse(text)["main"].body
    assert back.op.name == name
    assert dict(back.attrs) == dict(call.attrs)
    for key, value in attrs.items():  # every value given differs from the default, so it is printed
        assert re.search(rf"\b{key}=", text), key
    assert roundtrip(text) == text


def test_attribute_table_really_covers_every_non_default():
    for name, attrs in NON_DEFAULT_ATTRS.items():
        opdef = all_ops()[name]
        for key, value in attrs.items():
            assert opdef.attr_index[key].default != value, (name, key)


# ---- errors ------------------------------------------------------------------------------------

MAIN = "def @main(%x: Tensor[(2, 2), float32]) {\n"
ERRORS = {
    "missing-close-paren": (MAIN + "  %0 = nn.relu(%x;\n  %0\n}\n", 2, 18,
                            "expected ',' or ')' in the argument list, found ';'"),
    "unknown-op": (MAIN + "  nn.rleu(%x)\n}\n", 2, 3, "unknown op 'nn.rleu'. Did you mean nn.relu"),
    "unknown-attribute": (MAIN + "  nn.softmax(%x, axes=1)\n}\n", 2, 18,
                          "nn.softmax has no attribute 'axes' (allowed: axis)"),
    "bad-attribute-value": (MAIN + "  %0 = nn.conv2d(%x, %x,\n      strides=\"two\");\n  %0\n}\n", 3, 7,
                            "nn.conv2d: attribute 'strides' must be a list of integers"),
    "missing-required-attribute": (MAIN + "  clip(%x, a_min=0f)\n}\n", 2, 3, "clip: attribute 'a_max' is required"),
    "wrong-argument-count": (MAIN + "  add(%x)\n}\n", 2, 3, "add takes 2 arguments"),
    "undefined-var": (MAIN + "  %0 = add(%x, %y);\n  %0\n}\n", 2, 16,
                      "expected a defined variable, found undefined %y"),
    "undefined-number": (MAIN + "  nn.relu(%3)\n}\n", 2, 11, "found undefined %3"),
    "missing-semicolon": (MAIN + "  %0 = nn.relu(%x)\n  nn.relu(%0)\n}\n", 3, 3,
                          "expected ';' after the binding, found 'nn.relu'"),
    "unterminated-string": (MAIN + '  cast(%x, dtype="int32)\n}\n', 2, 18, "unexpected an unterminated string"),
    "unterminated-comment": (MAIN + "  /* never closed\n  %x\n}\n", 2, 3, "unexpected an unterminated comment"),
    "bad-character": (MAIN + "  nn.relu($x)\n}\n", 2, 11, "unexpected character '$'"),
    "bad-type": ("def @main(%x: Tensor[(2, 2), bfloat16]) {\n  %x\n}\n", 1, 30, "expected a dtype"),
    "missing-metadata": (MAIN + "  add(%x, meta[relay.Constant][0])\n}\n", 2, 11, "no `#[metadata]` section"),
    "metadata-index-out-of-range": (MAIN + "  add(%x, meta[relay.Constant][1])\n}\n#[metadata]\n"
                                    '{"relay.Constant": [{"dtype": "float32", "shape": [], "data": "AAAAAA=="}]}\n',
                                    2, 32, "out of range"),
    "duplicate-binding": (MAIN + "  %0 = nn.relu(%x);\n  %0 = nn.relu(%0);\n  %0\n}\n", 3, 3, "%0 is defined twice"),
    "undefined-global": (MAIN + "  @nowhere(%x)\n}\n", 2, 3, "@nowhere is not defined in this module"),
    "duplicate-function": (MAIN + "  %x\n}\n" + MAIN + "  %x\n}\n", 4, 5, "@main is defined twice"),
    "end-of-input": (MAIN + "  nn.relu(%x)\n", 3, 1, "expected ';' or '}', found end of input"),
    "ragged-tensor": (MAIN + "  add(%x, [[1f, 2f], [3f]])\n}\n", 2, 11, "bad constant tensor"),
    "mixed-dtype-tensor": (MAIN + "  add(%x, [1f, 2])\n}\n", 2, 11, "mix dtypes"),
    "non-neutral-relay-attribute": (MAIN + '  nn.max_pool2d(%x, out_layout="NHWC")\n}\n', 2, 21,
                                    "nn.max_pool2d has no attribute 'out_layout'"),
    "duplicate-attribute": (MAIN + "  nn.softmax(%x, axis=1, axis=0)\n}\n", 2, 26, "attribute 'axis' is given twice"),
    "junk-after-module": (MAIN + "  %x\n}\n}\n", 4, 1, "expected 'def' or end of input, found '}'"),
}


@pytest.mark.parametrize("text,line,col,message", ERRORS.values(), ids=ERRORS.keys())
def test_parse_errors_point_at_the_problem(text, line, col, message):
    with pytest.raises(ParseError) as info:
        parse(text, source_name="bad.txt")
    err = info.value
    assert isinstance(err, ValueError)
    assert (err.line, err.column) == (line, col), str(err)
    first, shown, caret = str(err).split("\n")
    assert first.startswith(f"bad.txt:{line}:{col}: ")
    assert message in first
    assert shown == text.split("\n")[line - 1]
    assert caret == " " * (col - 1) + "^"


@pytest.mark.parametrize("section", ["{not json", '{"root": 1, "nodes": [], "b64ndarrays": []}',
                                     '{"relay.Constant": [{"dtype": "float32", "shape": [2], "data": "AAAAAA=="}]}'],
                         ids=["not-json", "tvm-format", "wrong-byte-count"])
def test_malformed_metadata_is_an_error(section):
    text = MAIN + "  %x\n}\n#[metadata]\n" + section + "\n"
    with pytest.raises(ParseError, match=r"^<string>:4:1: bad #\[metadata\] section"):
        parse(text)


# ---- scale -------------------------------------------------------------------------------------

@pytest.mark.parametrize("depth,ok", [(MAX_NESTING - 1, True), (MAX_NESTING, False), (5000, False)])
def test_deep_nesting_in_the_text_is_refused_clearly(depth, ok):
    # `depth` calls around %x: the innermost argument is expression level depth + 1.
    text = MAIN + "  " + "nn.relu(" * depth + "%x" + ")" * depth + "\n}\n"
    if ok:
        body = parse(text)["main"].body
        assert body.op.name == "nn.relu"
        return
    with pytest.raises(ParseError) as info:
        parse(text)
    first, shown, caret = str(info.value).split("\n")
    assert f"nested more than {MAX_NESTING} deep; bind intermediate values" in first
    assert info.value.column == 3 + len("nn.relu(") * MAX_NESTING
    # A long line is shown as a window around the problem, the caret still under it.
    assert len(shown) <= 126 and shown.startswith("...")
    assert shown[len(caret) - 1:].startswith("%x)))" if depth == MAX_NESTING else "nn.relu(")


# Other recursive parts of the text: each refused at some depth with one ParseError, never a RecursionError.
DEEP_TEXTS = [
    ("tuple-type", "def @main(%x: " + "(" * 5000 + "Tensor[(1), float32]" + ",)" * 5000 + ") {\n  %x\n}\n",
     f"tuple types nested more than {MAX_NESTING} deep"),
    ("attribute-list", MAIN + "  nn.max_pool2d(%x, pool_size=" + "[" * 5000 + "1" + "]" * 5000 + ")\n}\n",
     f"attribute lists nested more than {MAX_NESTING} deep"),
    ("metadata-json", MAIN + "  %x\n}\n#[metadata]\n" + "[" * 100000 + "]" * 100000 + "\n",
     "bad #[metadata] section: maximum recursion depth exceeded"),
]


@pytest.mark.parametrize("text,message", [c[1:] for c in DEEP_TEXTS], ids=[c[0] for c in DEEP_TEXTS])
def test_deep_nesting_elsewhere_is_one_parse_error(text, message):
    with pytest.raises(ParseError, match=re.escape(message)):
        parse(text)


def test_long_line_excerpt_keeps_caret_on_target():
    text = MAIN + "  %0 = (" + "%x, " * 100 + "%y, " + "%x, " * 100 + "%x);\n  %0\n}\n"
    with pytest.raises(ParseError) as info:
        parse(text)
    _, shown, caret = str(info.value).split("\n")
    assert shown[len(caret) - 1:].startswith("%y") and shown.startswith("...") and shown.endswith("...")


def test_parse_wants_str():
    with pytest.raises(TypeError, match="parse expects the text as a str, got bytes"):
        parse(b"def @main() { 1f }")


def test_chain_far_beyond_the_recursion_limit_prints_and_parses():
    # 20,000 nodes: twenty times Python's recursion limit, so a recursive printer or parser fails
    # (tests/test_chain.py takes a 100,000-node chain through every whole-graph stage)
    x = Var("x", TensorType((4,)))
    expr = x
    for _ in range(20_000):
        expr = op.nn.relu(expr)
    mod = IRModule({"main": Function([x], expr)})
    text = astext(mod)
    lines = text.splitlines()
    assert len(lines) == 20_002
    assert lines[1] == "  %0 = nn.relu(%x);" and lines[-2] == "  nn.relu(%19998)"
    back = parse(text)
    body, depth = back["main"].body, 0
    while isinstance(body, Call):
        body, depth = body.args[0], depth + 1
    assert depth == 20_000 and body is back["main"].params[0]
