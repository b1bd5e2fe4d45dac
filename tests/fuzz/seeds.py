"""Seed corpora for the fuzz targets (tests/fuzz/campaign.py), written from the zoo and the test data.

    python -m tests.fuzz.seeds OUT_DIR        # one sub-directory per fuzz target, seeds and saved findings
"""
from __future__ import annotations

import io
import json
import re
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
FUNC_NAMES = 8  # fuzz_graph.c's function table: f0..f7


def _builds():
    """(graph.json, params blob) of every zoo model, on the host alone and partitioned for ccompiler."""
    import byoc_compiler
    from byoc_compiler import zoo
    from byoc_compiler.backend.build import build

    for name in zoo.names():
        for targets in ([], ["ccompiler"]):
            mod = zoo.get(name)
            lib = build(byoc_compiler.partition_for(targets, mod) if targets else mod, executor="graph")
            yield lib.graph_json, lib.params_blob


def _fixture_graph():
    sys.path.insert(0, str(ROOT / "tests"))
    from runtime_fixtures import builder

    return builder.graph_json(), builder.params_blob()


def _rename_funcs(text: str) -> str:
    """Map the model's func_names onto the harness's table, in order of first use."""
    graph = json.loads(text)
    names: dict[str, str] = {}
    for node in graph["nodes"]:
        attrs = node.get("attrs", {})
        if "func_name" in attrs:
            attrs["func_name"] = names.setdefault(attrs["func_name"], f"f{len(names) % FUNC_NAMES}")
    return json.dumps(graph)


def _storage_plan_edits(text: str) -> list[str]:
    """The fixture graph with its storage plan broken in each way the executor checks (an id shared while
    live, an op output on an input's id, an id out of range), so the fuzzer starts next to those checks."""
    out = []
    for e, sid in ((4, 3), (7, 4), (8, 5), (3, 0), (4, 9)):
        graph = json.loads(text)
        graph["attrs"]["storage_id"][1][e] = sid
        out.append(json.dumps(graph))
    return out


def graph_seeds() -> list[bytes]:
    pairs = [_fixture_graph(), *_builds()]
    pairs += [(g, pairs[0][1]) for g in _storage_plan_edits(pairs[0][0])]
    return [_rename_funcs(g).encode() + p for g, p in pairs] + [_rename_funcs(g).encode() for g, _ in pairs]


def params_seeds() -> list[bytes]:
    from byoc_compiler.runtime import save_params

    out = [p for _, p in [_fixture_graph(), *_builds()]]
    rng = np.random.default_rng(0)
    dtypes = ["float32", "float64", "float16", "int8", "int32", "int64", "uint8", "bool"]
    out.append(save_params({f"p_{d}": rng.standard_normal((2, 3)).astype(d) for d in dtypes}))
    out.append(save_params({"scalar": np.float32(1.5), "empty": np.zeros((0, 4), np.float32)}))
    return out


def npy_seeds() -> list[bytes]:
    out = []
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal((1, 3, 4, 4)).astype(np.float32), np.arange(6, dtype=">i4").reshape(2, 3),
              np.float64(2.5), np.zeros((0,), np.int8), np.array([True, False]), np.ones((2, 2), "<u8"),
              np.ones(3, np.float16)]
    for array in arrays:
        for version in ((1, 0), (2, 0), (3, 0)):
            buf = io.BytesIO()
            np.lib.format.write_array(buf, np.asarray(array), version=version)
            out.append(buf.getvalue())
    return out


def text_seeds() -> list[bytes]:
    import byoc_compiler
    from byoc_compiler import zoo

    out = []
    for name in zoo.names():
        mod = zoo.get(name)
        out.append(str(mod))
        out.append(str(byoc_compiler.partition_for("ccompiler", mod)))
    # the text-format tests' literal models: every triple-quoted string that declares a function
    for text in re.findall(r'"""(.*?)"""', (ROOT / "tests" / "test_text_format.py").read_text(), re.S):
        if "def @main" in text:
            out.append(text)
    return [t.encode() for t in out]


def onnx_seeds() -> list[bytes]:
    sys.path.insert(0, str(ROOT / "tests"))
    import onnx_models
    from test_onnx_ops import CASES, _model

    out = [onnx_models.resnet_style()[0].SerializeToString(), onnx_models.squeezenet_style()[0].SerializeToString()]
    return out + [_model(case).SerializeToString() for case in CASES]


def tflite_seeds() -> list[bytes]:
    """The TFLite tests' single-operator models (int8 and float32), one with its buffers after the flatbuffer,
    and the zoo's microcontroller models small enough for the campaign's input size limit."""
    sys.path.insert(0, str(ROOT / "tests"))
    import tflite_models
    from test_tflite_import import OPS
    from byoc_compiler import zoo

    out = [make(q) for make in OPS.values() for q in (True, False)]
    m = tflite_models.Maker(True, seed=9)
    x, y = m.act("x", (1, 6)), m.act("y", (1, 3))
    m.w.op("FULLY_CONNECTED", [x, m.weight("k", (3, 6), per_channel=False), -1], [y])
    out.append(m.w.finish([x], [y], external_buffers=True))
    # small inputs keep atheris fast (an instrumented import of the 43 kB DS-CNN takes seconds): the autoencoder
    return out + [zoo.tflite_model(name) for name in ("fc_autoencoder_int8", "fc_autoencoder")]


SEEDS = {"graph": graph_seeds, "params": params_seeds, "npy": npy_seeds, "text": text_seeds, "onnx": onnx_seeds,
         "tflite": tflite_seeds}


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m tests.fuzz.seeds OUT_DIR")
    from tests.fuzz import campaign   # writes them, with the saved findings, as the campaigns do

    for name in SEEDS:
        print(name, campaign.write_seeds(campaign.BY_NAME[name], Path(sys.argv[1]) / name))
