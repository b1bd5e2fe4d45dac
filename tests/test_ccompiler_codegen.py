"""The ccompiler codegen's output, without compiling it: one C file per region, its symbols and
signatures, the kernel calls in order with a comment naming op and shapes, constants bit-exact as
`static const` arrays, a static workspace sized from the types (no malloc), composites as one fused
call, names from the model never in the C text. Golden files (tests/golden/ccompiler/, the part of
each file before the c_abi entry points) pin the whole text; regenerate them with
BYOC_UPDATE_GOLDEN=1 after an intended change and review the diff.
Results are checked separately, against numpy, in test_ccompiler_e2e.py."""
import os
import re
from pathlib import Path

import numpy as np
import pytest

from byoc_compiler import op, partition_for, zoo
from byoc_compiler.backend.build import build
from byoc_compiler.backend.memory_plan import align_up
from byoc_compiler.backend.threads import planned_for
from byoc_compiler.errors import ByocError
from byoc_compiler.ir import Function, IRModule, Tuple, TupleGetItem, Var, const
from byoc_compiler.ir.types import TensorType
from byoc_compiler.transform import InferType

from byoc_compiler.contrib.ccompiler import kernels, winograd
from byoc_compiler.contrib.ccompiler.codegen import ALIGNMENT, ccompiler_codegen

GOLDEN = Path(__file__).parent / "golden" / "ccompiler"
F32 = "float32"


def _var(name, shape):
    return Var(name, TensorType(shape, F32))


def _weights(shape, seed):
    return const(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))


def _regions(mod):
    """(symbol, function) of every ccompiler region, in module order."""
    return [(str(f.attrs["global_symbol"]), f) for name, f in mod.items()
            if name != "main" and f.attrs.get("Compiler") == "ccompiler"]


def _partitioned(params, body):
    return partition_for(["ccompiler"], IRModule.from_expr(Function(params, body)))


def _region_of(params, body):
    """A hand-made region (what PartitionGraph would hand over), typed."""
    func = Function(params, body).with_attr(Compiler="ccompiler", global_symbol="region_0")
    typed = InferType()(IRModule.from_expr(func))
    return "region_0", typed["main"]


# ---- the constructs: name -> (symbol, region function) ---------------------------------------------

def one_op():
    x, y = _var("x", (2, 3)), _var("y", (2, 3))
    return _regions(_partitioned([x, y], op.add(x, y)))[0]


def chain():
    return _regions(partition_for(["ccompiler"], zoo.get("byoc_guide")))[0]


def multi_output():
    # A temp computed straight into out0, an input and a repeated result copied into out1 / out3.
    x = _var("x", (4, 5))
    r = op.nn.relu(x)
    return _region_of([x], Tuple([r, x, op.tanh(r), r]))


def constants():
    special = np.array([0.1, -0.0, np.inf, -np.inf, 1e-45, 3.4028235e38, 1.0 / 3.0, -7.5], np.float32)
    x = _var("x", (2, 8))
    return _region_of([x], op.add(op.multiply(x, const(special)), const(np.float32(0.5))))


def composite():
    x = _var("x", (1, 3, 8, 8))
    y = op.nn.relu(op.nn.bias_add(op.nn.conv2d(x, _weights((4, 3, 3, 3), 1), padding=(1, 1)),
                                  _weights((4,), 2)))
    h = op.nn.bias_add(op.nn.dense(op.reshape(y, (1, 256)), _weights((5, 256), 3)), _weights((5,), 4))
    return _regions(_partitioned([x], h))[0]


def composite_unfused():
    # dense+bias_add on 3-D data with axis=1: the fused kernel adds along the last axis only, so the
    # composite is emitted op by op.
    x = _var("x", (2, 3, 8))
    h = op.nn.bias_add(op.nn.dense(x, _weights((6, 8), 5)), _weights((3,), 6), axis=1)
    return _regions(_partitioned([x], h))[0]


def batch_norm_tuple():
    # batch_norm's moving mean/var outputs are its inputs passed through: copies, no computation.
    x = _var("x", (1, 2, 3, 3))
    bn = op.nn.batch_norm(x, _weights((2,), 7), _weights((2,), 8), _weights((2,), 9),
                          const(np.array([0.5, 2.0], np.float32)))
    return _region_of([x], Tuple([TupleGetItem(bn, 0), TupleGetItem(bn, 2)]))


