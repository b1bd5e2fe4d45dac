"""Targets: what a backend vendor declares, and the registry that finds them.

A target is a Python package under `targets/<name>/` (or any module named in
config.toml's [targets]) that creates a module-level `target = Target(...)`:

    target = Target("ccompiler", flag="USE_CODEGENC", description="...")
    target.supports("add", "nn.relu")
    target.supports("nn.conv2d", predicate=lambda call: None if call.attrs.groups == 1 else "groups != 1")
    target.pattern("conv2d_bias_relu", is_op("nn.relu")(...), check=None)
    target.codegen = ...          # (func, symbol) -> artifact; set by the target's codegen module
    target.links("dnnl")          # a vendor library: -ldnnl on every program with a region of this target
    target.builds_for("x86_64", why="...")      # the CPUs (config.toml `arch`) it can build for
    target.requires(SystemLibrary("oneDNN", header="dnnl.h", library="dnnl", package="libdnnl-dev"))

The registry imports the packages config.toml knows about (enabled or not, so
that `byoc targets` can list them) and answers `get_target(name)` with one
sentence naming the fix when the name is unknown, disabled or has no codegen.
The core never imports a target by name except here, through the config.
"""
from __future__ import annotations

import difflib
import importlib
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from ..errors import ByocError
from ..ir.expr import Op
from ..ir.types import flatten_type
from .system_library import SystemLibrary

# A predicate looks at one typed call and returns None (accepted) or the reason it is not.
Predicate = Callable[[Any], "str | None"]


class TargetError(ByocError):
    """An unknown, disabled or incomplete target."""


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


class Target:
    """A BYOC backend: the ops and patterns it takes, its codegen and runtime sources."""

    def __init__(self, name: str, flag: str | None = None, description: str = ""):
        if not name or not all(c.isalnum() or c in "_-" for c in name):
            raise TargetError(f"target name {name!r} must be letters, digits, '_' or '-'")
        self.name = name
        self.flag = flag
        self.description = description
        self.ops: dict[str, Predicate | None] = {}
        self.patterns: list[CompositePattern] = []
        self.codegen: Callable | None = None
        self.runtime_sources: list = []
        self.include_dirs: list = []
        self.libraries: list[str] = []         # linked as -l<name> into programs with a region of this target
        self.library_dirs: list = []           # -L<dir>
        self.archs: tuple[str, ...] | None = None   # CPUs (config.toml `arch`) it builds for; None: any
        self.archs_why = ""
        self.system_libraries: list[SystemLibrary] = []
        self.module: str | None = None

    # --- declarations ---------------------------------------------------------------------------
    def supports(self, *ops: str, predicate: Predicate | None = None) -> "Target":
        """Declare ops this target takes, each with an optional predicate over the typed call."""
        from ..op.registry import get_op_def

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
        self.libraries += [lib for lib in libraries if lib not in self.libraries]
        self.library_dirs += list(library_dirs)
        self.include_dirs += list(include_dirs)
        return self

    def builds_for(self, *archs: str, why: str = "") -> "Target":
        """The CPU architectures (config.toml toolchains' `arch`) this target can build for, and why only those."""
        self.archs = tuple(archs)
        self.archs_why = why
        return self

    def requires(self, *libraries: SystemLibrary) -> "Target":
        """System libraries this target needs installed; each is also linked (`links`)."""
        for lib in libraries:
            self.system_libraries.append(lib)
            self.links(lib.library, library_dirs=lib.library_dirs, include_dirs=lib.include_dirs)
        return self

    # --- questions ------------------------------------------------------------------------------
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

    def problem(self, toolchain=None) -> str | None:
        """Why this target cannot build here (for `toolchain`, if given): a missing library or a foreign CPU."""
        return (self.arch_problem(toolchain) if toolchain is not None else None) or self.missing()

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
            raise TargetError(f"target {self.name!r}: the predicate for {name} raised "
                              f"{type(exc).__name__}: {exc}") from exc
        return _reason(verdict)

    def partition_for(self, mod, **kwargs):
        """Partition `mod` for this target alone (TVM's `partition_for_<target>(mod)`)."""
        from ..partition import partition_for

        return partition_for([self], mod, **kwargs)

    def __repr__(self) -> str:
        return f"Target({self.name!r}, flag={self.flag!r})"


