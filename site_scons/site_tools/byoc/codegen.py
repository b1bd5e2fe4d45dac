"""The glue between SCons and byoc_compiler: what a codegen request is, what it writes, what it reads.

Builds are memoized per SCons process: the emitter (which must name every
output before anything runs) and the action share one BuildResult.
"""
from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path

from byoc_compiler.config import load_config as _load_config
from byoc_compiler.errors import ByocError

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
    """The files a model spec reads (so that editing a model file rebuilds it)."""
    path = Path(spec)
    return [str(path)] if path.suffix and path.exists() else []


@lru_cache(maxsize=None)
def load_config(path: str):
    return _load_config(path)


@lru_cache(maxsize=None)
def load_unpartitioned(spec: str):
    from byoc_compiler.frontend import load_model

    return load_model(spec)


@lru_cache(maxsize=None)
def _build(request: CodegenRequest):
    import byoc_compiler

    mod = load_unpartitioned(request.model_spec)
    if request.target != "host":
        mod = byoc_compiler.partition_for(target_names(request.target), mod)
    config = load_config(request.config)
    return byoc_compiler.build(mod, toolchain=request.toolchain, executor=request.executor,
                               interface=request.interface, opt=request.opt, config=config)


def build_result(request: CodegenRequest):
    """The BuildResult whose files this request writes (memoized: the one the runner was built from)."""
    return _build(request)


def planned_files(request: CodegenRequest) -> list[str]:
    """Paths (relative to the model's build directory) the codegen writes."""
    return sorted(_build(request).files())


@lru_cache(maxsize=None)
def compile_plan(request: CodegenRequest):
    """What to compile, as BuildResult.compile_units says (so SCons and the Python API agree):
    ({generated source's relative path: include dirs}, [(shared source, include dirs)], {runner-only sources})."""
    import os
    import tempfile

    from byoc_compiler import runtime

    result = _build(request)
    generated, shared = {}, []
    with tempfile.TemporaryDirectory() as tmp:
        for path, incs, _defines in result.compile_units(Path(tmp), runner=True):
            if Path(path).is_relative_to(tmp):
                generated[Path(path).relative_to(tmp).as_posix()] = tuple(map(str, incs))
            else:
                shared.append((str(path), tuple(map(str, incs))))
    runner_only = ({os.path.realpath(p) for p in runtime.runtime_sources(request.executor, runner=True)}
                   - {os.path.realpath(p) for p in runtime.runtime_sources(request.executor)})
    return generated, shared, frozenset(runner_only)


def write_outputs(request: CodegenRequest, targets: list[str]) -> None:
    files = _build(request).files()
    outdir = Path(request.outdir)
    for target in targets:
        rel = Path(target).relative_to(outdir).as_posix()
        data = files[rel]
        Path(target).parent.mkdir(parents=True, exist_ok=True)
        Path(target).write_bytes(data if isinstance(data, bytes) else data.encode())


def generator_sources(request: CodegenRequest) -> list[str]:
    """The Python files whose code decides the generated output: the core and the target's package."""
    paths = sorted(str(p) for p in CORE_PACKAGE.rglob("*.py"))
    for name in target_names(request.target):
        import sys

        from byoc_compiler.backend.target import get_target

        module_file = Path(sys.modules[get_target(name).module].__file__)
        # A package target owns its folder; a single-module target owns its file.
        files = module_file.parent.rglob("*.py") if module_file.name == "__init__.py" else [module_file]
        paths += sorted(str(p) for p in files)
    return paths


def defines(request: CodegenRequest) -> list[str]:
    return ["BYOC_UNPACKED_API"] if request.interface == "unpacked" else []


__all__ = ["ByocError", "CodegenRequest", "build_result", "compile_plan", "defines", "generator_sources", "load_config",
           "load_unpartitioned", "model_files", "model_name", "planned_files", "write_outputs"]
