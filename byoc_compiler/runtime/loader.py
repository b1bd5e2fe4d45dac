"""Load a built model shared library and run it from Python (ctypes on byoc_model_desc)."""
import ctypes
import platform
import re
import statistics
import struct
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import ByocError
from .dtypes import from_dl
from .dump import write_dump


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _TensorInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("ndim", ctypes.c_int32),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("dtype", _DLDataType)]


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int32)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


_ENTER = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int32, ctypes.c_char_p)
_EXIT = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int32, ctypes.c_char_p, ctypes.c_int32,
                         ctypes.POINTER(_DLTensor))


class _NodeObserver(ctypes.Structure):
    _fields_ = [("enter", _ENTER), ("exit", _EXIT), ("ctx", ctypes.c_void_p)]


def _copy_tensor(t: _DLTensor) -> np.ndarray:
    shape = tuple(int(t.shape[k]) for k in range(t.ndim))
    dtype = from_dl(t.dtype.code, t.dtype.bits, t.dtype.lanes)
    count = int(np.prod(shape, dtype=np.int64))
    if count == 0 or not t.data:
        return np.zeros(shape, dtype)
    buf = (ctypes.c_char * (count * dtype.itemsize)).from_address(t.data + t.byte_offset)
    return np.frombuffer(buf, dtype=dtype, count=count).reshape(shape).copy()


_INIT = ctypes.CFUNCTYPE(ctypes.c_int32)
_RUN = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_void_p))
_DEINIT = ctypes.CFUNCTYPE(None)
# Instances (docs/runtime-abi.md, "Instances and threads"). CFUNCTYPE calls release the GIL, so runs of
# different instances overlap in Python threads.
_CREATE = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.POINTER(ctypes.c_void_p))
_RUN_INSTANCE = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p),
                                 ctypes.POINTER(ctypes.c_void_p))
_DESTROY = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_ALLOCATED = ctypes.CFUNCTYPE(ctypes.c_uint64, ctypes.c_void_p)


class _ModelDesc(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("executor", ctypes.c_char_p), ("interface", ctypes.c_char_p),
                ("num_inputs", ctypes.c_int32), ("inputs", ctypes.POINTER(_TensorInfo)),
                ("num_outputs", ctypes.c_int32), ("outputs", ctypes.POINTER(_TensorInfo)),
                ("workspace_bytes", ctypes.c_uint64),
                ("init", _INIT), ("run", _RUN), ("deinit", _DEINIT),
                ("create", _CREATE), ("run_instance", _RUN_INSTANCE), ("destroy", _DESTROY),
                ("allocated_bytes", _ALLOCATED)]


@dataclass(frozen=True)
class TensorInfo:
    name: str
    shape: tuple
    dtype: np.dtype


@dataclass(frozen=True)
class BenchmarkResult:
    times_ms: tuple
    median_ms: float


class ModelLoadError(ByocError, RuntimeError):
    """runtime.load cannot use the file: the message says what the file is and what to do instead."""


class ModelNotFoundError(ByocError, FileNotFoundError):
    """runtime.load was given a path that does not exist."""


class ModelStateError(ByocError, RuntimeError):
    """A Module call out of order (get_output before run, a call after close)."""


# ELF e_machine -> the names byoc's toolchains use (config.toml `arch`)
_ELF_MACHINES = {3: "x86", 22: "s390x", 40: "armhf", 62: "x86_64", 183: "aarch64", 243: "riscv64"}
_HOST_MACHINES = {"x86_64": 62, "amd64": 62, "aarch64": 183, "arm64": 183, "s390x": 22, "riscv64": 243,
                  "armv7l": 40, "i686": 3, "i386": 3}


def _describe_file(path: Path) -> str | None:
    """Why `path` cannot be dlopen'ed here, if its header says so: another CPU's ELF, or not ELF at all."""
    with open(path, "rb") as f:
        head = f.read(20)
    if head[:4] != b"\x7fELF":
        return f"it is not a shared library (no ELF header); build one with lib.export_library({path.name!r})"
    order = "<" if head[5] == 1 else ">"
    machine, = struct.unpack(order + "H", head[18:20])
    kind, = struct.unpack(order + "H", head[16:18])
    host = _HOST_MACHINES.get(platform.machine().lower())
    arch = _ELF_MACHINES.get(machine, f"ELF machine {machine}")
    if host is not None and machine != host:
        return (f"it is an ELF file for {arch}, and this Python runs on {platform.machine()}; a model built with a "
                f"cross toolchain runs through its runner: lib.export_runner(dir) and the toolchain's `run` "
                f"prefix from config.toml (e.g. qemu-{arch.replace('armhf', 'arm')} -L <sysroot> dir/runner)")
    if kind != 3:  # ET_DYN
        return (f"it is an ELF {'executable' if kind == 2 else f'file of type {kind}'}, not a shared library; "
                "load the .so written by lib.export_library(path)")
    return None


