"""Bad ONNX input: one clear ByocError naming the model (and every offending node), never a traceback
from deep inside; plus the import contract (names kept, initializer inputs constant, shape overrides)."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from byoc_compiler.errors import ByocError
from byoc_compiler.frontend import from_onnx
from byoc_compiler.frontend.onnx import OnnxImportError, OnnxUnsupportedError
from byoc_compiler.ir import Constant, Var
from byoc_compiler.testing.reference import run_reference
from onnx_models import make_model, node, reference_outputs

RNG = np.random.default_rng(7)


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def _raw_model(nodes, inputs, outputs, inits=(), opset=13, domains=()):
    """A model without output inference (for ops the reference evaluator cannot run)."""
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    opsets = [helper.make_opsetid("", opset), *[helper.make_opsetid(d, 1) for d in domains]]
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = min(model.ir_version, 10)
    return model


def _vi(name, shape, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, shape)


# ---- unsupported ops and attributes: every node in one error --------------------------------------

def test_every_unsupported_node_listed_in_one_error():
    model = _raw_model(
        [node("Relu", ["x"], ["r"], name="ok_relu"),
         node("Hardmax", ["r"], ["e"], name="first_bad"),
         node("Pad", ["e", "pads"], ["p"], name="wrap_pad", mode="symmetric"),
         node("NonZero", ["p"], ["nz"]),  # unnamed: reported by position and outputs
         node("Resize", ["p", "", "sc"], ["bn"], name="area_resize", mode="area"),
         node("MyOp", ["bn"], ["y"], name="custom", domain="com.vendor")],
        [_vi("x", [1, 2, 3, 3])], [_vi("y", [1, 2, 3, 3]), _vi("nz", [4, None], TensorProto.INT64)],
        [onnx.numpy_helper.from_array(np.zeros(8, np.int64), "pads"),
         onnx.numpy_helper.from_array(np.ones(4, np.float32), "sc")],
        opset=19, domains=("com.vendor",))
    with pytest.raises(OnnxUnsupportedError) as info:
        from_onnx(model)
    err = info.value
    assert isinstance(err, ByocError)
    reported = [(p.node, p.op_type, p.opset) for p in err.problems]
    assert reported == [("'first_bad'", "Hardmax", 19), ("'wrap_pad'", "Pad", 19),
                        ("#3 (unnamed, outputs 'nz')", "NonZero", 19), ("'area_resize'", "Resize", 19),
                        ("'custom'", "MyOp", 19)]
    text = str(err)
    for fragment in ("5 nodes cannot be imported", "op type Hardmax is not supported", "mode 'symmetric'",
                     "mode 'area'", "domain 'com.vendor'", "opset 19"):
        assert fragment in text
    assert "ok_relu" not in text


def test_used_indices_output_is_an_error_unused_is_fine():
    x = rand(1, 1, 4, 4)
    used = make_model([node("MaxPool", ["x"], ["y", "idx"], name="pool", kernel_shape=[2, 2])], {"x": x},
                      ["y", "idx"], opset=13)
    with pytest.raises(OnnxUnsupportedError, match=r"'pool' \(MaxPool, opset 13\): output 1 \('idx'\)"):
        from_onnx(used)
    unused = make_model([node("MaxPool", ["x"], ["y", "idx"], kernel_shape=[2, 2])], {"x": x}, ["y"], opset=13)
    assert run_reference(from_onnx(unused), {"x": x})[0].shape == (1, 1, 3, 3)


def test_dropout_mask_is_all_true_at_inference():
    x = rand(3, 4)
    model = make_model([node("Dropout", ["x"], ["y", "mask"])], {"x": x}, ["y", "mask"], opset=13)
    y, mask = run_reference(from_onnx(model), {"x": x})
    np.testing.assert_array_equal(y, x)
    assert mask.dtype == np.bool_ and mask.all() and mask.shape == x.shape


def test_unsupported_definition_names_the_supported_ones():
    # Pad-1 (opset 1) predates the op table; MaxPool at opset 1 resolves to a supported definition.
    model = _raw_model([node("Pad", ["x"], ["y"], paddings=[0, 0, 1, 1])], [_vi("x", [2, 2])], [_vi("y", [2, 4])],
                       opset=1)
    with pytest.raises(OnnxUnsupportedError, match="since version 1.*supported definitions: since 2, 11"):
        from_onnx(model)


def test_conversion_problems_are_collected_and_dependents_skipped():
    model = _raw_model(
        [node("Hardmax", ["x"], ["erf"], name="static_problem"),
         node("Relu", ["erf"], ["after_static"], name="skipped"),
         node("Reshape", ["x", "shape_in"], ["r"], name="runtime_shape"),
         node("Relu", ["r"], ["r2"], name="depends_on_failure"),
         node("Conv", ["v", "w"], ["c"], name="conv3d"),
         node("Transpose", ["x"], ["t"], name="fine")],
        [_vi("x", [2, 3]), _vi("shape_in", [2], TensorProto.INT64), _vi("v", [1, 1, 4, 4, 4, 4])],
        [_vi("r2", [3, 2]), _vi("c", [1, 1, 2, 2, 2, 2]), _vi("t", [3, 2]), _vi("after_static", [2, 3])],
        [onnx.numpy_helper.from_array(rand(1, 1, 3, 3, 3, 3), "w")])
    with pytest.raises(OnnxUnsupportedError) as info:
        from_onnx(model)
    assert [p.node for p in info.value.problems] == ["'static_problem'", "'runtime_shape'", "'conv3d'"]
    assert "must be computable at import time" in str(info.value)
    assert "only 1-D, 2-D and 3-D convolution" in str(info.value)


# ---- malformed files ------------------------------------------------------------------------------

def _file_model():
    return make_model([node("Relu", ["x"], ["y"])], {"x": rand(2, 2)}, ["y"],
                      {"unused_weight": rand(64, 64)})


@pytest.mark.parametrize("cut", [0.5, 0.9, 0.999], ids=["half", "90pct", "last-byte"])
def test_truncated_file_names_the_file(tmp_path, cut):
    data = _file_model().SerializeToString()
    path = tmp_path / "cut model.onnx"
    path.write_bytes(data[: int(len(data) * cut)])
    with pytest.raises(OnnxImportError) as info:
        from_onnx(path)
    assert str(path) in str(info.value)
    assert "truncated" in str(info.value) or "not a valid ONNX model" in str(info.value)


@pytest.mark.parametrize("content,fragment", [
    (b"", "is empty"),
    (b"this is not a protobuf \xff\xfe at all", "truncated or not an ONNX model"),
    (b"\x08\x07", "truncated or not an ONNX model"),  # a valid ModelProto with only ir_version
], ids=["empty", "garbage", "no-graph"])
def test_not_an_onnx_file(tmp_path, content, fragment):
    path = tmp_path / "bad.onnx"
    path.write_bytes(content)
    with pytest.raises(OnnxImportError, match=fragment) as info:
        from_onnx(str(path))
    assert str(path) in str(info.value)


def test_missing_file_and_wrong_argument(tmp_path):
    with pytest.raises(OnnxImportError, match="does not exist"):
        from_onnx(tmp_path / "nope.onnx")
    with pytest.raises(OnnxImportError, match="is a directory"):
        from_onnx(tmp_path)
    with pytest.raises(OnnxImportError, match="takes a path, bytes or an onnx.ModelProto"):
        from_onnx(42)


def test_invalid_model_reports_checker_message():
    model = _raw_model([node("Relu", ["nowhere"], ["y"])], [_vi("x", [2])], [_vi("y", [2])])
    with pytest.raises(OnnxImportError, match="not a valid ONNX model.*nowhere"):
        from_onnx(model)


def test_file_and_bytes_import(tmp_path):
    model = _file_model()
    path = tmp_path / "m.onnx"
    onnx.save(model, str(path))
    x = rand(2, 2)
    for source in (path, str(path), path.read_bytes()):
        np.testing.assert_array_equal(run_reference(from_onnx(source), {"x": x})[0], np.maximum(x, 0))


# ---- shapes, dtypes, names ------------------------------------------------------------------------

def _dynamic_model():
    return _raw_model([node("Relu", ["img"], ["y"]), node("Add", ["ids", "ids"], ["z"])],
                      [_vi("img", ["N", 3, None, 4]), _vi("ids", ["L"], TensorProto.INT64)],
                      [_vi("y", ["N", 3, None, 4]), _vi("z", ["L"], TensorProto.INT64)])


def test_unsupported_nodes_reported_before_dynamic_dims():
    model = _dynamic_model()
    model.graph.node.append(node("Hardmax", ["y"], ["e"], name="erf"))
    with pytest.raises(OnnxUnsupportedError, match="'erf' \\(Hardmax"):
        from_onnx(model)


def test_dynamic_dims_without_override_name_every_input_and_the_fix():
    with pytest.raises(OnnxImportError) as info:
        from_onnx(_dynamic_model())
    text = str(info.value)
    assert "input 'img' has a dynamic dimension at position 0 ('N'), 2" in text
    assert "shape={'img': (1, 3, 1, 4)}" in text
    assert "input 'ids'" in text and "shape={'ids': (1,)}" in text


def test_shape_override_makes_dynamic_model_importable():
    mod = from_onnx(_dynamic_model(), shape={"img": (2, 3, 5, 4), "ids": [3]}, dtype={"ids": "int32"})
    img, ids = mod["main"].params
    assert (img.name_hint, img.type_annotation.shape, img.type_annotation.dtype) == ("img", (2, 3, 5, 4), "float32")
    assert (ids.type_annotation.shape, ids.type_annotation.dtype) == ((3,), "int32")


@pytest.mark.parametrize("kwargs,fragment", [
    ({"shape": {"image": (1, 3)}}, "'image', which is not an input; the inputs are: 'img', 'ids'"),
    ({"shape": {"img": (1, -3, 2, 4), "ids": (2,)}}, "not a list of non-negative integers"),
    ({"shape": {"img": (1, 3, 2, 4), "ids": (2,)}, "dtype": "bfloat16"}, "dtype 'bfloat16'"),
    ({"shape": {"img": (3, 2, 4), "ids": (2,)}},
     "shape={'img': (3, 2, 4)} has 3 dimension(s) but the model declares 4 for input 'img'"),
], ids=["unknown-name", "negative-dim", "bad-dtype", "wrong-rank"])
def test_bad_overrides(kwargs, fragment):
    with pytest.raises(OnnxImportError, match=".*".join(map(__import__("re").escape, fragment.split("...")))):
        from_onnx(_dynamic_model(), **kwargs)


def test_unsupported_input_dtype_names_the_fix():
    model = _raw_model([node("Relu", ["x"], ["y"])], [_vi("x", [2], TensorProto.UINT32)],
                       [_vi("y", [2], TensorProto.UINT32)])
    with pytest.raises(OnnxImportError, match=r"input 'x' has element type UINT32, which byoc does not support "
                                              r"\(supported: float32, float16, .*bool\).*dtype=\{'x': 'float32'\}"):
        from_onnx(model)


def test_unsupported_initializer_dtype_names_the_tensor():
    w = helper.make_tensor("w32", TensorProto.UINT32, [2], [1, 2])
    model = _raw_model([node("Relu", ["w32"], ["r"]), node("Add", ["x", "r"], ["y"])],
                       [_vi("x", [2], TensorProto.UINT32)], [_vi("y", [2], TensorProto.UINT32)], inits=[w])
    with pytest.raises(OnnxImportError, match=r"initializer 'w32' has element type UINT32, which byoc does not "
                                              r"support"):
        from_onnx(model, dtype={"x": "int32"})


# An element type byoc lacks, wherever it appears in a model: one sentence naming the tensor, its type and
# the supported dtypes (the list docs/dtypes.md gives).
SUPPORTED = "(supported: float32, float16, float64, int8, int16, int32, int64, uint8, uint16, bool)"
UNSUPPORTED = {
    "COMPLEX64": np.array([1 + 2j, -3j], np.complex64),
    "COMPLEX128": np.array([1 + 2j, -3j], np.complex128),
    "BFLOAT16": None,        # numpy has no bfloat16: the initializer is built by onnx.helper
    "STRING": np.array([b"a", b"bc"], object),
    "UINT32": np.array([1, 2], np.uint32),
    "UINT64": np.array([1, 2], np.uint64),
}


def _unsupported_initializer(elem: str, name: str):
    value = UNSUPPORTED[elem]
    if value is None:
        return helper.make_tensor(name, getattr(TensorProto, elem), [2], [1.0, 2.0])
    return numpy_helper.from_array(value, name)


def _unsupported_model(elem: str, where: str):
    t = getattr(TensorProto, elem)
    if where == "input":
        return _raw_model([node("Identity", ["img"], ["y"])], [_vi("img", [2], t)], [_vi("y", [2], t)])
    if where == "initializer":
        return _raw_model([node("Identity", ["w_odd"], ["y"])], [_vi("x", [2])], [_vi("y", [2], t)],
                          inits=[_unsupported_initializer(elem, "w_odd")])
    return _raw_model([node("Cast", ["x"], ["as_odd"], to=t), node("Cast", ["as_odd"], ["y"], to=TensorProto.FLOAT)],
                      [_vi("x", [2])], [_vi("y", [2])])


@pytest.mark.parametrize("where,tensor", [("input", "'img'"), ("initializer", "'w_odd'"), ("cast", "'as_odd'")])
@pytest.mark.parametrize("elem", list(UNSUPPORTED))
def test_unsupported_element_type_is_one_sentence(elem, where, tensor):
    with pytest.raises(OnnxImportError) as info:
        from_onnx(_unsupported_model(elem, where))
    message = str(info.value)
    assert tensor in message and elem in message and SUPPORTED in message, message
    assert "Traceback" not in message and info.value.__cause__ is None
    # the sentence that says it: the tensor's own line
    line = next(line for line in message.splitlines() if elem in line)
    assert tensor in line and SUPPORTED in line, line


def test_names_kept_and_initializer_inputs_are_constants():
    w = rand(3, 2)
    feeds = {"input:0": rand(3, 2), "other input": rand(3, 2)}
    model = make_model([node("Add", ["input:0", "weight.1"], ["sum/out"]),
                        node("Mul", ["sum/out", "other input"], ["prod:0"])],
                       feeds, ["prod:0", "sum/out"], {"weight.1": w})
    # ONNX allows an initializer to also be a graph input (a default value): it is a constant here.
    model.graph.input.append(helper.make_tensor_value_info("weight.1", TensorProto.FLOAT, [3, 2]))
    mod = from_onnx(model)
    main = mod["main"]
    assert [p.name_hint for p in main.params] == ["input:0", "other input"]
    assert all(isinstance(p, Var) for p in main.params)
    assert main.attrs["output_names"] == ("prod:0", "sum/out")
    add = main.body.fields[1]
    assert isinstance(add.args[1], Constant) and np.array_equal(add.args[1].data, w)
    ours = run_reference(mod, feeds)
    for got, want in zip(ours, reference_outputs(model, feeds)):
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_whole_graph_folds_to_constants():
    model = make_model([node("Constant", [], ["c"], value=onnx.numpy_helper.from_array(rand(2, 3))),
                        node("Shape", ["c"], ["s"]), node("ConstantOfShape", ["s"], ["ones"],
                                                          value=helper.make_tensor("v", TensorProto.FLOAT, [1], [1])),
                        node("Add", ["c", "ones"], ["y"]), node("Transpose", ["y"], ["t"])], {}, ["t"])
    mod = from_onnx(model)
    assert isinstance(mod["main"].body, Constant)
    np.testing.assert_allclose(run_reference(mod, {})[0], reference_outputs(model, {})[0], rtol=1e-6)


def test_converter_bug_becomes_the_named_error(monkeypatch):
    from byoc_compiler.frontend.onnx import converters, table  # noqa: F401 - converters: every row registered

    row = dict(table._TABLE["Relu"])

    def broken(node, ctx):
        raise RuntimeError("boom")

    row[14] = table.Converter("Relu", (14,), broken)
    monkeypatch.setitem(table._TABLE, "Relu", row)
    model = make_model([node("Relu", ["x"], ["y"], name="r")], {"x": rand(2)}, ["y"], opset=14)
    with pytest.raises(OnnxUnsupportedError, match=r"'r' \(Relu, opset 14\): the importer failed \(RuntimeError: "
                                                    r"boom\); this is a bug"):
        from_onnx(model)


def test_external_weights_load_from_path_and_missing_file_is_named(tmp_path):
    w = rand(32, 32)
    model = make_model([node("Add", ["x", "w"], ["y"])], {"x": rand(32, 32)}, ["y"], {"w": w})
    path = tmp_path / "ext.onnx"
    onnx.save(model, str(path), save_as_external_data=True, location="weights.bin", size_threshold=0)
    x = rand(32, 32)
    np.testing.assert_allclose(run_reference(from_onnx(path), {"x": x})[0], x + w, rtol=1e-6)
    (tmp_path / "weights.bin").unlink()
    with pytest.raises(OnnxImportError, match="external weight files cannot be read") as info:
        from_onnx(path)
    assert str(path) in str(info.value)


# ---- opsets --------------------------------------------------------------------------------------

def test_opset_newer_than_onnx_knows_is_one_clear_error():
    known = onnx.defs.onnx_opset_version()
    model = _raw_model([node("Relu", ["x"], ["y"])], [_vi("x", [2])], [_vi("y", [2])], opset=known + 1)
    with pytest.raises(OnnxImportError) as info:
        from_onnx(model)
    assert f"opset {known + 1}" in str(info.value) and f"knows opsets up to {known}" in str(info.value)


def test_old_opset_is_upgraded_with_a_log_line(caplog):
    # AveragePool-1 predates byoc's converters (7+): the model is converted, and the log says so.
    x = rand(1, 2, 4, 4)
    model = _raw_model([node("AveragePool", ["x"], ["y"], kernel_shape=[2, 2])], [_vi("x", [1, 2, 4, 4])],
                       [_vi("y", [1, 2, 3, 3])], opset=6)
    with caplog.at_level("INFO", logger="byoc_compiler.frontend.onnx"):
        mod = from_onnx(model)
    assert "upgraded from opset 6 to opset 7 with onnx.version_converter" in caplog.text
    want = np.array([[x[0, c, i:i + 2, j:j + 2].astype(np.float64).mean() for j in range(3)] for c in range(2)
                     for i in range(3)])
    np.testing.assert_allclose(run_reference(mod, {"x": x})[0].ravel(), want.ravel(), rtol=1e-5, atol=1e-6)
