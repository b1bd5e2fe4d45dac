"""The errors of the TFLite import. All are ByocErrors: one message naming the model and the fix."""
from __future__ import annotations

from dataclasses import dataclass

from ...errors import ByocError


class TFLiteImportError(ByocError):
    """The model cannot be read or imported (missing, truncated, corrupt, a kind of model byoc does not compute)."""


@dataclass(frozen=True)
class OpProblem:
    """Why one operator cannot be imported."""

    index: int
    op: str
    version: int
    reason: str

    def __str__(self) -> str:
        return f"operator {self.index} ({self.op}, version {self.version}): {self.reason}"


class TFLiteUnsupportedError(TFLiteImportError):
    """Operators the importer does not support; `problems` lists every one of them."""

    def __init__(self, model: str, problems: list[OpProblem]):
        self.model = model
        self.problems = list(problems)
        count = len(self.problems)
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(
            f"{model}: {count} operator{'s' if count != 1 else ''} cannot be imported:\n{lines}\n"
            "Supported TFLite operators: `byoc_compiler.frontend.tflite.supported_ops()`; convert the model "
            "without these operators (or with full integer quantization).")