# --- reusable predicates ------------------------------------------------------------------------

def dtypes_only(*dtypes: str) -> Predicate:
    """A predicate accepting calls whose arguments and result have only these dtypes."""
    allowed = set(dtypes)

    def predicate(call) -> str | None:
        for expr in (*call.args, call):
            if expr.checked_type is None:
                continue
            for ty in flatten_type(expr.checked_type):
                if ty.dtype not in allowed:
                    return f"dtype {ty.dtype} not supported"
        return None

    return predicate


float32_only = dtypes_only("float32")


def rank_at_most(limit: int) -> Predicate:
    """A predicate accepting calls whose arguments and result have at most `limit` dimensions."""

    def predicate(call) -> str | None:
        for expr in (*call.args, call):
            for ty in flatten_type(expr.checked_type) if expr.checked_type is not None else ():
                if ty.ndim > limit:
                    return f"rank {ty.ndim} is above the limit of {limit}"
        return None

    return predicate


def all_of(*predicates: Predicate | None) -> Predicate:
    """A predicate that asks each in turn and returns the first reason."""

    def predicate(call) -> str | None:
        for p in predicates:
            reason = _reason(p(call)) if p is not None else None
            if reason is not None:
                return reason
        return None

    return predicate


# --- the registry -------------------------------------------------------------------------------

@dataclass
class _Entry:
    target: Target | None
    module: str
    flag: str | None
    enabled: bool
    error: str | None = None


@dataclass(frozen=True)
class TargetInfo:
    """One row of `byoc_compiler.targets()`."""

    name: str
    enabled: bool
    flag: str | None
    module: str | None
    ops: tuple[str, ...] = ()
    patterns: tuple[str, ...] = ()
    has_codegen: bool = False
    description: str = ""
    error: str | None = None
    missing: str | None = None      # a system library it needs that is not installed (names the package)
    archs: tuple[str, ...] | None = None


class _Registry:
    def __init__(self):
        self.explicit: dict[str, Target] = {}     # register_target() calls (tests, plugins)
        self.discovered: dict[str, _Entry] | None = None
        self.config_path: Path | None = None

    def discover(self) -> dict[str, _Entry]:
        if self.discovered is None:
            from ..config import load_config

            config = load_config()
            self.config_path = config.path
            entries: dict[str, _Entry] = {}
            for name, (module, flag, enabled) in config.target_modules().items():
                entries[name] = _import_target(name, module, flag, enabled)
            self.discovered = entries
        return self.discovered

    def entries(self) -> dict[str, _Entry]:
        out = dict(self.discover())
        for name, target in self.explicit.items():
            out[name] = _Entry(target, target.module or "<registered>", target.flag, True)
        return out


_REGISTRY = _Registry()


def _ensure_repo_on_path() -> None:
    # `targets` lives next to the package; make it importable when byoc runs from elsewhere.
    root = str(Path(__file__).resolve().parents[2])
    if (Path(root) / "targets").is_dir() and root not in sys.path:
        sys.path.append(root)


def _import_target(name: str, module: str, flag: str, enabled: bool) -> _Entry:
    _ensure_repo_on_path()
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name and module.startswith(exc.name):
            return _Entry(None, module, flag, enabled, f"module {module} not found")
        return _Entry(None, module, flag, enabled, f"importing {module} failed: {exc}")
    except Exception as exc:  # plugin code: report it in the listing instead of breaking every target
        return _Entry(None, module, flag, enabled, f"importing {module} failed: {type(exc).__name__}: {exc}")
    target = getattr(mod, "target", None)
    if not isinstance(target, Target):
        return _Entry(None, module, flag, enabled, f"{module} defines no `target = Target(...)`")
    if target.name != name:
        return _Entry(None, module, flag, enabled,
                      f"{module} declares target {target.name!r} but config.toml calls it {name!r}")
    target.module = module
    if target.flag is None:
        target.flag = flag
    return _Entry(target, module, flag, enabled)


