"""config.toml: which targets exist, build defaults, and toolchains as data.

The file is edited by hand, so every mistake gets one message naming the file,
the key and what is allowed. Read with tomli (tomllib is only in 3.11+).
"""
from __future__ import annotations

import difflib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

try:
    import tomllib as _toml
except ModuleNotFoundError:  # Python 3.10
    import tomli as _toml

from .errors import ByocError

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CONFIG = REPO_ROOT / "config.toml"

# The built-in flags and the target package each one enables.
BUILTIN_BACKENDS = {
    "USE_CODEGENC": ("ccompiler", "targets.ccompiler"),
    "USE_EXAMPLEJSON": ("examplejson", "targets.examplejson"),
    "USE_DNNL": ("dnnl", "targets.dnnl"),
}
EXECUTORS = ("graph", "aot")
INTERFACES = ("packed", "unpacked")
CONSTANTS = ("linked", "params", "auto")   # large constants: linked, loaded at init, or by size (backend/constants.py)
# `opt` is one optimization flag (or none); other flags belong in a toolchain's cflags.
OPT_LEVELS = ("-O0", "-O1", "-O2", "-O3", "-Os", "-Oz", "-Og", "-Ofast", "")


class ConfigError(ByocError):
    pass


@dataclass(frozen=True)
class ToolchainConfig:
    name: str
    cc: str
    arch: str
    cflags: tuple[str, ...] = ()
    ldflags: tuple[str, ...] = ()
    run: tuple[str, ...] = ()          # command prefix for its binaries, e.g. qemu-aarch64 -L ...
    sanitizer: bool = False
    apt: tuple[str, ...] = ()          # Debian packages that provide it

    @property
    def install_hint(self) -> str:
        packages = " ".join(self.apt) if self.apt else self.cc
        return f"apt-get install -y {packages}"


@dataclass(frozen=True)
class BuildDefaults:
    toolchains: tuple[str, ...] = ("gcc",)
    executor: str = "graph"
    interface: str = "packed"
    opt: str = "-O2"
    models: tuple[str, ...] = ()
    constants: str = "linked"


@dataclass(frozen=True)
class Config:
    path: Path
    backends: dict[str, bool]                       # flag -> enabled
    extra_targets: dict[str, tuple[str, str]]       # target name -> (module, flag)
    build: BuildDefaults
    toolchains: dict[str, ToolchainConfig] = field(default_factory=dict)

    def target_modules(self) -> dict[str, tuple[str, str, bool]]:
        """target name -> (module path, flag, enabled), built-ins first then [targets]."""
        out = {}
        for flag, (name, module) in BUILTIN_BACKENDS.items():
            out[name] = (module, flag, self.backends.get(flag, False))
        for name, (module, flag) in self.extra_targets.items():
            out[name] = (module, flag, self.backends.get(flag, True))
        return out

    def toolchain(self, name: str) -> ToolchainConfig:
        try:
            return self.toolchains[name]
        except KeyError:
            raise ConfigError(
                f"unknown toolchain {name!r}{_did_you_mean(name, self.toolchains)}; toolchains defined in "
                f"{self.path}: {', '.join(self.toolchains) or 'none'}") from None


def _did_you_mean(word: str, choices) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def find_config_path(path: str | os.PathLike | None = None) -> Path:
    """Explicit path, else $BYOC_CONFIG, else ./config.toml, else the repository's default."""
    if path is not None:
        return Path(path)
    env = os.environ.get("BYOC_CONFIG")
    if env:
        return Path(env)
    local = Path.cwd() / "config.toml"
    return local if local.is_file() else DEFAULT_CONFIG


_SECTIONS = ("backends", "targets", "build", "toolchains")
_BUILD_KEYS = {"toolchains": list, "executor": str, "interface": str, "opt": str, "models": list, "constants": str}
_TOOLCHAIN_KEYS = {"cc": str, "arch": str, "cflags": list, "ldflags": list, "run": list, "sanitizer": bool,
                   "apt": list}
_TYPE_NAMES = {list: "a list of strings", str: "a string", bool: "true or false"}


def _check_keys(where: str, table: dict, allowed, path: Path) -> None:
    for key in table:
        if key not in allowed:
            raise ConfigError(f"{path}: unknown key {where}{key!r}{_did_you_mean(key, allowed)}; "
                              f"allowed keys: {', '.join(allowed)}")


def _check_type(where: str, value: Any, expected: type, path: Path) -> None:
    ok = isinstance(value, expected) and not (expected is str and isinstance(value, bool))
    if ok and expected is list:
        ok = all(isinstance(v, str) for v in value)
    if not ok:
        raise ConfigError(f"{path}: {where} must be {_TYPE_NAMES[expected]}, got {value!r}")


