"""ccompiler's build side: the codegen and the kernel library's sources. byoc imports this module the first
time a build reads them (Target.build_side in __init__.py), never to partition."""
from . import kernels, target
from .codegen import ccompiler_codegen

target.codegen = ccompiler_codegen
target.runtime_sources = list(kernels.SOURCES)
target.include_dirs = [kernels.INCLUDE_DIR]
