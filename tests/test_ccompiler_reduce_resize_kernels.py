"""ck_reduce and ck_resize (targets/ccompiler/kernels) alone, through ctypes, against independent results:
numpy float64 reductions, and ONNX's own reference implementation of Resize (onnx.reference).

The two sources are compiled per session with gcc and clang at -O0 and -O3 (warnings as errors);
test_under_sanitizers reruns this file against ASan + UBSan builds. Model-level cases (the codegen's
rules, the partition): tests/test_ccompiler_reduce_resize.py.
"""
from __future__ import annotations

import ctypes
import functools
import itertools

import numpy as np
import pytest

import needs
import sanitizer_rerun
from shared_library import kernel_library
from sanitizer_rerun import BUILDS, RERUN_COMPILERS, SANITIZE, build_params

from byoc_compiler.contrib.ccompiler import kernels as K

SOURCES = [K.KERNEL_DIR / "ck_reduce.c", K.KERNEL_DIR / "ck_resize.c", K.KERNEL_DIR / "ck_parallel.c"]

f32p = ctypes.POINTER(ctypes.c_float)
i64p = ctypes.POINTER(ctypes.c_int64)
i32p = ctypes.POINTER(ctypes.c_int32)
f64p = ctypes.POINTER(ctypes.c_double)


def _array(ctype, values):
    return (ctype * max(1, len(values)))(*values)


@pytest.fixture(scope="session", params=build_params())
def lib(request):
    cc, flags = BUILDS[request.param]
    needs.programs(cc)
    out = kernel_library(cc, flags, SOURCES, f"libck-reduce-resize-{request.param}.so")
    so = ctypes.CDLL(str(out))
    so.ck_reduce.argtypes = [ctypes.c_int32, ctypes.c_int32, i64p, i32p, f32p, f32p]
    so.ck_resize.argtypes = [ctypes.c_int32, i64p, i64p, f64p, f64p, ctypes.c_int32, ctypes.c_int32, ctypes.c_int32,
                             ctypes.c_float, f32p, f32p]
    return so


def _fptr(a):
    return None if a is None else a.ctypes.data_as(f32p)


# ---- reductions ------------------------------------------------------------------------------------

NUMPY = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min, "prod": np.prod}
EMPTY = {"sum": 0.0, "mean": np.nan, "max": -np.inf, "min": np.inf, "prod": 1.0}


def reduce(lib, name, x, axes, status=0):
    """ck_reduce's output (kept axes in order), or None when it must refuse."""
    kept = [d for i, d in enumerate(x.shape) if i not in axes]
    out = np.full(kept, np.nan, np.float32)
    got = lib.ck_reduce(K.ENUM_VALUES[K.REDUCE_OPS[name]], x.ndim, _array(ctypes.c_int64, x.shape),
                        _array(ctypes.c_int32, [int(i in axes) for i in range(x.ndim)]), _fptr(x), _fptr(out))
    assert got == status
    return out


def numpy_reduce(name, x, axes):
    kept = tuple(d for i, d in enumerate(x.shape) if i not in axes)
    if any(x.shape[a] == 0 for a in axes):
        return np.full(kept, EMPTY[name])
    return NUMPY[name](x.astype(np.float64), axis=tuple(axes)).reshape(kept)


SHAPES = [(), (5,), (1,), (3, 4), (1, 7), (2, 1, 3), (2, 3, 300), (3, 1, 4, 1, 5), (2, 2, 2, 2, 2, 2, 2, 2)]


