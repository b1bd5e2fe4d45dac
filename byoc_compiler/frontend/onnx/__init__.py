"""ONNX import: `from_onnx(path_or_model, shape=..., dtype=...)` -> IRModule.

loader.py reads and checks the file, table.py maps (op type, opset) to a
converter, ops_*.py hold the converters by op family, importer.py walks the
graph. Weights become Constants; anything computable from constants is folded.
"""
from .errors import NodeProblem, OnnxImportError, OnnxUnsupportedError
from .importer import from_onnx
from .table import supported_ops

__all__ = ["from_onnx", "supported_ops", "OnnxImportError", "OnnxUnsupportedError", "NodeProblem"]
