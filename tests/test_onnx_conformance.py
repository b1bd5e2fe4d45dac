"""ONNX's own node conformance cases (onnx.backend.test.case.node, generated in memory) through byoc.

Every in-scope case (tests/onnx_conformance.py) is imported with from_onnx and run through the
numpy reference, compared with the outputs ONNX ships with the case. The allow-list
(onnx_conformance_refused.txt) names each refused case and why; it only shrinks. A sample of the
passing cases is also partitioned, built and run (host-only and ccompiler, gcc and clang); all of
them run with `-m onnx_conformance_build` (docs/matrix.md).
"""
from __future__ import annotations

import zlib

import numpy as np
import pytest

import needs

import onnx_conformance as conformance

ACCEPTANCE = 0.98          # share of in-scope cases that must pass through the reference
SAMPLE_MODULO = 97         # the default run builds the passing cases whose crc32(name) % this == 0


def _names() -> list[str]:
    return [c.name for c in conformance.scoped_cases()]


_BY_NAME = {c.name: c for c in conformance.scoped_cases()}
_REFUSED = conformance.allow_list()


@pytest.mark.parametrize("name", _names())
def test_case_through_reference(name):
    case = _BY_NAME[name]
    why = conformance.refusal_reason(case)
    if name in _REFUSED:
        assert why is not None, f"{name} passes now: delete its line from {conformance.ALLOW_LIST.name}"
    else:
        assert why is None, f"{name} fails: {why}"


def test_allow_list_names_in_scope_cases_with_reasons():
    unknown = [n for n in _REFUSED if n not in _BY_NAME]
    assert not unknown, f"not an in-scope conformance case: {unknown}"
    assert all(reason for reason in _REFUSED.values())


def test_acceptance_share_passes():
    total = len(_BY_NAME)
    passing = total - len(_REFUSED)
    assert total > 500, f"only {total} cases in scope: the op table or the case collection shrank"
    assert passing / total >= ACCEPTANCE, f"{passing} of {total} in-scope cases pass ({passing / total:.1%})"


# ---- through real builds --------------------------------------------------------------------------

COMPILERS = needs.compilers()   # config.toml's [build] toolchains: a missing one skips, or fails in CI
TARGETS = {"host": (), "ccompiler": ("ccompiler",)}


# (case, compiler) -> why its build fails today: strict xfails, so a fix shows up as a failure to delete.
# (Empty: the clang -Wunused-function failure of test_qlinearmatmul_2D_int8_float32 was fixed in the qnn host C.)
BUILD_KNOWN_FAILURES: dict[tuple[str, str], str] = {}


# Built for ccompiler in the default run too, beside the crc32 sample: a case per kernel family the target
# took last (reductions, resize nearest and linear), so each is built from ONNX on gcc and clang.
CCOMPILER_SAMPLE = {
    "test_reduce_mean_keepdims_random": "mean",
    "test_resize_upsample_sizes_nearest_round_prefer_ceil_asymmetric": "image.resize",
    "test_resize_downsample_scales_linear_align_corners": "image.resize",
}


def _build_params():
    params = []
    for name in _names():
        if name in _REFUSED:
            continue
        crc_sampled = zlib.crc32(name.encode()) % SAMPLE_MODULO == 0
        for target in TARGETS:
            sampled = crc_sampled or (target == "ccompiler" and name in CCOMPILER_SAMPLE)
            for cc in COMPILERS:
                marks = () if sampled else (pytest.mark.onnx_conformance_build,)
                known = BUILD_KNOWN_FAILURES.get((name, cc))
                if known:
                    marks = (*marks, pytest.mark.xfail(reason=known, strict=True))
                params.append(pytest.param(name, target, cc, id=f"{name}-{target}-{cc}", marks=marks))
    return params


@pytest.mark.parametrize("name,target,cc", _build_params())
def test_case_through_build(name, target, cc):
    needs.programs(cc)
    from byoc_compiler import partition_for
    from byoc_compiler.backend.build import build

    case = _BY_NAME[name]
    for data_set in case.data_sets:
        mod, feeds = conformance.import_case(case, data_set)
        part = partition_for(list(TARGETS[target]), mod) if TARGETS[target] else mod
        loaded = build(part, toolchain=cc).load(werror=True)
        for key, value in feeds.items():
            loaded.set_input(key, value)
        loaded.run()
        got = [loaded.get_output(i) for i in range(loaded.get_num_outputs())]
        with np.errstate(all="ignore"):
            conformance.assert_matches(case, got, data_set[1], f"{name} built for {target} with {cc}")


@pytest.mark.parametrize("name", list(CCOMPILER_SAMPLE))
def test_ccompiler_sample_offloads_its_op(name):
    """The ccompiler sample builds what it is there for: its op lands in a ccompiler region."""
    from byoc_compiler import partition_for
    from byoc_compiler.ir import post_order

    case = _BY_NAME[name]
    assert name not in _REFUSED
    mod, _ = conformance.import_case(case, case.data_sets[0])
    part = partition_for(["ccompiler"], mod)
    offloaded = {n.op.name for f in part.functions.values() if f.attrs.get("Compiler") == "ccompiler"
                 for n in post_order(f.body) if hasattr(getattr(n, "op", None), "name")}
    assert CCOMPILER_SAMPLE[name] in offloaded, f"{name}: {CCOMPILER_SAMPLE[name]} stayed on the host"