def _info(t: _TensorInfo, what: str) -> TensorInfo:
    name = t.name.decode("utf-8", "replace") if t.name else what
    return TensorInfo(name, tuple(int(t.shape[k]) for k in range(t.ndim)),
                      from_dl(t.dtype.code, t.dtype.bits, t.dtype.lanes))


def _open_library(path: Path, shown: str) -> ctypes.CDLL:
    """dlopen a model library, or one ModelLoadError/ModelNotFoundError saying what the file is instead."""
    if path.is_dir():
        raise ModelLoadError(f"model library {shown!r} is a directory; load the .so file that "
                             "lib.export_library(path) wrote (lib.export(dir) writes sources, not a library)")
    if not path.is_file():
        raise ModelNotFoundError(f"model library {shown!r} does not exist; check the path")
    why = _describe_file(path)
    if why:
        raise ModelLoadError(f"cannot load model library {shown!r}: {why}")
    try:
        lib = ctypes.CDLL(str(path))
    except OSError as e:
        missing = re.search(r"undefined symbol: (\w+)", str(e))
        hint = "" if missing is None else (
            f"; nothing in it defines {missing.group(1)}: a region's entry point that its target's codegen "
            "did not write, or a library missing from the toolchain's ldflags in config.toml")
        raise ModelLoadError(f"cannot load model library {shown!r}: {e}{hint}") from None
    for sym in ("byoc_model_desc", "byoc_get_last_error"):
        if not hasattr(lib, sym):
            raise ModelLoadError(f"{shown!r} is not a byoc model library (no symbol {sym}); load a "
                                 "library written by lib.export_library(path)")
    return lib


# The same path dlopen'ed twice is one library with one set of globals. A library with instances gives every
# Module its own; one without (hand-written models) has one default instance: init once, deinit at last
# close, and its runs are serialized by one lock per library.
_OPEN: dict = {}
_OPEN_LOCK = threading.Lock()
_LIBRARY_LOCKS: dict = {}


