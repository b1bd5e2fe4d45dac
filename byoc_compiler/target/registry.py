"""The registry of targets: knows every declared target (the entry points of the group `byoc.targets`,
byoc's own included, and the modules named in the settings' [targets]) without importing any, and imports
a target's declaration module only when it is asked for, so partitioning for one target imports no other
target's code. `byoc targets` imports them all to list them. Answers `get_target(name)` with one sentence
naming the fix when the name is unknown, disabled or broken; a broken or colliding package is reported
for its own name and never stops the others.
"""
from __future__ import annotations

import difflib
import importlib
from dataclasses import dataclass
from pathlib import Path

from ..config import ConfigError, load_config
from .target import VENDOR_API_VERSION, CompositePattern, Target, TargetError


@dataclass
class _Entry:
    name: str
    module: str
    flag: str | None
    enabled: bool
    origin: str = ""                 # "byoc_compiler 0.2.0", "byoc-mynpu 1.0", "config.toml [targets]"
    attr: str = "target"
    dist: str | None = None          # the distribution whose entry point declares it
    conflict: str | None = None      # other packages claiming this built-in name (ignored, but reported)
    target: Target | None = None
    error: str | None = None
    loaded: bool = False

    def load(self) -> "_Entry":
        """Import the declaration module (once); a failure becomes `error`, never an exception."""
        if not self.loaded:
            self.loaded = True
            self.target, self.error = _load_declaration(self, self.module)
        return self


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
    origin: str = ""                # the distribution and version that declares it, or the settings file
    profiles: tuple[str, ...] | None = None   # runtime profiles it runs on (Target.runs_on); None: not loaded
    conflict: str | None = None     # other packages that claim this built-in name too (ignored)


class _Registry:
    def __init__(self):
        self.explicit: dict[str, Target] = {}     # register_target() calls (tests, plugins)
        self.discovered: dict[str, _Entry] | None = None
        self.config_path: Path | None = None

    def discover(self) -> dict[str, _Entry]:
        """Every declared target by name, none imported yet."""
        if self.discovered is None:
            config = load_config()
            self.config_path = config.path
            collisions, conflicts = config.target_collisions(), config.target_conflicts()
            entries: dict[str, _Entry] = {}
            for name, sources in config.target_sources().items():
                flag = config.target_flag(name)
                source = sources[0]
                entry = _Entry(name, source.module, flag, config.backends.get(flag, True), source.origin, source.attr,
                               dist=source.dist, conflict=conflicts.get(name))
                if name in collisions:
                    entry.module = ", ".join(s.module for s in sources)
                    entry.error, entry.loaded = collisions[name], True
                entries[name] = entry
            self.discovered = entries
        return self.discovered

    def entries(self) -> dict[str, _Entry]:
        out = dict(self.discover())
        for name, target in self.explicit.items():
            out[name] = _Entry(name, target.module or "<registered>", target.flag, True, "register_target()",
                               target=target, loaded=True)
        return out


_REGISTRY = _Registry()


def _import_target(name: str, module: str, flag: str, enabled: bool, attr: str = "target") -> _Entry:
    """The entry of one target, its declaration module imported (`byoc config` checks enabled ones so)."""
    return _Entry(name, module, flag, enabled, attr=attr).load()


def _load_declaration(entry: _Entry, module: str):
    """(target, None) or (None, the reason it cannot be used)."""
    name, attr, origin = entry.name, entry.attr, entry.origin
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name and module.startswith(exc.name):
            return None, f"module {module} not found"
        return None, f"importing {module} failed: {exc}"
    except Exception as exc:  # plugin code: report it in the listing instead of breaking every target
        return None, f"importing {module} failed: {type(exc).__name__}: {exc}"
    target = getattr(mod, attr, None)
    if not isinstance(target, Target):
        return None, f"{module} defines no `{attr} = Target(...)`"
    if target.name != name:
        where = origin if origin.endswith("[targets]") or not origin else f"the entry point of {origin}"
        return None, f"{module} declares target {target.name!r} but {where or 'byoc'} calls it {name!r}"
    problem = _api_problem(target, origin or module, entry.dist)
    if problem:
        return None, problem
    target.module = module
    if target.flag is None:
        target.flag = entry.flag
    return target, None


def _api_problem(target: Target, origin: str, dist: str | None) -> str | None:
    """Why a target declared for another vendor API cannot load here (a major version differs, or it needs
    names of a newer minor one), else None."""
    wanted = target.vendor_api
    if wanted is None or (wanted[0] == VENDOR_API_VERSION[0] and wanted[1] <= VENDOR_API_VERSION[1]):
        return None
    have = ".".join(map(str, VENDOR_API_VERSION))
    want = ".".join(map(str, wanted))
    if wanted[0] != VENDOR_API_VERSION[0]:
        fix = (f"install a release of {dist} written for vendor API {VENDOR_API_VERSION[0]}.x" if dist else
               f"port it to vendor API {VENDOR_API_VERSION[0]}.x (byoc_compiler.vendor.CHANGELOG says what changed)")
    else:
        fix = f"upgrade byoc_compiler to one whose vendor API is {want} or later"
    return (f"target {target.name!r} ({origin}) was written for byoc's vendor API {want}, and this byoc provides "
            f"vendor API {have}; {fix}")


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
            f"declares (module {module}, flag {flag}); give the new target another name")
    _REGISTRY.explicit[target.name] = target
    return target


def _configured_targets() -> dict[str, tuple[str, str, str]]:
    """name -> (module, flag, what declares it) for every entry point and [targets] entry."""
    try:
        config = load_config()
    except ConfigError:
        return {}  # a broken config.toml is reported by whatever reads it next, with its own message
    return {name: (sources[0].module, config.target_flag(name), sources[0].origin)
            for name, sources in config.target_sources().items()}


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
    entry.load()
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


def targets() -> list[TargetInfo]:
    """Every known target: name, enabled, flag, module, supported ops, patterns, has_codegen."""
    rows = []
    for name, entry in _REGISTRY.entries().items():
        t = entry.load().target
        error, has_codegen, missing = entry.error, False, None
        if t is not None:
            try:     # the listing loads the build side too: a broken codegen module shows in its row
                has_codegen, missing = t.has_codegen, t.missing()
            except TargetError as exc:
                error = str(exc)
        rows.append(TargetInfo(
            name=name, enabled=entry.enabled, flag=entry.flag, module=entry.module,
            ops=tuple(t.ops) if t else (), patterns=tuple(p.composite for p in t.patterns) if t else (),
            has_codegen=has_codegen, description=t.description if t else "", error=error, missing=missing,
            archs=t.archs if t else None, origin=entry.origin,
            profiles=t.profiles if t else None, conflict=entry.conflict))
    return rows


def find_composite(composite: str) -> CompositePattern | None:
    """The pattern entry of a `Composite` attr such as "dnnl.conv2d_bias_relu", if its target is known."""
    target_name, _, pattern_name = composite.partition(".")
    entry = _REGISTRY.entries().get(target_name)
    if entry is None or entry.load().target is None:
        return None
    return next((p for p in entry.target.patterns if p.name == pattern_name), None)
