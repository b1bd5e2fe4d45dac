"""Graph executor: malformed graph.json / params blobs get a message and a clean exit under ASan/UBSan,
valid ones run and match numpy. Uses the hand-written fixture model (runtime_fixtures/graph_model.c)."""
import struct

import numpy as np
import pytest

from runtime_fixtures import builder
from runtime_fixtures.fixtures import (assert_clean_failure, graph_check_asan, graph_runner_asan,  # noqa: F401
                                       rt_dir, run)

X = (np.arange(6, dtype=np.float32).reshape(2, 3) - 3) * 0.75
Y = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)


@pytest.fixture
def inputs(tmp_path):
    np.save(tmp_path / "x.npy", X)
    np.save(tmp_path / "y.npy", Y)
    return tmp_path


def _run_with(runner, d, graph=None, params=None):
    cmd = [runner, "--out", d]
    if graph is not None:
        (d / "g.json").write_text(graph) if isinstance(graph, str) else (d / "g.json").write_bytes(graph)
        cmd += ["--graph", d / "g.json"]
    if params is not None:
        (d / "p.bin").write_bytes(params)
        cmd += ["--params", d / "p.bin"]
    return run(cmd + [d / "x.npy", d / "y.npy"])


def _check_outputs(d):
    for i, want in enumerate(builder.graph_reference(X, Y)):
        np.testing.assert_array_equal(np.load(d / f"out{i}.npy"), want)


def test_embedded_graph_runs(graph_runner_asan, inputs):
    proc = _run_with(graph_runner_asan, inputs)
    assert proc.returncode == 0, proc.stderr
    _check_outputs(inputs)


def test_override_files_run(graph_runner_asan, inputs):
    proc = _run_with(graph_runner_asan, inputs, builder.graph_json(), builder.params_blob())
    assert proc.returncode == 0, proc.stderr
    _check_outputs(inputs)


def test_escapes_and_whitespace_and_integer_attrs_accepted(graph_runner_asan, inputs):
    g = builder.graph_copy()
    for n in g["nodes"]:
        if n["op"] == "tvm_op":
            n["attrs"]["num_inputs"] = int(n["attrs"]["num_inputs"])  # JSON ints are accepted as well
            n["inputs"] = [e[:2] for e in n["inputs"]]  # [nid, index] without version
    g["nodes"][3]["name"] = "add\u00e9\U0001F600\n"
    text = builder.graph_json(g).replace('"x"', '"\\u0078"').replace(", ", " ,\r\n\t ")
    proc = _run_with(graph_runner_asan, inputs, text)
    assert proc.returncode == 0, proc.stderr
    _check_outputs(inputs)


def _set(path, value):
    def mutate(g):
        obj = g
        for k in path[:-1]:
            obj = obj[k]
        obj[path[-1]] = value
        return g
    return mutate


def _delete(path):
    def mutate(g):
        obj = g
        for k in path[:-1]:
            obj = obj[k]
        del obj[path[-1]]
        return g
    return mutate


def _text(s):
    return lambda g: s


def _deep(n):
    return lambda g: '{"nodes": ' + "[" * n + "]" * n + "}"


def _shape(i, shape):
    def mutate(g):
        g["attrs"]["shape"][1][i] = shape
        return g
    return mutate


