"""The errors of the ONNX import. All are ByocErrors: one message naming the model and the fix."""
from __future__ import annotations

from dataclasses import dataclass

from ...errors import ByocError


class OnnxImportError(ByocError):
    """The model cannot be read or imported (missing, truncated, invalid, dynamic shapes, bad overrides)."""


@dataclass(frozen=True)
class NodeProblem:
    """Why one node cannot be imported."""

    node: str      # the node's name, or a stand-in naming its position and outputs
    op_type: str
    opset: int     # the opset the model imports for the node's domain
    reason: str

    def __str__(self) -> str:
        return f"node {self.node} ({self.op_type}, opset {self.opset}): {self.reason}"


class OnnxUnsupportedError(OnnxImportError):
    """Nodes the importer does not support; `problems` lists every one of them."""

    def __init__(self, model: str, problems: list[NodeProblem]):
        self.model = model
        self.problems = list(problems)
        count = len(self.problems)
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(
            f"{model}: {count} node{'s' if count != 1 else ''} cannot be imported:\n{lines}\n"
            "Supported ONNX ops: `byoc_compiler.frontend.onnx.supported_ops()`; rewrite or remove these nodes "
            "(e.g. with onnx-simplifier) or export the model with a supported opset.")
