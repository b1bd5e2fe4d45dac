"""The build's codegen stage for one region: call its target's codegen, check what came back.

A target's codegen is plugin code: whatever it raises or returns wrong is reported as one ByocError
naming the target and the region, never a deep traceback or a linker's "undefined reference".
"""
from __future__ import annotations

import re

import numpy as np

from ..ctext import is_identifier
from ..errors import ByocError
from .artifact import BlobArtifact, CSourceArtifact
from .target import require_codegen


def region_codegen(target_name: str, func, symbol: str):
    """(target, artifact) of one region, checked: the right type, the right symbol, C that defines it."""
    target = require_codegen(target_name)
    try:
        artifact = target.codegen(func, symbol)
    except ByocError as exc:
        raise ByocError(f"codegen of target {target_name!r} failed for region {symbol}: {exc}") from None
    except Exception as exc:
        raise ByocError(f"codegen of target {target_name!r} failed for region {symbol}: "
                        f"{type(exc).__name__}: {exc}") from exc
    _check_artifact(target_name, symbol, artifact)
    return target, artifact


def _check_artifact(target_name: str, symbol: str, artifact) -> None:
    if not isinstance(artifact, (CSourceArtifact, BlobArtifact)):
        raise ByocError(f"codegen of target {target_name!r} returned {type(artifact).__name__} for region {symbol}; "
                        "it must return a CSourceArtifact or a BlobArtifact (byoc_compiler.backend.artifact)")
    if artifact.symbol != symbol:
        raise ByocError(f"codegen of target {target_name!r} returned an artifact for {artifact.symbol!r} "
                        f"when asked for region {symbol!r}")
    if isinstance(artifact, CSourceArtifact) and not any(
            re.search(rf"\b{re.escape(symbol)}\b", text) for text in artifact.sources.values()):
        # caught here, the linker's "undefined reference" would not say which target or what to write
        raise ByocError(f"codegen of target {target_name!r} returned C for region {symbol} that never mentions "
                        f"{symbol}; its sources ({', '.join(artifact.sources)}) must define the region's entry "
                        f"point {symbol} (vendor.entry_points writes it; docs/runtime-abi.md)")


def pool_region_constants(pool, target_name: str, artifact: CSourceArtifact) -> None:
    """A C-source region's large constants join the pool under the names its source declares."""
    for name, array in artifact.constants.items():
        if not (isinstance(name, str) and is_identifier(name) and name.startswith(artifact.symbol)):
            raise ByocError(f"codegen of target {target_name!r} returned constant {name!r} for region "
                            f"{artifact.symbol}; constant names are global C symbols and must start with the "
                            "region's symbol")
        if not isinstance(array, np.ndarray):
            raise ByocError(f"codegen of target {target_name!r}: constant {name!r} of region {artifact.symbol} "
                            f"is a {type(array).__name__}; give a numpy array")
        try:
            pool.add_array(name, array, f"constant of region {artifact.symbol}")
        except ValueError as exc:
            raise ByocError(f"codegen of target {target_name!r}, region {artifact.symbol}: {exc}") from None
