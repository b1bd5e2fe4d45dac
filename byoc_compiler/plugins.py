"""Where targets come from: the entry points of the group `byoc.targets`, read from package metadata
without importing anything (docs/writing-a-target.md, "Ship it as a package").

    [project.entry-points."byoc.targets"]
    mynpu = "byoc_mynpu:target"          # name = "declaration module:attribute"

byoc's own targets are entry points of the same group (pyproject.toml). Run from a checkout (this
package next to the repository's pyproject.toml and targets/), the built-in entries are read from that
pyproject.toml, since the installed metadata may belong to another tree or be stale.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

try:
    import tomllib as _toml
except ModuleNotFoundError:  # Python 3.10
    import tomli as _toml

GROUP = "byoc.targets"
DISTRIBUTION = "byoc_compiler"
# The built-in targets keep the flags they always had; any other target is enabled by USE_<NAME>.
BUILTIN_FLAGS = {"ccompiler": "USE_CODEGENC", "examplejson": "USE_EXAMPLEJSON", "dnnl": "USE_DNNL"}


@dataclass(frozen=True)
class TargetSource:
    """One declared target: its name, the module that declares it, and where that declaration came from."""

    name: str
    module: str                 # the declaration module (never the codegen)
    attr: str = "target"
    dist: str | None = None     # the distribution whose entry point names it; None: config's [targets]
    version: str | None = None
    origin: str = ""            # for messages: "byoc-mynpu 0.1.0", or the config file with the [targets] line

    @property
    def flag(self) -> str:
        return flag_for(self.name)


def flag_for(name: str) -> str:
    return BUILTIN_FLAGS.get(name) or "USE_" + re.sub(r"[^A-Za-z0-9]", "_", name).upper()


def checkout_root() -> Path | None:
    """The repository root when byoc runs from a checkout (its pyproject.toml and targets/ beside the
    package), else None (an installed wheel)."""
    root = Path(__file__).resolve().parent.parent
    return root if (root / "pyproject.toml").is_file() and (root / "targets").is_dir() else None


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def _checkout_sources(root: Path) -> list[TargetSource]:
    project = _toml.loads((root / "pyproject.toml").read_text(encoding="utf-8")).get("project", {})
    version = project.get("version")
    table = project.get("entry-points", {}).get(GROUP, {})
    return [_source(name, value, DISTRIBUTION, version) for name, value in table.items()]


def _source(name: str, value: str, dist: str, version: str | None) -> TargetSource:
    module, _, attr = value.partition(":")
    origin = f"{dist} {version}" if version else dist
    return TargetSource(name, module.strip(), attr.strip() or "target", dist, version, origin)


def installed_targets() -> list[TargetSource]:
    """Every entry point of the group, byoc's own first. A name may come twice (two packages claiming it):
    the registry reports that as a collision."""
    root = checkout_root()
    out = _checkout_sources(root) if root is not None else []
    seen = {(s.name, s.module, s.attr, _normalized(s.dist)) for s in out}
    # in name order, then by distribution: the same listing (and collision message) on every machine
    for ep in sorted(metadata.entry_points(group=GROUP), key=lambda e: (e.name, e.dist.name if e.dist else "")):
        dist = ep.dist.name if ep.dist is not None else "?"
        if root is not None and _normalized(dist) == DISTRIBUTION:
            continue        # the checkout's pyproject.toml speaks for byoc's own targets
        source = _source(ep.name, ep.value, dist, ep.dist.version if ep.dist is not None else None)
        key = (source.name, source.module, source.attr, _normalized(dist))
        if key not in seen:   # one distribution found twice on sys.path is not a collision
            seen.add(key)
            out.append(source)
    return sorted(out, key=lambda s: _normalized(s.dist or "") != DISTRIBUTION)