CONSTRUCTS = {f.__name__: f for f in (one_op, chain, multi_output, constants, composite, composite_unfused,
                                      batch_norm_tuple)}

# name -> (kernel calls in order, number of inputs, number of outputs)
EXPECTED = {
    "one_op": (["ck_binary"], 2, 1),
    "chain": (["ck_binary"] * 3, 4, 1),
    "multi_output": (["ck_unary", "ck_unary", "ck_copy", "ck_copy"], 1, 4),
    "constants": (["ck_binary", "ck_binary"], 1, 1),
    "composite": (["ck_conv2d", "ck_dense"], 1, 1),
    "composite_unfused": (["ck_dense", "ck_bias_add"], 1, 1),
    "batch_norm_tuple": (["ck_batch_norm", "ck_copy"], 1, 2),
}

_CALL = re.compile(r"\b(ck_[a-z0-9_]+)\(")


@pytest.fixture(scope="module", params=list(CONSTRUCTS))
def generated(request):
    symbol, func = CONSTRUCTS[request.param]()
    return request.param, symbol, ccompiler_codegen(func, symbol)


def _code(artifact):
    (code,) = artifact.sources.values()
    return code


def _core(code):
    """The region's own part: everything before the c_abi entry points."""
    return code[: code.index("#ifdef BYOC_UNPACKED_API")]


def _kernel_calls(core):
    return [c for c in _CALL.findall(core) if not c.endswith("_workspace_bytes")]


def test_one_file_named_after_the_symbol(generated):
    name, symbol, artifact = generated
    assert artifact.symbol == symbol
    assert list(artifact.sources) == [f"{symbol}.c"]
    assert Path(kernels.INCLUDE_DIR) in {Path(d) for d in artifact.include_dirs}


def test_symbols_and_signatures(generated):
    name, symbol, artifact = generated
    code = _code(artifact)
    _, n_in, n_out = EXPECTED[name]
    params = [f"const float* in{i}" for i in range(n_in)] + [f"float* out{i}" for i in range(n_out)]
    # a region with scratch takes it from the caller's instance, never from static storage
    params += ["void* workspace"] if artifact.workspace_bytes else []
    assert "static float" not in code and (artifact.workspace_bytes > 0) == ("region_workspace" in code)
    core = f"int32_t {symbol}_({', '.join(params)})"
    assert code.count(core + " {") == 1
    unpacked, packed = code.split("#ifdef BYOC_UNPACKED_API")[1].split("#else")
    assert f"int32_t {symbol}({', '.join(params)}) {{" in unpacked
    assert f"int32_t {symbol}(const ByocValue* args, const int32_t* type_codes, int32_t num_args," in packed
    # Only the core and the entry point have external linkage.
    defined = re.findall(r"^(?!static)[a-z0-9_]+\s+\**([A-Za-z0-9_]+)\(.*\)\s*\{", code, re.M)
    assert sorted(set(defined)) == sorted({symbol, f"{symbol}_"})


def test_kernel_calls_in_order_with_a_comment_each(generated):
    name, symbol, artifact = generated
    code = _core(_code(artifact))
    assert _kernel_calls(code) == EXPECTED[name][0]
    # Each step starts with its comment; every step that calls a kernel names the op and the shapes.
    steps = re.split(r"\n(?=  /\* \d+: )", code)[1:]
    assert len(steps) >= len(EXPECTED[name][0])
    for step in steps:
        head = step.splitlines()[0]
        assert re.match(r"  /\* \d+: [a-z0-9_.]+[^*]*\(.*\[[0-9, ]*\].*\) -> .*\[[0-9, ]*\]", head), head
        calls = _kernel_calls(step)
        assert len(calls) <= 1 and (calls or "a view, no call" in head), step


def test_no_dynamic_memory(generated):
    code = _code(generated[2])
    assert not re.search(r"\b(malloc|calloc|realloc|free|alloca)\s*\(", code)


