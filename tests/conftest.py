"""Shared pytest set-up: the repository root is importable (byoc_compiler from this checkout) wherever pytest starts."""
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
for path in (ROOT, ROOT / "tests"):  # byoc_compiler, and the tests' shared helpers (needs, toy_target) from anywhere
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

# The test matrix's options (--matrix, --fuzz-minutes), markers and summary table, known wherever pytest starts.
MATRIX = ROOT / "tests" / "matrix"
if str(MATRIX) not in sys.path:
    sys.path.insert(0, str(MATRIX))
pytest_plugins = ["matrix_plugin", "skip_policy"]   # skip_policy: in CI, only reviewed skips (skip_allowlist.toml)

# Hypothesis: derandomized in CI (the same examples on every run: a CI failure reproduces, a pass is not
# luck); `--hypothesis-profile long` (or HYPOTHESIS_PROFILE=long) searches 20x wider, randomized, for a
# run by hand (docs/matrix.md). A test's own @settings(max_examples=...) still wins over the profile's.
from hypothesis import settings as _hypothesis_settings  # noqa: E402

import needs  # noqa: E402

_hypothesis_settings.register_profile("ci", derandomize=True, print_blob=True)
_hypothesis_settings.register_profile("long", max_examples=2000, deadline=None)
_hypothesis_settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE")
                                  or ("ci" if needs.in_ci() else "default"))

# Quantized models (byoc_compiler.testing.quantize) are cached by content next to the matrix's cache, so
# every worker and run reuses them; BYOC_QUANTIZED_CACHE set outside wins.

os.environ.setdefault("BYOC_QUANTIZED_CACHE", str(ROOT / "build" / ".quantized-cache"))
# One thread per model run: pytest -n auto already runs a worker per core, and a pool of as many threads
# in every worker would oversubscribe the machine. Tests of the pool set their counts explicitly
# (runtime.load(threads=N), run_runner(threads=N), BYOC_NUM_THREADS in a subprocess's environment).
os.environ.setdefault("BYOC_NUM_THREADS", "1")

# Objects of the runtime and the kernel libraries, compiled once per command for the whole run and shared by
# the workers (backend/compile_link.py): each worker compiling them again for every toolchain and flag set
# was minutes of a run. A directory per run, made before the workers start; BYOC_OBJECT_CACHE set outside wins.
_OBJECT_CACHE_MADE: list = []


def pytest_configure(config):
    if hasattr(config, "workerinput"):
        return
    if not os.environ.get("BYOC_OBJECT_CACHE"):
        _OBJECT_CACHE_MADE.append(tempfile.mkdtemp(prefix="byoc-test-objects-"))
        os.environ["BYOC_OBJECT_CACHE"] = _OBJECT_CACHE_MADE[0]
    _bytecode_for_subprocesses()


def pytest_unconfigure(config):
    for path in _OBJECT_CACHE_MADE:
        shutil.rmtree(path, ignore_errors=True)


# A run spawns hundreds of Pythons (SCons builds, the CLI, fuzz harnesses, reruns). Where the environment forbids
# writing bytecode (PYTHONDONTWRITEBYTECODE, common in containers) each of them compiled byoc's modules from
# source again, about 0.25 s of CPU apiece: they are compiled once here, to the __pycache__ folders Python
# itself writes by default (a prefix tree, PYTHONPYCACHEPREFIX, would hide the installed packages' bytecode).
_COMPILED_DIRS = ("byoc_compiler", "targets", "tests")


def _bytecode_for_subprocesses() -> None:
    if sys.dont_write_bytecode:
        import compileall

        for name in _COMPILED_DIRS:
            compileall.compile_dir(ROOT / name, quiet=2)


# Real-size models (ResNet-50, MobileNetV2 at 224x224) beyond the default run's one case per target:
# deselected (not skipped) unless --realsize is given or the -m expression names them (docs/matrix.md).
# The same for every ONNX conformance case through real builds (onnx_conformance_build).
HEAVY_MARKERS = ("realsize", "int8", "onnx_conformance_build", "literals", "tflite", "timing", "threads",
                 "baremetal", "harness", "package", "every_toolchain", "every_fuzz_target")


def pytest_addoption(parser):
    parser.addoption("--realsize", action="store_true", default=False,
                     help="also run the cases marked realsize (full-size models on every target and toolchain)")
    parser.addoption("--int8", action="store_true", default=False,
                     help="also run the cases marked int8 (every quantized-model build)")


def pytest_collection_modifyitems(config, items):
    markexpr = config.getoption("markexpr") or ""
    waiting = {marker for marker in HEAVY_MARKERS   # heavy cases: only when asked for
               if not (marker in markexpr or (marker in ("realsize", "int8") and config.getoption(marker))
                       or (marker == "every_fuzz_target" and "fuzz" in markexpr))}
    # one pass over each item's markers (12,000 items x 11 markers through get_closest_marker was 2 s per worker)
    heavy = [item for item in items if _waits(item, waiting)]
    if heavy:
        config.hook.pytest_deselected(items=heavy)
        dropped = set(map(id, heavy))
        items[:] = [item for item in items if id(item) not in dropped]
    _long_ones_first(items)


# Single tests of 15-50 s (a fresh clone, 2-vCPU Zen 3): run first, so that no worker starts one as the other
# finishes (pytest-xdist hands out the collection order; a 47 s test drawn last was the run's last 47 s).
LONG_FIRST = ("test_whole_suite_under_sanitizers", "test_concurrent_runs_under_thread_sanitizer",
              "test_realsize_model_builds_runs_and_passes_the_check", "test_batch_through_c")


def _long_ones_first(items) -> None:
    items.sort(key=lambda item: getattr(item, "originalname", item.name) not in LONG_FIRST)  # stable


def _waits(item, waiting: set[str]) -> bool:
    """The matrix marks its bare-metal lanes `baremetal` to select them (`-m baremetal`); its default lanes (one
    small model per target and board) are the default run's bare-metal cases, so only the other tests carrying
    the marker (tests/test_baremetal.py's int8 models) wait for it."""
    names = {mark.name for mark in item.iter_markers()}
    if "matrix" in names:
        names.discard("baremetal")
    return not names.isdisjoint(waiting)


# Bounded fuzz runs (marker `fuzz`; tests/test_fuzz.py, tests/test_target_fuzz.py): the default run gives each
# target a short smoke run (the harness builds with libFuzzer, starts from its seeds and mutates without a
# finding; the seeds and every saved finding also replay in the unmarked regression tests). Naming the
# marker (`pytest -m fuzz`) gives each target its long budget; BYOC_FUZZ_SECONDS wins over both (docs/matrix.md).
FUZZ_SMOKE_SECONDS = 1


@pytest.fixture
def fuzz_seconds(request):
    """budget(long_seconds) -> how many seconds this run fuzzes a target."""
    def budget(long_seconds: int) -> int:
        if os.environ.get("BYOC_FUZZ_SECONDS"):
            return int(float(os.environ["BYOC_FUZZ_SECONDS"]))
        return long_seconds if "fuzz" in (request.config.getoption("markexpr") or "") else FUZZ_SMOKE_SECONDS
    return budget
