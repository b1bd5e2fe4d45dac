"""The ExampleJSON runtime (targets/examplejson/runtime) driven through ctypes: the guide's text parses and
computes what numpy computes; every op against the op registry's numpy reference; malformed text fails
with line:column; the module also loads from a file and gives its text back."""
import numpy as np
import pytest

from byoc_compiler import op
from byoc_compiler.errors import ByocError
from byoc_compiler.ir.expr import Constant, Function, Var
from byoc_compiler.ir.module import IRModule
from byoc_compiler.ir.types import TensorType
from byoc_compiler.testing.reference import run_reference
from byoc_compiler.transform import InferType
from byoc_compiler.contrib.examplejson.codegen import subgraph_text
from byoc_compiler.contrib.examplejson.loader import ExampleJsonModule

# The guide's text, exactly as the guide writes it (its second example uses `sub`).
GUIDE_SMALL = """subgraph_0
  input 0 10 10
  input 1 10 10
  add 2 inputs: 0 1 shape: 10 10
"""
GUIDE_CHAIN = """subgraph_0
  input 0 10 10
  input 1 10 10
  input 2 10 10
  input 3 10 10    
  add 4 inputs: 0 1 shape: 10 10
  sub 5 inputs: 4 2 shape: 10 10
  add 6 inputs: 5 3 shape: 10 10
"""


def _inputs(n, shape=(10, 10), seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(np.float32) for _ in range(n)]


@pytest.mark.parametrize("text,n,expected", [
    (GUIDE_SMALL, 2, lambda a, b: a + b),
    (GUIDE_CHAIN, 4, lambda a, b, c, d: a + b - c + d),
    (GUIDE_SMALL.replace("add", "subtract"), 2, lambda a, b: a - b),
    (GUIDE_SMALL.replace("add", "sub"), 2, lambda a, b: a - b),
    (GUIDE_SMALL.replace("add", "multiply"), 2, lambda a, b: a * b),
    (GUIDE_SMALL.replace("add", "mul"), 2, lambda a, b: a * b),
], ids=["add", "add-sub-add", "subtract", "sub-alias", "multiply", "mul-alias"])
def test_guide_text_runs_like_numpy(text, n, expected):
    m = ExampleJsonModule.from_text(text)
    assert m.subgraphs() == ["subgraph_0"]
    xs = _inputs(n)
    (got,) = m.run("subgraph_0", *xs)
    np.testing.assert_array_equal(got, expected(*xs))   # one float op per element: exact
    assert m.source() == text                           # the guide's GetSource / SaveToBinary


def test_load_file_several_subgraphs_and_outputs(tmp_path):
    text = GUIDE_SMALL + "second\n  input 7 3\n  negative 9 inputs: 7 shape: 3\n  output 9 7\n"
    path = tmp_path / "model.ej"
    path.write_text(text)
    m = ExampleJsonModule.from_file(path)
    assert m.subgraphs() == ["subgraph_0", "second"]
    x = np.array([1.0, -2.0, 3.0], np.float32)
    neg, same = m.run("second", x)
    np.testing.assert_array_equal(neg, -x)
    np.testing.assert_array_equal(same, x)


def test_missing_file_names_the_path(tmp_path):
    with pytest.raises(ByocError, match="nope.ej"):
        ExampleJsonModule.from_file(tmp_path / "nope.ej")


def test_wrong_call_arguments_fail_with_a_message():
    m = ExampleJsonModule.from_text(GUIDE_SMALL)
    a, b = _inputs(2)
    with pytest.raises(ByocError, match="expected 3"):
        m.call("subgraph_0", [a, b])
    with pytest.raises(ByocError, match=r"subgraph_0 input 1: expected shape \(10, 10\)"):
        m.call("subgraph_0", [a, np.zeros((10, 9), np.float32), np.zeros((10, 10), np.float32)])
    with pytest.raises(ByocError, match="no subgraph 'other'"):
        m.function("other")


