"""ONNX models end to end: a ResNet-style and a SqueezeNet-style classifier (>= 20 nodes, random
weights) and a model with hostile names import, match ONNX's reference evaluator, partition for
ccompiler, build with gcc and clang, and match again when run."""
from __future__ import annotations

import functools

import numpy as np
import onnx
import pytest

from byoc_compiler.frontend import from_onnx
from byoc_compiler.load import load_model
from byoc_compiler.frontend.onnx import OnnxUnsupportedError
from byoc_compiler.testing.reference import run_reference
from byoc_compiler.testing.tolerance import assert_close, tolerance_for_module
from onnx_models import make_model, node, reference_outputs, resnet_style, squeezenet_style

BUILDERS = {"resnet_style": resnet_style, "squeezenet_style": squeezenet_style}


@functools.lru_cache(maxsize=None)
def classifier(name: str, opset: int):
    return BUILDERS[name](opset=opset)


def _peer(model, feeds, peer):
    if peer == "onnxruntime":
        import onnxruntime as ort  # a test dependency (pyproject's test extras), never optional
        session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        return session.run(None, feeds)
    return reference_outputs(model, feeds)


# ResNet at opset 9 uses BatchNormalization-9, which ONNX's reference evaluator runs in training mode.
@pytest.mark.parametrize("name,opset,peer", [
    ("resnet_style", 15, "reference"), ("resnet_style", 9, "onnxruntime"),
    ("squeezenet_style", 10, "reference"), ("squeezenet_style", 18, "reference"),
], ids=["resnet-opset15", "resnet-opset9", "squeezenet-opset10", "squeezenet-opset18"])
def test_classifier_imports_and_matches_peer(name, opset, peer):
    model, feeds = classifier(name, opset)
    assert len(model.graph.node) >= 20
    mod = from_onnx(model)
    assert [p.name_hint for p in mod["main"].params] == ["data"]
    for got, want in zip(run_reference(mod, feeds), _peer(model, feeds, peer)):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_load_model_reads_onnx_files(tmp_path):
    model, feeds = classifier("squeezenet_style", 13)
    path = tmp_path / "squeeze net.onnx"
    onnx.save(model, str(path))
    mod = load_model(str(path))
    np.testing.assert_allclose(run_reference(mod, feeds)[0], reference_outputs(model, feeds)[0], rtol=1e-4, atol=1e-5)


# ---- build and run --------------------------------------------------------------------------------

def _build_and_run(mod, feeds, toolchain, targets=("ccompiler",)):
    from byoc_compiler.backend.build import build
    from byoc_compiler import partition_for

    part = partition_for(list(targets), mod) if targets else mod
    regions = [f for f in part.functions.values() if f.attrs.get("Compiler") in targets]
    assert len(regions) >= (1 if targets else 0)
    lib = build(part, toolchain=toolchain)
    loaded = lib.load(werror=True)
    for key, value in feeds.items():
        loaded.set_input(key, value)
    loaded.run()
    return lib, [loaded.get_output(i) for i in range(loaded.get_num_outputs())]


@pytest.mark.parametrize("targets,toolchain", [(("ccompiler",), "gcc"), (("ccompiler",), "clang"), ((), "gcc")],
                         ids=["ccompiler-gcc", "ccompiler-clang", "host-gcc"])
@pytest.mark.parametrize("name,opset", [("resnet_style", 15), ("squeezenet_style", 13)],
                         ids=["resnet", "squeezenet"])
def test_classifier_builds_and_matches(name, opset, targets, toolchain):
    model, feeds = classifier(name, opset)
    mod = from_onnx(model)
    _, outputs = _build_and_run(mod, feeds, toolchain, targets)
    expected = reference_outputs(model, feeds)
    assert len(outputs) == len(expected)
    for k, (got, want) in enumerate(zip(outputs, expected)):
        rtol, atol = tolerance_for_module(mod, want.dtype)
        assert_close(got, want, rtol, atol, what=f"{name} output {k} ({toolchain})")


# ---- hostile names --------------------------------------------------------------------------------

MARK = "PWNED"
HOSTILE_INPUTS = [f'x; system("rm -rf / {MARK}1"); //', "*/", f"*/ int {MARK}2; /*", "a.b", "a-b", "a_b",
                  f"back\\slash\n#define {MARK}3"]