class Module:
    """A loaded model. set_input / run / get_output, shapes and dtypes checked before any C call."""

    def __init__(self, path, constants=None, threads=None):
        self.path = Path(path).resolve()
        self._lib = _open_library(self.path, str(path))
        self._read_desc(str(path))
        if threads is not None:
            set_num_threads(self._lib, threads, str(path))
        self._instance = None
        self._open_instance(constants)
        self._closed = False

    def _read_desc(self, shown: str) -> None:
        """The model's descriptor: names, executor, inputs and outputs, and buffers for each."""
        self._lib.byoc_model_desc.restype = ctypes.POINTER(_ModelDesc)
        self._lib.byoc_get_last_error.restype = ctypes.c_char_p
        ptr = self._lib.byoc_model_desc()
        if not ptr:
            raise RuntimeError(f"{shown!r}: byoc_model_desc() returned NULL")
        self._desc = d = ptr.contents
        self.name = (d.name or b"").decode()
        self.executor = (d.executor or b"").decode()
        self.interface = (d.interface or b"").decode()
        self.workspace_bytes = int(d.workspace_bytes)
        self._inputs = [_info(d.inputs[i], f"input{i}") for i in range(d.num_inputs)]
        self._outputs = [_info(d.outputs[i], f"output{i}") for i in range(d.num_outputs)]
        self._in_bufs = [np.zeros(t.shape, t.dtype) for t in self._inputs]
        self._out_bufs = [np.zeros(t.shape, t.dtype) for t in self._outputs]
        self._set = [False] * len(self._inputs)
        self._ran = False
        self._in_ptrs = (ctypes.c_void_p * max(1, len(self._inputs)))(*[b.ctypes.data for b in self._in_bufs])
        self._out_ptrs = (ctypes.c_void_p * max(1, len(self._outputs)))(*[b.ctypes.data for b in self._out_bufs])

    def _open_instance(self, constants) -> None:
        """This Module's own instance (create), or the library's one default instance (init at first open)."""
        d = self._desc
        with _OPEN_LOCK:
            self._lock = _LIBRARY_LOCKS.setdefault(self.path, threading.Lock())
            first = _OPEN.get(self.path, 0) == 0
            if constants is None and (self.path.parent / "constants.bin").is_file():
                constants = self.path.parent / "constants.bin"   # a params build's, beside its library
            if first:
                self._give_constants(constants)   # constants="params" builds copy them at the first create/init
            try:
                if d.create:
                    # this Module's own instance: arena or graph storage, region workspaces, target modules
                    instance = ctypes.c_void_p()
                    self._check(d.create(ctypes.byref(instance)), "create")
                    self._instance = instance
                    self._lock = threading.Lock()  # one call at a time per instance; other instances run freely
                elif first:
                    self._check(d.init(), "init")
            finally:
                if first and constants is not None:
                    self._lib.byoc_set_constants(None, ctypes.c_size_t(0))   # init copied them
            _OPEN[self.path] = _OPEN.get(self.path, 0) + 1

    def _give_constants(self, constants) -> None:
        """constants="params" builds: the bytes of constants.bin (bytes, or a path) go to the model's init."""
        if constants is None:
            return
        if not isinstance(constants, (bytes, bytearray)):
            try:
                constants = Path(constants).read_bytes()
            except OSError as e:
                raise ModelLoadError(f"cannot read the model's constants {str(constants)!r}: {e.strerror}") from None
        self._constants = bytes(constants)      # alive until init has copied them
        self._lib.byoc_set_constants.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
        self._lib.byoc_set_constants(self._constants, len(self._constants))

    def _run_c(self) -> int:
        with self._lock:
            if self._instance is not None:
                return self._desc.run_instance(self._instance, self._in_ptrs, self._out_ptrs)
            return self._desc.run(self._in_ptrs, self._out_ptrs)

    def _check(self, rc: int, what: str):
        if rc != 0:
            msg = (self._lib.byoc_get_last_error() or b"").decode("utf-8", "replace")
            raise RuntimeError(f"model {self.name!r} {what} failed: {msg or f'return code {rc}'}")

    # ---- introspection
    def get_num_inputs(self) -> int:
        return len(self._inputs)

    def get_num_outputs(self) -> int:
        return len(self._outputs)

    @property
    def allocated_bytes(self) -> int | None:
        """Bytes this Module's instance allocated (arena, or graph storage plus regions' workspace), as the C
        side counted them; `workspace_bytes` is what the build reported. None for a descriptor without the query."""
        if not self._desc.allocated_bytes:
            return None
        return int(self._desc.allocated_bytes(self._instance))

    def input_info(self) -> list:
        return list(self._inputs)

    def output_info(self) -> list:
        return list(self._outputs)

    def _input_index(self, key) -> int:
        if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
            if not 0 <= key < len(self._inputs):
                raise IndexError(f"input index {key} out of range: model {self.name!r} has "
                                 f"{len(self._inputs)} inputs")
            return int(key)
        for i, t in enumerate(self._inputs):
            if t.name == key:
                return i
        raise ValueError(f"model {self.name!r} has no input {key!r}; inputs are "
                         f"{', '.join(repr(t.name) for t in self._inputs) or 'none'}")

    def set_input(self, key, value):
        i = self._input_index(key)
        want = self._inputs[i]
        try:
            arr = value if isinstance(value, np.ndarray) else np.asarray(value, dtype=want.dtype)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"input {want.name!r}: expected an array of {want.dtype} with shape {want.shape}, "
                             f"given {type(value).__name__} ({exc})") from None
        if arr.dtype.newbyteorder("=") != want.dtype:
            raise ValueError(f"input {want.name!r}: expected dtype {want.dtype}, given {arr.dtype}")
        if tuple(arr.shape) != want.shape:
            raise ValueError(f"input {want.name!r}: expected shape {want.shape}, given {tuple(arr.shape)}")
        np.copyto(self._in_bufs[i], arr)  # converts byte order and layout
        self._set[i] = True

    def run(self, dump=None):
        """Run once. With `dump` (a directory), every step's outputs are written there as .npy files
        plus index.json, as `runner --dump` does (byoc_compiler.runtime.dump reads them back)."""
        self._ensure_open()
        missing = [t.name for t, s in zip(self._inputs, self._set) if not s]
        if missing:
            raise RuntimeError(f"model {self.name!r}: set_input was not called for {', '.join(map(repr, missing))}")
        if dump is None:
            self._check(self._run_c(), "run")
            self._ran = True
            return
        steps = self.run_observed()
        write_dump(dump, steps, self.name, self.executor)

    def run_observed(self) -> list:
        """Run once with the node observer set: [(step, function name, [output arrays])] in step order.
        The observer is one per library: observed runs are for debugging, not concurrent with other runs
        of the same library."""
        if not hasattr(self._lib, "byoc_set_node_observer"):
            raise RuntimeError(f"{str(self.path)!r} was built without the node observer; rebuild it")
        steps: list = []

        def on_exit(_ctx, step, name, n, outputs):
            steps.append((int(step), (name or b"").decode("utf-8", "replace"),
                          [_copy_tensor(outputs[k]) for k in range(n)]))

        observer = _NodeObserver(_ENTER(), _EXIT(on_exit), None)
        self._lib.byoc_set_node_observer.argtypes = [ctypes.POINTER(_NodeObserver)]
        self._lib.byoc_set_node_observer(ctypes.byref(observer))
        try:
            self._check(self._run_c(), "run")
            self._ran = True
        finally:
            self._lib.byoc_set_node_observer(None)
        return steps

    def get_output(self, i: int) -> np.ndarray:
        if not isinstance(i, (int, np.integer)) or isinstance(i, bool):
            raise TypeError(f"get_output takes an output index (0 to {len(self._outputs) - 1}), given {i!r}")
        if not 0 <= i < len(self._outputs):
            raise IndexError(f"output index {i} out of range: model {self.name!r} has {len(self._outputs)} outputs")
        if not self._ran:
            raise ModelStateError(f"model {self.name!r}: get_output({i}) before run(); set the inputs and call "
                                  "run() first (outputs are those of the last run)")
        return self._out_bufs[i].copy()

    def benchmark(self, repeat: int = 10) -> BenchmarkResult:
        """Times `repeat` runs (each through ctypes) and reports the median in milliseconds."""
        if repeat < 1:
            raise ValueError(f"repeat must be >= 1, given {repeat}")
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            self.run()
            times.append((time.perf_counter() - t0) * 1e3)
        return BenchmarkResult(tuple(times), statistics.median(times))

    def _ensure_open(self):
        if self._closed:
            raise RuntimeError(f"model {self.name!r} was closed")

    def close(self):
        if getattr(self, "_closed", True):
            return
        self._closed = True
        if self._instance is not None:
            with self._lock:
                self._desc.destroy(self._instance)
                self._instance = None
        with _OPEN_LOCK:
            _OPEN[self.path] -= 1
            if _OPEN[self.path] == 0 and not self._desc.create and self._desc.deinit:
                self._desc.deinit()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self):
        return (f"<byoc Module {self.name!r} executor={self.executor} interface={self.interface} "
                f"inputs={[t.name for t in self._inputs]} outputs={len(self._outputs)}>")


