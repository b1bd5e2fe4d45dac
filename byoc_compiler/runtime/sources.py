"""Where the C runtime lives and which of its files a build compiles."""
from pathlib import Path

from ..errors import ByocError

_HERE = Path(__file__).resolve().parent

_CORE = ("runtime.c", "parallel.c")
_GRAPH = ("graph_executor.c", "json.c", "params.c")
_RUNNER = ("npy.c", "runner.c")
EXECUTORS = ("graph", "aot")

DLPACK_HEADER = Path("dlpack") / "dlpack.h"
_DLPACK_CANDIDATES = (Path("/usr/include"), Path("/usr/local/include"))


def source_dir() -> Path:
    return _HERE / "src"


def include_dir() -> Path:
    """Add with -I: provides byoc/runtime.h and byoc/graph_executor.h."""
    return _HERE / "include"


def runtime_sources(executor: str, runner: bool = False) -> list[Path]:
    """C files to compile with a model: the core; the graph executor for executor="graph";
    .npy I/O and main() for the standalone runner (the runner always gets the graph executor,
    which its --graph/--params options use; an AOT model simply never calls it)."""
    if executor not in EXECUTORS:
        raise ValueError(f"unknown executor {executor!r}; choose one of {', '.join(EXECUTORS)}")
    names = list(_CORE)
    if executor == "graph" or runner:
        names += _GRAPH
    if runner:
        names += _RUNNER
    return [source_dir() / n for n in names]


class DLPackNotFound(ByocError, FileNotFoundError):
    """The DLPack header is missing: a ByocError (one message in the tools) and a FileNotFoundError."""


def dlpack_include_dir() -> Path:
    """Directory holding dlpack/dlpack.h (Debian's libdlpack-dev): the one place that looks for it.
    For cross compilers pass it with -idirafter rather than -I, so the cross sysroot's libc headers
    still come first."""
    for d in _DLPACK_CANDIDATES:
        if (d / DLPACK_HEADER).is_file():
            return d
    raise DLPackNotFound(
        "the DLPack header dlpack/dlpack.h was not found in "
        + ", ".join(str(d) for d in _DLPACK_CANDIDATES)
        + "; install it with `apt-get install libdlpack-dev`")


def include_flags() -> list[str]:
    """Compiler flags that make the runtime headers and DLPack visible (native and cross)."""
    return [f"-I{include_dir()}", "-idirafter", str(dlpack_include_dir())]
