"""What a target declares for partitioning: the ops it takes (with predicates that give reasons) and its
composite patterns. The passes read it, so it sits below `transform`.

A target is a Python package (byoc's own under `targets/<name>/`, installed as
`byoc_compiler.contrib.<name>`; a vendor's found through an entry point of the group `byoc.targets`, or
named in the settings' [targets]) whose declaration module creates a module-level `target = Target(...)`:

    target = Target("ccompiler", flag="USE_CODEGENC", description="...", vendor_api=(1, 3))
    target.supports("add", "nn.relu")
    target.supports("nn.conv2d", predicate=lambda call: None if call.attrs.groups == 1 else "groups != 1")
    target.pattern("conv2d_bias_relu", is_op("nn.relu")(...), check=None)
    target.builds_for("x86_64", why="...")      # the CPUs (a toolchain's `arch`) it can build for
    target.runs_on("hosted", "freestanding")    # runtime profiles its C builds for (default: hosted only)
    target.build_side(__name__ + ".build")      # the module that sets the build side, imported when needed

The build side is plain data on the same object, set by the build-side module (or directly, for a small
target): `target.codegen` ((func, symbol) -> artifact), `runtime_sources`, `include_dirs`,
`target.links("dnnl")` (a vendor library: -ldnnl on every program with a region of this target) and
`target.requires(SystemLibrary("oneDNN", header="dnnl.h", library="dnnl", package="libdnnl-dev"))`.
Reading any of them first imports that module, so partitioning never loads a codegen. The declaration never
imports the backend that reads it (backend/target.py); system_library.py only looks for files.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Callable

from ..errors import ByocError
from ..ir.expr import Op
from ..ir.types import TensorType, flatten_type
from ..op.registry import get_op_def
from .system_library import SystemLibrary

# The vendor API's version (byoc_compiler.vendor re-exports it as API_VERSION and keeps its changelog). It sits
# here, with the declarations, because the registry refuses a target declared for another major version.
VENDOR_API_VERSION = (1, 8)

# A predicate looks at one typed call and returns None (accepted) or the reason it is not.
Predicate = Callable[[Any], "str | None"]


class TargetError(ByocError):
    """An unknown, disabled or incomplete target."""


_ABSENT = object()      # Target.takes: an op the target does not take (its predicate may be None)


def _reason(verdict, judge: str = "its predicate") -> str | None:
    """A predicate's or pattern check's answer: None or True accept; a string is the reason it
    does not; anything else (False) rejects without one."""
    if verdict is None or verdict is True:
        return None
    return verdict if isinstance(verdict, str) else f"rejected by {judge}"


@dataclass(frozen=True)
class CompositePattern:
    """A named composite pattern of a target; `check(root_call)` may veto a match."""

    target: str
    name: str
    pattern: Any
    check: Callable[[Any], Any] | None = None

    @property
    def composite(self) -> str:
        """The `Composite` attr of functions made from this pattern: "<target>.<name>"."""
        return f"{self.target}.{self.name}"

    def refusal(self, root) -> str | None:
        """Run the check on a match rooted at `root`: None if it accepts, else the reason it refuses
        (the why-not report shows it, like a predicate's reason)."""
        if self.check is None:
            return None
        try:
            verdict = self.check(root)
        except Exception as exc:
            raise TargetError(f"target {self.target!r}: the check of pattern {self.name!r} raised "
                              f"{type(exc).__name__}: {exc}") from exc
        return _reason(verdict, "its check")

    def accepts(self, root) -> bool:
        """True if the check accepts the match rooted at `root` (see `refusal` for the reason)."""
        return self.refusal(root) is None


class _BuildSide:
    """A build-side attribute of Target: reading it first imports the target's build-side module."""

    def __set_name__(self, owner, name):
        self.slot = "_" + name

    def __get__(self, target, owner=None):
        if target is None:
            return self
        target.load_build_side()
        return getattr(target, self.slot)

    def __set__(self, target, value):
        setattr(target, self.slot, value)


class Target:
    """A BYOC backend: the ops and patterns it takes, its codegen and runtime sources."""

    codegen = _BuildSide()
    runtime_sources = _BuildSide()
    include_dirs = _BuildSide()
    libraries = _BuildSide()           # linked as -l<name> into programs with a region of this target
    library_dirs = _BuildSide()        # -L<dir>
    system_libraries = _BuildSide()

    def __init__(self, name: str, flag: str | None = None, description: str = "",
                 vendor_api: tuple[int, int] | None = None):
        if not name or not all(c.isalnum() or c in "_-" for c in name):
            raise TargetError(f"target name {name!r} must be letters, digits, '_' or '-'")
        if vendor_api is not None and not (isinstance(vendor_api, tuple) and len(vendor_api) == 2
                                           and all(isinstance(v, int) for v in vendor_api)):
            raise TargetError(f"target {name!r}: vendor_api must be (major, minor), the vendor API version it was "
                              f"written for, e.g. vendor_api={VENDOR_API_VERSION!r}; got {vendor_api!r}")
        self.name = name
        self.vendor_api = vendor_api     # the byoc_compiler.vendor API_VERSION it was written for (None: unstated)
        self.flag = flag
        self.description = description
        self.ops: dict[str, Predicate | None] = {}
        self.patterns: list[CompositePattern] = []
        self._codegen: Callable | None = None
        self._runtime_sources: list = []
        self._include_dirs: list = []
        self._libraries: list[str] = []
        self._library_dirs: list = []
        self._system_libraries: list[SystemLibrary] = []
        self.archs: tuple[str, ...] | None = None   # CPUs (a toolchain's `arch`) it builds for; None: any
        self.archs_why = ""
        # Runtime profiles (config.PROFILES) its code builds for: "hosted" (an OS and a C library: malloc,
        # stdio, threads) and/or "freestanding" (bare metal: no allocation, no I/O). A target that does not
        # say is hosted-only: nothing checked that its runtime avoids malloc or stdio.
        self.profiles: tuple[str, ...] = ("hosted",)
        self.profiles_why = ""
        self.module: str | None = None
        self.build_module: str | None = None   # set by build_side(); imported on first use of the build side
        self._build_state = "none"             # none -> loading -> loaded

    # --- declarations ---------------------------------------------------------------------------
    def supports(self, *ops: str, predicate: Predicate | None = None) -> "Target":
        """Declare ops this target takes, each with an optional predicate over the typed call."""
        for name in ops:
            get_op_def(name)  # a typo fails here with a did-you-mean, not silently later
            self.ops[name] = predicate
        return self

    def pattern(self, name: str, pattern, check: Callable | None = None) -> CompositePattern:
        """Declare a composite pattern; patterns are tried in declaration order (put longer ones first)."""
        if any(p.name == name for p in self.patterns):
            raise TargetError(f"target {self.name!r} declares pattern {name!r} twice")
        entry = CompositePattern(self.name, name, pattern, check)
        self.patterns.append(entry)
        return entry

    def links(self, *libraries: str, library_dirs=(), include_dirs=()) -> "Target":
        """System libraries (names without -l/lib) and their directories, for every program with a region of
        this target; include_dirs are added when its runtime sources compile."""
        # the slots, not the attributes: declaring this must not import the build side
        self._libraries += [lib for lib in libraries if lib not in self._libraries]
        self._library_dirs += list(library_dirs)
        self._include_dirs += list(include_dirs)
        return self

    def build_side(self, module: str) -> "Target":
        """The module that sets this target's build side (codegen, runtime sources, include dirs, system
        libraries); imported the first time anything reads one of them, so the declaration stays light."""
        self.build_module = module
        return self

    def load_build_side(self) -> None:
        """Import the build-side module once (a no-op while it runs, or without one)."""
        if self.build_module is None or self._build_state != "none":
            return
        self._build_state = "loading"
        try:
            importlib.import_module(self.build_module)
        except Exception as exc:   # plugin code: one sentence with the target's name, not a deep traceback
            self._build_state = "none"
            raise TargetError(f"target {self.name!r}: importing its build side {self.build_module} failed: "
                              f"{type(exc).__name__}: {exc}") from exc
        self._build_state = "loaded"

    def builds_for(self, *archs: str, why: str = "") -> "Target":
        """The CPU architectures (config.toml toolchains' `arch`) this target can build for, and why only those."""
        self.archs = tuple(archs)
        self.archs_why = why
        return self

    def runs_on(self, *profiles: str, why: str = "") -> "Target":
        """The runtime profiles ("hosted", "freestanding") this target's code and runtime build for, and why
        only those (a freestanding toolchain refuses a hosted-only target)."""
        bad = [p for p in profiles if p not in ("hosted", "freestanding")]
        if bad or not profiles:
            raise TargetError(f"target {self.name!r}: runs_on takes \"hosted\" and/or \"freestanding\", got "
                              f"{', '.join(map(repr, profiles)) or 'nothing'}")
        self.profiles = tuple(dict.fromkeys(profiles))
        self.profiles_why = why
        return self

    def requires(self, *libraries: SystemLibrary) -> "Target":
        """System libraries this target needs installed; each is also linked (`links`)."""
        for lib in libraries:
            self._system_libraries.append(lib)
            self.links(lib.library, library_dirs=lib.library_dirs, include_dirs=lib.include_dirs)
        return self

    # --- questions ------------------------------------------------------------------------------
    @property
    def has_codegen(self) -> bool:
        return self.codegen is not None

    def missing(self) -> str | None:
        """None if every system library it requires is installed here, else one sentence naming the package."""
        for lib in self.system_libraries:
            problem = lib.missing()
            if problem:
                return f"target {self.name!r} needs {problem}"
        return None

    def arch_problem(self, toolchain) -> str | None:
        """None if this target builds for the CPU of `toolchain` (a config.toml ToolchainConfig), else why not."""
        if self.archs is None or toolchain.arch in self.archs:
            return None
        why = f" ({self.archs_why})" if self.archs_why else ""
        return (f"target {self.name!r} builds only for {', '.join(self.archs)}{why}, and toolchain "
                f"{toolchain.name!r} builds for {toolchain.arch}; choose a toolchain for {', '.join(self.archs)}")

    def profile_problem(self, toolchain) -> str | None:
        """None if this target runs on the runtime profile of `toolchain` (its `profile`), else why not."""
        profile = getattr(toolchain, "profile", "hosted")
        if profile in self.profiles:
            return None
        why = f" ({self.profiles_why})" if self.profiles_why else ""
        return (f"target {self.name!r} runs only on a {' or '.join(self.profiles)} runtime{why}, and toolchain "
                f"{toolchain.name!r} is {profile}; choose a {' or '.join(self.profiles)} toolchain or leave "
                f"{self.name!r} out of the targets (the host takes its ops)")

    def toolchain_problem(self, toolchain) -> str | None:
        """Why this target cannot build for `toolchain`: its CPU or its runtime profile (None: it can)."""
        return self.arch_problem(toolchain) or self.profile_problem(toolchain)

    def problem(self, toolchain=None) -> str | None:
        """Why this target cannot build here (for `toolchain`, if given): a missing library, a foreign CPU or
        a runtime profile it does not support."""
        return (self.toolchain_problem(toolchain) if toolchain is not None else None) or self.missing()

    def check(self, call) -> str | None:
        """None if this target takes the op call `call`, else the reason it does not."""
        if not isinstance(call.op, Op):
            return "not a primitive op"
        name = call.op.name
        if name not in self.ops:
            return f"does not support {name}"
        predicate = self.ops[name]
        if predicate is None:
            return None
        try:
            verdict = predicate(call)
        except Exception as exc:  # a vendor's predicate is plugin code: name it instead of a deep traceback
            raise self._predicate_raised(name, exc) from exc
        return _reason(verdict)

    def takes(self, call, name: str) -> bool:
        """check(call) is None, for a call of the op `name`, without making the reason (AnnotateTarget
        asks this of every call of a model)."""
        predicate = self.ops.get(name, _ABSENT)
        if predicate is None or predicate is _ABSENT:
            return predicate is None
        try:
            verdict = predicate(call)
        except Exception as exc:  # (as check)
            raise self._predicate_raised(name, exc) from exc
        return verdict is None or verdict is True

    def _predicate_raised(self, name: str, exc: Exception) -> TargetError:
        return TargetError(f"target {self.name!r}: the predicate for {name} raised {type(exc).__name__}: {exc}")

    def __repr__(self) -> str:
        return f"Target({self.name!r}, flag={self.flag!r})"


# --- reusable predicates ------------------------------------------------------------------------

def dtypes_only(*dtypes: str) -> Predicate:
    """A predicate accepting calls whose arguments and result have only these dtypes."""
    allowed = set(dtypes)

    def predicate(call) -> str | None:
        for expr in (*call.args, call):
            ty = expr.checked_type
            if type(ty) is TensorType:      # (asked of every call: the common case without a loop)
                if ty.dtype not in allowed:
                    return f"dtype {ty.dtype} not supported"
                continue
            for t in flatten_type(ty) if ty is not None else ():
                if t.dtype not in allowed:
                    return f"dtype {t.dtype} not supported"
        return None

    return predicate


float32_only = dtypes_only("float32")


def rank_at_most(limit: int) -> Predicate:
    """A predicate accepting calls whose arguments and result have at most `limit` dimensions."""

    def predicate(call) -> str | None:
        for expr in (*call.args, call):
            ty = expr.checked_type
            if type(ty) is TensorType:      # (asked of every call: the common case without a loop)
                if len(ty.shape) > limit:
                    return f"rank {len(ty.shape)} is above the limit of {limit}"
                continue
            for t in flatten_type(ty) if ty is not None else ():
                if len(t.shape) > limit:
                    return f"rank {len(t.shape)} is above the limit of {limit}"
        return None

    return predicate


def all_of(*predicates: Predicate | None) -> Predicate:
    """A predicate that asks each in turn and returns the first reason."""

    def predicate(call) -> str | None:
        for p in predicates:
            if p is None:
                continue
            verdict = p(call)
            if verdict is not None and verdict is not True:   # (asked of every call: no call for a yes)
                return _reason(verdict)
        return None

    return predicate
