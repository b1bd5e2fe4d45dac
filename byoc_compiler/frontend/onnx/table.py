"""The converter registry: ONNX op type -> one converter per definition ("since version") of the op.

The converter modules (ops_*.py) register into it with `@converter`; converters.py imports them all and
answers the questions about the whole table (resolve, supported_ops), so no converter imports the importer.

An ONNX model names an opset, not op versions; the op's definition in force
is the newest one whose since_version <= the opset (`onnx.defs` knows them).
A converter row lists exactly the definitions it implements, so a model
using a definition nobody checked is reported instead of silently mistranslated.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Callable, Mapping

import onnx.defs

# op_type -> since_version -> Converter
_TABLE: dict[str, dict[int, "Converter"]] = {}
# onnxruntime's contrib ops (domain com.microsoft, version 1): op_type -> Converter
MS_TABLE: dict[str, "Converter"] = {}


@dataclass(frozen=True)
class Converter:
    """How to import one ONNX op across the definitions listed in `versions`.

    convert  -- (node, ctx) -> list of IR expressions, one per produced output
    outputs  -- how many outputs it produces; a later output is an error only if the model uses it
    check    -- attrs -> list of reasons the attribute values are unsupported (static, before conversion)
    """

    op_type: str
    versions: tuple[int, ...]
    convert: Callable
    outputs: int = 1
    check: Callable[[Mapping], list[str]] | None = None


def converter(op_type: str, versions, *, outputs: int = 1, check=None):
    """Decorator: register `fn(node, ctx)` for the given since_versions of `op_type`."""
    def register(fn):
        row = _TABLE.setdefault(op_type, {})
        conv = Converter(op_type, tuple(versions), fn, outputs, check)
        for version in conv.versions:
            if version in row:
                raise AssertionError(f"{op_type} since {version} registered twice")
            row[version] = conv
        return fn
    return register


@functools.lru_cache(maxsize=None)
def since_version(op_type: str, opset: int, domain: str = "") -> int | None:
    """The since_version of `op_type`'s definition in force at `opset`, None if ONNX has no such op."""
    try:
        return onnx.defs.get_schema(op_type, opset, domain).since_version
    except Exception:  # noqa: BLE001 - SchemaError: unknown op or op newer than the opset
        return None


# The queries below read the registry as it is: complete once converters.py has imported every converter
# module (the importer, upgrade.py and supported_ops go through it).
def resolve(op_type: str, domain: str, opset: int) -> tuple[Converter | None, str]:
    """(converter, "") or (None, the reason the node cannot be imported)."""
    if domain == "com.microsoft" and op_type in MS_TABLE:
        return MS_TABLE[op_type], ""
    if domain not in ("", "ai.onnx"):
        return None, f"domain {domain!r} is not supported (only the default ONNX domain is)"
    row = _TABLE.get(op_type)
    since = since_version(op_type, opset)
    if row is None:
        if since is None:
            return None, f"{op_type!r} is not an ONNX operator at opset {opset}"
        return None, f"op type {op_type} is not supported"
    if since is None:
        return None, f"{op_type} does not exist at opset {opset}"
    conv = row.get(since)
    if conv is None:
        known = ", ".join(str(v) for v in sorted(row))
        return None, (f"the {op_type} definition of opset {opset} (since version {since}) is not supported; "
                      f"supported definitions: since {known}")
    return conv, ""


def implemented_versions(op_type: str) -> tuple[int, ...]:
    """The since_versions of `op_type` that have a converter (empty when byoc does not import it)."""
    return tuple(sorted(_TABLE.get(op_type, {})))


def supported_ops() -> dict[str, tuple[int, ...]]:
    """ONNX op type -> the since_versions of its definitions that import, sorted by op type."""
    return {op: tuple(sorted(row)) for op, row in sorted(_TABLE.items())}
