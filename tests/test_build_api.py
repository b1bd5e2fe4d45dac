"""build(): sources without compiling, metadata, graph.json layout, export directory, bad requests,
names from the model reaching C only escaped, outputs that alias inputs/constants/each other."""
import json
import os
from pathlib import Path

import numpy as np
import pytest

from byoc_compiler import op, zoo
from byoc_compiler.backend.build import build
from byoc_compiler.errors import ByocError
from byoc_compiler.ir import Function, IRModule, Tuple, Var, const
from byoc_compiler.ir.types import TensorType
from byoc_compiler.runtime import load_params

from build_cache import built

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def config_without_compiler(tmp_path):
    text = (ROOT / "config.toml").read_text() + (
        '\n[toolchains.ghost]\ncc = "byoc-no-such-cc"\narch = "x86_64"\napt = ["byoc-ghost-gcc"]\n')
    path = tmp_path / "config.toml"
    path.write_text(text)
    return path


def test_get_source_compiles_nothing(config_without_compiler):
    lib = build(zoo.get("mlp"), toolchain="ghost", config=config_without_compiler)
    host = lib.get_source()
    assert host == lib.get_source("host")
    assert "tvmgen_default_fused_nn_dense" in host and "byoc_model_desc" in host
    with pytest.raises(ByocError, match=r"compiler 'byoc-no-such-cc' not found; install it with "
                                        r"`apt-get install -y byoc-ghost-gcc`"):
        lib.export_library(config_without_compiler.parent / "m.so")


@pytest.mark.parametrize("executor,needle", [("graph", "byoc_graph_create"), ("aot", "tvmgen_my_model_run")],
                         ids=["graph", "aot"])
def test_executor_glue_in_source(executor, needle):
    lib = build(zoo.get("byoc_guide"), executor=executor, mod_name="my-model")
    src = lib.get_source()
    assert needle in src
    # no allocation on the run path: an instance is allocated when it is created, never in a run
    rest = src
    for fn in ("static void* byoc_aligned_alloc(", "static int32_t byoc_instance_create("):
        if fn in rest:
            start = rest.index(fn)
            rest = rest[:start] + rest[rest.index("\n}\n", start):]
    assert "alloc(" not in rest
    assert lib.metadata["mod_name"] == "my-model" and lib.metadata["executor"] == executor


def test_get_source_unknown_target_names_what_exists():
    with pytest.raises(ByocError, match=r"no code for target 'dnnl'.*host"):
        built("mlp").get_source("dnnl")


@pytest.mark.parametrize("kwargs,names", [
    (dict(executor="vm"), ["executor 'vm'"]),
    (dict(interface="c"), ["interface 'c'"]),
    (dict(toolchain="msvc"), ["toolchain 'msvc'"]),
    (dict(executor="vm", interface="c"), ["executor 'vm'", "interface 'c'"]),
], ids=["executor", "interface", "toolchain", "executor+interface"])
def test_impossible_request_lists_valid_combinations(kwargs, names):
    with pytest.raises(ByocError) as info:
        build(zoo.get("byoc_guide"), **kwargs)
    message = str(info.value)
    for name in names:
        assert name in message
    assert "valid combinations" in message and "'graph' or 'aot'" in message and "'packed' or 'unpacked'" in message
    assert "gcc" in message and "\n" not in message


@pytest.mark.parametrize("opt", ["-Ozzz", "-O2 -march=native", "O2"], ids=["unknown-level", "two-flags", "no-dash"])
def test_opt_must_be_one_optimization_level(opt):
    with pytest.raises(ByocError, match=rf"build: opt '{opt}' is not an optimization level; use one of '-O0', .*"
                                        r"other flags go in a toolchain's cflags"):
        build(zoo.get("byoc_guide"), opt=opt)


def test_metadata_describes_the_model():
    lib = built("multi_output", "gcc", "aot", "packed")
    meta = lib.metadata
    main = zoo.get("multi_output")["main"]
    assert [i["name"] for i in meta["inputs"]] == [p.name_hint for p in main.params]
    assert [tuple(i["shape"]) for i in meta["inputs"]] == [p.type_annotation.shape for p in main.params]
    assert len(meta["outputs"]) == 3
    assert meta["toolchain"] == "gcc" and meta["flags"]["opt"] == "-O2" and meta["workspace_bytes"] > 0
    assert meta["targets"] == [] and meta["regions"] == []


