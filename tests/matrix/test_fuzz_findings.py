"""Reproducers the fuzzer (`--fuzz-minutes`) found, shrunk, kept as regression cases.

Each is a small text-IR model built for a target set and checked like a matrix case.
"""
from __future__ import annotations

import pytest

import matrix_harness as h

# ceil_mode pools whose window is larger than the input (output size 1): valid Relay, the host runs them.
POOL_WINDOW_LARGER_THAN_INPUT = """\
def @main(%x0: Tensor[(1, 1, 1, 5), float32], %x1: Tensor[(2, 3, 1, 3), float32]) {
  %0 = nn.max_pool2d(%x0, pool_size=[2, 1], strides=[2, 1], ceil_mode=True);
  %1 = nn.avg_pool2d(%x1, pool_size=[2, 1], strides=[2, 2], ceil_mode=True);
  (%0, %1)
}
"""

FINDINGS = [
    pytest.param("pool_window_larger_than_input", POOL_WINDOW_LARGER_THAN_INPUT, "host", id="pool_ceil-host"),
    pytest.param("pool_window_larger_than_input", POOL_WINDOW_LARGER_THAN_INPUT, "ccompiler", id="pool_ceil-ccompiler"),
    pytest.param("pool_window_larger_than_input", POOL_WINDOW_LARGER_THAN_INPUT, "examplejson",
                 id="pool_ceil-examplejson"),
]


@pytest.mark.parametrize("name, text, target_set", FINDINGS)
def test_fuzz_finding(name, text, target_set, matrix_config, matrix_cache, runnable, tmp_path):
    case = h.Case(name, target_set, "gcc", "graph", "packed", "-O0")
    runnable(case)
    project = h.make_project(tmp_path)
    (project / "models").mkdir()
    spec = f"models/{name}.txt"
    (project / spec).write_text(text)
    built = h.build(case, spec, project, matrix_cache)
    outcome = h.check(case, spec, built, matrix_config, tmp_path)
    assert outcome.passed, outcome.message
