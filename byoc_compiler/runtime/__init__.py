"""byoc C host runtime (include/, src/) and its Python side: the model loader, the params blob
writer/reader and the lists of runtime sources a build compiles. Importing this is cheap: numpy
and ctypes only, no compiler is run."""
from .loader import BenchmarkResult, Module, TensorInfo, load
from .params import load_params, save_params
from .sources import (baremetal_dir, dlpack_include_dir, include_dir, include_flags, runtime_sources,
                      source_dir)

__all__ = ["load", "Module", "TensorInfo", "BenchmarkResult", "save_params", "load_params",
           "source_dir", "include_dir", "include_flags", "runtime_sources", "dlpack_include_dir", "baremetal_dir"]
