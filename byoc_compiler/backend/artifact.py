"""What a target's codegen returns for one region (external function).

A vendor's codegen is a callable `(func, symbol) -> artifact`. It returns one of:

CSourceArtifact(symbol, sources, include_dirs=(), kind="c", constants={})
    C99 source text, compiled with the model for every toolchain. `sources` maps a file name
    ("ccompiler_0.c") to its text. The sources must define the region's entry point `symbol`
    in both calling conventions, which `byoc_compiler.ctext.entry_points, vendor.entry_points(...)` writes for you
    (packed by default, unpacked under `#ifdef BYOC_UNPACKED_API`; the build defines that
    macro for interface="unpacked"). Small constants of the region are bound in the source
    (static const arrays); large ones (`backend.constants.is_large(array)`) go in `constants`,
    name -> ndarray, and the source declares each with `backend.constants.extern_declaration`:
    the build links their raw bytes in (byoc_constants.S/.bin), so weights never pass through
    the C parser. Their names are global symbols: each must start with `symbol`.
    `include_dirs` are added to the compile command of these files.
    A region keeps no mutable static state: scratch memory it needs is declared as
    `workspace_bytes` and handed to it by the caller on every call (the model instance owns it),
    so instances of a model run concurrently (docs/runtime-abi.md, "Instances and threads").

BlobArtifact(symbol, kind, blob, text=None, runtime_sources=(), include_dirs=(), constants={})
    The region in the target's own format (a graph, a JSON, ...) plus the C runtime that
    executes it. `blob` is embedded in the model as bytes; `text`, if given, is what
    `BuildResult.get_source(target)` shows (e.g. ExampleJSON as the guide writes it).
    `runtime_sources` (C file paths) must define `const ByocModuleKind byoc_module_kind_<kind>`
    (see runtime/include/byoc/runtime.h): at model init the build's generated code calls
    `create(blob, len, &module)` once per region, then `get_function(module, symbol, ...)`, and
    calls the function with the packed convention (inputs then outputs as DLTensors).
    Constants of the region travel inside the blob, or, given as `constants` (name -> ndarray),
    in the model's own data: the build emits them with the model and, after `create`, calls the
    kind's `bind_constants(module, table, n)` with one `ByocConstant {name, data, nbytes}` each,
    so the blob refers to them by name (dnnl's JSON does).

Both are plain frozen dataclasses: the build only reads them.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Mapping


@dataclass(frozen=True)
class CSourceArtifact:
    symbol: str
    sources: Mapping[str, str]
    include_dirs: tuple = ()
    kind: str = "c"
    constants: Mapping = field(default_factory=dict, compare=False)   # global name -> ndarray (linked)
    # Bytes of scratch the region needs (64-byte aligned). > 0: its entry points take the workspace from
    # the caller (ctext.entry_points(..., workspace=True)); every model instance owns its own, so a region
    # keeps no mutable static state and instances run concurrently.
    workspace_bytes: int = 0
    # The peak of the workspace's simultaneously live buffers, when the target plans it by lifetimes (vendor
    # plan_offsets, peak_live_bytes): the lower bound the build's memory report counts for the region
    # (since API 1.4; None: workspace_bytes).
    workspace_lower_bound: int | None = None

    def __post_init__(self):
        object.__setattr__(self, "sources", dict(self.sources))
        object.__setattr__(self, "constants", dict(self.constants))
        object.__setattr__(self, "include_dirs", tuple(os.fspath(d) for d in self.include_dirs))
        for name, code in self.sources.items():
            if not isinstance(name, str) or not isinstance(code, str):
                raise TypeError(f"CSourceArtifact {self.symbol}: sources must map file names to source text")
            if os.path.basename(name) != name or not name:
                raise ValueError(f"CSourceArtifact {self.symbol}: source name {name!r} must be a plain file name")

    @property
    def text(self) -> str:
        """All sources as one text, each preceded by a comment naming its file."""
        return "\n".join(f"/* ---- {name} ---- */\n{code}" for name, code in self.sources.items())


@dataclass(frozen=True)
class BlobArtifact:
    symbol: str
    kind: str
    blob: bytes
    text: str | None = None
    runtime_sources: tuple = ()
    include_dirs: tuple = ()
    extra: dict = field(default_factory=dict, compare=False)   # free-form notes a target wants in metadata
    constants: Mapping[str, Any] = field(default_factory=dict, compare=False)   # name -> ndarray, bound by name

    def __post_init__(self):
        object.__setattr__(self, "constants", dict(self.constants))
        for name in self.constants:
            if not isinstance(name, str) or not name:
                raise TypeError(f"BlobArtifact {self.symbol}: constants must map non-empty names to arrays")
        if isinstance(self.blob, str):
            object.__setattr__(self, "blob", self.blob.encode())
        if not isinstance(self.blob, (bytes, bytearray)):
            raise TypeError(f"BlobArtifact {self.symbol}: blob must be bytes")
        object.__setattr__(self, "blob", bytes(self.blob))
        object.__setattr__(self, "runtime_sources", tuple(os.fspath(s) for s in self.runtime_sources))
        object.__setattr__(self, "include_dirs", tuple(os.fspath(d) for d in self.include_dirs))


ARTIFACT_TYPES = (CSourceArtifact, BlobArtifact)