# ---- every op against the op registry's numpy reference ---------------------------------------------
def _x(shape):
    return Var("x", TensorType(shape, "float32"))


def _w(shape, seed=1):
    return Constant(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))


OP_CASES = {
    "add-broadcast": lambda x: op.add(x, _w((3, 1))),
    "subtract-rank": lambda x: op.subtract(_w((4,)), x),
    "multiply": lambda x: op.multiply(x, x),
    "divide": lambda x: op.divide(x, op.add(op.abs(_w((3, 4))), Constant(np.float32(1.0)))),
    "maximum": lambda x: op.maximum(x, _w((1, 4))),
    "minimum": lambda x: op.minimum(x, _w((3, 4))),
    "unary-chain": lambda x: op.tanh(op.sigmoid(op.exp(op.negative(op.nn.relu(x))))),
    "log-sqrt-abs": lambda x: op.log(op.add(op.sqrt(op.abs(x)), Constant(np.float32(1.0)))),
    "clip": lambda x: op.clip(x, -0.5, 0.25),
    "leaky_relu": lambda x: op.nn.leaky_relu(x, alpha=0.2),
    "dense-bias-softmax": lambda x: op.nn.softmax(op.nn.bias_add(op.nn.dense(x, _w((5, 4))), _w((5,)))),
    "softmax-axis0": lambda x: op.nn.softmax(x, axis=0),
}
NCHW_CASES = {
    "conv-stride-pad": lambda x: op.nn.conv2d(x, _w((4, 2, 3, 3)), strides=(2, 1), padding=(1, 0, 2, 1)),
    "conv-dilation": lambda x: op.nn.conv2d(x, _w((3, 2, 2, 3)), dilation=(2, 1)),
    "conv-depthwise": lambda x: op.nn.conv2d(x, _w((2, 1, 3, 3)), groups=2, padding=(1, 1, 1, 1)),
    "bias_add-axis": lambda x: op.nn.bias_add(x, _w((7,)), axis=2),
    "max_pool-ceil": lambda x: op.nn.max_pool2d(x, pool_size=(3, 2), strides=(2, 2), padding=(1, 0, 1, 1),
                                                ceil_mode=True),
    "avg_pool": lambda x: op.nn.avg_pool2d(x, pool_size=(2, 2), strides=(1, 2), padding=(1, 1, 0, 0)),
    "avg_pool-include-pad": lambda x: op.nn.avg_pool2d(x, pool_size=(3, 3), strides=(2, 2), padding=(1, 1, 1, 1),
                                                       count_include_pad=True, ceil_mode=True),
    "global_avg_pool": lambda x: op.nn.global_avg_pool2d(x),
    "reshape-flatten": lambda x: op.nn.batch_flatten(op.reshape(x, (1, 2, -1))),
}


def _check_op_case(body_fn, shape):
    x = _x(shape)
    mod = InferType()(IRModule.from_expr(Function([x], body_fn(x))))
    text = subgraph_text(mod["main"], "case")
    data = np.random.default_rng(3).standard_normal(shape).astype(np.float32)
    (expected,) = run_reference(mod, [data])
    (got,) = ExampleJsonModule.from_text(text).run("case", data)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", OP_CASES)
def test_op_matches_reference(name):
    _check_op_case(OP_CASES[name], (3, 4))


@pytest.mark.parametrize("name", NCHW_CASES)
def test_nchw_op_matches_reference(name):
    _check_op_case(NCHW_CASES[name], (1, 2, 7, 6))