HOSTILE_WEIGHT = f"w */ int {MARK}4; /*"
HOSTILE_OUTPUTS = [f'out"); {MARK}5(); //', "a.b.out", "a_b_out", "a-b-out"]


def hostile_model():
    rng = np.random.default_rng(3)
    feeds = {n: rng.standard_normal((2, 3)).astype(np.float32) for n in HOSTILE_INPUTS}
    x, close, close2, ab_dot, ab_dash, ab_under, slash = HOSTILE_INPUTS
    mid = f'mid"\n#include "/etc/{MARK}6"'
    nodes = [
        node("Add", [x, close], [mid], name=f'n1"); {MARK}7(); /*'),
        node("Mul", [mid, HOSTILE_WEIGHT], ["m*/"], name=f"*/ void {MARK}8(void) {{}} /*"),
        node("Relu", ["m*/"], [HOSTILE_OUTPUTS[0]]),
        node("Sub", [ab_dot, ab_dash], ["d"]),
        node("Add", ["d", ab_under], [HOSTILE_OUTPUTS[1]]),
        node("Tanh", [HOSTILE_OUTPUTS[1]], [HOSTILE_OUTPUTS[2]]),
        node("Sub", [close2, slash], [HOSTILE_OUTPUTS[3]]),
    ]
    weights = {HOSTILE_WEIGHT: rng.standard_normal((3,)).astype(np.float32)}
    return make_model(nodes, feeds, HOSTILE_OUTPUTS, weights, 13, name=f"*/ {MARK}9"), feeds


def c_code_outside_literals(text: str) -> tuple[str, list[str]]:
    """(the C text with comments and string/char literals removed, the decoded string literals)."""
    code, literals, i, n = [], [], 0, len(text)
    escapes = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'", "0": "\0", "?": "?"}
    while i < n:
        if text.startswith("//", i):
            i = text.find("\n", i)
            i = n if i < 0 else i
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            assert end >= 0, "unterminated comment"
            i = end + 2
            code.append(" ")
        elif text[i] in "\"'":
            quote, j, chars = text[i], i + 1, []
            while text[j] != quote:
                assert text[j] != "\n", f"newline inside a literal near {text[i:i + 60]!r}"
                if text[j] == "\\":
                    nxt = text[j + 1]
                    if nxt in "01234567":
                        digits = text[j + 1:j + 4]
                        digits = digits[:len(digits) - len(digits.lstrip("01234567"))] or digits[:1]
                        chars.append(chr(int(digits, 8)))
                        j += 1 + len(digits)
                        continue
                    if nxt == "x":
                        hexdigits = ""
                        while text[j + 2 + len(hexdigits)] in "0123456789abcdefABCDEF":
                            hexdigits += text[j + 2 + len(hexdigits)]
                        chars.append(chr(int(hexdigits, 16)))
                        j += 2 + len(hexdigits)
                        continue
                    chars.append(escapes.get(nxt, nxt))
                    j += 2
                else:
                    chars.append(text[j])
                    j += 1
            if quote == '"':
                literals.append("".join(chars))
            code.append(" 0 ")
            i = j + 1
        else:
            code.append(text[i])
            i += 1
    return "".join(code), literals


def test_c_lexer_of_this_test_sees_through_comments_and_escapes():
    code, literals = c_code_outside_literals('int a; /* x */ const char *s = "q\\"\\n\\042//"; // c\nint b;')
    assert "x" not in code and "c\n" not in code and "int b;" in code
    assert literals == ['q"\n"//']


def test_hostile_names_kept_in_the_ir():
    model, feeds = hostile_model()
    mod = from_onnx(model)
    assert [p.name_hint for p in mod["main"].params] == HOSTILE_INPUTS
    assert list(mod["main"].attrs["output_names"]) == HOSTILE_OUTPUTS
    for got, want in zip(run_reference(mod, feeds), reference_outputs(model, feeds)):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("targets,toolchain", [((), "gcc"), (("ccompiler",), "gcc"), (("ccompiler",), "clang")],
                         ids=["host-gcc", "ccompiler-gcc", "ccompiler-clang"])
