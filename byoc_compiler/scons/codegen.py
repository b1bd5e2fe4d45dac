"""The glue between SCons and byoc_compiler: what a codegen request is, what it writes, what it reads.

Reading the build must be cheap: SCons runs the SConstruct (and so every emitter) on every
invocation, a null build and `scons -h` included. So what the emitter needs — the files the codegen
writes and how to compile them — comes from a *plan* cached in the model's build directory
(`.byoc-plan.json`), keyed by the content of everything that can change it: the request, the
model file (and its constants sidecar), byoc_compiler's Python files, the target's package (its
Python files' content, its C files' names: their content is SCons's business), and config.toml. Only a missing or stale plan runs the codegen while reading the build;
the action that writes the files then reuses that BuildResult (memoized per SCons process).
"""
from __future__ import annotations

# Modules imported inside functions: byoc_compiler's frontend, build, checker, toolchain and target registry, where a
# step needs them (SCons reads the build on every run, `scons -h` and null builds included, and stays cheap).

import hashlib
import json
import os
import re
import sys
import tempfile
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path

from byoc_compiler.backend.constants import BIN_FILE, PARAMS_FILE
from byoc_compiler.backend.kernel_sources import link_signature
from byoc_compiler.config import load_config as _load_config
from byoc_compiler.errors import ByocError

from . import store as _store

import byoc_compiler

CORE_PACKAGE = Path(byoc_compiler.__file__).resolve().parent


@dataclass(frozen=True)
class CodegenRequest:
    model_spec: str
    target: str          # a target name, or "host" for no partitioning
    toolchain: str
    executor: str
    interface: str
    opt: str
    config: str
    outdir: str
    constants: str = "linked"  # large constants: "linked" into the binary, or "params" (constants.bin at init)

    @property
    def model_name(self) -> str:
        return model_name(self.model_spec)

    def signature(self) -> str:
        """Everything that changes the generated files, as one string (a Value node's content)."""
        fields = asdict(self)
        fields.pop("outdir")
        return json.dumps(fields, sort_keys=True)

    def to_env(self, env) -> None:
        env["BYOC_REQUEST"] = asdict(self)

    @classmethod
    def from_env(cls, env) -> "CodegenRequest":
        return cls(**env["BYOC_REQUEST"])


def target_names(target: str) -> list[str]:
    """The targets of a request: `target=a,b` partitions for both, a first."""
    return [] if target == "host" else target.split(",")


def model_name(spec: str) -> str:
    """A directory-safe name for a zoo name or a model file path."""
    stem = Path(spec).stem if ("/" in spec or "." in spec) else spec
    return re.sub(r"[^A-Za-z0-9_.-]", "_", stem) or "model"


def model_files(spec: str) -> list[str]:
    """The files a model spec reads (so that editing a model file rebuilds it): the file, and for a
    text model its constants sidecar (`<name>.bin` beside it) when there is one."""
    path = Path(spec)
    if not (path.suffix and path.exists()):
        return []
    files = [str(path)]
    sidecar = path.with_name(path.name + ".bin") if path.suffix in (".txt", ".relay") else None
    if sidecar is not None and sidecar.exists():
        files.append(str(sidecar))
    return files


@lru_cache(maxsize=None)
def load_config(path: str):
    return _load_config(path)


@lru_cache(maxsize=None)
def load_unpartitioned(spec: str):
    from byoc_compiler.load import load_model

    return load_model(spec)


@lru_cache(maxsize=None)
def _build(request: CodegenRequest):
    import byoc_compiler

    mod = load_unpartitioned(request.model_spec)
    if request.target != "host":
        mod = byoc_compiler.partition_for(target_names(request.target), mod)
    config = load_config(request.config)
    return byoc_compiler.build(mod, toolchain=request.toolchain, executor=request.executor,
                               interface=request.interface, opt=request.opt, config=config,
                               constants=request.constants)


def build_result(request: CodegenRequest):
    """The BuildResult whose files this request writes (memoized: the one the runner was built from)."""
    return _build(request)


# model.txt in a build directory: with its sidecar, unless that would be one more copy of a big model's weights
MODEL_TEXT = "auto"
PLAN_FILE = ".byoc-plan.json"
# 2: the plan holds the libraries targets link; 3: model.txt "auto"; 4: runtime profiles; 5: each unit's defines
PLAN_VERSION = 5


def planned_files(request: CodegenRequest) -> list[str]:
    """Paths (relative to the model's build directory) the codegen writes."""
    return list(plan(request)["files"])


def compile_plan(request: CodegenRequest):
    """What to compile, as backend/compile_link.py's compile_units says (so SCons and the Python API compile
    the same units with the same include directories and defines): ({generated source's relative path:
    (include dirs, defines)}, [(shared source, include dirs, defines)], {runner-only sources})."""
    p = plan(request)
    generated = {rel: (tuple(incs), tuple(defs)) for rel, (incs, defs) in p["generated"].items()}
    shared = [(src, tuple(incs), tuple(defs)) for src, incs, defs in p["shared"]]
    return generated, shared, frozenset(p["runner_only"])


@lru_cache(maxsize=None)
def plan(request: CodegenRequest) -> dict:
    """The cached plan of a request (files, compile units), recomputed only when its key changed."""
    path = Path(request.outdir) / PLAN_FILE
    try:
        cached = json.loads(path.read_text())
    except (OSError, ValueError):
        cached = {}
    key, digests = plan_key(request, cached.get("digests", {}) if isinstance(cached, dict) else {})
    if cached.get("key") == key and cached.get("version") == PLAN_VERSION:
        return cached
    # One line per stale plan: the only time reading the build runs partitioning and codegen.
    print(f"byoc plan     {request.model_name:<16} target={request.target} toolchain={request.toolchain} "
          "(inputs changed: partition + codegen)", flush=True)
    fresh = dict(_compute_plan(request), key=key, version=PLAN_VERSION, digests=digests)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{PLAN_FILE}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(fresh, indent=1, sort_keys=True))
    os.replace(tmp, path)        # never a half-written plan, even for builds running at once
    return fresh


