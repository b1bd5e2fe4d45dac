"""Seeds for the dnnl fuzz target (targets/dnnl/fuzz/fuzz_parser.c): the JSON graphs of the zoo's models, with
symbol "fuzz" (the harness asks for that function). It builds models, so it lives with the tests, not in
the target (targets import only byoc_compiler.vendor).

    python -m tests.fuzz.corpus_dnnl OUT_DIR      (from the repository's root)
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import byoc_compiler as byoc
from byoc_compiler import zoo


def seeds() -> dict[str, str]:
    out = {}
    for name in zoo.names():
        lib = byoc.build(byoc.partition_for("dnnl", zoo.get(name)))
        for k, artifact in enumerate(a for s, a in lib.artifacts.items() if lib.region_targets[s].name == "dnnl"):
            graph = json.loads(artifact.text)
            graph["symbol"] = "fuzz"
            out[f"{name}_{k}.json"] = json.dumps(graph)
    return out


def write_corpus(directory) -> list[Path]:
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, text in seeds().items():
        (directory / name).write_text(text)
        paths.append(directory / name)
    return paths


if __name__ == "__main__":
    for path in write_corpus(sys.argv[1] if len(sys.argv) > 1 else "dnnl-corpus"):
        print(path)
