"""ONNX import: `from_onnx(path_or_model, shape=..., dtype=...)` -> IRModule.

    from byoc_compiler.frontend import from_onnx
    mod = from_onnx("resnet.onnx", shape={"input": (1, 3, 224, 224)})  # shape only for dynamic dims
    mod["main"].params                 # Vars named like the ONNX inputs
    mod["main"].attrs["output_names"]  # the ONNX output names, in the order of main's results

Weights (initializers, also those listed as graph inputs) become Constants, and so does
everything computable from constants (Constant, ConstantOfShape, Shape of a static shape,
and any op on constants, evaluated with the op's numpy reference). A model that cannot be
imported raises one OnnxUnsupportedError listing every offending node (name, op type,
opset, reason); a missing, truncated or invalid file raises an OnnxImportError naming it.

loader.py reads and checks the file, table.py is the registry the converters (ops_*.py, by op family)
register into, converters.py maps (op type, opset) to a converter by the op's definition version, context.py builds
typed, folded IR for them, importer.py walks the graph. `supported_ops()` lists the table.
"""
from .errors import NodeProblem, OnnxImportError, OnnxUnsupportedError
from .importer import from_onnx
from .converters import supported_ops

__all__ = ["from_onnx", "supported_ops", "OnnxImportError", "OnnxUnsupportedError", "NodeProblem"]
