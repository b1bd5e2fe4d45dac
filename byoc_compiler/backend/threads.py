"""The build option max_threads: how many threads' scratch a model's workspace holds.

Kernels that split work across the runtime's pool (byoc/parallel.h) give each thread its own scratch;
the build plans it statically for at most `max_threads` threads (nothing is allocated per run), and a
run uses at most that many slots whatever its thread count. Every compile of the model gets
-DBYOC_MAX_THREADS=N so the C size formulas agree with the codegen's. The freestanding profile plans 1.
"""
from __future__ import annotations

import contextlib
import contextvars

from ..errors import ByocError

DEFAULT_MAX_THREADS = 8      # byoc/parallel.h's default when no -DBYOC_MAX_THREADS is given
LIMIT = 256                  # the pool's own limit

_MAX_THREADS: contextvars.ContextVar[int] = contextvars.ContextVar("byoc_max_threads", default=DEFAULT_MAX_THREADS)


def check_max_threads(value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= LIMIT:
        raise ByocError(f"build: max_threads must be a whole number in 1..{LIMIT} (threads whose scratch the "
                        f"workspace holds), got {value!r}")
    return value


def build_max_threads() -> int:
    """Inside a build's codegen: the max_threads the workspace is planned for (per-thread scratch slots)."""
    return _MAX_THREADS.get()


@contextlib.contextmanager
def planned_for(max_threads: int):
    """Plan per-thread scratch for `max_threads` inside the block (build() sets it per build)."""
    token = _MAX_THREADS.set(max_threads)
    try:
        yield
    finally:
        _MAX_THREADS.reset(token)


def define(max_threads: int) -> str:
    return f"BYOC_MAX_THREADS={max_threads}"
