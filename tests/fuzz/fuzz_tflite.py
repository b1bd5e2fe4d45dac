"""atheris fuzz target: the TFLite importer on raw bytes (py_targets.tflite).

    python tests/fuzz/fuzz_tflite.py [libFuzzer flags] CORPUS_DIR      (bench/fuzz.py runs it)
"""
import os
import sys
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
with atheris.instrument_imports(include=["byoc_compiler", "flatbuffers"]):
    # everything the target reaches is imported now: modules imported lazily later are not instrumented
    import byoc_compiler.frontend.tflite  # noqa: F401
    import byoc_compiler.frontend.tflite.converters  # noqa: F401
    import byoc_compiler.op  # noqa: F401
    import byoc_compiler.transform  # noqa: F401
    import flatbuffers  # noqa: F401
from tests.fuzz.py_targets import tflite as target, triaging

if __name__ == "__main__":
    # BYOC_FUZZ_TRIAGE=DIR: save each distinct unexpected exception there and keep going
    triage = os.environ.get("BYOC_FUZZ_TRIAGE")
    atheris.Setup(sys.argv, triaging(target, triage) if triage else target)
    atheris.Fuzz()
