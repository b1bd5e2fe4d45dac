"""ONNX's node conformance cases (onnx.backend.test.case.node), generated in memory, run through byoc.

A case is in scope when every node's op definition (op type and the since_version its opset selects)
is one byoc imports (`supported_ops()`) and every graph input and output has an element type byoc
has a dtype for; the rest are counted, not run.

byoc needs shapes, axes, pads, scales and the like at import time, while many cases pass them as
graph inputs: `import_case` binds such an input as a constant (an initializer holding the case's own
data) when the importer names it as one that must be computable at import time (every integer input
when the value named is computed from inputs), and imports again.

ALLOW_LIST (onnx_conformance_refused.txt) names every in-scope case that does not pass, with its
reason; it only shrinks: a listed case that passes and an unlisted case that fails are both failures.
"""
from __future__ import annotations

import fcntl
import functools
import os
import pickle
import re
import warnings
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

from byoc_compiler.frontend import from_onnx
from byoc_compiler.testing.side_by_side import join
from byoc_compiler.frontend.onnx import OnnxUnsupportedError, supported_ops

ALLOW_LIST = Path(__file__).resolve().parent / "onnx_conformance_refused.txt"
_MUST_BE_CONSTANT = re.compile(r"input \d+ \([^)]*'([^']*)'\) must be computable at import time")


def _generate_cases() -> tuple:
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return tuple(c for c in collect_testcases(None) if c.kind == "node")


@functools.lru_cache(maxsize=None)
def all_cases() -> tuple:
    """ONNX's node cases. Generating them runs ONNX's reference for each (7 s of CPU, most of it 3-D pooling) at
    collection, in every worker: a test run (BYOC_OBJECT_CACHE, tests/conftest.py) generates them once and the
    other workers read the pickle this run wrote."""
    cache = os.environ.get("BYOC_OBJECT_CACHE")
    if not cache:
        return _generate_cases()
    path = Path(cache) / f"onnx-{onnx.__version__}-node-cases.pickle"
    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if path.exists():
            return pickle.loads(path.read_bytes())
        cases = _generate_cases()
        path.with_suffix(".part").write_bytes(pickle.dumps(cases, protocol=pickle.HIGHEST_PROTOCOL))
        os.replace(path.with_suffix(".part"), path)
        return cases


def _elem_types(case) -> set[int]:
    types = set()
    for value in [*case.model.graph.input, *case.model.graph.output]:
        if not value.type.HasField("tensor_type"):
            types.add(-1)
        else:
            types.add(value.type.tensor_type.elem_type)
    return types


def _opset(case) -> int:
    return next((o.version for o in case.model.opset_import if o.domain in ("", "ai.onnx")), 0)


def in_scope(case) -> bool:
    from byoc_compiler.frontend.onnx.dtypes import INPUT_DTYPES
    from byoc_compiler.frontend.onnx.table import since_version

    ops, opset = supported_ops(), _opset(case)
    return all(n.domain in ("", "ai.onnx") and since_version(n.op_type, opset) in ops.get(n.op_type, ())
               for n in case.model.graph.node) and _elem_types(case) <= set(INPUT_DTYPES)


@functools.lru_cache(maxsize=None)
def scoped_cases() -> tuple:
    return tuple(c for c in all_cases() if in_scope(c))


@functools.lru_cache(maxsize=None)
def by_name() -> dict:
    return {c.name: c for c in scoped_cases()}


def allow_list() -> dict[str, str]:
    """case name -> the reason it is refused."""
    out = {}
    for line in ALLOW_LIST.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            name, _, reason = line.partition(":")
            out[name.strip()] = reason.strip()
    return out


def _freeze(model: onnx.ModelProto, names: set[str], feeds: dict) -> onnx.ModelProto:
    frozen = onnx.ModelProto()
    frozen.CopyFrom(model)
    keep = [i for i in frozen.graph.input if i.name not in names]
    del frozen.graph.input[:]
    frozen.graph.input.extend(keep)
    for name in sorted(names):
        frozen.graph.initializer.append(numpy_helper.from_array(np.asarray(feeds[name]), name))
    return frozen


def feeds_of(case, data_set) -> dict:
    inputs, _ = data_set
    return {i.name: numpy_helper.to_array(v) if isinstance(v, onnx.TensorProto) else np.asarray(v)
            for i, v in zip(case.model.graph.input, inputs)}


def import_case(case, data_set):
    """(IRModule, the feeds main takes) of one data set of `case`."""
    if by_name().get(case.name) is case:
        return _import_cached(case.name, next(k for k, d in enumerate(case.data_sets) if d is data_set))
    return _import(case, data_set)


