"""ExampleJSON from Python: the C runtime compiled into a shared library and driven through ctypes.

    m = ExampleJsonModule.from_text(text)          # or .from_file(path)
    m.subgraphs()                                  # ['subgraph_0']
    (out,) = m.run("subgraph_0", a, b)             # numpy in, numpy out (float32)
    m.source()                                     # the text (the guide's GetSource)

The library (the runtime sources + the host runtime's runtime.c) is compiled once per process
with a host toolchain of the settings (vendor.standalone_library). Errors are ByocErrors carrying the runtime's message
("examplejson: line 3, column 7: ...").
"""
from __future__ import annotations

import ctypes
import functools
import os
from pathlib import Path

import numpy as np

from byoc_compiler.vendor import ByocError, runtime_include_flags, runtime_source_dir, standalone_library

from .codegen import RUNTIME_DIR, RUNTIME_SOURCES


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32), ("dtype", DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


class TensorInfo(ctypes.Structure):
    _fields_ = [("ndim", ctypes.c_int32), ("shape", ctypes.POINTER(ctypes.c_int64)), ("dtype", DLDataType)]


PackedFunc = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int32), ctypes.c_int32,
                              ctypes.c_void_p)
_DLTENSOR_CODE = 7


def runtime_sources() -> list[Path]:
    """Every C file a program using the ExampleJSON runtime links: ours plus the host runtime core."""
    return [*RUNTIME_SOURCES, Path(runtime_source_dir()) / "runtime.c"]


def include_flags() -> list[str]:
    return [f"-I{RUNTIME_DIR}", *runtime_include_flags()]


def shared_library(toolchain: str | None = None) -> Path:
    """The runtime as a shared library, compiled once per process."""
    return standalone_library("examplejson", RUNTIME_SOURCES, [RUNTIME_DIR], toolchain=toolchain)


@functools.lru_cache(maxsize=None)
def _lib(toolchain: str | None = None):
    lib = ctypes.CDLL(os.fspath(shared_library(toolchain)))
    lib.examplejson_module_create.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_void_p)]
    lib.examplejson_module_load_file.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)]
    lib.examplejson_module_get_function.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(PackedFunc),
                                                    ctypes.POINTER(ctypes.c_void_p)]
    lib.examplejson_module_destroy.argtypes = [ctypes.c_void_p]
    lib.examplejson_module_destroy.restype = None
    lib.examplejson_module_get_source.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t)]
    lib.examplejson_module_get_source.restype = ctypes.c_void_p
    lib.examplejson_module_num_subgraphs.argtypes = [ctypes.c_void_p]
    lib.examplejson_module_subgraph_name.argtypes = [ctypes.c_void_p, ctypes.c_int32]
    lib.examplejson_module_subgraph_name.restype = ctypes.c_char_p
    for name in ("examplejson_module_num_inputs", "examplejson_module_num_outputs"):
        getattr(lib, name).argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    lib.examplejson_module_tensor_info.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int32, ctypes.c_int32,
                                                   ctypes.POINTER(TensorInfo)]
    lib.examplejson_module_arena_bytes.argtypes = [ctypes.c_void_p]
    lib.examplejson_module_arena_bytes.restype = ctypes.c_uint64
    lib.byoc_get_last_error.restype = ctypes.c_char_p
    return lib


