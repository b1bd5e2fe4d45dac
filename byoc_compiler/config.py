"""byoc's settings: which targets are enabled, build defaults, and toolchains as data.

Where they come from (docs/build.md, "Where settings come from"), lowest first:
- the packaged defaults, `defaults.toml` next to this module (the built-in targets' flags, the build
  defaults, the toolchain table);
- the user's file: BYOC_CONFIG (or a path given explicitly) if set, else the first found from the working
  directory upward, as pytest finds its rootdir: a `byoc.toml`, a `pyproject.toml` with a [tool.byoc] table,
  or a `config.toml` whose tables are byoc's (the repository's is one; Cargo and others use the name too).
The user's tables merge over the defaults: [backends], [build] and [targets] key by key, and a
[toolchains.NAME] table replaces the packaged one of that name whole.

The files are edited by hand, so every mistake gets one message naming the file, the key and what is
allowed. Read with tomli (tomllib is only in 3.11+).
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
from .plugins import BUILTIN_FLAGS, DISTRIBUTION, TargetSource, flag_for, installed_targets

PACKAGED_DEFAULTS = Path(__file__).resolve().parent / "defaults.toml"
# The user's file, in the order looked for in each directory from the working one upward.
USER_FILES = ("byoc.toml", "pyproject.toml", "config.toml")

EXECUTORS = ("graph", "aot")
INTERFACES = ("packed", "unpacked")
CONSTANTS = ("linked", "params", "auto")   # large constants: linked, loaded at init, or by size (backend/constants.py)
# `opt` is one optimization flag (or none); other flags belong in a toolchain's cflags.
OPT_LEVELS = ("-O0", "-O1", "-O2", "-O3", "-Os", "-Oz", "-Og", "-Ofast", "")
PROFILES = ("hosted", "freestanding")     # runtime profiles: an OS and libc, or bare metal (the caller owns memory)
POOL_KINDS = ("workspace", "constants", "io")   # what a board's memory pool may hold (backend/memory_plan.py)
DEFAULT_CONSTANTS_SECTION = ".rodata.byoc_constants"


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
    board: str | None = None           # [boards.<name>]: memory pools, alignment (bare-metal toolchains)
    profile: str = "hosted"            # runtime profile of its programs (PROFILES)
    timeout: float = 600.0             # seconds a program of it may run (a hung bare-metal image ends there)
    # CPU features its code may assume (/proc/cpuinfo names): a codegen's choices (backend/cpu_features.py).
    # None: this machine's own where the toolchain builds for it, none otherwise.
    cpu_features: tuple[str, ...] | None = None

    @property
    def install_hint(self) -> str:
        packages = " ".join(self.apt) if self.apt else self.cc
        return f"apt-get install -y {packages}"

    @property
    def freestanding(self) -> bool:
        """Bare metal (BYOC_FREESTANDING, docs/bare-metal.md): no allocator, no stdio, no files."""
        return self.profile == "freestanding"


@dataclass(frozen=True)
class MemoryRegion:
    """A memory region of a board as its linker script names it (linker_script.py)."""
    name: str
    origin: int
    length: int


@dataclass(frozen=True)
class PoolConfig:
    """One memory pool of a board: `size` bytes that may hold the `kinds` of buffers (POOL_KINDS).
    size None: unbounded (the one implicit pool of a hosted toolchain)."""
    name: str
    size: int | None
    kinds: tuple[str, ...]


# A hosted program's memory: one unbounded pool for everything (malloc'ed workspace, constants in the binary).
HOSTED_POOLS = (PoolConfig("host", None, POOL_KINDS),)


@dataclass(frozen=True)
class BoardConfig:
    """A board: memory pools the planner fills (in order), buffer alignment, the constants' section."""
    name: str
    pools: tuple[PoolConfig, ...] = HOSTED_POOLS
    alignment: int = 64
    constants_section: str = DEFAULT_CONSTANTS_SECTION
    # The image layout (linker_script.py): memory regions and the names of those that hold the vector table
    # and code, read-only data (weights), .data/.bss (the arena and buffers) and the stack. A board without
    # regions plans memory but byoc cannot link an image for it.
    regions: tuple[MemoryRegion, ...] = ()
    code: str = ""
    rodata: str = ""
    data: str = ""
    stack: str = ""
    stack_size: int = 0


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
    path: Path                                      # the user's file, or the packaged defaults when there is none
    backends: dict[str, bool]                       # flag -> enabled
    extra_targets: dict[str, tuple[str, str]]       # target name -> (module, flag), from [targets]
    build: BuildDefaults
    toolchains: dict[str, ToolchainConfig] = field(default_factory=dict)
    sources: tuple[Path, ...] = ()                  # the files read, lowest first (packaged defaults, user's)
    installed: tuple[TargetSource, ...] = ()        # entry points of the group byoc.targets
    boards: dict[str, BoardConfig] = field(default_factory=dict)   # [boards.*]: bare-metal boards

    def target_sources(self) -> dict[str, list[TargetSource]]:
        """target name -> where it is declared: entry points (byoc's own first), then [targets]. More than
        one source for a name is a collision (`target_collisions`)."""
        out: dict[str, list[TargetSource]] = {}
        for source in self.installed:
            out.setdefault(source.name, []).append(source)
        for name, (module, flag) in self.extra_targets.items():
            out.setdefault(name, []).append(TargetSource(name, module, origin=f"{self.path.name} [targets]"))
        return out

    def target_flag(self, name: str) -> str:
        extra = self.extra_targets.get(name)
        return extra[1] if extra else flag_for(name)
    boards: dict[str, BoardConfig] = field(default_factory=dict)

    def board_of(self, toolchain: ToolchainConfig) -> BoardConfig | None:
        """The board a toolchain builds for, or None (hosted: one implicit unbounded pool)."""
        return self.boards[toolchain.board] if toolchain.board is not None else None

    def target_modules(self) -> dict[str, tuple[str, str, bool]]:
        """target name -> (declaration module, flag, enabled) of every usable target: declared once, or a
        built-in one that another package claims too (the built-in is used; `target_conflicts`)."""
        out = {}
        for name, sources in self.target_sources().items():
            if len(sources) == 1 or name in self.target_conflicts():
                flag = self.target_flag(name)
                out[name] = (sources[0].module, flag, self.backends.get(flag, True))
        return out

    def target_collisions(self) -> dict[str, str]:
        """name -> the sentence naming every package that declares it, for names no target can use (two
        packages of others claim one name: neither is preferred)."""
        return {name: f"the name {name!r} is declared by more than one package: "
                      + ", ".join(f"{s.origin} ({s.module})" for s in sources)
                      + "; uninstall one of them (or rename its entry point)"
                for name, sources in self.target_sources().items()
                if len(sources) > 1 and sources[0].dist != DISTRIBUTION}

    def target_conflicts(self) -> dict[str, str]:
        """built-in name -> the sentence naming the other packages that claim it too (ignored: byoc's own
        target keeps its name, so a stray package cannot take ccompiler's place)."""
        return {name: "also declared by " + ", ".join(f"{s.origin} ({s.module})" for s in sources[1:])
                      + f", which {'is' if len(sources) == 2 else 'are'} ignored; uninstall "
                      + ("it" if len(sources) == 2 else "them") + " or rename the entry point"
                for name, sources in self.target_sources().items()
                if len(sources) > 1 and sources[0].dist == DISTRIBUTION}

    def toolchain(self, name: str) -> ToolchainConfig:
        try:
            return self.toolchains[name]
        except KeyError:
            raise ConfigError(
                f"unknown toolchain {name!r}{_did_you_mean(name, self.toolchains)}; toolchains defined in "
                f"{_files_text(self.sources or (self.path,))}: {', '.join(self.toolchains) or 'none'}") from None


