"""build() is a flat list of named stages, and graph.json is built once: the file and the copy
embedded in host.c are the same graph (the embedded one read back from the C text)."""
from __future__ import annotations

import json
import re
import sys

import pytest

from byoc_compiler import zoo
from byoc_compiler.backend import graph_json as graph_json_module
from byoc_compiler.backend.build import STAGES, build


def test_the_stages_read_like_the_docs():
    assert [name for name, _ in STAGES] == ["validate", "lower", "codegen", "host sections", "pools",
                                                  "descriptor"]


def _embedded_graph(host_c: str) -> dict:
    m = re.search(r"static const unsigned char byoc_graph_json\[(\d+)\] = \{([^}]*)\};", host_c)
    assert m, "graph.json is not embedded as a byte array"
    data = bytes(int(b) for b in m.group(2).split(","))
    assert len(data) == int(m.group(1))
    return json.loads(data)


@pytest.mark.parametrize("interface", ["packed", "unpacked"])
def test_graph_json_is_built_once_and_embedded_as_written(monkeypatch, interface):
    calls = []
    real = graph_json_module.graph_json
    for module in [m for name, m in sys.modules.items() if name.startswith("byoc_compiler")]:
        if getattr(module, "graph_json", None) is real:      # every module that could build one
            monkeypatch.setattr(module, "graph_json", lambda prog, *rest: calls.append(prog) or real(prog, *rest))
    lib = build(zoo.get("multi_output"), executor="graph", interface=interface, large_constant_bytes=None)
    assert len(calls) == 1
    assert _embedded_graph(lib.get_source()) == json.loads(lib.graph_json)