# (id, mutation of the fixture graph, fragment of the expected message)
GRAPH_CASES = [
    ("empty", _text(""), "expected a value at end of input"),
    ("top-level-array", _text("[]"), "top level must be an object"),
    ("garbage", _text("{nodes: 1}"), "expected a string key"),
    ("trailing-comma", _text('{"nodes": [1,]}'), "unexpected character"),
    ("trailing-text", lambda g: builder.graph_json(g) + " x", "trailing characters"),
    ("duplicate-key", _text('{"nodes": [], "nodes": []}'), "duplicate key"),
    ("bad-escape", _text('{"nodes\\q": []}'), "invalid escape"),
    ("control-char", _text('{"no\x01des": []}'), "control character"),
    ("lone-surrogate", _text('{"\\ud800": []}'), "surrogate"),
    ("nul-escape", _text('{"\\u0000": []}'), "\\u0000"),
    ("leading-zero", _text('{"nodes": [01]}'), "leading zero"),
    ("bad-literal", _text('{"nodes": tru}'), "invalid literal"),
    ("deep-nesting", _deep(100000), "nesting too deep"),
    ("huge-object", _text("{" + ", ".join(f'"k{i}": 0' for i in range(5000)) + "}"), "too many members"),
    ("missing-nodes", _delete(["nodes"]), 'missing field "nodes"'),
    ("nodes-object", _set(["nodes"], {}), "nodes must be an array, got object"),
    ("no-nodes", _set(["nodes"], []), "nodes must list"),
    ("node-not-object", _set(["nodes", 0], 5), "nodes[0] must be an object"),
    ("missing-op", _delete(["nodes", 3, "op"]), 'nodes[3] is missing field "op"'),
    ("op-number", _set(["nodes", 3, "op"], 7), "nodes[3].op must be a string, got number"),
    ("unknown-op", _set(["nodes", 3, "op"], "conv"), 'must be "null" or "tvm_op"'),
    ("unknown-func", _set(["nodes", 5, "attrs", "func_name"], "k_nope"), "'k_nope', which is not in"),
    ("missing-attrs", _delete(["nodes", 5, "attrs"]), 'nodes[5] is missing field "attrs"'),
    ("missing-num-outputs", _delete(["nodes", 5, "attrs", "num_outputs"]), '"num_outputs"'),
    ("num-inputs-mismatch", _set(["nodes", 3, "attrs", "num_inputs"], "1"), "num_inputs 1 but lists 2"),
    ("num-inputs-text", _set(["nodes", 3, "attrs", "num_inputs"], "two"), "must be an integer"),
    ("num-outputs-zero", _set(["nodes", 3, "attrs", "num_outputs"], "0"), "out of range"),
    ("num-outputs-huge", _set(["nodes", 3, "attrs", "num_outputs"], "9999999999"), "out of range"),
    ("null-with-inputs", _set(["nodes", 0, "inputs"], [[1, 0, 0]]), "is a \"null\" node but has inputs"),
    ("input-nid-out-of-range", _set(["nodes", 3, "inputs", 0], [99, 0, 0]), "out of range"),
    ("input-from-later-node", _set(["nodes", 3, "inputs", 0], [5, 0, 0]), "out of range [0, 2]"),
    ("input-negative", _set(["nodes", 3, "inputs", 0], [-1, 0, 0]), "out of range"),
    ("input-index-out-of-range", _set(["nodes", 4, "inputs", 0], [3, 3, 0]), "refers to output 3 of node 3"),
    ("input-not-pair", _set(["nodes", 4, "inputs", 0], [3]), "must be [node_id, output_index]"),
    ("input-float-id", _set(["nodes", 4, "inputs", 0], [3.5, 0]), "must be an integer"),
    ("input-huge-id", _text(builder.graph_json().replace("[[3, 0, 0], [2, 0, 0]]", "[[1e400, 0], [2, 0]]")),
     "must be an integer"),
    ("input-bignum-id", _text(builder.graph_json().replace("[[3, 0, 0], [2, 0, 0]]",
                                                           "[[123456789012345678901234567890, 0], [2, 0]]")),
     "fits in 64 bits"),
    ("row-ptr-short", _set(["node_row_ptr"], [0, 1, 2]), "node_row_ptr must have 9 entries"),
    ("row-ptr-inconsistent", _set(["node_row_ptr"], [0, 1, 2, 3, 4, 5, 6, 7, 8]), "node_row_ptr[7] = 7"),
    ("missing-row-ptr", _delete(["node_row_ptr"]), 'missing field "node_row_ptr"'),
    ("dltype-short", _set(["attrs", "dltype"], ["list_str", ["float32"]]), "attrs.dltype must list 9 entries"),
    ("dltype-bad", _set(["attrs", "dltype", 1, 4], "float33"), "attrs.dltype[4]"),
    ("dltype-number", _set(["attrs", "dltype", 1, 4], 32), "attrs.dltype[4]"),
    ("dltype-wrong-tag", _set(["attrs", "dltype", 0], "list_int"), '["list_str", [...]]'),
    ("shape-not-list", _shape(4, 6), "attrs.shape[4] must be an array"),
    ("shape-negative", _shape(4, [2, -3]), "out of range"),
    ("shape-string", _shape(4, [2, "3"]), "must be an integer, got string"),
    ("shape-too-many-dims", _shape(4, [1] * 33), "at most 32 dimensions"),
    ("shape-overflow", _shape(4, [2147483647] * 4), "too large"),
    ("storage-id-missing", _delete(["attrs", "storage_id"]), 'missing field "storage_id"'),
    ("storage-id-negative", _set(["attrs", "storage_id", 1, 0], -4), "storage_id[0]"),
    ("storage-id-out-of-range", _set(["attrs", "storage_id", 1, 4], 9), "storage_id[4] = 9 is out of range [0, 8]"),
    ("storage-id-text", _set(["attrs", "storage_id", 1, 4], "3"), "storage_id[4] must be an integer"),
    # the plan itself: bias's output on add0's id while bias reads add0's output
    ("storage-shared-while-read", _set(["attrs", "storage_id", 1, 4], 3),
     "entries 3 and 4 share storage_id 3 while both are live (node 4 writes entry 4, entry 3 is still read by node 4)"),
    ("storage-two-outputs-one-id", _set(["attrs", "storage_id", 1, 7], 4), "entries 6 and 7 share storage_id 4"),
    ("storage-head-overwritten", _set(["attrs", "storage_id", 1, 8], 5),
     "entries 7 and 8 share storage_id 5 while both are live (node 7 writes entry 8, entry 7 is still an output"),
    ("storage-on-an-input", _set(["attrs", "storage_id", 1, 3], 0), "an input or a param, which needs a storage id"),
    ("storage-input-on-an-input", _set(["attrs", "storage_id", 1, 1], 0), "storage_id[1] = 0 is also the storage"),
    ("arg-nodes-op", _set(["arg_nodes"], [0, 1, 2, 3]), 'distinct "null" node'),
    ("arg-nodes-missing-input", _set(["arg_nodes"], [0, 2]), "missing from arg_nodes"),
    ("arg-nodes-out-of-range", _set(["arg_nodes"], [0, 1, 2, 40]), "out of range"),
    ("heads-empty", _set(["heads"], []), "heads is empty"),
    ("heads-out-of-range", _set(["heads", 0], [8, 0, 0]), "heads[0]"),
    ("heads-bad-index", _set(["heads", 1], [6, 2, 0]), "refers to output 2 of node 6"),
    # valid graphs that disagree with the model: caught against the descriptor or by the kernel's checks
    ("input-shape-vs-descriptor", _shape(0, [3, 2]), "model descriptor"),
    ("output-count-vs-descriptor", _set(["heads"], [[7, 0, 0]]), "model descriptor"),
    ("intermediate-shape-vs-kernel", lambda g: _shape(5, [6])(g), "k_relu argument: expected shape (2, 3), got (6,)"),
]


