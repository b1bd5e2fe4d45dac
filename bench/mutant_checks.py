"""The checks bench/mutants.py runs against a mutant of the runtime C or of a host C writer.

Run inside the scratch copy of the repository that holds the mutant (PYTHONPATH=that copy), so the
Python that writes C, the C the compiler reads and the runner program are all the mutant's:

    python bench/mutant_checks.py save DATA      # once, on the unmutated tree: the cases and their C
    python bench/mutant_checks.py runtime DATA   # exit 1: the check caught the mutant
    python bench/mutant_checks.py writers DATA

The cases are the ONNX conformance suite's passing cases in the batches the default run builds
(tests/test_onnx_conformance.py test_batch_through_c), saved once with the outputs ONNX expects and the
host C the unmutated writers give each batch, so a check does not import 666 ONNX cases again.

runtime: one batch built host-only, loaded in this process (graph executor, JSON, params, the
thread pool with 2 threads) and run as the runner program (.npy in and out), each compared with ONNX's
outputs. writers: every batch's host C written again; a batch whose C differs from the unmutated
writers' is compiled, loaded, run and compared (a batch whose C is the same gives the same result).
Exit 0: every comparison held (the mutant survived); 1: a comparison failed or the build or run
raised (killed); 3: the check itself could not run.
"""
from __future__ import annotations

import copyreg
import pickle
import sys
import time
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parent.parent
for path in (ROOT, ROOT / "tests", ROOT / "tests" / "matrix"):
    sys.path.insert(0, str(path))

import numpy as np  # noqa: E402

from byoc_compiler.ir.attrs import Attrs  # noqa: E402
from byoc_compiler.ir.expr import Op  # noqa: E402

# Ops are interned by name and Attrs are frozen: both pickle as a call that makes them again.
copyreg.pickle(Op, lambda op: (Op, (op.name,)))
copyreg.pickle(Attrs, lambda attrs: (Attrs, (dict(attrs.items()),)))

RUNTIME_BATCH = 4       # the batch whose host C compiles fastest (ReduceLogSum..Resize: ~1 s at -O2)
OPT = "-O0"             # a mutant's build: the fastest compile (equivalence is judged on -O2 objects)
DATA_FILE = "batches.pkl"


def save(data: Path) -> None:
    import test_onnx_conformance as T
    import onnx_conformance as conformance
    from byoc_compiler.backend.build import build

    batches = []
    for units in T._UNITS:
        mod, feeds, slices = conformance.batch_module(units)
        cases = [T._BY_NAME[name] for name, _ in units]
        batches.append({"units": units, "mod": mod, "feeds": feeds, "slices": slices,
                        "tolerances": [(c.rtol, c.atol) for c in cases],
                        "want": [c.data_sets[k][1] for c, (_, k) in zip(cases, units)],
                        "host_c": build(mod, toolchain="gcc").host_c})
    data.mkdir(parents=True, exist_ok=True)
    (data / DATA_FILE).write_bytes(pickle.dumps(batches, protocol=pickle.HIGHEST_PROTOCOL))


def _compare(batch: dict, got: list, how: str) -> list[str]:
    import onnx_conformance as conformance

    failures = []
    for (name, index), where, (rtol, atol), want in zip(batch["units"], batch["slices"], batch["tolerances"],
                                                       batch["want"]):
        try:
            with np.errstate(all="ignore"):
                conformance.assert_matches(SimpleNamespace(rtol=rtol, atol=atol), got[where], want,
                                           f"{name} (data set {index}) {how}")
        except AssertionError as exc:
            failures.append(" ".join(str(exc).split())[:300])
    return failures


def _loaded_outputs(result, feeds: dict, threads: int | None = None) -> list:
    loaded = result.load(werror=True, threads=threads)
    for key, value in feeds.items():
        loaded.set_input(key, value)
    loaded.run()
    return [loaded.get_output(i) for i in range(loaded.get_num_outputs())]


def runtime(batches: list) -> list[str]:
    from byoc_compiler.backend.build import build

    batch = batches[RUNTIME_BATCH]
    result = build(batch["mod"], toolchain="gcc", opt=OPT)
    failures = _compare(batch, _loaded_outputs(result, batch["feeds"], threads=2), "loaded")
    got = result.run_runner(batch["feeds"], threads=2)
    return failures + _compare(batch, got, "through the runner")


def writers(batches: list) -> list[str]:
    from byoc_compiler.backend.build import build

    failures, changed = [], 0
    for batch in batches:
        result = build(batch["mod"], toolchain="gcc", opt=OPT)
        if result.host_c == batch["host_c"]:
            continue
        changed += 1
        failures += _compare(batch, _loaded_outputs(result, batch["feeds"]), "loaded")
    print(f"{changed} of {len(batches)} batches' host C changed")
    return failures


def main(argv: list[str]) -> int:
    what, data = argv[0], Path(argv[1])
    if what == "save":
        save(data)
        return 0
    try:
        batches = pickle.loads((data / DATA_FILE).read_bytes())
    except OSError as exc:
        print(f"cannot read the saved cases: {exc}")
        return 3
    start = time.process_time()
    try:
        failures = {"runtime": runtime, "writers": writers}[what](batches)
    except Exception as exc:  # noqa: BLE001 - the mutant broke the build or the run: caught
        print(f"raised {type(exc).__name__}: {' '.join(str(exc).split())[:300]}")
        return 1
    print("\n".join(failures[:5]))
    print(f"{len(failures)} cases differ ({time.process_time() - start:.1f} s CPU in this process)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