def set_num_threads(lib: ctypes.CDLL, threads, shown: str) -> None:
    """The library's pool size (byoc_set_num_threads): one per library, so the last load's count holds."""
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(f"{shown!r}: threads must be a whole number of threads >= 1, got {threads!r}")
    if not hasattr(lib, "byoc_set_num_threads"):
        raise ModelLoadError(f"{shown!r}: the library has no thread pool (byoc_set_num_threads); "
                             "rebuild it with this version of byoc")
    lib.byoc_set_num_threads.argtypes = [ctypes.c_int32]
    lib.byoc_set_num_threads.restype = ctypes.c_int32
    if lib.byoc_set_num_threads(threads) != 0:      # a refusal ignored here ran every model at another count
        lib.byoc_get_last_error.restype = ctypes.c_char_p
        why = (lib.byoc_get_last_error() or b"").decode("utf-8", "replace")
        raise ModelLoadError(f"{shown!r}: the runtime refused {threads} threads: {why}")


def load(path, constants=None, threads=None) -> Module:
    """Load a model library built by byoc_compiler (export_library) and initialize it.

    constants: for a build with constants="params", its constants.bin (a path or the bytes); by default the
    constants.bin beside the library, when there is one.
    threads: threads a run may use (the runtime's pool, byoc_set_num_threads; one count per library, shared
    by its instances); by default BYOC_NUM_THREADS, else the cores this process may run on."""
    return Module(path, constants, threads)
