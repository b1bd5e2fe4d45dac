"""TFLite import: `from_tflite(path_or_bytes)` -> IRModule.

    from byoc_compiler.frontend import from_tflite
    mod = from_tflite("model.tflite")
    mod["main"].params                 # Vars named like the TFLite input tensors (NHWC shapes)
    mod["main"].attrs["output_names"]  # the output tensor names, in order

reader.py parses the flatbuffer with the `tflite` package and checks every length and offset
against the file; importer.py refuses model kinds byoc does not compute and walks subgraph 0;
ops_*.py convert operators (registered in table.py, all of them in converters.py), values.py keeps 4-D activations NCHW between
the model's inputs and outputs; quantized operators follow TFLite's integer arithmetic
(op/tflite_math.py). writer.py writes .tflite files (the zoo's and the tests' models).
"""
from .errors import OpProblem, TFLiteImportError, TFLiteUnsupportedError
from .importer import from_tflite
from .converters import supported_ops

__all__ = ["from_tflite", "supported_ops", "TFLiteImportError", "TFLiteUnsupportedError", "OpProblem"]
