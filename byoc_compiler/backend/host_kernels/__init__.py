"""Host codegen: a C99 kernel for every op of the registry (the fallback for whatever no target takes).

`emit_kernel(call, symbol) -> KernelSource`; the per-op C lives in declarative rule
tables (elementwise.py, nn.py, shape.py, ...), registered as each op's "host_kernel" attribute
(op/attrs.py), the wrapping in driver.py.
"""
from .driver import HostKernelError, KernelContext, KernelSource, emit_kernel, supported_ops

__all__ = ["HostKernelError", "KernelContext", "KernelSource", "emit_kernel", "supported_ops"]
