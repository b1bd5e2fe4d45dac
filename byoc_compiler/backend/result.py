"""BuildResult: what `build` returns — sources, graph.json, params, metadata — and how to turn it into files.

Nothing is compiled until asked: `get_source`, `graph_json`, `params`, `metadata` and `export` only
write text (this module). `export_library` (host toolchains) and `export_runner` (any toolchain) compile
and link with the commands of byoc_compiler/toolchain.py, in a private temporary directory, the result
moved into place only when complete (compile_link.py, which the SCons plan uses too); `run_runner` runs
the runner (byoc_compiler/runtime/runner.py).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import weakref
from pathlib import Path

import numpy as np

from .. import runtime, toolchain as tcmod
from ..errors import ByocError
from ..ir.printer import astext_with_sidecar
from ..linker_script import LINKER_SCRIPT, linker_script
from ..runtime.runner import run_model_runner, threads_args
from . import compile_link, firmware as fw, mlf
from . import threads as threadsmod
from .artifact import BlobArtifact, CSourceArtifact
from .constants import AUTO_PARAMS_BYTES, PARAMS_FILE
from .pools import report_text

HOST_SOURCE = "src/host.c"
MODEL_TEXT = "model.txt"
MODEL_SIDECAR = "model.txt.bin"


class BuildResult:
    def __init__(self, *, mod, program, host_c: str, artifacts: dict, region_targets: dict, graph_json: str,
                 params: dict, params_blob: bytes, metadata: dict, toolchain, opt: str, config, constants=None,
                 max_threads: int = threadsmod.DEFAULT_MAX_THREADS, firmware=None):
        self.mod = mod
        self.program = program
        self.host_c = host_c
        self.artifacts = artifacts              # region symbol -> CSourceArtifact | BlobArtifact
        self.region_targets = region_targets    # region symbol -> Target
        self.graph_json = graph_json
        self.params = params
        self.params_blob = params_blob
        self.metadata = metadata
        self.toolchain = toolchain
        self.opt = opt
        self.config = config
        self.constants = constants             # backend.constants.ConstantPool: large constants, linked
        self.max_threads = max_threads         # per-thread scratch planned for this many (backend/threads.py)
        self.firmware = firmware               # backend.firmware.Firmware: <mod>.h and <mod>_run, or None
        self.last_run_ms: float | None = None
        self._workdir: str | None = None
        self._built: dict[tuple, Path] = {}

    # ---- text -------------------------------------------------------------------------------
    @property
    def executor(self) -> str:
        return self.metadata["executor"]

    @property
    def interface(self) -> str:
        return self.metadata["interface"]

    @property
    def workspace_bytes(self) -> int:
        return self.metadata["workspace_bytes"]

    def memory_report(self) -> str:
        """Per memory pool (the board's, or the hosted toolchain's one): bytes used beside the lower bound."""
        return report_text(self.metadata["pools"])

    def get_source(self, target: str | None = None) -> str:
        """Generated source, compiling nothing: None/"host" -> host C; a target name -> its sources or blob text."""
        if target in (None, "host"):
            return self.host_c
        texts = []
        for symbol, artifact in self.artifacts.items():
            if self.region_targets[symbol].name != target:
                continue
            if isinstance(artifact, CSourceArtifact):
                texts.append(artifact.text)
            else:
                texts.append(artifact.text if artifact.text is not None else
                             f"/* {symbol}: {len(artifact.blob)}-byte {artifact.kind} blob (no text form) */\n")
        if not texts:
            used = ", ".join(["host"] + self.metadata["targets"])
            raise ByocError(f"get_source: this build has no code for target {target!r}; sources exist for: {used}")
        return "\n".join(texts)

    def sources(self) -> dict[str, str]:
        """Relative path -> text of every generated C source (host first, then each region's files)."""
        return {rel: code for rel, (code, _) in self._sources_with_owner().items()}

    def _sources_with_owner(self) -> dict[str, tuple[str, str | None]]:
        out: dict[str, tuple[str, str | None]] = {HOST_SOURCE: (self.host_c, None)}
        if self.makes_images and self.firmware is not None:
            out[fw.MAIN_SOURCE] = (fw.main_source(self.firmware), None)
        for symbol, artifact in self.artifacts.items():
            if isinstance(artifact, CSourceArtifact):
                target = self.region_targets[symbol].name
                for name, code in artifact.sources.items():
                    path = f"src/{target}/{name}"
                    if path in out:          # two regions chose the same file name
                        path = f"src/{target}/{symbol}_{name}"
                    out[path] = (code, symbol)
        return out

    def firmware_files(self) -> dict[str, str]:
        """include/<mod>.h (AOT + unpacked builds), and a freestanding toolchain's linker script (link.ld)."""
        out = {}
        if self.firmware is not None:
            out[f"include/{self.firmware.header_name}"] = fw.header(self.firmware)
        if self.makes_images:
            out[LINKER_SCRIPT] = linker_script(self.config.board_of(self.toolchain))
        return out

    @property
    def makes_images(self) -> bool:
        """A freestanding toolchain whose board has an image layout: its runner is a bare-metal image (a
        generated main, byoc's startup code, the board's linker script) run over semihosting."""
        board = self.config.board_of(self.toolchain) if self.toolchain.freestanding else None
        return board is not None and bool(board.regions)

    def constant_files(self) -> dict[str, str | bytes]:
        """byoc_constants.S (text) and byoc_constants.bin (bytes) when the build has large constants."""
        return self.constants.files() if self.constants is not None else {}

    def blobs(self) -> dict[str, bytes]:
        out = {}
        for symbol, artifact in self.artifacts.items():
            if isinstance(artifact, BlobArtifact):
                target = self.region_targets[symbol].name
                out[f"src/{target}/{symbol}.{re.sub(r'[^A-Za-z0-9_]', '_', artifact.kind)}"] = artifact.blob
        return out

    def model_text(self) -> str:
        """The partitioned module as one text, every constant inline (base64 in its metadata section)."""
        return self.mod.astext()

    def model_text_with_sidecar(self) -> tuple[str, bytes]:
        """(model.txt, model.txt.bin): constants of at least 1 KiB kept out of line, by offset into the .bin."""
        def in_constants_bin(array):
            found = self.constants.locate(array)
            return None if found is None else (PARAMS_FILE, found[0], self.constants.order)

        # In a params build the weights are in constants.bin, beside model.txt: refer to them, do not copy.
        external = in_constants_bin if self.constants_mode == "params" and self.constants else None
        return astext_with_sidecar(self.mod, MODEL_SIDECAR.rsplit("/", 1)[-1], external=external)

    # ---- export -----------------------------------------------------------------------------
    def files(self, model_text: str = "sidecar") -> dict[str, str | bytes]:
        """Relative path -> content of everything `export` writes (text as str, binary as bytes).

        model_text="sidecar" (default) writes model.txt with its large constants in model.txt.bin;
        "inline" writes the all-in-one model.txt (base64 constants in the text); "auto" (SCons build
        directories) is "sidecar" unless model.txt.bin would hold AUTO_PARAMS_BYTES (64 MiB) or more: then
        model.txt would be one more copy of the weights (those in constants.bin are referred to, not copied,
        but a target's packed weights are not the IR's) and is not written; metadata.json says so."""
        out: dict[str, str | bytes] = dict(self.sources())
        out.update(self.firmware_files())
        out.update(self.constant_files())
        for rel, data in self.blobs().items():
            out[rel] = data
            text = self.artifacts[Path(rel).stem].text
            if text is not None:
                out[str(Path(rel).with_suffix(".txt"))] = text
        out["graph.json"] = self.graph_json
        out["params.bin"] = self.params_blob
        meta = dict(self.metadata)
        if model_text == "inline":
            out[MODEL_TEXT] = self.model_text()
        elif model_text in ("sidecar", "auto"):
            text, sidecar = self.model_text_with_sidecar()
            if model_text == "auto" and len(sidecar) >= AUTO_PARAMS_BYTES:
                meta["model_text"] = (f"not written: model.txt.bin would be another {len(sidecar)} bytes of weights; "
                                      "BuildResult.export(dir) writes it, `python -m byoc_compiler partition MODEL "
                                      "-t TARGET --print` prints the IR")
            else:
                out[MODEL_TEXT] = text
                if sidecar:
                    out[MODEL_SIDECAR] = sidecar
        else:
            raise ByocError(f"export: model_text must be 'sidecar', 'inline' or 'auto', got {model_text!r}")
        meta["files"] = sorted(list(out) + ["metadata.json"])
        out["metadata.json"] = json.dumps(meta, indent=2) + "\n"
        return out

    def export(self, directory, model_text: str = "sidecar") -> Path:
        """Write the self-describing directory (atomically: a temp dir renamed into place).
        model_text: "sidecar" (large constants of model.txt in model.txt.bin) or "inline" (one text)."""
        files = self.files(model_text)
        directory = Path(directory)
        directory.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{directory.name}.", dir=directory.parent))
        try:
            for rel, data in files.items():
                (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
                if isinstance(data, bytes):
                    (tmp / rel).write_bytes(data)
                else:
                    (tmp / rel).write_text(data)
            _replace_dir(tmp, directory)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return directory

    def export_model_library_format(self, path) -> Path:
        """One tar in the layout of TVM's Model Library Format, for a firmware project's own build: the
        generated C and header, the runtime core, the kernel library files a region references, the linked
        constants, the parameters, the IR text and metadata.json (backend/mlf.py, docs/bare-metal.md)."""
        return mlf.write_tar(mlf.mlf_files(self), path)

    # ---- compile ----------------------------------------------------------------------------
    def _work(self) -> Path:
        if self._workdir is None:
            self._workdir = tempfile.mkdtemp(prefix="byoc-build-")
            weakref.finalize(self, shutil.rmtree, self._workdir, True)
        return Path(self._workdir)

    def compile_units(self, srcdir: Path, runner: bool = False) -> list[tuple[Path, list, list]]:
        """Write generated sources under srcdir; (source, include dirs, defines) for everything to compile."""
        return compile_link.compile_units(self, srcdir, runner)

    def library_sources(self) -> list[tuple[Path, list]]:
        """(source, include dirs) of the targets' runtime and kernel libraries this build compiles."""
        return compile_link.library_sources(self)

    def link_libraries(self) -> tuple[list[str], list[str]]:
        """(libraries, library dirs) the region targets of this build link, e.g. (["dnnl"], [])."""
        return compile_link.link_libraries(self.region_targets)

    def _objects(self, werror: bool) -> tuple[list[Path], list[Path]]:
        """Objects of the model (+ runtime, target runtimes) and of the runner's extra sources, compiled once."""
        key = ("objects", werror)
        if key not in self._built:
            model, runner, script = compile_link.compile_objects(self, werror, self._work())
            self._built[key] = (model, runner)
            self._built[(LINKER_SCRIPT,)] = script
        return self._built[key]

    def export_library(self, path, werror: bool = False) -> Path:
        """Compile and link a shared library (host toolchains); load it with byoc_compiler.runtime.load."""
        tc = self.toolchain
        if tc.run or tc.freestanding:
            raise ByocError(f"export_library: toolchain {tc.name!r} builds for {tc.arch}, whose libraries cannot be "
                            "loaded here; use export_runner (a standalone program) instead")
        objs, _ = self._objects(werror)
        libs, dirs = self.link_libraries()
        return self._link(Path(path), lambda out: tcmod.link_shared_argv(tc, objs, out, libs, dirs))

    def export_runner(self, path, werror: bool = False) -> Path:
        """Compile and link the standalone runner program (any toolchain; static for cross ones, per config)."""
        model, runner = self._objects(werror)
        libs, dirs = self.link_libraries()
        if self.toolchain.freestanding and not self.makes_images:
            raise ByocError(f"export_runner: toolchain {self.toolchain.name!r} is freestanding and its board "
                            f"({self.toolchain.board or 'none'}) has no image layout (regions, code, rodata, data, "
                            "stack, stack_size: docs/bare-metal.md), so byoc cannot link a program for it; "
                            "export_model_library_format gives the sources for a firmware build")
        script = self._built[(LINKER_SCRIPT,)] if self.makes_images else None
        return self._link(Path(path), lambda out: tcmod.link_exe_argv(self.toolchain, runner + model, out, libs, dirs,
                                                                      script))

    def _link(self, path: Path, argv_for) -> Path:
        """Link in the work directory, then move to `path`: a failed link leaves nothing at `path`."""
        return compile_link.link(self, path, argv_for, self._work())

    def library(self, werror: bool = False) -> Path:
        """A shared library built once per result (cached in the result's temporary directory)."""
        key = ("lib", werror)
        if key not in self._built:
            self._built[key] = self.export_library(self._work() / f"lib{werror:d}" / "model.so", werror)
        return self._built[key]

    def runner(self, werror: bool = False) -> Path:
        key = ("runner", werror)
        if key not in self._built:
            self._built[key] = self.export_runner(self._work() / f"runner{werror:d}" / "runner", werror)
        return self._built[key]

    @property
    def constants_mode(self) -> str:
        return self.metadata.get("large_constants", {}).get("mode", "linked")

    def constants_file(self) -> Path | None:
        """constants="params" builds with large constants: the constants.bin their init needs (in the
        result's work directory); None otherwise."""
        if self.constants_mode != "params" or not self.constants:
            return None
        key = ("constants.bin",)
        if key not in self._built:
            path = self._work() / "constants.bin"
            path.write_bytes(self.constants.binary())
            self._built[key] = path
        return self._built[key]

    def runner_args(self) -> list[str]:
        """What the runner needs besides inputs: `--constants FILE` for constants="params" builds."""
        path = self.constants_file()
        return ["--constants", str(path)] if path is not None else []

    def load(self, werror: bool = False, threads: int | None = None):
        """The model loaded into this process (byoc_compiler.runtime.load of `library()`)."""
        return runtime.load(self.library(werror), constants=self.constants_file(), threads=threads)

    def run_runner(self, inputs, repeat: int = 1, werror: bool = False, timeout: float | None = None,
                   threads: int | None = None) -> list[np.ndarray]:
        """Run the runner on `inputs` (list in input order, or dict by name); returns the outputs.

        Runs under the toolchain's `run` prefix (qemu-user for foreign CPUs, qemu-system for bare-metal
        images, which run once, on one thread, and report no time: an emulator's wall time is not the
        device's); with repeat > 1 the runner's median time is kept in `self.last_run_ms`. threads: `runner
        --threads N` (default: the runner's, BYOC_NUM_THREADS or the usable cores). `timeout` defaults to the
        toolchain's (config.toml). How it runs: byoc_compiler/runtime/runner.py.
        """
        extra = self.runner_args() + threads_args(threads)
        exe = self.runner(werror)
        rundir = Path(tempfile.mkdtemp(prefix="run-", dir=self._work()))
        try:
            outputs, self.last_run_ms = run_model_runner(exe, self.toolchain, self.metadata, inputs, rundir, repeat,
                                                         timeout, extra)
            return outputs
        finally:
            shutil.rmtree(rundir, ignore_errors=True)


def _replace_dir(new: Path, dest: Path) -> None:
    """Move the finished directory `new` to `dest`, replacing an older one without a half-written moment."""
    if dest.exists() or dest.is_symlink():
        if not dest.is_dir():
            raise ByocError(f"export: {dest} exists and is not a directory; remove it or choose another path")
        old = Path(tempfile.mkdtemp(prefix=f".{dest.name}.old.", dir=dest.parent))
        os.rmdir(old)
        os.rename(dest, old)
        os.rename(new, dest)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.rename(new, dest)
