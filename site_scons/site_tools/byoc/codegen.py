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

REPO_ROOT = Path(__file__).resolve().parents[3]
CORE_PACKAGE = REPO_ROOT / "byoc_compiler"


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
        mod = byoc_compiler.partition_for(request.target, mod)
    config = load_config(request.config)
    return byoc_compiler.build(mod, toolchain=request.toolchain, executor=request.executor,
                               interface=request.interface, opt=request.opt, config=config)


def planned_files(request: CodegenRequest) -> list[str]:
    """Paths (relative to the model's build directory) the codegen writes."""
    return sorted(_build(request).files())


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
    if request.target != "host":
        from byoc_compiler.backend.target import get_target

        module_dir = Path(get_target(request.target).module_file).parent
        paths += sorted(str(p) for p in module_dir.rglob("*.py"))
    return paths


def runtime_source_lists(executor: str, target: str) -> tuple[list[str], list[str]]:
    """(C sources every model links, sources only the runner executable adds)."""
    from byoc_compiler import runtime

    core = [str(p) for p in runtime.runtime_sources(executor)]
    if target != "host":
        from byoc_compiler.backend.target import get_target

        core += [str(p) for p in getattr(get_target(target), "runtime_sources", ())]
    runner_only = [str(p) for p in runtime.runner_sources()]
    return core, runner_only


__all__ = ["ByocError", "CodegenRequest", "generator_sources", "load_config", "load_unpartitioned", "model_files",
           "model_name", "planned_files", "runtime_source_lists", "write_outputs"]
