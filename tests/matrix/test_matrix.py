"""The differential test matrix: every case built through SCons, its runner's outputs compared with
the numpy reference of the unpartitioned model. Ids read model-targets-toolchain-executor-interface-opt.

Default: a pairwise covering set; `--matrix=full` the whole product; `-m aarch64`, `-m ccompiler`, ... pick
by toolchain or target. See docs/matrix.md.
"""
from __future__ import annotations

import pytest

import matrix_harness as h


def test_model(matrix_case, matrix_config, matrix_cache, reproducer_dir, runnable, tmp_path):
    runnable(matrix_case)
    outcome = h.run_case(matrix_case, tmp_path, matrix_cache, matrix_config)
    if not outcome.passed and matrix_case.model.startswith("random"):
        path = h.shrink_failure(matrix_case, tmp_path / "shrink", matrix_cache, matrix_config, reproducer_dir)
        outcome.message += f"\n  shrunk reproducer: {path} (scons model={path})"
    if not outcome.passed:
        pytest.fail(outcome.message, pytrace=False)


def test_default_run_covers_every_pair(matrix_config):
    cases = h.default_cases(matrix_config)
    assert h.covers_all_pairs(cases, matrix_config) == []
    assert len({c.id for c in cases}) == len(cases)


@pytest.mark.parametrize("case_id, toolchain", [
    ("mlp-ccompiler-aarch64_gcc-aot-unpacked-O3", "aarch64-gcc"),
    ("random11-both-gcc_asan_ubsan-graph-packed-O0", "gcc-asan-ubsan"),
    ("byoc_guide-host-gcc-graph-packed-O0", "gcc"),
])
def test_case_ids_name_their_toolchain(matrix_config, case_id, toolchain):
    assert h.toolchain_of_id(case_id, matrix_config) == toolchain
