"""The registry of targets: imports the packages config.toml knows about (enabled or not, so that
`byoc targets` can list them) and answers `get_target(name)` with one sentence naming the fix when the
name is unknown, disabled or broken. The core never imports a target by name except here, through the
config.
"""
from __future__ import annotations

import difflib
import importlib
import sys
from dataclasses import dataclass
from pathlib import Path

from ..config import ConfigError, load_config
from .target import CompositePattern, Target, TargetError

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
