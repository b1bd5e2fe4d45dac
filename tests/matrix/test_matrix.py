"""The differential test matrix: every case built through SCons, its runner's outputs compared with
the numpy reference of the unpartitioned model. Ids read model-targets-toolchain-executor-interface-opt.

Default: a pairwise covering set; `--matrix=full` the whole product; `-m aarch64`, `-m ccompiler`, ... pick
by toolchain or target. See docs/matrix.md.
"""
from __future__ import annotations

import shutil

import pytest

import matrix_harness as h


def test_model(matrix_case, matrix_config, matrix_cache, reproducer_dir, runnable, tmp_path, record_property):
    runnable(matrix_case)
    outcome = h.run_case(matrix_case, tmp_path, matrix_cache, matrix_config)
    record_property("margin", outcome.margin)      # the summary prints the largest per toolchain
    if not outcome.passed and matrix_case.model.startswith("random"):
        path = h.shrink_failure(matrix_case, tmp_path / "shrink", matrix_cache, matrix_config, reproducer_dir)
        outcome.message += f"\n  shrunk reproducer: {path} (scons model={path})"
    if not outcome.passed:
        pytest.fail(outcome.message, pytrace=False)
    shutil.rmtree(tmp_path / "project", ignore_errors=True)   # a passing build's files are not needed


def test_default_run_covers_every_pair(matrix_config):
    cases = h.default_cases(matrix_config)
    assert h.covers_all_pairs(cases, matrix_config) == []
    assert len({c.id for c in cases}) == len(cases)
    if any(tc.sanitizer for tc in matrix_config.toolchains.values()):
        # each model with the target sets sanitized_target_sets gives it; every target set meets at least
        # one zoo model and one random graph under a sanitizer
        sanitized = {(c.model, c.target_set) for c in cases if matrix_config.toolchain(c.toolchain).sanitizer}
        assert sanitized >= {(m, t) for m in h.model_names() for t in h.sanitized_target_sets(m)}
        randoms = set(h.random_model_names())
        for target_set in h.SANITIZER_TARGET_SETS:
            models = {m for m, t in sanitized if t == target_set}
            assert models - randoms and models & randoms, (target_set, sorted(models))


def test_reduced_real_architectures_run_on_qemu_lanes(matrix_config):
    """ResNet-50 and MobileNetV2 at reduced width on foreign CPUs; ResNet on big-endian s390x by default."""
    default = {(c.model, c.toolchain) for c in h.default_cases(matrix_config)}
    assert ("resnet50_tiny", "s390x-gcc") in default
    assert {m for m, _ in default} >= set(h.REDUCED_MODELS)
    qemu = {n for n, tc in matrix_config.toolchains.items() if tc.run and not tc.freestanding}
    full = {(c.model, c.toolchain) for c in h.full_cases(matrix_config)
            if c.model in h.REDUCED_MODELS and c.toolchain in h.hosted_toolchains(matrix_config)}
    assert full == {(m, t) for m in h.REDUCED_MODELS for t in qemu}


def test_quantized_models_run_on_every_foreign_cpu_by_default(matrix_config):
    """int8 models on big-endian s390x and each little-endian qemu CPU, and under a sanitizer, by default;
    `--int8` adds every quantized model on every toolchain with host and ccompiler."""
    default = [c for c in h.default_cases(matrix_config) if c.model in h.QUANTIZED_MODELS]
    qemu = {n for n, tc in matrix_config.toolchains.items() if tc.run and not tc.freestanding}
    assert {c.toolchain for c in default} >= qemu
    assert ("resnet50_tiny_int8", "s390x-gcc") in {(c.model, c.toolchain) for c in default}
    assert any(matrix_config.toolchain(c.toolchain).sanitizer for c in default)
    assert {c.model for c in default} == set(h.QUANTIZED_MODELS)
    wider = h.quantized_cases(matrix_config, "int8")
    assert {(c.model, c.target_set, c.toolchain) for c in wider + default} == {
        (m, t, tc) for m in h.QUANTIZED_MODELS for t in h.INT8_TARGET_SETS for tc in h.hosted_toolchains(matrix_config)}
    assert not {c.id for c in wider} & {c.id for c in default}


def test_bare_metal_lanes_run_every_freestanding_target_set(matrix_config):
    """Each bare-metal lane builds AOT + unpacked with every target set that has a freestanding profile, by
    default; the hosted-only ones are excluded with their reason (named in the run's summary)."""
    lanes = [n for n, tc in matrix_config.toolchains.items() if tc.freestanding]
    default = [c for c in h.default_cases(matrix_config) if c.toolchain in lanes]
    assert {(c.target_set, c.toolchain) for c in default} == {("host", tc) for tc in lanes} | {
        ("ccompiler", tc) for tc in lanes}
    assert {(c.executor, c.interface) for c in default} <= {("aot", "unpacked")}
    for tc in lanes:
        for target_set in ("examplejson", "both"):
            assert "runs only on a hosted runtime" in h.excluded(target_set, tc, matrix_config)
        for target_set in ("dnnl", "dnnl_ccompiler"):      # its CPU (x86-64) rules it out first
            assert h.excluded(target_set, tc, matrix_config)