def _compute_plan(request: CodegenRequest) -> dict:
    from byoc_compiler.backend.compile_link import compile_units, runner_only_sources

    result = _build(request)
    generated, shared = {}, []
    with tempfile.TemporaryDirectory() as tmp:
        for path, incs, defs in compile_units(result, Path(tmp), runner=True):
            if Path(path).is_relative_to(tmp):
                generated[Path(path).relative_to(tmp).as_posix()] = [[str(i) for i in incs], list(defs)]
            else:
                shared.append([str(path), [str(i) for i in incs], list(defs)])
    runner_only = runner_only_sources(request.executor, result.toolchain.profile)
    return {"files": sorted(result.files(MODEL_TEXT)), "generated": generated, "shared": shared,
            "runner_only": sorted(runner_only), "libraries": [list(x) for x in result.link_libraries()]}


def plan_key(request: CodegenRequest, known: dict | None = None) -> tuple[str, dict]:
    """A digest of everything the plan depends on, and the file digests it used.

    Contents decide, not times (a touch changes nothing); but like SCons's content-timestamp
    decider, a file whose size and mtime are those recorded in `known` (path -> [size, mtime_ns,
    digest], from the last plan) is not read again: a null build never re-hashes a 100 MB model."""
    known = known or {}
    h = hashlib.sha256(request.signature().encode())
    inputs = model_files(request.model_spec) + [request.config] + generator_sources(request)
    # The target's C files are in the plan by name and by which of them the build needs (what to compile):
    # their content changes what SCons recompiles, never the plan, so editing a kernel recompiles its
    # objects without re-planning, unless the edit makes it call into a file the build did not compile
    # (the files' definitions and cross-file names, kernel_sources.link_signature).
    c_files = target_files(request)
    for name in c_files:
        h.update(b"\0c-file\0" + name.encode())
    h.update(b"\0link\0" + link_signature(c_files).encode())
    digests = {}
    for name in inputs:
        full = os.path.abspath(name)
        try:
            st = os.stat(full)
            stamp = [st.st_size, st.st_mtime_ns]
            old = known.get(full)
            digest = old[2] if isinstance(old, list) and old[:2] == stamp else _digest_cached(full, *stamp)
            digests[full] = stamp + [digest]
        except OSError:
            digest = "missing"
        h.update(b"\0" + name.encode() + b"\0" + digest.encode())
    return h.hexdigest(), digests


@lru_cache(maxsize=None)
def _digest_cached(path: str, size: int, mtime_ns: int) -> str:
    """sha256 of a file's content, memoized on (path, size, mtime) for the life of the process."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def target_files(request: CodegenRequest) -> list[str]:
    """Every other file of the enabled targets' packages (C kernels, headers, templates)."""
    paths: list[str] = []
    for folder in _target_folders(request):
        paths += sorted(str(p) for p in folder.rglob("*") if p.is_file() and p.suffix in (".c", ".h", ".S"))
    return paths


def _target_folders(request: CodegenRequest) -> list[Path]:
    from byoc_compiler.target import get_target

    out = []
    for name in target_names(request.target):
        module_file = Path(sys.modules[get_target(name).module].__file__)
        if module_file.name == "__init__.py":
            out.append(module_file.parent)
    return out


def link_libraries(request: CodegenRequest) -> tuple[list[str], list[str]]:
    """(libraries, library dirs) the build's region targets link (BuildResult.link_libraries), from the plan."""
    libs, dirs = plan(request).get("libraries", ([], []))
    return list(libs), list(dirs)


# The large-constant blobs: written once per content into the build root's store (store.py) and hard-linked
# into each build directory (gcc's and clang's are the same bytes).
STORED_FILES = (PARAMS_FILE, BIN_FILE)


def build_root(request: CodegenRequest) -> Path:
    """The build root of a request (its outdir is <build root>/<target>/<toolchain>/<model>)."""
    return Path(request.outdir).parents[2]


def write_outputs(request: CodegenRequest, targets: list[str]) -> None:
    files = _build(request).files(MODEL_TEXT)
    outdir = Path(request.outdir)
    for target in targets:
        rel = Path(target).relative_to(outdir).as_posix()
        data = files[rel]
        if rel in STORED_FILES and isinstance(data, bytes):
            _store.place(data, target, build_root(request))
            continue
        Path(target).parent.mkdir(parents=True, exist_ok=True)
        Path(target).write_bytes(data if isinstance(data, bytes) else data.encode())


def generator_sources(request: CodegenRequest) -> list[str]:
    """The Python files whose code decides the generated output: the core and the target's package."""
    paths = list(_core_sources())
    for name in target_names(request.target):
        from byoc_compiler.target import get_target

        module_file = Path(sys.modules[get_target(name).module].__file__)
        # A package target owns its folder; a single-module target owns its file.
        files = module_file.parent.rglob("*.py") if module_file.name == "__init__.py" else [module_file]
        paths += sorted(str(p) for p in files)
    return paths


@lru_cache(maxsize=None)
def _core_sources() -> tuple[str, ...]:
    return tuple(sorted(str(p) for p in CORE_PACKAGE.rglob("*.py")))


__all__ = ["ByocError", "CodegenRequest", "build_result", "compile_plan", "generator_sources",
           "link_libraries", "load_config", "load_unpartitioned", "model_files", "model_name", "plan", "planned_files",
           "write_outputs"]
