"""ONNX's own node conformance cases (onnx.backend.test.case.node, generated in memory) through byoc.

Every in-scope case (tests/onnx_conformance.py) is imported with from_onnx and run through the
numpy reference, compared with the outputs ONNX ships with the case. The allow-list
(onnx_conformance_refused.txt) names each refused case and why; it only shrinks. Every passing case is
also built as C and run in the default run, host-only and through ccompiler where it takes an op, on gcc:
batched, a few hundred cases' graphs side by side in one library (test_batch_through_c). Each case built
alone, and the batches on clang, run with `-m onnx_conformance_build` (docs/matrix.md).
"""
from __future__ import annotations

import numpy as np
import pytest

import needs

import onnx_conformance as conformance

ACCEPTANCE = 0.98          # share of in-scope cases that must pass through the reference


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


# A case per kernel family ccompiler took last (reductions, resize nearest and linear): each must land in a
# ccompiler region (checked in the default run), so the batched ccompiler builds do build those kernels.
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
        for target in TARGETS:
            for cc in COMPILERS:
                marks = (pytest.mark.onnx_conformance_build,)      # the default run builds them batched
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


# ---- every passing case built as C, in few builds ---------------------------------------------------------

BATCHES = 6                 # builds per target and compiler: a few hundred cases' functions in one library
DEFAULT_COMPILER = "gcc"    # the default run; the other compilers behind -m onnx_conformance_build
_UNITS = conformance.split_batches(conformance.passing_units(), BATCHES)


def _batch_id(units) -> str:
    first, last = (conformance.op_family(_BY_NAME[name]).split("+")[0] for name, _ in (units[0], units[-1]))
    return f"{first}..{last}"


def _batch_params():
    return [pytest.param(i, cc, id=f"{cc}-{i + 1}of{BATCHES}-{_batch_id(units)}",
                         marks=() if cc == DEFAULT_COMPILER else (pytest.mark.onnx_conformance_build,))
            for cc in COMPILERS for i, units in enumerate(_UNITS)]


def _offloaded(unit, targets) -> bool:
    from byoc_compiler import partition_for

    mod, _ = conformance.import_case(_BY_NAME[unit[0]], _BY_NAME[unit[0]].data_sets[unit[1]])
    return any(f.attrs.get("Compiler") in targets for f in partition_for(list(targets), mod).functions.values())


def _build_batch(units, target, cc):
    from byoc_compiler import partition_for
    from byoc_compiler.backend.build import build

    mod, feeds, slices = conformance.batch_module(units)
    part = partition_for(list(TARGETS[target]), mod) if TARGETS[target] else mod
    # -O0: these builds check each op's meaning (a few hundred cases per library; -O0 halves the compile),
    # optimized builds of whole models are the matrix's (-O0 and -O3 on every compiler)
    loaded = build(part, toolchain=cc, opt="-O0").load(werror=True)
    return loaded, feeds, slices


def _unbuildable(units, target, cc) -> list[str]:
    """The units that do not build, each with its error, found by halving (only after a batch failed)."""
    try:
        _build_batch(units, target, cc)
        return []
    except Exception as exc:  # noqa: BLE001 - any build error names its case
        if len(units) == 1:
            return [f"{units[0][0]} (data set {units[0][1]}) does not build for {target} with {cc}: "
                    + " ".join(str(exc).split())[:400]]
    half = len(units) // 2
    return _unbuildable(units[:half], target, cc) + _unbuildable(units[half:], target, cc)


def _batch_failures(units, target, cc) -> list[str]:
    try:
        loaded, feeds, slices = _build_batch(units, target, cc)
    except Exception:  # noqa: BLE001 - the halving search names the cases and their errors
        return _unbuildable(units, target, cc) or [f"the batch of {len(units)} cases does not build for {target} "
                                                   f"with {cc}, though each of its halves does"]
    for key, value in feeds.items():
        loaded.set_input(key, value)
    loaded.run()
    got = [loaded.get_output(i) for i in range(loaded.get_num_outputs())]
    failures = []
    for (name, index), where in zip(units, slices):
        try:
            with np.errstate(all="ignore"):
                conformance.assert_matches(_BY_NAME[name], got[where], _BY_NAME[name].data_sets[index][1],
                                           f"{name} (data set {index}) built for {target} with {cc}")
        except AssertionError as exc:
            failures.append(" ".join(str(exc).split())[:600])
    return failures


@pytest.mark.parametrize("batch,cc", _batch_params())
def test_batch_through_c(batch, cc):
    """Every passing case built and run as C: host-only, and through ccompiler where it takes an op."""
    needs.programs(cc)
    failures = []
    for target, targets in TARGETS.items():
        units = [u for u in _UNITS[batch] if not targets or _offloaded(u, targets)]
        failures += _batch_failures(units, target, cc)
    assert not failures, f"{len(failures)} cases differ from ONNX's outputs:\n" + "\n".join(failures)


def test_batches_hold_every_passing_case_once():
    units = [u for batch in _UNITS for u in batch]
    assert sorted(units) == sorted((c.name, k) for c in _BY_NAME.values() if c.name not in _REFUSED
                                   for k in range(len(c.data_sets)))
    assert len(units) == len(set(units))
