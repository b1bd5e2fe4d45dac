"""Debug dumps: every step's outputs of one run, as `.npy` files plus `index.json`.

The runner writes them (`runner --dump DIR`), so does `Module.run(dump=DIR)`; both through the
node observer of the C runtime (runtime.h), so the same directory comes from either executor:

    DIR/index.json            {"model": ..., "executor": ..., "steps": [{"step": 0, "name": "<function>",
                                                                    "outputs": ["step00000_out0.npy", ...]}, ...]}
    DIR/step00000_out0.npy    output 0 of step 0 (steps are numbered in execution order)

A step is one call the executor makes: a host kernel or a region's function, in the order of the
build's Program (BuildResult.program.steps), so step k of a dump is `program.steps[k]`.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

INDEX = "index.json"


@dataclass(frozen=True)
class DumpedStep:
    step: int
    name: str                      # the C function the executor called
    outputs: tuple                 # np.ndarray per output, native byte order


def output_file(step: int, k: int) -> str:
    return f"step{step:05d}_out{k}.npy"


def write_dump(directory, steps, model: str = "", executor: str = "") -> Path:
    """Write (step, name, [arrays]) triples in the runner's layout; returns the directory."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    rows = []
    for step, name, arrays in steps:
        files = []
        for k, arr in enumerate(arrays):
            np.save(directory / output_file(step, k), arr)
            files.append(output_file(step, k))
        rows.append({"step": step, "name": name, "outputs": files})
    (directory / INDEX).write_text(json.dumps({"model": model, "executor": executor, "steps": rows}, indent=1))
    return directory


def read_dump(directory) -> list[DumpedStep]:
    """The steps of a dump directory, in step order; values converted to native byte order."""
    directory = Path(directory)
    index = json.loads((directory / INDEX).read_bytes().decode("utf-8", "replace"))
    out = []
    for row in index["steps"]:
        arrays = []
        for f in row["outputs"]:
            a = np.load(directory / f)
            arrays.append(a.astype(a.dtype.newbyteorder("="), copy=False))
        out.append(DumpedStep(int(row["step"]), str(row["name"]), tuple(arrays)))
    return sorted(out, key=lambda s: s.step)
