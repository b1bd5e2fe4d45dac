"""Running a built runner: the standalone program (or a bare-metal image) fed with .npy files.

The one way byoc runs a runner (BuildResult.run_runner, the SCons check, the test matrix, the debug tools):
the inputs as in<i>.npy in a work directory, under the toolchain's run prefix (qemu-user for foreign CPUs,
qemu-system for bare-metal images), the outputs read back from out<i>.npy.
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from ..errors import ByocError
from ..toolchain import run_command, semihosted


def run_runner(runner: Path, run_prefix, inputs: dict[str, np.ndarray], input_order, workdir: Path,
               repeat: int = 1, timeout: float = 600.0, extra_args=()) -> list[np.ndarray]:
    """Run a standalone runner on .npy files in `workdir`; returns its outputs."""
    outputs, _ = run_runner_timed(runner, run_prefix, [inputs[name] for name in input_order], workdir,
                                  repeat, timeout, extra_args=extra_args)
    return outputs


def run_runner_timed(runner, run_prefix, arrays, workdir: Path, repeat: int = 1, timeout: float = 600.0,
                     what: str | None = None, extra_args=()) -> tuple[list[np.ndarray], float | None]:
    """`arrays` in input order as .npy files in `workdir`, run under `run_prefix`.
    Returns (outputs, the runner's median ms over `repeat` runs). A failure is one ToolchainError
    naming `what`, the command and the runner's stderr. `extra_args` go to the runner (`--dump DIR`)."""
    outputs, proc = run_runner_proc(runner, run_prefix, arrays, workdir, repeat, timeout, what, extra_args)
    found = re.search(r"median_ms=([0-9.eE+-]+)", proc.stdout)
    return outputs, float(found.group(1)) if found else None


def run_runner_proc(runner, run_prefix, arrays, workdir: Path, repeat: int = 1, timeout: float = 600.0,
                    what: str | None = None, extra_args=()):
    """run_runner_timed, returning (outputs, the finished process) so callers can read what it printed."""
    workdir.mkdir(parents=True, exist_ok=True)
    files = []
    for i, value in enumerate(arrays):
        path = workdir / f"in{i}.npy"
        np.save(path, np.ascontiguousarray(value))
        files.append(str(path))
    outdir = workdir / "out"
    outdir.mkdir(exist_ok=True)
    for old in outdir.glob("*.npy"):
        old.unlink()
    if semihosted(run_prefix):   # a bare-metal image: in<i>.npy and out/ relative to where it starts, run once
        if extra_args:
            raise ByocError(f"{what or runner}: a bare-metal image takes no options ({' '.join(map(str, extra_args))})")
        # The image starts in workdir (its files are relative to where it starts), so a relative path to it
        # (SCons names its nodes from the project's top) is made absolute first.
        image = Path(runner).resolve()
        proc = run_command([*run_prefix, str(image)], what or f"image {runner}", cwd=workdir, timeout=timeout)
    else:
        argv = [*run_prefix, str(runner), "--repeat", str(repeat), "--out", str(outdir), *map(str, extra_args), *files]
        proc = run_command(argv, what or f"runner {runner}", timeout=timeout)
    outputs = sorted(outdir.glob("out*.npy"), key=lambda p: int(p.stem[3:]))
    return [np.load(p) for p in outputs], proc


def threads_args(threads: int | None) -> list[str]:
    """`runner --threads N`, or nothing for the runner's default; a bad count is one ByocError."""
    if threads is None:
        return []
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ByocError(f"run_runner: threads must be a whole number >= 1, got {threads!r}")
    return ["--threads", str(threads)]


def ordered_inputs(info: list[dict], inputs) -> list:
    """`inputs` (a list in input order, or a dict by name) as a list in the order of metadata["inputs"]."""
    if isinstance(inputs, dict):
        missing = [i["name"] for i in info if i["name"] not in inputs]
        if missing:
            raise ByocError(f"run_runner: no value for input {missing[0]!r}; inputs: "
                            f"{', '.join(i['name'] for i in info)}")
        inputs = [inputs[i["name"]] for i in info]
    if len(inputs) != len(info):
        raise ByocError(f"run_runner: the model takes {len(info)} inputs, got {len(inputs)}")
    return inputs


def run_model_runner(runner: Path, toolchain, metadata: dict, inputs, workdir: Path, repeat: int = 1,
                     timeout: float | None = None, extra_args=()) -> tuple[list[np.ndarray], float | None]:
    """A built model's runner (BuildResult.run_runner) on `inputs` (a list or a dict by name), under the
    toolchain's run prefix and timeout (config.toml's, unless `timeout`); returns (outputs, median ms)."""
    arrays = ordered_inputs(metadata["inputs"], inputs)
    return run_runner_timed(runner, toolchain.run, arrays, workdir, repeat,
                            toolchain.timeout if timeout is None else timeout,
                            what=f"running model {metadata['mod_name']!r} with toolchain {toolchain.name!r}",
                            extra_args=extra_args)