@functools.lru_cache(maxsize=None)
def _import_cached(name: str, index: int):
    # The reference cases and the batched builds in one worker import a case once (modules are values).
    case = by_name()[name]
    return _import(case, case.data_sets[index])


def _import(case, data_set):
    feeds = feeds_of(case, data_set)
    frozen: set[str] = set()
    model = case.model
    while True:
        try:
            mod = from_onnx(model)
            break
        except OnnxUnsupportedError as exc:
            named = {m for p in exc.problems for m in _MUST_BE_CONSTANT.findall(p.reason)}
            names = named & set(feeds)
            if named and not names:      # computed from inputs: bind the integer ones (shapes, indices)
                names = {k for k, v in feeds.items() if v.dtype.kind in "iu"}
            if not names or names <= frozen:
                raise
            frozen |= names
            model = _freeze(case.model, frozen, feeds)
    return mod, {p.name_hint: feeds[p.name_hint] for p in mod["main"].params}


def assert_matches(case, got, want, what: str) -> None:
    assert len(got) == len(want), f"{what}: {len(got)} outputs, ONNX expects {len(want)}"
    for k, (g, w) in enumerate(zip(got, want)):
        w = numpy_helper.to_array(w) if isinstance(w, onnx.TensorProto) else np.asarray(w)
        g = np.asarray(g)
        assert g.shape == w.shape, f"{what} output {k}: shape {g.shape}, ONNX expects {w.shape}"
        if w.dtype.kind in "fc":
            np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=max(case.rtol, 1e-4),
                                       atol=max(case.atol, 1e-5), err_msg=f"{what} output {k}")
        else:
            np.testing.assert_array_equal(g, w, err_msg=f"{what} output {k}")


# ---- many cases in one build -------------------------------------------------------------------------
# Building each case alone costs a compile and a link per case; the batched builds put many cases' graphs
# side by side in one main, so one library holds a hundred cases' functions.

def passing_units() -> list[tuple[str, int]]:
    """(case name, data-set index) of every passing in-scope case, ordered by op types so that a batch is
    an op family (and its id reads as one)."""
    refused = allow_list()
    cases = sorted((c for c in scoped_cases() if c.name not in refused), key=lambda c: (op_family(c), c.name))
    return [(c.name, k) for c in cases for k in range(len(c.data_sets))]


def op_family(case) -> str:
    return "+".join(n.op_type for n in case.model.graph.node)


def split_batches(units: list, count: int) -> list[list]:
    """`units` cut into `count` consecutive runs of nearly equal length."""
    size, extra = divmod(len(units), count)
    out, start = [], 0
    for i in range(count):
        end = start + size + (i < extra)
        out.append(units[start:end])
        start = end
    return out


def batch_module(units: list[tuple[str, int]]):
    """(IRModule, feeds, output slices): the units' mains side by side in one main (testing/side_by_side.py):
    unit i's inputs are renamed u<i>_<name>, its outputs are the slice slices[i] of main's flat output tuple."""
    imported = [_import_cached(name, index) for name, index in units]
    joined = join([mod for mod, _ in imported])
    return joined.mod, joined.inputs([feeds for _, feeds in imported]), joined.slices


def run_through_reference(case) -> None:
    from byoc_compiler.testing.reference import run_reference

    for data_set in case.data_sets:
        mod, feeds = import_case(case, data_set)
        with np.errstate(all="ignore"):
            got = run_reference(mod, feeds)
        assert_matches(case, got, data_set[1], case.name)


def refusal_reason(case) -> str | None:
    """None when `case` passes through the reference, else one line saying why not."""
    try:
        run_through_reference(case)
    except OnnxUnsupportedError as exc:
        return "; ".join(sorted({f"{p.op_type}: {p.reason}" for p in exc.problems}))
    except AssertionError as exc:
        return "result differs from ONNX's: " + " ".join(str(exc).split())[:200]
    except Exception as exc:  # noqa: BLE001 - import errors (dtypes, shapes) are refusals too
        return f"{type(exc).__name__}: " + " ".join(str(exc).split())[:200]
    return None


if __name__ == "__main__":
    # Regenerate the allow-list: python tests/onnx_conformance.py > tests/onnx_conformance_refused.txt
    print("# ONNX node conformance cases in scope (docs/onnx.md) that byoc refuses, with the reason.")
    print("# Only shrinks: tests/test_onnx_conformance.py fails when a listed case passes or an unlisted one fails.")
    for c in scoped_cases():
        why = refusal_reason(c)
        if why is not None:
            print(f"{c.name}: {why}")