def _files_text(paths) -> str:
    return " and ".join(str(p) for p in paths)


def _did_you_mean(word: str, choices) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def find_config_path(path: str | os.PathLike | None = None) -> Path:
    """The user's settings file (explicit path, else $BYOC_CONFIG, else found from the working directory
    upward), or the packaged defaults when there is none."""
    return find_user_file(path) or PACKAGED_DEFAULTS


def find_user_file(path: str | os.PathLike | None = None, start: Path | None = None) -> Path | None:
    """Explicit path, else $BYOC_CONFIG, else the first of USER_FILES that is byoc's, in the working
    directory or the nearest directory above it; None when there is none."""
    if path is not None:
        return Path(path)
    env = os.environ.get("BYOC_CONFIG")
    if env:
        return Path(env)
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        for name in USER_FILES:
            candidate = folder / name
            if candidate.is_file() and candidate != PACKAGED_DEFAULTS and _is_byoc_file(candidate):
                return candidate
    return None


def _is_byoc_file(path: Path) -> bool:
    """byoc.toml always; pyproject.toml with [tool.byoc]; config.toml whose top-level tables are all byoc's
    (a [build] alone only with byoc's keys: Cargo has a [build] table too). Invalid TOML in a config.toml
    is claimed, so that its error is reported rather than the file skipped."""
    if path.name == "byoc.toml":
        return True
    try:
        raw = _toml.loads(path.read_text(encoding="utf-8"))
    except (_toml.TOMLDecodeError, UnicodeDecodeError, OSError):
        return path.name == "config.toml"
    if path.name == "pyproject.toml":
        return isinstance(raw.get("tool", {}).get("byoc"), dict)
    if not raw or not set(raw) <= set(_SECTIONS):
        return False
    build = raw.get("build", {})
    return bool(set(raw) - {"build"}) or (isinstance(build, dict) and set(build) <= set(_BUILD_KEYS))


