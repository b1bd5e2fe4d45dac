"""Instances and threads (docs/runtime-abi.md, "Instances and threads"): every Module owns an instance --
its arena or graph storage, every region's workspace, its target modules -- so two different models and two
instances of one model run concurrently from Python threads with the results of runs alone; and the same,
with the C library and a C driver built under ThreadSanitizer, without a single report."""
from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path

import numpy as np
import pytest

import needs
from byoc_compiler import partition_for, runtime, zoo
from byoc_compiler.backend.build import build
from parallel_models import every_parallel_path
from byoc_compiler.testing.reference import run_reference
from byoc_compiler.testing.tolerance import assert_close, tolerance_for_module

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

# (model, targets, executor, interface): C regions with a workspace, blob (ExampleJSON) modules, both executors
MODELS = [("small_cnn", ("ccompiler",), "graph", "packed"),
          ("residual_block", ("ccompiler", "examplejson"), "aot", "unpacked"),
          ("multi_output", ("examplejson",), "graph", "unpacked"),
          ("mlp", ("ccompiler",), "aot", "packed")]
ITERATIONS = 25


def _build(name, targets, executor, interface, toolchain="gcc", config=None):
    return build(partition_for(list(targets), zoo.get(name)), toolchain=toolchain, executor=executor,
                 interface=interface, config=config)


def _inputs(name: str, salt: int) -> dict:
    rng = np.random.default_rng(salt)
    return {k: rng.standard_normal(v.shape).astype(v.dtype) for k, v in zoo.inputs(name).items()}


def _run(module, inputs: dict) -> list[np.ndarray]:
    for k, v in inputs.items():
        module.set_input(k, v)
    module.run()
    return [module.get_output(i) for i in range(module.get_num_outputs())]


