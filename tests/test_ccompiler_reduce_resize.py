"""ccompiler's reductions (ck_reduce.c) and resize (ck_resize.c) built into regions and run, against the
numpy reference of the unpartitioned model, on gcc and clang.

Every case of the two tables is one output of a single model (one build per compiler keeps the default
run cheap); each case is still its own test with a readable id, and each checks that its op went to the
ccompiler region. The kernels alone, with empty and degenerate shapes and bad parameters, under ASan and
UBSan: tests/test_ccompiler_reduce_resize_kernels.py.
"""
from __future__ import annotations

import functools

import numpy as np
import pytest

import needs

from byoc_compiler import op, partition_for
from byoc_compiler.backend.build import build
from byoc_compiler.ir import Function, IRModule, TensorType, Tuple, Var, post_order
from byoc_compiler.testing.reference import run_reference

COMPILERS = needs.compilers()   # config.toml's [build] toolchains: a missing one skips, or fails in CI

# (id, op, input shape, axis, keepdims)
REDUCE = [
    ("sum-all-axes", "sum", (2, 3, 4), None, False),
    ("max-all-axes-keepdims", "max", (3, 5), None, True),
    ("mean-axis-minus-1", "mean", (2, 3, 5), (-1,), False),
    ("mean-axis-minus-1-keepdims", "mean", (4, 301), (-1,), True),
    ("min-axis-0", "min", (4, 3), (0,), False),
    ("sum-middle-axis", "sum", (2, 3, 4), (1,), True),
    ("max-middle-axis-wide-inner", "max", (2, 3, 300), (1,), False),
    ("prod-first-and-last", "prod", (2, 3, 4), (0, 2), True),
    ("mean-spatial-keepdims", "mean", (1, 8, 5, 5), (2, 3), True),
    ("sum-size-1-axes-only", "sum", (1, 3, 1, 4), (0, 2), False),
    ("min-size-1-and-real-axes", "min", (1, 3, 1, 4), (0, 1, 2), True),
    ("mean-empty-axes-noop", "mean", (2, 3), (), False),
    ("sum-negative-axes-apart", "sum", (2, 3, 4, 5), (-4, -2), False),
    ("prod-rank-8", "prod", (2, 1, 2, 1, 2, 1, 2, 3), (1, 2, 6), False),
    ("max-rank-1", "max", (7,), (0,), False),
]

# (id, input shape, output size, method, coordinate mode, nearest mode, extra attributes)
RESIZE = [
    ("nearest-up-2x-half-pixel", (1, 2, 3, 4), (1, 2, 6, 8), "nearest", "half_pixel", "round_prefer_floor", {}),
    ("nearest-down-asymmetric-floor", (1, 2, 6, 8), (1, 2, 3, 4), "nearest", "asymmetric", "floor", {}),
    ("nearest-ties-align-corners-prefer-floor", (1, 1, 3, 3), (1, 1, 5, 5), "nearest", "align_corners",
     "round_prefer_floor", {}),
    ("nearest-ties-align-corners-prefer-ceil", (1, 1, 3, 3), (1, 1, 5, 5), "nearest", "align_corners",
     "round_prefer_ceil", {}),
    ("nearest-up-pytorch-half-pixel-ceil", (1, 2, 3, 5), (1, 2, 7, 9), "nearest", "pytorch_half_pixel", "ceil", {}),
    ("nearest-down-half-pixel-symmetric", (2, 1, 7, 9), (2, 1, 4, 5), "nearest", "half_pixel_symmetric",
     "round_prefer_ceil", {}),
    ("nearest-tf-crop-and-resize", (1, 1, 4, 5), (1, 1, 6, 7), "nearest", "tf_crop_and_resize", "round_prefer_floor",
     dict(roi=(0, 0, -0.2, 0.1, 1, 1, 0.8, 1.3), extrapolation_value=7.5)),
    ("linear-up-2x-half-pixel", (1, 2, 3, 4), (1, 2, 6, 8), "linear", "half_pixel", "round_prefer_floor", {}),
    ("linear-down-align-corners", (1, 2, 7, 9), (1, 2, 4, 5), "linear", "align_corners", "round_prefer_floor", {}),
    ("linear-up-asymmetric", (1, 3, 4, 4), (1, 3, 5, 9), "linear", "asymmetric", "round_prefer_floor", {}),
    ("linear-pytorch-half-pixel-to-size-1", (1, 1, 4, 4), (1, 1, 1, 3), "linear", "pytorch_half_pixel",
     "round_prefer_floor", {}),
    ("linear-half-pixel-symmetric", (1, 2, 5, 3), (1, 2, 8, 4), "linear", "half_pixel_symmetric",
     "round_prefer_floor", {}),
    ("linear-tf-crop-and-resize-extrapolation", (1, 1, 4, 5), (1, 1, 6, 7), "linear", "tf_crop_and_resize",
     "round_prefer_floor", dict(roi=(0, 0, -0.2, 0.1, 1, 1, 0.8, 1.3), extrapolation_value=-3.0)),
    ("trilinear-every-axis", (2, 3, 4), (3, 5, 7), "linear", "half_pixel", "round_prefer_floor", {}),
    ("linear-rank-1-down", (9,), (4,), "linear", "asymmetric", "round_prefer_floor", {}),
    ("linear-wider-than-a-tile", (1, 1, 2, 200), (1, 1, 3, 400), "linear", "half_pixel", "round_prefer_floor", {}),
    ("nearest-exclude-outside", (1, 1, 3, 4), (1, 1, 5, 6), "nearest", "half_pixel", "round_prefer_floor",
     dict(exclude_outside=True)),
]