_SECTIONS = ("backends", "targets", "build", "toolchains", "boards")
_BUILD_KEYS = {"toolchains": list, "executor": str, "interface": str, "opt": str, "models": list, "constants": str}
_TOOLCHAIN_KEYS = {"cc": str, "arch": str, "cflags": list, "ldflags": list, "run": list, "sanitizer": bool,
                   "apt": list, "board": str, "profile": str, "timeout": int, "cpu_features": list}
_BOARD_KEYS = {"alignment": int, "constants_section": str, "pools": list,
               # the image layout (linker_script.py): memory regions and which holds what
               "regions": list, "code": str, "rodata": str, "data": str, "stack": str, "stack_size": int}
_LAYOUT_KEYS = ("regions", "code", "rodata", "data", "stack", "stack_size")
_POOL_KEYS = {"name": str, "size": int, "kinds": list}
_TYPE_NAMES = {list: "a list of strings", str: "a string", bool: "true or false", int: "a positive integer"}


def _check_keys(where: str, table: dict, allowed, path: Path) -> None:
    for key in table:
        if key not in allowed:
            raise ConfigError(f"{path}: unknown key {where}{key!r}{_did_you_mean(key, allowed)}; "
                              f"allowed keys: {', '.join(allowed)}")


def _check_type(where: str, value: Any, expected: type, path: Path) -> None:
    ok = isinstance(value, expected) and not (expected in (str, int) and isinstance(value, bool))
    if ok and expected is int:
        ok = value > 0
    if ok and expected is list and where.endswith(".regions"):
        ok = all(isinstance(v, dict) for v in value)
    elif ok and expected is list:
        ok = all(isinstance(v, str) for v in value)
    if not ok:
        raise ConfigError(f"{path}: {where} must be {_TYPE_NAMES[expected]}, got {value!r}")


def load_config(path: str | os.PathLike | None = None) -> Config:
    """The packaged defaults with the user's settings (see find_user_file) merged over them."""
    user = find_user_file(path)
    raw = _read_toml(PACKAGED_DEFAULTS)
    if user is not None and user.resolve() != PACKAGED_DEFAULTS:
        raw = merge_settings(raw, _read_user_file(user))
    where = user or PACKAGED_DEFAULTS
    sources = (PACKAGED_DEFAULTS,) + ((user,) if user is not None and user.resolve() != PACKAGED_DEFAULTS else ())
    _check_keys("", raw, _SECTIONS, where)
    installed = tuple(installed_targets())
    extra = _extra_targets(raw.get("targets", {}), where)     # checked in this order: the first error is reported
    backends = _backends(raw.get("backends", {}), extra, installed, where)
    boards = {name: _board(name, spec, where) for name, spec in raw.get("boards", {}).items()}
    toolchains = _toolchains(raw.get("toolchains", {}), boards, where)
    build = _build_defaults(raw.get("build", {}), toolchains, where)
    return Config(path=where, backends=backends, extra_targets=extra, build=build, toolchains=toolchains,
                  sources=sources, installed=installed, boards=boards)