def test_instances_run_concurrently_from_python_threads(tmp_path):
    libs = {m: _build(*m).export_library(tmp_path / f"{m[0]}-{m[2]}.so", werror=True) for m in MODELS}
    salts = range(3)
    # the runs alone, each checked against the reference of the unpartitioned model (an independent result)
    alone = {}
    for m, path in libs.items():
        single = runtime.load(path)
        for salt in salts:
            inputs = _inputs(m[0], salt)
            alone[m, salt] = _run(single, inputs)
            for k, (got, want) in enumerate(zip(alone[m, salt], run_reference(zoo.get(m[0]), inputs))):
                rtol, atol = tolerance_for_module(zoo.get(m[0]), want.dtype)
                assert_close(got, want, rtol, atol, what=f"{m[0]} output {k}")
        single.close()
    # two instances of every model, all running at once, each library's pool at 3 threads (above the cores)
    workers = [(m, runtime.load(path, threads=3)) for m, path in libs.items() for _ in range(2)]
    assert len({w._instance.value for _, w in workers}) == len(workers)  # every Module its own instance
    start = threading.Barrier(len(workers))
    problems: list[str] = []

    def work(m, module):
        start.wait()
        for it in range(ITERATIONS):
            salt = it % len(salts)
            for k, (got, want) in enumerate(zip(_run(module, _inputs(m[0], salt)), alone[m, salt])):
                if not np.array_equal(got, want):
                    problems.append(f"{m}: iteration {it}, output {k} differs from the run alone")

    threads = [threading.Thread(target=work, args=w) for w in workers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not problems, "\n".join(problems[:10])


def test_one_module_is_safe_to_share_between_threads(tmp_path):
    """One instance runs one call at a time (the Module's lock): sharing it is safe, just not parallel."""
    path = _build(*MODELS[0]).export_library(tmp_path / "m.so")
    module = runtime.load(path)
    want = _run(module, _inputs("small_cnn", 0))
    results = []

    def work():
        for _ in range(10):
            module.run()
            results.append(module.get_output(0))

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 30 and all(np.array_equal(r, want[0]) for r in results)


TSAN_TOOLCHAIN = """
[toolchains.gcc-tsan]
cc = "gcc"
arch = "x86_64"
cflags = ["-std=c99", "-fPIC", "-g", "-O1", "-fsanitize=thread"]
ldflags = ["-fsanitize=thread", "-lm"]
sanitizer = true
"""


def test_concurrent_runs_under_thread_sanitizer(tmp_path):
    """Two instances of each of four models (both executors, both interfaces, C-source and blob regions)
    run at once in a C driver, everything built with -fsanitize=thread: zero reports, equal results."""
    needs.programs("gcc")
    from byoc_compiler.runtime import include_flags

    config = tmp_path / "config.toml"
    config.write_text((ROOT / "config.toml").read_text() + TSAN_TOOLCHAIN)
    libs = [_build(*m, toolchain="gcc-tsan", config=str(config)).export_library(
        tmp_path / f"{m[0]}-{m[2]}-{m[3]}.so", werror=True) for m in MODELS]
    # + a model whose every kernel splits its work on the pool (tests/parallel_models.py)
    libs.append(build(every_parallel_path()[0], toolchain="gcc-tsan", executor="aot", interface="unpacked",
                      config=str(config)).export_library(tmp_path / "parallel.so", werror=True))
    # + an int8 model wholly in ccompiler's int8 kernels (the channels-last convolutions on an AVX512-VNNI CPU)
    from byoc_compiler.frontend import from_onnx
    from byoc_compiler.testing.quantize import quantized_zoo_model
    int8 = from_onnx(str(quantized_zoo_model("resnet50_tiny", "qdq", True, tmp_path)))
    libs.append(build(partition_for("ccompiler", int8), toolchain="gcc-tsan", executor="aot", interface="unpacked",
                      config=str(config)).export_library(tmp_path / "int8.so", werror=True))
    driver = tmp_path / "concurrent_runs"
    from byoc_compiler.runtime import source_dir

    compile_cmd = ["gcc", "-std=c99", "-g", "-O1", "-Wall", "-Wextra", "-Werror", "-fsanitize=thread", *include_flags(),
                   str(HERE / "threads" / "concurrent_runs.c"), str(source_dir() / "runtime.c"),
                   str(source_dir() / "parallel.c"), "-o", str(driver),
                   "-pthread", "-ldl", "-lm"]
    proc = subprocess.run(compile_cmd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    # three threads per pool: above this machine's core count; every library has a pool of its own
    env = {**os.environ, "TSAN_OPTIONS": "halt_on_error=1:exitcode=66:second_deadlock_stack=1",
           "BYOC_NUM_THREADS": "3"}
    proc = subprocess.run([driver, "20", *map(str, libs)], capture_output=True, text=True, env=env, timeout=900)
    assert "ThreadSanitizer" not in proc.stderr, proc.stderr[-6000:]
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert f"{2 * len(libs)} instances of {len(libs)} models, 20 runs each: all equal to the runs alone" in proc.stdout


def test_thread_pool_alone_under_thread_sanitizer(tmp_path):
    """The pool itself (tests/threads/pool_stress.c): two callers at once, nested calls, chunks on slots,
    1, 2, 3 and 8 threads (above the core count), a fork after the pool started: zero reports."""
    needs.programs("gcc")
    from byoc_compiler.runtime import include_flags, source_dir

    driver = tmp_path / "pool_stress"
    compile_cmd = ["gcc", "-std=c99", "-g", "-O1", "-Wall", "-Wextra", "-Werror", "-fsanitize=thread",
                   *include_flags(), str(HERE / "threads" / "pool_stress.c"), str(source_dir() / "parallel.c"),
                   str(source_dir() / "runtime.c"), "-o", str(driver), "-pthread"]
    proc = subprocess.run(compile_cmd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    # die_after_fork=0: the child only runs the pool's own threads, which it starts afresh
    env = {**os.environ, "TSAN_OPTIONS": "halt_on_error=1:exitcode=66:die_after_fork=0"}
    proc = subprocess.run([driver], capture_output=True, text=True, env=env, timeout=300)
    assert "ThreadSanitizer" not in proc.stderr, proc.stderr[-6000:]
    assert proc.returncode == 0 and "pool_stress: ok" in proc.stdout, proc.stderr[-4000:]