def test_matches_golden_text(generated):
    name, symbol, artifact = generated
    text = _core(_code(artifact))
    path = GOLDEN / f"{name}.c"
    if os.environ.get("BYOC_UPDATE_GOLDEN"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert path.exists(), f"no golden file {path}; create it with BYOC_UPDATE_GOLDEN=1"
    assert text == path.read_text(), (f"generated C differs from {path}; if intended, regenerate with "
                                      "BYOC_UPDATE_GOLDEN=1 and review the diff")


# ---- specific properties -----------------------------------------------------------------------------

def _workspace_bytes(code):
    found = re.search(r"share one workspace of (\d+) bytes that the caller", code)
    return int(found.group(1)) if found else 0


def test_chain_workspace_from_the_types():
    # add -> t0; subtract overwrites t0 (the kernel allows it and nothing reads t0 later); multiply
    # writes the output array. One 10*10 float32 buffer, rounded up to the alignment.
    code = _code(ccompiler_codegen(*reversed(chain())))
    assert _workspace_bytes(code) == align_up(10 * 10 * 4, ALIGNMENT)
    assert "ck_binary(CK_SUBTRACT, t0, 2, shape, in2, 2, shape, t0, 2, shape)" in code
    assert "ck_binary(CK_MULTIPLY, t0, 2, shape, in3, 2, shape, out0, 2, shape)" in code


@pytest.mark.parametrize("reuse_later,buffers", [(False, 1), (True, 2)], ids=["in-place", "input-read-later"])
def test_elementwise_runs_in_place_only_when_the_input_is_dead(reuse_later, buffers):
    x = _var("x", (64,))
    first = op.nn.relu(op.negative(x))
    h = first
    for _ in range(10):
        h = op.tanh(op.nn.relu(h))
    if reuse_later:
        h = op.add(h, first)          # `first` must survive the chain: no overwriting it
    code = _code(ccompiler_codegen(*reversed(_region_of([x], h))))
    assert _workspace_bytes(code) == buffers * align_up(64 * 4, ALIGNMENT)   # never 22 buffers


def test_broadcasting_input_is_not_overwritten():
    # out [4, 3] is bigger than t0 [1, 3]: in place is impossible, t0 keeps its own buffer.
    x, y = _var("x", (1, 3)), _var("y", (4, 3))
    code = _code(ccompiler_codegen(*reversed(_region_of([x, y], op.nn.relu(op.add(op.tanh(x), y))))))
    assert re.search(r"ck_binary\(CK_ADD, t0, 2, lhs_shape, in1, 2, rhs_shape, t1, 2, rhs_shape\)", code), code


def test_composite_is_one_fused_call_with_planned_scratch():
    symbol, func = composite()
    code = _code(ccompiler_codegen(func, symbol))
    conv = re.search(r"ck_conv2d\(&params, in0, c0, c1, CK_ACT_RELU, t0, (scratch\d+)\)", code)
    # The 5x256 dense weight is large: a linked constant, a global symbol named after the region.
    dense = re.search(rf"ck_dense\(1, 5, 256, t0, {symbol}_c2, c3, CK_ACT_NONE, out0, (scratch\d+)\)", code)
    assert conv and dense, code
    p = kernels.conv2d_params((1, 3, 8, 8), (4, 3, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1)
    for match, nbytes in ((conv, kernels.conv2d_workspace_bytes(p)), (dense, kernels.gemm_workspace_bytes(1, 5, 256))):
        assert f"void* const {match.group(1)} = region_workspace + " in code
        assert f"/* {nbytes} bytes of kernel scratch" in code
    assert "ck_bias_add" not in code and "CK_RELU" not in code      # fused, not separate
    assert "/* 0: ccompiler.conv2d_bias_relu [nn.conv2d + nn.bias_add + nn.relu](" in code
    assert "reshape" in code and "a view, no call" in code          # the reshape costs nothing


def test_relu6_composite_is_one_call_other_clips_are_not():
    x = _var("x", (1, 4, 6, 6))
    w, b = const(np.ones((4, 1, 3, 3), np.float32)), const(np.zeros(4, np.float32))
    six = op.clip(op.nn.bias_add(op.nn.conv2d(x, w, padding=(1, 1), groups=4), b), 0.0, 6.0)
    five = op.clip(op.nn.bias_add(op.nn.conv2d(six, w, padding=(1, 1), groups=4), b), 0.0, 5.0)
    part = partition_for(["ccompiler"], IRModule.from_expr(Function([x], five)))
    code = _code(ccompiler_codegen(part["tvmgen_default_ccompiler_main_0"], "tvmgen_default_ccompiler_main_0"))
    assert "ccompiler.conv2d_bias_relu6 [nn.conv2d + nn.bias_add + clip]" in code
    assert code.count("CK_ACT_RELU6") == 1 and code.count("ck_unary(CK_CLIP") == 1, code


@pytest.mark.parametrize("out_channels,groups,prepacked", [(40, 1, True), (8, 1, False), (80, 2, True),
                                                           (16, 16, False)],
                         ids=["40-channels-packed", "8-channels-padding-too-costly", "grouped-packed", "depthwise"])
def test_constant_conv_weights_are_packed_at_codegen(out_channels, groups, prepacked):
    x = _var("x", (1, 16, 5, 5))
    weight = np.random.default_rng(3).standard_normal((out_channels, 16 // groups, 3, 3)).astype(np.float32)
    body = op.nn.conv2d(x, const(weight), padding=(1, 1), groups=groups)
    part = partition_for(["ccompiler"], IRModule.from_expr(Function([x], body)))
    code = _code(ccompiler_codegen(part["tvmgen_default_ccompiler_main_0"], "tvmgen_default_ccompiler_main_0"))
    assert ("ck_conv2d_prepacked(&params" in code) == prepacked, code
    assert ("ck_conv2d(&params" in code) != prepacked
    if prepacked:  # the packed array replaces the weight, sized by the kernel library's formula
        p = kernels.conv2d_params((1, 16, 5, 5), weight.shape, (1, 1), (1, 1, 1, 1), (1, 1), groups)
        assert "packed for ck_conv2d_prepacked" in code
        assert f"[{kernels.conv2d_packed_weight_bytes(p) // 4}]" in code
        assert f"[{weight.size}]" not in code


GEMM_PREPACK = [  # (what, rows of data, weight [N, K], packed at codegen)
    ("batch-1-reads-the-weight", (1, 64), (90, 64), False),
    ("batch-2", (2, 64), (90, 64), True),
    ("rows-of-3d-data", (1, 7, 37), (60, 37), True),
    ("padding-too-costly", (8, 64), (13, 64), False),   # 13 columns would take 32
]


@pytest.mark.parametrize("data_shape,weight_shape,prepacked", [c[1:] for c in GEMM_PREPACK],
                         ids=[c[0] for c in GEMM_PREPACK])
def test_constant_dense_weights_are_packed_for_more_than_one_row(data_shape, weight_shape, prepacked):
    x = _var("x", data_shape)
    weight = np.random.default_rng(5).standard_normal(weight_shape).astype(np.float32)
    part = partition_for(["ccompiler"], IRModule.from_expr(Function([x], op.nn.dense(x, const(weight)))))
    code = _code(ccompiler_codegen(part["tvmgen_default_ccompiler_main_0"], "tvmgen_default_ccompiler_main_0"))
    assert ("ck_dense_prepacked(" in code) == prepacked, code
    assert ("ck_dense(" in code) != prepacked
    if prepacked:  # the packed array replaces the weight, sized by the kernel library's formula
        assert "packed for ck_dense_prepacked" in code and "ck_gemm_prepacked_workspace_bytes(" in code
        assert f"[{kernels.gemm_packed_b_floats(*weight_shape)}]" in code
        assert f"[{weight.size}]" not in code


def test_bert_tiny_packs_every_constant_weight_at_codegen():
    """bert_tiny's twelve projections (128 rows of batch x sequence) call ck_dense_prepacked on weights packed
    here, never the per-call packing ck_dense; its four batch_matmuls multiply activations (nothing constant)."""
    (code,) = [_code(ccompiler_codegen(f, s)) for s, f in _regions(partition_for(["ccompiler"], zoo.get("bert_tiny")))]
    calls = _kernel_calls(_core(code))
    assert calls.count("ck_dense_prepacked") == 12 and "ck_dense" not in calls, calls
    assert code.count("packed for ck_dense_prepacked") == 12
    assert calls.count("ck_batch_matmul") == 4 and "ck_batch_matmul_prepacked" not in calls


def test_residual_adds_ride_on_the_conv_epilogue():
    """conv2d + bias -> add(., shortcut) [-> relu] is one ck_conv2d_prepacked_add (fuse_residual.py): with an
    identity shortcut, with a projection conv (the later conv of the two takes the add), without a relu;
    a conv output read twice and an add that broadcasts stay separate calls. Results: test_ccompiler_e2e."""
    def conv(x, o, i, k, seed, stride=1):
        weight = np.random.default_rng(seed).standard_normal((o, i, k, k)).astype(np.float32)
        return op.nn.bias_add(op.nn.conv2d(x, const(weight), strides=(stride, stride), padding=(k // 2,) * 2),
                              const(np.ones(o, np.float32)))
    x, s = _var("x", (1, 24, 14, 14)), _var("s", (1, 48, 1, 1))
    y = op.nn.relu(op.add(conv(x, 24, 24, 1, 1), x))
    z = op.nn.relu(op.add(conv(op.nn.relu(conv(y, 48, 24, 3, 2, 2)), 48, 48, 1, 3), conv(y, 48, 24, 1, 4, 2)))
    w = op.add(z, conv(z, 48, 48, 1, 5))
    o = conv(w, 48, 48, 3, 6)
    part = partition_for(["ccompiler"], IRModule.from_expr(Function([x, s], Tuple([op.add(o, w), op.nn.relu(o),
                                                                                   op.add(conv(o, 48, 48, 1, 7), s)]))))
    code = _core(_code(ccompiler_codegen(part["tvmgen_default_ccompiler_main_0"], "tvmgen_default_ccompiler_main_0")))
    calls = _CALL.findall(code.split("{", 1)[1])
    assert calls.count("ck_conv2d_prepacked_add") == 3 and calls.count("ck_binary") == 2, calls
    assert code.count("CK_ACT_RELU, ") == 3, code  # the two block-end relus fused, plus the inner conv's own
    assert "] + add + nn.relu(" in code and "] + add(" in code
    # the projection: one of its two convs is plain, its output the residual of the other (computed second)
    plain = re.findall(r"ck_conv2d_prepacked\(&params, \w+, \w+, \w+, CK_ACT_NONE, (t\d+),", code)
    assert any(re.search(rf"ck_conv2d_prepacked_add\(&params, \w+, \w+, \w+, {t}, CK_ACT_RELU,", code)
               for t in plain), code
    assert calls.count("ck_unary") == 1   # relu(o): o has two readers


def test_channel_shuffle_is_one_block_transpose():
    """ShuffleNet's reshape -> transpose -> reshape between two convs: the reshapes are views, the
    transpose the one copy (contiguous H*W planes), nothing else moves data."""
    x = _var("x", (1, 8, 5, 5))
    w = const(np.random.default_rng(4).standard_normal((8, 4, 1, 1)).astype(np.float32))
    h = op.nn.conv2d(x, w, groups=2)
    h = op.reshape(op.transpose(op.reshape(h, (1, 2, 4, 5, 5)), axes=(0, 2, 1, 3, 4)), (1, 8, 5, 5))
    h = op.nn.conv2d(h, w, groups=2)
    part = partition_for(["ccompiler"], IRModule.from_expr(Function([x], h)))
    code = _core(_code(ccompiler_codegen(part["tvmgen_default_ccompiler_main_0"], "tvmgen_default_ccompiler_main_0")))
    assert _CALL.findall(code.split("{", 1)[1]).count("ck_transpose") == 1
    assert "ck_copy" not in code and code.count("a view, no call") == 2, code


def _c_array(code, name):
    body = re.search(rf"static const float {name}\[(\d+)\] = \{{(.*?)\}};", code, re.S)
    items = [t.strip() for t in body.group(2).replace("\n", " ").split(",") if t.strip()]
    named = {"NAN": np.nan, "INFINITY": np.inf, "(-INFINITY)": -np.inf}
    # A C floating literal needs a '.' or an exponent before its f suffix ("1f" and "-0f" do not compile).
    bad = [t for t in items if t not in named and not re.fullmatch(r"-?(\d+\.\d*|\d+(\.\d*)?e[+-]?\d+)f", t)]
    assert not bad, f"not C float literals: {bad[:5]}"
    values = np.array([named[t] if t in named else float(t.rstrip("f")) for t in items]).astype(np.float32)
    return int(body.group(1)), values


def test_constants_are_static_const_arrays_bit_exact():
    symbol, func = constants()
    code = _code(ccompiler_codegen(func, symbol))
    special = func.body.args[0].args[1].data
    n, values = _c_array(code, "c0")
    assert n == special.size
    assert values.view(np.uint32).tolist() == special.view(np.uint32).tolist()
    assert "/* c0: constant [8] float32 */" in code
    n, values = _c_array(code, "c1")        # a 0-d constant: one element, broadcast as rank 0
    assert (n, values.tolist()) == (1, [0.5])
    assert "ck_binary(CK_ADD, t0, 2, lhs_shape, c1, 0, NULL, out0, 2, lhs_shape)" in code


def _big_constant():
    from byoc_compiler.ctext.literals import SHORTEST_UP_TO

    rng = np.random.default_rng(3)
    n = SHORTEST_UP_TO + 77
    data = (rng.standard_normal(n) * 10.0 ** rng.integers(-40, 38, n)).astype(np.float32)
    data[:9] = [np.nan, np.inf, -np.inf, -0.0, 1e-45, np.finfo(np.float32).max, 0.0, 1.0, -2.0]
    return data


def test_big_constants_are_bit_exact_too_as_literals():
    from byoc_compiler.backend import constants as constmod

    data = _big_constant()
    x = _var("x", (data.size,))
    with constmod.threshold(None):          # every constant a C literal (build(large_constant_bytes=None))
        code = _code(ccompiler_codegen(*reversed(_region_of([x], op.multiply(x, const(data))))))
    size, values = _c_array(code, "c0")
    assert size == data.size
    assert np.isnan(values[0])
    assert values[1:].view(np.uint32).tolist() == data[1:].view(np.uint32).tolist()


def test_big_constants_leave_the_c_text_declared_with_shape_and_size():
    data = _big_constant()
    x = _var("x", (data.size,))
    symbol, func = _region_of([x], op.multiply(x, const(data)))
    artifact = ccompiler_codegen(func, symbol)
    code = _code(artifact)
    name = f"{symbol}_c0"
    assert f"extern const float {name}[{data.size}];" in code
    assert f"/* {name}: constant [{data.size}] float32, {data.nbytes} bytes, in byoc_constants.bin */" in code
    assert "static const float c0" not in code and len(code) < 4000    # no literals
    assert list(artifact.constants) == [name]
    assert artifact.constants[name].view(np.uint32).tolist() == data.view(np.uint32).tolist()


def test_one_constant_used_twice_is_emitted_once():
    x = _var("x", (3,))
    c = const(np.array([1.0, 2.0, 3.0], np.float32))
    code = _code(ccompiler_codegen(*reversed(_region_of([x], op.add(op.multiply(x, c), c)))))
    assert code.count("static const float c") == 1


def test_byoc_guide_is_one_region_one_function_four_inputs():
    mod = partition_for(["ccompiler"], zoo.get("byoc_guide"))
    regions = _regions(mod)
    assert len(regions) == 1
    lib = build(mod)
    assert [len(r["inputs"]) for r in lib.metadata["regions"]] == [4]
    assert lib.metadata["host_kernels"] == []
    code = lib.get_source("ccompiler")
    symbol = regions[0][0]
    assert code.count("/* ---- ") == 1                                  # one file
    cores = re.findall(r"^int32_t ([A-Za-z0-9_]+)\(([^)]*)\) \{", code, re.M)
    assert [(name, params.count("const float*")) for name, params in cores
            if not name == symbol] == [(f"{symbol}_", 4)]


def test_names_from_the_model_never_reach_the_c_text():
    hostile = 'x*/ #include "evil.h" /*\n\\'
    x = _var(hostile, (2, 2))
    code = _code(ccompiler_codegen(*reversed(_region_of([x], op.nn.relu(x)))))
    assert "evil.h\"" not in code and "*/ #include" not in code
    for comment in re.findall(r"/\*(.*?)\*/", code, re.S):
        assert "/*" not in comment
    assert "\\\n" not in _core(code)


# ---- errors: one sentence naming the problem ----------------------------------------------------------

def test_untyped_region_is_refused_with_a_hint():
    x = _var("x", (2,))
    func = Function([x], op.nn.relu(x)).with_attr(Compiler="ccompiler", global_symbol="r")
    with pytest.raises(ByocError, match="InferType"):
        ccompiler_codegen(func, "r")


def test_rank_above_the_library_limit_is_refused():
    shape = (1,) * (kernels.MAX_RANK + 1)
    x, y = _var("x", shape), _var("y", shape)
    with pytest.raises(ByocError, match="CK_MAX_RANK"):
        ccompiler_codegen(*reversed(_region_of([x, y], op.add(x, y))))


def test_op_without_kernel_is_refused():
    x = _var("x", (2, 3))
    with pytest.raises(ByocError, match="no function for nn.lrn"):
        ccompiler_codegen(*reversed(_region_of([x], op.nn.lrn(x, axis=1))))


def test_bad_symbol_is_refused():
    symbol, func = one_op()
    with pytest.raises(ByocError, match="not a C identifier"):
        ccompiler_codegen(func, "1 bad")


WINOGRAD_RULE = [  # (what, data shape, weight shape, strides, groups, max_threads, F(m x m) or 0 for direct)
    ("3x3-stride1-28x28", (1, 8, 28, 28), (24, 8, 3, 3), (1, 1), 1, 8, 2),
    ("3x3-stride1-29x31-odd-channels", (1, 5, 29, 31), (7, 5, 3, 3), (1, 1), 1, 8, 2),
    ("14x14-plane-every-tile-at-once", (1, 8, 14, 14), (24, 8, 3, 3), (1, 1), 1, 8, 2),
    ("13x13-plane-direct", (1, 8, 13, 13), (24, 8, 3, 3), (1, 1), 1, 8, 0),
    ("7x7-plane-direct", (1, 8, 7, 7), (24, 8, 3, 3), (1, 1), 1, 8, 0),
    ("stride2-direct", (1, 8, 56, 56), (24, 8, 3, 3), (2, 2), 1, 8, 0),
    ("grouped-direct", (1, 8, 28, 28), (48, 4, 3, 3), (1, 1), 2, 8, 0),
    ("5x5-direct", (1, 8, 28, 28), (24, 8, 5, 5), (1, 1), 1, 8, 0),
    ("planned-for-one-thread-direct", (1, 8, 28, 28), (24, 8, 3, 3), (1, 1), 1, 1, 0),
]


@pytest.mark.parametrize("data_shape,weight_shape,strides,groups,max_threads,m", [c[1:] for c in WINOGRAD_RULE],
                         ids=[c[0] for c in WINOGRAD_RULE])
def test_stride1_3x3_convs_take_winograd_where_the_rule_picks_it(data_shape, weight_shape, strides, groups,
                                                                 max_threads, m):
    """winograd.tile's choice reaches the C: ck_conv2d_winograd on the transformed weight (sized by the library's
    formula, its own scratch planned) for stride-1 3x3 one-group convs on planes of 14x14 and more in builds planned
    for several threads; everything else keeps ck_conv2d_prepacked. Results: test_ccompiler_e2e (winograd_blocks)."""
    x = _var("x", data_shape)
    weight = np.random.default_rng(7).standard_normal(weight_shape).astype(np.float32)
    k = weight_shape[2] // 2
    body = op.nn.relu(op.nn.conv2d(x, const(weight), strides=strides, padding=(k, k), groups=groups))
    part = partition_for(["ccompiler"], IRModule.from_expr(Function([x], body)))
    with planned_for(max_threads):
        code = _code(ccompiler_codegen(part["tvmgen_default_ccompiler_main_0"], "tvmgen_default_ccompiler_main_0"))
    assert ("ck_conv2d_winograd(&params" in code) == bool(m), code
    assert ("ck_conv2d_prepacked(&params" in code) != bool(m)
    if m:
        p = kernels.conv2d_params(data_shape, weight_shape, strides, (k,) * 4, (1, 1), groups)
        assert f"ck_conv2d_winograd(&params, {m}, " in code and "packed for ck_conv2d_winograd" in code
        assert f"[{winograd.weight_bytes(p, m) // 4}]" in code and f"[{weight.size}]" not in code
        with planned_for(max_threads):
            assert f"ck_conv2d_winograd_workspace_bytes(&params, {m}) > (size_t){winograd.workspace_bytes(p, m)})" \
                in code


def test_residual_add_rides_on_a_winograd_conv():
    """A residual add (+ relu) after a Winograd conv goes into its epilogue as after a direct one (fuse_residual.py)."""
    x = _var("x", (1, 16, 28, 28))
    weight = np.random.default_rng(8).standard_normal((16, 16, 3, 3)).astype(np.float32)
    conv = op.nn.bias_add(op.nn.conv2d(x, const(weight), padding=(1, 1)), const(np.ones(16, np.float32)))
    part = partition_for(["ccompiler"], IRModule.from_expr(Function([x], op.nn.relu(op.add(conv, x)))))
    code = _core(_code(ccompiler_codegen(part["tvmgen_default_ccompiler_main_0"], "tvmgen_default_ccompiler_main_0")))
    calls = _CALL.findall(code.split("{", 1)[1])
    assert calls.count("ck_conv2d_winograd") == 1 and "ck_binary" not in calls and "ck_unary" not in calls, calls
    assert re.search(r"ck_conv2d_winograd\(&params, 2, (\w+), \w+, \w+, \1, CK_ACT_RELU,", code), code