def _graph(lib):
    return json.loads(lib.graph_json)


@pytest.mark.parametrize("name", zoo.names())
def test_graph_json_layout(name):
    lib = built(name)
    g = _graph(lib)
    nodes, row = g["nodes"], g["node_row_ptr"]
    assert set(g) == {"nodes", "arg_nodes", "heads", "attrs", "node_row_ptr"}
    assert g["arg_nodes"] == [i for i, n in enumerate(nodes) if n["op"] == "null"]
    n_entries = sum(int(n["attrs"]["num_outputs"]) if n["op"] == "tvm_op" else 1 for n in nodes)
    assert row[0] == 0 and row[-1] == n_entries and len(row) == len(nodes) + 1
    for key, kind in (("dltype", "list_str"), ("shape", "list_shape"), ("storage_id", "list_int")):
        assert g["attrs"][key][0] == kind and len(g["attrs"][key][1]) == n_entries
    params = [n["name"] for n in nodes if n["op"] == "null" and n["name"] in lib.params]
    assert params == [f"p{i}" for i in range(len(lib.params))]
    for nid, node in enumerate(nodes):
        for src, idx, version in node["inputs"]:
            assert src < nid and version == 0 and idx < row[src + 1] - row[src]
        if node["op"] == "tvm_op":
            assert node["attrs"]["func_name"] in lib.get_source()
            assert int(node["attrs"]["num_inputs"]) == len(node["inputs"])
    # Independently: entries that are live at the same time never share a storage id.
    sid, shapes = g["attrs"]["storage_id"][1], g["attrs"]["shape"][1]
    last_use = {}
    for nid, node in enumerate(nodes):
        for src, idx, _ in node["inputs"]:
            last_use[row[src] + idx] = nid
    heads = {row[n] + i for n, i, _ in g["heads"]}
    live = {}
    for nid in range(len(nodes)):
        for e in range(row[nid], row[nid + 1]):
            end = len(nodes) if (e in heads or nodes[nid]["op"] == "null") else last_use.get(e, nid)
            live[e] = (nid if nodes[nid]["op"] == "tvm_op" else 0, end)
    for a in live:
        for b in live:
            if a < b and sid[a] == sid[b]:
                assert live[a][1] < live[b][0] or live[b][1] < live[a][0], (a, b)
    # The shapes are those of the IR: the heads have the model's output shapes.
    assert [tuple(shapes[row[n] + i]) for n, i, _ in g["heads"]] == \
        [tuple(o["shape"]) for o in lib.metadata["outputs"]]


@pytest.mark.parametrize("executor", ["graph", "aot"])
def test_export_directory(tmp_path, executor):
    lib = built("small_cnn", "gcc", executor, "packed")
    out = lib.export(tmp_path / "small_cnn")
    files = {str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()}
    assert {"src/host.c", "graph.json", "params.bin", "model.txt", "metadata.json"} <= files
    assert (out / "src/host.c").read_text() == lib.get_source()
    assert json.loads((out / "graph.json").read_text()) == _graph(lib)
    params = load_params((out / "params.bin").read_bytes())
    assert list(params) == list(lib.params)
    for name, value in lib.params.items():
        np.testing.assert_array_equal(params[name], value)
    meta = json.loads((out / "metadata.json").read_text())
    assert meta["executor"] == executor and meta["inputs"] == lib.metadata["inputs"]
    assert sorted(meta["files"]) == sorted(files)
    assert "nn.conv2d" in (out / "model.txt").read_text()
    # Large constants of model.txt are in model.txt.bin; load_model reads both back bit-exactly.
    assert (out / "model.txt.bin").stat().st_size > 1024 and '"file": "model.txt.bin"' in (out / "model.txt").read_text()
    from byoc_compiler.load import load_model

    assert load_model(str(out / "model.txt")).astext() == lib.model_text()
    # A second export replaces the first; nothing else is left next to it.
    (out / "stale.txt").write_text("old")
    lib.export(out)
    assert not (out / "stale.txt").exists()
    assert sorted(os.listdir(tmp_path)) == ["small_cnn"]


def test_export_failure_leaves_nothing(tmp_path, monkeypatch):
    lib = built("byoc_guide")
    monkeypatch.setattr(type(lib), "model_text_with_sidecar",
                        lambda self: (_ for _ in ()).throw(RuntimeError("printer broke")))
    with pytest.raises(RuntimeError, match="printer broke"):
        lib.export(tmp_path / "out")
    assert os.listdir(tmp_path) == []


