"""atheris fuzz target: the ONNX importer on raw bytes (py_targets.onnx).

    python tests/fuzz/fuzz_onnx.py [libFuzzer flags] CORPUS_DIR      (bench/fuzz.py runs it)
"""
import os
import sys
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
with atheris.instrument_imports(include=["byoc_compiler"]):
    # everything the target reaches is imported now: modules imported lazily later are not instrumented
    import byoc_compiler.frontend.onnx  # noqa: F401
    import byoc_compiler.op  # noqa: F401
    import byoc_compiler.transform  # noqa: F401
from tests.fuzz.py_targets import onnx, triaging

if __name__ == "__main__":
    # BYOC_FUZZ_TRIAGE=DIR: save each distinct unexpected exception there and keep going
    triage = os.environ.get("BYOC_FUZZ_TRIAGE")
    atheris.Setup(sys.argv, triaging(onnx, triage) if triage else onnx)
    atheris.Fuzz()