def _axis_sets(ndim: int) -> list[tuple[int, ...]]:
    """None, the first, the middle, the last, every other, all but the first, all (each set once)."""
    sets = [(), (0,), (ndim // 2,), (ndim - 1,), tuple(range(0, ndim, 2)), tuple(range(1, ndim)), tuple(range(ndim))]
    return list(dict.fromkeys(tuple(a for a in s if 0 <= a < ndim) for s in sets))


REDUCE_CASES = [(shape, axes) for shape in SHAPES for axes in _axis_sets(len(shape))]


@pytest.mark.parametrize("shape,axes", REDUCE_CASES, ids=[f"{s}-over{a}".replace(" ", "") for s, a in REDUCE_CASES])
def test_reduce_any_axes(lib, shape, axes):
    rng = np.random.default_rng(len(shape) * 31 + len(axes))
    x = np.asarray(rng.uniform(0.7, 1.3, shape) * rng.choice([-1, 1], shape), np.float32)
    for name in NUMPY:
        np.testing.assert_allclose(reduce(lib, name, x, axes), numpy_reduce(name, x, axes), rtol=1e-6, atol=1e-7,
                                   err_msg=name)


@pytest.mark.parametrize("shape,axes", [((2, 0, 3), (1,)), ((0,), (0,)), ((2, 0, 3), (0, 1, 2)), ((2, 0, 3), (0,)),
                                        ((0, 4), (1,))], ids=["empty-axis", "empty-vector", "empty-all",
                                                              "kept-axis-empty", "no-outputs"])
def test_reduce_empty(lib, shape, axes):
    x = np.zeros(shape, np.float32)
    for name in NUMPY:
        np.testing.assert_array_equal(reduce(lib, name, x, axes), numpy_reduce(name, x, axes), err_msg=name)


@pytest.mark.parametrize("name", ["max", "min", "sum"])
@pytest.mark.parametrize("axes", [(1,), (0,)], ids=["innermost", "outer"])
def test_reduce_propagates_nan(lib, name, axes):
    x = np.array([[1.0, np.nan, -2.0, 5.0], [3.0, 4.0, -np.inf, 0.0]], np.float32)
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(reduce(lib, name, x, axes), numpy_reduce(name, x, axes))


def test_reduce_random_shapes(lib):
    rng = np.random.default_rng(7)
    for _ in range(60):
        ndim = int(rng.integers(1, 6))
        shape = tuple(int(d) for d in rng.integers(1, 6, ndim))
        axes = tuple(a for a in range(ndim) if rng.random() < 0.5)
        name = str(rng.choice(list(NUMPY)))
        x = rng.standard_normal(shape).astype(np.float32)
        np.testing.assert_allclose(reduce(lib, name, x, axes), numpy_reduce(name, x, axes), rtol=1e-6, atol=1e-6,
                                   err_msg=f"{name} {shape} over {axes}")


def test_reduce_rejects_bad_parameters(lib):
    x = np.ones((2, 3), np.float32)
    shape, flags = _array(ctypes.c_int64, [2, 3]), _array(ctypes.c_int32, [0, 1])
    out = np.zeros(2, np.float32)
    assert lib.ck_reduce(9, 2, shape, flags, _fptr(x), _fptr(out)) != 0, "unknown op"
    assert lib.ck_reduce(0, 9, shape, flags, _fptr(x), _fptr(out)) != 0, "rank above CK_MAX_RANK"
    assert lib.ck_reduce(0, 2, None, flags, _fptr(x), _fptr(out)) != 0, "no shape"
    assert lib.ck_reduce(0, 2, _array(ctypes.c_int64, [2, -3]), flags, _fptr(x), _fptr(out)) != 0, "negative dim"
    assert lib.ck_reduce(0, 2, shape, flags, _fptr(x), None) != 0, "no output"
    assert lib.ck_reduce(0, 2, shape, flags, _fptr(x), _fptr(x)) != 0, "output aliases input"


# ---- resize -----------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _input(shape: tuple, seed: int) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    x.flags.writeable = False
    return x


@functools.lru_cache(maxsize=None)
def onnx_expected(shape: tuple, seed: int, scales: tuple, mode, coord, nearest, roi=None, extrapolation=0.0):
    """onnx_resize of _input(shape, seed), once per session (every build compares with the same result)."""
    return onnx_resize(_input(shape, seed), scales, mode, coord, nearest, roi, extrapolation)


def onnx_resize(x, scales, mode, coord, nearest, roi=None, extrapolation=0.0):
    """ONNX's reference implementation of Resize-19 with scales (float32 in the graph, as ONNX has them)."""
    from onnx import TensorProto, helper
    from onnx.reference import ReferenceEvaluator

    node = helper.make_node("Resize", ["X", "roi", "scales"], ["Y"], mode=mode, coordinate_transformation_mode=coord,
                            nearest_mode=nearest, extrapolation_value=extrapolation)
    graph = helper.make_graph([node], "resize", [helper.make_tensor_value_info("X", TensorProto.FLOAT, x.shape),
                                                 helper.make_tensor_value_info("roi", TensorProto.FLOAT, None),
                                                 helper.make_tensor_value_info("scales", TensorProto.FLOAT, None)],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    feeds = {"X": x, "roi": np.array(roi or [], np.float32), "scales": np.array(scales, np.float32)}
    return ReferenceEvaluator(model).run(None, feeds)[0]


def resize(lib, x, out_shape, scales, mode, coord, nearest, roi=None, extrapolation=0.0):
    out = np.full(out_shape, np.nan, np.float32)
    ndim = x.ndim
    status = lib.ck_resize(ndim, _array(ctypes.c_int64, x.shape), _array(ctypes.c_int64, out_shape),
                           _array(ctypes.c_double, [float(np.float32(s)) for s in scales]),
                           None if roi is None else _array(ctypes.c_double, [float(np.float32(v)) for v in roi]),
                           K.ENUM_VALUES[K.RESIZE_METHODS[mode]], K.ENUM_VALUES[K.COORDINATE_MODES[coord]],
                           K.ENUM_VALUES[K.NEAREST_MODES[nearest]], extrapolation, _fptr(x), _fptr(out))
    assert status == 0
    return out


COORDS = list(K.COORDINATE_MODES)
NEAREST = list(K.NEAREST_MODES)
# Dyadic roi values: ONNX's reference subtracts them in float32, exact for these (else a tie can fall the other way).
ROI = (0.0, 0.0, -0.25, 0.125, 1.0, 1.0, 0.75, 1.25)
# (id, input shape, scales)
GEOMETRIES = [("up-2x", (1, 2, 3, 4), (1, 1, 2, 2)), ("down-0.5", (1, 1, 6, 8), (1, 1, 0.5, 0.5)),
              ("up-1.5-down-0.6", (2, 1, 4, 5), (1, 1, 1.5, 0.6)), ("up-odd-1.7", (1, 1, 3, 3), (1, 1, 1.7, 1.7)),
              ("down-to-one", (1, 1, 4, 3), (1, 1, 0.25, 0.34))]


@pytest.mark.parametrize("coord", COORDS)
@pytest.mark.parametrize("geometry", GEOMETRIES, ids=[g[0] for g in GEOMETRIES])
def test_resize_nearest_against_onnx(lib, coord, geometry):
    _, shape, scales = geometry
    x = _input(shape, 3)
    roi = ROI if coord == "tf_crop_and_resize" else None
    for nearest in NEAREST:
        want = onnx_expected(shape, 3, scales, "nearest", coord, nearest, roi, extrapolation=9.0)
        np.testing.assert_array_equal(resize(lib, x, want.shape, scales, "nearest", coord, nearest, roi, 9.0), want,
                                      err_msg=nearest)


@pytest.mark.parametrize("geometry", GEOMETRIES + [("every-axis", (3, 4, 5), (1.5, 0.5, 2.0)),
                                                   ("rank-1", (7,), (1.3,)), ("wide", (1, 2, 300), (1, 1.5, 1.2))],
                         ids=lambda g: g[0] if isinstance(g, tuple) else str(g))
def test_resize_linear_against_onnx(lib, geometry):
    _, shape, scales = geometry
    x = _input(shape, 4)
    for coord in COORDS:
        roi = None
        if coord == "tf_crop_and_resize":
            roi = tuple([(-0.125, 0.0, 0.125)[i % 3] for i in range(len(shape))] + [(0.875, 1.125)[i % 2]
                                                                                   for i in range(len(shape))])
        want = onnx_expected(shape, 4, scales, "linear", coord, "round_prefer_floor", roi, extrapolation=-4.0)
        got = resize(lib, x, want.shape, scales, "linear", coord, "round_prefer_floor", roi, -4.0)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=coord)


def test_resize_identity_axes_copy(lib):
    """Axes whose size and scale do not change are copies (a 1e-12 scale error included)."""
    x = np.random.default_rng(5).standard_normal((2, 3, 4)).astype(np.float32)
    out = np.full(x.shape, np.nan, np.float32)
    scales = _array(ctypes.c_double, [1.0, 1.0 + 1e-12, 1.0])
    shape = _array(ctypes.c_int64, x.shape)
    assert lib.ck_resize(3, shape, shape, scales, None, 1, 4, 0, 0.0, _fptr(x), _fptr(out)) == 0
    np.testing.assert_array_equal(out, x)


def test_resize_huge_coordinates_stay_in_range(lib):
    """A scale near 0 sends source coordinates far past int64: clamped, never converted out of range."""
    x = np.arange(4, dtype=np.float32).reshape(1, 4)
    out = np.full((1, 3), np.nan, np.float32)
    for method, mode in itertools.product((0, 1), range(5)):
        status = lib.ck_resize(2, _array(ctypes.c_int64, [1, 4]), _array(ctypes.c_int64, [1, 3]),
                               _array(ctypes.c_double, [1.0, 1e-300]), None, method, mode, 0, 0.0, _fptr(x), _fptr(out))
        assert status == 0 and np.all((out >= 0) & (out <= 3)), (method, mode, out)


def test_resize_rejects_bad_parameters(lib):
    x = np.ones((2, 2), np.float32)
    out = np.zeros((4, 4), np.float32)
    ins, outs = _array(ctypes.c_int64, [2, 2]), _array(ctypes.c_int64, [4, 4])
    good = _array(ctypes.c_double, [2.0, 2.0])

    def call(ndim=2, in_shape=ins, out_shape=outs, scales=good, roi=None, method=0, mode=0, nearest=0, src=x, dst=out):
        return lib.ck_resize(ndim, in_shape, out_shape, scales, roi, method, mode, nearest, 0.0, _fptr(src), _fptr(dst))

    assert call() == 0
    assert call(ndim=0) != 0 and call(ndim=9) != 0
    assert call(method=2) != 0 and call(mode=6) != 0 and call(nearest=4) != 0
    assert call(scales=_array(ctypes.c_double, [2.0, 0.0])) != 0, "zero scale"
    assert call(scales=_array(ctypes.c_double, [2.0, float("nan")])) != 0, "NaN scale"
    assert call(mode=5) != 0, "tf_crop_and_resize without roi"
    assert call(in_shape=_array(ctypes.c_int64, [2, 0])) != 0, "nothing to sample"
    assert call(dst=None) != 0 and call(scales=None) != 0


# ---- the same tests under sanitizers -------------------------------------------------------------

# (defined only outside the sanitized run, which must not start itself again)
if not SANITIZE:
    @pytest.mark.parametrize("cc", RERUN_COMPILERS)
    def test_under_sanitizers(cc):
        """This file again, against -fsanitize=address,undefined builds (the ASan runtime preloaded into Python);
        any finding aborts the run."""
        sanitizer_rerun.rerun(cc, __file__, prebuild=lambda cc, flags: kernel_library(
            cc, flags, SOURCES, f"libck-reduce-resize-{cc}-asan-ubsan.so"))