def test_quantized_outputs_are_checked_to_less_than_one_step():
    """The check's allowance on a quantized model's (dequantized) output is far below one int8 step: an
    output one step off fails, the reference itself passes."""
    import numpy as np

    from byoc_compiler.check import deterministic_inputs, expected_outputs
    from byoc_compiler.load import load_model
    from byoc_compiler.testing.quantize import output_step, quantized_zoo_model
    from byoc_compiler.testing.tolerance import compare_with_bounds

    path = quantized_zoo_model("tiny_cnn", "qdq", per_channel=True)
    mod = load_model(str(path))
    (want,) = expected_outputs(mod, deterministic_inputs(mod))
    got = np.asarray(want.value, np.float32).copy()
    assert compare_with_bounds([got], [want]).passed
    got.flat[got.size // 2] += np.float32(output_step(path))
    assert not compare_with_bounds([got], [want]).passed


@pytest.mark.parametrize("case_id, toolchain", [
    ("mlp-ccompiler-aarch64_gcc-aot-unpacked-O3", "aarch64-gcc"),
    ("random11-both-gcc_asan_ubsan-graph-packed-O0", "gcc-asan-ubsan"),
    ("byoc_guide-host-gcc-graph-packed-O0", "gcc"),
])
def test_case_ids_name_their_toolchain(matrix_config, case_id, toolchain):
    assert h.toolchain_of_id(case_id, matrix_config) == toolchain


FUZZ_LANES = 2   # one per CI core: `-n 2` runs both lanes at once


@pytest.mark.parametrize("lane", range(FUZZ_LANES), ids=[f"lane{i}" for i in range(FUZZ_LANES)])
def test_fuzz(lane, pytestconfig, matrix_config, matrix_cache, reproducer_dir, tmp_path):
    """`--fuzz-minutes N`: random graphs on rotating targets/toolchains for N minutes; failures shrunk and saved."""
    import itertools
    import time

    minutes = pytestconfig.getoption("fuzz_minutes")   # > 0: the plugin deselects these lanes otherwise
    toolchains = [n for n in h.hosted_toolchains(matrix_config) if h.toolchain_problem(matrix_config, n) is None]
    target_sets = [t for t, v in h.TARGET_SETS.items() if h.target_problem(v) is None]
    first_seed = int(time.time()) * 10 + lane * 1_000_003   # new graphs every run; the seed is in each id
    deadline = time.monotonic() + minutes * 60
    failures = []
    for n in itertools.count():
        if time.monotonic() > deadline:
            break
        seed = first_seed + n
        case = h.Case(f"random{seed}", target_sets[n % len(target_sets)], toolchains[(n // 2) % len(toolchains)],
                      h.EXECUTORS[n % 2], h.INTERFACES[(n // 3) % 2], h.OPTS[(n // 5) % 2])
        outcome = h.run_case(case, tmp_path / str(n), matrix_cache, matrix_config)
        if outcome.passed:
            shutil.rmtree(tmp_path / str(n), ignore_errors=True)
        else:
            path = h.shrink_failure(case, tmp_path / f"{n}-shrink", matrix_cache, matrix_config, reproducer_dir)
            failures.append(f"{outcome.message}\n  shrunk reproducer: {path}")
    if failures:
        pytest.fail(f"{len(failures)} random graph(s) failed:\n" + "\n".join(failures), pytrace=False)


def test_builds_at_once_share_one_cache(matrix_config, runnable, tmp_path):
    """Two builds of a case at once over one fresh CacheDir both pass; a third build compiles nothing."""
    from concurrent.futures import ThreadPoolExecutor

    case = h.Case("byoc_guide", "ccompiler", "gcc", "graph", "packed", "-O0")
    runnable(case)
    cache = tmp_path / "cache"
    with ThreadPoolExecutor(2) as pool:
        outcomes = list(pool.map(lambda i: h.run_case(case, tmp_path / f"run{i}", cache, matrix_config), range(2)))
    assert [o.passed for o in outcomes] == [True, True], [o.message for o in outcomes]
    project = h.make_project(tmp_path / "run3")
    built = h.build(case, h.model_spec(case.model, project), project, cache)
    assert built.returncode == 0, built.output
    assert "Retrieved" in built.output and "compile " not in built.output, built.output