@pytest.mark.parametrize("mutate,fragment", [c[1:] for c in GRAPH_CASES], ids=[c[0] for c in GRAPH_CASES])
def test_malformed_graph_json_is_rejected(graph_runner_asan, inputs, mutate, fragment):
    g = mutate(builder.graph_copy())
    text = g if isinstance(g, str) else builder.graph_json(g)
    proc = _run_with(graph_runner_asan, inputs, text)
    assert_clean_failure(proc, fragment)
    assert "graph.json" in proc.stderr or "k_relu" in proc.stderr


def _blob_with(**change):
    """A one-tensor params blob for p0 with fields overridden."""
    f = dict(name=b"p0", code=2, bits=32, lanes=1, shape=(3,), data=builder.P0.astype("<f4").tobytes(),
             count=1, magic=b"BYOCPRM1", nbytes=None, tail=b"")
    f.update(change)
    nbytes = len(f["data"]) if f["nbytes"] is None else f["nbytes"]
    return (f["magic"] + struct.pack("<I", f["count"]) + struct.pack("<I", len(f["name"])) + f["name"]
            + struct.pack("<BBHI", f["code"], f["bits"], f["lanes"], len(f["shape"]))
            + struct.pack(f"<{len(f['shape'])}q", *f["shape"]) + struct.pack("<Q", nbytes) + f["data"] + f["tail"])


PARAMS_CASES = [
    ("empty", b"", "bad magic"),
    ("bad-magic", _blob_with(magic=b"BYOCPRM2"), "bad magic"),
    ("count-huge", _blob_with(count=0xFFFFFFFF), "says 4294967295 tensors"),
    ("count-zero-leaves-param-as-input", _blob_with(count=0)[:12], "model descriptor"),
    ("name-len-huge", _blob_with()[:12] + struct.pack("<I", 0x7FFFFFFF) + b"p0" * 20, "name length"),
    ("unknown-name", _blob_with(name=b"p9"), "'p9' matches no \"null\" node"),
    ("input-name", _blob_with(name=b"x", shape=(2, 3), data=bytes(24)), "model descriptor"),
    ("wrong-dtype", _blob_with(code=0), "has dtype int32 but graph.json says float32"),
    ("unsupported-dtype", _blob_with(bits=12), "unsupported dtype"),
    ("wrong-shape", _blob_with(shape=(1, 3)), "has shape (1, 3) but graph.json says (3,)"),
    ("negative-dim", _blob_with(shape=(-3,)), "negative or overflowing"),
    ("overflowing-shape", _blob_with(shape=(1 << 62, 1 << 62)), "negative or overflowing"),
    ("nbytes-mismatch", _blob_with(nbytes=8), "says 8 data bytes"),
    ("nbytes-huge", _blob_with(nbytes=1 << 63), "data bytes"),
    ("ndim-huge", _blob_with()[:18] + struct.pack("<BBHI", 2, 32, 1, 1000) + bytes(40), "ndim 1000"),
    ("trailing-bytes", _blob_with(tail=b"\0\0"), "trailing bytes"),
    ("duplicate", _blob_with(count=2, tail=_blob_with()[12:]), "appears twice"),
]