def _odd_outputs_module():
    # Input names that are not C identifiers, an output that is an input, a constant output,
    # a tensor returned twice, and a tuple-returning op whose other fields are dropped.
    x = Var('x"; abort(); /*', TensorType((2, 3), "float32"))
    y = Var("??=y\\n", TensorType((2, 3), "int32"))
    r = op.nn.relu(x)
    parts = op.split(y, 3, axis=1)
    body = Tuple([r, x, const(np.arange(4, dtype=np.int32)), r, op.add(parts[1], y[0] if False else parts[2]), y])
    return IRModule.from_expr(Function([x, y], body))


@pytest.mark.parametrize("executor,interface", [(e, i) for e in ("graph", "aot") for i in ("packed", "unpacked")],
                         ids=lambda v: v)
def test_aliased_outputs_and_hostile_names(executor, interface):
    mod = _odd_outputs_module()
    lib = build(mod, executor=executor, interface=interface)
    x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    y = np.arange(6, dtype=np.int32).reshape(2, 3) - 2
    expected = [np.maximum(x, 0), x, np.arange(4, dtype=np.int32), np.maximum(x, 0),
                y[:, 1:2] + y[:, 2:3], y]
    m = lib.load(werror=True)
    names = [i.name for i in m.input_info()]
    assert names == ['x"; abort(); /*', "??=y\\n"]
    m.set_input(names[0], x)
    m.set_input(names[1], y)
    m.run()
    for k, want in enumerate(expected):
        np.testing.assert_array_equal(m.get_output(k), want)
    for k, got in enumerate(lib.run_runner([x, y], werror=True)):
        np.testing.assert_array_equal(got, expected[k])


@pytest.mark.parametrize("executor", ["graph", "aot"])
def test_composite_calls_left_in_main_are_inlined(executor):
    from byoc_compiler.ir import Call

    x = Var("x", TensorType((2, 3), "float32"))
    p, q = Var("p", TensorType((2, 3), "float32")), Var("q", TensorType((3,), "float32"))
    composite = Function([p, q], op.nn.relu(op.add(p, q)), attrs={"Composite": "fake.add_relu"})
    bias = np.array([0.5, -1.0, 2.0], np.float32)
    mod = IRModule.from_expr(Function([x], op.multiply(Call(composite, [x, const(bias)]), const(2.0))))
    lib = build(mod, executor=executor)
    assert "fake" not in lib.get_source() and lib.metadata["regions"] == []
    x_val = np.linspace(-2, 2, 6, dtype=np.float32).reshape(2, 3)
    out = lib.run_runner([x_val], werror=True)[0]
    np.testing.assert_allclose(out, np.maximum(x_val + bias, 0) * 2, rtol=1e-6)


def _edge_cases():
    x = Var("x", TensorType((3,), "float32"))
    x_val = np.array([1.5, -2.5, 0.0], np.float32)
    low = np.array([-2147483648, 5, 7], np.int32)
    return {
        # main returns its input: no step at all
        "identity": (Function([x], x), [x_val], [x_val]),
        # no inputs: only a constant goes in
        "no_inputs": (Function([], op.nn.relu(const(np.array([-1.0, 2.0], np.float32)))), [],
                      [np.array([0.0, 2.0], np.float32)]),
        # int64 and bool tensors; INT32_MIN as a constant literal
        "dtypes": (Function([x], Tuple([op.cast(x, "int64"), op.add(op.cast(x, "int32"), const(low)),
                                        op.cast(x, "bool")])), [x_val],
                   [x_val.astype(np.int64), x_val.astype(np.int32) + low, x_val.astype(bool)]),
    }


@pytest.mark.parametrize("executor,interface", [(e, i) for e in ("graph", "aot") for i in ("packed", "unpacked")],
                         ids=lambda v: v)
@pytest.mark.parametrize("case", ["identity", "no_inputs", "dtypes"])
def test_edge_case_models(case, executor, interface):
    func, inputs, expected = _edge_cases()[case]
    lib = build(IRModule.from_expr(func), executor=executor, interface=interface)
    got = lib.run_runner(inputs, werror=True)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g.dtype == e.dtype
        np.testing.assert_array_equal(g, e)
