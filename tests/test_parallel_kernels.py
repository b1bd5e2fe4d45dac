"""ccompiler's kernels on the runtime's thread pool (byoc/parallel.h): outputs are bit-identical for 1, 2, 3
and 8 threads (the work is split by shape, never by thread count) and match the numpy reference of the
unpartitioned model, which reaches every parallel path (tests/parallel_models.py).
The thread count is set every way a user can: runtime.load(threads=N), runner --threads N
(BuildResult.run_runner(threads=N)) and BYOC_NUM_THREADS; the build option max_threads bounds the
per-thread scratch without changing results.
"""
import ctypes
import functools
import os
import subprocess

import numpy as np
import pytest

from byoc_compiler.backend.build import build
from byoc_compiler.errors import ByocError
from byoc_compiler.runtime.loader import set_num_threads
from parallel_models import every_parallel_path
from byoc_compiler.testing.reference import run_reference
from byoc_compiler.testing.tolerance import assert_close, tolerance_for_module

THREADS = (1, 2, 3, 8)


def _inputs():
    rng = np.random.default_rng(0)
    return [rng.standard_normal(s).astype(np.float32) for s in ((1, 8, 24, 24), (1, 32, 7, 7), (1, 16, 14, 14),
                                                                  (3, 300), (1, 256))]


@functools.lru_cache(maxsize=None)
def _built(max_threads=8):
    mod, ref = every_parallel_path()
    return build(mod, toolchain="gcc", executor="aot", interface="unpacked", max_threads=max_threads), ref


def _run_loaded(lib, threads):
    module = lib.load(threads=threads)
    try:
        for i, x in enumerate(_inputs()):
            module.set_input(i, x)
        module.run()
        return [module.get_output(i) for i in range(module.get_num_outputs())]
    finally:
        module.close()


def test_outputs_are_bit_identical_for_every_thread_count():
    lib, ref = _built()
    assert not lib.metadata["host_kernels"], "every op should run in ccompiler's kernels"
    runs = {n: _run_loaded(lib, n) for n in THREADS}
    expected = run_reference(ref, _inputs())
    rtol, atol = tolerance_for_module(ref, np.float32)
    for k, e in enumerate(expected):
        assert_close(runs[1][k], e, rtol, atol, what=f"output {k} at 1 thread")
        for n in THREADS[1:]:
            assert runs[n][k].tobytes() == runs[1][k].tobytes(), f"output {k}: {n} threads differ from 1 thread"


def test_load_sets_the_pool_size():
    """The count runtime.load gives is the library's (a mutant of byoc_set_num_threads that refused every
    count survived: results are the same at every count, and the loader ignored the refusal)."""
    lib, _ = _built()
    for n in (3, 1):
        module = lib.load(threads=n)
        try:
            module._lib.byoc_get_num_threads.restype = ctypes.c_int32
            assert module._lib.byoc_get_num_threads() == n
        finally:
            module.close()


def test_runner_threads_option_and_environment_agree():
    lib, _ = _built()
    one = _run_loaded(lib, 1)
    via_option = lib.run_runner(_inputs(), threads=3)
    env = dict(os.environ, BYOC_NUM_THREADS="8")
    proc = subprocess.run([str(lib.runner()), "--threads", "0", "x"], capture_output=True, text=True, env=env)
    assert proc.returncode == 2 and "--threads needs an integer in 1..256, got: 0" in proc.stderr
    saved = os.environ.get("BYOC_NUM_THREADS")
    os.environ["BYOC_NUM_THREADS"] = "8"
    try:
        via_env = lib.run_runner(_inputs())
    finally:
        if saved is None:
            del os.environ["BYOC_NUM_THREADS"]
        else:
            os.environ["BYOC_NUM_THREADS"] = saved
    for k in range(len(one)):
        assert via_option[k].tobytes() == one[k].tobytes() and via_env[k].tobytes() == one[k].tobytes()


@pytest.mark.threads
def test_max_threads_bounds_scratch_not_results():
    lib8, _ = _built(8)
    lib1, _ = _built(1)
    assert lib1.metadata["workspace_bytes"] < lib8.metadata["workspace_bytes"]
    assert "BYOC_MAX_THREADS=1" in lib1.metadata["flags"]["defines"]
    want = _run_loaded(lib8, 1)
    got = _run_loaded(lib1, 8)           # eight threads on one slot of scratch: the chunks queue on it
    for k in range(len(want)):
        assert got[k].tobytes() == want[k].tobytes()


@pytest.mark.parametrize("bad", [0, -1, 257, 2.0, True], ids=["zero", "negative", "too-many", "float", "bool"])
def test_bad_max_threads_is_one_message(bad):
    mod, _ = every_parallel_path()
    with pytest.raises(ByocError, match="max_threads must be a whole number in 1..256"):
        build(mod, max_threads=bad)


@pytest.mark.parametrize("bad", [0, -2, 1.5, True], ids=["zero", "negative", "float", "bool"])
def test_bad_load_threads_is_one_message(bad):
    lib, _ = _built()                    # (built, not compiled: both checks come first)
    with pytest.raises(ValueError, match="'m.so': threads must be a whole number of threads >= 1"):
        set_num_threads(None, bad, "m.so")
    with pytest.raises(ByocError, match="run_runner: threads must be a whole number >= 1"):
        lib.run_runner(_inputs(), threads=bad)
