"""dnnl's build side: the codegen, the runtime module's sources and oneDNN as a system library. byoc imports
this module the first time a build (or `byoc targets`, for the library check) reads them (Target.build_side
in __init__.py), never to partition."""
from byoc_compiler.vendor import SystemLibrary

from . import target
from .codegen import INCLUDE_DIRS, RUNTIME_SOURCES, dnnl_codegen

ONEDNN = SystemLibrary("oneDNN", header="dnnl.h", library="dnnl", package="libdnnl-dev")

target.requires(ONEDNN)
target.codegen = dnnl_codegen
target.runtime_sources = list(RUNTIME_SOURCES)
target.include_dirs += list(INCLUDE_DIRS)
