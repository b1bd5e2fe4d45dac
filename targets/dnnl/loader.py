"""The dnnl runtime module from Python: compiled once per process into a shared library, driven by ctypes.

    m = DnnlModule(json_text, {"sym_const0": weights, ...})   # create + bind_constants + get_function
    (out,) = m.run(x)                                          # numpy in, numpy out (float32)

Errors are ByocErrors carrying the runtime's message ("dnnl region S: node 3 (nn.conv2d): ...").
Tests and the fuzz harness's seeds use it; models use the build (BuildResult) as usual.
"""
from __future__ import annotations

import ctypes
import functools
import json
import os
from pathlib import Path

import numpy as np

from byoc_compiler.vendor import ByocError, runtime_include_flags, runtime_source_dir, standalone_library

from .codegen import INCLUDE_DIRS, RUNTIME_SOURCES


class _Constant(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("data", ctypes.c_void_p), ("nbytes", ctypes.c_uint64)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32),
                ("ndim", ctypes.c_int32), ("code", ctypes.c_uint8), ("bits", ctypes.c_uint8),
                ("lanes", ctypes.c_uint16), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


_PackedFunc = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int32), ctypes.c_int32,
                               ctypes.c_void_p)


def runtime_sources() -> list[Path]:
    return [*map(Path, RUNTIME_SOURCES), Path(runtime_source_dir()) / "runtime.c"]


def include_flags() -> list[str]:
    return [*(f"-I{d}" for d in INCLUDE_DIRS), *runtime_include_flags()]


def shared_library(toolchain: str | None = None) -> Path:
    return standalone_library("byoc_dnnl", RUNTIME_SOURCES, INCLUDE_DIRS, libraries=["dnnl"], toolchain=toolchain)


@functools.lru_cache(maxsize=None)
def _lib(toolchain: str | None = None):
    lib = ctypes.CDLL(os.fspath(shared_library(toolchain)))
    lib.byoc_dnnl_module_create.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_void_p)]
    lib.byoc_dnnl_module_bind_constants.argtypes = [ctypes.c_void_p, ctypes.POINTER(_Constant), ctypes.c_int32]
    lib.byoc_dnnl_module_get_function.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(_PackedFunc),
                                                  ctypes.POINTER(ctypes.c_void_p)]
    lib.byoc_dnnl_module_destroy.argtypes = [ctypes.c_void_p]
    lib.byoc_dnnl_module_destroy.restype = None
    lib.byoc_dnnl_module_tensor_shape.argtypes = [ctypes.c_void_p, ctypes.c_int32, ctypes.c_int32,
                                                  ctypes.POINTER(ctypes.c_int32),
                                                  ctypes.POINTER(ctypes.POINTER(ctypes.c_int64))]
    for name in ("byoc_dnnl_module_num_inputs", "byoc_dnnl_module_num_outputs", "byoc_dnnl_module_num_steps"):
        getattr(lib, name).argtypes = [ctypes.c_void_p]
    lib.byoc_get_last_error.restype = ctypes.c_char_p
    return lib


class DnnlModule:
    """One region's module: created from its JSON, constants bound by name, primitives built."""

    def __init__(self, text: str | bytes, constants: dict | None = None, symbol: str | None = None,
                 toolchain: str | None = None):
        self._lib = _lib(toolchain)
        data = text.encode() if isinstance(text, str) else bytes(text)
        handle = ctypes.c_void_p()
        if self._lib.byoc_dnnl_module_create(data, len(data), ctypes.byref(handle)) != 0:
            raise self._error()
        self._handle = handle
        self._keep = [np.ascontiguousarray(a, dtype=np.float32) for a in (constants or {}).values()]
        table = (_Constant * max(1, len(self._keep)))()
        for row, name, array in zip(table, (constants or {}), self._keep):
            row.name, row.data, row.nbytes = name.encode(), array.ctypes.data, array.nbytes
        if self._keep and self._lib.byoc_dnnl_module_bind_constants(handle, table, len(self._keep)) != 0:
            raise self._error()
        self._fn, self._res = _PackedFunc(), ctypes.c_void_p()
        if symbol is None:
            symbol = json.loads(data)["symbol"]
        if self._lib.byoc_dnnl_module_get_function(handle, symbol.encode(), ctypes.byref(self._fn),
                                                   ctypes.byref(self._res)) != 0:
            raise self._error()

    def _error(self) -> ByocError:
        return ByocError(self._lib.byoc_get_last_error().decode(errors="replace"))

    def close(self) -> None:
        if getattr(self, "_handle", None):
            self._lib.byoc_dnnl_module_destroy(self._handle)
            self._handle = None

    def __del__(self):
        self.close()

    def num_steps(self) -> int:
        return int(self._lib.byoc_dnnl_module_num_steps(self._handle))

    def _shapes(self, is_output: int) -> list[tuple[int, ...]]:
        n = (self._lib.byoc_dnnl_module_num_outputs if is_output else self._lib.byoc_dnnl_module_num_inputs)(
            self._handle)
        out = []
        for i in range(n):
            ndim, shape = ctypes.c_int32(), ctypes.POINTER(ctypes.c_int64)()
            self._lib.byoc_dnnl_module_tensor_shape(self._handle, is_output, i, ctypes.byref(ndim), ctypes.byref(shape))
            out.append(tuple(shape[d] for d in range(ndim.value)))
        return out

    def run(self, *inputs) -> list[np.ndarray]:
        ins = [np.ascontiguousarray(x, dtype=np.float32) for x in inputs]
        outs = [np.empty(s, np.float32) for s in self._shapes(1)]
        arrays = ins + outs
        tensors = (_DLTensor * len(arrays))()
        shapes = []
        for t, a in zip(tensors, arrays):
            shape = (ctypes.c_int64 * max(1, a.ndim))(*a.shape)
            shapes.append(shape)
            t.data, t.device_type, t.ndim = a.ctypes.data, 1, a.ndim
            t.code, t.bits, t.lanes = 2, 32, 1
            t.shape = ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64))
        values = (ctypes.c_void_p * len(arrays))(*[ctypes.addressof(t) for t in tensors])
        codes = (ctypes.c_int32 * len(arrays))(*([7] * len(arrays)))
        if self._fn(ctypes.cast(values, ctypes.c_void_p), codes, len(arrays), self._res) != 0:
            raise self._error()
        return outs
