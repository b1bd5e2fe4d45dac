"""atheris fuzz target: the Relay text-format parser, then type inference (py_targets.text).

    python tests/fuzz/fuzz_text.py [libFuzzer flags] CORPUS_DIR      (bench/fuzz.py runs it)
"""
import os
import sys
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
with atheris.instrument_imports(include=["byoc_compiler"]):
    # everything the target reaches is imported now: modules imported lazily later are not instrumented
    import byoc_compiler.text.parser  # noqa: F401
    import byoc_compiler.op  # noqa: F401
    import byoc_compiler.transform  # noqa: F401
from tests.fuzz.py_targets import text, triaging

if __name__ == "__main__":
    sys.setrecursionlimit(10000)  # deep nesting must end in a ByocError, not a RecursionError
    # BYOC_FUZZ_TRIAGE=DIR: save each distinct unexpected exception there and keep going
    triage = os.environ.get("BYOC_FUZZ_TRIAGE")
    atheris.Setup(sys.argv, triaging(text, triage) if triage else text)
    atheris.Fuzz()