def test_hostile_names_never_reach_c_unsanitized(targets, toolchain):
    model, feeds = hostile_model()
    mod = from_onnx(model)
    lib, outputs = _build_and_run(mod, feeds, toolchain, targets)
    for path, text in lib.sources().items():
        code, literals = c_code_outside_literals(text)
        assert MARK not in code, f"{path}: a model name escaped into C code"
        # Names may appear as (escaped) string literals, e.g. the model descriptor's input names.
        assert all(MARK not in lit or lit in HOSTILE_INPUTS + HOSTILE_OUTPUTS + [HOSTILE_WEIGHT]
                   for lit in literals), f"{path}: a string literal holds part of a name"
    for got, want in zip(outputs, reference_outputs(model, feeds)):
        assert_close(got, want, 1e-5, 1e-6, what="hostile-name model output")


def test_long_chain_imports_iteratively():
    """20,000 nodes, far past Python's recursion limit: the graph walk and typing never recurse on depth."""
    n = 20_000
    nodes = [node("Relu" if i % 2 else "Hardmax", [f"t{i}"], [f"t{i + 1}"]) for i in range(n)]
    graph = onnx.helper.make_graph(nodes, "chain", [onnx.helper.make_tensor_value_info("t0", 1, [3])],
                                   [onnx.helper.make_tensor_value_info(f"t{n}", 1, [3])])
    model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 13)])
    with pytest.raises(OnnxUnsupportedError) as info:  # Hardmax is not in the table: every one is listed
        from_onnx(model)
    assert len(info.value.problems) == n // 2
    for proto in model.graph.node:
        if proto.op_type == "Hardmax":
            proto.op_type = "Sigmoid"
    mod = from_onnx(model)
    from byoc_compiler.ir import op_counts

    assert op_counts(mod["main"]) == {"sigmoid": n // 2, "nn.relu": n // 2}
    x = np.array([-1.0, 0.0, 2.0], np.float32)
    got = run_reference(mod, {"t0": x})[0]
    want = x
    for _ in range(n // 2):
        want = np.maximum(1.0 / (1.0 + np.exp(-want.astype(np.float64))), 0.0).astype(np.float32)
    np.testing.assert_allclose(got, want, rtol=1e-5)


# Op cases whose imports use the less common IR (take with wrapped negative run-time indices, int64
# constant outputs, reflect padding, batched matmul by takes, 1-D conv lifted to 2-D, coerced softmax),
# built for the host with gcc. (Every case of test_onnx_ops builds and matches this way; these few keep
# the suite fast.)
BUILT_OP_CASES = ["Gather-opset13-runtime-indices", "Shape-opset15-start-end", "Pad-opset13-reflect-inputs",
                  "MatMul-opset13-batched-broadcast", "Conv-opset11-1d-pads-strides-dilations-bias",
                  "Softmax-opset11-axis0-coerced", "Clip-opset13-runtime-bounds"]


@pytest.mark.parametrize("case_id", BUILT_OP_CASES)
def test_op_case_builds_for_host_and_matches(case_id):
    import test_onnx_ops

    case = next(c for c in test_onnx_ops.CASES if c.id == case_id)
    model = test_onnx_ops._model(case)
    _, outputs = _build_and_run(from_onnx(model), case.inputs, "gcc", targets=())
    for got, want in zip(outputs, test_onnx_ops._peer(case, model)):
        want = np.asarray(want)
        assert_close(got, want.astype(got.dtype), 1e-5, 1e-6, what=case_id)


def test_cli_partitions_an_onnx_file(tmp_path):
    import subprocess
    import sys

    model, _ = classifier("resnet_style", 15)
    path = tmp_path / "resnet.onnx"
    onnx.save(model, str(path))
    done = subprocess.run([sys.executable, "-m", "byoc_compiler", "partition", "-t", "ccompiler", str(path)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "ccompiler" in done.stdout and "nn.conv2d x6" in done.stdout
    path.write_bytes(path.read_bytes()[:100])
    done = subprocess.run([sys.executable, "-m", "byoc_compiler", "partition", "-t", "ccompiler", str(path)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert str(path) in done.stderr and "truncated" in done.stderr