# ---- malformed text: one message with line and column ---------------------------------------------------
HEAD = "g\n  input 0 2 3\n"
MALFORMED = [
    ("empty", "", 1, 1, "no subgraph"),
    ("before-header", "  input 0 1\n", 1, 3, "before any subgraph"),
    ("bad-symbol", "sub-graph\n", 1, 4, "C identifier"),
    ("dup-subgraph", HEAD + "  output 0\ng\n", 4, 1, "subgraph 'g' is defined twice"),
    ("unknown-op", HEAD + "  relu 1 inputs: 0 shape: 2 3\n", 3, 3, "unknown op 'relu'"),
    ("undefined-id", HEAD + "  add 1 inputs: 0 5 shape: 2 3\n", 3, 19, "id 5 is not defined"),
    ("use-before-def", HEAD + "  add 1 inputs: 0 2 shape: 2 3\n  negative 2 inputs: 0 shape: 2 3\n", 3, 19,
     "id 2 is not defined"),
    ("duplicate-id", HEAD + "  negative 0 inputs: 0 shape: 2 3\n", 3, 12, "already defined (line 2)"),
    ("self-input", HEAD + "  negative 1 inputs: 1 shape: 2 3\n", 3, 22, "own result"),
    ("shape-mismatch", HEAD + "  add 1 inputs: 0 0 shape: 3 2\n", 3, 21, "shape (3, 2) declared"),
    ("no-broadcast", HEAD + "  input 1 4\n  add 2 inputs: 0 1 shape: 2 4\n", 4, 3, "do not broadcast"),
    ("arity", HEAD + "  add 1 inputs: 0 shape: 2 3\n", 3, 19, "takes 2 inputs, got 1"),
    ("missing-shape", HEAD + "  negative 1 inputs: 0\n", 3, 24, "expected 'shape:'"),
    ("missing-inputs", HEAD + "  negative 1 shape: 2 3\n", 3, 14, "expected 'inputs:'"),
    ("bad-dim", HEAD + "  input 1 2 0\n", 3, 13, "a dim '0' out of range"),
    ("huge-dims", HEAD + "  input 1 65536 65536 65536\n", 3, 11, "too large"),
    ("too-many-dims", "g\n  input 0 1 1 1 1 1 1 1 1 1\n", 2, 27, "more than 8 dims"),
    ("bad-id", HEAD + "  negative x inputs: 0 shape: 2 3\n", 3, 12, "expected an id"),
    ("bad-dtype", "g\n  input 0 2 dtype: int32\n", 2, 20, "dtype 'int32' is not supported"),
    ("unknown-attr", HEAD + "  negative 1 inputs: 0 shape: 2 3 axis: 1\n", 3, 35, "takes no attribute 'axis:'"),
    ("attr-twice", "g\n  input 0 2 3\n  nn.softmax 1 inputs: 0 shape: 2 3 axis: 1 axis: 1\n", 3, 45, "twice"),
    ("clip-needs", HEAD + "  clip 1 inputs: 0 shape: 2 3 a_min: 0\n", 3, 3, "needs attribute 'a_max:'"),
    ("bad-float", HEAD + "  clip 1 inputs: 0 shape: 2 3 a_min: zero a_max: 1\n", 3, 38, "a number"),
    ("padding-3", "g\n  input 0 1 1 4 4\n  nn.max_pool2d 1 inputs: 0 shape: 1 1 4 4 padding: 0 0 0\n", 3, 44,
     "1 or 4 values"),
    ("pool-window", "g\n  input 0 1 1 2 2\n  nn.max_pool2d 1 inputs: 0 shape: 1 1 1 1 pool_size: 3 3\n", 3, 3,
     "smaller than the pool window"),
    ("conv-groups", "g\n  input 0 1 3 4 4\n  input 1 2 3 1 1\n  nn.conv2d 2 inputs: 0 1 shape: 1 2 4 4 groups: 2\n",
     4, 3, "do not agree"),
    ("reshape-numel", HEAD + "  reshape 1 inputs: 0 shape: 5\n", 3, 3, "6 elements cannot become 5"),
    ("const-length", "g\n  const 0 2 data: AACAPw==\n", 2, 19, "holds 4 bytes but shape needs 8"),
    ("const-char", "g\n  const 0 1 data: AAC*Pw==\n", 2, 22, "invalid base64 character '*'"),
    ("const-no-data", "g\n  const 0 1\n", 2, 13, "expected 'data:'"),
    ("output-undefined", HEAD + "  output 0 4\n", 3, 12, "id 4 is not defined"),
    ("after-output", HEAD + "  output 0\n  negative 1 inputs: 0 shape: 2 3\n", 4, 3, "nothing may follow"),
    ("computes-nothing", "g\n  input 0 1\nh\n  input 0 1\n  output 0\n", 1, 1, "computes nothing"),
    ("control-byte", HEAD + "  negative 1 inputs: 0\x01 shape: 2 3\n", 3, 23, "unexpected byte 0x01"),
    ("non-ascii", "g\u00e9\n", 1, 2, "unexpected byte 0xc3"),
    ("nul", "g\n\0", 2, 1, "unexpected byte 0x00"),
    ("lone-cr", "g\r x\n", 1, 2, "unexpected byte 0x0d"),
    ("id-overflow", HEAD + "  negative 99999999999999999999 inputs: 0 shape: 2 3\n", 3, 12, "out of range"),
    ("header-keyword", "g\n  input 0 1\n  output\n", 3, 10, "needs at least one id"),
]


