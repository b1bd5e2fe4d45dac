"""BuildResult: what `build` returns — sources, graph.json, params, metadata — and how to turn it into files.

Nothing is compiled until asked: `get_source`, `graph_json`, `params`, `metadata` and `export` only
write text. `export_library` (host toolchains) and `export_runner` (any toolchain) compile with the
commands of byoc_compiler/toolchain.py, in a private temporary directory; the result is moved into
place only when complete.
"""
from __future__ import annotations

import atexit
import hashlib
import json
import os
import re
import shutil
import tempfile
import weakref
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from .. import runtime, toolchain as tcmod
from ..runtime.runner import run_runner_timed
from ..errors import ByocError
from ..ir.printer import astext_with_sidecar
from ..linker_script import LINKER_SCRIPT, linker_script
from . import firmware as fw, mlf
from .artifact import BlobArtifact, CSourceArtifact
from .kernel_sources import used_sources
from .constants import AUTO_PARAMS_BYTES, PARAMS_FILE
from .pools import report_text
from . import threads as threadsmod

HOST_SOURCE = "src/host.c"
MODEL_TEXT = "model.txt"
MODEL_SIDECAR = "model.txt.bin"


def _runtime():
    return runtime


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
        rt = _runtime()
        base_includes = [rt.include_dir()]
        threads = [threadsmod.define(self.max_threads)]    # every unit: the C size formulas agree with codegen's
        defines = (["BYOC_UNPACKED_API"] if self.interface == "unpacked" else []) + threads
        units: list[tuple[Path, list, list]] = []
        for rel, (text, symbol) in self._sources_with_owner().items():
            path = srcdir / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            extra = []
            if symbol is not None:
                extra = list(self.artifacts[symbol].include_dirs) + list(self.region_targets[symbol].include_dirs)
            units.append((path, base_includes + extra, defines))
        for rel, text in self.firmware_files().items():     # the header host.c includes; link.ld
            (srcdir / rel).parent.mkdir(parents=True, exist_ok=True)
            (srcdir / rel).write_text(text)
        constant_files = self.constant_files()
        for rel, data in constant_files.items():
            path = srcdir / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(data, bytes):
                path.write_bytes(data)
            else:
                path.write_text(data)
                units.append((path, [], []))     # the .S finds its .bin next to it (-Xassembler -I, toolchain.py)
        seen: set[str] = set()
        runtime_files = list(rt.runtime_sources(self.executor, runner=runner, profile=self.toolchain.profile))
        for f in runtime_files:
            seen.add(os.path.realpath(f))
            units.append((Path(f), base_includes, threads))
        for f, incs in self.library_sources():
            real = os.path.realpath(f)
            if real not in seen:
                seen.add(real)
                units.append((Path(f), base_includes + incs, threads))
        return units

    def library_sources(self) -> list[tuple[Path, list]]:
        """(source, include dirs) of the targets' runtime and kernel libraries this build compiles. A
        freestanding build takes only the files its generated code references (kernel_sources.py)."""
        out = []
        for symbol, artifact in self.artifacts.items():
            target = self.region_targets[symbol]
            files = list(target.runtime_sources)
            if isinstance(artifact, BlobArtifact):
                files += list(artifact.runtime_sources)
            incs = list(target.include_dirs) + list(artifact.include_dirs)
            out += [(Path(f), incs) for f in files]
        if self.toolchain.freestanding and out:
            roots = [text for text in self.sources().values()]
            keep = set(used_sources(roots, list(dict.fromkeys(f for f, _ in out))))
            out = [(f, incs) for f, incs in out if f in keep]
        return out

    def link_libraries(self) -> tuple[list[str], list[str]]:
        """(libraries, library dirs) the region targets of this build link, e.g. (["dnnl"], [])."""
        libs: list[str] = []
        dirs: list[str] = []
        for target in self.region_targets.values():
            libs += [lib for lib in target.libraries if lib not in libs]
            dirs += [os.fspath(d) for d in target.library_dirs if os.fspath(d) not in dirs]
        return libs, dirs

    def _check_targets_here(self) -> None:
        """One sentence, before any compiler runs, if a region's target cannot build with this toolchain."""
        for target in dict.fromkeys(self.region_targets.values()):
            problem = target.problem(self.toolchain)
            if problem:
                raise ByocError(problem)

    def _objects(self, werror: bool) -> tuple[list[Path], list[Path]]:
        """Objects of the model (+ runtime, target runtimes) and of the runner's extra sources, compiled once."""
        key = ("objects", werror)
        if key in self._built:
            return self._built[key]
        tc = self.toolchain
        tcmod.check_toolchain(tc)
        self._check_targets_here()
        outdir = Path(tempfile.mkdtemp(prefix=f"objects{werror:d}-", dir=self._work()))
        units = self.compile_units(outdir / "gen", runner=True)
        rt = _runtime()
        profile = tc.profile
        runner_only = ({os.path.realpath(f) for f in rt.runtime_sources(self.executor, True, profile)}
                       - {os.path.realpath(f) for f in rt.runtime_sources(self.executor, False, profile)})
        extra = list(tcmod.WARNING_FLAGS) if werror else []
        after = [rt.dlpack_include_dir()]
        jobs = []
        names: set[str] = set()
        for src, incs, defs in units:
            stem, n = src.stem, 0
            while stem in names:
                n += 1
                stem = f"{src.stem}_{n}"
            names.add(stem)
            obj = outdir / "obj" / f"{stem}.o"
            obj.parent.mkdir(parents=True, exist_ok=True)
            jobs.append((tcmod.compile_argv(tc, src, obj, incs, defs, self.opt, extra, after), src, obj))
        with ThreadPoolExecutor(max_workers=2) as pool:
            futures = [pool.submit(_compile_cached, argv, src, obj, src.is_relative_to(outdir),
                                   f"compiling {src.name} with toolchain {tc.name!r}") for argv, src, obj in jobs]
            try:
                for f in futures:
                    f.result()
            except tcmod.ToolchainError as exc:
                raise _keep_sources(exc, outdir / "gen") from None
        self._built[(LINKER_SCRIPT,)] = outdir / "gen" / LINKER_SCRIPT
        model = [obj for _, src, obj in jobs if os.path.realpath(src) not in runner_only]
        runner = [obj for _, src, obj in jobs if os.path.realpath(src) in runner_only]
        self._built[key] = (model, runner)
        return model, runner

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
        out = Path(tempfile.mkdtemp(prefix="link-", dir=self._work())) / path.name
        try:
            tcmod.run_command(argv_for(out), f"linking {path.name} with toolchain {self.toolchain.name!r}")
        except tcmod.ToolchainError as exc:
            fix = self._undefined_symbol_fix(str(exc))
            if fix is None:
                raise
            raise tcmod.ToolchainError(f"{fix}\n{exc}") from None
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(out), str(path))
        return path

    def _undefined_symbol_fix(self, log: str) -> str | None:
        """What to do about the linker's undefined references, when they name a region's entry point."""
        names = re.findall(r"undefined (?:reference to|symbol:?) [`'\"]?([A-Za-z_][A-Za-z0-9_]*)", log)
        for name in dict.fromkeys(names):
            if name in self.artifacts:
                target = self.region_targets[name].name
                return (f"linking failed: region {name} (target {target!r}) is not defined by the C its codegen "
                        f"returned; define {name} in those sources (byoc_compiler.ctext.entry_points, vendor.entry_points writes the "
                        "entry point)")
        return None

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
        return _runtime().load(self.library(werror), constants=self.constants_file(), threads=threads)

    def run_runner(self, inputs, repeat: int = 1, werror: bool = False, timeout: float | None = None,
                   threads: int | None = None) -> list[np.ndarray]:
        """Run the runner on `inputs` (list in input order, or dict by name); returns the outputs.

        Runs under the toolchain's `run` prefix (qemu-user for foreign CPUs, qemu-system for bare-metal
        images, which run once, on one thread, and report no time: an emulator's wall time is not the
        device's); with repeat > 1 the runner's median time is kept in `self.last_run_ms`. threads: `runner
        --threads N` (default: the runner's, BYOC_NUM_THREADS or the usable cores). `timeout` defaults to the
        toolchain's (config.toml).
        """
        if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
            raise ByocError(f"run_runner: threads must be a whole number >= 1, got {threads!r}")
        exe = self.runner(werror)
        info = self.metadata["inputs"]
        if isinstance(inputs, dict):
            missing = [i["name"] for i in info if i["name"] not in inputs]
            if missing:
                raise ByocError(f"run_runner: no value for input {missing[0]!r}; inputs: "
                                f"{', '.join(i['name'] for i in info)}")
            inputs = [inputs[i["name"]] for i in info]
        if len(inputs) != len(info):
            raise ByocError(f"run_runner: the model takes {len(info)} inputs, got {len(inputs)}")
        rundir = Path(tempfile.mkdtemp(prefix="run-", dir=self._work()))
        try:
            outputs, self.last_run_ms = run_runner_timed(
                exe, self.toolchain.run, inputs, rundir, repeat, self.toolchain.timeout if timeout is None else timeout,
                what=f"running model {self.metadata['mod_name']!r} with toolchain {self.toolchain.name!r}",
                extra_args=self.runner_args() + ([] if threads is None else ["--threads", str(threads)]))
            return outputs
        finally:
            shutil.rmtree(rundir, ignore_errors=True)