def load_config(path: str | os.PathLike | None = None) -> Config:
    path = find_config_path(path)
    raw = _read_toml(path)
    _check_keys("", raw, _SECTIONS, path)
    extra = _extra_targets(raw.get("targets", {}), path)     # checked in this order: the first error is reported
    backends = _backends(raw.get("backends", {}), extra, path)
    toolchains = _toolchains(raw.get("toolchains", {}), path)
    build = _build_defaults(raw.get("build", {}), toolchains, path)
    return Config(path=path, backends=backends, extra_targets=extra, build=build, toolchains=toolchains)


def _read_toml(path: Path) -> dict:
    try:
        return _toml.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"config file {path} not found; copy the repository's config.toml or set BYOC_CONFIG") from None
    except IsADirectoryError:
        raise ConfigError(f"config path {path} is a directory; name the config.toml file in it") from None
    except (_toml.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None


def _extra_targets(extra_raw: dict, path: Path) -> dict[str, tuple[str, str]]:
    """[targets]: name -> (module, flag) of the targets beyond the built-in ones."""
    extra: dict[str, tuple[str, str]] = {}
    builtin = {target: (flag, module) for flag, (target, module) in BUILTIN_BACKENDS.items()}
    for name, spec in extra_raw.items():
        if not isinstance(spec, dict) or not isinstance(spec.get("module"), str):
            raise ConfigError(f"{path}: [targets] {name} must be a table like "
                              f'{name} = {{ module = "pkg.module", flag = "USE_{name.upper()}" }}')
        _check_keys(f"targets.{name}.", spec, ("module", "flag"), path)
        if name in builtin:
            flag, module = builtin[name]
            raise ConfigError(f"{path}: [targets] {name} = {{ module = {spec['module']!r} }} has the name of the "
                              f"built-in target {name!r} ({flag} -> {module}); rename the [targets] entry")
        extra[name] = (spec["module"], spec.get("flag", f"USE_{name.upper()}"))
    return extra


def _backends(backends_raw: dict, extra: dict[str, tuple[str, str]], path: Path) -> dict[str, bool]:
    """[backends]: flag -> enabled, every built-in flag present (off unless set)."""
    known_flags = list(BUILTIN_BACKENDS) + [flag for _, flag in extra.values()]
    _check_keys("backends.", backends_raw, known_flags, path)
    backends = {flag: False for flag in BUILTIN_BACKENDS}
    for flag, value in backends_raw.items():
        _check_type(f"backends.{flag}", value, bool, path)
        backends[flag] = value
    return backends


def _toolchains(toolchains_raw: dict, path: Path) -> dict[str, ToolchainConfig]:
    toolchains: dict[str, ToolchainConfig] = {}
    for name, spec in toolchains_raw.items():
        if not isinstance(spec, dict):
            raise ConfigError(f"{path}: [toolchains.{name}] must be a table with at least cc and arch")
        _check_keys(f"toolchains.{name}.", spec, _TOOLCHAIN_KEYS, path)
        for key, value in spec.items():
            _check_type(f"toolchains.{name}.{key}", value, _TOOLCHAIN_KEYS[key], path)
        for key in ("cc", "arch"):
            if key not in spec:
                raise ConfigError(f"{path}: [toolchains.{name}] needs `{key} = \"...\"`")
        toolchains[name] = ToolchainConfig(
            name=name, cc=spec["cc"], arch=spec["arch"], cflags=tuple(spec.get("cflags", ())),
            ldflags=tuple(spec.get("ldflags", ())), run=tuple(spec.get("run", ())),
            sanitizer=spec.get("sanitizer", False), apt=tuple(spec.get("apt", ())))
    return toolchains


def _build_defaults(build_raw: dict, toolchains: dict[str, ToolchainConfig], path: Path) -> BuildDefaults:
    _check_keys("build.", build_raw, _BUILD_KEYS, path)
    for key, value in build_raw.items():
        _check_type(f"build.{key}", value, _BUILD_KEYS[key], path)
    for key, allowed in (("executor", EXECUTORS), ("interface", INTERFACES), ("opt", OPT_LEVELS),
                         ("constants", CONSTANTS)):
        if key in build_raw and build_raw[key] not in allowed:
            raise ConfigError(f"{path}: build.{key} = {build_raw[key]!r} is not allowed; use one of: {', '.join(allowed)}")
    for name in build_raw.get("toolchains", []):
        if name not in toolchains:
            raise ConfigError(f"{path}: build.toolchains names {name!r}{_did_you_mean(name, toolchains)}, which is "
                              f"not defined; defined toolchains: {', '.join(toolchains) or 'none'}")
    return BuildDefaults(
        toolchains=tuple(build_raw.get("toolchains", ("gcc",))),
        executor=build_raw.get("executor", "graph"), interface=build_raw.get("interface", "packed"),
        opt=build_raw.get("opt", "-O2"), models=tuple(build_raw.get("models", ())),
        constants=build_raw.get("constants", "linked"))