@pytest.mark.parametrize("text,line,col,fragment", [m[1:] for m in MALFORMED], ids=[m[0] for m in MALFORMED])
def test_malformed_text_reports_line_and_column(text, line, col, fragment):
    with pytest.raises(ByocError) as err:
        ExampleJsonModule.from_text(text)
    message = str(err.value)
    assert message.startswith(f"examplejson: line {line}, column {col}: "), message
    assert fragment in message, message


def test_crlf_comments_and_blank_lines_are_accepted():
    text = "# a comment\r\n\r\n" + GUIDE_SMALL.replace("\n", "\r\n")
    a, b = _inputs(2)
    (got,) = ExampleJsonModule.from_text(text).run("subgraph_0", a, b)
    np.testing.assert_array_equal(got, a + b)


def test_ej_check_tool(tmp_path):
    """The C command-line checker a user runs on a file: signatures, or the located error."""
    import subprocess

    from byoc_compiler.runtime import include_flags
    from byoc_compiler.contrib.examplejson.codegen import RUNTIME_DIR
    from byoc_compiler.contrib.examplejson.loader import runtime_sources

    exe = tmp_path / "ej_check"
    subprocess.run(["gcc", "-std=c99", "-Wall", "-Wextra", "-Werror", f"-I{RUNTIME_DIR}", *include_flags(),
                    str(RUNTIME_DIR.parent / "tools" / "ej_check.c"), *map(str, runtime_sources()), "-o", str(exe),
                    "-lm"], check=True)
    good, bad = tmp_path / "good.ej", tmp_path / "bad.ej"
    good.write_text(GUIDE_SMALL)
    bad.write_text(GUIDE_SMALL.replace("inputs: 0 1", "inputs: 0 9"))
    ok = subprocess.run([exe, good], capture_output=True, text=True)
    assert ok.returncode == 0 and ok.stdout == f"{good}: subgraph_0((10, 10), (10, 10)) -> ((10, 10))\n"
    fail = subprocess.run([exe, good, bad], capture_output=True, text=True)
    assert fail.returncode == 1
    assert fail.stderr.strip() == f"{bad}: examplejson: line 4, column 19: id 9 is not defined in subgraph " \
                                  "'subgraph_0' (ids must be defined before use)"


def test_100k_node_chain():
    n = 100_000
    lines = ["chain", "  input 0 4"] + [f"  {'negative' if i % 2 else 'nn.relu'} {i} inputs: {i - 1} shape: 4"
                                        for i in range(1, n)]
    m = ExampleJsonModule.from_text("\n".join(lines) + "\n")
    assert m.arena_bytes() == (n - 1) * 64          # one 64-byte aligned block per op result
    x = np.array([-1.0, 2.0, -3.0, 4.0], np.float32)
    (got,) = m.run("chain", x)
    expected = x.copy()
    for i in range(1, n):
        expected = -expected if i % 2 else np.maximum(expected, 0)
    np.testing.assert_array_equal(got, expected)
