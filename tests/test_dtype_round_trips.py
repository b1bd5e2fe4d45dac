"""Every new dtype through every path a tensor takes, as one table (dtype x path), each compared with
numpy's own bytes of the same array: the text format (inline literals and the metadata section), the
params blob (Python writer and reader, both byte orders), `.npy` files read by the runner in both byte
orders, graph.json's dltype, constants given to the runner as a params file, both executors and
interfaces, and a big-endian CPU (s390x under qemu) for the multi-byte dtypes.

Each runner path builds a model that returns its input next to a constant of the dtype
(concatenate), so the output's bytes are numpy's concatenation of the input's and the constant's."""
from __future__ import annotations

import functools
import json

import numpy as np
import pytest

from byoc_compiler import op
from byoc_compiler.backend.build import build
from byoc_compiler.ir import Constant, Function, IRModule, Var, astext, post_order
from byoc_compiler.ir.types import TensorType
from byoc_compiler.runtime import load_params
from byoc_compiler.runtime.params import save_params
from byoc_compiler.text import parse

from test_dtypes import NEW, sample


def _native(a: np.ndarray) -> np.ndarray:
    return a.astype(a.dtype.newbyteorder("="))


def _model(dtype: str, size: int) -> tuple[IRModule, np.ndarray]:
    x = Var("x", TensorType((size,), dtype))
    c = sample(dtype, (size,), seed=size + 1)
    return IRModule.from_expr(Function([x], op.concatenate([x, Constant(c)], axis=0))), c


# ---- the paths: each takes an array and returns (what came back, what numpy says it must be) --------

def _text(size: int):
    def path(a):
        mod, c = _model(str(a.dtype), size)
        text = astext(mod)
        back = parse(text)
        assert astext(back) == text
        consts = [e.data for e in post_order(back["main"].body) if isinstance(e, Constant)]
        assert back["main"].params[0].type_annotation.dtype == str(a.dtype)
        return consts[0], c
    return path


def _params_blob(order: str):
    def path(a):
        return load_params(save_params({"p": a.astype(a.dtype.newbyteorder(order))}))["p"], a
    return path


# Builds shared by the runner paths of one dtype: (executor, interface, constants mode, toolchain, the
# constant as a C literal or as raw bytes in the CPU's order: linked with .incbin, or in the params file).
GRAPH = ("graph", "packed", "linked", "gcc", "literal")
AOT_PARAMS = ("aot", "unpacked", "params", "clang", "bytes")
S390X = ("aot", "packed", "linked", "s390x-gcc", "bytes")


@functools.lru_cache(maxsize=None)
def _built(dtype: str, how: tuple):
    executor, interface, constants, toolchain, form = how
    mod, c = _model(dtype, 24)      # 24 elements: the constant is a parameter, not an inline literal
    lib = build(mod, toolchain=toolchain, executor=executor, interface=interface, constants=constants,
                large_constant_bytes=1 if form == "bytes" else None)
    if constants == "linked":          # the form asked for is the form built
        assert bool(lib.constant_files()) == (form == "bytes"), lib.constant_files().keys()
    return lib, c


def _runner(how: tuple, order: str):
    def path(a):
        x = sample(str(a.dtype), (24,), seed=5)
        lib, c = _built(str(a.dtype), how)
        if how[2] == "params":
            assert lib.constants_file() is not None and lib.constants_file().stat().st_size > 0
        (got,) = lib.run_runner([x.astype(x.dtype.newbyteorder(order))], werror=True)
        return got, np.concatenate([x, c])
    return path


def _graph_json(a):
    lib, c = _built(str(a.dtype), GRAPH)
    graph = json.loads(lib.graph_json)
    dltypes = graph["attrs"]["dltype"][1]
    assert dltypes and set(dltypes) == {str(a.dtype)}, dltypes
    x = sample(str(a.dtype), (24,), seed=6)
    (got,) = lib.run_runner([x])
    return got, np.concatenate([x, c])


PATHS = {
    "text-inline": _text(4),
    "text-metadata": _text(40),
    "params_blob-little": _params_blob("<"),
    "params_blob-big": _params_blob(">"),
    "npy_little-graph-packed": _runner(GRAPH, "<"),
    "npy_big-graph-packed": _runner(GRAPH, ">"),
    "graph_json": _graph_json,
    "npy_little-aot-unpacked-params_file": _runner(AOT_PARAMS, "<"),
    "npy_big-aot-unpacked-params_file": _runner(AOT_PARAMS, ">"),
    "s390x-npy_little": _runner(S390X, "<"),
}
# The big-endian CPU matters for multi-byte dtypes; the byte-sized ones run it under `int8`.
CASES = [pytest.param(d, p, id=f"{d}-{p}", marks=[pytest.mark.int8] if p.startswith("s390x")
                      and np.dtype(d).itemsize == 1 else [])
         for d in NEW for p in PATHS]


@pytest.mark.parametrize("dtype,path", CASES)
def test_round_trip(dtype, path):
    if path.startswith("s390x"):
        import needs

        from byoc_compiler.config import load_config

        needs.toolchain(load_config().toolchain("s390x-gcc"))
    a = sample(dtype, (24,), seed=3)
    got, want = PATHS[path](a)
    got, want = np.asarray(got), _native(np.asarray(want))
    assert _native(got).dtype == want.dtype == np.dtype(dtype), (got.dtype, want.dtype)
    assert got.shape == want.shape
    assert _native(got).tobytes() == want.tobytes()      # bit-exact: -0.0, denormals, extremes included


def test_table_covers_every_new_dtype_on_every_path():
    assert {(c.values[0], c.values[1]) for c in CASES} == {(d, p) for d in NEW for p in PATHS}
