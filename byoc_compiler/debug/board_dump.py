"""Every step's outputs of a bare-metal image: what `compare` reads on a board, where the runner's `--dump`
(files, the hosted runtime's observer) does not exist.

The same build is compiled once more as a compare image: host.c with BYOC_STEP_DUMP (the AOT code keeps its
node observer calls on boards then: backend/aot.py OBSERVED_ON_BOARDS) and the checking image's main() with
an observer that writes the raw bytes of each step's outputs, in step order, to dump.bin over semihosting
(backend/firmware.py STEP_DUMP). The types come from the build's Program, so the file needs no header.
The model's own build and its image are not changed: the dump is an image of its own.
"""
from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path

import numpy as np

from ..backend.result import BuildResult
from ..errors import ByocError
from ..runtime.dump import DumpedStep
from ..runtime.runner import run_runner_proc

DUMP_FILE = "dump.bin"


def with_step_dump(lib: BuildResult) -> BuildResult:
    """The compare image's build: `lib` with the step dump compiled in (its own work directory)."""
    if lib.firmware is None or not lib.makes_images:
        raise ByocError(f"compare: toolchain {lib.toolchain.name!r} builds no bare-metal image for this build "
                        "(the dump needs AOT + unpacked with linked constants on a board with an image layout)")
    return BuildResult(mod=lib.mod, program=lib.program, host_c="#define BYOC_STEP_DUMP 1\n" + lib.host_c,
                       artifacts=lib.artifacts, region_targets=lib.region_targets, graph_json=lib.graph_json,
                       params=lib.params, params_blob=lib.params_blob, metadata=lib.metadata,
                       toolchain=lib.toolchain, opt=lib.opt, config=lib.config, constants=lib.constants,
                       max_threads=lib.max_threads, firmware=dataclasses.replace(lib.firmware, step_dump=True))


def split_dump(program, data: bytes) -> list[DumpedStep]:
    """dump.bin cut into each step's outputs by their types (little-endian, as the boards are)."""
    steps, at = [], 0
    for i, step in enumerate(program.steps):
        arrays = []
        for t in step.outputs:
            ty = program.tensors[t].type
            dtype = np.dtype(ty.dtype).newbyteorder("<")
            n = int(np.prod(ty.shape, dtype=np.int64)) * dtype.itemsize
            if at + n > len(data):
                raise ByocError(f"compare: the image's {DUMP_FILE} ends at byte {len(data)}, in the outputs of "
                                f"step {i} ({step.symbol}); the image does not belong to this build")
            arrays.append(np.frombuffer(data, dtype, int(n // dtype.itemsize), at).reshape(ty.shape).astype(
                dtype.newbyteorder("="), copy=True))
            at += n
        steps.append(DumpedStep(i, step.symbol, tuple(arrays)))
    if at != len(data):
        raise ByocError(f"compare: the image's {DUMP_FILE} has {len(data) - at} bytes beyond the build's step "
                        "outputs; the image does not belong to this build")
    return steps


def run_dumped_on_board(lib: BuildResult, arrays: list, timeout: float | None = None):
    """Run the compare image of `lib` once under the board's emulator; (outputs, [DumpedStep])."""
    dumping = with_step_dump(lib)      # kept while its image runs: its work directory goes with it
    image = dumping.runner()
    with tempfile.TemporaryDirectory(prefix="byoc-board-dump-") as tmp:
        outputs, _ = run_runner_proc(image, lib.toolchain.run, arrays, Path(tmp),
                                     timeout=lib.toolchain.timeout if timeout is None else timeout,
                                     what=f"running model {lib.metadata['mod_name']!r} with toolchain "
                                          f"{lib.toolchain.name!r} and its step dump")
        return outputs, split_dump(lib.program, (Path(tmp) / DUMP_FILE).read_bytes())
