"""Opsets older than the converters: upgrade the model with onnx.version_converter first.

The converter table implements op definitions from some since_version on (Conv 1, AveragePool 7,
BatchNormalization 7, ...). A model whose opset selects an older definition of an op byoc
implements (PyTorch's opset-6 exports) is converted to the lowest opset at which every such node
has an implemented definition, and a log line says so. A model whose default opset is newer than
the installed onnx package knows is refused with one message: its op definitions cannot be looked up.
"""
from __future__ import annotations

import logging

import onnx
import onnx.defs
import onnx.version_converter

from .loader import default_opset
from .converters import implemented_versions
from .table import since_version

log = logging.getLogger("byoc_compiler.frontend.onnx")

# version_converter's adapters reach this far; beyond it an old model is reported as it is.
_MAX_TARGET = 18


def _target_opset(model: onnx.ModelProto) -> int | None:
    """The lowest opset at which every node with a too-old definition has an implemented one, None when
    no node needs it (or no opset up to _MAX_TARGET helps)."""
    opset = default_opset(model)
    old = set()
    for node in model.graph.node:
        if node.domain not in ("", "ai.onnx"):
            continue
        versions = implemented_versions(node.op_type)
        since = since_version(node.op_type, opset)
        if versions and since is not None and since < min(versions):
            old.add(node.op_type)
    if not old:
        return None
    for target in range(opset + 1, _MAX_TARGET + 1):
        if all(since_version(op, target) in implemented_versions(op) for op in old):
            return target
    return None


def upgrade_if_needed(model: onnx.ModelProto, label: str) -> onnx.ModelProto:
    """`model`, converted to a newer opset when some of its op definitions predate the converters."""
    target = _target_opset(model)
    if target is None:
        return model
    opset = default_opset(model)
    try:
        converted = onnx.version_converter.convert_version(model, target)
    except Exception as exc:  # noqa: BLE001 - the converter's C++ errors; the nodes are reported as they are
        log.warning("%s: opset %d predates byoc's converters and onnx.version_converter could not upgrade it "
                    "to opset %d (%s)", label, opset, target, str(exc).splitlines()[0] if str(exc) else exc)
        return model
    log.info("%s: upgraded from opset %d to opset %d with onnx.version_converter (older op definitions are "
             "imported through their newer form)", label, opset, target)
    return converted