# Stays on the host: what ck_resize does not compute.
HOST_RESIZE = [
    ("cubic", (1, 1, 4, 4), (1, 1, 8, 8), "cubic", "half_pixel", "round_prefer_floor", {}),
    ("linear-antialias", (1, 1, 8, 8), (1, 1, 4, 4), "linear", "half_pixel", "round_prefer_floor",
     dict(antialias=True)),
]


def _resize_call(x, shape, size, method, coord, nearest, extra):
    scales = tuple(s / d for s, d in zip(size, shape))
    return op.image.resize(x, size=size, scales=scales, method=method, coordinate_transformation_mode=coord,
                           nearest_mode=nearest, **extra)


def _inputs():
    rng = np.random.default_rng(19)
    reduce = [rng.uniform(0.5, 1.5, shape).astype(np.float32) * rng.choice([-1, 1], shape).astype(np.float32)
              for _, _, shape, _, _ in REDUCE]
    resize = [rng.standard_normal(case[1]).astype(np.float32) for case in RESIZE + HOST_RESIZE]
    return reduce + resize


@functools.lru_cache(maxsize=None)
def _model():
    params, outs = [], []
    for k, (_, name, shape, axis, keep) in enumerate(REDUCE):
        x = Var(f"r{k}", TensorType(shape))
        params.append(x)
        outs.append(getattr(op, name)(x, axis=axis, keepdims=keep))
    for k, case in enumerate(RESIZE + HOST_RESIZE):
        x = Var(f"s{k}", TensorType(case[1]))
        params.append(x)
        outs.append(_resize_call(x, *case[1:]))
    return IRModule.from_expr(Function(params, Tuple(outs)))


@functools.lru_cache(maxsize=None)
def _run(cc: str):
    """(outputs of the build, reference outputs, names of the ops in ccompiler regions, per output)."""
    needs.programs(cc)
    mod = _model()
    part = partition_for("ccompiler", mod)
    inputs = _inputs()
    loaded = build(part, toolchain=cc).load(werror=True)
    for param, value in zip(mod["main"].params, inputs):
        loaded.set_input(param.name_hint, value)
    loaded.run()
    got = [loaded.get_output(i) for i in range(loaded.get_num_outputs())]
    return got, run_reference(mod, inputs), _offloaded(part)


def _offloaded(part) -> tuple[set[str], set[str]]:
    """(ops in ccompiler regions, inputs of the model read by a reduction or resize left on the host):
    each case has its own input, so the second set names the cases that were not offloaded."""
    taken = set()
    for gv, func in part.functions.items():
        if func.attrs.get("Compiler") != "ccompiler":
            continue
        ops = [n for n in post_order(func.body) if hasattr(n, "op") and hasattr(n.op, "name")]
        taken |= {n.op.name for n in ops}
    main = part["main"]
    host_ops = {n.args[0].name_hint for n in post_order(main.body)
                if hasattr(n, "op") and getattr(n.op, "name", None) in ("image.resize", *_REDUCE_OPS)
                and isinstance(n.args[0], Var)}
    return taken, host_ops


_REDUCE_OPS = ("sum", "mean", "max", "min", "prod")


@pytest.mark.parametrize("cc", COMPILERS)
@pytest.mark.parametrize("case", REDUCE, ids=[c[0] for c in REDUCE])
def test_reduction(cc, case):
    k = REDUCE.index(case)
    got, want, (taken, host) = _run(cc)
    assert case[1] in taken and f"r{k}" not in host, f"{case[1]} stayed on the host"
    assert got[k].shape == want[k].shape
    np.testing.assert_allclose(got[k], want[k], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("cc", COMPILERS)
@pytest.mark.parametrize("case", RESIZE, ids=[c[0] for c in RESIZE])
def test_resize(cc, case):
    k = len(REDUCE) + RESIZE.index(case)
    got, want, (taken, host) = _run(cc)
    assert "image.resize" in taken and f"s{RESIZE.index(case)}" not in host, "resize stayed on the host"
    assert got[k].shape == want[k].shape
    np.testing.assert_allclose(got[k], want[k], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("case", HOST_RESIZE, ids=[c[0] for c in HOST_RESIZE])
def test_resize_outside_the_library_stays_on_the_host(case):
    k = len(RESIZE) + HOST_RESIZE.index(case)
    _, _, (_, host) = _run(COMPILERS[0])
    assert f"s{k}" in host


def test_table_covers_every_mode():
    """Every coordinate mode and nearest mode the importer maps is in the table with a C spelling."""
    from byoc_compiler.op.image import COORDINATE_MODES, NEAREST_MODES
    from byoc_compiler.contrib.ccompiler import kernels

    assert {c[4] for c in RESIZE} == set(COORDINATE_MODES) == set(kernels.COORDINATE_MODES)
    assert {c[5] for c in RESIZE if c[3] == "nearest"} == set(NEAREST_MODES) == set(kernels.NEAREST_MODES)
    assert {c[1] for c in REDUCE} == set(_REDUCE_OPS) == set(kernels.REDUCE_OPS)
