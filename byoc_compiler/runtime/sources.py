"""Where the C runtime lives and which of its files a build compiles."""
from pathlib import Path

from ..errors import ByocError

_HERE = Path(__file__).resolve().parent

_CORE = ("runtime.c", "parallel.c")   # hosted: the core (core.c, included), the hosted runtime, the thread pool
# bare metal (BYOC_FREESTANDING, docs/bare-metal.md): the core and parallel.c (a serial loop there) alone
_FREESTANDING_CORE = ("core.c", "parallel.c")
_BAREMETAL_RUNNER = ("startup.c", "semihost.c")   # runtime/baremetal/: reset, faults, semihosting I/O
PROFILES = ("hosted", "freestanding")
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


def baremetal_dir() -> Path:
    """Startup code and the semihosting driver of bare-metal images (not part of an exported model)."""
    return _HERE / "baremetal"


def runtime_sources(executor: str, runner: bool = False, profile: str = "hosted") -> list[Path]:
    """C files to compile with a model: the core; the graph executor for executor="graph";
    .npy I/O and main() for the standalone runner (the runner always gets the graph executor,
    which its --graph/--params options use; an AOT model simply never calls it).
    The freestanding profile compiles the core alone; its runner adds the startup code and the
    semihosting driver (its main() is generated with the model: backend/firmware.py)."""
    if executor not in EXECUTORS:
        raise ValueError(f"unknown executor {executor!r}; choose one of {', '.join(EXECUTORS)}")
    if profile not in PROFILES:
        raise ValueError(f"unknown runtime profile {profile!r}; choose one of {', '.join(PROFILES)}")
    if profile == "freestanding":
        return [source_dir() / n for n in _FREESTANDING_CORE] + (
            [baremetal_dir() / n for n in _BAREMETAL_RUNNER] if runner else [])
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
