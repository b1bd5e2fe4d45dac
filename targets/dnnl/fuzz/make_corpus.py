"""Seeds for the dnnl fuzz target: the JSON graphs of the zoo's models and of a few one-op graphs, with
symbol "fuzz" (the harness asks for that function).

    python -m byoc_compiler.contrib.dnnl.fuzz.make_corpus OUT_DIR
"""
from __future__ import annotations

import json
import sys
from pathlib import Path


def seeds() -> dict[str, str]:
    import byoc_compiler as byoc
    from byoc_compiler import zoo

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