@pytest.mark.parametrize("blob,fragment", [c[1:] for c in PARAMS_CASES], ids=[c[0] for c in PARAMS_CASES])
def test_malformed_params_blob_is_rejected(graph_runner_asan, inputs, blob, fragment):
    proc = _run_with(graph_runner_asan, inputs, params=blob)
    assert_clean_failure(proc, fragment)


def test_hand_packed_blob_matches_python_writer():
    assert _blob_with() == builder.params_blob()


def test_every_truncation_is_rejected(graph_check_asan, tmp_path):
    """Every proper prefix of graph.json and of the params blob: an error message, never a crash."""
    (tmp_path / "g.json").write_text(builder.graph_json())
    (tmp_path / "p.bin").write_bytes(builder.params_blob())
    proc = run([graph_check_asan, "--prefixes", tmp_path / "g.json", tmp_path / "p.bin"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    total = len(builder.graph_json()) + len(builder.params_blob())
    assert f"rejected={total}" in proc.stdout


def test_storage_plan_of_graph_json_is_allocated(graph_check_asan, tmp_path):
    (tmp_path / "g.json").write_text(builder.graph_json())
    (tmp_path / "p.bin").write_bytes(builder.params_blob())
    proc = run([graph_check_asan, tmp_path / "g.json", tmp_path / "p.bin"])
    assert proc.stdout.strip() == f"ok inputs=2 outputs=2 workspace={builder.GRAPH_WORKSPACE}", proc.stderr


def test_run_failure_names_node_and_kernel(graph_runner_asan, tmp_path):
    np.save(tmp_path / "x.npy", np.full((2, 3), np.nan, np.float32))
    np.save(tmp_path / "y.npy", Y)
    proc = run([graph_runner_asan, "--out", tmp_path, tmp_path / "x.npy", tmp_path / "y.npy"])
    assert_clean_failure(proc, "model run failed", "node 5 ('relu', func k_relu) failed: k_relu: NaN")


def test_random_byte_edits_never_crash(graph_check_asan, tmp_path):
    """Seeded random edits of graph.json and the params blob (ASan/UBSan abort on any memory error):
    each create fails with a message, or succeeds and the graph runs."""
    (tmp_path / "g.json").write_text(builder.graph_json())
    (tmp_path / "p.bin").write_bytes(builder.params_blob())
    proc = run([graph_check_asan, "--mutate", "3000", tmp_path / "g.json", tmp_path / "p.bin"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    accepted, rejected = (int(kv.split("=")[1]) for kv in proc.stdout.split())
    assert accepted + rejected == 6000 and rejected > accepted


def _chain_graph(n):
    """x -> bias_add(., p0) -> bias_add(., p1) -> ... n ops, n params."""
    nodes = [{"op": "null", "name": "x", "inputs": []}]
    nodes += [{"op": "null", "name": f"p{i}", "inputs": []} for i in range(n)]
    prev = 0
    for i in range(n):
        nodes.append({"op": "tvm_op", "name": f"b{i}", "inputs": [[prev, 0], [1 + i, 0]],
                      "attrs": {"func_name": "k_bias_add", "num_inputs": "2", "num_outputs": "1"}})
        prev = len(nodes) - 1
    shapes = [[2, 3]] + [[3]] * n + [[2, 3]] * n
    graph = {"nodes": nodes, "arg_nodes": list(range(n + 1)), "heads": [[prev, 0]],
             "node_row_ptr": list(range(len(nodes) + 1)),
             "attrs": {"dltype": ["list_str", ["float32"] * len(nodes)], "shape": ["list_shape", shapes],
                       "storage_id": ["list_int", list(range(n + 1)) + [n + 1 + i % 2 for i in range(n)]]}}
    params = {f"p{i}": np.full(3, i, np.float32) for i in range(n)}
    return builder.graph_json(graph), builder.runtime.save_params(params)


def test_long_chain_on_two_storage_ids(graph_check_asan, tmp_path):
    text, blob = _chain_graph(5000)
    (tmp_path / "g.json").write_text(text)
    (tmp_path / "p.bin").write_bytes(blob)
    proc = run([graph_check_asan, tmp_path / "g.json", tmp_path / "p.bin"])
    # the plan alternates two ids (input and output of each step live at once): two 24-byte blocks, 64-aligned
    assert proc.stdout.strip() == "ok inputs=1 outputs=1 workspace=128", proc.stdout + proc.stderr