def register_target(target: Target) -> Target:
    """Make `target` known (enabled) without config.toml, e.g. for tests or plugins loaded by hand."""
    existing = _REGISTRY.explicit.get(target.name)
    if existing is not None and existing is not target:
        raise TargetError(f"a different target named {target.name!r} is already registered")
    configured = _configured_targets().get(target.name)
    if configured is not None:
        # replacing a configured target silently would move every op it takes back to the host
        module, flag, where = configured
        raise TargetError(
            f"register_target(Target({target.name!r})) clashes with the target {target.name!r} that {where} "
            f"defines (module {module}, flag {flag}); give the new target another name")
    _REGISTRY.explicit[target.name] = target
    return target


def _configured_targets() -> dict[str, tuple[str, str, str]]:
    """name -> (module, flag, which file defines it) for every built-in and [targets] entry."""
    from ..config import ConfigError, load_config

    try:
        config = load_config()
    except ConfigError:
        return {}  # a broken config.toml is reported by whatever reads it next, with its own message
    return {name: (module, flag, str(config.path)) for name, (module, flag, _) in config.target_modules().items()}


def unregister_target(name: str) -> None:
    _REGISTRY.explicit.pop(name, None)


def reload_targets() -> None:
    """Forget what discovery found (after changing config.toml or BYOC_CONFIG)."""
    _REGISTRY.discovered = None


def _config_path_text() -> str:
    return str(_REGISTRY.config_path) if _REGISTRY.config_path else "config.toml"


def get_target(name: str, enabled_only: bool = True) -> Target:
    """The Target called `name`; a ByocError naming the fix if it is unknown, disabled or broken."""
    if isinstance(name, Target):
        return name
    entries = _REGISTRY.entries()
    entry = entries.get(name)
    if entry is None:
        close = difflib.get_close_matches(str(name), list(entries), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        known = ", ".join(n + ("" if e.enabled else " (disabled)") for n, e in entries.items()) or "none"
        raise TargetError(f"unknown target {name!r}{hint}; known targets: {known}")
    if enabled_only and not entry.enabled:
        raise TargetError(f"target {name!r} is disabled: set {entry.flag} = true in [backends] of "
                          f"{_config_path_text()}")
    if entry.target is None:
        raise TargetError(f"target {name!r} could not be loaded: {entry.error}")
    return entry.target


def get_targets(names, enabled_only: bool = True) -> list[Target]:
    """A priority list of Targets from a name, a Target, or a list of them (duplicates dropped)."""
    if isinstance(names, (str, Target)):
        names = [names]
    if names is None:
        names = []
    out: list[Target] = []
    for name in names:
        target = get_target(name, enabled_only)
        if target not in out:
            out.append(target)
    if not out:
        raise TargetError("no target given; name at least one, e.g. targets=['ccompiler']")
    return out


def require_codegen(name: str) -> Target:
    """The enabled target `name`, which must have a codegen."""
    target = get_target(name)
    if target.codegen is None:
        where = (target.module or name).replace(".", "/")
        raise TargetError(f"target {target.name!r} declares no codegen: set `target.codegen` in {where}/ "
                          f"(a callable (function, symbol) -> artifact)")
    return target


def targets() -> list[TargetInfo]:
    """Every known target: name, enabled, flag, module, supported ops, patterns, has_codegen."""
    rows = []
    for name, entry in _REGISTRY.entries().items():
        t = entry.target
        rows.append(TargetInfo(
            name=name, enabled=entry.enabled, flag=entry.flag, module=entry.module,
            ops=tuple(t.ops) if t else (), patterns=tuple(p.composite for p in t.patterns) if t else (),
            has_codegen=bool(t and t.codegen is not None), description=t.description if t else "",
            error=entry.error, missing=t.missing() if t else None, archs=t.archs if t else None))
    return rows


def find_composite(composite: str) -> CompositePattern | None:
    """The pattern entry of a `Composite` attr such as "dnnl.conv2d_bias_relu", if its target is known."""
    target_name, _, pattern_name = composite.partition(".")
    entry = _REGISTRY.entries().get(target_name)
    if entry is None or entry.target is None:
        return None
    return next((p for p in entry.target.patterns if p.name == pattern_name), None)