class ExampleJsonModule:
    """One runtime module (the guide's ExampleJsonModule) owned by Python."""

    def __init__(self, handle, lib):
        self._handle = ctypes.c_void_p(handle)
        self._lib = lib

    def _error(self, what: str) -> ByocError:
        return ByocError(f"{what}: {self._lib.byoc_get_last_error().decode(errors='replace')}")

    @classmethod
    def from_text(cls, text: str | bytes, toolchain: str | None = None) -> "ExampleJsonModule":
        lib = _lib(toolchain)
        data = text.encode() if isinstance(text, str) else bytes(text)
        handle = ctypes.c_void_p()
        if lib.examplejson_module_create(data, len(data), ctypes.byref(handle)) != 0:
            raise ByocError(lib.byoc_get_last_error().decode(errors="replace"))
        return cls(handle.value, lib)

    @classmethod
    def from_file(cls, path, toolchain: str | None = None) -> "ExampleJsonModule":
        lib = _lib(toolchain)
        handle = ctypes.c_void_p()
        if lib.examplejson_module_load_file(os.fsencode(path), ctypes.byref(handle)) != 0:
            raise ByocError(lib.byoc_get_last_error().decode(errors="replace"))
        return cls(handle.value, lib)

    def close(self) -> None:
        if self._handle:
            self._lib.examplejson_module_destroy(self._handle)
            self._handle = ctypes.c_void_p()

    def __del__(self):
        self.close()

    def source(self) -> str:
        n = ctypes.c_size_t()
        ptr = self._lib.examplejson_module_get_source(self._handle, ctypes.byref(n))
        return ctypes.string_at(ptr, n.value).decode("ascii")

    def arena_bytes(self) -> int:
        return int(self._lib.examplejson_module_arena_bytes(self._handle))

    def subgraphs(self) -> list[str]:
        return [self._lib.examplejson_module_subgraph_name(self._handle, i).decode()
                for i in range(self._lib.examplejson_module_num_subgraphs(self._handle))]

    def signature(self, symbol: str) -> tuple[list[tuple[int, ...]], list[tuple[int, ...]]]:
        """(input shapes, output shapes) of a subgraph."""
        sym = symbol.encode()
        shapes = []
        for is_out, fn in ((0, self._lib.examplejson_module_num_inputs), (1, self._lib.examplejson_module_num_outputs)):
            n = fn(self._handle, sym)
            if n < 0:
                raise self._error(f"subgraph {symbol!r}")
            info = TensorInfo()
            side = []
            for i in range(n):
                self._lib.examplejson_module_tensor_info(self._handle, sym, is_out, i, ctypes.byref(info))
                side.append(tuple(info.shape[d] for d in range(info.ndim)))
            shapes.append(side)
        return shapes[0], shapes[1]

    def function(self, symbol: str):
        fn, res = PackedFunc(), ctypes.c_void_p()
        if self._lib.examplejson_module_get_function(self._handle, symbol.encode(), ctypes.byref(fn),
                                                     ctypes.byref(res)) != 0:
            raise self._error("get_function")
        return fn, res

    def call(self, symbol: str, arrays: list[np.ndarray]) -> None:
        """Calls the packed function with these arrays (inputs then outputs) as they are: no checks here."""
        fn, res = self.function(symbol)
        keep, tensors = [], (DLTensor * max(1, len(arrays)))()
        for t, a in zip(tensors, arrays):
            shape = (ctypes.c_int64 * max(1, a.ndim))(*a.shape)
            keep.append(shape)
            t.data = a.ctypes.data
            t.device = DLDevice(1, 0)
            t.ndim = a.ndim
            kind = {"f": 2, "i": 0, "u": 1}[a.dtype.kind]
            t.dtype = DLDataType(kind, a.dtype.itemsize * 8, 1)
            t.shape = ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64))
        values = (ctypes.c_void_p * max(1, len(arrays)))(*[ctypes.addressof(t) for t in tensors[:len(arrays)]])
        codes = (ctypes.c_int32 * max(1, len(arrays)))(*([_DLTENSOR_CODE] * len(arrays)))
        if fn(ctypes.cast(values, ctypes.c_void_p), codes, len(arrays), res) != 0:
            raise self._error(symbol)

    def run(self, symbol: str, *inputs) -> list[np.ndarray]:
        """Runs a subgraph on float32 inputs; returns its outputs."""
        _, out_shapes = self.signature(symbol)
        ins = [np.ascontiguousarray(x, dtype=np.float32) for x in inputs]
        outs = [np.empty(s, np.float32) for s in out_shapes]
        self.call(symbol, ins + outs)
        return outs