# Objects of sources that are not generated (the runtime, target runtimes) are the same for every model
# built with the same command in this process: compile them once. Keyed by the command with the object
# path left out and by the source text.
_OBJECT_CACHE: dict[str, Path] = {}
_OBJECT_CACHE_DIR: str | None = None


def _compile_cached(argv: list[str], src: Path, obj: Path, generated: bool, what: str) -> None:
    global _OBJECT_CACHE_DIR
    if generated:
        tcmod.run_command(argv, what)
        return
    key_argv = [a for a in argv if a != os.fspath(obj)]
    key = hashlib.sha256(("\0".join(key_argv) + "\0").encode() + Path(src).read_bytes()).hexdigest()
    cached = _OBJECT_CACHE.get(key)
    if cached is None or not cached.exists():
        tcmod.run_command(argv, what)
        if _OBJECT_CACHE_DIR is None:
            _OBJECT_CACHE_DIR = tempfile.mkdtemp(prefix="byoc-objects-")
            atexit.register(shutil.rmtree, _OBJECT_CACHE_DIR, True)
        cached = Path(_OBJECT_CACHE_DIR) / f"{key}.o"
        shutil.copyfile(obj, cached)
        _OBJECT_CACHE[key] = cached
        return
    shutil.copyfile(cached, obj)


def _keep_sources(exc, gen: Path):
    """A compile error of generated code: copy the generated sources out of the build's temporary directory
    (deleted with the result) and point the message at the copy."""
    kept = Path(tempfile.mkdtemp(prefix="byoc-failed-sources-"))
    shutil.copytree(gen, kept, dirs_exist_ok=True)
    text = str(exc).replace(os.fspath(gen), os.fspath(kept))
    return tcmod.ToolchainError(f"{text}\nthe generated sources are kept in {kept} (delete it when done)")


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