def merge_settings(base: dict, over: dict) -> dict:
    """`over`'s tables merged into `base`'s key by key; a key's value (a build setting, a flag, a whole
    [toolchains.NAME] table) replaces the one in `base`."""
    out = {key: dict(value) if isinstance(value, dict) else value for key, value in base.items()}
    for section, table in over.items():
        if isinstance(table, dict) and isinstance(out.get(section), dict):
            out[section].update(table)
        else:
            out[section] = table
    return out


def _read_user_file(path: Path) -> dict:
    raw = _read_toml(path)
    if path.name != "pyproject.toml":
        return raw
    table = raw.get("tool", {}).get("byoc")
    if not isinstance(table, dict):
        raise ConfigError(f"{path} has no [tool.byoc] table; add one (its tables are [tool.byoc.build], "
                          f"[tool.byoc.backends], ...) or name a byoc.toml")
    return table


def _read_toml(path: Path) -> dict:
    try:
        return _toml.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"config file {path} not found; name an existing file (BYOC_CONFIG, --config, config=) "
                          f"or unset BYOC_CONFIG to use the settings found from the working directory") from None
    except IsADirectoryError:
        raise ConfigError(f"config path {path} is a directory; name the config.toml file in it") from None
    except (_toml.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None


def _extra_targets(extra_raw: dict, path: Path) -> dict[str, tuple[str, str]]:
    """[targets]: name -> (module, flag) of targets named by module path (beyond the installed ones)."""
    extra: dict[str, tuple[str, str]] = {}
    for name, spec in extra_raw.items():
        if not isinstance(spec, dict) or not isinstance(spec.get("module"), str):
            raise ConfigError(f"{path}: [targets] {name} must be a table like "
                              f'{name} = {{ module = "pkg.module", flag = "USE_{name.upper()}" }}')
        _check_keys(f"targets.{name}.", spec, ("module", "flag"), path)
        if name in BUILTIN_FLAGS:
            raise ConfigError(f"{path}: [targets] {name} = {{ module = {spec['module']!r} }} has the name of the "
                              f"built-in target {name!r} ({BUILTIN_FLAGS[name]}); rename the [targets] entry")
        extra[name] = (spec["module"], spec.get("flag", flag_for(name)))
    return extra


def _backends(backends_raw: dict, extra: dict[str, tuple[str, str]], installed, path: Path) -> dict[str, bool]:
    """[backends]: flag -> enabled, every built-in flag present (off unless set)."""
    known_flags = list(dict.fromkeys([*BUILTIN_FLAGS.values(), *(s.flag for s in installed),
                                      *(flag for _, flag in extra.values())]))
    _check_keys("backends.", backends_raw, known_flags, path)
    backends = {flag: False for flag in BUILTIN_FLAGS.values()}
    for flag, value in backends_raw.items():
        _check_type(f"backends.{flag}", value, bool, path)
        backends[flag] = value
    return backends


def _board(name: str, spec, path: Path) -> BoardConfig:
    """[boards.<name>]: alignment, constants_section and [[boards.<name>.pools]] (name, size, kinds)."""
    if not isinstance(spec, dict):
        raise ConfigError(f"{path}: [boards.{name}] must be a table (alignment, pools, constants_section)")
    _check_keys(f"boards.{name}.", spec, _BOARD_KEYS, path)
    for key in ("alignment", "constants_section"):
        if key in spec:
            _check_type(f"boards.{name}.{key}", spec[key], _BOARD_KEYS[key], path)
    if not isinstance(spec.get("pools", []), list) or not spec.get("pools", [None]):
        raise ConfigError(f"{path}: boards.{name}.pools must be a non-empty list of [[boards.{name}.pools]] tables")
    pools = tuple(_pool(f"boards.{name}.pools[{k}]", p, path) for k, p in enumerate(spec.get("pools", [])))
    names = [p.name for p in pools]
    if len(set(names)) != len(names):
        raise ConfigError(f"{path}: boards.{name}.pools names a pool twice ({', '.join(names)})")
    alignment = spec.get("alignment", 64)
    if alignment & (alignment - 1):
        raise ConfigError(f"{path}: boards.{name}.alignment must be a power of two, got {alignment}")
    section = spec.get("constants_section", DEFAULT_CONSTANTS_SECTION)
    if not section or not all(c.isalnum() or c in "._" for c in section):
        raise ConfigError(f"{path}: boards.{name}.constants_section {section!r} must be a section name "
                          "(letters, digits, '.', '_'), like \".rodata.byoc_constants\"")
    return BoardConfig(name, pools or HOSTED_POOLS, alignment, section, **_board_layout(name, spec, path))


def _pool(where: str, spec, path: Path) -> PoolConfig:
    if not isinstance(spec, dict) or any(k not in spec for k in _POOL_KEYS):
        raise ConfigError(f"{path}: {where} must be a table with name, size (bytes) and kinds "
                          f"(a list of {', '.join(POOL_KINDS)})")
    _check_keys(f"{where}.", spec, _POOL_KEYS, path)
    for key, value in spec.items():
        _check_type(f"{where}.{key}", value, _POOL_KEYS[key], path)
    bad = [k for k in spec["kinds"] if k not in POOL_KINDS]
    if bad or not spec["kinds"]:
        raise ConfigError(f"{path}: {where}.kinds = {spec['kinds']!r}: each kind must be one of "
                          f"{', '.join(POOL_KINDS)}")
    return PoolConfig(spec["name"], spec["size"], tuple(dict.fromkeys(spec["kinds"])))


def _toolchains(toolchains_raw: dict, boards: dict[str, BoardConfig], path: Path) -> dict[str, ToolchainConfig]:
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
        if spec.get("board") is not None and spec["board"] not in boards:
            raise ConfigError(f"{path}: toolchains.{name}.board names {spec['board']!r}"
                              f"{_did_you_mean(spec['board'], boards)}, which is not a [boards.*] table; "
                              f"defined boards: {', '.join(boards) or 'none'}")
        if spec.get("profile", "hosted") not in PROFILES:
            raise ConfigError(f"{path}: toolchains.{name}.profile = {spec['profile']!r}; use one of "
                              f"{', '.join(PROFILES)}")
        toolchains[name] = ToolchainConfig(
            name=name, cc=spec["cc"], arch=spec["arch"], cflags=tuple(spec.get("cflags", ())),
            ldflags=tuple(spec.get("ldflags", ())), run=tuple(spec.get("run", ())),
            sanitizer=spec.get("sanitizer", False), apt=tuple(spec.get("apt", ())),
            board=spec.get("board"), profile=spec.get("profile", "hosted"),
            timeout=float(spec.get("timeout", 600)),
            cpu_features=tuple(spec["cpu_features"]) if "cpu_features" in spec else None)
    return toolchains


def _board_layout(name: str, spec: dict, path: Path) -> dict:
    """The image layout of [boards.<name>]: regions and what each holds, all given or none."""
    given = [k for k in _LAYOUT_KEYS if k in spec]
    if not given:
        return {}
    missing = [k for k in _LAYOUT_KEYS if k not in spec]
    if missing:
        raise ConfigError(f"{path}: [boards.{name}] gives {', '.join(given)} but not {', '.join(missing)}: a board's "
                          f"image layout needs all of {', '.join(_LAYOUT_KEYS)}")
    for key in _LAYOUT_KEYS:
        _check_type(f"boards.{name}.{key}", spec[key], _BOARD_KEYS[key], path)
    regions = tuple(_region(f"boards.{name}", r, path) for r in spec["regions"])
    names = [r.name for r in regions]
    for key in ("code", "rodata", "data", "stack"):
        if spec[key] not in names:
            raise ConfigError(f"{path}: boards.{name}.{key} = {spec[key]!r} names no region; regions: {', '.join(names)}")
    return {"regions": regions, **{k: spec[k] for k in ("code", "rodata", "data", "stack", "stack_size")}}


def _region(where: str, raw: dict, path: Path) -> MemoryRegion:
    """{ name = "dtcm", origin = 0x20000000, length = 0x80000 }"""
    _check_keys(f"{where}.regions[].", raw, ("name", "origin", "length"), path)
    ok = (isinstance(raw.get("name"), str) and raw["name"].isidentifier()
          and all(isinstance(raw.get(k), int) and not isinstance(raw.get(k), bool) and raw[k] >= 0
                  for k in ("origin", "length")))
    if not ok:
        raise ConfigError(f"{path}: {where}.regions entries must be {{ name = \"sram\", origin = 0x20000000, "
                          f"length = 0x80000 }} (a C-identifier name, byte address and size), got {raw!r}")
    return MemoryRegion(raw["name"], raw["origin"], raw["length"])


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
